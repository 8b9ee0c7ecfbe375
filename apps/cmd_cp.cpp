// apps/cmd_cp.cpp: `ioattn cp`, the context-parallel (ring attention) model of one problem over P GPUs.
//
//   ioattn cp --machine h200 --seqlen 131072 --heads 32 --head-dim 128 --dtype bf16 --causal
//             --cp-ranks 8 --cp-link peer --cp-layout zigzag [--pass bwd] [--json]
//
// Prints the single-GPU expected time, the ring's per-step compute and transfer, the predicted
// time, scaling efficiency and causal imbalance (simulator/context_parallel.hpp: a model, not a
// measurement). The block tiling is --br/--bc (default: searched once on the whole problem with
// --design). Bad input is one line and exit code 2.
#include <iostream>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli.hpp"
#include "simulator/context_parallel.hpp"
#include "simulator/simulator.hpp"

namespace ioattn::cli {

namespace {

namespace sim = ioattn::sim;

struct CpFlags {
  ProblemFlags prob;
  std::string machine, catalog, link = "peer", layout = "contiguous", pass = "fwd", design = "native/none/fragments";
  int64_t ranks = 1, br = 0, bc = 0;
  bool json_out = false, datasheet = false;
};

int run_cp(const CpFlags& f) {
  try {
    const auto dir = f.catalog.empty() ? sim::default_catalog_dir() : std::filesystem::path(f.catalog);
    const auto catalog = sim::load_catalog(dir);
    const auto& m = sim::find_machine(catalog, f.machine);
    const AttnProblem p = f.prob.problem();
    const auto layout = sim::parse_cp_layout(f.layout);
    if (!layout) throw UsageError(fmt::format("--cp-layout must be contiguous or zigzag (got '{}')", f.layout));
    sim::Options o;
    o.measured_ceilings = !f.datasheet;
    if (f.pass == "fwd")
      o.pass = Pass::fwd;
    else if (f.pass == "bwd")
      o.pass = Pass::bwd;
    else
      throw UsageError(fmt::format("--pass must be fwd or bwd (got '{}')", f.pass));
    std::string why;
    const auto design = sim::parse_design(f.design, &why);
    if (!design) throw UsageError(fmt::format("--design: {}", why));
    sim::Tiling t{.strategy = sim::Strategy::fa2, .design = *design};
    if ((f.br > 0) != (f.bc > 0)) throw UsageError("--br and --bc go together (or neither: searched)");
    if (f.br > 0) {
      t.Br = f.br;
      t.Bc = f.bc;
    } else {
      const auto b = sim::search_block_sizes(p, m, t, o);
      if (b.Br == 0) throw UsageError(fmt::format("no tiling of fa2 fits {} for this problem", m.name));
      t.Br = b.Br;
      t.Bc = b.Bc;
    }
    const auto link = sim::load_cp_link(dir, m, f.link);
    const auto r = sim::simulate_cp(p, m, t, o, f.ranks, *layout, link);
    if (f.json_out) {
      nlohmann::json steps = nlohmann::json::array();
      for (const auto& s : r.steps)
        steps.push_back({{"step", s.step}, {"compute_max_s", s.compute_max_s}, {"compute_min_s", s.compute_min_s},
                         {"transfer_s", s.transfer_s}, {"transfer_bytes", s.transfer_bytes}, {"time_s", s.time_s}});
      nlohmann::json j = {{"machine", m.name}, {"ranks", r.ranks}, {"layout", sim::cp_layout_name(r.layout)},
                          {"pass", sim::pass_name(r.pass)}, {"link", r.link}, {"link_bandwidth", r.link_bandwidth},
                          {"link_source", link.bandwidth.source}, {"br", t.Br}, {"bc", t.Bc},
                          {"seqlen", p.seqlen_q}, {"causal", p.causal}, {"single_gpu_s", r.single_gpu_s},
                          {"time_s", r.time_s}, {"compute_bound_s", r.compute_bound_s},
                          {"exposed_transfer_s", r.exposed_transfer_s}, {"efficiency", r.efficiency},
                          {"imbalance", r.imbalance}, {"score_pairs", r.score_pairs}, {"steps", steps},
                          {"model", "modeled, not measured"}};
      std::cout << j.dump(2) << "\n";
      return 0;
    }
    fmt::print("context-parallel model (not a measurement): {} x {}, {} layout, {} link {:.0f} GB/s per direction, "
               "pass {}\n", r.ranks, m.name, sim::cp_layout_name(r.layout), r.link, r.link_bandwidth / 1e9,
               sim::pass_name(r.pass));
    fmt::print("problem: B {} Hq {} Hkv {} N {} d {} {}{}; blocks fa2 {}x{}\n", p.batch, p.heads_q, p.heads_kv,
               p.seqlen_q, p.head_dim, dtype_name(p.dtype), p.causal ? " causal" : "", t.Br, t.Bc);
    fmt::print("{:>5} {:>14} {:>14} {:>14} {:>14}\n", "step", "compute max s", "compute min s", "transfer s", "step s");
    for (const auto& s : r.steps)
      fmt::print("{:>5} {:>14.6e} {:>14.6e} {:>14.6e} {:>14.6e}\n", s.step, s.compute_max_s, s.compute_min_s,
                 s.transfer_s, s.time_s);
    fmt::print("single GPU {:.6e} s; {} GPUs {:.6e} s (compute alone {:.6e} s, exposed transfer {:.6e} s)\n",
               r.single_gpu_s, r.ranks, r.time_s, r.compute_bound_s, r.exposed_transfer_s);
    fmt::print("scaling efficiency {:.3f}; causal imbalance (max / mean rank work) {:.3f}\n", r.efficiency, r.imbalance);
    return 0;
  } catch (const sim::SimError& e) {
    throw UsageError(e.what());
  }
}

}  // namespace

void add_cp_commands(CLI::App& root, Commands& out) {
  auto f = std::make_shared<CpFlags>();
  f->prob.default_heads = 16;
  f->prob.default_seqlen = 32768;
  auto* app = root.add_subcommand("cp", "context-parallel (ring attention) model of one problem over P GPUs");
  app->add_option("--machine", f->machine, "catalog name (ioattn machines)")->required();
  f->prob.add_to(*app);
  app->add_option("--cp-ranks", f->ranks, "GPUs in the ring")->capture_default_str();
  app->add_option("--cp-link", f->link, "peer (NVLink / Infinity Fabric; aliases nvlink, xgmi) | pcie")
      ->capture_default_str();
  app->add_option("--cp-layout", f->layout, "contiguous | zigzag")->capture_default_str();
  app->add_option("--pass", f->pass, "fwd | bwd")->capture_default_str();
  app->add_option("--design", f->design, "the blocks' kernel design (ioattn simulate --design)")->capture_default_str();
  app->add_option("--br", f->br, "query rows per tile (default: searched)");
  app->add_option("--bc", f->bc, "key rows per tile (default: searched)");
  app->add_flag("--datasheet", f->datasheet, "time from datasheet ceilings (default: measured where known)");
  app->add_option("--catalog", f->catalog, "machine catalog folder (default: simulator/machines)");
  app->add_flag("--json", f->json_out, "one JSON object instead of the table");
  out.push_back({app, [f] { return run_cp(*f); }});
}

}  // namespace ioattn::cli

// apps/cmd_simulate.cpp: `ioattn simulate`, `ioattn sweep`, `ioattn machines` (the IO-cost model).
//
//   ioattn simulate --machine h200 --strategy fa2 --seqlen 4096 --heads 16 --head-dim 128 --dtype bf16
//   ioattn simulate ... --no-l2 --json          one JSON object (hbm_read_bytes, ..., kernels[])
//   ioattn sweep --machines h200,mi300x --out sweep.csv     tidy CSV (columns: simulator/README.md)
//   ioattn machines [--sources] [--json]        the catalog, every number with its source
//
// Bad input (unknown machine or strategy, a tiling that does not fit, a malformed catalog file)
// is a UsageError: one line, exit code 2.
#include <algorithm>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli.hpp"
#include "kernels/backward.hpp"
#include "kernels/decode_splits.hpp"
#include "kernels/design.hpp"
#include "kernels/launch.hpp"
#include "simulator/layouts.hpp"
#include "simulator/simulator.hpp"

namespace ioattn::cli {

namespace {

using nlohmann::json;
namespace sim = ioattn::sim;

// Every simulator error is bad input from the user's point of view.
template <class F>
auto guarded(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const sim::SimError& e) {
    throw UsageError(e.what());
  }
}

std::vector<sim::Machine> load(const std::string& dir) {
  return guarded([&] { return sim::load_catalog(dir.empty() ? sim::default_catalog_dir() : std::filesystem::path(dir)); });
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

sim::Strategy strategy_or_throw(const std::string& s) {
  if (auto v = sim::parse_strategy(s)) return *v;
  throw UsageError(fmt::format("unknown strategy '{}' (known: {})", s, sim::strategy_names(", ")));
}

Pass pass_or_throw(const std::string& s) {
  if (auto v = sim::parse_pass(s)) return *v;
  throw UsageError(fmt::format("--pass must be fwd, bwd or fwdbwd (got '{}')", s));
}

sim::DqMode dq_or_throw(const std::string& s) {
  if (s == "atomic") return sim::DqMode::atomic;
  if (s == "separate") return sim::DqMode::separate;
  throw UsageError(fmt::format("--dq must be atomic or separate (got '{}')", s));
}

std::string bytes(int64_t b) {
  const double v = static_cast<double>(b);
  if (v >= 1e12) return fmt::format("{:.3f} TB", v / 1e12);
  if (v >= 1e9) return fmt::format("{:.3f} GB", v / 1e9);
  if (v >= 1e6) return fmt::format("{:.3f} MB", v / 1e6);
  if (v >= 1e3) return fmt::format("{:.3f} kB", v / 1e3);
  return fmt::format("{} B", b);
}

json traffic_json(const sim::Traffic& t) { return {{"read", t.read}, {"write", t.write}}; }

json block_json(const sim::BlockChoice& b) {
  return {{"Br", b.Br}, {"Bc", b.Bc}, {"fits", b.fits}, {"M_elems", b.M_elems}, {"rule", b.rule}};
}

// {"matrix_issue": {"seconds": s, "parameter": "...", "value": v}, ...} in the model's order.
json terms_json(const std::vector<sim::ExpectedTerm>& terms) {
  json j = json::object();
  for (const auto& t : terms) j[t.term] = {{"seconds", t.seconds}, {"parameter", t.parameter}, {"value", t.value}};
  return j;
}

json result_json(const sim::Result& r, const sim::Machine& m, const sim::BlockChoice& paper,
                 const sim::BlockChoice& search, const std::string& tiling_from) {
  const AttnProblem& p = r.problem;
  json j;
  j["machine"] = m.name;
  j["strategy"] = sim::strategy_name(r.tiling.strategy);
  j["loop_order"] = sim::loop_order_name(sim::loop_order(r.tiling.strategy));
  j["pass"] = sim::pass_name(r.options.pass);
  j["problem"] = {{"batch", p.batch}, {"heads_q", p.heads_q}, {"heads_kv", p.heads_kv},
                  {"seqlen_q", p.seqlen_q}, {"seqlen_k", p.seqlen_k}, {"head_dim", p.head_dim},
                  {"dtype", dtype_name(p.dtype)}, {"causal", p.causal},
                  {"window_left", p.window_left}, {"window_right", p.window_right}};
  j["tiling"] = {{"Br", r.tiling.Br}, {"Bc", r.tiling.Bc}, {"splits", r.tiling.splits},
                 {"ctas_per_cu", r.ctas_per_cu}, {"q_in_registers", r.tiling.q_in_registers},
                 {"p_through_lds", r.tiling.p_through_lds}, {"dq", sim::dq_mode_name(r.tiling.dq)},
                 {"design", sim::design_name(r.tiling.design)},
                 {"matrix_instr", sim::matrix_instr_name(sim::resolve_instr(r.tiling.design.instr, m))},
                 {"from", tiling_from}};
  j["block_sizes"] = {{"paper_rule", block_json(paper)}, {"search", block_json(search)}};
  j["no_l2"] = r.options.no_l2;
  j["mask_tensor"] = r.options.mask_tensor;
  j["dropout"] = r.options.dropout;
  j["hbm_read_bytes"] = r.hbm.read;
  j["hbm_write_bytes"] = r.hbm.write;
  j["hbm_no_l2"] = traffic_json(r.hbm_no_l2);
  j["hbm_compulsory"] = traffic_json(r.hbm_compulsory);
  j["l2_read_bytes"] = r.l2.read;
  j["l2_write_bytes"] = r.l2.write;
  j["lds_read_bytes"] = r.lds.read;
  j["lds_write_bytes"] = r.lds.write;
  j["flops"] = r.flops();
  j["matrix_flops"] = r.matrix_flops;
  j["other_flops"] = r.other_flops;
  j["conventional_flops"] = r.conventional_flops;
  j["extra_memory_bytes"] = r.extra_memory_bytes;
  j["time_s"] = r.time_s;
  j["ceiling_time_s"] = r.ceiling_time_s;
  j["conventional_tflops"] = r.time_s > 0 ? r.conventional_flops / r.time_s / 1e12 : 0.0;
  j["ceiling_tflops"] = r.ceiling_time_s > 0 ? r.conventional_flops / r.ceiling_time_s / 1e12 : 0.0;
  j["bound"] = r.bound;
  j["expected_bound"] = r.expected_bound;
  j["expected_terms"] = terms_json(r.expected_terms);
  j["l2_regime"] = r.l2_regime;
  j["llc"] = {{"name", m.llc_name()}, {"bytes", m.llc_bytes()}};
  j["ceilings"] = r.options.measured_ceilings ? "measured where available" : "datasheet";
  json ks = json::array();
  for (const auto& k : r.kernels) {
    json kj = {{"name", k.name}, {"grid", k.grid}, {"ctas_per_cu", k.ctas_per_cu}, {"waves", k.waves},
               {"wave_efficiency", k.wave_efficiency}, {"hbm", traffic_json(k.hbm)},
               {"hbm_no_l2", traffic_json(k.hbm_no_l2)}, {"hbm_compulsory", traffic_json(k.hbm_compulsory)},
               {"l2", traffic_json(k.l2)}, {"lds", traffic_json(k.lds)},
               {"matrix_flops", k.matrix_flops}, {"other_flops", k.other_flops},
               {"l2_regime", k.l2_regime}, {"l2_hit_rate", k.l2_hit_rate},
               {"t_compute_s", k.t_compute_s}, {"t_memory_s", k.t_memory_s}, {"time_s", k.time_s},
               {"ceiling_time_s", k.ceiling_time_s}, {"bound", k.bound}, {"expected_bound", k.expected_bound},
               {"tiles", k.tiles}, {"max_cta_tiles", k.max_cta_tiles},
               {"expected_terms", terms_json(k.expected_terms)}};
    if (k.slice_rows > 0) {  // design rows=R: the row slices' compute visits (KernelResult::slice_tiles)
      kj["slice_rows"] = k.slice_rows;
      kj["slice_tiles"] = k.slice_tiles;
      kj["max_cta_slice_tiles"] = k.max_cta_slice_tiles;
    }
    json ts = json::array();
    for (const auto& t : k.tensors)
      ts.push_back({{"tensor", t.tensor}, {"elem_bytes", t.elem_bytes}, {"hbm", traffic_json(t.hbm)},
                    {"hbm_no_l2", traffic_json(t.hbm_no_l2)}, {"hbm_compulsory", traffic_json(t.hbm_compulsory)}});
    kj["tensors"] = ts;
    ks.push_back(kj);
  }
  j["kernels"] = ks;
  return j;
}

// The layout terms (simulator/layouts.hpp) as the JSON's "layout" object.
json layout_json(const sim::LayoutTerms& l) {
  return {{"layout", l.layout}, {"gqa_packed", l.gqa_packed}, {"page_reads", l.page_reads},
          {"sequences", l.sequences}, {"groups", l.groups}, {"kv_rows_used", l.kv_rows_used},
          {"kv_rows_read", l.kv_rows_read}, {"page_size", l.page_size}, {"pages_used", l.pages_used},
          {"partial_pages", l.partial_pages}, {"page_rounding_hbm_bytes", l.page_rounding_hbm_bytes},
          {"page_rounding_l2_bytes", l.page_rounding_l2_bytes}, {"block_table_hbm_bytes", l.block_table_hbm_bytes},
          {"block_table_l2_bytes", l.block_table_l2_bytes}, {"table_lookups", l.table_lookups},
          {"cu_seqlens_bytes", l.cu_seqlens_bytes}, {"empty_rows_write_bytes", l.empty_rows_write_bytes},
          {"kv_hbm_read_bytes", l.kv_hbm_read_bytes}, {"kv_l2_read_bytes", l.kv_l2_read_bytes},
          {"kv_compulsory_bytes", l.kv_compulsory_bytes}, {"partials_bytes", l.partials_bytes},
          {"combine_time_s", l.combine_time_s}, {"padded_hbm_read_bytes", l.padded_hbm_read},
          {"padded_hbm_write_bytes", l.padded_hbm_write}, {"padded_time_s", l.padded_time_s}};
}

void print_table(const sim::Result& r, const sim::Machine& m, const sim::BlockChoice& paper,
                 const sim::BlockChoice& search, const std::string& tiling_from) {
  const AttnProblem& p = r.problem;
  fmt::print("ioattn simulate: {} on {} ({}), pass {}, {}\n", sim::strategy_name(r.tiling.strategy),
             m.display_name, m.name, sim::pass_name(r.options.pass),
             r.options.no_l2 ? "no L2 (LDS reuse only)" : fmt::format("L2-aware ({} {})", m.llc_name(), bytes(m.llc_bytes())));
  fmt::print("problem : batch {} heads {}/{} N {}x{} d {} {}{}{}\n", p.batch, p.heads_q, p.heads_kv,
             p.seqlen_q, p.seqlen_k, p.head_dim, dtype_name(p.dtype), p.causal ? " causal" : "",
             (p.window_left >= 0 || p.window_right >= 0) ? fmt::format(" window {},{}", p.window_left, p.window_right) : "");
  fmt::print("tiling  : Br {} Bc {} splits {} ({}), {} CTAs/CU, loop order {}\n", r.tiling.Br, r.tiling.Bc,
             r.tiling.splits, tiling_from, r.ctas_per_cu, sim::loop_order_name(sim::loop_order(r.tiling.strategy)));
  fmt::print("blocks  : paper rule Br {} Bc {} ({}) | search Br {} Bc {} ({})\n", paper.Br, paper.Bc,
             paper.fits ? "fits" : "does not fit", search.Br, search.Bc, search.fits ? "fits" : "none fits");
  fmt::print("\n{:<16} {:>9} {:>6} {:>12} {:>12} {:>12} {:>12} {:>12} {:>12} {:>10} {:>11} {:>8} {:>9}\n",
             "kernel", "grid", "waves", "HBM read", "HBM write", "noL2 read", "L2 read", "LDS read", "LDS write",
             "GFLOP", "ceiling", "expected", "bound", "L2");
  for (const auto& k : r.kernels)
    fmt::print("{:<16} {:>9} {:>6} {:>12} {:>12} {:>12} {:>12} {:>12} {:>12} {:>10.3f} {:>8.2f} us {:>8.2f} us {:>8} {:>9}\n",
               k.name, k.grid, k.waves, bytes(k.hbm.read), bytes(k.hbm.write), bytes(k.hbm_no_l2.read),
               bytes(k.l2.read), bytes(k.lds.read), bytes(k.lds.write),
               (k.matrix_flops + k.other_flops) / 1e9, k.ceiling_time_s * 1e6, k.time_s * 1e6, k.expected_bound,
               k.l2_regime);
  fmt::print("\ntotal HBM   : read {} write {} (no-L2: {} / {}, compulsory: {} / {})\n", bytes(r.hbm.read),
             bytes(r.hbm.write), bytes(r.hbm_no_l2.read), bytes(r.hbm_no_l2.write),
             bytes(r.hbm_compulsory.read), bytes(r.hbm_compulsory.write));
  fmt::print("total L2/LDS: L2 read {} write {}, LDS read {} write {}\n", bytes(r.l2.read), bytes(r.l2.write),
             bytes(r.lds.read), bytes(r.lds.write));
  fmt::print("FLOPs       : matrix {:.4g}, other {:.4g}, convention {:.4g}\n", r.matrix_flops, r.other_flops,
             r.conventional_flops);
  fmt::print("extra memory: {}\n", bytes(r.extra_memory_bytes));
  fmt::print("ceiling     : {:.3f} us, {} bound, {:.1f} TFLOP/s by the convention ({} ceilings)\n",
             r.ceiling_time_s * 1e6, r.bound,
             r.ceiling_time_s > 0 ? r.conventional_flops / r.ceiling_time_s / 1e12 : 0.0,
             r.options.measured_ceilings ? "measured where available" : "datasheet");
  fmt::print("expected    : {:.3f} us, {} bound, {:.1f} TFLOP/s by the convention (design {})\n", r.time_s * 1e6,
             r.expected_bound, r.time_s > 0 ? r.conventional_flops / r.time_s / 1e12 : 0.0,
             sim::design_name(r.tiling.design));
  fmt::print("  terms (seconds on their own; compute terms combine by the design, then max with memory):\n");
  for (const auto& t : r.expected_terms)
    fmt::print("    {:<18} {:>12.3f} us   {} = {:g}\n", t.term, t.seconds * 1e6, t.parameter, t.value);
}

struct SimFlags {
  ProblemFlags prob;
  std::string machine, strategy = "fa2", pass = "fwd", catalog, dq = "atomic", design = "native/none/fragments", kernel, grid_order = "bh_major";
  bool mask = false, no_l2 = false, json_out = false, datasheet = false, q_regs = false, p_lds = false;
  double dropout = 0.0;
  int64_t br = 0, bc = 0, splits = 0, ctas = 0, stages = 0;  // splits 0: not given
  std::string page_reads;   // layouts: rows|pages (paged KV only; default rows)
  bool gqa_packed = false;  // layouts: one CTA per K/V head holds its group's query heads
};

// The variants of kernels/design.hpp whose line has trait `has` (its gqa_packed or decode_splits), their
// names joined by `sep` and the last two by `last` (for the help text, which names them).
std::string variants_with(bool ioattn::kernels::VariantDesign::*has, std::string_view sep, std::string_view last) {
  std::vector<std::string_view> names;
  for (const auto& d : ioattn::kernels::kVariantDesigns)
    if (d.*has) names.push_back(d.variant);
  std::string out;
  for (size_t i = 0; i < names.size(); ++i)
    out += std::string(i == 0 ? "" : i + 1 == names.size() ? last : sep) + std::string(names[i]);
  return out;
}

// The footer of `ioattn simulate --help`: one line per row of the strategy table.
std::string strategies_help() {
  std::string out = "Strategies (--strategy; name, loop order, what it is):\n";
  for (const auto& s : sim::strategies())
    out += fmt::format("  {:<9} {:<9} {}\n", s.name, sim::loop_order_name(s.loop_order), s.description);
  return out;
}

int run_simulate(const SimFlags& f) {
  const AttnProblem p = f.prob.problem();
  const auto catalog = load(f.catalog);
  const sim::Machine& m = guarded([&]() -> const sim::Machine& { return sim::find_machine(catalog, f.machine); });
  sim::Options o;
  o.pass = pass_or_throw(f.pass);
  o.no_l2 = f.no_l2;
  o.mask_tensor = f.mask;
  o.dropout = f.dropout;
  o.measured_ceilings = !f.datasheet;
  sim::Tiling t;
  t.strategy = strategy_or_throw(f.strategy);
  if (f.splits < 0) throw UsageError(fmt::format("--splits must be >= 1 (0 or absent: default; got {})", f.splits));
  t.splits = std::max<int64_t>(1, f.splits);  // resolved below once the tile is known (f.splits == 0)
  t.ctas_per_cu = f.ctas;
  if (f.stages < 0) throw UsageError(fmt::format("--stages must be >= 0 (got {})", f.stages));
  t.stages = f.stages;
  t.q_in_registers = f.q_regs;
  t.p_through_lds = f.p_lds;
  t.dq = dq_or_throw(f.dq);
  if (auto g = sim::parse_grid_order(f.grid_order)) t.grid_order = *g;
  else throw UsageError(fmt::format("--grid-order must be bh_major, bh_major_splits, qblock_major or "
                                    "qblock_major_rev (got '{}')", f.grid_order));
  std::string why, design = f.design;
  if (!f.kernel.empty()) {
    // The twin of a registered forward variant: its strategy from the registry, its design from
    // kernels/design.hpp (the tile, occupancy and order stay flags: they are the launch's).
    // A backward variant (kernels/backward.hpp) also gives its dQ mode and needs --pass bwd.
    std::string_view strategy;
    std::string names;
    for (const auto& info : ioattn::kernels::registry()) {
      names += (names.empty() ? "" : ", ") + std::string(info.name);
      if (info.name == f.kernel) strategy = info.strategy;
    }
    for (const auto& info : ioattn::kernels::backward_registry()) {
      names += ", " + std::string(info.name);
      if (info.name == f.kernel) {
        if (o.pass != Pass::bwd)
          throw UsageError(fmt::format("--kernel {} is a backward variant: give --pass bwd", f.kernel));
        strategy = info.strategy;
        t.dq = dq_or_throw(std::string(info.dq_mode));
      }
    }
    if (strategy.empty())
      throw UsageError(fmt::format("--kernel: unknown variant '{}' (registered: {})", f.kernel, names));
    design = std::string(ioattn::kernels::design(f.kernel));
    if (design.empty())
      throw UsageError(fmt::format("--kernel {}: no design in kernels/design.hpp", f.kernel));
    t.strategy = strategy_or_throw(std::string(strategy));
  }
  if (auto d = sim::parse_design(design, &why)) t.design = *d;
  else throw UsageError("--design: " + why);
  if (f.br < 0 || f.bc < 0) throw UsageError("--br and --bc must be >= 1");
  const sim::BlockChoice paper = guarded([&] { return sim::paper_block_sizes(p, m, t.strategy, o.pass); });
  const sim::BlockChoice search = guarded([&] { return sim::search_block_sizes(p, m, t, o); });
  std::string from;
  if (f.br > 0 || f.bc > 0) {
    t.Br = f.br > 0 ? f.br : 64;
    t.Bc = f.bc > 0 ? f.bc : 64;
    from = "given";
  } else if (search.fits) {
    t.Br = search.Br;
    t.Bc = search.Bc;
    from = "search";
  } else {
    throw UsageError(fmt::format("no tile in {{16..256}}^2 fits {} for this problem; give --br/--bc", m.name));
  }
  std::string splits_from = f.splits > 0 ? "given" : "default 1";
  // A --kernel twin whose launch picks its splits by the decode heuristic takes the same count
  // (kernels/design.hpp, decode_splits: from the tile and CTAs per SM).
  if (f.splits == 0 && sim::strategy_info(t.strategy).takes_splits && ioattn::kernels::decode_splits(f.kernel)) {
    const int64_t rows = p.group_size() * p.seqlen_q;  // packed rows per K/V head
    const int64_t ctas = t.ctas_per_cu > 0 ? t.ctas_per_cu
                                           : std::clamp<int64_t>(guarded([&] { return sim::occupancy(p, m, t, o.pass); }), 1, 2);
    t.splits = ioattn::kernels::decode::default_splits(p, t.Bc, ctas, (rows + t.Br - 1) / t.Br,
                                                       ioattn::kernels::decode::kMaxSplits);
    splits_from = "the variant's heuristic (kernels/decode_splits.hpp)";
  }
  sim::LayoutModel lm;
  // A --kernel twin whose CTA packs a K/V head's query heads models the packing without --gqa-packed
  // (kernels/design.hpp, gqa_packed).
  lm.gqa_packed = f.gqa_packed || ioattn::kernels::gqa_packed(f.kernel);
  if (!f.page_reads.empty()) {
    if (!p.layout.paged()) throw UsageError("--page-reads describes a paged KV cache: it needs --page-size");
    if (auto pr = sim::parse_page_reads(f.page_reads)) lm.page_reads = *pr;
    else throw UsageError(fmt::format("--page-reads must be rows or pages (got '{}')", f.page_reads));
  }
  const sim::LayoutResult lr = guarded([&] { return sim::simulate_layout(p, m, t, o, lm); });
  const sim::Result& r = lr.result;
  if (f.json_out) {
    json j = result_json(r, m, paper, search, from);
    j["tiling"]["splits_from"] = splits_from;
    j["layout"] = layout_json(lr.terms);
    std::cout << j.dump(2) << '\n';
  } else {
    print_table(r, m, paper, search, from);
    const sim::LayoutTerms& l = lr.terms;
    if (l.layout != "dense" || l.gqa_packed)
      fmt::print("layout      : {}{}, {} sequences in {} length groups; K/V rows used {} read {} ({} reads); "
                 "block table {} (L2 {}, {} lookups); padded dense batch: HBM {} / {}, {:.3f} us\n",
                 l.layout, l.gqa_packed ? ", GQA-packed" : "", l.sequences, l.groups, l.kv_rows_used, l.kv_rows_read,
                 l.page_reads, bytes(l.block_table_hbm_bytes), bytes(l.block_table_l2_bytes), l.table_lookups,
                 bytes(l.padded_hbm_read), bytes(l.padded_hbm_write), l.padded_time_s * 1e6);
  }
  return 0;
}

// `ioattn check-claim`: a published attention throughput against the model. The ceiling is the
// least roofline time over the tiles in {16..256}^2 that fit; the expected time is the least
// over the tiles in {16..256}^2 that fit and every overlap design on the machine's native matrix
// instruction (the best design the model knows). A claim above the ceiling is impossible; above the
// best expected TFLOP/s by more than --margin (default: the held-out bound of 35 %, README "Expected
// time") implausible; else plausible.
struct ClaimFlags {
  ProblemFlags prob;
  std::string machine, strategy = "fa2", pass = "fwd", catalog;
  double tflops = 0.0, margin = 0.35;
  bool json_out = false;
};

int run_check_claim(const ClaimFlags& f) {
  if (!(f.tflops > 0.0)) throw UsageError(fmt::format("--tflops must be > 0 (got {})", f.tflops));
  if (!(f.margin >= 0.0)) throw UsageError(fmt::format("--margin must be >= 0 (got {})", f.margin));
  const AttnProblem p = f.prob.problem();
  const auto catalog = load(f.catalog);
  const sim::Machine& m = guarded([&]() -> const sim::Machine& { return sim::find_machine(catalog, f.machine); });
  sim::Options o;
  o.pass = pass_or_throw(f.pass);
  sim::Tiling base;
  base.strategy = strategy_or_throw(f.strategy);
  if (!sim::strategy_info(base.strategy).takes_tiles)
    throw UsageError(fmt::format("check-claim models tiled strategies ({}); got {}",
                                 sim::strategy_names(", ", [](const sim::StrategyInfo& i) { return i.takes_tiles; }),
                                 f.strategy));
  // The verdict holds the claim against the design's mechanisms alone (no calibrated efficiency:
  // what any implementation of the design could reach at the datasheet rates); the calibrated
  // expected (what ioattn's measured kernels of that instruction reach) is reported beside it.
  sim::Machine mech = m;
  mech.calibrated_mma_sync_efficiency.reset();
  mech.calibrated_wgmma_efficiency.reset();
  mech.calibrated_mfma_efficiency.reset();
  mech.calibrated_lds_scalar_efficiency.reset();
  mech.calibrated_cta_fixed_s.reset();
  mech.calibrated_ws_wgmma_efficiency.reset();
  mech.calibrated_ring_stage_latency_s.reset();
  mech.calibrated_inline_kv_exposed.reset();
  mech.calibrated_page_visit_s.reset();
  mech.calibrated_bwd_mma_sync_efficiency.reset();
  mech.calibrated_bwd_wgmma_efficiency.reset();
  mech.calibrated_atomic_adds_per_cu_per_clock.reset();
  std::optional<sim::Result> best, best_cal, ceil_r;
  // Overlap of the softmax with the matrix units needs an asynchronous matrix instruction
  // (wgmma); on mma.sync and MFMA the model knows the serial design only.
  const bool async_mma = sim::resolve_instr(base.design.instr, m) == sim::MatrixInstr::wgmma;
  std::vector<sim::Overlap> overlaps{sim::Overlap::none};
  if (async_mma)
    overlaps.insert(overlaps.end(), {sim::Overlap::intra_warpgroup, sim::Overlap::ping_pong, sim::Overlap::warp_specialized});
  for (auto ov : overlaps)
    for (int64_t br : {16, 32, 64, 128, 256})
      for (int64_t bc : {16, 32, 64, 128, 256}) {
        sim::Tiling t = base;
        t.Br = br;
        t.Bc = bc;
        t.design.overlap = ov;
        if (sim::check_fits(p, m, t, o.pass)) continue;
        sim::Result r = guarded([&] { return sim::simulate(p, mech, t, o); });
        if (!ceil_r || r.ceiling_time_s < ceil_r->ceiling_time_s) ceil_r = r;  // the ceiling: least over tiles
        if (!best || r.time_s < best->time_s) best = std::move(r);
        sim::Result rc = guarded([&] { return sim::simulate(p, m, t, o); });
        if (!best_cal || rc.time_s < best_cal->time_s) best_cal = std::move(rc);
      }
  if (!best) throw UsageError(fmt::format("no tile in {{16..256}}^2 fits {} for this problem", m.name));
  const double flops = ceil_r->conventional_flops;
  const double ceiling_tf = flops / ceil_r->ceiling_time_s / 1e12, expected_tf = flops / best->time_s / 1e12;
  const double calibrated_tf = flops / best_cal->time_s / 1e12;
  const char* verdict = f.tflops > ceiling_tf ? "impossible"
                        : f.tflops > expected_tf * (1.0 + f.margin) ? "implausible" : "plausible";
  const bool calibrated =
      m.calibrated_mma_sync_efficiency || m.calibrated_wgmma_efficiency || m.calibrated_mfma_efficiency;
  if (f.json_out) {
    json j = {{"machine", m.name}, {"strategy", f.strategy}, {"pass", f.pass},
              {"problem", {{"batch", p.batch}, {"heads_q", p.heads_q}, {"heads_kv", p.heads_kv},
                           {"seqlen_q", p.seqlen_q}, {"seqlen_k", p.seqlen_k}, {"head_dim", p.head_dim},
                           {"dtype", dtype_name(p.dtype)}, {"causal", p.causal}}},
              {"claim_tflops", f.tflops}, {"ceiling_tflops", ceiling_tf},
              {"ceiling_tile", {ceil_r->tiling.Br, ceil_r->tiling.Bc}}, {"ceiling_bound", ceil_r->bound},
              {"expected_tflops", expected_tf}, {"expected_tile", {best->tiling.Br, best->tiling.Bc}},
              {"expected_design", sim::design_name(best->tiling.design)},
              {"matrix_instr", sim::matrix_instr_name(sim::resolve_instr(best->tiling.design.instr, m))},
              {"expected_bound", best->expected_bound}, {"margin", f.margin}, {"calibrated", calibrated},
              {"calibrated_expected_tflops", calibrated_tf},
              {"calibrated_expected_design", sim::design_name(best_cal->tiling.design)},
              {"claim_over_ceiling", f.tflops / ceiling_tf}, {"claim_over_expected", f.tflops / expected_tf},
              {"verdict", verdict}};
    std::cout << j.dump(2) << '\n';
    return 0;
  }
  fmt::print("claim   : {:.1f} TFLOP/s, {} {} on {} (batch {} heads {}/{} N {}x{} d {} {}{})\n", f.tflops, f.strategy,
             f.pass, m.display_name, p.batch, p.heads_q, p.heads_kv, p.seqlen_q, p.seqlen_k, p.head_dim,
             dtype_name(p.dtype), p.causal ? " causal" : "");
  fmt::print("ceiling : {:.1f} TFLOP/s (tile {}x{}, {} bound): claim is {:.2f}x the ceiling\n", ceiling_tf,
             ceil_r->tiling.Br, ceil_r->tiling.Bc, ceil_r->bound, f.tflops / ceiling_tf);
  fmt::print("expected: {:.1f} TFLOP/s, best design {} with tile {}x{} ({} bound; its mechanisms at datasheet "
             "rates): claim is {:.2f}x\n", expected_tf, sim::design_name(best->tiling.design), best->tiling.Br,
             best->tiling.Bc, best->expected_bound, f.tflops / expected_tf);
  if (calibrated)
    fmt::print("calibrated: {:.1f} TFLOP/s ({}): what this machine's measured kernels of the instruction reach\n",
               calibrated_tf, sim::design_name(best_cal->tiling.design));
  else
    fmt::print("calibrated: none ({} was never measured)\n", m.name);
  fmt::print("verdict : {} (impossible: above the ceiling; implausible: above the expected by more than {:.0f} %)\n",
             verdict, 100.0 * f.margin);
  return 0;
}

// "standard,fa1,fa2,splitkv": the table's in_sweep rows.
std::string default_sweep_list() {
  return sim::strategy_names(",", [](const sim::StrategyInfo& i) { return i.in_sweep; });
}

struct SweepFlags {
  ProblemFlags prob;
  std::string machines, strategies = default_sweep_list(), passes = "fwd", seqlens, tilings, out, catalog;
  int64_t tokens = 0, splits = 4;
  bool mask = false, no_l2 = false, datasheet = false;
  double dropout = 0.0;
};

std::vector<sim::TilingPreset> parse_tilings(const std::string& s) {
  std::vector<sim::TilingPreset> out;
  for (const auto& item : split_list(s)) {
    if (item == "paper") { out.push_back({"paper", -1, -1}); continue; }
    if (item == "search") { out.push_back({"search", 0, 0}); continue; }
    const auto x = item.find('x');
    int64_t br = 0, bc = 0;
    try {
      if (x == std::string::npos) throw std::invalid_argument("no x");
      size_t used1 = 0, used2 = 0;
      br = std::stoll(item.substr(0, x), &used1);
      bc = std::stoll(item.substr(x + 1), &used2);
      if (used1 != x || used2 != item.size() - x - 1) throw std::invalid_argument("trailing");
    } catch (const std::exception&) {
      throw UsageError(fmt::format("--tilings takes BRxBC, paper or search items (got '{}')", item));
    }
    if (br < 1 || bc < 1) throw UsageError(fmt::format("--tilings: tile sizes must be >= 1 (got '{}')", item));
    out.push_back({item, br, bc});
  }
  return out;
}

int run_sweep(const SweepFlags& f) {
  const AttnProblem base = f.prob.problem();
  const auto catalog = load(f.catalog);
  sim::SweepSpec spec;
  spec.machines = split_list(f.machines);
  spec.strategies.clear();
  for (const auto& s : split_list(f.strategies)) spec.strategies.push_back(strategy_or_throw(s));
  spec.passes.clear();
  for (const auto& s : split_list(f.passes)) spec.passes.push_back(pass_or_throw(s));
  for (const auto& s : split_list(f.seqlens)) {
    int64_t n = 0;
    try { n = std::stoll(s); } catch (const std::exception&) { n = 0; }
    if (n < 1) throw UsageError(fmt::format("--seqlens takes positive integers (got '{}')", s));
    spec.seqlens.push_back(n);
  }
  spec.tilings = parse_tilings(f.tilings);
  spec.base = base;
  spec.tokens = f.tokens;
  if (f.splits < 1) throw UsageError(fmt::format("--splits must be >= 1 (got {})", f.splits));
  spec.splits = f.splits;
  spec.options.no_l2 = f.no_l2;
  spec.options.mask_tensor = f.mask;
  spec.options.dropout = f.dropout;
  spec.options.measured_ceilings = !f.datasheet;
  const auto unfused = [](const sim::StrategyInfo& i) { return i.takes_unfused_passes; };
  if ((f.mask || f.dropout > 0.0) &&
      (spec.strategies.size() != 1 || !sim::strategy_info(spec.strategies[0]).takes_unfused_passes))
    throw UsageError(fmt::format("--mask and --dropout model {}'s unfused passes: use --strategies {}",
                                 sim::strategy_names(" or ", unfused), sim::strategy_names(" or ", unfused)));
  const auto rows = guarded([&] { return sim::sweep(spec, catalog); });
  if (f.out.empty()) {
    sim::write_sweep_csv(std::cout, rows);
  } else {
    std::ofstream os(f.out);
    if (!os) throw UsageError(fmt::format("cannot write --out {}", f.out));
    sim::write_sweep_csv(os, rows);
    fmt::print(stderr, "ioattn sweep: {} rows -> {}\n", rows.size(), f.out);
  }
  return 0;
}

json sourced_json(const sim::Sourced& s) { return {{"value", s.value}, {"source", s.source}}; }

int run_machines(const std::string& dir, bool sources, bool json_out) {
  const auto catalog = load(dir);
  if (json_out) {
    json all = json::array();
    for (const auto& m : catalog) {
      json j = {{"name", m.name}, {"display_name", m.display_name}, {"vendor", m.vendor}, {"arch", m.arch},
                {"notes", m.notes}, {"compute_units", sourced_json(m.compute_units)},
                {"lds_bytes_per_cu", sourced_json(m.lds_bytes_per_cu)}, {"l2_bytes", sourced_json(m.l2_bytes)},
                {"hbm_bandwidth", sourced_json(m.hbm_bandwidth)}, {"matrix_bf16", sourced_json(m.matrix_bf16)},
                {"llc_bytes", m.llc_bytes()}, {"llc_name", m.llc_name()}};
      if (m.measured_bandwidth) j["measured_bandwidth"] = sourced_json(*m.measured_bandwidth);
      if (m.measured_matrix_bf16) j["measured_matrix_bf16"] = sourced_json(*m.measured_matrix_bf16);
      all.push_back(j);
    }
    std::cout << all.dump(2) << '\n';
    return 0;
  }
  fmt::print("{:<10} {:<32} {:>5} {:>9} {:>9} {:>10} {:>10} {:>10} {:>10}  {}\n", "name", "device", "CUs",
             "LDS/CU", "L2", "LLC", "HBM GB/s", "bf16 TF/s", "fp32 TF/s", "measured");
  for (const auto& m : catalog) {
    std::string meas;
    if (m.measured_bandwidth) meas += fmt::format("copy {:.0f} GB/s ", m.measured_bandwidth->value / 1e9);
    if (m.measured_matrix_bf16) meas += fmt::format("bf16 {:.0f} TF/s", m.measured_matrix_bf16->value / 1e12);
    fmt::print("{:<10} {:<32} {:>5} {:>8}K {:>8}M {:>9}M {:>10.0f} {:>10.1f} {:>10.1f}  {}\n", m.name, m.display_name,
               m.compute_units.value, m.lds_bytes_per_cu.value / 1024, m.l2_bytes.value / (1 << 20),
               m.llc_bytes() / (1 << 20), m.hbm_bandwidth.value / 1e9, m.matrix_bf16.value / 1e12,
               m.vector_fp32.value / 1e12, meas.empty() ? "-" : meas);
    if (sources) {
      auto line = [](const char* what, const sim::Sourced& s) { fmt::print("    {:<22} {:<14g} {}\n", what, s.value, s.source); };
      line("compute_units", m.compute_units);
      line("lds_bytes_per_cu", m.lds_bytes_per_cu);
      line("lds_bytes_per_cta", m.lds_bytes_per_cta);
      line("register_bytes_per_cu", m.register_bytes_per_cu);
      line("l2_bytes", m.l2_bytes);
      if (m.infinity_cache_bytes) line("infinity_cache_bytes", *m.infinity_cache_bytes);
      line("hbm_bandwidth", m.hbm_bandwidth);
      line("matrix_bf16", m.matrix_bf16);
      line("matrix_fp16", m.matrix_fp16);
      if (m.matrix_fp8) line("matrix_fp8", *m.matrix_fp8);
      line("vector_fp32", m.vector_fp32);
      line("launch_overhead_s", m.launch_overhead_s);
      if (m.measured_bandwidth) line("measured_bandwidth", *m.measured_bandwidth);
      if (m.measured_matrix_bf16) line("measured_matrix_bf16", *m.measured_matrix_bf16);
    }
  }
  return 0;
}

}  // namespace

void add_simulator_commands(CLI::App& root, Commands& out) {
  const auto takes_splits = [](const sim::StrategyInfo& i) { return i.takes_splits; };
  const auto takes_dq = [](const sim::StrategyInfo& i) { return i.takes_dq; };
  const std::string unfused_names =
      sim::strategy_names("|", [](const sim::StrategyInfo& i) { return i.takes_unfused_passes; });
  // simulate
  {
    auto f = std::make_shared<SimFlags>();
    f->prob.default_heads = 16;
    f->prob.default_seqlen = 4096;
    auto* app = root.add_subcommand("simulate", "IO-cost model of one problem on one machine");
    app->add_option("--machine", f->machine, "catalog name (ioattn machines)")->required();
    app->add_option("--strategy", f->strategy, sim::strategy_names("|"))->capture_default_str();
    f->prob.layout_flags = true;  // --seqlens-q/-k, --page-size, ... (simulator/layouts.hpp)
    f->prob.add_to(*app);
    app->add_option("--page-reads", f->page_reads,
                    "paged KV: rows (only the used keys, ioattn's kernels) or pages (every used page whole)");
    app->add_flag("--gqa-packed", f->gqa_packed,
                  "fa2|splitkv forward: one CTA per K/V head holds the G query heads' rows (one K/V load "
                  "serves them; implied by --kernel " +
                      variants_with(&ioattn::kernels::VariantDesign::gqa_packed, ", ", " and ") + ")");
    app->add_option("--pass", f->pass, "fwd|bwd|fwdbwd")->capture_default_str();
    app->add_flag("--mask", f->mask, unfused_names + ": an explicit (N_q, N_k) mask tensor in its own pass");
    app->add_option("--dropout", f->dropout, unfused_names + ": dropout probability (adds a pass)");
    app->add_option("--br", f->br, "query rows per tile (default: searched)");
    app->add_option("--bc", f->bc, "key rows per tile (default: searched)");
    app->add_option("--splits", f->splits, sim::strategy_names("|", takes_splits) +
                                               ": key ranges per query block (0 or absent: 1, or with --kernel " +
                                               variants_with(&ioattn::kernels::VariantDesign::decode_splits, "/", "/") +
                                               " the variant's own heuristic)")
        ->capture_default_str();
    app->add_option("--ctas-per-cu", f->ctas, "resident CTAs per CU (0: as many as fit)");
    app->add_option("--stages", f->stages, "K/V ring depth of the launch (0: not given; the warp-specialized design's ring term needs it)");
    app->add_option("--dq", f->dq, sim::strategy_names("|", takes_dq) + " backward dQ: atomic|separate")
        ->capture_default_str();
    app->add_flag("--q-in-registers", f->q_regs, "keep Q_i in registers instead of LDS");
    app->add_flag("--p-through-lds", f->p_lds, "stage P in LDS between the two matmuls");
    app->add_option("--design", f->design,
                    "pipeline design for the expected time: instr/overlap/lds, instr native|fma|mma_sync|wgmma|mfma, "
                    "overlap none|intra-warpgroup|ping-pong|warp-specialized, lds fragments|scalar")
        ->capture_default_str();
    app->add_option("--kernel", f->kernel,
                    "model a registered forward variant (ioattn kernels): its strategy and design from the "
                    "registry; give its tile, --ctas-per-cu and order as flags")
        ->excludes("--design");
    app->add_option("--grid-order", f->grid_order,
                    "CTA dispatch order of the tiled kernels: bh_major|bh_major_splits|qblock_major|qblock_major_rev")
        ->capture_default_str();
    app->add_flag("--no-l2", f->no_l2, "HBM traffic with LDS reuse only");
    app->add_flag("--datasheet", f->datasheet, "time from datasheet ceilings (default: measured where known)");
    app->add_option("--catalog", f->catalog, "machine catalog folder (default: simulator/machines)");
    app->add_flag("--json", f->json_out, "one JSON object instead of the table");
    app->footer(strategies_help());
    out.push_back({app, [f] { return run_simulate(*f); }});
  }
  // check-claim
  {
    auto f = std::make_shared<ClaimFlags>();
    f->prob.default_heads = 16;
    f->prob.default_seqlen = 4096;
    auto* app = root.add_subcommand("check-claim",
                                    "a published attention TFLOP/s against the ceiling and the best expected time");
    app->add_option("--machine", f->machine, "catalog name (ioattn machines)")->required();
    app->add_option("--tflops", f->tflops, "the claimed TFLOP/s (FlashAttention-2 FLOP convention)")->required();
    app->add_option("--strategy", f->strategy, "tiled strategy the claim's kernel runs")->capture_default_str();
    f->prob.add_to(*app);
    app->add_option("--pass", f->pass, "fwd|bwd|fwdbwd")->capture_default_str();
    app->add_option("--margin", f->margin, "implausible above expected x (1 + margin)")->capture_default_str();
    app->add_option("--catalog", f->catalog, "machine catalog folder (default: simulator/machines)");
    app->add_flag("--json", f->json_out, "one JSON object instead of the lines");
    out.push_back({app, [f] { return run_check_claim(*f); }});
  }
  // sweep
  {
    auto f = std::make_shared<SweepFlags>();
    f->prob.default_heads = 16;
    auto* app = root.add_subcommand("sweep", "tidy CSV over machines x strategies x N x tilings x passes");
    f->prob.add_to(*app);
    app->add_option("--machines", f->machines, "comma list (default: all)");
    app->add_option("--strategies", f->strategies, "comma list")->capture_default_str();
    app->add_option("--passes", f->passes, "comma list of fwd, bwd, fwdbwd")->capture_default_str();
    app->add_option("--seqlens", f->seqlens, "comma list of N (default: 128..65536, powers of two)");
    app->add_option("--tilings", f->tilings, "comma list: BRxBC, paper, search (default: 64x64,128x64,128x128,paper)");
    app->add_option("--tokens", f->tokens, "batch = max(1, tokens / N) per row (0: --batch)");
    app->add_option("--splits", f->splits, sim::strategy_names("|", takes_splits) + " splits")->capture_default_str();
    app->add_flag("--mask", f->mask, unfused_names + ": explicit mask tensor pass");
    app->add_option("--dropout", f->dropout, unfused_names + ": dropout probability");
    app->add_flag("--no-l2", f->no_l2, "LDS reuse only");
    app->add_flag("--datasheet", f->datasheet, "datasheet ceilings only");
    app->add_option("--catalog", f->catalog, "machine catalog folder");
    app->add_option("--out", f->out, "CSV file (default: stdout)");
    out.push_back({app, [f] { return run_sweep(*f); }});
  }
  // machines
  {
    auto dir = std::make_shared<std::string>();
    auto sources = std::make_shared<bool>(false);
    auto json_out = std::make_shared<bool>(false);
    auto* app = root.add_subcommand("machines", "the machine catalog, every number with its source");
    app->add_option("--catalog", *dir, "machine catalog folder");
    app->add_flag("--sources", *sources, "print each number's source");
    app->add_flag("--json", *json_out, "JSON");
    out.push_back({app, [dir, sources, json_out] { return run_machines(*dir, *sources, *json_out); }});
  }
}

}  // namespace ioattn::cli

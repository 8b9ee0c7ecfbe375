// experiments/exp_context_parallel.cpp: ring attention over P GPUs, modeled (not measured).
//
// For the H200 (NVLink 4 through NVSwitch) and the MI300X (one Infinity Fabric link per ring
// neighbour), and for both over PCIe Gen5: the context-parallel model of simulator/
// context_parallel.hpp (per-step block compute by the single-GPU expected-time model against the
// K/V transfer of the next chunk, overlapped; causal imbalance of contiguous chunks; the zigzag
// layout) over P in {1, 2, 4, 8} and N in {32k .. 1M}, causal and not, contiguous and zigzag,
// forward and backward. One problem shape: batch 1, 32 heads (Hq = Hkv), d 128, bf16; the blocks'
// tiling is searched per machine and pass (fa2, the native matrix instruction).
//
//   exp_context_parallel [--preset tiny|figure] [--out DIR] [--check]
//
// Writes sim/context_parallel/scaling.csv (plots/fig_context_parallel.py, paper/gen_numbers.py).
// --check asserts the premises: every block set covers the problem's visible pairs once; zigzag's
// causal imbalance is below contiguous's at P >= 2; a causal contiguous ring is never
// faster than a zigzag one; P = 1 is never faster than one GPU and within 25% of it (its one merge).
#include "driver.hpp"
#include "sim_common.hpp"
#include "simulator/context_parallel.hpp"

using namespace ioattn;

int main(int argc, char** argv) {
  CLI::App app{"Context-parallel (ring) attention over P GPUs: scaling efficiency, modeled", "exp_context_parallel"};
  exp::DriverArgs a;
  exp::add_common_flags(app, a, "context_parallel");
  if (auto rc = exp::parse_args(app, argc, argv)) return *rc;

  return exp::run_driver("exp_context_parallel", [&] {
    exp::Checker check(a.check);
    const auto dir_catalog = sim::default_catalog_dir();
    const auto catalog = sim::load_catalog(dir_catalog);
    const auto dir = exp::results_dir(a, "sim");
    const auto ns = a.figure() ? exp::powers_of_two(15, 20) : exp::powers_of_two(12, 13);
    const std::vector<int64_t> ranks = a.figure() ? std::vector<int64_t>{1, 2, 4, 8} : std::vector<int64_t>{1, 2, 4};
    const int64_t heads = a.figure() ? 32 : 4;

    exp::Csv csv(dir / "scaling.csv",
                 {"kind", "machine", "label", "link", "link_gbps", "layout", "causal", "pass", "ranks", "seqlen", "batch",
                  "heads", "heads_kv", "head_dim", "dtype", "br", "bc", "single_gpu_s", "time_s", "compute_bound_s",
                  "exposed_transfer_s", "efficiency", "imbalance"});
    bool cover = true, zig_balanced = true, zig_not_slower = true, p1_close = true;
    for (const auto* key : {"h200", "mi300x"}) {
      const auto& m = exp::pick_machine(catalog, key);
      AttnProblem base;
      base.dtype = DType::bf16;
      base.head_dim = 128;
      base.heads_q = base.heads_kv = heads;
      base.seqlen_q = base.seqlen_k = ns.front();
      for (const char* link_name : {"peer", "pcie"}) {
        const auto link = sim::load_cp_link(dir_catalog, m, link_name);
        for (Pass pass : {Pass::fwd, Pass::bwd}) {
          sim::Options o;
          o.pass = pass;
          sim::Tiling t{.strategy = sim::Strategy::fa2};  // searched per machine and pass
          const auto b = sim::search_block_sizes(base, m, t, o);
          if (b.Br == 0) throw sim::SimError(fmt::format("no fa2 tiling fits {} ({})", m.name, sim::pass_name(pass)));
          t.Br = b.Br;
          t.Bc = b.Bc;
          for (bool causal : {false, true})
            for (int64_t n : ns) {
              AttnProblem p = base;
              p.seqlen_q = p.seqlen_k = n;
              p.causal = causal;
              double t_contig = 0.0, imb_contig = 0.0;
              for (auto layout : {sim::CpLayout::contiguous, sim::CpLayout::zigzag})
                for (int64_t r : ranks) {
                  const auto res = sim::simulate_cp(p, m, t, o, r, layout, link);
                  csv.row({"modeled", m.name, exp::machine_label(m), link.name, exp::cell(link.bandwidth.value / 1e9),
                           std::string(sim::cp_layout_name(layout)), exp::cell(causal),
                           std::string(sim::pass_name(pass)), exp::cell(r), exp::cell(n), exp::cell(p.batch),
                           exp::cell(p.heads_q), exp::cell(p.heads_kv), exp::cell(p.head_dim), "bf16", exp::cell(t.Br),
                           exp::cell(t.Bc), exp::cell(res.single_gpu_s), exp::cell(res.time_s),
                           exp::cell(res.compute_bound_s), exp::cell(res.exposed_transfer_s),
                           exp::cell(res.efficiency), exp::cell(res.imbalance)});
                  cover &= res.score_pairs == (causal ? n * (n + 1) / 2 : n * n);
                  if (r == 1) p1_close &= res.efficiency > 0.75 && res.efficiency <= 1.0 + 1e-12;
                  if (causal && r == ranks.back()) {
                    if (layout == sim::CpLayout::contiguous) {
                      t_contig = res.time_s;
                      imb_contig = res.imbalance;
                    } else {
                      zig_not_slower &= res.time_s <= t_contig * (1 + 1e-12);
                      zig_balanced &= res.imbalance < imb_contig;
                    }
                  }
                }
            }
        }
      }
    }
    check.expect(cover, "every rank's blocks cover the problem's visible (query, key) pairs exactly once");
    check.expect(zig_balanced, "zigzag's causal imbalance (max / mean rank time) is below contiguous's at the largest P");
    check.expect(zig_not_slower, "a causal zigzag ring is never slower than a contiguous one at the largest P");
    check.expect(p1_close, "P = 1 is never faster than one GPU and within 25% of it (the ring's one merge)");
    exp::write_context(dir, "sim", a,
                       {{"config", fmt::format("ring attention model: batch 1, heads {}, d 128, bf16; fa2 blocks, "
                                               "tiling searched per machine; links peer and pcie; modeled, not "
                                               "measured", heads)}});
    return check.failures();
  });
}

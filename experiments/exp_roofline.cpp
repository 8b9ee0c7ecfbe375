// experiments/exp_roofline.cpp: where each kernel of standard attention and of FlashAttention sits
// on the roofline (Williams et al. 2009): arithmetic intensity = FLOPs / HBM bytes against the
// machine's ridge point = peak FLOP/s / HBM bandwidth.
//
// Per machine (H200, A100, MI300X models) and strategy (standard: its unfused kernels; fa1; fa2
// with the searched tile), one row per kernel: FLOPs (matrix + other), HBM bytes (L2-aware and
// without L2), the two intensities, the modeled time and the bound that won. Problem: bf16,
// d = 128, batch * N = 16384, hidden 2048, forward, non-causal.
//
//   exp_roofline [--preset tiny|figure] [--out DIR] [--check]
//
// Writes sim/roofline/kernels.csv.
#include "driver.hpp"
#include "sim_common.hpp"

using namespace ioattn;

int main(int argc, char** argv) {
  CLI::App app{"Arithmetic intensity of every attention kernel against the machine's ridge", "exp_roofline"};
  exp::DriverArgs a;
  exp::add_common_flags(app, a, "roofline");
  if (auto rc = exp::parse_args(app, argc, argv)) return *rc;

  return exp::run_driver("exp_roofline", [&] {
    exp::Checker check(a.check);
    const auto catalog = sim::load_catalog(sim::default_catalog_dir());
    const auto dir = exp::results_dir(a, "sim");

    AttnProblem p;
    p.dtype = DType::bf16;
    p.head_dim = 128;
    p.heads_q = p.heads_kv = 16;
    p.seqlen_q = p.seqlen_k = a.figure() ? 4096 : 1024;
    p.batch = 16384 / p.seqlen_q;
    sim::Options o;

    exp::Csv csv(dir / "kernels.csv",
                 {"kind", "machine", "label", "strategy", "kernel", "dtype", "head_dim", "seqlen", "batch", "heads",
                  "br", "bc", "flops", "hbm_bytes", "hbm_no_l2_bytes", "intensity", "intensity_no_l2", "time_s",
                  "achieved_tflops", "bound", "ridge"});
    bool standard_below_ridge = true, fa2_above_standard = true;
    for (const auto* key : {"h200", "a100", "mi300x"}) {
      const auto& m = exp::pick_machine(catalog, key);
      const double ridge = m.matrix_bf16.value / m.hbm_bandwidth.value;
      double worst_standard = 0, fa2_main = 0;
      for (auto s : {sim::Strategy::standard, sim::Strategy::fa1, sim::Strategy::fa2}) {
        sim::Tiling t{.strategy = s};
        if (s == sim::Strategy::fa2) {
          const auto c = sim::search_block_sizes(p, m, t, o);
          t.Br = c.Br;
          t.Bc = c.Bc;
        }
        const auto r = sim::simulate_unchecked(p, m, t, o);
        for (const auto& k : r.kernels) {
          const double flops = k.matrix_flops + k.other_flops;
          const double in = flops / double(std::max<int64_t>(1, k.hbm.total()));
          const double in_nol2 = flops / double(std::max<int64_t>(1, k.hbm_no_l2.total()));
          csv.row({"modeled", m.name, exp::machine_label(m), std::string(sim::strategy_name(s)), k.name, "bf16",
                   exp::cell(p.head_dim), exp::cell(p.seqlen_q), exp::cell(p.batch), exp::cell(p.heads_q),
                   exp::cell(sim::strategy_info(s).takes_tiles ? t.Br : int64_t{0}),
                   exp::cell(sim::strategy_info(s).takes_tiles ? t.Bc : int64_t{0}), exp::cell(flops),
                   exp::cell(k.hbm.total()), exp::cell(k.hbm_no_l2.total()), exp::cell(in), exp::cell(in_nol2),
                   exp::cell(k.time_s), exp::cell(flops / k.time_s / 1e12), k.bound, exp::cell(ridge)});
          if (s == sim::Strategy::standard && k.name.find("softmax") != std::string::npos)
            worst_standard = std::max(worst_standard, in);
          if (s == sim::Strategy::fa2 && k.name.find("fwd") != std::string::npos) fa2_main = in;
        }
      }
      standard_below_ridge &= worst_standard > 0 && worst_standard < ridge;
      fa2_above_standard &= fa2_main > worst_standard;
    }
    check.expect(standard_below_ridge, "standard attention's softmax pass sits below the ridge on every machine");
    check.expect(fa2_above_standard, "the fused FA2 kernel has a higher intensity than the softmax pass");
    exp::write_context(dir, "sim", a, {{"seqlen", p.seqlen_q}, {"head_dim", p.head_dim}, {"batch", p.batch},
                                       {"heads", p.heads_q}});
    return check.failures();
  });
}

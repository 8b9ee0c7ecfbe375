// experiments/exp_kernel_ladder.cpp: the GPU kernel ladder as data, each step beside the
// simulator's prediction for it, so the paper's ladder table can set "what the step changes in the
// model" next to "what it bought on the H200" (the measured side is the committed H200 CSV).
//
// For every variant in the kernel registry (kernels/launch.hpp; the metadata exists in every
// build, also without a GPU): name, idea, the strategy that models its traffic, what it supports,
// and on the H200 model at one problem (bf16, d = 128, N = 4096, batch 4, 16 heads, non-causal,
// forward): HBM bytes without L2 and L2-aware, and the roofline time. The tile is the
// simulator's choice (standard: none; fa1: 64 x 64; fa2: the block-size search), which need not
// be the kernel's own default: the model describes the strategy, not the exact kernel.
//
//   exp_kernel_ladder [--preset tiny|figure] [--out DIR] [--check]
//
// Writes sim/kernel_ladder/ladder.csv.
#include "driver.hpp"
#include "kernels/launch.hpp"
#include "sim_common.hpp"

using namespace ioattn;

int main(int argc, char** argv) {
  CLI::App app{"The kernel ladder with the simulator's prediction per step", "exp_kernel_ladder"};
  exp::DriverArgs a;
  exp::add_common_flags(app, a, "kernel_ladder");
  if (auto rc = exp::parse_args(app, argc, argv)) return *rc;

  return exp::run_driver("exp_kernel_ladder", [&] {
    exp::Checker check(a.check);
    const auto catalog = sim::load_catalog(sim::default_catalog_dir());
    const auto& m = exp::pick_machine(catalog, "h200");
    const auto dir = exp::results_dir(a, "sim");

    AttnProblem p;
    p.dtype = DType::bf16;
    p.head_dim = 128;
    p.heads_q = p.heads_kv = 16;
    p.seqlen_q = p.seqlen_k = a.figure() ? 4096 : 1024;
    p.batch = 16384 / p.seqlen_q;
    sim::Options o;

    exp::Csv csv(dir / "ladder.csv",
                 {"step", "variant", "strategy", "idea", "dtypes", "head_dims", "takes_tile_sizes", "machine",
                  "dtype", "head_dim", "seqlen", "batch", "heads", "br", "bc", "hbm_no_l2_bytes", "hbm_bytes",
                  "time_s", "bound"});
    int step = 0;
    bool strategies_known = true;
    for (const auto& k : kernels::registry()) {
      ++step;
      const auto s = sim::parse_strategy(k.strategy);
      strategies_known &= s.has_value();
      if (!s) continue;
      sim::Tiling t{.strategy = *s};
      if (*s == sim::Strategy::fa2 || *s == sim::Strategy::splitkv) {
        const auto c = sim::search_block_sizes(p, m, t, o);
        t.Br = c.Br;
        t.Bc = c.Bc;
      }
      const auto r = sim::simulate_unchecked(p, m, t, o);
      csv.row({exp::cell(step), std::string(k.name), std::string(k.strategy), std::string(k.idea),
               std::string(k.dtypes), std::string(k.head_dims), exp::cell(k.takes_tile_sizes), m.name,
               "bf16", exp::cell(p.head_dim), exp::cell(p.seqlen_q), exp::cell(p.batch), exp::cell(p.heads_q),
               exp::cell(sim::strategy_info(*s).takes_tiles ? t.Br : int64_t{0}),
               exp::cell(sim::strategy_info(*s).takes_tiles ? t.Bc : int64_t{0}), exp::cell(r.hbm_no_l2.total()),
               exp::cell(r.hbm.total()), exp::cell(r.time_s), r.bound});
    }
    check.expect(step > 0, "the kernel registry lists at least one variant");
    check.expect(strategies_known, "every variant names a strategy the simulator knows");
    exp::write_context(dir, "sim", a, {{"machine_model", m.name}, {"seqlen", p.seqlen_q}});
    return check.failures();
  });
}

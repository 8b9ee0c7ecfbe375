// simulator/sweep.cpp: tidy rows over machines x strategies x N x tilings x passes, and their CSV.
//
// One row per (machine, strategy, N, tiling, pass). A strategy that takes no tiles (standard, see
// IOATTN_STRATEGIES in simulator.hpp) gets one row per (machine, N, pass) with tiling "unfused". Rows whose tiling does not fit the
// machine are kept with fits = 0 (their counts are what the nest would do; time is not reachable).
#include <ostream>

#include <fmt/format.h>

#include "simulator/simulator.hpp"

namespace ioattn::sim {

std::vector<TilingPreset> default_tiling_presets() {
  return {{"64x64", 64, 64}, {"128x64", 128, 64}, {"128x128", 128, 128}, {"paper", -1, -1}};
}

std::vector<SweepRow> sweep(const SweepSpec& spec, const std::vector<Machine>& catalog) {
  std::vector<const Machine*> machines;
  if (spec.machines.empty()) {
    for (const auto& m : catalog) machines.push_back(&m);
  } else {
    for (const auto& n : spec.machines) machines.push_back(&find_machine(catalog, n));
  }
  std::vector<int64_t> ns = spec.seqlens;
  if (ns.empty())
    for (int64_t n = 128; n <= 65536; n *= 2) ns.push_back(n);
  const std::vector<TilingPreset> tilings = spec.tilings.empty() ? default_tiling_presets() : spec.tilings;
  std::vector<SweepRow> rows;
  for (const Machine* m : machines)
    for (Strategy s : spec.strategies) {
      const StrategyInfo& info = strategy_info(s);
      for (int64_t n : ns)
        for (Pass pass : spec.passes) {
          AttnProblem p = spec.base;
          p.seqlen_q = p.seqlen_k = n;
          if (spec.tokens > 0) p.batch = std::max<int64_t>(1, spec.tokens / n);
          if (auto e = p.validate()) throw SimError(*e);
          Options o = spec.options;
          o.pass = pass;
          const std::vector<TilingPreset> presets =
              info.takes_tiles ? tilings : std::vector<TilingPreset>{{"unfused", 64, 64}};
          for (const auto& preset : presets) {
            Tiling t;
            t.strategy = s;
            t.splits = info.takes_splits ? spec.splits : 1;
            if (preset.Br > 0) {
              t.Br = preset.Br;
              t.Bc = preset.Bc;
            } else if (preset.Br < 0) {
              const BlockChoice b = paper_block_sizes(p, *m, s, pass);
              t.Br = b.Br;
              t.Bc = b.Bc;
            } else {
              const BlockChoice b = search_block_sizes(p, *m, t, o);
              if (!b.fits) continue;
              t.Br = b.Br;
              t.Bc = b.Bc;
            }
            SweepRow r;
            r.machine = m->name;
            r.strategy = std::string(strategy_name(s));
            r.tiling = preset.name;
            r.pass = std::string(pass_name(pass));
            r.problem = p;
            r.Br = t.Br;
            r.Bc = t.Bc;
            r.splits = t.splits;
            r.fits = !info.takes_tiles || !check_fits(p, *m, t, pass).has_value();
            r.result = simulate_unchecked(p, *m, t, o);
            r.ctas_per_cu = r.result.ctas_per_cu;
            rows.push_back(std::move(r));
          }
        }
    }
  return rows;
}

std::vector<std::string> sweep_csv_columns() {
  return {"machine", "strategy", "loop_order", "pass", "tiling", "Br", "Bc", "splits", "ctas_per_cu",
          "fits", "batch", "heads_q", "heads_kv", "seqlen_q", "seqlen_k", "head_dim", "dtype",
          "causal", "window_left", "window_right", "no_l2", "mask_tensor", "dropout",
          "hbm_read_bytes", "hbm_write_bytes", "hbm_no_l2_read_bytes", "hbm_no_l2_write_bytes",
          "hbm_compulsory_read_bytes", "hbm_compulsory_write_bytes", "l2_read_bytes",
          "l2_write_bytes", "lds_read_bytes", "lds_write_bytes", "matrix_flops", "other_flops",
          "conventional_flops", "extra_memory_bytes", "time_s", "conventional_tflops", "bound",
          "l2_regime", "kernels", "ceiling_time_s", "ceiling_tflops", "expected_bound"};
}

void write_sweep_csv(std::ostream& out, const std::vector<SweepRow>& rows) {
  const auto cols = sweep_csv_columns();
  for (size_t i = 0; i < cols.size(); ++i) out << (i ? "," : "") << cols[i];
  out << '\n';
  for (const auto& r : rows) {
    const Result& x = r.result;
    const AttnProblem& p = r.problem;
    out << fmt::format(
        "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},"
        "{},{},{},{},{},{},{},{},{},{},{:.17g},{:.17g},{:.17g},{},{:.9g},{:.6g},{},{},{},{:.9g},{:.6g},{}\n",
        r.machine, r.strategy, loop_order_name(loop_order(x.tiling.strategy)), r.pass, r.tiling,
        r.Br, r.Bc, r.splits, r.ctas_per_cu, r.fits ? 1 : 0, p.batch, p.heads_q, p.heads_kv,
        p.seqlen_q, p.seqlen_k, p.head_dim, dtype_name(p.dtype), p.causal ? 1 : 0, p.window_left,
        p.window_right, x.options.no_l2 ? 1 : 0, x.options.mask_tensor ? 1 : 0, x.options.dropout,
        x.hbm.read, x.hbm.write, x.hbm_no_l2.read, x.hbm_no_l2.write, x.hbm_compulsory.read,
        x.hbm_compulsory.write, x.l2.read, x.l2.write, x.lds.read, x.lds.write, x.matrix_flops,
        x.other_flops, x.conventional_flops, x.extra_memory_bytes, x.time_s,
        x.time_s > 0 ? x.conventional_flops / x.time_s / 1e12 : 0.0, x.bound, x.l2_regime,
        x.kernels.size(), x.ceiling_time_s,
        x.ceiling_time_s > 0 ? x.conventional_flops / x.ceiling_time_s / 1e12 : 0.0, x.expected_bound);
  }
}

}  // namespace ioattn::sim

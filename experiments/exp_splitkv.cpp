// experiments/exp_splitkv.cpp: why Flash-Decoding splits the keys, modeled.
//
// Decoding: one new query token per sequence (seqlen_q = 1) against a long key/value cache
// (seqlen_k = N), batch 1, 16 heads, d = 128, bf16. FA2 launches one CTA per (batch, head, query
// block) = 16 CTAs, far fewer than the GPU's SMs, each streaming the whole cache; split-KV cuts
// the keys into S ranges, so 16 * S CTAs stream N / S keys each, then a combine kernel merges the
// partial (O, LSE). For every N the driver models FA2 and split-KV with S in {2, 4, ..., 256} on
// the H200, MI300X and A100 models and records each.
//
// What it shows about the model: the simulator's roofline grants every kernel the machine's whole
// HBM bandwidth however few CTAs run, so it predicts no gain from splitting; on hardware a few SMs
// cannot pull the full bandwidth, which is the gain Flash-Decoding reports. The --check asserts
// the premises (FA2's decode grid is smaller than the machine; split-KV adds partial-result
// traffic), not a speedup the model cannot show.
//
//   exp_splitkv [--preset tiny|figure] [--out DIR] [--check]
//
// Writes sim/splitkv/decode.csv.
#include "driver.hpp"
#include "sim_common.hpp"

using namespace ioattn;

int main(int argc, char** argv) {
  CLI::App app{"Decoding (seqlen_q = 1): FA2 vs split-KV over the split count, modeled", "exp_splitkv"};
  exp::DriverArgs a;
  exp::add_common_flags(app, a, "splitkv");
  if (auto rc = exp::parse_args(app, argc, argv)) return *rc;

  return exp::run_driver("exp_splitkv", [&] {
    exp::Checker check(a.check);
    const auto catalog = sim::load_catalog(sim::default_catalog_dir());
    const auto dir = exp::results_dir(a, "sim");
    const auto ns = a.figure() ? exp::powers_of_two(10, 17) : exp::powers_of_two(10, 12);

    exp::Csv csv(dir / "decode.csv",
                 {"kind", "machine", "label", "strategy", "splits", "dtype", "head_dim", "batch", "heads", "seqlen_q",
                  "seqlen_k", "br", "bc", "grid", "time_s", "hbm_bytes", "bound"});
    bool grid_small = true, split_adds_bytes = true;
    for (const auto* key : {"h200", "mi300x", "a100"}) {
      const auto& m = exp::pick_machine(catalog, key);
      for (int64_t n : ns) {
        AttnProblem p;
        p.dtype = DType::bf16;
        p.head_dim = 128;
        p.heads_q = p.heads_kv = 16;
        p.seqlen_q = 1;
        p.seqlen_k = n;
        if (auto e = p.validate()) throw std::invalid_argument(*e);
        int64_t bytes_fa2 = 0;
        for (int64_t s = 1; s <= 256; s *= 2) {
          const auto strat = s == 1 ? sim::Strategy::fa2 : sim::Strategy::splitkv;
          sim::Tiling t{.strategy = strat, .Br = 16, .Bc = 64, .splits = s};  // Br >= the one query row
          if (s > 1 && s * t.Bc > n) break;  // more splits than key blocks: empty splits
          const auto r = sim::simulate_unchecked(p, m, t, {});
          int64_t grid = 0;
          for (const auto& k : r.kernels) grid = std::max(grid, k.grid);
          csv.row({"modeled", m.name, exp::machine_label(m), std::string(sim::strategy_name(strat)), exp::cell(s),
                   "bf16", exp::cell(p.head_dim), exp::cell(p.batch), exp::cell(p.heads_q), exp::cell(p.seqlen_q),
                   exp::cell(n), exp::cell(t.Br), exp::cell(t.Bc), exp::cell(grid), exp::cell(r.time_s),
                   exp::cell(r.hbm.total()), r.bound});
          if (s == 1) {
            bytes_fa2 = r.hbm.total();
            grid_small &= grid < int64_t(m.compute_units.value);
          } else {
            split_adds_bytes &= r.hbm.total() >= bytes_fa2;
          }
        }
      }
    }
    check.expect(grid_small, "FA2's decode grid (batch x heads CTAs) is smaller than every machine's CU/SM count");
    check.expect(split_adds_bytes, "split-KV never moves fewer HBM bytes than FA2 (it adds the partial O, LSE)");
    exp::write_context(dir, "sim", a, {{"config", "decode: seqlen_q 1, batch 1, heads 16, d 128, bf16; Br 16, Bc 64"}});
    return check.failures();
  });
}

// experiments/exp_block_size.cpp: block-size study at fixed N (the FlashAttention paper's Fig. 2,
// middle): HBM traffic and time of the FA2 forward against Br and Bc, modeled.
//
// Every (Br, Bc) in {16, 32, 64, 128, 256}^2 is simulated (also the tiles that do not fit, marked
// fits = 0 with the binding constraint, so a reader sees where the LDS and register budget ends),
// on the H200, A100 and MI300X models; plus the two block-size choices of the simulator: the
// paper's rule and the search. Config: N fixed, batch * N = 16384, hidden 2048, bf16, non-causal.
//
//   exp_block_size [--preset tiny|figure] [--out DIR] [--check]
//
// Writes sim/block_size/{tiles,choices}.csv.
#include <map>

#include "driver.hpp"
#include "sim_common.hpp"

using namespace ioattn;

int main(int argc, char** argv) {
  CLI::App app{"HBM traffic and time of FA2 vs Br, Bc at fixed N (modeled)", "exp_block_size"};
  exp::DriverArgs a;
  exp::add_common_flags(app, a, "block_size");
  int64_t d = 128;
  app.add_option("--head-dim", d, "head dimension d")->capture_default_str();
  if (auto rc = exp::parse_args(app, argc, argv)) return *rc;

  return exp::run_driver("exp_block_size", [&] {
    exp::Checker check(a.check);
    const auto catalog = sim::load_catalog(sim::default_catalog_dir());
    const auto dir = exp::results_dir(a, "sim");
    const int64_t n = a.figure() ? 8192 : 1024;
    const std::vector<int64_t> sizes = {16, 32, 64, 128, 256};

    AttnProblem p;
    p.head_dim = d;
    p.heads_q = p.heads_kv = std::max<int64_t>(1, 2048 / d);
    p.seqlen_q = p.seqlen_k = n;
    p.batch = std::max<int64_t>(1, 16384 / n);
    p.dtype = DType::bf16;
    if (auto e = p.validate()) throw std::invalid_argument(*e);
    sim::Options o;

    exp::Csv tiles(dir / "tiles.csv",
                   {"kind", "machine", "label", "strategy", "dtype", "head_dim", "seqlen", "batch", "heads",
                    "br", "bc", "fits", "why", "ctas_per_cu", "hbm_bytes", "hbm_no_l2_bytes", "l2_bytes",
                    "time_s", "bound", "l2_regime"});
    exp::Csv choices(dir / "choices.csv", {"machine", "label", "method", "br", "bc", "fits", "rule"});
    bool monotone = true, some_fit = true;
    for (const auto* key : {"h200", "a100", "mi300x"}) {
      const auto& m = exp::pick_machine(catalog, key);
      std::map<std::pair<int64_t, int64_t>, int64_t> no_l2;
      int fitting = 0;
      for (int64_t br : sizes)
        for (int64_t bc : sizes) {
          const sim::Tiling t{.strategy = sim::Strategy::fa2, .Br = br, .Bc = bc};
          const auto why = sim::check_fits(p, m, t, o.pass);
          const auto r = sim::simulate_unchecked(p, m, t, o);
          std::string w = why.value_or("");
          std::replace(w.begin(), w.end(), ',', ';');
          tiles.row({"modeled", m.name, exp::machine_label(m), "fa2", "bf16", exp::cell(d), exp::cell(n),
                     exp::cell(p.batch), exp::cell(p.heads_q), exp::cell(br), exp::cell(bc), exp::cell(!why),
                     w, exp::cell(r.ctas_per_cu), exp::cell(r.hbm.total()), exp::cell(r.hbm_no_l2.total()),
                     exp::cell(r.l2.total()), exp::cell(r.time_s), r.bound, r.l2_regime});
          no_l2[{br, bc}] = r.hbm_no_l2.total();
          fitting += !why;
        }
      // FA2 re-reads K and V once per query block: without L2, traffic never grows with Br.
      for (int64_t bc : sizes)
        for (size_t i = 1; i < sizes.size(); ++i)
          monotone &= no_l2[{sizes[i], bc}] <= no_l2[{sizes[i - 1], bc}];
      some_fit &= fitting > 0;
      const auto rule = sim::paper_block_sizes(p, m);
      const auto search = sim::search_block_sizes(p, m, sim::Tiling{.strategy = sim::Strategy::fa2}, o);
      for (const auto& [method, c] : {std::pair{"rule", rule}, std::pair{"search", search}}) {
        std::string r = c.rule;
        std::replace(r.begin(), r.end(), ',', ';');
        choices.row({m.name, exp::machine_label(m), method, exp::cell(c.Br), exp::cell(c.Bc), exp::cell(c.fits), r});
      }
      check.expect(search.Br > 0 && search.fits, m.name + ": the block-size search finds a feasible tile");
    }
    check.expect(monotone, "FA2's no-L2 HBM traffic never grows with Br at fixed Bc");
    check.expect(some_fit, "every machine fits at least one tile of the grid");
    exp::write_context(dir, "sim", a, {{"seqlen", n}, {"head_dim", d}, {"batch", p.batch}, {"heads", p.heads_q}});
    return check.failures();
  });
}

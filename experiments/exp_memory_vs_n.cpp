// experiments/exp_memory_vs_n.cpp: peak extra device memory of standard attention vs
// FlashAttention-2, forward and forward+backward, modeled for every catalog machine.
//
// Extra memory is what a pass allocates beyond Q, K, V, O (and dO, dQ, dK, dV for a backward):
// standard attention materializes S and P (N^2 per head, and keeps P for the backward); FA2 keeps
// only LSE (N floats per head) and, for the backward, D and an fp32 dQ accumulator.
// Config (the H200 measurement it is compared with, experiments/results/h200/2026-12-01_f9ca3ea_sdpa_anchors/h200_sdpa_memory.csv):
// batch 1, 16 heads, d = 64, bf16, non-causal.
// The CPU measurement of the same quantity is exp_cpu_reference; the H200 one is committed data.
//
//   exp_memory_vs_n [--preset tiny|figure] [--out DIR] [--check]
//
// Writes sim/memory_vs_n/memory.csv.
#include <cmath>
#include <map>

#include "driver.hpp"
#include "sim_common.hpp"

using namespace ioattn;

int main(int argc, char** argv) {
  CLI::App app{"Extra device memory vs N, standard vs FA2, modeled for every catalog machine",
               "exp_memory_vs_n"};
  exp::DriverArgs a;
  exp::add_common_flags(app, a, "memory_vs_n");
  AttnProblem base;
  base.heads_q = base.heads_kv = 16;
  base.head_dim = 64;
  base.dtype = DType::bf16;
  app.add_option("--heads", base.heads_q, "heads")->capture_default_str();
  app.add_option("--head-dim", base.head_dim, "head dimension d")->capture_default_str();
  if (auto rc = exp::parse_args(app, argc, argv)) return *rc;
  base.heads_kv = base.heads_q;

  return exp::run_driver("exp_memory_vs_n", [&] {
    if (auto e = base.validate()) throw std::invalid_argument(*e);
    exp::Checker check(a.check);
    const auto catalog = sim::load_catalog(sim::default_catalog_dir());
    const auto dir = exp::results_dir(a, "sim");
    const auto ns = a.figure() ? exp::powers_of_two(7, 16) : exp::powers_of_two(7, 10);

    exp::Csv csv(dir / "memory.csv", {"kind", "machine", "label", "impl", "pass", "dtype", "head_dim",
                                       "causal", "batch", "heads", "seqlen", "extra_bytes", "fits"});
    // (impl, pass) -> N -> bytes on the first machine, to compare the others against it.
    std::map<std::string, std::map<int64_t, int64_t>> first;
    bool same_everywhere = true;
    for (const auto& m : catalog)
      for (auto s : {sim::Strategy::standard, sim::Strategy::fa2})
        for (auto pass : {Pass::fwd, Pass::fwdbwd})
          for (int64_t n : ns) {
            AttnProblem p = base;
            p.seqlen_q = p.seqlen_k = n;
            const sim::Tiling t{.strategy = s};  // Br = Bc = 64: the footprint does not depend on it
            sim::Options o;
            o.pass = pass;
            const auto r = sim::simulate_unchecked(p, m, t, o);
            const bool fits = !sim::check_fits(p, m, t, pass).has_value();
            const std::string impl(sim::strategy_name(s)), pname(sim::pass_name(pass));
            csv.row({"modeled", m.name, exp::machine_label(m), impl, pname,
                     std::string(dtype_name(p.dtype)), exp::cell(p.head_dim), exp::cell(p.causal),
                     exp::cell(p.batch), exp::cell(p.heads_q), exp::cell(n), exp::cell(r.extra_memory_bytes),
                     exp::cell(fits)});
            auto& ref = first[impl + "/" + pname];
            if (!ref.count(n)) ref[n] = r.extra_memory_bytes;
            same_everywhere &= ref[n] == r.extra_memory_bytes;
          }

    auto exponent = [&](const std::string& key) {
      std::vector<double> x, y;
      for (auto [n, b] : first[key])
        if (n >= ns[ns.size() / 2]) {
          x.push_back(double(n));
          y.push_back(double(b));
        }
      return exp::fit_exponent(x, y);
    };
    for (const auto* pass : {"fwd", "fwdbwd"}) {
      const double es = exponent(std::string("standard/") + pass), ef = exponent(std::string("fa2/") + pass);
      check.expect(es > 1.8, fmt::format("standard {} extra memory grows as N^2 (fitted exponent {:.3f})", pass, es));
      check.expect(ef < 1.2, fmt::format("FA2 {} extra memory grows at most linearly (fitted exponent {:.3f})", pass, ef));
      const int64_t n = ns.back();
      check.expect(first[std::string("fa2/") + pass][n] < first[std::string("standard/") + pass][n],
                   fmt::format("FA2 {} needs less extra memory than standard at N = {}", pass, n));
    }
    check.expect(same_everywhere, "extra memory is the same on every catalog machine (a property of the problem)");
    exp::write_context(dir, "sim", a, {{"config", fmt::format("batch {}, heads {}, d {}, {}, non-causal", base.batch, base.heads_q, base.head_dim, dtype_name(base.dtype))},
                                       {"same_on_every_machine", same_everywhere}});
    return check.failures();
  });
}

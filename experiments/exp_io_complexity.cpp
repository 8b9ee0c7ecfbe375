// experiments/exp_io_complexity.cpp: HBM accesses against N and against on-chip memory M, with
// fitted exponents beside the theorems (FlashAttention, Thm. 2):
//
//   standard attention   Theta(N d + N^2)       -> exponent 2 in N, 0 in M
//   FA1, FA2             Theta(N^2 d^2 / M)      -> exponent 2 in N, -1 in M
//
// One head (batch = heads = 1), fp16, non-causal, forward, the simulator with the L2 switched off
// (`no_l2`: every global access is an HBM access, so only on-chip reuse counts, as in the theorem).
// Block sizes follow the paper's rule for an on-chip memory of M elements:
//     Bc = ceil(M / 4d),  Br = min(ceil(M / 4d), d)
// vs N: M = the LDS per SM of the H200 model, rounded down to a power of two; vs M: M = 2^k elements, N fixed. The rule caps Br at d
// for M >= 4 d^2, so FA2's traffic (which depends on Br) stops falling there while FA1's (which
// depends on Bc) keeps falling: the fit for FA2 in M uses M < 4 d^2 only.
//
//   exp_io_complexity [--preset tiny|figure] [--out DIR] [--check]
//
// Writes sim/io_complexity/{vs_n,vs_m,fits}.csv.
#include <cmath>
#include <map>

#include "driver.hpp"
#include "sim_common.hpp"

using namespace ioattn;

namespace {

struct Point {
  std::string strategy;
  int64_t n, m_elems, br, bc;
  sim::Result r;
};

sim::Tiling rule_tiling(sim::Strategy s, int64_t m_elems, int64_t d) {
  const int64_t bc = (m_elems + 4 * d - 1) / (4 * d);
  return sim::Tiling{.strategy = s, .Br = std::min(bc, d), .Bc = bc};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"HBM accesses vs N and vs on-chip memory M, with fitted exponents", "exp_io_complexity"};
  exp::DriverArgs a;
  exp::add_common_flags(app, a, "io_complexity");
  int64_t d = 64;
  std::string machine_key = "h200";
  app.add_option("--head-dim", d, "head dimension d")->capture_default_str();
  app.add_option("--machine", machine_key, "machine whose LDS sets M for the sweep in N")->capture_default_str();
  if (auto rc = exp::parse_args(app, argc, argv)) return *rc;

  return exp::run_driver("exp_io_complexity", [&] {
    exp::Checker check(a.check);
    const auto catalog = sim::load_catalog(sim::default_catalog_dir());
    const auto& mach = exp::pick_machine(catalog, machine_key);
    const auto dir = exp::results_dir(a, "sim");

    AttnProblem base;
    base.head_dim = d;
    base.dtype = DType::fp16;
    if (auto e = base.validate()) throw std::invalid_argument(*e);
    sim::Options opt;
    opt.no_l2 = true;
    const int64_t elem = int64_t(dtype_bytes(base.dtype));
    // The largest power of two <= the LDS in elements: tiles are then powers of two, and Tc, Tr
    // are exact quotients over the N sweep (no ceil() steps in the curves).
    int64_t m_machine = 1;
    while (2 * m_machine <= int64_t(mach.lds_bytes_per_cu.value) / elem) m_machine *= 2;

    const auto ns = a.figure() ? exp::powers_of_two(8, 16) : exp::powers_of_two(8, 12);
    const int64_t n_for_m = a.figure() ? 4096 : 512;
    // M from 4d (Bc = 1) up to 8 d^2 (twice where Br stops growing).
    std::vector<int64_t> ms;
    for (int64_t m = 4 * d; m <= 8 * d * d; m *= 2) ms.push_back(m);

    const std::vector<sim::Strategy> strategies = {sim::Strategy::standard, sim::Strategy::fa1,
                                                   sim::Strategy::fa2};
    // One point: strategy s at N = n with the paper's tiles for on-chip memory m (standard: none).
    auto point = [&](sim::Strategy s, int64_t n, int64_t m) {
      AttnProblem p = base;
      p.seqlen_q = p.seqlen_k = n;
      const auto t = sim::strategy_info(s).takes_tiles ? rule_tiling(s, m, d) : sim::Tiling{.strategy = s};
      return Point{std::string(sim::strategy_name(s)), n, m, t.Br, t.Bc, sim::simulate_unchecked(p, mach, t, opt)};
    };
    std::vector<Point> vs_n, vs_m;
    for (auto s : strategies)
      for (int64_t n : ns) vs_n.push_back(point(s, n, m_machine));
    for (auto s : strategies)
      for (int64_t m : ms) vs_m.push_back(point(s, n_for_m, m));

    const std::vector<std::string> cols = {"kind", "machine", "strategy", "dtype", "head_dim", "seqlen",
                                           "m_elems", "br", "bc", "hbm_no_l2_bytes", "hbm_bytes",
                                           "hbm_compulsory_bytes", "matrix_flops"};
    auto write = [&](const std::string& name, const std::vector<Point>& pts) {
      exp::Csv csv(dir / name, cols);
      for (const auto& q : pts)
        csv.row({"modeled", mach.name, q.strategy, std::string(dtype_name(base.dtype)), exp::cell(d),
                 exp::cell(q.n), exp::cell(q.m_elems), exp::cell(q.br), exp::cell(q.bc),
                 exp::cell(q.r.hbm_no_l2.total()), exp::cell(q.r.hbm.total()),
                 exp::cell(q.r.hbm_compulsory.total()), exp::cell(q.r.matrix_flops)});
    };
    write("vs_n.csv", vs_n);
    write("vs_m.csv", vs_m);

    // Fits: vs N over the upper half of the N range (where N^2 dominates N d), vs M as described.
    exp::Csv fits(dir / "fits.csv", {"strategy", "variable", "exponent", "theory_exponent", "theory",
                                      "x_min", "x_max", "points"});
    std::map<std::string, double> fitted;
    const int64_t n_fit_min = ns[ns.size() / 2];
    for (auto s : strategies) {
      const std::string name(sim::strategy_name(s));
      std::vector<double> x, y;
      for (const auto& q : vs_n)
        if (q.strategy == name && q.n >= n_fit_min) {
          x.push_back(double(q.n));
          y.push_back(double(q.r.hbm_no_l2.total()));
        }
      const double e = exp::fit_exponent(x, y);
      fitted[name + ":N"] = e;
      fits.row({name, "N", exp::cell(e), "2", s == sim::Strategy::standard ? "Theta(Nd+N^2)" : "Theta(N^2 d^2/M)",
                exp::cell(int64_t(x.front())), exp::cell(int64_t(x.back())), exp::cell(int64_t(x.size()))});
      x.clear();
      y.clear();
      for (const auto& q : vs_m)
        if (q.strategy == name && (s != sim::Strategy::fa2 || q.m_elems < 4 * d * d)) {
          x.push_back(double(q.m_elems));
          y.push_back(double(q.r.hbm_no_l2.total()));
        }
      const double em = exp::fit_exponent(x, y);
      fitted[name + ":M"] = em;
      fits.row({name, "M", exp::cell(em), s == sim::Strategy::standard ? "0" : "-1",
                s == sim::Strategy::standard ? "Theta(Nd+N^2)" : "Theta(N^2 d^2/M)",
                exp::cell(int64_t(x.front())), exp::cell(int64_t(x.back())), exp::cell(int64_t(x.size()))});
    }

    // What the figure and the paper rely on.
    for (const auto& name : {"standard", "fa1", "fa2"})
      check.expect(std::abs(fitted[std::string(name) + ":N"] - 2.0) < 0.15,
                   fmt::format("{} HBM traffic grows as N^2 (fitted exponent {:.3f})", name,
                               fitted[std::string(name) + ":N"]));
    check.expect(std::abs(fitted["standard:M"]) < 1e-9, "standard attention's traffic does not depend on M");
    // The Nd term flattens the curve at large M; over the fitted ranges the slope is near -1.
    for (const auto& name : {"fa1", "fa2"})
      check.expect(fitted[std::string(name) + ":M"] < -0.6 && fitted[std::string(name) + ":M"] > -1.1,
                   fmt::format("{} HBM traffic falls about as 1/M (fitted exponent {:.3f})", name,
                               fitted[std::string(name) + ":M"]));
    bool above_compulsory = true, fa_below_standard = true;
    for (const auto& q : vs_n) above_compulsory &= q.r.hbm_no_l2.total() >= q.r.hbm_compulsory.total();
    for (size_t i = 0; i < ns.size(); ++i)
      if (ns[i] >= 1024) fa_below_standard &= vs_n[2 * ns.size() + i].r.hbm_no_l2.total() < vs_n[i].r.hbm_no_l2.total();
    check.expect(above_compulsory, "no strategy moves fewer bytes than the compulsory traffic");
    check.expect(fa_below_standard, "FA2 moves fewer HBM bytes than standard attention for N >= 1024");

    exp::write_context(dir, "sim", a,
                       {{"machine_model", mach.name}, {"head_dim", d}, {"m_machine_elems", m_machine},
                        {"n_for_m", n_for_m}, {"no_l2", true}});
    return check.failures();
  });
}

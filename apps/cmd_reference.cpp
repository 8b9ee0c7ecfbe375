// apps/cmd_reference.cpp: `ioattn reference`, the CPU definition of attention and the tiled
// teaching algorithms checked against it.
//
//   ioattn reference --seqlen-q 113 --seqlen-k 203 --causal --head-dim 59      summary of O, LSE
//   ioattn reference ... --check                  FA1, FA2, split-KV vs the float64 reference
//   ioattn reference ... --check --backward       ... and the FA2 backward (dQ, dK, dV)
//   ioattn reference ... --check --br 32 --bc 64 --splits 4 --logit-std 1000
//   ioattn reference --seqlens-q 5,0,17 --seqlens-k 9,3,40 --page-size 16 --shuffle-pages --check
//                                                 a packed batch over a paged cache (by definition)
//
// --check prints, per algorithm and tensor, the error rule of include/ioattn/tolerance.hpp:
// max and mean |out - ref64|, the bound 2 * (naive baseline's max error) + floor (3x for
// gradients), PASS/FAIL and the time; the exit code is 1 when any check fails.
// Bad input (sizes, heads, dtype, window, tiling, a naive S that does not fit in host memory) is a
// UsageError: one line, exit code 2.
#include <chrono>
#include <cmath>
#include <memory>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli.hpp"
#include "ioattn/flops.hpp"
#include "ioattn/tolerance.hpp"
#include "reference.hpp"

namespace ioattn::cli {

namespace {

struct ReferenceFlags {
  ProblemFlags prob;
  bool check = false;
  bool backward = false;
  int64_t br = 64, bc = 64, splits = 4;
  double logit_std = 1.0;
};

// Runs f, turning the reference's precondition errors into bad-input errors (exit 2).
template <class F>
auto guarded(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const ref::ReferenceError& e) {
    throw UsageError(e.what());
  }
}

template <class F>
auto timed(double& ms, F&& f) -> decltype(f()) {
  const auto t0 = std::chrono::steady_clock::now();
  auto r = f();
  ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

std::string describe(const AttnProblem& p) {
  std::string s = fmt::format("batch={} heads_q={} heads_kv={} seqlen_q={} seqlen_k={} head_dim={} {} scale={:.6g}",
                              p.batch, p.heads_q, p.heads_kv, p.seqlen_q, p.seqlen_k, p.head_dim,
                              dtype_name(p.dtype), p.softmax_scale());
  s += fp8_description(p);
  if (p.causal) s += " causal";
  if (p.window_left >= 0 || p.window_right >= 0) s += fmt::format(" window=({},{})", p.window_left, p.window_right);
  if (!p.is_dense()) {  // packed / paged (ioattn/layout.hpp): the per-sequence lengths
    std::string lq, lk;
    for (int64_t b = 0; b < p.batch; ++b) {
      lq += fmt::format("{}{}", b ? "," : "", p.seqlen_q_of(b));
      lk += fmt::format("{}{}", b ? "," : "", p.seqlen_k_of(b));
    }
    s += fmt::format(" layout=[{}] seqlens_q={} seqlens_k={}", p.layout.describe(), lq, lk);
    if (p.layout.paged())
      s += fmt::format(" page_size={} num_pages={} max_pages={}", p.layout.page_size, p.layout.num_pages,
                       p.layout.max_pages);
  }
  return s;
}

// One table row of --check; returns whether it passed.
bool row(std::string_view algo, std::string_view tensor, const RuleResult& r, double ms) {
  fmt::print("  {:<12} {:<4} {:>10.3e} {:>10.3e} {:>10.3e}  {:<4} {:>9.2f} ms{}\n", algo, tensor,
             r.out.max_err, r.out.mean_err, r.bound, r.pass ? "PASS" : "FAIL", ms,
             r.pass ? std::string{}
                    : fmt::format("   worst index {} (got {:.9g}, ref {:.9g}){}", r.out.worst, r.out.worst_value,
                                  r.out.worst_ref, r.out.nan_count ? fmt::format(", {} NaN", r.out.nan_count) : ""));
  return r.pass;
}

RuleResult rule(const std::vector<float>& out, const std::vector<double>& ref64, const std::vector<float>& base,
                DType dt, double factor) {
  return check_error_rule(std::span<const float>(out), std::span<const double>(ref64),
                          std::span<const float>(base), dt, factor);
}

int run_reference(const ReferenceFlags& f) {
  const AttnProblem p = f.prob.problem();  // validated; UsageError names the constraint
  const ref::Tiling t{f.br, f.bc, f.splits};
  if (auto e = t.validate()) throw UsageError(*e);
  if (!(f.logit_std > 0.0 && std::isfinite(f.logit_std)))
    throw UsageError(fmt::format("--logit-std must be a finite positive number (got {})", f.logit_std));
  // The float64 reference materializes S: refuse before allocating anything.
  const auto need = f.backward ? ref::Algorithm::naive_backward : ref::Algorithm::naive_forward;
  if (auto e = ref::memory_error(p, need)) throw UsageError(*e);

  if (f.backward && is_fp8(p.dtype)) throw UsageError("--backward: fp8 dtypes are forward only");
  const ref::Inputs in = guarded([&] { return ref::make_inputs(p, f.prob.seed, {.logit_std = f.logit_std}); });
  double ms_f64 = 0, ms_naive = 0;
  const ref::Forward64 ref64 = guarded([&] { return timed(ms_f64, [&] { return ref::forward_f64(p, in); }); });
  const ref::Forward base = guarded([&] { return timed(ms_naive, [&] { return ref::forward_naive(p, in); }); });

  fmt::print("ioattn reference: {}\n", describe(p));
  fmt::print("  inputs: seed {}, logit_std {:g}; FLOPs (FA2 convention) {:.4g} forward\n", f.prob.seed,
             f.logit_std, conventional_fwd_flops(p));
  fmt::print("  float64 reference {:.2f} ms; naive {} baseline {:.2f} ms ({:.2f} GFLOP/s)\n", ms_f64,
             dtype_name(p.dtype), ms_naive, conventional_fwd_flops(p) / (ms_naive * 1e6));
  int64_t masked_rows = 0;
  double lse_lo = INFINITY, lse_hi = -INFINITY, o_abs = 0;
  for (double l : ref64.lse) {
    if (std::isinf(l)) ++masked_rows;
    else lse_lo = std::min(lse_lo, l), lse_hi = std::max(lse_hi, l);
  }
  for (double o : ref64.o) o_abs = std::max(o_abs, std::fabs(o));
  fmt::print("  O: max |O| {:.6g}; LSE in [{:.6g}, {:.6g}]; fully masked rows (O = 0, LSE = -inf): {} of {}\n",
             o_abs, lse_lo, lse_hi, masked_rows, p.lse_elems());
  if (!f.check) return 0;

  fmt::print("check vs float64 (pass: max_err <= {:g} x naive baseline max_err + floor; {:g}x for gradients), "
             "Br={} Bc={} splits={}\n",
             kForwardFactor, kGradientFactor, t.br, t.bc, t.splits);
  fmt::print("  {:<12} {:<4} {:>10} {:>10} {:>10}  {:<4} {:>12}\n", "algorithm", "out", "max_err", "mean_err",
             "bound", "", "time");
  bool ok = true;
  ok &= row("naive", "O", rule(base.o, ref64.o, base.o, p.output_dtype(), kForwardFactor), ms_naive);
  if (is_fp8(p.dtype)) {
    // FP8: the definition and its same-precision emulation only (reference/naive.cpp), plus the
    // float64 output rounded once to the output dtype, a correct result the rule must pass.
    ok &= row("naive", "LSE", rule(base.lse, ref64.lse, base.lse, p.output_dtype(), kForwardFactor), ms_naive);
    std::vector<float> once(ref64.o.begin(), ref64.o.end());
    ref::round_in_place(p.output_dtype(), once);
    ok &= row("f64 rounded", "O", rule(once, ref64.o, base.o, p.output_dtype(), kForwardFactor), 0.0);
    fmt::print("  ({}: FA1, FA2, split-KV and backwards are not defined for FP8 inputs; floor = 8 u({}))\n",
               dtype_name(p.dtype), dtype_name(p.output_dtype()));
    fmt::print("{}\n", ok ? "all checks PASS" : "some checks FAILED");
    return ok ? 0 : 1;
  }
  if (!p.is_dense()) {
    // Packed / paged: the definition only (the tiled algorithms take the dense layout); the naive
    // baseline and its backward against the float64 definition, both gathered per sequence.
    ok &= row("naive", "LSE", rule(base.lse, ref64.lse, base.lse, p.output_dtype(), kForwardFactor), ms_naive);
    fmt::print("  (FA1, FA2, split-KV: dense layout only, not run for {})\n", p.layout.describe());
    if (f.backward) {
      double ms64 = 0, ms_b = 0;
      const ref::Grads64 g64 = guarded([&] { return timed(ms64, [&] { return ref::backward_f64(p, in); }); });
      const ref::Grads gb = guarded([&] { return timed(ms_b, [&] { return ref::backward_naive(p, in, base); }); });
      ok &= row("naive bwd", "dQ", rule(gb.dq, g64.dq, gb.dq, p.dtype, kGradientFactor), ms_b);
      ok &= row("naive bwd", "dK", rule(gb.dk, g64.dk, gb.dk, p.dtype, kGradientFactor), ms_b);
      ok &= row("naive bwd", "dV", rule(gb.dv, g64.dv, gb.dv, p.dtype, kGradientFactor), ms_b);
      fmt::print("  (float64 backward {:.2f} ms)\n", ms64);
    }
    fmt::print("{}\n", ok ? "all checks PASS" : "some checks FAILED");
    return ok ? 0 : 1;
  }
  using Fn = ref::Forward (*)(const AttnProblem&, const ref::Inputs&, const ref::Tiling&);
  const std::pair<const char*, Fn> algos[] = {
      {"FA1", &ref::forward_fa1}, {"FA2", &ref::forward_fa2}, {"split-KV", &ref::forward_splitkv}};
  ref::Forward fa2_out;
  for (const auto& [name, fn] : algos) {
    double ms = 0;
    ref::Forward out = guarded([&] { return timed(ms, [&] { return fn(p, in, t); }); });
    ok &= row(name, "O", rule(out.o, ref64.o, base.o, p.output_dtype(), kForwardFactor), ms);
    ok &= row(name, "LSE", rule(out.lse, ref64.lse, base.lse, p.output_dtype(), kForwardFactor), ms);
    if (fn == &ref::forward_fa2) fa2_out = std::move(out);
  }
  if (f.backward) {
    double ms64 = 0, ms_b = 0, ms_t = 0;
    const ref::Grads64 g64 = guarded([&] { return timed(ms64, [&] { return ref::backward_f64(p, in); }); });
    // The baseline backward starts from the same forward state (O, LSE) as the FA2 backward.
    const ref::Grads gb = guarded([&] { return timed(ms_b, [&] { return ref::backward_naive(p, in, fa2_out); }); });
    const ref::Grads gt = guarded([&] { return timed(ms_t, [&] { return ref::backward_fa2(p, in, fa2_out, t); }); });
    ok &= row("FA2 bwd", "dQ", rule(gt.dq, g64.dq, gb.dq, p.dtype, kGradientFactor), ms_t);
    ok &= row("FA2 bwd", "dK", rule(gt.dk, g64.dk, gb.dk, p.dtype, kGradientFactor), ms_t);
    ok &= row("FA2 bwd", "dV", rule(gt.dv, g64.dv, gb.dv, p.dtype, kGradientFactor), ms_t);
    fmt::print("  (float64 backward {:.2f} ms, naive {} backward {:.2f} ms)\n", ms64, dtype_name(p.dtype), ms_b);
  }
  fmt::print("{}\n", ok ? "all checks PASS" : "some checks FAILED");
  return ok ? 0 : 1;
}

}  // namespace

void add_reference_commands(CLI::App& root, Commands& out) {
  auto f = std::make_shared<ReferenceFlags>();
  f->prob.default_seqlen = 128;
  f->prob.layout_flags = true;  // --seqlens-q/-k, --page-size: packed and paged layouts by definition
  auto* app = root.add_subcommand("reference", "CPU definition of attention; --check runs the tiled algorithms against it");
  f->prob.add_to(*app);
  app->add_flag("--check", f->check, "run FA1, FA2 and split-KV against the float64 reference");
  app->add_flag("--backward", f->backward, "with --check: also the FA2 backward (dQ, dK, dV)");
  app->add_option("--br", f->br, "query block rows Br of the tiled algorithms")->capture_default_str();
  app->add_option("--bc", f->bc, "key block rows Bc of the tiled algorithms")->capture_default_str();
  app->add_option("--splits", f->splits, "key splits of split-KV")->capture_default_str();
  app->add_option("--logit-std", f->logit_std, "standard deviation of the generated logits")->capture_default_str();
  out.push_back({app, [f, app] {
                    return run_reference(*f);
                  }});
}

}  // namespace ioattn::cli

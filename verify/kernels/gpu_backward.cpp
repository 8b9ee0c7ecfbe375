// verify/kernels/gpu_backward.cpp: every registered GPU BACKWARD variant against the CPU float64
// reference (kernels/bwd_registry.cpp; new variants join automatically).
//
// Each case runs the variant's paired forward on the device (harness_bwd: the backward consumes
// exactly the O and LSE that forward wrote), then the backward, and judges dQ, dK, dV under the
// error rule with the gradient factor 3 (kernels/check_bwd.hpp): truth ref::backward_f64, baseline
// ref::backward_naive started from the downloaded forward state. Beside the rule, every case
// checks exact zeros: the dQ row of a fully masked query row and the dK, dV rows of a key that no
// query row may see are exactly 0 (and nothing is NaN: the harness NaN-poisons dQ, dK, dV and the
// workspace before each launch, so a forgotten element fails).
//
// Properties (RapidCheck, shapes from verify/support: weighted toward seqlen 1, 17, 113 vs 203,
// seqlen_q != seqlen_k both ways with causal, windows, GQA/MQA, fully masked rows, odd head dims,
// logits up to ~1e4), Br/Bc that do not divide the sequence. Named cases: (1, 1), 1023 vs 1024,
// 113 vs 203 causal GQA, 203 vs 113 causal MQA (leading rows fully masked), window (0, 0), window
// (5, 3) with Nq > Nk, large logits in fp32 and bf16; odd tiles. Determinism at every head dim a
// variant lists: a variant registered deterministic gives bit-identical dQ, dK, dV over 100
// launches; every variant gives bit-identical dK, dV (the GQA sum is in-block, in a fixed order),
// and an atomic-dQ variant's dQ differences are printed, not failed. Refusals: unsupported
// problems and tiles, and null tensors, are refused with a message, never launched. The check
// itself can fail (a NaN and a perturbed element of dQ, dK or dV are caught). The harness's timing
// (backward alone, forward + backward) runs and leaves a valid state behind.
//
// Last lines: `variant NAME: N cases run, M refused` per registered backward (distinct cases, as
// gpu_kernels counts them); the test FAILS when a variant ran no case.
// IOATTN_GPU_QUICK=1 (compute-sanitizer): small named cases (lengths above 64 cut to n/4 + 1) in
// bf16 only, fewer tiles, determinism on a 37 x 29 problem with 3 repeats instead of 100;
// IOATTN_RC_SCALE scales the property case counts.
// Without a GPU it prints "SKIPPED: no GPU ..." and exits 77 (ctest reports it as skipped).
//   ./build-gpu/verify/kernels/gpu_backward           (RC_SEED=random for a fresh seed)
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "arbitrary.hpp"
#include "coverage.hpp"
#include "kernels/backward.hpp"
#include "kernels/check_bwd.hpp"
#include "kernels/harness_bwd.hpp"
#include "property.hpp"
#include "suite_start.hpp"

namespace {

using namespace ioattn;
using namespace ioattn::verify;
using kernels::BackwardInfo;
using kernels::BackwardOptions;
using kernels::HostForwardState;
using kernels::HostGrads;
using kernels::LaunchStatus;

const bool kQuick = std::getenv("IOATTN_GPU_QUICK") != nullptr;

// ---- coverage: distinct cases launched / refused per variant --------------------------------
verify::Coverage& coverage() {
  static verify::Coverage c;
  return c;
}
std::string case_key(std::string_view check, const AttnProblem& p, const BackwardOptions& opt, uint64_t seed,
                     double logit_std) {
  return fmt::format("{} [{}] Br={} Bc={} seed={} logit_std={}", check, describe(p), opt.br, opt.bc, seed, logit_std);
}
void count_ran(const BackwardInfo& k, std::string key) { coverage().ran(k.name, std::move(key)); }
void count_refused(const BackwardInfo& k, std::string key, const std::string& why) {
  coverage().refused(k.name, std::move(key), why);
}

// ---- one case --------------------------------------------------------------------------------
struct GradCase {
  AttnProblem p;
  uint64_t seed = 0;
  double logit_std = 1.0;
  ref::Inputs in;
  ref::Grads64 truth;
};
GradCase make_grad_case(const AttnProblem& p, uint64_t seed, double logit_std = 1.0) {
  GradCase c{p, seed, logit_std, ref::make_inputs(p, seed, {.logit_std = logit_std}), {}};
  c.truth = kernels::expected_grads_f64(p, c.in);
  return c;
}

// The baseline depends on the forward state; every variant paired with the same forward gets the
// same state (the forwards are deterministic), so the last one is kept, keyed by the case and the
// state's bytes.
const ref::Grads& baseline_for(const GradCase& c, const HostForwardState& st) {
  static std::string cached_key;
  static HostForwardState cached_state;
  static ref::Grads cached;
  auto same = [](const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
  };
  const std::string key = fmt::format("[{}] seed={} logit_std={}", describe(c.p), c.seed, c.logit_std);
  if (key != cached_key || !same(cached_state.o, st.o) || !same(cached_state.lse, st.lse)) {
    cached = kernels::baseline_grads(c.p, c.in, st);
    cached_state = st;
    cached_key = key;
  }
  return cached;
}

struct GpuResult {
  LaunchStatus error;  // set when something failed to run
  HostForwardState state;
  HostGrads grads;
};
GpuResult run_on_gpu(const BackwardInfo& k, const GradCase& c, const BackwardOptions& opt) {
  GpuResult r;
  auto dev = kernels::BackwardRun::create(k, c.p, opt, r.error);
  if (!dev) {
    if (!r.error) r.error = "create failed";
    return r;
  }
  if ((r.error = dev->upload(c.in.q, c.in.k, c.in.v, c.in.d_o))) return r;
  if ((r.error = dev->forward())) return r;
  if ((r.error = dev->run())) return r;
  if ((r.error = dev->download_forward(r.state))) return r;
  r.error = dev->download(r.grads);
  return r;
}

// Exact zeros where nothing flows: "" when they hold, else what broke.
std::string masked_zeros(const AttnProblem& p, const HostGrads& g) {
  const MaskSpec mask = p.mask();
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t i = 0; i < p.seqlen_q; ++i) {
      if (!mask.row_fully_masked(i)) continue;
      for (int64_t h = 0; h < p.heads_q; ++h)
        for (int64_t x = 0; x < p.head_dim; ++x)
          if (g.dq[p.q_offset(b, i, h, x)] != 0.0f)
            return fmt::format("fully masked query row {} has dQ[b={}, h={}, x={}] = {} (must be 0)", i, b, h, x,
                               g.dq[p.q_offset(b, i, h, x)]);
    }
  std::vector<char> seen(static_cast<size_t>(p.seqlen_k), 0);  // key j visible to some query row
  for (int64_t i = 0; i < p.seqlen_q; ++i)
    for (int64_t j = mask.key_begin(i); j < mask.key_end(i); ++j) seen[static_cast<size_t>(j)] = 1;
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t j = 0; j < p.seqlen_k; ++j) {
      if (seen[static_cast<size_t>(j)]) continue;
      for (int64_t h = 0; h < p.heads_kv; ++h)
        for (int64_t x = 0; x < p.head_dim; ++x) {
          const int64_t off = p.kv_offset(b, j, h, x);
          if (g.dk[off] != 0.0f || g.dv[off] != 0.0f)
            return fmt::format("key {} seen by no query row has dK = {}, dV = {} at [b={}, h={}, x={}] (must be 0)", j,
                               g.dk[off], g.dv[off], b, h, x);
        }
    }
  return "";
}

// Runs and judges one (variant, case, tiles). Empty string = pass; else the failure text.
// Counts the case as run; the caller checks supports() first.
std::string check_case(const BackwardInfo& k, const GradCase& c, const BackwardOptions& opt, std::string_view check) {
  count_ran(k, case_key(check, c.p, opt, c.seed, c.logit_std));
  const std::string what = fmt::format("{} {} [{}; Br={} Bc={} logit_std={}]", check, k.name, describe(c.p), opt.br,
                                       opt.bc, c.logit_std);
  const GpuResult r = run_on_gpu(k, c, opt);
  if (r.error) return fmt::format("{}: {}", what, *r.error);
  const kernels::GradCheckResult chk = kernels::check_grads(c.p, c.truth, baseline_for(c, r.state), r.grads);
  if (!chk.pass()) return chk.describe(what, c.seed);
  if (auto z = masked_zeros(c.p, r.grads); !z.empty()) return fmt::format("{}: {}", what, z);
  return "";
}

// ---- properties ------------------------------------------------------------------------------
BackwardOptions gen_options(const BackwardInfo& k, const AttnProblem& p) {
  if (!k.takes_tile_sizes) return {};
  const BackwardOptions opt{*rc::gen::element(0, 1, 7, 16, 17, 64), *rc::gen::element(0, 1, 5, 16, 17, 32)};
  if (k.supports(p, opt)) return {};  // these sizes do not fit this problem: the default
  return opt;
}

void all_backwards_match(const AttnProblem& p, double logit_std, uint64_t seed) {
  classify(p);
  RC_CLASSIFY(logit_std >= 100, "logit_std>=100");
  const GradCase c = make_grad_case(p, seed, logit_std);
  int ran = 0;
  for (const BackwardInfo& k : kernels::backward_registry()) {
    const BackwardOptions opt = gen_options(k, p);
    if (auto why = k.supports(p, opt)) {
      RC_ASSERT(!why->empty());  // refused with a message, never silently
      count_refused(k, case_key("property", p, opt, seed, logit_std), *why);
      continue;
    }
    if (auto fail = check_case(k, c, opt, "property"); !fail.empty()) RC_FAIL(fail);
    ++ran;
  }
  RC_TAG(fmt::format("{} backward variants ran", ran));
}

void prop_backwards() {
  ProblemLimits lim;
  lim.max_head_dim = 160;
  const AttnProblem p = *gen_problem(lim);
  all_backwards_match(p, *gen_logit_std(), *rc::gen::arbitrary<uint64_t>());
}

// Masked shapes only (causal or a window, often seqlen_q != seqlen_k), low precision, power-of-two
// head dims: the shapes a training step runs, with the masks' edge cases.
void prop_masked_backwards() {
  ProblemLimits lim;
  lim.max_head_dim = 128;
  AttnProblem p = *gen_problem(lim);
  if (!p.mask().is_masked()) p.causal = true;
  p.dtype = *rc::gen::element(DType::fp16, DType::bf16, DType::fp32);
  p.head_dim = *rc::gen::element<int64_t>(64, 128, 32, 96);
  while (p.batch * p.heads_q * p.seqlen_q * p.seqlen_k * p.head_dim > int64_t{4000000} && p.seqlen_k > 1)
    p.seqlen_k /= 2;
  all_backwards_match(p, *gen_logit_std(), *rc::gen::arbitrary<uint64_t>());
}

// ---- named cases -----------------------------------------------------------------------------
AttnProblem shape(int64_t b, int64_t hq, int64_t hkv, int64_t nq, int64_t nk, int64_t d, DType dt,
                  bool causal = false, int64_t wl = -1, int64_t wr = -1) {
  AttnProblem p;
  p.batch = b; p.heads_q = hq; p.heads_kv = hkv; p.seqlen_q = nq; p.seqlen_k = nk; p.head_dim = d;
  p.dtype = dt; p.causal = causal; p.window_left = wl; p.window_right = wr;
  return p;
}

struct Totals {
  int ran = 0, failed = 0;
};
void fail(Totals& t, const std::string& line) {
  ++t.failed;
  fmt::print("FAIL {}\n", line);
}

void named_case(const AttnProblem& p, uint64_t seed, Totals& t, double logit_std = 1.0) {
  const GradCase c = make_grad_case(p, seed, logit_std);
  for (const BackwardInfo& k : kernels::backward_registry()) {
    std::vector<BackwardOptions> opts{{}};
    if (k.takes_tile_sizes) opts.push_back({17, 13});
    if (k.takes_tile_sizes && !kQuick) opts.push_back({1, 1}), opts.push_back({64, 32}), opts.push_back({7, 3});
    for (const BackwardOptions& opt : opts) {
      if (auto why = k.supports(p, opt)) {
        count_refused(k, case_key("case", p, opt, seed, logit_std), *why);
        continue;
      }
      ++t.ran;
      if (auto f = check_case(k, c, opt, "case"); !f.empty()) fail(t, f);
    }
  }
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// The same inputs `reps` times on one BackwardRun (one forward, the backward relaunched): every
// variant's dK, dV bit-identical; a deterministic variant's dQ too. The first run passes the rule.
void determinism(Totals& t) {
  const int reps = kQuick ? 3 : 100;
  for (const BackwardInfo& k : kernels::backward_registry()) {
    const std::vector<int64_t> dims = head_dims_to_check(k.head_dims);
    if (dims.empty()) fail(t, fmt::format("determinism {}: cannot read head_dims \"{}\"", k.name, k.head_dims));
    for (const int64_t d : dims) {
      // Under the sanitizers (quick) a small shape: racecheck instruments every shared-memory access
      // and the scalar rungs at 203 x 113 took ~40 s per launch there.
      AttnProblem p = kQuick ? shape(1, 2, 1, 37, 29, d, DType::fp32, true)
                             : shape(2, 4, 2, 203, 113, d, DType::fp32, true);
      LaunchStatus why;
      for (DType dt : {DType::fp32, DType::bf16, DType::fp16}) {
        p.dtype = dt;
        if (!(why = k.supports(p, {}))) break;
      }
      const uint64_t seed = 7;
      const std::string key = case_key("determinism", p, {}, seed, 1.0);
      ++t.ran;
      if (why) {
        count_refused(k, key, *why);
        fail(t, fmt::format("determinism {}: head_dims \"{}\" lists d={}, but every dtype is refused: {}", k.name,
                            k.head_dims, d, *why));
        continue;
      }
      count_ran(k, key);
      const GradCase c = make_grad_case(p, seed);
      LaunchStatus st;
      auto dev = kernels::BackwardRun::create(k, p, {}, st);
      HostForwardState state;
      HostGrads first, next;
      if (!dev || (st = dev->upload(c.in.q, c.in.k, c.in.v, c.in.d_o)) || (st = dev->forward()) || (st = dev->run()) ||
          (st = dev->download_forward(state)) || (st = dev->download(first))) {
        fail(t, fmt::format("determinism {}: {} [{}]", k.name, st.value_or("create failed"), describe(p)));
        continue;
      }
      const kernels::GradCheckResult chk = kernels::check_grads(p, c.truth, baseline_for(c, state), first);
      if (!chk.pass()) {
        fail(t, chk.describe(fmt::format("determinism {} [{}]", k.name, describe(p)), seed));
        continue;
      }
      int dkdv_differ = 0, dq_differ = 0;
      for (int rep = 1; rep < reps && !st; ++rep) {
        if ((st = dev->run()) || (st = dev->download(next))) break;
        dkdv_differ += !(same_bits(first.dk, next.dk) && same_bits(first.dv, next.dv));
        dq_differ += !same_bits(first.dq, next.dq);
      }
      if (st || dkdv_differ || (k.deterministic && dq_differ)) {
        fail(t, fmt::format("determinism {}: of {} repeats, dK/dV differ in {}, dQ in {} (registered {}) {} [{}]", k.name,
                            reps - 1, dkdv_differ, dq_differ, k.deterministic ? "deterministic" : "dQ by atomics",
                            st.value_or(""), describe(p)));
      } else if (k.deterministic) {
        fmt::print("determinism {}: {} runs bit-identical (dQ, dK, dV) [{}]\n", k.name, reps, describe(p));
      } else {
        fmt::print("determinism {}: {} runs, dK/dV bit-identical, dQ (atomics) differed in {} of {} [{}]\n", k.name,
                   reps, dq_differ, reps - 1, describe(p));
      }
    }
  }
}

// The check can fail: a NaN or a perturbed element in each of dQ, dK, dV is caught.
void check_can_fail(Totals& t) {
  const AttnProblem p = shape(1, 2, 1, 17, 33, 32, DType::fp16, true);
  const ref::Inputs in = ref::make_inputs(p, 3);
  const ref::Grads64 truth = ref::backward_f64(p, in);
  const ref::Forward fwd = ref::forward_naive(p, in);
  const ref::Grads base = kernels::baseline_grads(p, in, {fwd.o, fwd.lse});
  const HostGrads good{base.dq, base.dk, base.dv};
  ++t.ran;
  bool ok = kernels::check_grads(p, truth, base, good).pass();
  for (int which = 0; which < 3; ++which)
    for (bool use_nan : {true, false}) {
      HostGrads bad = good;
      std::vector<float>& v = which == 0 ? bad.dq : which == 1 ? bad.dk : bad.dv;
      v[v.size() / 2] = use_nan ? std::numeric_limits<float>::quiet_NaN() : v[v.size() / 2] + 0.25f;
      ok = ok && !kernels::check_grads(p, truth, base, bad).pass();
    }
  if (!ok) fail(t, "check_can_fail: the baseline must pass and a NaN or +0.25 in dQ, dK or dV must fail");
  // The exact-zero check can fail too: a nonzero dQ in a fully masked row, a nonzero dK of an unseen key.
  const AttnProblem pm = shape(1, 1, 1, 9, 4, 8, DType::fp32, true);  // rows 0..4 fully masked
  HostGrads z{std::vector<float>(static_cast<size_t>(pm.q_elems()), 0.f),
              std::vector<float>(static_cast<size_t>(pm.kv_elems()), 0.f),
              std::vector<float>(static_cast<size_t>(pm.kv_elems()), 0.f)};
  ++t.ran;
  const bool zeros_pass = masked_zeros(pm, z).empty();
  z.dq[static_cast<size_t>(pm.q_offset(0, 2, 0, 3))] = 1e-30f;
  const bool dq_caught = !masked_zeros(pm, z).empty();
  AttnProblem pw = shape(1, 1, 1, 4, 9, 8, DType::fp32, true);  // row i sees keys [i+3, i+5]: keys 0..2 unseen
  pw.window_left = 2;
  HostGrads w{std::vector<float>(static_cast<size_t>(pw.q_elems()), 0.f),
              std::vector<float>(static_cast<size_t>(pw.kv_elems()), 0.f),
              std::vector<float>(static_cast<size_t>(pw.kv_elems()), 0.f)};
  w.dk[static_cast<size_t>(pw.kv_offset(0, 0, 0, 1))] = -1e-30f;
  const bool dk_caught = !masked_zeros(pw, w).empty();
  if (!(zeros_pass && dq_caught && dk_caught))
    fail(t, fmt::format("check_can_fail: zeros pass {}, masked-row dQ caught {}, unseen-key dK caught {}", zeros_pass,
                        dq_caught, dk_caught));
}

// Unsupported problems, tiles and null tensors: refused by supports() and launch() with a message.
void refusals(Totals& t) {
  const AttnProblem too_wide = shape(1, 1, 1, 8, 8, 1024, DType::fp16);
  const AttnProblem invalid = shape(1, 3, 2, 8, 8, 64, DType::fp16);  // heads_q not divisible by heads_kv
  const AttnProblem fine = shape(1, 2, 1, 8, 8, 64, DType::fp16);
  for (const BackwardInfo& k : kernels::backward_registry()) {
    struct Bad {
      AttnProblem p;
      BackwardOptions opt;
    };
    std::vector<Bad> bad{{too_wide, {}}, {invalid, {}}};
    if (k.takes_tile_sizes) bad.push_back({fine, {0, 33}}), bad.push_back({fine, {65, 0}}), bad.push_back({fine, {-1, 0}});
    for (const Bad& c : bad) {
      ++t.ran;
      const auto why = k.supports(c.p, c.opt);
      const auto launch = k.launch(c.p, {}, c.opt, nullptr, nullptr);  // null tensors: must not reach the GPU
      if (!why || why->empty() || !launch)
        fail(t, fmt::format("refusal {}: [{}; Br={} Bc={}] supports: {}, launch: {}", k.name, describe(c.p), c.opt.br,
                            c.opt.bc, why.value_or("accepted"), launch.value_or("accepted")));
    }
    ++t.ran;  // a supported problem with null tensors is refused too
    const auto null_launch = k.launch(fine, {}, {}, nullptr, nullptr);
    if (k.supports(fine, {}) || !null_launch)
      fail(t, fmt::format("refusal {}: null tensors on [{}]: {}", k.name, describe(fine),
                          null_launch.value_or("accepted")));
  }
}

// The harness's timing runs (the benchmark's entry): both passes time without error, and the
// gradients after them still pass the rule (a timed launch leaves a valid state behind).
void timing_smoke(Totals& t) {
  for (const BackwardInfo& k : kernels::backward_registry()) {
    // Under the sanitizers (quick) 65 x 33: racecheck took ~4 s per launch at 257 x 129.
    const AttnProblem p = kQuick ? shape(1, 4, 2, 65, 33, 64, DType::bf16, true)
                                 : shape(1, 4, 2, 257, 129, 64, DType::bf16, true);
    if (auto why = k.supports(p, {})) {
      count_refused(k, case_key("timing", p, {}, 11, 1.0), *why);
      continue;
    }
    ++t.ran;
    count_ran(k, case_key("timing", p, {}, 11, 1.0));
    const GradCase c = make_grad_case(p, 11);
    LaunchStatus st;
    auto dev = kernels::BackwardRun::create(k, p, {}, st);
    kernels::Timing bwd, both;
    HostForwardState state;
    HostGrads g;
    if (!dev || (st = dev->upload(c.in.q, c.in.k, c.in.v, c.in.d_o)) || (st = dev->forward()) ||
        (st = dev->time(kernels::TimedPass::backward, 1, 3, bwd)) ||
        (st = dev->time(kernels::TimedPass::forward_backward, 1, 3, both)) || (st = dev->run()) ||
        (st = dev->download_forward(state)) || (st = dev->download(g))) {
      fail(t, fmt::format("timing {}: {} [{}]", k.name, st.value_or("create failed"), describe(p)));
      continue;
    }
    const kernels::GradCheckResult chk = kernels::check_grads(p, c.truth, baseline_for(c, state), g);
    if (!(bwd.median_ms > 0 && both.median_ms > 0 && std::isfinite(bwd.median_ms) && std::isfinite(both.median_ms)) ||
        !chk.pass())
      fail(t, fmt::format("timing {}: backward {} ms, forward+backward {} ms [{}]\n{}", k.name, bwd.median_ms,
                          both.median_ms, describe(p), chk.describe("after timing")));
    else
      fmt::print("timing {}: backward {:.3f} ms, forward+backward {:.3f} ms (median of 3) [{}]\n", k.name,
                 bwd.median_ms, both.median_ms, describe(p));
  }
}

// One line per registered backward; false when one ran no case.
bool report_coverage() {
  std::vector<std::string_view> names;
  for (const BackwardInfo& k : kernels::backward_registry()) names.push_back(k.name);
  return coverage().report(names);
}

}  // namespace

int main() {
  if (auto rc = start_gpu_suite()) return *rc;
  Totals t;
  check_can_fail(t);
  refusals(t);
  const std::vector<DType> dtypes = kQuick ? std::vector<DType>{DType::bf16}
                                           : std::vector<DType>{DType::fp32, DType::fp16, DType::bf16};
  // Under the sanitizers (quick) the sequence lengths above 64 shrink to n/4 + 1 (113 -> 29,
  // 203 -> 51): the same orderings (Nq < Nk, Nq > Nk with fully masked rows, partial tiles) at a
  // size racecheck can instrument in minutes (the scalar rungs took ~40 s per launch at 203 x 113).
  const auto n = [](int64_t len) { return kQuick && len > 64 ? len / 4 + 1 : len; };
  for (DType dt : dtypes) {
    named_case(shape(1, 1, 1, 1, 1, 64, dt), 1, t);
    if (!kQuick) named_case(shape(1, 2, 2, 1023, 1024, 64, dt), 2, t);
    named_case(shape(2, 4, 2, n(113), n(203), 128, dt, true), 3, t);       // GQA, Nq < Nk causal
    named_case(shape(1, 4, 1, n(203), n(113), 64, dt, true), 4, t);        // MQA, Nq > Nk: 90 rows fully masked
    named_case(shape(1, 2, 2, 17, n(113), 96, dt, false, 0, 0), 5, t);     // window (0, 0): one key per row
    named_case(shape(1, 2, 1, n(113), 17, 59, dt, false, 5, 3), 6, t);     // window, Nq > Nk, odd d
    named_case(shape(1, 2, 1, n(113), n(203), 64, dt, true), 8, t, 1000.0);  // large logits (~3e3)
    if (!kQuick) named_case(shape(1, 2, 2, 64, 64, 256, dt, true), 9, t);  // the largest head dim
    // Saturated softmax (one key per row takes P = 1): dP_ij - D_i must cancel exactly
    // (kernels/bwd_scalar.hpp, "Numerics"); an fp64 D_i fails the rule here in fp32.
    named_case(shape(1, 4, 2, 1, n(113), 5, dt, true, 31, -1), 10958290257399782321ull, t, 3000.0);
  }
  determinism(t);
  timing_smoke(t);
  std::printf("named cases: %d ran, %d failed\n", t.ran, t.failed);
  const int props = run_properties({
      {"gpu_backward_equals_reference", 120, prop_backwards},
      {"gpu_backward_masked_shapes", 80, prop_masked_backwards},
  });
  const bool covered = report_coverage();
  return (t.failed || props || !covered) ? 1 : 0;
}

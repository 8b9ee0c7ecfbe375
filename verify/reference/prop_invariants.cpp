// verify/reference/prop_invariants.cpp: what attention must satisfy whatever the numbers are,
// checked on the tiled algorithms (and the definition itself):
//
//   convex_hull            each output row lies, per column, within [min, max] of the V rows it
//                          attends (up to the rounding of a weighted mean)
//   permutation_invariance permuting K and V rows together leaves a non-causal, unwindowed output
//                          unchanged (error rule against the unpermuted float64 reference)
//   shift_invariance       adding a constant c_i to every logit of row i changes neither O nor
//                          LSE - c_i. Done honestly at the input: an extra head dimension with
//                          q'_i = [q_i, c_i / scale], k'_j = [k_j, 1], v'_j = [v_j, 0] gives
//                          S'_ij = S_ij + c_i exactly in real arithmetic, and the algorithms run
//                          on that problem unaware of the trick
//   masked_keys_invisible  row i does not depend on keys it cannot see: replacing every such key
//                          and value by garbage leaves row i bit for bit unchanged
#include <algorithm>
#include <numeric>
#include <random>

#include <fmt/format.h>

#include "arbitrary.hpp"
#include "compare.hpp"
#include "property.hpp"

namespace {

using namespace ioattn;
using namespace ioattn::verify;

struct Algo {
  const char* name;
  ref::Forward (*fn)(const AttnProblem&, const ref::Inputs&, const ref::Tiling&);
};
constexpr Algo kTiled[] = {{"FA1", &ref::forward_fa1}, {"FA2", &ref::forward_fa2}, {"split-KV", &ref::forward_splitkv}};

void convex_hull() {
  const AttnProblem p = *rc::gen::arbitrary<AttnProblem>();
  const ref::Tiling t = *gen_tiling(p);
  const double logit_std = *gen_logit_std();
  const auto seed = *rc::gen::arbitrary<uint64_t>();
  classify(p);
  const ref::Inputs in = ref::make_inputs(p, seed, {.logit_std = logit_std, .v_std = *rc::gen::element(1.0, 1e-3, 1e3)});
  const MaskSpec mask = p.mask();
  for (const Algo& a : kTiled) {
    const ref::Forward out = a.fn(p, in, t);
    for (int64_t b = 0; b < p.batch; ++b)
      for (int64_t h = 0; h < p.heads_q; ++h)
        for (int64_t i = 0; i < p.seqlen_q; ++i) {
          const int64_t j0 = mask.key_begin(i), j1 = mask.key_end(i);
          if (j1 <= j0) continue;  // fully masked: O = 0 is checked by prop_forward
          // A weighted mean in fp32 with weights summing to 1 +- (n + 4) u, P rounded to the dtype
          // (relative u_dtype each) and the output rounded once more: the slack below.
          const double u = unit_roundoff(p.dtype), u32 = unit_roundoff(DType::fp32);
          const double slack_rel = 4 * u + 2 * double(j1 - j0 + 4) * u32;
          for (int64_t x = 0; x < p.head_dim; ++x) {
            double lo = INFINITY, hi = -INFINITY, mag = 0;
            for (int64_t j = j0; j < j1; ++j) {
              const double v = in.v[p.kv_offset(b, j, p.kv_head_of(h), x)];
              lo = std::min(lo, v);
              hi = std::max(hi, v);
              mag = std::max(mag, std::fabs(v));
            }
            const double o = out.o[p.q_offset(b, i, h, x)];
            if (!(o >= lo - slack_rel * mag && o <= hi + slack_rel * mag))
              RC_FAIL(fmt::format("{}: O[b={}, i={}, h={}, x={}] = {:.9g} outside [{:.9g}, {:.9g}] of its "
                                  "{} visible V rows (slack {:.2e}) [{}; Br={} Bc={} splits={}] seed={}",
                                  a.name, b, i, h, x, o, lo, hi, j1 - j0, slack_rel * mag, describe(p),
                                  t.br, t.bc, t.splits, run_seed()));
          }
        }
  }
}

void permutation_invariance() {
  ProblemLimits lim;
  lim.masks = false;  // a mask ties keys to positions
  const AttnProblem p = *gen_problem(lim);
  const ref::Tiling t = *gen_tiling(p);
  const double logit_std = *gen_logit_std();
  const auto seed = *rc::gen::arbitrary<uint64_t>();
  classify(p);
  const Case c = make_case(p, seed, {.logit_std = logit_std});
  // One permutation pi of the key positions, applied to K and V of every batch and kv head.
  std::vector<int64_t> pi(static_cast<size_t>(p.seqlen_k));
  std::iota(pi.begin(), pi.end(), 0);
  std::mt19937_64 rng(seed);
  std::shuffle(pi.begin(), pi.end(), rng);
  ref::Inputs perm = c.in;
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t j = 0; j < p.seqlen_k; ++j)
      for (int64_t hk = 0; hk < p.heads_kv; ++hk)
        for (int64_t x = 0; x < p.head_dim; ++x) {
          perm.k[p.kv_offset(b, j, hk, x)] = c.in.k[p.kv_offset(b, pi[j], hk, x)];
          perm.v[p.kv_offset(b, j, hk, x)] = c.in.v[p.kv_offset(b, pi[j], hk, x)];
        }
  // Against the reference of the UNpermuted problem: permutation must not matter.
  for (const Algo& a : kTiled)
    require(check_forward(a.fn(p, perm, t), c.ref64, c.baseline, p.dtype),
            fmt::format("{} on permuted K/V [{}; Br={} Bc={} splits={}]", a.name, describe(p), t.br, t.bc, t.splits));
  // And the float64 definition itself, to 1e-12 relative.
  const ref::Forward64 r = ref::forward_f64(p, perm);
  const double tol = 1e-12 * std::max(1.0, max_abs(c.ref64.o));
  for (size_t k = 0; k < r.o.size(); ++k) RC_ASSERT(std::fabs(r.o[k] - c.ref64.o[k]) <= tol);
}

void shift_invariance() {
  ProblemLimits lim;
  lim.max_head_dim = 159;  // plus one below
  const AttnProblem p = *gen_problem(lim);
  const ref::Tiling t = *gen_tiling(p);
  const double logit_std = *rc::gen::element(0.1, 1.0, 10.0);
  const auto seed = *rc::gen::arbitrary<uint64_t>();
  const double c_max = *rc::gen::element(1.0, 30.0, 200.0);  // exp(200) overflows fp32 unless m is subtracted
  classify(p);
  RC_CLASSIFY(c_max >= 200, "shift 200 (exp overflows without max subtraction)");
  const ref::Inputs in = ref::make_inputs(p, seed, {.logit_std = logit_std});
  const ref::Forward64 ref64 = ref::forward_f64(p, in);

  AttnProblem ps = p;  // the shifted problem: one more head dimension, the same softmax scale
  ps.head_dim = p.head_dim + 1;
  ps.scale = p.softmax_scale();
  const double scale = p.softmax_scale();
  std::mt19937_64 rng(seed ^ 0x5eed);
  std::uniform_real_distribution<double> dist(-c_max, c_max);
  std::vector<double> c_row(static_cast<size_t>(p.batch * p.heads_q * p.seqlen_q));  // c_i per (b, h, i)
  ref::Inputs s;
  s.q.resize(static_cast<size_t>(ps.q_elems()));
  s.k.resize(static_cast<size_t>(ps.kv_elems()));
  s.v.resize(static_cast<size_t>(ps.kv_elems()));
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t i = 0; i < p.seqlen_q; ++i)
      for (int64_t h = 0; h < p.heads_q; ++h) {
        for (int64_t x = 0; x < p.head_dim; ++x) s.q[ps.q_offset(b, i, h, x)] = in.q[p.q_offset(b, i, h, x)];
        // The extra coordinate r = c / scale, rounded to the dtype; c is whatever r * scale is.
        const float r = ref::round_to(p.dtype, static_cast<float>(dist(rng) / scale));
        s.q[ps.q_offset(b, i, h, p.head_dim)] = r;
        c_row[p.lse_offset(b, h, i)] = double(r) * scale;
      }
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t j = 0; j < p.seqlen_k; ++j)
      for (int64_t hk = 0; hk < p.heads_kv; ++hk) {
        for (int64_t x = 0; x < p.head_dim; ++x) {
          s.k[ps.kv_offset(b, j, hk, x)] = in.k[p.kv_offset(b, j, hk, x)];
          s.v[ps.kv_offset(b, j, hk, x)] = in.v[p.kv_offset(b, j, hk, x)];
        }
        s.k[ps.kv_offset(b, j, hk, p.head_dim)] = 1.0f;
        s.v[ps.kv_offset(b, j, hk, p.head_dim)] = 0.0f;
      }
  // Expected: the unshifted float64 O (first d columns) and LSE + c_i. The baseline is the
  // same-precision naive run on the shifted problem, which carries the precision that adding
  // c_i to fp32 logits costs.
  const ref::Forward base = ref::forward_naive(ps, s);
  auto first_d = [&](const auto& o) {
    std::vector<std::decay_t<decltype(o[0])>> r(static_cast<size_t>(p.q_elems()));
    for (int64_t b = 0; b < p.batch; ++b)
      for (int64_t i = 0; i < p.seqlen_q; ++i)
        for (int64_t h = 0; h < p.heads_q; ++h)
          for (int64_t x = 0; x < p.head_dim; ++x) r[p.q_offset(b, i, h, x)] = o[ps.q_offset(b, i, h, x)];
    return r;
  };
  ref::Forward64 expect{ref64.o, ref64.lse};
  for (size_t k = 0; k < expect.lse.size(); ++k) expect.lse[k] += c_row[k];  // -inf stays -inf
  const ref::Forward base_d{first_d(base.o), base.lse};
  for (const Algo& a : kTiled) {
    const ref::Forward out = a.fn(ps, s, t);
    require(check_forward(ref::Forward{first_d(out.o), out.lse}, expect, base_d, p.dtype),
            fmt::format("{} with logits shifted by up to {} per row [{}; Br={} Bc={} splits={}]", a.name,
                        c_max, describe(p), t.br, t.bc, t.splits));
  }
}

void masked_keys_invisible() {
  const AttnProblem p = *rc::gen::arbitrary<AttnProblem>();
  RC_PRE(p.mask().is_masked());
  const ref::Tiling t = *gen_tiling(p);
  const auto seed = *rc::gen::arbitrary<uint64_t>();
  const int64_t i_star = *rc::gen::inRange<int64_t>(0, p.seqlen_q);
  classify(p);
  const MaskSpec mask = p.mask();
  const int64_t j0 = mask.key_begin(i_star), j1 = mask.key_end(i_star);
  RC_CLASSIFY(j1 <= j0, "row i* fully masked");
  const ref::Inputs in = ref::make_inputs(p, seed);
  // Garbage (finite, large, representable) in every key/value row that row i* cannot see.
  ref::Inputs g = in;
  std::mt19937_64 rng(seed ^ 0x9a4ba9e);
  std::normal_distribution<double> dist(0.0, 300.0);
  int64_t changed = 0;
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t j = 0; j < p.seqlen_k; ++j) {
      if (j0 <= j && j < j1) continue;
      ++changed;
      for (int64_t hk = 0; hk < p.heads_kv; ++hk)
        for (int64_t x = 0; x < p.head_dim; ++x) {
          g.k[p.kv_offset(b, j, hk, x)] = ref::round_to(p.dtype, static_cast<float>(dist(rng)));
          g.v[p.kv_offset(b, j, hk, x)] = ref::round_to(p.dtype, static_cast<float>(dist(rng)));
        }
    }
  RC_CLASSIFY(changed > 0, "some keys replaced");
  // Every row whose visible keys lie within [j0, j1) sees none of the garbage: bit-identical.
  auto same_rows = [&](const char* name, const auto& before, const auto& after) {
    for (int64_t i = 0; i < p.seqlen_q; ++i) {
      const bool untouched = mask.row_fully_masked(i) || (j0 <= mask.key_begin(i) && mask.key_end(i) <= j1);
      if (!untouched) continue;
      for (int64_t b = 0; b < p.batch; ++b)
        for (int64_t h = 0; h < p.heads_q; ++h) {
          const auto l0 = before.lse[p.lse_offset(b, h, i)], l1 = after.lse[p.lse_offset(b, h, i)];
          if (!(l0 == l1))
            RC_FAIL(fmt::format("{}: LSE of row {} changed ({} -> {}) when keys it cannot see changed [{}] seed={}",
                                name, i, l0, l1, describe(p), run_seed()));
          for (int64_t x = 0; x < p.head_dim; ++x)
            if (!(before.o[p.q_offset(b, i, h, x)] == after.o[p.q_offset(b, i, h, x)]))
              RC_FAIL(fmt::format("{}: O of row {} changed when keys it cannot see changed [{}; Br={} Bc={} "
                                  "splits={}] seed={}",
                                  name, i, describe(p), t.br, t.bc, t.splits, run_seed()));
        }
    }
  };
  for (const Algo& a : kTiled) same_rows(a.name, a.fn(p, in, t), a.fn(p, g, t));
  same_rows("naive", ref::forward_naive(p, in), ref::forward_naive(p, g));
  same_rows("float64", ref::forward_f64(p, in), ref::forward_f64(p, g));
}

}  // namespace

int main() {
  return run_properties({
      {"convex_hull", 1500, convex_hull},
      {"permutation_invariance", 1000, permutation_invariance},
      {"shift_invariance", 1500, shift_invariance},
      {"masked_keys_invisible", 1500, masked_keys_invisible},
  });
}

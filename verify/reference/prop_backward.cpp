// verify/reference/prop_backward.cpp: the FlashAttention-2 backward (recomputing P from LSE)
// equals the float64 definition under the gradient rule (factor 3), for any tiling; and the
// float64 backward itself matches float64 central finite differences of L = sum(dO o O).
#include <cmath>

#include <fmt/format.h>

#include "arbitrary.hpp"
#include "compare.hpp"
#include "property.hpp"

namespace {

using namespace ioattn;
using namespace ioattn::verify;

void fa2_backward_equals_reference() {
  ProblemLimits lim;
  lim.max_work = 2e6;  // the case computes two backwards and three forwards
  const AttnProblem p = *gen_problem(lim);
  const ref::Tiling t = *gen_tiling(p);
  const double logit_std = *gen_logit_std();
  const auto seed = *rc::gen::arbitrary<uint64_t>();
  classify(p);
  RC_CLASSIFY(logit_std >= 100, "logit_std>=100");
  const ref::Inputs in = ref::make_inputs(p, seed, {.logit_std = logit_std});
  // The backward receives what the tiled forward produced, as in a training step; the baseline
  // (naive backward in the same precision) starts from that same state.
  const ref::Forward fwd = ref::forward_fa2(p, in, t);
  const ref::Grads g = ref::backward_fa2(p, in, fwd, t);
  require(check_grads(g, ref::backward_f64(p, in), ref::backward_naive(p, in, fwd), p.dtype),
          fmt::format("FA2 backward [{}; Br={} Bc={} logit_std={}]", describe(p), t.br, t.bc, logit_std));
  // A fully masked row contributes nothing: its dQ row is exactly 0.
  const MaskSpec mask = p.mask();
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t h = 0; h < p.heads_q; ++h)
      for (int64_t i = 0; i < p.seqlen_q && mask.row_fully_masked(i); ++i)
        for (int64_t x = 0; x < p.head_dim; ++x) RC_ASSERT(g.dq[p.q_offset(b, i, h, x)] == 0.0f);
}

// L(Q, K, V) = sum(dO o O(Q, K, V)) in float64.
double loss(const AttnProblem& p, const ref::Inputs64& in) {
  const ref::Forward64 f = ref::forward_f64(p, in);
  double l = 0.0;
  for (size_t k = 0; k < f.o.size(); ++k) l += in.d_o[k] * f.o[k];
  return l;
}

void backward_matches_finite_differences() {
  ProblemLimits lim;
  lim.max_seqlen = 13;
  lim.max_head_dim = 9;
  lim.max_work = 2e4;
  lim.low_precision = false;  // float64 throughout; the dtype plays no role
  const AttnProblem p = *gen_problem(lim);
  const double logit_std = *rc::gen::element(0.3, 1.0, 3.0);
  const auto seed = *rc::gen::arbitrary<uint64_t>();
  classify(p);
  const ref::Inputs64 in = ref::widen(ref::make_inputs(p, seed, {.logit_std = logit_std}));
  const ref::Grads64 g = ref::backward_f64(p, in);

  // Central differences on up to 6 random entries of each of Q, K, V:
  //   dL/dx ~ (L(x + h) - L(x - h)) / 2h,  truncation O(h^2), rounding O(eps |L| / h).
  auto probe = [&](std::vector<double> ref::Inputs64::*tensor, const std::vector<double>& grad,
                   const char* name) {
    double scale = 1.0;
    for (double v : grad) scale = std::max(scale, std::fabs(v));
    const auto n = static_cast<int64_t>(grad.size());
    for (int rep = 0; rep < 6; ++rep) {
      const auto idx = static_cast<size_t>(*rc::gen::inRange<int64_t>(0, n));
      ref::Inputs64 plus = in, minus = in;
      const double x = (in.*tensor)[idx];
      const double h = 1e-4 * std::max(1.0, std::fabs(x));
      (plus.*tensor)[idx] = x + h;
      (minus.*tensor)[idx] = x - h;
      const double fd = (loss(p, plus) - loss(p, minus)) / (2 * h);
      const double err = std::fabs(fd - grad[idx]);
      if (!(err <= 1e-6 * scale))
        RC_FAIL(fmt::format("d{}[{}]: backward_f64 {:.12g} vs finite difference {:.12g} (|diff| {:.3e} > "
                            "1e-6 * {:.3g}) [{}] seed={}",
                            name, idx, grad[idx], fd, err, scale, describe(p), run_seed()));
    }
  };
  probe(&ref::Inputs64::q, g.dq, "Q");
  probe(&ref::Inputs64::k, g.dk, "K");
  probe(&ref::Inputs64::v, g.dv, "V");
}

}  // namespace

int main() {
  return run_properties({
      {"fa2_backward_equals_reference", 2000, fa2_backward_equals_reference},
      {"backward_matches_finite_differences", 1000, backward_matches_finite_differences},
  });
}

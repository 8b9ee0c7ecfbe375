// verify/support/compare.hpp: the error rule (ioattn/tolerance.hpp) applied to whole results.
//
// A forward result passes when both O and LSE pass the rule against the float64 reference with
// the same-precision naive computation as baseline (factor 2); gradients pass when dQ, dK and dV
// each pass with factor 3. Used by the CPU properties (verify/reference) and the GPU tests
// (verify/kernels): a GPU test downloads O and LSE into a ref::Forward and calls check_forward.
#pragma once

#include <string>
#include <string_view>

#include "ioattn/tolerance.hpp"
#include "reference.hpp"

namespace ioattn::verify {

RuleResult check_rule(const std::vector<float>& out, const std::vector<double>& ref64,
                      const std::vector<float>& baseline, DType dtype, double factor);

struct ForwardCheck {
  RuleResult o, lse;
  bool pass() const { return o.pass && lse.pass; }
  // Two lines (O and LSE) prefixed with `what`, each with max/mean error, bound, worst index.
  std::string describe(std::string_view what, std::optional<uint64_t> seed = std::nullopt) const;
};
ForwardCheck check_forward(const ref::Forward& out, const ref::Forward64& ref64,
                           const ref::Forward& baseline, DType dtype);

struct GradCheck {
  RuleResult dq, dk, dv;
  bool pass() const { return dq.pass && dk.pass && dv.pass; }
  std::string describe(std::string_view what, std::optional<uint64_t> seed = std::nullopt) const;
};
GradCheck check_grads(const ref::Grads& out, const ref::Grads64& ref64, const ref::Grads& baseline,
                      DType dtype);

// One problem with its inputs, float64 reference and same-precision baseline: what every
// comparison needs. with_backward also computes the gradients (needs the naive backward's memory).
struct Case {
  AttnProblem p;
  uint64_t seed = 0;
  ref::Inputs in;
  ref::Forward64 ref64;
  ref::Forward baseline;
  ref::Grads64 grad64;     // empty unless with_backward
  ref::Grads grad_base;    // idem
};
Case make_case(const AttnProblem& p, uint64_t seed, ref::InputOptions opt = {}, bool with_backward = false);

// RC_FAIL with the description when the check fails (call inside a property).
void require(const ForwardCheck& c, std::string_view what);
void require(const GradCheck& c, std::string_view what);

}  // namespace ioattn::verify

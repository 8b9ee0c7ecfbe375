// verify/support/compare.cpp: see compare.hpp.
#include "compare.hpp"

#include <fmt/format.h>
#include <rapidcheck.h>

#include "property.hpp"

namespace ioattn::verify {

RuleResult check_rule(const std::vector<float>& out, const std::vector<double>& ref64,
                      const std::vector<float>& baseline, DType dtype, double factor) {
  return check_error_rule(std::span<const float>(out), std::span<const double>(ref64),
                          std::span<const float>(baseline), dtype, factor);
}

ForwardCheck check_forward(const ref::Forward& out, const ref::Forward64& ref64,
                           const ref::Forward& baseline, DType dtype) {
  return {check_rule(out.o, ref64.o, baseline.o, dtype, kForwardFactor),
          check_rule(out.lse, ref64.lse, baseline.lse, dtype, kForwardFactor)};
}

std::string ForwardCheck::describe(std::string_view what, std::optional<uint64_t> seed) const {
  return o.describe(fmt::format("{} O", what), seed) + "\n" +
         lse.describe(fmt::format("{} LSE", what), seed);
}

GradCheck check_grads(const ref::Grads& out, const ref::Grads64& ref64, const ref::Grads& baseline,
                      DType dtype) {
  return {check_rule(out.dq, ref64.dq, baseline.dq, dtype, kGradientFactor),
          check_rule(out.dk, ref64.dk, baseline.dk, dtype, kGradientFactor),
          check_rule(out.dv, ref64.dv, baseline.dv, dtype, kGradientFactor)};
}

std::string GradCheck::describe(std::string_view what, std::optional<uint64_t> seed) const {
  return dq.describe(fmt::format("{} dQ", what), seed) + "\n" +
         dk.describe(fmt::format("{} dK", what), seed) + "\n" +
         dv.describe(fmt::format("{} dV", what), seed);
}

Case make_case(const AttnProblem& p, uint64_t seed, ref::InputOptions opt, bool with_backward) {
  Case c;
  c.p = p;
  c.seed = seed;
  c.in = ref::make_inputs(p, seed, opt);
  c.ref64 = ref::forward_f64(p, c.in);
  c.baseline = ref::forward_naive(p, c.in);
  if (with_backward) {
    c.grad64 = ref::backward_f64(p, c.in);
    c.grad_base = ref::backward_naive(p, c.in);
  }
  return c;
}

void require(const ForwardCheck& c, std::string_view what) {
  if (!c.pass()) RC_FAIL(c.describe(what, run_seed()));
}

void require(const GradCheck& c, std::string_view what) {
  if (!c.pass()) RC_FAIL(c.describe(what, run_seed()));
}

}  // namespace ioattn::verify

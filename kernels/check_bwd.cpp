// kernels/check_bwd.cpp: see check_bwd.hpp.
#include "kernels/check_bwd.hpp"

#include <span>

namespace ioattn::kernels {

std::string GradCheckResult::describe(std::string_view what, std::optional<uint64_t> seed) const {
  return dq.describe(std::string(what) + " dQ", seed) + "\n" + dk.describe(std::string(what) + " dK", seed) +
         "\n" + dv.describe(std::string(what) + " dV", seed);
}

ref::Grads64 expected_grads_f64(const AttnProblem& p, const ref::Inputs& in) { return ref::backward_f64(p, in); }

ref::Grads baseline_grads(const AttnProblem& p, const ref::Inputs& in, const HostForwardState& state) {
  return ref::backward_naive(p, in, ref::Forward{state.o, state.lse});
}

GradCheckResult check_grads(const AttnProblem& p, const ref::Grads64& truth, const ref::Grads& baseline,
                            const HostGrads& got) {
  auto rule = [&](const std::vector<float>& out, const std::vector<double>& ref64, const std::vector<float>& base) {
    return check_error_rule(std::span<const float>(out), std::span<const double>(ref64),
                            std::span<const float>(base), p.dtype, kGradientFactor);
  };
  return {rule(got.dq, truth.dq, baseline.dq), rule(got.dk, truth.dk, baseline.dk),
          rule(got.dv, truth.dv, baseline.dv)};
}

}  // namespace ioattn::kernels

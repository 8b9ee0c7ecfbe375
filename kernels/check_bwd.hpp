// kernels/check_bwd.hpp: a backward kernel's gradients against the CPU reference, under the error
// rule's gradient factor (ioattn/tolerance.hpp, kGradientFactor = 3).
//
// Truth: ref::backward_f64 (float64, from the inputs alone). Baseline: ref::backward_naive(p, in,
// state), the same-precision naive backward started from THE forward state the kernel received
// (the O and LSE the paired forward wrote on the device, downloaded), so that baseline and kernel
// see the same inputs and the rule judges the backward algorithm, not the forward's rounding of O
// and LSE (reference/README.md). Used by the GPU tests and, later, `ioattn run --backward --check`.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "ioattn/tolerance.hpp"
#include "kernels/harness_bwd.hpp"
#include "reference.hpp"

namespace ioattn::kernels {

struct GradCheckResult {
  RuleResult dq, dk, dv;
  bool pass() const { return dq.pass && dk.pass && dv.pass; }
  // Three lines (dQ, dK, dV) prefixed with `what`, each with max/mean error, bound, worst index.
  std::string describe(std::string_view what, std::optional<uint64_t> seed = std::nullopt) const;
};

// float64 truth of the gradients: depends on the inputs only, compute it once per case.
ref::Grads64 expected_grads_f64(const AttnProblem& p, const ref::Inputs& in);
// The same-precision baseline from the forward state the kernel consumed.
ref::Grads baseline_grads(const AttnProblem& p, const ref::Inputs& in, const HostForwardState& state);

GradCheckResult check_grads(const AttnProblem& p, const ref::Grads64& truth, const ref::Grads& baseline,
                            const HostGrads& got);

}  // namespace ioattn::kernels

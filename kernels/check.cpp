// kernels/check.cpp: see check.hpp.
#include "kernels/check.hpp"

#include <span>

namespace ioattn::kernels {

Expected expected_outputs(const AttnProblem& p, const ref::Inputs& in) {
  return {ref::forward_f64(p, in), ref::forward_naive(p, in)};
}

Expected expected_outputs(const AttnProblem& p, const ref::Inputs& in, const ref::Fp8Accumulation& acc) {
  if (!acc.tensor_core || !is_fp8(p.dtype)) return expected_outputs(p, in);
  return {ref::forward_f64(p, in), ref::forward_naive_fp8(p, in, acc)};
}

CheckResult check_outputs(const AttnProblem& p, const Expected& want, const HostOutputs& got) {
  CheckResult r;
  r.o = check_error_rule(std::span<const float>(got.o), std::span<const double>(want.truth.o),
                         std::span<const float>(want.baseline.o), p.output_dtype(), kForwardFactor);
  // LSE is fp32 whatever the input dtype; the baseline's LSE carries the input rounding. The floor
  // is the output dtype's (the input dtype's, except for FP8 problems: bf16's or fp16's;
  // ioattn/tolerance.hpp), as `ioattn reference --check` uses for FP8.
  r.lse = check_error_rule(std::span<const float>(got.lse), std::span<const double>(want.truth.lse),
                           std::span<const float>(want.baseline.lse), p.output_dtype(), kForwardFactor);
  return r;
}

}  // namespace ioattn::kernels

// kernels/check.hpp: a kernel's outputs against the CPU reference, under the error rule.
//
// One function, used by `ioattn run --check` and by the GPU property tests, so both judge a
// kernel the same way: O and LSE against forward_f64 (float64 truth), with forward_naive in the
// same dtype as the baseline (ioattn/tolerance.hpp).
#pragma once

#include <string>

#include "ioattn/tolerance.hpp"
#include "kernels/harness.hpp"
#include "reference.hpp"

namespace ioattn::kernels {

struct CheckResult {
  RuleResult o;
  RuleResult lse;
  bool pass() const { return o.pass && lse.pass; }
  std::string describe(std::string_view what, std::optional<uint64_t> seed = std::nullopt) const {
    return o.describe(std::string(what) + " O", seed) + "\n" +
           lse.describe(std::string(what) + " LSE", seed);
  }
};

// Expected values computed once per (problem, inputs) and shared by any number of kernel runs.
struct Expected {
  ref::Forward64 truth;     // float64
  ref::Forward baseline;    // same-precision naive
};

Expected expected_outputs(const AttnProblem& p, const ref::Inputs& in);
// FP8 problems: the baseline accumulates as `acc` says (ref::forward_naive_fp8; fp32 = the above).
Expected expected_outputs(const AttnProblem& p, const ref::Inputs& in, const ref::Fp8Accumulation& acc);
CheckResult check_outputs(const AttnProblem& p, const Expected& want, const HostOutputs& got);

}  // namespace ioattn::kernels

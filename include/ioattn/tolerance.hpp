// ioattn/tolerance.hpp: the error rule, used by every test that compares numbers.
//
//   pass  <=>  max|out - ref64| <= factor * max|baseline - ref64| + floor
//
// ref64 is the float64 reference, baseline the naive computation in the same precision as `out`
// (reference/naive.hpp), factor = 2 for forward outputs and 3 for gradients, and
// floor = kFloorUlps * u * max(1, max|ref64|) with u the unit roundoff of the input dtype.
// FP8 problems pass their output dtype (AttnProblem::output_dtype(), bf16 or fp16; for every other
// dtype it is the input dtype): ref64 is computed on the same FP8 inputs (dequantized), so FP8's own
// rounding of Q, K, V is in neither error, and the baseline (forward_naive) carries the rounding of
// P to e4m3; the floor is that of O's last rounding, 8 u_bf16 = 2^-5 (fp16: 2^-8) times max(1, max|O|).
// The rule adapts to the problem: a shape whose naive computation is itself inaccurate (long rows,
// large logits) gets a wider bound, a benign one a tight bound, and no tolerance is hand-tuned.
//
// Non-finite values: equal infinities (LSE = -inf of a fully masked row) count as error 0; any NaN
// or any other mismatch of non-finite values counts as an infinite error, so NaN never passes.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>

#include <fmt/format.h>

#include "ioattn/dtype.hpp"

namespace ioattn {

inline constexpr double kForwardFactor = 2.0;
inline constexpr double kGradientFactor = 3.0;
inline constexpr double kFloorUlps = 8.0;

// |a - b| with the non-finite conventions above.
inline double element_error(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<double>::infinity();
  if (std::isinf(a) || std::isinf(b)) return a == b ? 0.0 : std::numeric_limits<double>::infinity();
  return std::fabs(a - b);
}

struct ErrorStats {
  double max_err = 0.0;
  double mean_err = 0.0;
  int64_t worst = -1;  // flat index of the worst element, -1 for empty input
  double worst_value = 0.0;
  double worst_ref = 0.0;
  int64_t nan_count = 0;
};

template <class T>
ErrorStats error_stats(std::span<const T> out, std::span<const double> ref) {
  ErrorStats s;
  const auto n = static_cast<int64_t>(std::min(out.size(), ref.size()));
  double sum = 0.0;
  for (int64_t k = 0; k < n; ++k) {
    const double o = static_cast<double>(out[k]);
    if (std::isnan(o)) ++s.nan_count;
    const double e = element_error(o, ref[k]);
    sum += std::isfinite(e) ? e : 0.0;
    if (s.worst < 0 || e > s.max_err) {
      s.max_err = e;
      s.worst = k;
      s.worst_value = o;
      s.worst_ref = ref[k];
    }
  }
  if (out.size() != ref.size()) s.max_err = std::numeric_limits<double>::infinity();
  s.mean_err = n > 0 ? sum / static_cast<double>(n) : 0.0;
  return s;
}

struct RuleResult {
  bool pass = false;
  ErrorStats out;        // out vs ref64
  ErrorStats baseline;   // baseline vs ref64
  double floor = 0.0;
  double bound = 0.0;    // factor * baseline.max_err + floor

  // One line for a test log: what was compared, the errors, the worst index, the seed.
  std::string describe(std::string_view what, std::optional<uint64_t> seed = std::nullopt) const {
    return fmt::format(
        "{} {}: max_err={:.3e} mean_err={:.3e} bound={:.3e} (baseline max_err={:.3e}, floor={:.3e})"
        " worst index {} (got {:.9g}, ref {:.9g}){}{}",
        what, pass ? "PASS" : "FAIL", out.max_err, out.mean_err, bound, baseline.max_err, floor,
        out.worst, out.worst_value, out.worst_ref,
        out.nan_count ? fmt::format(" nan_count={}", out.nan_count) : std::string{},
        seed ? fmt::format(" seed={}", *seed) : std::string{});
  }
};

inline double max_abs(std::span<const double> ref) {
  double m = 0.0;
  for (double r : ref)
    if (std::isfinite(r)) m = std::max(m, std::fabs(r));
  return m;
}

// The rule itself. `factor` is kForwardFactor or kGradientFactor.
template <class T, class U>
RuleResult check_error_rule(std::span<const T> out, std::span<const double> ref64,
                            std::span<const U> baseline, DType dtype, double factor) {
  RuleResult r;
  r.out = error_stats(out, ref64);
  r.baseline = error_stats(baseline, ref64);
  r.floor = kFloorUlps * unit_roundoff(dtype) * std::max(1.0, max_abs(ref64));
  r.bound = factor * r.baseline.max_err + r.floor;
  // A baseline with a NaN or infinite error makes the bound meaningless: fail loudly.
  r.pass = std::isfinite(r.bound) && r.out.nan_count == 0 && r.out.max_err <= r.bound;
  return r;
}

}  // namespace ioattn

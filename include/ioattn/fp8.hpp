// ioattn/fp8.hpp: the two 8-bit float formats (OCP FP8), float -> code and code -> float.
//
//   e4m3 ("FN", as on Hopper and in the OCP 8-bit spec): 1 sign, 4 exponent (bias 7), 3 mantissa
//        bits; max finite 448 (S.1111.110), no infinities, NaN = S.1111.111, min subnormal 2^-9.
//   e5m2 (IEEE-like): 1 sign, 5 exponent (bias 15), 2 mantissa bits; max finite 57344
//        (S.11110.11), +-inf = S.11111.00, NaN = S.11111.{01,10,11}, min subnormal 2^-16.
//
// No library on the project's platform provides these: Eigen 3.4 has half and bfloat16 only, and
// the C++23 <stdfloat> types (float16_t, bfloat16_t) have no 8-bit member (libstdc++ 12 has neither).
// CUDA's cuda_fp8.h has them but is not a host dependency of the spec, so the conversion is written
// here, once, and every host user (the reference, the tests, the CLI) calls these two functions.
//
// fp8_encode(x): round to nearest, ties to even, on the exact value of x (no double rounding):
//   - Saturation::finite (the default): a result above the max finite value, and +-inf, become
//     +-max finite (448 or 57344). This is what the __nv_fp8_e4m3 / __nv_fp8_e5m2 constructors
//     (__NV_SATFINITE) and PTX cvt.rn.satfinite do: an input rounds to max when |x| < max + ulp/2,
//     |x| = max + ulp/2 ties to even (e4m3: 464 -> 448; e5m2: 61440 -> the next, overflowing, value),
//     and every larger |x| saturates.
//   - Saturation::none (__NV_NOSAT): overflow gives NaN for e4m3 (it has no infinity) and +-inf for
//     e5m2; +-inf stays +-inf in e5m2 and becomes NaN in e4m3.
//   - NaN stays NaN: e4m3 S.1111.111, e5m2 S.11111.10, with the sign of the input. (CUDA's float
//     conversion returns a positive NaN code and, for e5m2, copies payload bits: a different NaN
//     code, the same meaning. Every non-NaN float converts to the same code as cuda_fp8.h's.)
//   - The sign of zero is kept, also when a tiny value underflows to zero.
// fp8_decode(code): the exact float of every one of the 256 codes (all are exact in float).
// verify/spec/test_fp8.cpp checks these rules; verify/spec/fp8_vs_cuda.cpp compares both functions
// with cuda_fp8.h's host conversion where the CUDA toolkit is installed (reference/README.md, "FP8").
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

namespace ioattn {

enum class Fp8Format { e4m3, e5m2 };
enum class Saturation { finite, none };

struct Fp8Traits {
  int man_bits;     // stored mantissa bits
  int bias;         // exponent bias
  bool has_inf;     // e5m2: the all-ones exponent holds inf and NaN; e4m3: only S.1111.111 is NaN
  uint8_t max_code; // largest finite magnitude code
  uint8_t nan_code; // the NaN the encoder produces (sign bit added)
};

constexpr Fp8Traits fp8_traits(Fp8Format f) {
  return f == Fp8Format::e4m3 ? Fp8Traits{3, 7, false, 0x7E, 0x7F} : Fp8Traits{2, 15, true, 0x7B, 0x7E};
}

// code -> float, exact.
inline float fp8_decode(uint8_t code, Fp8Format f) {
  const Fp8Traits t = fp8_traits(f);
  const bool neg = (code & 0x80) != 0;
  const int mag = code & 0x7F;
  const int exp_field = mag >> t.man_bits;
  const int man = mag & ((1 << t.man_bits) - 1);
  const int exp_max = (1 << (7 - t.man_bits)) - 1;  // all-ones exponent field
  float v;
  if (t.has_inf && exp_field == exp_max)
    v = man == 0 ? std::numeric_limits<float>::infinity() : std::numeric_limits<float>::quiet_NaN();
  else if (!t.has_inf && mag == 0x7F)
    v = std::numeric_limits<float>::quiet_NaN();
  else if (exp_field == 0)  // subnormal: man * 2^(1 - bias - man_bits)
    v = std::ldexp(static_cast<float>(man), 1 - t.bias - t.man_bits);
  else
    v = std::ldexp(static_cast<float>(man + (1 << t.man_bits)), exp_field - t.bias - t.man_bits);
  return neg ? -v : v;
}

// float -> code, round to nearest even (rules above).
inline uint8_t fp8_encode(float x, Fp8Format f, Saturation sat = Saturation::finite) {
  const Fp8Traits t = fp8_traits(f);
  const uint8_t sign = std::signbit(x) ? 0x80 : 0x00;
  if (std::isnan(x)) return sign | t.nan_code;
  const uint8_t overflow = sat == Saturation::finite ? t.max_code : t.has_inf ? uint8_t(t.max_code + 1) : t.nan_code;
  if (std::isinf(x)) return sign | (sat == Saturation::finite ? t.max_code : overflow);
  const double a = std::fabs(static_cast<double>(x));  // exact
  const int min_normal_exp = 1 - t.bias;                 // 2^min_normal_exp is the smallest normal
  // The quantum (spacing) of the fp8 values near a: fixed in the subnormal range, 2^(e - man_bits)
  // for a in [2^e, 2^(e+1)).
  int e = a == 0.0 ? min_normal_exp : std::ilogb(a);
  if (e < min_normal_exp) e = min_normal_exp;
  const double quantum = std::ldexp(1.0, e - t.man_bits);
  // a / quantum is exact in double (a has 24 significant bits); nearbyint ties to even under the
  // default rounding mode. n is in [0, 2^(man_bits+1)]; n = 2^(man_bits+1) carries into the next
  // exponent, which the code arithmetic below does by itself.
  const double n = std::nearbyint(a / quantum);
  const int n_i = static_cast<int>(n);
  // Biased exponent e + bias with n's leading 1 dropped: ((e + bias) << man_bits) + n - 2^man_bits.
  // In the subnormal range e + bias - 1 = 0 and the code is n itself (n = 2^man_bits: min normal).
  const int code = ((e + t.bias - 1) << t.man_bits) + n_i;
  if (code > t.max_code) return sign | overflow;
  return static_cast<uint8_t>(sign | code);
}

// Round a float to the nearest fp8 value, as a float (encode then decode).
inline float fp8_round(float x, Fp8Format f, Saturation sat = Saturation::finite) {
  return fp8_decode(fp8_encode(x, f, sat), f);
}

}  // namespace ioattn

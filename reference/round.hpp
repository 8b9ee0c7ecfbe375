// reference/round.hpp: rounding a float to the nearest value of an input dtype.
//
// Every host tensor in ioattn is a std::vector<float> whose values are exactly representable in
// the problem's dtype (dtype.hpp). Rounding goes through Eigen's own fp16/bf16 types, which round
// to nearest-even as the hardware conversions (__float2half_rn, __float2bfloat16_rn) do:
//
//   fp32 : identity
//   fp16 : float -> Eigen::half     -> float   (11 significand bits, max 65504, overflow -> inf)
//   bf16 : float -> Eigen::bfloat16 -> float   ( 8 significand bits, fp32 exponent range)
//   fp8_e4m3, fp8_e5m2 : float -> code -> float (ioattn/fp8.hpp: nearest-even, saturating to the
//          max finite value as __NV_SATFINITE does; neither Eigen nor the standard library has FP8)
//
// The same-precision baseline and the tiled algorithms call round_to() exactly where a real
// low-precision implementation converts: the inputs, the probabilities P before P·V, the outputs.
#pragma once

#include <cmath>
#include <span>

#include <Eigen/Core>

#include "ioattn/dtype.hpp"
#include "ioattn/fp8.hpp"

namespace ioattn::ref {

inline float round_to(DType t, float x) {
  switch (t) {
    case DType::fp32: return x;
    case DType::fp16: return static_cast<float>(Eigen::half(x));
    case DType::bf16: return static_cast<float>(Eigen::bfloat16(x));
    case DType::fp8_e4m3: return fp8_round(x, Fp8Format::e4m3);
    case DType::fp8_e5m2: return fp8_round(x, Fp8Format::e5m2);
  }
  return x;
}

inline void round_in_place(DType t, std::span<float> xs) {
  if (t == DType::fp32) return;
  for (float& x : xs) x = round_to(t, x);
}

// True when every value is finite and exactly representable in the dtype.
inline bool representable(DType t, std::span<const float> xs) {
  for (float x : xs)
    if (!std::isfinite(x) || round_to(t, x) != x) return false;
  return true;
}

}  // namespace ioattn::ref

// ioattn/dtype.hpp: the input element types and their unit roundoff.
//
// Inputs Q, K, V (and dO) come in one of these dtypes; accumulation is always at least fp32 and
// LSE is always fp32. On the host every tensor is stored as float holding values that are exactly
// representable in the dtype (see reference/round.hpp): that keeps one code path for all dtypes.
//
// The two FP8 dtypes (fp8_e4m3, fp8_e5m2; ioattn/fp8.hpp) are forward-only input types: Q, K, V
// hold FP8 values (on the host the floats of the FP8 codes, unscaled), the real inputs are those
// values times per-tensor (or per-KV-head) descale factors, and the output O is bf16 or fp16. The
// descales and the output dtype live in AttnProblem::fp8 (problem.hpp); output_dtype() names O's.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace ioattn {

enum class DType { fp32, fp16, bf16, fp8_e4m3, fp8_e5m2 };

constexpr bool is_fp8(DType t) { return t == DType::fp8_e4m3 || t == DType::fp8_e5m2; }

constexpr std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::fp32: return "fp32";
    case DType::fp16: return "fp16";
    case DType::bf16: return "bf16";
    case DType::fp8_e4m3: return "fp8_e4m3";
    case DType::fp8_e5m2: return "fp8_e5m2";
  }
  return "?";
}

constexpr std::optional<DType> parse_dtype(std::string_view s) {
  if (s == "fp32" || s == "float32") return DType::fp32;
  if (s == "fp16" || s == "float16" || s == "half") return DType::fp16;
  if (s == "bf16" || s == "bfloat16") return DType::bf16;
  if (s == "fp8_e4m3" || s == "float8_e4m3fn" || s == "e4m3") return DType::fp8_e4m3;
  if (s == "fp8_e5m2" || s == "float8_e5m2" || s == "e5m2") return DType::fp8_e5m2;
  return std::nullopt;
}

// Bytes per element as stored on the device.
constexpr std::size_t dtype_bytes(DType t) { return t == DType::fp32 ? 4 : is_fp8(t) ? 1 : 2; }

// Unit roundoff u = 2^-p for p significand bits (fp32: 24, fp16: 11, bf16: 8, e4m3: 4, e5m2: 3), the
// relative error of one rounding of a normal number. The error rule's floor is a small multiple of
// the output dtype's (tolerance.hpp; for FP8 problems that is bf16's or fp16's, not FP8's).
constexpr double unit_roundoff(DType t) {
  switch (t) {
    case DType::fp32: return 0x1p-24;
    case DType::fp16: return 0x1p-11;
    case DType::bf16: return 0x1p-8;
    case DType::fp8_e4m3: return 0x1p-4;
    case DType::fp8_e5m2: return 0x1p-3;
  }
  return 1.0;
}

}  // namespace ioattn

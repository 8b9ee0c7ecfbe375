// ioattn/dtype.hpp: the input element types and their unit roundoff.
//
// Inputs Q, K, V (and dO) come in one of three dtypes; accumulation is always at least fp32 and
// LSE is always fp32. On the host every tensor is stored as float holding values that are exactly
// representable in the dtype (see reference/round.hpp): that keeps one code path for all dtypes.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace ioattn {

enum class DType { fp32, fp16, bf16 };

constexpr std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::fp32: return "fp32";
    case DType::fp16: return "fp16";
    case DType::bf16: return "bf16";
  }
  return "?";
}

constexpr std::optional<DType> parse_dtype(std::string_view s) {
  if (s == "fp32" || s == "float32") return DType::fp32;
  if (s == "fp16" || s == "float16" || s == "half") return DType::fp16;
  if (s == "bf16" || s == "bfloat16") return DType::bf16;
  return std::nullopt;
}

// Bytes per element as stored on the device.
constexpr std::size_t dtype_bytes(DType t) { return t == DType::fp32 ? 4 : 2; }

// Unit roundoff u = 2^-p for p significand bits (fp32: 24, fp16: 11, bf16: 8), the relative error
// of one rounding. The error rule's floor is a small multiple of it (tolerance.hpp).
constexpr double unit_roundoff(DType t) {
  switch (t) {
    case DType::fp32: return 0x1p-24;
    case DType::fp16: return 0x1p-11;
    case DType::bf16: return 0x1p-8;
  }
  return 1.0;
}

}  // namespace ioattn

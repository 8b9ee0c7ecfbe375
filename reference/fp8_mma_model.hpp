// reference/fp8_mma_model.hpp: Hopper's FP8 tensor core (wgmma .f32.e4m3.e4m3 / e5m2, fp32
// accumulator) as published bit-accurate models describe it, for one output element.
//
// Sources (both validated bit for bit against the GPUs by their authors):
//   [KM] F. A. Khattak, M. Mikaitis, "Accurate Models of NVIDIA Tensor Cores", arXiv:2512.07004
//        (2025), and the authors' model code (north-numerical-computing/MATLAB-tensor-core): the H100
//        model (H100TC.m, the H200 is modelled by the same code path) sets for FP8 inputs with an fp32
//        output an FMA size of 32 products ("FMA size is 16, but interleaved pattern is used to join
//        two 16-element vectors"), neab = -10 extra alignment bits (a 24 - 10 = 14-bit significand:
//        13 bits below the leading one), truncation (RZ) in the alignment and for the output.
//   [MS] F. Yang, M. Yang, P. Xie et al., "MMA-Sim: Bit-Accurate Reference Model of Tensor Cores
//        and Matrix Cores", arXiv:2511.10909 (2025), and its code (microsoft/MMA-Sim): wgmma with FP8
//        operands on Hopper is one truncated fused dot-product-add of all k = 32 products and C with
//        13 fractional bits, its result normalized and truncated to 13 fraction bits ("e8m13").
// Section and equation numbers of the two papers are not cited here: the arithmetic below was read
// from the authors' published model code (the papers' text was not available when this was written);
// the two agree on every step below, case by case (the extra-bit rule of [KM] for a product whose
// significand is >= 2 gives the same quantum as [MS]'s unnormalized product exponent).
//
// One k-step, D = C + sum_{i < n} a_i b_i (n = 32 per wgmma instruction, kFp8MmaGroup):
//   1. every product is exact: a = s_a 2^e_a, b = s_b 2^e_b with 1 <= s < 2 for normal values and
//      e = the format's minimum exponent (e4m3: -6, e5m2: -14) with s < 1 for subnormals; the
//      product's significand s_a s_b lies in [0, 4) and its exponent is e_a + e_b (NOT renormalized).
//      C (an fp32 value) is s_c 2^e_c the same way (minimum exponent -126). Zeros take no part.
//   2. E = the largest exponent among the products and C.
//   3. every term is truncated toward zero to a multiple of 2^(E - kFp8MmaFracBits) (alignment to
//      E; the bits shifted out are dropped, no guard, round or sticky bit);
//   4. the truncated terms are added exactly;
//   5. the sum is normalized and truncated toward zero to kFp8MmaFracBits bits below its leading
//      one (an fp32 register whose low 10 significand bits are 0), fp32 subnormals below 2^-126.
// A wgmma with scale-d = 0 (a fresh accumulator) has no C term; C = +0 is the same thing.
//
// What the sources leave open, and what this file chooses (named constants below):
//   - kFp8MmaFracBits = 13: both sources; DeepSeek-V3's report (section 3.3) measured "about 14
//     bits" of accumulation precision on H800, i.e. the leading one plus 13.
//   - kFp8MmaGroup = 32: one alignment for all 32 products of a k32 instruction. [KM] says the
//     hardware has 16-term adders whose two halves are interleaved and modelled jointly as 32; [MS]
//     models the instruction as one 32-term sum. A model with two 16-term halves normalized in
//     between (the refuted kernels/dev/fp8_accum_model.cpp used 16) is NOT what either publishes.
//   - Overflow, infinities and NaN are not modelled: the reference refuses non-finite inputs and
//     e4m3 products (<= 448^2) stay far below fp32's range. The sign of a zero result is +0.
//   - Instruction order across k (which C each instruction sees) is not the tensor core's choice but
//     the kernel's: fp8_mma_dot below takes it as an argument (v09_fp8_wgmma's two modes).
// verify/reference/test_fp8_mma_model.cpp checks every step on hand-computed cases where this model,
// fp32 accumulation and the refuted 16-term model give different answers.
#pragma once

#include <algorithm>
#include <bit>
#include <climits>
#include <cmath>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "ioattn/fp8.hpp"

namespace ioattn::ref {

inline constexpr int kFp8MmaFracBits = 13;  // bits kept below the leading one: alignment and output
inline constexpr int kFp8MmaGroup = 32;     // products per fused add: one wgmma k32 instruction
inline constexpr int kFp32MinExp = -126;    // fp32's smallest normal exponent (C and the result)

// Smallest normal exponent of an FP8 format: e4m3 -6, e5m2 -14.
constexpr int fp8_min_exp(Fp8Format f) { return 1 - fp8_traits(f).bias; }

// The exponent the adder aligns x (nonzero, finite) by: floor(log2|x|), at least min_exp.
inline int mma_exponent(double x, int min_exp) { return std::max(std::ilogb(x), min_exp); }
// The same for a float that is a normal fp32 number (every FP8 value is), from its exponent bits.
inline int mma_exponent(float x, int min_exp) {
  const int field = static_cast<int>((std::bit_cast<uint32_t>(x) >> 23) & 0xffu);
  return field == 0 ? mma_exponent(double{x}, min_exp) : std::max(field - 127, min_exp);
}

// x truncated toward zero to a multiple of 2^q_exp (exact in double for the magnitudes used here).
inline double mma_truncate(double x, int q_exp) { return std::ldexp(std::trunc(std::ldexp(x, -q_exp)), q_exp); }

// Steps 5: the exact sum s written back as the tensor core writes its fp32 accumulator.
inline float mma_normalize(double s) {
  if (s == 0.0) return 0.0f;
  const int e = mma_exponent(s, kFp32MinExp);
  return static_cast<float>(mma_truncate(s, e - kFp8MmaFracBits));  // <= 14 significant bits: exact
}

// One k-step (steps 1-5): c + sum a[i] b[i], a and b FP8 values (as floats) of formats fa and fb,
// c an fp32 value or none (a fresh accumulator). a and b have the same length (at most 64 here:
// the exact sum then needs < 53 bits).
inline float fp8_mma_step(std::span<const float> a, std::span<const float> b, std::optional<float> c,
                          Fp8Format fa = Fp8Format::e4m3, Fp8Format fb = Fp8Format::e4m3) {
  const size_t n = std::min(a.size(), b.size());
  int e_max = INT_MIN;
  const int min_a = fp8_min_exp(fa), min_b = fp8_min_exp(fb);
  for (size_t i = 0; i < n; ++i)
    if (a[i] != 0.0f && b[i] != 0.0f) e_max = std::max(e_max, mma_exponent(a[i], min_a) + mma_exponent(b[i], min_b));
  const bool has_c = c.has_value() && *c != 0.0f;
  if (has_c) e_max = std::max(e_max, mma_exponent(double{*c}, kFp32MinExp));
  if (e_max == INT_MIN) return 0.0f;  // only zeros
  // Alignment quantum q = 2^(E - 13); x / q and its multiple are exact (powers of two, no under- or
  // overflow for these magnitudes): the same as mma_truncate(x, E - 13), without two ldexp per term.
  const double q = std::ldexp(1.0, e_max - kFp8MmaFracBits), inv_q = std::ldexp(1.0, kFp8MmaFracBits - e_max);
  double s = has_c ? std::trunc(double{*c} * inv_q) * q : 0.0;
  for (size_t i = 0; i < n; ++i) s += std::trunc(double{a[i]} * double{b[i]} * inv_q) * q;  // exact product
  return mma_normalize(s);
}

// How a kernel chains the k-steps of one dot product of length n (k32 instructions in order of k):
// `promote` instructions share one accumulator (the first of them without C), and every such chunk's
// result is added in fp32 (round to nearest) to the running sum, on the CUDA cores, as CUTLASS's and
// DeepSeek's promotion does. promote = 0: one accumulator for the whole dot product (never
// promoted: v09's "fast" S and its O = P V). A length that is not a multiple of kFp8MmaGroup is
// padded with zero products (they change nothing).
inline float fp8_mma_dot(std::span<const float> a, std::span<const float> b, int promote,
                         Fp8Format fa = Fp8Format::e4m3, Fp8Format fb = Fp8Format::e4m3) {
  const size_t n = std::min(a.size(), b.size());
  float total = 0.0f;
  std::optional<float> acc;  // the tensor-core accumulator of the current chunk
  int in_chunk = 0;
  for (size_t k0 = 0; k0 < n; k0 += kFp8MmaGroup) {
    const size_t len = std::min<size_t>(kFp8MmaGroup, n - k0);
    acc = fp8_mma_step(a.subspan(k0, len), b.subspan(k0, len), acc, fa, fb);
    if (promote > 0 && ++in_chunk == promote) {  // promotion: the chunk's result into fp32
      total += *acc;
      acc.reset();
      in_chunk = 0;
    }
  }
  if (acc) total += *acc;  // the last (or only) chunk; total is exactly 0 before it when never promoted
  return total;
}

// The accumulation a same-precision FP8 baseline uses (forward_naive_fp8 in reference.hpp).
struct Fp8Accumulation {
  bool tensor_core = false;  // false: exact fp32 accumulation (forward_naive's); true: the model above
  int s_promote = 1;         // S = Q K^T: k32 instructions per fresh accumulator; 0 = never promoted
                             // (O = P V is never promoted: v09 keeps O in one accumulator)

  // "fp32", "mma" (= "mma:1"), "mma:fast" (never promoted) or "mma:N" (N >= 1).
  static std::optional<Fp8Accumulation> parse(std::string_view s) {
    if (s == "fp32") return Fp8Accumulation{};
    if (s == "mma") return Fp8Accumulation{true, 1};
    if (s == "mma:fast") return Fp8Accumulation{true, 0};
    if (s.substr(0, 4) != "mma:" || s.size() == 4 || s.size() > 7) return std::nullopt;
    int n = 0;
    for (char ch : s.substr(4)) {
      if (ch < '0' || ch > '9') return std::nullopt;
      n = 10 * n + (ch - '0');
    }
    if (n < 1) return std::nullopt;
    return Fp8Accumulation{true, n};
  }
  std::string name() const {
    if (!tensor_core) return "fp32";
    return s_promote == 0 ? "mma:fast" : "mma:" + std::to_string(s_promote);
  }
};

}  // namespace ioattn::ref

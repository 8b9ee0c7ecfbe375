// kernels/platform/fp8_fnuz.hpp: how ioattn's e4m3 inputs (OCP "FN", include/ioattn/fp8.hpp) reach
// an AMD CDNA3 matrix core, whose FP8 is the other e4m3 (FNUZ).
//
// gfx940/941/942 (MI300) implement e4m3 "FNUZ" (AMD CDNA3 ISA, "FP8"; LLVM's f8E4M3FNUZ): 1 sign,
// 4 exponent (bias 8), 3 mantissa bits; max finite 240 (0.1111.111), no infinities, ONE NaN (0x80,
// the code that would be -0), no negative zero, min normal 2^-7, min subnormal 2^-10. OCP e4m3fn
// (what the spec, the reference and NVIDIA use): bias 7, max 448, NaN S.1111.111, +-0, min
// subnormal 2^-9. (gfx950 implements OCP; this file is for the FNUZ targets.)
//
// The mapping ioattn uses: keep the bits. With the same 7 magnitude bits, the FNUZ value is exactly
// half the OCP value (the bias is one larger), for every finite code, subnormals included:
//   OCP code c, finite, c != 0x80:  fnuz(c) = ocp(c) / 2       exact, no saturation (448 -> 224)
//   OCP -0 (0x80):                  -> 0x00 (+0)               (0x80 is FNUZ's NaN)
//   OCP NaN (0x7F, 0xFF):           -> 0x80 (FNUZ's NaN)        (0x7F would read as 240)
// (normal codes stay normal and subnormal ones subnormal: the bits are the same), so every finite
// input arrives exactly, halved; the kernel multiplies the two descales of a product
// by 2 each (S = Q K^T needs x4, O = P V needs x4 with P halved too, below). The value-preserving
// alternative (OCP value -> the same FNUZ value) is exact only up to 240: the 7 largest OCP
// magnitudes (256, 288, ..., 448) would saturate to 240; it is not used.
//
// P before P V: the reference rounds P~ = exp(S - m) <= 1 to OCP e4m3 (a kernel's P~ is <= 1 with
// eager rescaling, as v09a's, <= 2^8 with lazy rescaling). FNUZ
// rounding of P~ / 2 gives exactly half of it for every |P~| <= 464 (the FNUZ values below 232 are
// the OCP values halved, same mantissa grid, same subnormal quantum: 2^-10 = 2^-9 / 2, ties to even
// alike), so a kernel that converts P~ / 2 to FNUZ (round to nearest even) rounds as the reference
// does. verify/kernels/amd_fp8_fnuz.cpp checks both statements, on all 256 codes and on every
// midpoint; the hardware conversion's rounding mode is the CDNA3 ISA's (RNE by default), not run here.
//
// Plain C++ (constexpr: host code and, under hipcc, device code alike), no HIP header.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

namespace ioattn::kernels::fnuz {

inline constexpr uint8_t kNaN = 0x80;     // FNUZ e4m3's only NaN
inline constexpr uint8_t kMaxCode = 0x7F; // 240

// OCP e4m3fn code -> the FNUZ code of half its value (NaN -> NaN, -0 -> +0).
constexpr uint8_t from_ocp_halved(uint8_t c) {
  if (c == 0x80) return 0x00;
  if ((c & 0x7F) == 0x7F) return kNaN;
  return c;
}

// The inverse on its image: FNUZ code -> the OCP code of twice its value. FNUZ NaN -> OCP NaN
// (0x7F); +-240 (0x7F, 0xFF), whose double 480 OCP lacks, saturate to +-448 (as __NV_SATFINITE).
constexpr uint8_t to_ocp_doubled(uint8_t c) {
  if (c == kNaN) return 0x7F;
  if ((c & 0x7F) == 0x7F) return static_cast<uint8_t>((c & 0x80) | 0x7E);
  return c;
}

// from_ocp_halved on the four bytes of a word at once (the kernel's loads: 4 codes per 32-bit
// register, a handful of integer ops instead of 4 byte extracts). For a byte x <= 0x7F, x + 0x7F
// sets bit 7 exactly when x != 0 and never carries out of the byte.
constexpr uint32_t from_ocp_halved_x4(uint32_t w) {
  constexpr uint32_t kLo7 = 0x7F7F7F7Fu, kHi = 0x80808080u;
  const uint32_t lo7 = w & kLo7;
  const uint32_t mag_zero = ~((lo7 + kLo7) & kHi) & kHi;             // bit 7: magnitude 0
  const uint32_t mag_ones = ~(((lo7 ^ kLo7) + kLo7) & kHi) & kHi;    // bit 7: magnitude 0x7F
  const uint32_t neg_zero = mag_zero & w;                            // bit 7: byte 0x80
  const uint32_t nan_bytes = (mag_ones >> 7) * 0xFFu;                // 0xFF where NaN
  return ((w ^ neg_zero) & ~nan_bytes) | mag_ones;                   // 0x80 -> 0x00, NaN -> 0x80
}

// FNUZ e4m3 code -> float, exact (host side: the tests; the kernels never decode).
inline float decode(uint8_t c) {
  if (c == kNaN) return std::numeric_limits<float>::quiet_NaN();
  const int exp_field = (c >> 3) & 0x0F, man = c & 0x07;
  const float v = exp_field == 0 ? std::ldexp(static_cast<float>(man), -10)  // subnormal: man 2^(1-8-3)
                                 : std::ldexp(static_cast<float>(8 + man), exp_field - 8 - 3);
  return (c & 0x80) ? -v : v;
}

}  // namespace ioattn::kernels::fnuz

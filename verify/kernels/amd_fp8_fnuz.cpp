// The OCP e4m3fn <-> FNUZ e4m3 mapping of kernels/platform/fp8_fnuz.hpp, which the AMD FP8 forward
// (kernels/v09a_fp8_mfma.hip) applies to every Q, K, V byte it loads:
//   - all 256 OCP codes: every finite one arrives as exactly half its value (no saturation, the
//     subnormals included), -0 as +0, both NaNs as FNUZ's NaN; to_ocp_doubled inverts it;
//   - the 4-bytes-per-word form equals the byte form (each byte position, every code, mixed words);
//   - the FNUZ format itself (known values, 0x80 the only NaN, no -0, 255 distinct finite values);
//   - the P rounding claim: rounding P~ / 2 to nearest-even FNUZ is exactly half of rounding P~ to
//     OCP e4m3 (ioattn/fp8.hpp, what the reference does) for |P~| <= 464, at every OCP value, every
//     midpoint between neighbours and the floats either side of it; and where it stops holding.
// Host only (no GPU, no hipcc): the kernel's conversion is this header's constexpr code.
#include <cmath>
#include <cstdint>
#include <random>
#include <set>

#include <gtest/gtest.h>

#include "ioattn/fp8.hpp"
#include "kernels/platform/fp8_fnuz.hpp"

using namespace ioattn;
namespace fnuz = ioattn::kernels::fnuz;

namespace {

// Round to nearest FNUZ e4m3, ties to the even code, by brute force over the 255 finite codes
// (independent of the bit tricks under test). Magnitudes past 240 + 8 (half an ulp) are out of range
// for this test helper and never asked.
uint8_t fnuz_round_brute(float x) {
  uint8_t best = 0x00;
  double best_err = INFINITY;
  for (int c = 0; c < 256; ++c) {
    if (c == fnuz::kNaN) continue;
    const double err = std::fabs(double{fnuz::decode(static_cast<uint8_t>(c))} - double{x});
    if (err < best_err || (err == best_err && (c & 1) == 0 && (best & 1) == 1)) {
      best = static_cast<uint8_t>(c);
      best_err = err;
    }
  }
  return best;
}

}  // namespace

TEST(AmdFp8Fnuz, FormatKnownValues) {
  EXPECT_EQ(fnuz::decode(0x7F), 240.0f);  // max finite: 0.1111.111
  EXPECT_EQ(fnuz::decode(0xFF), -240.0f);
  EXPECT_EQ(fnuz::decode(0x40), 1.0f);    // bias 8
  EXPECT_EQ(fnuz::decode(0x08), 0x1p-7f); // min normal
  EXPECT_EQ(fnuz::decode(0x01), 0x1p-10f);// min subnormal
  EXPECT_EQ(fnuz::decode(0x00), 0.0f);
  EXPECT_TRUE(std::isnan(fnuz::decode(0x80)));
  std::set<float> finite;
  for (int c = 0; c < 256; ++c) {
    const float v = fnuz::decode(static_cast<uint8_t>(c));
    if (c == 0x80) continue;
    ASSERT_TRUE(std::isfinite(v)) << c;
    EXPECT_FALSE(std::signbit(v) && v == 0.0f) << "FNUZ has no -0, code " << c;
    finite.insert(v);
  }
  EXPECT_EQ(finite.size(), 255u);  // no code is wasted: 255 distinct values and one NaN
}

TEST(AmdFp8Fnuz, All256OcpCodesArriveHalved) {
  int exact = 0;
  for (int c = 0; c < 256; ++c) {
    const auto code = static_cast<uint8_t>(c);
    const float ocp = fp8_decode(code, Fp8Format::e4m3);
    const uint8_t f = fnuz::from_ocp_halved(code);
    if (std::isnan(ocp)) {
      EXPECT_EQ(f, fnuz::kNaN) << "OCP NaN code " << c;
      continue;
    }
    const float got = fnuz::decode(f);
    ASSERT_FALSE(std::isnan(got)) << "finite OCP code " << c << " became FNUZ NaN";
    EXPECT_EQ(got, ocp / 2) << "code " << c << " value " << ocp;  // exact (also 448 -> 224, 2^-9 -> 2^-10)
    EXPECT_EQ(fnuz::to_ocp_doubled(f), c == 0x80 ? 0x00 : c) << "code " << c;  // -0 comes back as +0
    ++exact;
  }
  EXPECT_EQ(exact, 254);
  // The two FNUZ codes that no OCP code maps to (+-240) saturate on the way back; NaN stays NaN.
  EXPECT_EQ(fnuz::to_ocp_doubled(0x7F), 0x7E);
  EXPECT_EQ(fnuz::to_ocp_doubled(0xFF), 0xFE);
  EXPECT_TRUE(std::isnan(fp8_decode(fnuz::to_ocp_doubled(fnuz::kNaN), Fp8Format::e4m3)));
}

TEST(AmdFp8Fnuz, WordFormEqualsByteForm) {
  auto bytewise = [](uint32_t w) {
    uint32_t r = 0;
    for (int b = 0; b < 4; ++b) r |= uint32_t{fnuz::from_ocp_halved(static_cast<uint8_t>(w >> (8 * b)))} << (8 * b);
    return r;
  };
  std::mt19937 rng(20261201);
  for (int pos = 0; pos < 4; ++pos)
    for (int c = 0; c < 256; ++c)
      for (int rep = 0; rep < 64; ++rep) {
        uint32_t w = static_cast<uint32_t>(rng());
        w = (w & ~(0xFFu << (8 * pos))) | (uint32_t(c) << (8 * pos));
        ASSERT_EQ(fnuz::from_ocp_halved_x4(w), bytewise(w)) << std::hex << "word 0x" << w;
      }
  for (uint32_t lo = 0; lo < 256; ++lo)  // every pair of neighbouring bytes, both halves of the word
    for (uint32_t hi = 0; hi < 256; ++hi) {
      const uint32_t w = lo | (hi << 8) | (lo << 16) | (hi << 24);
      ASSERT_EQ(fnuz::from_ocp_halved_x4(w), bytewise(w)) << std::hex << "word 0x" << w;
    }
  static_assert(fnuz::from_ocp_halved_x4(0x807F80FFu) == 0x00800080u, "-0, NaN, -0, -NaN");
  static_assert(fnuz::from_ocp_halved_x4(0x7E01FE38u) == 0x7E01FE38u, "finite codes keep their bits");
}

// The kernel rounds P~ / 2 to FNUZ; the reference rounds P~ to OCP e4m3. Equal (up to the factor 2)
// at every OCP value, midpoint and the floats beside each midpoint, for |P~| <= 464.
TEST(AmdFp8Fnuz, HalvedPRoundsAsTheReference) {
  auto check = [](float x) {
    const float want = fp8_round(x, Fp8Format::e4m3) / 2;
    const float got = fnuz::decode(fnuz_round_brute(x / 2));
    EXPECT_EQ(got, want) << "P~ = " << x;
  };
  for (int c = 0; c < 0x7E; ++c) {  // neighbours c, c + 1 (positive; the sign is symmetric)
    const float a = fp8_decode(static_cast<uint8_t>(c), Fp8Format::e4m3);
    const float b = fp8_decode(static_cast<uint8_t>(c + 1), Fp8Format::e4m3);
    const float mid = (a + b) / 2;
    for (float x : {a, b, mid, std::nextafter(mid, a), std::nextafter(mid, b)}) {
      check(x);
      check(-x);
    }
  }
  check(448.0f);
  check(456.0f);
  check(464.0f);  // the tie above 448: to even (448) in OCP, to 224 in FNUZ
  check(0x1p-11f);
  check(1e-30f);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-8.f, 8.f);  // exponents of P~ = 2^u
  for (int i = 0; i < 20000; ++i) check(std::exp2(u(rng)));
  // Past 464 the claim ends: OCP saturates at 448, FNUZ rounds P~ / 2 up to 240 (never reached by
  // the kernels: P~ <= 2^8).
  EXPECT_EQ(fnuz::decode(fnuz_round_brute(470.0f / 2)), 240.0f);
  EXPECT_EQ(fp8_round(470.0f, Fp8Format::e4m3), 448.0f);
}

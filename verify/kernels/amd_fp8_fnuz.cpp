// The OCP e4m3fn <-> FNUZ e4m3 mapping of kernels/platform/fp8_fnuz.hpp, which the AMD FP8 forward
// (kernels/v09a_fp8_mfma.hip) applies to every Q, K, V byte it loads:
//   - all 256 OCP codes: every finite one arrives as exactly half its value (no saturation, the
//     subnormals included), -0 as +0, both NaNs as FNUZ's NaN; to_ocp_doubled inverts it;
//   - the 4-bytes-per-word form equals the byte form (each byte position, every code, mixed words);
//   - the FNUZ format itself (known values, 0x80 the only NaN, no -0, 255 distinct finite values);
//   - the P rounding claim: rounding P~ / 2 to nearest-even FNUZ is exactly half of rounding P~ to
//     OCP e4m3 (ioattn/fp8.hpp, what the reference does) for |P~| <= 464, at every OCP value, every
//     midpoint between neighbours and the floats either side of it; and where it stops holding.
// And the lane placements of kernels/platform/mfma_fp8_lanes.hpp (which key, query, d index each
// lane of v09a's MFMAs reads or holds): the 16x16x32 instruction emulated on the host from the ISA's
// operand maps, written here independently, fed as the kernel feeds it, gives S = Q K^T in S^T's
// accumulators and O = P V in O^T's (exact small integers, d 64 and 128, Bc 64 and 32).
// Host only (no GPU, no hipcc): the kernel's conversion and indices are these headers' constexpr code.
#include <array>
#include <cmath>
#include <cstdint>
#include <random>
#include <set>
#include <vector>

#include <gtest/gtest.h>

#include "ioattn/fp8.hpp"
#include "kernels/platform/fp8_fnuz.hpp"
#include "kernels/platform/mfma_fp8_lanes.hpp"

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
  // the kernels: P~ <= 1 in v09a, <= 2^8 under lazy rescaling).
  EXPECT_EQ(fnuz::decode(fnuz_round_brute(470.0f / 2)), 240.0f);
  EXPECT_EQ(fp8_round(470.0f, Fp8Format::e4m3), 448.0f);
}

namespace {

// v_mfma_f32_16x16x32_fp8_fp8 from the CDNA3 ISA's maps (not from mfma_fp8_lanes.hpp): lane l, byte
// e of A is A(l % 16, 8 (l / 16) + e), of B is B(8 (l / 16) + e, l % 16); C element e of lane l is
// C(4 (l / 16) + e, l % 16); C += A B over k = 0..31.
using Operand = std::array<std::array<double, 8>, 64>;
using Acc = std::array<std::array<double, 4>, 64>;
void mfma_emulated(const Operand& a, const Operand& b, Acc& c) {
  double A[16][32], B[32][16];
  for (int l = 0; l < 64; ++l)
    for (int e = 0; e < 8; ++e) {
      A[l % 16][8 * (l / 16) + e] = a[l][e];
      B[8 * (l / 16) + e][l % 16] = b[l][e];
    }
  for (int l = 0; l < 64; ++l)
    for (int e = 0; e < 4; ++e) {
      double sum = 0;
      for (int k = 0; k < 32; ++k) sum += A[4 * (l / 16) + e][k] * B[k][l % 16];
      c[l][e] += sum;
    }
}

// One 16-query atom against one tile of bc keys at head dim d, placed as v09a places them.
void check_tile(int d, int bc, uint32_t seed) {
  using namespace ioattn::kernels::mfma8;
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> small(-3, 3);
  std::vector<std::vector<double>> Q(16, std::vector<double>(d)), K(bc, std::vector<double>(d)),
      V(bc, std::vector<double>(d));
  for (auto* m : {&Q, &K, &V})
    for (auto& row : *m)
      for (double& x : row) x = small(rng);
  // The kernel's B operand of S^T: query lane_row, d 32 kk + lane_k0 + e (its Q registers).
  std::vector<Operand> q_op(d / 32);
  for (int kk = 0; kk < d / 32; ++kk)
    for (int l = 0; l < 64; ++l)
      for (int e = 0; e < 8; ++e) q_op[kk][l][e] = Q[lane_row(l)][32 * kk + lane_k0(l) + e];
  // S^T = K Q^T: A = K rows 16 t + lane_row (the LDS tile is K row-major).
  std::vector<Acc> s_acc(bc / 16);
  for (int t = 0; t < bc / 16; ++t) {
    s_acc[t] = {};
    for (int kk = 0; kk < d / 32; ++kk) {
      Operand k_op;
      for (int l = 0; l < 64; ++l)
        for (int e = 0; e < 8; ++e) k_op[l][e] = K[16 * t + lane_row(l)][32 * kk + lane_k0(l) + e];
      mfma_emulated(k_op, q_op[kk], s_acc[t]);
    }
  }
  auto S = [&](int i, int key) {
    double sum = 0;
    for (int x = 0; x < d; ++x) sum += Q[i][x] * K[key][x];
    return sum;
  };
  for (int t = 0; t < bc / 16; ++t)
    for (int l = 0; l < 64; ++l)
      for (int e = 0; e < 4; ++e)  // the key the kernel masks this element by: 16 t + acc_row
        ASSERT_EQ(s_acc[t][l][e], S(lane_row(l), 16 * t + acc_row(l, e))) << "d " << d << " t " << t << " lane " << l;
  // P = S (any values do: this checks where they go). P^T's B operand packed from the lane's own
  // accumulators; V^T written to LDS at vt_col; O^T = V^T P^T.
  std::vector<Operand> p_op(bc / 32);
  for (int G = 0; G < bc / 32; ++G)
    for (int l = 0; l < 64; ++l)
      for (int j = 0; j < 8; ++j) p_op[G][l][j] = s_acc[p_atom(G, j)][l][p_elem(j)];
  std::vector<std::vector<double>> Vt(d, std::vector<double>(bc, NAN));
  for (int r = 0; r < bc; ++r)
    for (int x = 0; x < d; ++x) Vt[x][vt_col(r)] = V[r][x];
  for (int t = 0; t < d / 16; ++t) {
    Acc o_acc{};
    for (int G = 0; G < bc / 32; ++G) {
      Operand v_op;
      for (int l = 0; l < 64; ++l)
        for (int e = 0; e < 8; ++e) v_op[l][e] = Vt[16 * t + lane_row(l)][32 * G + lane_k0(l) + e];
      mfma_emulated(v_op, p_op[G], o_acc);
    }
    for (int l = 0; l < 64; ++l)
      for (int e = 0; e < 4; ++e) {
        double want = 0;
        for (int key = 0; key < bc; ++key) want += S(lane_row(l), key) * V[key][16 * t + acc_row(l, e)];
        // The kernel stores element e at d = 16 t + acc_row(lane, 0) + e (4 consecutive values).
        ASSERT_EQ(acc_row(l, e), acc_row(l, 0) + e);
        ASSERT_EQ(o_acc[l][e], want) << "d " << d << " O^T atom " << t << " lane " << l << " element " << e;
      }
  }
}

}  // namespace

TEST(AmdFp8Lanes, TransposedProductsComposeToAttention) {
  check_tile(64, 64, 1);
  check_tile(128, 64, 2);
  check_tile(256, 32, 3);
}

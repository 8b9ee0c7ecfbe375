// The FP8 conversions of include/ioattn/fp8.hpp: every one of the 256 codes of each format
// round-trips exactly, every midpoint between neighbours ties to even (with the floats just below
// and above it going down and up), and the edges: max finite and just above it, saturation,
// subnormals and underflow, signed zero, infinities and NaN.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include <gtest/gtest.h>

#include "ioattn/fp8.hpp"
#include "ioattn/problem.hpp"

using namespace ioattn;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

bool is_nan_code(uint8_t c, Fp8Format f) {
  return f == Fp8Format::e4m3 ? (c & 0x7F) == 0x7F : (c & 0x7F) > 0x7C;
}
bool is_inf_code(uint8_t c, Fp8Format f) { return f == Fp8Format::e5m2 && (c & 0x7F) == 0x7C; }

const char* name(Fp8Format f) { return f == Fp8Format::e4m3 ? "e4m3" : "e5m2"; }

}  // namespace

TEST(Fp8, KnownValues) {
  EXPECT_EQ(fp8_decode(0x7E, Fp8Format::e4m3), 448.0f);
  EXPECT_EQ(fp8_decode(0x38, Fp8Format::e4m3), 1.0f);
  EXPECT_EQ(fp8_decode(0x08, Fp8Format::e4m3), 0x1p-6f);  // min normal
  EXPECT_EQ(fp8_decode(0x07, Fp8Format::e4m3), 7 * 0x1p-9f);
  EXPECT_EQ(fp8_decode(0x01, Fp8Format::e4m3), 0x1p-9f);  // min subnormal
  EXPECT_EQ(fp8_decode(0xFE, Fp8Format::e4m3), -448.0f);
  EXPECT_TRUE(std::isnan(fp8_decode(0x7F, Fp8Format::e4m3)));
  EXPECT_TRUE(std::isnan(fp8_decode(0xFF, Fp8Format::e4m3)));
  EXPECT_EQ(fp8_decode(0x78, Fp8Format::e4m3), 256.0f);  // S.1111.000 is a number in e4m3, not inf
  EXPECT_EQ(fp8_decode(0x7B, Fp8Format::e5m2), 57344.0f);
  EXPECT_EQ(fp8_decode(0x3C, Fp8Format::e5m2), 1.0f);
  EXPECT_EQ(fp8_decode(0x04, Fp8Format::e5m2), 0x1p-14f);
  EXPECT_EQ(fp8_decode(0x01, Fp8Format::e5m2), 0x1p-16f);
  EXPECT_EQ(fp8_decode(0x7C, Fp8Format::e5m2), kInf);
  EXPECT_EQ(fp8_decode(0xFC, Fp8Format::e5m2), -kInf);
  for (int c : {0x7D, 0x7E, 0x7F, 0xFD, 0xFE, 0xFF})
    EXPECT_TRUE(std::isnan(fp8_decode(static_cast<uint8_t>(c), Fp8Format::e5m2))) << c;
  EXPECT_TRUE(std::signbit(fp8_decode(0x80, Fp8Format::e4m3)));
  EXPECT_EQ(fp8_decode(0x80, Fp8Format::e4m3), 0.0f);
}

TEST(Fp8, All256CodesRoundTrip) {
  for (Fp8Format f : {Fp8Format::e4m3, Fp8Format::e5m2}) {
    int finite = 0;
    for (int c = 0; c < 256; ++c) {
      const auto code = static_cast<uint8_t>(c);
      const float v = fp8_decode(code, f);
      if (is_nan_code(code, f)) {
        EXPECT_TRUE(std::isnan(v)) << name(f) << " code " << c;
        EXPECT_TRUE(is_nan_code(fp8_encode(v, f), f)) << name(f) << " code " << c;
        continue;
      }
      if (is_inf_code(code, f)) {
        EXPECT_TRUE(std::isinf(v)) << c;
        EXPECT_EQ(fp8_encode(v, f, Saturation::none), code) << name(f) << " code " << c;
        EXPECT_EQ(fp8_encode(v, f, Saturation::finite), static_cast<uint8_t>((code & 0x80) | 0x7B)) << name(f) << " code " << c;
        continue;
      }
      ++finite;
      ASSERT_TRUE(std::isfinite(v)) << name(f) << " code " << c;
      EXPECT_EQ(fp8_encode(v, f, Saturation::finite), code) << name(f) << " code " << c << " value " << v;
      EXPECT_EQ(fp8_encode(v, f, Saturation::none), code) << name(f) << " code " << c << " value " << v;
      EXPECT_EQ(std::signbit(v), (c & 0x80) != 0) << name(f) << " code " << c;
    }
    EXPECT_EQ(finite, f == Fp8Format::e4m3 ? 254 : 248) << name(f);
  }
}

TEST(Fp8, MonotoneAndMidpointsTieToEven) {
  for (Fp8Format f : {Fp8Format::e4m3, Fp8Format::e5m2}) {
    const uint8_t max = fp8_traits(f).max_code;
    for (int c = 0; c < max; ++c) {  // neighbours c, c + 1 (subnormals, the normal boundary, binades)
      for (uint8_t sign : {uint8_t{0x00}, uint8_t{0x80}}) {
        const auto lo = static_cast<uint8_t>(sign | c), hi = static_cast<uint8_t>(sign | (c + 1));
        const float a = fp8_decode(lo, f), b = fp8_decode(hi, f);
        ASSERT_LT(std::fabs(a), std::fabs(b)) << name(f) << " code " << c;
        const float mid = (a + b) / 2;  // exact: fp8 values are far from float's limits
        ASSERT_EQ(mid - a, b - mid);
        const uint8_t even = (c % 2 == 0) ? lo : hi;
        EXPECT_EQ(fp8_encode(mid, f), even) << name(f) << " midpoint " << mid;
        EXPECT_EQ(fp8_encode(std::nextafter(mid, a), f), lo) << name(f) << " just inside " << mid;
        EXPECT_EQ(fp8_encode(std::nextafter(mid, b), f), hi) << name(f) << " just outside " << mid;
      }
    }
  }
}

TEST(Fp8, MaxFiniteAndSaturation) {
  const Fp8Format e4 = Fp8Format::e4m3, e5 = Fp8Format::e5m2;
  // e4m3: max 448, the next step would be 480, so ulp/2 = 16 and 464 ties to even (448).
  EXPECT_EQ(fp8_encode(448.0f, e4), 0x7E);
  EXPECT_EQ(fp8_encode(std::nextafter(448.0f, 0.0f), e4), 0x7E);
  EXPECT_EQ(fp8_encode(449.0f, e4), 0x7E);
  EXPECT_EQ(fp8_encode(464.0f, e4, Saturation::none), 0x7E);  // tie: to even, not to NaN
  EXPECT_EQ(fp8_encode(std::nextafter(464.0f, 1e9f), e4, Saturation::none), 0x7F);  // overflow: NaN
  EXPECT_EQ(fp8_encode(std::nextafter(464.0f, 1e9f), e4, Saturation::finite), 0x7E);
  EXPECT_EQ(fp8_encode(-1e30f, e4), 0xFE);
  EXPECT_EQ(fp8_encode(kInf, e4), 0x7E);
  EXPECT_EQ(fp8_encode(-kInf, e4), 0xFE);
  EXPECT_EQ(fp8_encode(kInf, e4, Saturation::none), 0x7F);
  // e5m2: max 57344, ulp/2 = 4096; the tie 61440 goes to the (odd-free) next value 65536 = overflow.
  EXPECT_EQ(fp8_encode(std::nextafter(61440.0f, 0.0f), e5), 0x7B);
  EXPECT_EQ(fp8_encode(61440.0f, e5, Saturation::none), 0x7C);
  EXPECT_EQ(fp8_encode(61440.0f, e5, Saturation::finite), 0x7B);
  EXPECT_EQ(fp8_encode(-1e30f, e5, Saturation::none), 0xFC);
  EXPECT_EQ(fp8_encode(-kInf, e5), 0xFB);
  EXPECT_EQ(fp8_encode(-kInf, e5, Saturation::none), 0xFC);
}

TEST(Fp8, SubnormalsUnderflowAndSignedZero) {
  const Fp8Format e4 = Fp8Format::e4m3, e5 = Fp8Format::e5m2;
  EXPECT_EQ(fp8_encode(0.0f, e4), 0x00);
  EXPECT_EQ(fp8_encode(-0.0f, e4), 0x80);
  EXPECT_EQ(fp8_encode(-0.0f, e5), 0x80);
  EXPECT_EQ(fp8_encode(0x1p-10f, e4), 0x00);  // half the min subnormal: tie to even (zero)
  EXPECT_EQ(fp8_encode(std::nextafter(0x1p-10f, 1.0f), e4), 0x01);
  EXPECT_EQ(fp8_encode(-0x1p-11f, e4), 0x80);  // underflow keeps the sign
  EXPECT_EQ(fp8_encode(1e-30f, e4), 0x00);
  EXPECT_EQ(fp8_encode(3 * 0x1p-10f, e4), 0x02);  // 1.5 x min subnormal: tie to even (2)
  EXPECT_EQ(fp8_encode(0x1p-6f - 0x1p-10f, e4), 0x08);  // 7.5 subnormal steps: to 8 = min normal
  EXPECT_EQ(fp8_encode(0x1p-17f, e5), 0x00);
  EXPECT_EQ(fp8_encode(-3 * 0x1p-17f, e5), 0x82);
  EXPECT_EQ(fp8_round(0.3f, e4), 0.3125f);  // 0.3 = 1.2 x 2^-2, steps of 2^-5
  EXPECT_EQ(fp8_round(0.3f, e5), 0.3125f);  // steps of 2^-4
}

TEST(Fp8, NaNStaysNaN) {
  EXPECT_EQ(fp8_encode(kNaN, Fp8Format::e4m3), 0x7F);
  EXPECT_EQ(fp8_encode(-kNaN, Fp8Format::e4m3), 0xFF);
  EXPECT_EQ(fp8_encode(kNaN, Fp8Format::e4m3, Saturation::none), 0x7F);
  EXPECT_EQ(fp8_encode(kNaN, Fp8Format::e5m2), 0x7E);
  EXPECT_EQ(fp8_encode(-kNaN, Fp8Format::e5m2), 0xFE);
  EXPECT_TRUE(std::isnan(fp8_round(kNaN, Fp8Format::e5m2)));
}

// The FP8 problem (problem.hpp): descales and the output dtype, refused with one line when bad.
TEST(Fp8Problem, ValidateNamesTheConstraint) {
  auto msg = [](const AttnProblem& p) { return p.validate().value_or("ok"); };
  AttnProblem p;
  p.heads_q = 4;
  p.heads_kv = 2;
  p.dtype = DType::fp8_e4m3;
  EXPECT_EQ(msg(p), "ok");  // descales default to 1, O to bf16
  EXPECT_EQ(p.output_dtype(), DType::bf16);
  EXPECT_EQ(dtype_bytes(p.dtype), 1u);
  p.fp8.out = DType::fp8_e4m3;
  EXPECT_NE(msg(p).find("output dtype of an fp8 problem must be bf16 or fp16"), std::string::npos) << msg(p);
  p.fp8.out = DType::fp32;
  EXPECT_NE(msg(p).find("must be bf16 or fp16"), std::string::npos) << msg(p);
  p.fp8.out = DType::fp16;
  EXPECT_EQ(msg(p), "ok");
  EXPECT_EQ(p.output_dtype(), DType::fp16);
  for (float bad : {0.0f, -1.0f, kInf, kNaN}) {
    p.fp8.k_descale = {bad};
    EXPECT_EQ(msg(p), "k_descale must be finite and positive") << bad;
  }
  p.fp8.k_descale = {0.5f, 2.0f};  // per KV head
  EXPECT_EQ(msg(p), "ok");
  EXPECT_EQ(p.k_descale_of(1), 2.0f);
  p.fp8.q_descale = {1.0f, 2.0f, 3.0f};
  EXPECT_EQ(msg(p), "q_descale must have 1 value or heads_kv = 2 values (got 3)");
  p.fp8.q_descale = {1.0f, 3.0f};
  EXPECT_EQ(p.q_descale_of_head(0), 1.0f);  // query heads 0, 1 read KV head 0
  EXPECT_EQ(p.q_descale_of_head(3), 3.0f);
  p.fp8.v_descale = {4.0f};
  EXPECT_EQ(p.v_descale_of(1), 4.0f);
  EXPECT_EQ(msg(p), "ok");
  p.dtype = DType::bf16;  // descales on a non-FP8 problem
  EXPECT_EQ(msg(p), "descale factors and an output dtype apply to fp8 dtypes only (dtype is bf16)");
  p.fp8 = {};
  EXPECT_EQ(msg(p), "ok");
  EXPECT_EQ(p.output_dtype(), DType::bf16);
  EXPECT_EQ(p.q_descale_of_head(3), 1.0f);
}

TEST(Fp8Problem, NamesAndUnitRoundoff) {
  EXPECT_EQ(parse_dtype("fp8_e4m3"), DType::fp8_e4m3);
  EXPECT_EQ(parse_dtype("float8_e5m2"), DType::fp8_e5m2);
  EXPECT_EQ(dtype_name(DType::fp8_e5m2), "fp8_e5m2");
  EXPECT_EQ(unit_roundoff(DType::fp8_e4m3), 0x1p-4);
  EXPECT_EQ(unit_roundoff(DType::fp8_e5m2), 0x1p-3);
  EXPECT_FALSE(is_fp8(DType::bf16));
  EXPECT_EQ(dtype_bytes(DType::bf16), 2u);  // unchanged
  EXPECT_EQ(dtype_bytes(DType::fp32), 4u);
}

// The FP8 tensor-core accumulation model (reference/fp8_mma_model.hpp) on hand-computed cases where
// it, exact fp32 accumulation and the refuted kernels/dev/fp8_accum_model.cpp (16-term steps,
// alignment to the largest term's leading bit, no output truncation) give different answers; and
// the FP8 baseline built on it (forward_naive_fp8, reference/naive_fp8_mma.cpp) under the error rule.
#include <algorithm>
#include <cmath>
#include <optional>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "ioattn/fp8.hpp"
#include "ioattn/tolerance.hpp"
#include "reference.hpp"

using namespace ioattn;
using namespace ioattn::ref;

namespace {

float step(std::vector<float> a, std::vector<float> b, std::optional<float> c) {
  return fp8_mma_step(a, b, c);
}

// fp32 accumulation in order (what forward_naive does), for the comparison in each case.
float fp32_dot(const std::vector<float>& a, const std::vector<float>& b, float c) {
  for (size_t i = 0; i < a.size(); ++i) c += a[i] * b[i];
  return c;
}

bool all_e4m3(const std::vector<float>& v) { return representable(DType::fp8_e4m3, v); }

}  // namespace

// Step 3, alignment: C = 2^12 sets E = 12, so the quantum is 2^(12 - 13) = 0.5 and a product of
// 0.25 is shifted out entirely. fp32 keeps it.
TEST(Fp8MmaModel, AlignmentDropsBitsBelowTheQuantum) {
  EXPECT_EQ(step({0.25f}, {1.0f}, 4096.0f), 4096.0f);
  EXPECT_EQ(fp32_dot({0.25f}, {1.0f}, 4096.0f), 4096.25f);
}

// Step 3, toward zero: -0.75 aligned to a quantum of 0.5 is -0.5 (trunc(-1.5) = -1), not -1.0
// (floor, the AMD models' rounding) and not -0.75 (fp32). 4095.5 is exact in 13 bits below 2^11.
TEST(Fp8MmaModel, AlignmentTruncatesTowardZero) {
  EXPECT_EQ(step({-0.75f}, {1.0f}, 4096.0f), 4095.5f);
  EXPECT_EQ(fp32_dot({-0.75f}, {1.0f}, 4096.0f), 4095.25f);
}

// Step 5, the output: 8191.5 + 1 = 8192.5 is exact after alignment (quantum 0.5) but its leading one
// moved to 2^13, and 13 bits below it leave a quantum of 1: the register gets 8192. A model without
// the output truncation (the refuted one) and fp32 give 8192.5.
TEST(Fp8MmaModel, OutputKeeps13BitsBelowItsLeadingOne) {
  EXPECT_EQ(step({1.0f}, {1.0f}, 8191.5f), 8192.0f);
  EXPECT_EQ(fp32_dot({1.0f}, {1.0f}, 8191.5f), 8192.5f);
  // C alone is written back truncated to 13 bits (1 + 2^-20 -> 1): not an fp32 register copy.
  EXPECT_EQ(step({0.0f}, {0.0f}, 1.0f + 0x1p-20f), 1.0f);
}

// Step 1, products keep their unnormalized exponent e_a + e_b: 1.875 * 1.875 = 3.515625 has
// exponent 0 (significand 3.52 in [2, 4)), so E = 0 and the quantum is 2^-13, which keeps the
// product -2^-13 (2^-7 is an e4m3 subnormal: exponent -6). The sum 3.515625 - 2^-13 then has its
// leading one at 2^1 and is truncated to 2^-12: 3.515380859375. Aligning to the leading one of the
// largest term (2^1, the refuted model) drops -2^-13 and gives 3.515625; fp32 gives 3.5155029296875.
TEST(Fp8MmaModel, ProductsAlignByTheirUnnormalizedExponent) {
  const std::vector<float> a = {1.875f, 0x1p-7f}, b = {1.875f, -0x1p-6f};
  ASSERT_TRUE(all_e4m3(a) && all_e4m3(b));
  EXPECT_EQ(step(a, b, std::nullopt), 3.515380859375f);
  EXPECT_EQ(fp32_dot(a, b, 0.0f), 3.5155029296875f);
}

// Step 1, subnormal inputs: 2^-9 (the smallest e4m3 subnormal) has exponent -6, not -9, so the
// product 2^-9 * 1 sets E = -6 and the quantum 2^-19 cuts C = 2^-9 + 2^-20 to 2^-9: the sum is 2^-8.
// With the exponent -9 the quantum would be 2^-22 and the sum 2^-8 + 2^-20, as in fp32.
TEST(Fp8MmaModel, SubnormalsAlignByTheMinimumExponent) {
  EXPECT_EQ(step({0x1p-9f}, {1.0f}, 0x1p-9f + 0x1p-20f), 0x1p-8f);
  EXPECT_EQ(fp32_dot({0x1p-9f}, {1.0f}, 0x1p-9f + 0x1p-20f), 0x1p-8f + 0x1p-20f);
  // e5m2: its smallest subnormal 2^-16 counts with exponent -14, so C = 2^-16 + 2^-28 loses 2^-28.
  EXPECT_EQ(fp8_mma_step(std::vector<float>{0x1p-16f}, std::vector<float>{1.0f}, 0x1p-16f + 0x1p-28f, Fp8Format::e5m2,
                         Fp8Format::e5m2),
            0x1p-15f);
  EXPECT_EQ(fp8_min_exp(Fp8Format::e4m3), -6);
  EXPECT_EQ(fp8_min_exp(Fp8Format::e5m2), -14);
}

// kFp8MmaGroup = 32: one alignment and one output truncation for all 32 products. Products 4096,
// 4096, 0.5 in the first half and -4096 in the second: as one group the exact sum 4096.5 is kept
// (13 bits below 2^12: quantum 0.5). Two 16-term steps normalize 8192.5 to 8192 in between (quantum
// 1 below 2^13) and end at 4096.
TEST(Fp8MmaModel, OneInstructionIsOneGroupOf32) {
  std::vector<float> a(32, 0.0f), b(32, 0.0f);
  a[0] = 64.0f, b[0] = 64.0f;   // 4096
  a[1] = 64.0f, b[1] = 64.0f;   // 4096
  a[2] = 0.5f, b[2] = 1.0f;     // 0.5
  a[16] = -64.0f, b[16] = 64.0f;  // -4096
  EXPECT_EQ(fp8_mma_dot(a, b, 0), 4096.5f);
  const std::span<const float> sa(a), sb(b);
  const float first = fp8_mma_step(sa.subspan(0, 16), sb.subspan(0, 16), std::nullopt);
  EXPECT_EQ(first, 8192.0f);
  EXPECT_EQ(fp8_mma_step(sa.subspan(16, 16), sb.subspan(16, 16), first), 4096.0f);  // the 16-term reading
}

// Instruction chaining (v09's S): d = 64 is two k32 instructions. The first gives 4096; the second
// holds 32 products of 0.25 (exactly 8 on their own). Never promoted, the second instruction sees
// C = 4096 and every 0.25 is shifted out: 4096. Promoted per instruction, it starts fresh (8, exact)
// and the fp32 add gives 4104, the exact dot product. promote = 2 (a chunk of both) is the first.
TEST(Fp8MmaModel, PromotionPerInstructionKeepsLaterProducts) {
  std::vector<float> a(64, 0.0f), b(64, 0.0f);
  a[0] = 64.0f, b[0] = 64.0f;
  for (int x = 32; x < 64; ++x) a[x] = 0.5f, b[x] = 0.5f;
  EXPECT_EQ(fp8_mma_dot(a, b, 0), 4096.0f);
  EXPECT_EQ(fp8_mma_dot(a, b, 2), 4096.0f);
  EXPECT_EQ(fp8_mma_dot(a, b, 1), 4104.0f);
  EXPECT_EQ(fp32_dot(a, b, 0.0f), 4104.0f);
  // A length that is not a multiple of 32 is padded with zero products: the same as 64 terms.
  std::vector<float> a40(a.begin(), a.begin() + 40), b40(b.begin(), b.begin() + 40);
  EXPECT_EQ(fp8_mma_dot(a40, b40, 1), 4096.0f + 8 * 0.25f);
}

// Where every aligned term and the sum fit in 14 bits the model is exact: small integers (|a|, |b|
// <= 8 as e4m3 integers, |sum| < 2^13 so the quantum is at most 1). And one instruction's result
// does not depend on the order of its products (one alignment, an exact sum).
TEST(Fp8MmaModel, ExactWhenItFitsAndOrderFreeWithinAStep) {
  std::mt19937 gen(20261201);
  std::uniform_int_distribution<int> small(-8, 8);
  std::normal_distribution<float> wide(0.0f, 40.0f);
  for (int t = 0; t < 200; ++t) {
    std::vector<float> a(32), b(32);
    for (int i = 0; i < 32; ++i) a[i] = float(small(gen)), b[i] = float(small(gen));
    ASSERT_TRUE(all_e4m3(a) && all_e4m3(b));
    double exact = 0;
    for (int i = 0; i < 32; ++i) exact += double{a[i]} * b[i];
    EXPECT_EQ(double{fp8_mma_step(a, b, std::nullopt)}, exact);
    for (int i = 0; i < 32; ++i) a[i] = fp8_round(wide(gen), Fp8Format::e4m3), b[i] = fp8_round(wide(gen), Fp8Format::e4m3);
    const float c = wide(gen) * 1000.0f, before = fp8_mma_step(a, b, c);
    std::vector<int> perm(32);
    for (int i = 0; i < 32; ++i) perm[i] = i;
    std::shuffle(perm.begin(), perm.end(), gen);
    std::vector<float> pa(32), pb(32);
    for (int i = 0; i < 32; ++i) pa[i] = a[perm[i]], pb[i] = b[perm[i]];
    EXPECT_EQ(fp8_mma_step(pa, pb, c), before);
    // The result is an e8m13 value: its low 10 fp32 significand bits are zero.
    int e = 0;
    const float f = std::frexp(before, &e);
    EXPECT_EQ(std::ldexp(f, 14), std::trunc(std::ldexp(f, 14))) << before;
  }
}

TEST(Fp8MmaModel, ParseNamesTheModes) {
  EXPECT_FALSE(Fp8Accumulation::parse("fp32")->tensor_core);
  EXPECT_EQ(Fp8Accumulation::parse("mma")->s_promote, 1);
  EXPECT_EQ(Fp8Accumulation::parse("mma:fast")->s_promote, 0);
  EXPECT_EQ(Fp8Accumulation::parse("mma:4")->s_promote, 4);
  EXPECT_EQ(Fp8Accumulation::parse("mma:4")->name(), "mma:4");
  EXPECT_EQ(Fp8Accumulation::parse("mma:fast")->name(), "mma:fast");
  for (const char* bad : {"", "mma:", "mma:0", "mma:-1", "mma:x", "fp16", "mma:12345"})
    EXPECT_FALSE(Fp8Accumulation::parse(bad).has_value()) << bad;
}

// ---------------------------------------------------------------------------------------------
// The baseline (forward_naive_fp8)

namespace {

// The GPU check's FP8 problem (kernels/dev/fp8_promote.sh): B 1, H 2, causal, scale 0.1, q/k descale
// 0.1, fp16 output; n and d smaller where the test only needs the mechanism.
AttnProblem gpu_like(int64_t n, int64_t d) {
  AttnProblem p;
  p.batch = 1;
  p.heads_q = p.heads_kv = 2;
  p.seqlen_q = p.seqlen_k = n;
  p.head_dim = d;
  p.scale = 0.1;
  p.causal = true;
  p.dtype = DType::fp8_e4m3;
  p.fp8.q_descale = {0.1f};
  p.fp8.k_descale = {0.1f};
  p.fp8.out = DType::fp16;
  return p;
}

RuleResult rule(const AttnProblem& p, const std::vector<float>& out, const std::vector<double>& ref,
                const std::vector<float>& base) {
  return check_error_rule(std::span<const float>(out), std::span<const double>(ref), std::span<const float>(base),
                          p.output_dtype(), kForwardFactor);
}

std::vector<float> rounded(const AttnProblem& p, const std::vector<double>& x) {
  std::vector<float> r(x.size());
  for (size_t e = 0; e < x.size(); ++e) r[e] = round_to(p.output_dtype(), static_cast<float>(x[e]));
  return r;
}

}  // namespace

TEST(Fp8MmaBaseline, Fp32ModeIsForwardNaiveAndBadInputIsRefused) {
  AttnProblem p = gpu_like(45, 64);
  const Inputs in = make_inputs(p, 3, {.logit_std = 10});
  const Forward a = forward_naive(p, in), b = forward_naive_fp8(p, in, Fp8Accumulation{});
  EXPECT_EQ(a.o, b.o);
  EXPECT_EQ(a.lse, b.lse);
  AttnProblem bf = p;
  bf.dtype = DType::bf16;
  bf.fp8 = {};
  const Inputs ib = make_inputs(bf, 3);
  EXPECT_THROW(forward_naive_fp8(bf, ib, Fp8Accumulation{true, 1}), ReferenceError);
  EXPECT_THROW(forward_naive_fp8(p, in, Fp8Accumulation{true, -1}), ReferenceError);
}

// At benign logits the tensor core's 13 bits are invisible behind P~'s e4m3 rounding: the model's
// baseline passes the rule judged against the fp32 baseline, in every mode, with GQA, a window and
// fully masked rows (Nq > Nk, causal).
TEST(Fp8MmaBaseline, BenignLogitsMatchTheFp32Baseline) {
  AttnProblem p = gpu_like(70, 96);
  p.heads_q = 4;
  p.seqlen_k = 50;  // causal, bottom-right: the first 20 query rows see no key
  p.fp8.v_descale = {2.0f};
  const Inputs in = make_inputs(p, 11, {.logit_std = 1});
  const Forward64 r64 = forward_f64(p, in);
  const Forward f32 = forward_naive(p, in);
  for (const char* mode : {"mma:fast", "mma:1", "mma:2"}) {
    const Forward m = forward_naive_fp8(p, in, *Fp8Accumulation::parse(mode));
    const RuleResult ro = rule(p, m.o, r64.o, f32.o), rl = rule(p, m.lse, r64.lse, f32.lse);
    EXPECT_TRUE(ro.pass) << ro.describe(std::string("O ") + mode);
    EXPECT_TRUE(rl.pass) << rl.describe(std::string("LSE ") + mode);
    for (int64_t i = 0; i < 20; ++i) EXPECT_EQ(m.lse[static_cast<size_t>(p.lse_offset(0, 0, i))], -INFINITY);
  }
}

// At logits of std 100 (codes near +-448, |S| ~ 250 logits) the model's S error shows in LSE: never
// promoted it is far above fp32's (~1e-5 logits; a 13-bit accumulator: ~1e-1), promotion per
// instruction lowers it severalfold. The H200 measured the same for v09 (kernels/dev/NOTES.md: LSE
// errors per seed equal to the model's to three digits); this pins the mechanism on the CPU.
TEST(Fp8MmaBaseline, LargeLogitsShowTheShortAccumulatorInLse) {
  const AttnProblem p = gpu_like(96, 128);
  const Inputs in = make_inputs(p, 1, {.logit_std = 100});
  const Forward64 r64 = forward_f64(p, in);
  auto lse_err = [&](const Forward& f) { return error_stats(std::span<const float>(f.lse), std::span<const double>(r64.lse)).max_err; };
  const double e32 = lse_err(forward_naive(p, in));
  const double fast = lse_err(forward_naive_fp8(p, in, Fp8Accumulation{true, 0}));
  const double prom = lse_err(forward_naive_fp8(p, in, Fp8Accumulation{true, 1}));
  EXPECT_LT(e32, 1e-3);
  EXPECT_GT(fast, 100 * e32) << "fast " << fast << " fp32 " << e32;
  EXPECT_LT(prom, fast / 2) << "promoted " << prom << " fast " << fast;
  EXPECT_GT(prom, 10 * e32) << "promoted " << prom << " fp32 " << e32;
}

// The rule with the model's baseline still rejects planted errors: an element off by 10% of max|O|
// and a forgotten v_descale, at benign and at large logits; the float64 output rounded once to
// the output dtype passes.
TEST(Fp8MmaBaseline, RuleStillRejectsPlantedErrors) {
  for (double logit_std : {1.0, 100.0}) {
    AttnProblem p = gpu_like(128, 64);
    p.fp8.v_descale = {3.0f};
    const Inputs in = make_inputs(p, 5, {.logit_std = logit_std});
    const Forward64 r64 = forward_f64(p, in);
    for (int promote : {0, 1}) {
      const Forward base = forward_naive_fp8(p, in, Fp8Accumulation{true, promote});
      const std::vector<float> good = rounded(p, r64.o);
      EXPECT_TRUE(rule(p, good, r64.o, base.o).pass) << rule(p, good, r64.o, base.o).describe("rounded f64");
      std::vector<float> bad = good;
      const size_t at = bad.size() / 3;
      bad[at] = round_to(p.output_dtype(), static_cast<float>(bad[at] + 0.1 * max_abs(r64.o)));
      const RuleResult rb = rule(p, bad, r64.o, base.o);
      EXPECT_FALSE(rb.pass) << rb.describe("planted 10%") << " logit std " << logit_std << " promote " << promote;
      std::vector<float> no_vd = good;
      for (float& x : no_vd) x = round_to(p.output_dtype(), x / 3.0f);
      EXPECT_FALSE(rule(p, no_vd, r64.o, base.o).pass) << "forgotten v_descale, logit std " << logit_std;
    }
  }
}

// Packed layouts go through the dense computation per sequence, as forward_naive does.
TEST(Fp8MmaBaseline, PackedSequencesEqualTheirDenseProblems) {
  AttnProblem p = gpu_like(40, 64);
  p.batch = 2;
  p.layout.cu_seqlens_q = {0, 17, 40};
  p.layout.total_q = 40;
  p.layout.cu_seqlens_k = {0, 23, 61};
  p.layout.total_k = 61;
  p.seqlen_q = 23;
  p.seqlen_k = 38;
  ASSERT_FALSE(p.validate().has_value()) << *p.validate();
  const Inputs in = make_inputs(p, 9, {.logit_std = 30});
  const Forward all = forward_naive_fp8(p, in, Fp8Accumulation{true, 1});
  for (int64_t b = 0; b < 2; ++b) {
    const AttnProblem sp = sequence_problem(p, b);
    Inputs s;
    s.q.resize(static_cast<size_t>(sp.q_elems()));
    s.k.resize(static_cast<size_t>(sp.kv_elems()));
    s.v.resize(static_cast<size_t>(sp.kv_elems()));
    const int64_t qw = p.heads_q * p.head_dim, kw = p.heads_kv * p.head_dim;
    for (int64_t i = 0; i < sp.seqlen_q; ++i)
      std::copy_n(in.q.begin() + p.q_row(b, i) * qw, qw, s.q.begin() + i * qw);
    for (int64_t j = 0; j < sp.seqlen_k; ++j) {
      std::copy_n(in.k.begin() + p.kv_row(b, j) * kw, kw, s.k.begin() + j * kw);
      std::copy_n(in.v.begin() + p.kv_row(b, j) * kw, kw, s.v.begin() + j * kw);
    }
    const Forward one = forward_naive_fp8(sp, s, Fp8Accumulation{true, 1});
    for (int64_t i = 0; i < sp.seqlen_q; ++i)
      for (int64_t x = 0; x < qw; ++x)
        ASSERT_EQ(all.o[static_cast<size_t>(p.q_row(b, i) * qw + x)], one.o[static_cast<size_t>(i * qw + x)]);
  }
}

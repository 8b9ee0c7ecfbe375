// Named cases for the spec: causal alignment, validate() messages, the FLOP convention and the
// error rule (NaN never passes, equal infinities do).
#include <cmath>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "ioattn/flops.hpp"
#include "ioattn/problem.hpp"
#include "ioattn/tolerance.hpp"

using namespace ioattn;

TEST(Mask, CausalIsBottomRightAligned) {
  // seqlen_q = 2, seqlen_k = 5: the last query sees all 5 keys, the first sees 4.
  const MaskSpec m{2, 5, true, -1, -1};
  EXPECT_EQ(m.key_end(1), 5);
  EXPECT_EQ(m.key_end(0), 4);
  EXPECT_TRUE(m.allowed(0, 3));
  EXPECT_FALSE(m.allowed(0, 4));
}

TEST(Mask, LeadingRowsFullyMaskedWhenSeqlenQExceedsSeqlenK) {
  const MaskSpec m{5, 2, true, -1, -1};
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(m.row_fully_masked(i)) << "row " << i;
  EXPECT_EQ(m.key_end(3), 1);
  EXPECT_EQ(m.key_end(4), 2);
}

TEST(Mask, SlidingWindow) {
  const MaskSpec m{10, 10, false, 2, 1};
  EXPECT_EQ(m.key_begin(5), 3);
  EXPECT_EQ(m.key_end(5), 7);
}

TEST(Problem, ValidateNamesTheConstraint) {
  AttnProblem p;
  EXPECT_FALSE(p.validate());
  p.heads_q = 6;
  p.heads_kv = 4;
  ASSERT_TRUE(p.validate());
  EXPECT_NE(p.validate()->find("divisible"), std::string::npos);
  p = AttnProblem{};
  p.seqlen_k = 0;
  ASSERT_TRUE(p.validate());
  EXPECT_NE(p.validate()->find("seqlen_k"), std::string::npos);
  p = AttnProblem{};
  p.window_left = -3;
  EXPECT_TRUE(p.validate());
  p = AttnProblem{};
  p.scale = std::numeric_limits<double>::quiet_NaN();
  EXPECT_TRUE(p.validate());
}

TEST(Flops, Convention) {
  AttnProblem p;
  p.batch = 2;
  p.heads_q = 3;
  p.seqlen_q = p.seqlen_k = 10;
  p.head_dim = 8;
  EXPECT_DOUBLE_EQ(conventional_fwd_flops(p), 4.0 * 2 * 3 * 10 * 10 * 8);
  EXPECT_DOUBLE_EQ(conventional_flops(p, Pass::fwdbwd), 3.5 * conventional_fwd_flops(p));
  p.causal = true;
  EXPECT_DOUBLE_EQ(conventional_fwd_flops(p), 2.0 * 2 * 3 * 10 * 10 * 8);
}

TEST(ErrorRule, NanNeverPasses) {
  const std::vector<double> ref{1.0, 2.0};
  const std::vector<float> base{1.0f, 2.0f};
  const std::vector<float> out{1.0f, std::numeric_limits<float>::quiet_NaN()};
  const auto r = check_error_rule<float, float>(out, ref, base, DType::fp32, kForwardFactor);
  EXPECT_FALSE(r.pass);
  EXPECT_EQ(r.out.nan_count, 1);
  EXPECT_EQ(r.out.worst, 1);
}

TEST(ErrorRule, EqualInfinitiesPassAndMismatchFails) {
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> ref{-inf, 0.5};
  const std::vector<float> base{-INFINITY, 0.5f};
  const std::vector<float> good{-INFINITY, 0.5f};
  const std::vector<float> bad{0.0f, 0.5f};
  EXPECT_TRUE((check_error_rule<float, float>(good, ref, base, DType::fp32, kForwardFactor).pass));
  EXPECT_FALSE((check_error_rule<float, float>(bad, ref, base, DType::fp32, kForwardFactor).pass));
}

TEST(ErrorRule, BoundScalesWithBaselineError) {
  const std::vector<double> ref{1.0};
  const std::vector<float> base{1.01f};  // a baseline 1e-2 off allows ~2e-2
  EXPECT_TRUE((check_error_rule<float, float>(std::vector<float>{1.019f}, ref, base, DType::fp32, 2.0).pass));
  EXPECT_FALSE((check_error_rule<float, float>(std::vector<float>{1.03f}, ref, base, DType::fp32, 2.0).pass));
}

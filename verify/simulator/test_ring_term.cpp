// verify/simulator/test_ring_term.cpp: the warp-specialized design's K/V ring term (`ring_latency`,
// simulate.cpp expected_tiled) and its wgmma efficiency, against what must hold:
//   - the term is Little's law as the README states it: ring_latency x CUs = max(0, (tiles L / occ +
//     c) / S - c), c the tile loop's SM-seconds without it, L the catalog's
//     calibrated_ring_stage_latency_s, S the launch's stages, occ the CTAs per CU;
//   - it is 0 without stages (--stages 0), without the catalog field, and for any other overlap design
//     (intra-warpgroup with stages given);
//   - the expected time does not grow with the ring depth, and the term vanishes once S >= 1 + tiles L
//     / (occ c);
//   - the warp-specialized forward takes calibrated_ws_wgmma_efficiency (the matrix_issue term names it),
//     the intra-warpgroup one calibrated_wgmma_efficiency; a backward loop neither;
//   - that efficiency is the one at d = 128 and scales as (d / 128)^g, g the catalog's
//     calibrated_ws_wgmma_head_dim_exponent, at most 1; the intra-warpgroup one does not scale.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "simulator/simulator.hpp"
#include "catalog.hpp"

using namespace ioattn;
using namespace ioattn::sim;

namespace {

using test::h200;

AttnProblem problem(int64_t n, int64_t d, bool causal) {
  AttnProblem p;
  p.batch = 2;
  p.heads_q = p.heads_kv = 16;
  p.seqlen_q = p.seqlen_k = n;
  p.head_dim = d;
  p.dtype = DType::fp16;
  p.causal = causal;
  return p;
}

Tiling ws_tiling(int64_t br, int64_t bc, int64_t stages, int64_t occ, const char* design) {
  Tiling t;
  t.strategy = Strategy::fa2;
  t.Br = br;
  t.Bc = bc;
  t.stages = stages;
  t.ctas_per_cu = occ;
  t.design = *parse_design(design);
  return t;
}

const ExpectedTerm& term(const KernelResult& k, const std::string& name) {
  for (const auto& t : k.expected_terms)
    if (t.term == name) return t;
  throw SimError("no term " + name);
}

// The tile loop's SM-seconds before the ring term (the terms that make up c_pipe).
double c_pipe(const KernelResult& k, double cus) {
  double s = 0.0;
  for (const char* n : {"matrix_issue", "partial_tiles", "exp_sfu", "fp32_vector", "overlap_hidden", "dq_atomics"})
    s += term(k, n).seconds;
  return s * cus;
}

const KernelResult& main_kernel(const Result& r) {
  for (const auto& k : r.kernels)
    if (k.tiles > 0) return k;
  throw SimError("no tiled kernel");
}

constexpr const char* kWs = "wgmma/warp-specialized/fragments/walk=up";
constexpr const char* kIntra = "wgmma/intra-warpgroup/fragments/walk=up";

}  // namespace

TEST(RingTerm, IsLittlesLaw) {
  const Machine& m = h200();
  ASSERT_TRUE(m.calibrated_ring_stage_latency_s.has_value());
  const double L = m.calibrated_ring_stage_latency_s->value, cus = m.compute_units.value;
  int with_term = 0;
  for (int64_t d : {64, 128, 256})
    for (int64_t n : {1024, 4096, 16384})
      for (bool causal : {false, true})
        for (int64_t s : {1, 2, 3, 4})
          for (int64_t occ : {1, 2}) {
            const Tiling t = ws_tiling(128, d == 256 ? 64 : 128, s, occ, kWs);
            const Result r = simulate_unchecked(problem(n, d, causal), m, t, Options{});
            const KernelResult& k = main_kernel(r);
            const double c = c_pipe(k, cus);
            const double want = std::max(0.0, (static_cast<double>(k.tiles) * L / static_cast<double>(occ) + c) /
                                                  static_cast<double>(s) - c);
            const double got = term(k, "ring_latency").seconds * cus;
            EXPECT_NEAR(got, want, 1e-9 * std::max(1.0, want) + 1e-12 * c)
                << "d " << d << " N " << n << " causal " << causal << " S " << s << " occ " << occ;
            with_term += got > 0.0;
          }
  EXPECT_GT(with_term, 0);  // the grid has shallow rings that wait on L
}

TEST(RingTerm, ZeroWithoutStagesFieldOrDesign) {
  const Machine& m = h200();
  Machine bare = m;
  bare.calibrated_ring_stage_latency_s.reset();
  for (int64_t d : {64, 128}) {
    const AttnProblem p = problem(8192, d, false);
    EXPECT_EQ(term(main_kernel(simulate_unchecked(p, m, ws_tiling(128, 128, 0, 1, kWs), {})), "ring_latency").seconds, 0.0);
    EXPECT_EQ(term(main_kernel(simulate_unchecked(p, bare, ws_tiling(128, 128, 2, 1, kWs), {})), "ring_latency").seconds,
              0.0);
    EXPECT_EQ(term(main_kernel(simulate_unchecked(p, m, ws_tiling(128, 128, 2, 1, kIntra), {})), "ring_latency").seconds,
              0.0);
    // Without stages the warp-specialized time is that of the machine without the field.
    EXPECT_DOUBLE_EQ(simulate_unchecked(p, m, ws_tiling(128, 128, 0, 1, kWs), {}).time_s,
                     simulate_unchecked(p, bare, ws_tiling(128, 128, 2, 1, kWs), {}).time_s);
  }
}

TEST(RingTerm, DeeperRingIsNeverSlowerAndHidesL) {
  const Machine& m = h200();
  const double L = m.calibrated_ring_stage_latency_s->value, cus = m.compute_units.value;
  for (int64_t d : {64, 128, 256})
    for (bool causal : {false, true}) {
      const AttnProblem p = problem(4096, d, causal);
      double prev = 1e300;
      for (int64_t s = 1; s <= 16; ++s) {
        const Result r = simulate_unchecked(p, m, ws_tiling(128, d == 256 ? 64 : 128, s, 1, kWs), {});
        EXPECT_LE(r.time_s, prev * (1 + 1e-12)) << "d " << d << " S " << s;
        prev = r.time_s;
        const KernelResult& k = main_kernel(r);
        const double c = c_pipe(k, cus);
        if (static_cast<double>(s) >= 1.0 + static_cast<double>(k.tiles) * L / c) {
          EXPECT_EQ(term(k, "ring_latency").seconds, 0.0) << "d " << d << " S " << s;
        }
      }
    }
}

TEST(RingTerm, WarpSpecializedTakesItsOwnEfficiency) {
  const Machine& m = h200();
  ASSERT_TRUE(m.calibrated_ws_wgmma_efficiency.has_value());
  const AttnProblem p = problem(4096, 128, false);
  const auto ws = term(main_kernel(simulate_unchecked(p, m, ws_tiling(128, 128, 2, 1, kWs), {})), "matrix_issue");
  const auto intra = term(main_kernel(simulate_unchecked(p, m, ws_tiling(128, 128, 2, 1, kIntra), {})), "matrix_issue");
  EXPECT_EQ(ws.parameter, "calibrated_ws_wgmma_efficiency");
  EXPECT_DOUBLE_EQ(ws.value, m.calibrated_ws_wgmma_efficiency->value);
  EXPECT_EQ(intra.parameter, "calibrated_wgmma_efficiency");
  // Same FLOPs, rates in inverse proportion to the efficiencies.
  EXPECT_NEAR(ws.seconds * ws.value, intra.seconds * intra.value, 1e-12 * intra.seconds);
  Options bwd;
  bwd.pass = Pass::bwd;
  for (const auto& k : simulate_unchecked(p, m, ws_tiling(128, 128, 2, 1, kWs), bwd).kernels)
    if (k.tiles > 0) {
      EXPECT_NE(term(k, "matrix_issue").parameter, "calibrated_ws_wgmma_efficiency");
    }
}

TEST(RingTerm, WarpSpecializedEfficiencyScalesWithHeadDim) {
  const Machine& m = h200();
  ASSERT_TRUE(m.calibrated_ws_wgmma_efficiency.has_value());
  ASSERT_TRUE(m.calibrated_ws_wgmma_head_dim_exponent.has_value());
  const double e128 = m.calibrated_ws_wgmma_efficiency->value, g = m.calibrated_ws_wgmma_head_dim_exponent->value;
  const double intra128 = term(main_kernel(simulate_unchecked(problem(4096, 128, false), m, ws_tiling(128, 128, 2, 1, kIntra), {})),
                               "matrix_issue").value;
  double prev = 0.0;
  for (int64_t d : {64, 96, 128, 192, 256}) {
    const AttnProblem p = problem(4096, d, false);
    const int64_t bc = d > 128 ? 64 : 128;
    const auto ws = term(main_kernel(simulate_unchecked(p, m, ws_tiling(128, bc, 2, 1, kWs), {})), "matrix_issue");
    EXPECT_NEAR(ws.value, std::min(1.0, e128 * std::pow(static_cast<double>(d) / 128.0, g)), 1e-12) << "d " << d;
    if (g > 0) {
      EXPECT_GT(ws.value, prev) << "d " << d;  // grows with d while below 1
    }
    prev = ws.value;
    const auto intra = term(main_kernel(simulate_unchecked(p, m, ws_tiling(128, bc, 2, 1, kIntra), {})), "matrix_issue");
    EXPECT_DOUBLE_EQ(intra.value, intra128) << "d " << d;
  }
}

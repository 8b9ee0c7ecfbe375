// verify/simulator/test_l2_drift.cpp: the L2 wave model's drift (nest.cpp, count_tiled's
// drift_tiles_per_tile; the catalog's calibrated_cta_drift_tiles_per_tile), against what must hold:
//   - it vanishes where every wave's working set fits the cache (whatever the drift), in the first
//     wave of a kernel (a grid of one wave: its CTAs start together), and for a drift of 0;
//   - a drifted lockstep wave is charged exactly as the README's rule says: on a bh_major grid with
//     one head per wave, wave 0 reads K and V once, every later wave (drift spread beyond the cache)
//     reads them once plus its shared re-reads x (1 - C / WS_drift), WS_drift the K and V unions;
//   - it only ever adds reads (monotone in the drift), never beyond the no-L2 count, and leaves a
//     kernel that is not in lockstep (causal, walk=down) as it was;
//   - on the H200 catalog (its fitted value) a head-fastest grid at N = 64k (v06's launch) reads more
//     than without the drift, and N = 16k (the counters: full sharing) reads the same.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "simulator/nest.hpp"
#include "simulator/simulator.hpp"
#include "catalog.hpp"

using namespace ioattn;
using namespace ioattn::sim;

namespace {

using test::h200;

AttnProblem problem(int64_t heads, int64_t n, int64_t d, bool causal) {
  AttnProblem p;
  p.batch = 1;
  p.heads_q = p.heads_kv = heads;
  p.seqlen_q = p.seqlen_k = n;
  p.head_dim = d;
  p.dtype = DType::fp16;
  p.causal = causal;
  return p;
}

// The fa2 forward kernel of the plan, counted with the given cache, CUs, occupancy and drift.
KernelResult fwd(const AttnProblem& p, const Tiling& t, int64_t cus, int64_t occ, int64_t cache, double drift) {
  Options o;
  o.pass = Pass::fwd;
  const detail::Plan plan = detail::build_plan(p, t, o);
  return detail::count_tiled(p, t, plan.kernels.at(0).t, cus, occ, cache, false, 0, drift);
}

const TensorTraffic& tensor(const KernelResult& k, const std::string& name) {
  for (const auto& x : k.tensors)
    if (x.tensor == name) return x;
  throw SimError("no tensor " + name);
}

Tiling tile(int64_t br, int64_t bc, GridOrder order) {
  Tiling t;
  t.Br = br;
  t.Bc = bc;
  t.grid_order = order;
  return t;
}

TEST(L2Drift, VanishesWhereWavesFitOrInTheFirstWave) {
  for (auto order : {GridOrder::bh_major, GridOrder::qblock_major_rev})
    for (bool causal : {false, true}) {
      const AttnProblem p = problem(4, 2048, 64, causal);
      const Tiling t = tile(64, 64, order);
      const int64_t huge = int64_t{1} << 40;
      EXPECT_EQ(fwd(p, t, 8, 1, huge, 0.0).hbm.read, fwd(p, t, 8, 1, huge, 1e3).hbm.read);
      // One wave (4 heads x 32 blocks = 128 CTAs on 128 CUs): nothing walked before it.
      EXPECT_EQ(fwd(p, t, 128, 1, 4096, 0.0).hbm.read, fwd(p, t, 128, 1, 4096, 1e3).hbm.read);
    }
}

TEST(L2Drift, DriftedWavesPayTheLiveSpanRule) {
  // bh_major, T_out = 16 query blocks per head, 16 CUs x 1 CTA: wave w is head w.
  const int64_t heads = 4, n = 1024, d = 64, e = 2, br = 64, bc = 64, cus = 16, cache = 64 * 1024;
  const AttnProblem p = problem(heads, n, d, false);
  const Tiling t = tile(br, bc, GridOrder::bh_major);
  const KernelResult still = fwd(p, t, cus, 1, cache, 0.0), drift = fwd(p, t, cus, 1, cache, 1e3);
  const double rb = static_cast<double>(d * e), union_rows = static_cast<double>(n);
  // A spread beyond the head's length: the live span is the whole K and V union (Q, O, LSE not live).
  const double ws_drift = 2.0 * union_rows * rb, miss = 1.0 - static_cast<double>(cache) / ws_drift;
  const double shared_rows = static_cast<double>(cus - 1) * union_rows;  // each K row read by 16 CTAs
  const double want = rb * (heads * union_rows + (heads - 1) * shared_rows * miss);
  EXPECT_EQ(tensor(still, "K").hbm.read, static_cast<int64_t>(heads * n * d * e));  // lockstep: once
  EXPECT_NEAR(static_cast<double>(tensor(drift, "K").hbm.read), want, 1.0);
  EXPECT_NEAR(static_cast<double>(tensor(drift, "V").hbm.read), want, 1.0);
  EXPECT_EQ(tensor(drift, "Q").hbm.read, tensor(still, "Q").hbm.read);  // no shared re-reads of Q
  EXPECT_EQ(drift.l2_regime, "mixed");  // wave 0 in lockstep, waves 1-3 drifted
  EXPECT_EQ(fwd(p, t, cus, 1, cache, 1e3).l2_regime, drift.l2_regime);
}

TEST(L2Drift, OnlyAddsReadsAndNeedsLockstep) {
  const Tiling t = tile(64, 64, GridOrder::qblock_major_rev);
  const AttnProblem p = problem(8, 4096, 64, false);
  int64_t last = -1;
  for (double b : {0.0, 1e-3, 3e-3, 1e-2, 3e-2, 0.1, 1.0}) {
    const KernelResult k = fwd(p, t, 16, 2, 256 * 1024, b);
    EXPECT_GE(k.hbm.read, last) << "drift " << b;
    EXPECT_LE(k.hbm.read, k.hbm_no_l2.read) << "drift " << b;
    last = k.hbm.read;
  }
  EXPECT_GT(last, fwd(p, t, 16, 2, 256 * 1024, 0.0).hbm.read);
  // Causal, walked down from the diagonal: not in lockstep, the drift changes nothing.
  Tiling down = t;
  down.design.walk = KvWalk::down;
  const AttnProblem c = problem(8, 4096, 64, true);
  EXPECT_EQ(fwd(c, down, 16, 2, 256 * 1024, 0.0).hbm.read, fwd(c, down, 16, 2, 256 * 1024, 1.0).hbm.read);
}

TEST(L2Drift, H200HeadFastestGrid) {
  const Machine& m = h200();
  ASSERT_TRUE(m.calibrated_cta_drift_tiles_per_tile.has_value());
  Machine still = m;
  still.calibrated_cta_drift_tiles_per_tile.reset();
  AttnProblem p = problem(16, 65536, 128, false);
  p.dtype = DType::bf16;
  Tiling t = tile(128, 128, GridOrder::qblock_major_rev);
  t.ctas_per_cu = 1;
  Options o;
  const Result a = simulate_unchecked(p, m, t, o), b = simulate_unchecked(p, still, t, o);
  EXPECT_GT(a.hbm.read, b.hbm.read);
  EXPECT_LE(a.hbm.read, a.hbm_no_l2.read);
  p.seqlen_q = p.seqlen_k = 16384;
  EXPECT_EQ(simulate_unchecked(p, m, t, o).hbm.read, simulate_unchecked(p, still, t, o).hbm.read);
}

}  // namespace

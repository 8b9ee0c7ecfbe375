// verify/simulator/test_context_parallel.cpp: the context-parallel (ring) model against what must hold.
//
//   - cp_chunks: every position once, lengths within one, zigzag's pairs (r, 2P - 1 - r) (the same
//     layout python/ring_attention.py cuts);
//   - the blocks of every (rank, step) cover exactly the whole problem's visible (query, key) pairs:
//     N^2 unmasked, N (N + 1) / 2 causal, for P = 1..8, both layouts, odd N;
//   - causal imbalance: contiguous chunks leave rank 0 idle after the diagonal and load the last
//     rank on every step (imbalance near 2P / (P + 1)); zigzag is balanced (near 1);
//   - the link: an infinitely fast one exposes no transfer (T_P = the compute bound); a slow one
//     makes T_P at least the P - 1 transfers; the backward also moves the fp32 dK, dV;
//   - refusals with one line: window, seqlen_q != seqlen_k, ranks 0, N below the chunk count,
//     fwdbwd, an unknown link name, a machine file without link fields.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "simulator/context_parallel.hpp"

using namespace ioattn;
using namespace ioattn::sim;

namespace {

const std::vector<Machine>& catalog() {
  static const auto c = load_catalog(default_catalog_dir());
  return c;
}

AttnProblem problem(int64_t n, bool causal, int64_t hq = 8, int64_t hkv = 8) {
  AttnProblem p;
  p.batch = 1;
  p.heads_q = hq;
  p.heads_kv = hkv;
  p.seqlen_q = p.seqlen_k = n;
  p.head_dim = 64;
  p.dtype = DType::bf16;
  p.causal = causal;
  return p;
}

const Tiling kTiling{.strategy = Strategy::fa2, .Br = 64, .Bc = 64};

CpLink link(double bw, double lat = 0.0) { return {"test", {bw, "test"}, {lat > 0 ? lat : 1e-300, "test"}}; }

}  // namespace

TEST(ContextParallel, ChunksCoverTheSequence) {
  for (int64_t p = 1; p <= 8; ++p)
    for (auto layout : {CpLayout::contiguous, CpLayout::zigzag})
      for (int64_t n : {2 * p, 2 * p + 1, 97 * p + 3, int64_t{1000}}) {
        const auto ch = cp_chunks(n, p, layout);
        ASSERT_EQ(static_cast<int64_t>(ch.size()), p);
        std::multiset<int64_t> pos;
        int64_t lo = n, hi = 0;
        for (const auto& r : ch)
          for (const auto& [s, len] : r) {
            lo = std::min(lo, len);
            hi = std::max(hi, len);
            for (int64_t i = 0; i < len; ++i) pos.insert(s + i);
          }
        EXPECT_EQ(static_cast<int64_t>(pos.size()), n);
        EXPECT_EQ(static_cast<int64_t>(std::set<int64_t>(pos.begin(), pos.end()).size()), n);
        EXPECT_LE(hi - lo, 1);
        if (layout == CpLayout::zigzag) {
          std::vector<std::pair<int64_t, int64_t>> all;
          for (const auto& r : ch) all.insert(all.end(), r.begin(), r.end());
          std::sort(all.begin(), all.end());
          for (int64_t r = 0; r < p; ++r) {
            ASSERT_EQ(ch[r].size(), 2u);
            EXPECT_EQ(ch[r][0], all[r]);                // the r-th of the 2P chunks
            EXPECT_EQ(ch[r][1], all[2 * p - 1 - r]);    // and its mirror
          }
        }
      }
}

TEST(ContextParallel, BlocksCoverTheVisiblePairsOnce) {
  const auto& m = find_machine(catalog(), "h200");
  for (int64_t p = 1; p <= 8; ++p)
    for (auto layout : {CpLayout::contiguous, CpLayout::zigzag})
      for (bool causal : {false, true}) {
        const int64_t n = 64 * p + 2 * p + 1;  // odd, not a multiple of the chunk count
        const auto r = simulate_cp(problem(n, causal), m, kTiling, {}, p, layout, link(1e30));
        const int64_t want = causal ? n * (n + 1) / 2 : n * n;
        EXPECT_EQ(r.score_pairs, want) << "P " << p << " " << cp_layout_name(layout) << " causal " << causal;
        EXPECT_EQ(static_cast<int64_t>(r.steps.size()), p);
      }
}

// Work per rank in visible (query, key) pairs, exactly: zigzag equal within a few rows, contiguous
// growing with the rank (rank 0: its diagonal only; rank P - 1: the diagonal and P - 1 full blocks).
TEST(ContextParallel, CausalWorkPerRank) {
  const int64_t n = 8 * 1000 + 5;
  for (int64_t ranks : {2, 4, 8}) {
    for (auto layout : {CpLayout::contiguous, CpLayout::zigzag}) {
      const auto ch = cp_chunks(n, ranks, layout);
      std::vector<int64_t> pairs(static_cast<size_t>(ranks), 0);
      for (int64_t r = 0; r < ranks; ++r)
        for (int64_t s = 0; s < ranks; ++s) {
          const auto b = cp_block(ch, r, s, true);
          pairs[r] += b.nq == 0 ? 0 : b.causal ? b.nq * (b.nq + 1) / 2 : b.nq * b.nk;
        }
      const auto [lo, hi] = std::minmax_element(pairs.begin(), pairs.end());
      if (layout == CpLayout::zigzag) {
        // only the one-row length differences of the chunks remain: O(N) pairs of about N^2 / (2P)
        EXPECT_LE(static_cast<double>(*hi - *lo) / static_cast<double>(*lo), 0.002) << ranks;
      } else {
        EXPECT_EQ(lo - pairs.begin(), 0);
        EXPECT_EQ(hi - pairs.begin(), ranks - 1);
        EXPECT_NEAR(static_cast<double>(*hi) / static_cast<double>(*lo), 2.0 * static_cast<double>(ranks) - 1.0,
                    0.01 * static_cast<double>(ranks));
      }
    }
  }
}

// In time (the single-GPU model per block): a large problem, where waves hide the blocks' shapes.
TEST(ContextParallel, CausalImbalanceAndTheZigzagFix) {
  const auto& m = find_machine(catalog(), "h200");
  const auto p = problem(131072, true, 32, 32);
  for (int64_t ranks : {2, 4, 8}) {
    const auto c = simulate_cp(p, m, kTiling, {}, ranks, CpLayout::contiguous, link(1e30));
    const auto z = simulate_cp(p, m, kTiling, {}, ranks, CpLayout::zigzag, link(1e30));
    const double ideal = 2.0 * static_cast<double>(ranks) / static_cast<double>(ranks + 1);
    EXPECT_GT(c.imbalance, 0.8 * ideal) << ranks;  // the last rank does about 2P / (P + 1) x the mean
    EXPECT_LT(z.imbalance, 1.05) << ranks;
    EXPECT_LT(z.time_s, c.time_s) << ranks;
    // Contiguous: after the diagonal, rank 0 skips every block; zigzag: every rank computes every step.
    for (size_t s = 1; s < c.steps.size(); ++s) {
      EXPECT_EQ(c.steps[s].compute_min_s, 0.0);
      EXPECT_GT(z.steps[s].compute_min_s, 0.0);
    }
    // Not causal: both layouts do equal work.
    const auto u = simulate_cp(problem(131072, false, 32, 32), m, kTiling, {}, ranks, CpLayout::contiguous, link(1e30));
    EXPECT_LT(u.imbalance, 1.01);
  }
}

TEST(ContextParallel, LinkOverlap) {
  const auto& m = find_machine(catalog(), "h200");
  const auto p = problem(16384, false);
  for (int64_t ranks : {2, 4, 8}) {
    const auto fast = simulate_cp(p, m, kTiling, {}, ranks, CpLayout::contiguous, link(1e30));
    EXPECT_NEAR(fast.time_s, fast.compute_bound_s, 1e-12 * fast.time_s);
    EXPECT_GT(fast.efficiency, 0.0);
    // 1 MB/s: the transfers dominate; K and V of one chunk per step, P - 1 steps.
    const auto slow = simulate_cp(p, m, kTiling, {}, ranks, CpLayout::contiguous, link(1e6));
    const double chunk_bytes = 2.0 * 8 * static_cast<double>(16384 / ranks) * 64 * 2;
    EXPECT_GE(slow.time_s, static_cast<double>(ranks - 1) * chunk_bytes / 1e6 * (1 - 1e-9));
    EXPECT_GT(slow.exposed_transfer_s, 0.0);
    EXPECT_EQ(slow.steps.back().transfer_bytes, 0);  // the forward's last step receives nothing
    Options b;
    b.pass = Pass::bwd;
    const auto slow_b = simulate_cp(p, m, kTiling, b, ranks, CpLayout::contiguous, link(1e6));
    EXPECT_GT(slow_b.steps[1].transfer_bytes, slow.steps[1].transfer_bytes);  // + fp32 dK, dV
    EXPECT_GT(slow_b.time_s, slow.time_s);
  }
  const auto one = simulate_cp(p, m, kTiling, {}, 1, CpLayout::contiguous, link(1e6));
  EXPECT_EQ(one.steps.size(), 1u);
  EXPECT_EQ(one.steps[0].transfer_bytes, 0);
  EXPECT_GT(one.efficiency, 0.9);  // the single block plus its merge
  EXPECT_LE(one.efficiency, 1.0);
}

TEST(ContextParallel, CatalogLinks) {
  const auto dir = default_catalog_dir();
  const auto& h200 = find_machine(catalog(), "h200");
  const auto& mi = find_machine(catalog(), "mi300x");
  EXPECT_EQ(load_cp_link(dir, h200, "nvlink").bandwidth.value, 450e9);
  EXPECT_EQ(load_cp_link(dir, h200, "peer").bandwidth.value, 450e9);
  EXPECT_EQ(load_cp_link(dir, mi, "xgmi").bandwidth.value, 64e9);
  EXPECT_GT(load_cp_link(dir, mi, "pcie").bandwidth.value, 0.0);
  EXPECT_THROW(load_cp_link(dir, mi, "nvlink"), SimError);
  EXPECT_THROW(load_cp_link(dir, h200, "ethernet"), SimError);
  try {
    load_cp_link(dir, find_machine(catalog(), "a100-80gb"), "peer");
    ADD_FAILURE() << "a machine without link fields was accepted";
  } catch (const SimError& e) {
    EXPECT_NE(std::string(e.what()).find("link_peer_bandwidth"), std::string::npos) << e.what();
  }
}

TEST(ContextParallel, Refusals) {
  const auto& m = find_machine(catalog(), "h200");
  auto win = problem(1024, false);
  win.window_left = 16;
  EXPECT_THROW(simulate_cp(win, m, kTiling, {}, 2, CpLayout::contiguous, link(1e9)), SimError);
  auto rect = problem(1024, false);
  rect.seqlen_q = 512;
  EXPECT_THROW(simulate_cp(rect, m, kTiling, {}, 2, CpLayout::contiguous, link(1e9)), SimError);
  EXPECT_THROW(simulate_cp(problem(1024, false), m, kTiling, {}, 0, CpLayout::contiguous, link(1e9)), SimError);
  EXPECT_THROW(simulate_cp(problem(15, true), m, kTiling, {}, 8, CpLayout::zigzag, link(1e9)), SimError);
  Options fb;
  fb.pass = Pass::fwdbwd;
  EXPECT_THROW(simulate_cp(problem(1024, false), m, kTiling, fb, 2, CpLayout::contiguous, link(1e9)), SimError);
}

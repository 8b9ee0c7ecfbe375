// verify/kernels/tile_scheduler.cpp: the persistent grid's work-tile order (kernels/tile_scheduler.hpp)
// on the CPU: every (b, h, query block) visited exactly once by the round robin over the CTAs, for odd
// shapes, GQA/MQA, masked or not, any grid size; the masked order heavy first (non-increasing key
// tiles) where the header says it is exact, and the round robin's balance bound; the unmasked order
// head major with each GQA group's tiles consecutive; the serpentine assignment a permutation within
// rounds that balances no worse; the second masked order (head major, each head's query blocks heavy
// first) a permutation too, heavy first within each head; the busiest CTA's work against a brute
// force; the choice between the masked orders at the shapes whose outcome the header's model
// predicts, and never more than 3 % above heavy first's balance; the order names known to the
// simulator.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "ioattn/mask.hpp"
#include "kernels/tile_scheduler.hpp"
#include "simulator/simulator.hpp"

namespace ioattn::kernels {
namespace {

struct Shape {
  int64_t batch, heads_q, heads_kv, seqlen_q, seqlen_k;
  bool causal;
  int64_t window_left, window_right;
  std::string what() const {
    return "B " + std::to_string(batch) + " Hq " + std::to_string(heads_q) + " Hkv " + std::to_string(heads_kv) +
           " Nq " + std::to_string(seqlen_q) + " Nk " + std::to_string(seqlen_k) + (causal ? " causal" : "") +
           " window " + std::to_string(window_left) + "," + std::to_string(window_right);
  }
  MaskSpec mask() const { return {seqlen_q, seqlen_k, causal, window_left, window_right}; }
};

const Shape kShapes[] = {
    {1, 1, 1, 1, 1, false, -1, -1},          {1, 1, 1, 1, 1, true, -1, -1},
    {3, 8, 2, 17, 113, false, -1, -1},       {3, 8, 2, 17, 113, true, -1, -1},
    {2, 6, 1, 1013, 1013, true, -1, -1},     {2, 6, 1, 1013, 203, true, -1, -1},  // Nq > Nk: masked rows
    {1, 16, 16, 777, 2203, true, -1, -1},    {5, 4, 4, 1000, 1000, false, 64, 0},
    {2, 8, 2, 1000, 1000, false, 37, 5},     {16, 16, 16, 1024, 1024, true, -1, -1},
    {4, 32, 8, 4096, 4096, false, -1, -1},   {2, 12, 3, 4097, 4097, false, -1, 300},
};
constexpr int kBrs[] = {64, 128, 192};  // v08's query tiles (64: two CTAs per SM)
constexpr int kBcs[] = {64, 112, 128, 176, 192};  // v08's key tiles (112: d 192, 176: d 128)

int64_t cost(const TileScheduler& s, const Shape& sh, int br, int bc, int64_t t) {
  const WorkTile w = s.tile(static_cast<int>(t));
  const int64_t i0 = int64_t{w.q} * br, i1 = std::min<int64_t>(i0 + br, sh.seqlen_q);
  return key_tiles(sh.mask(), i0, i1, bc).count();
}

// The orders a problem can take: head major unmasked; heavy first or head major reversed masked.
std::vector<TileOrder> orders_of(const Shape& sh) {
  if (!sh.mask().is_masked()) return {TileOrder::head_major};
  return {TileOrder::heavy_first, TileOrder::head_major_rev};
}

TEST(TileScheduler, EveryTileOnceForAnyGrid) {
  for (const Shape& sh : kShapes)
    for (int br : kBrs)
      for (TileOrder order : orders_of(sh)) {
        TileScheduler s = make_tile_scheduler(sh.batch, sh.heads_q, sh.seqlen_q, br, sh.mask());
        ASSERT_EQ(s.q_blocks, (sh.seqlen_q + br - 1) / br) << sh.what();
        ASSERT_EQ(s.order, sh.mask().is_masked() ? TileOrder::heavy_first : TileOrder::head_major) << sh.what();
        s.order = order;
        for (int64_t sms : {1, 7, 132, 100000}) {
          const int64_t grid = persistent_ctas(s.tiles(), sms);
          ASSERT_EQ(grid, std::max<int64_t>(1, std::min(s.tiles(), sms)));
          std::vector<int> seen(static_cast<size_t>(s.tiles()), 0);
          for (int64_t cta = 0; cta < grid; ++cta)
            for (int64_t t = cta; t < s.tiles(); t += grid) {  // the kernel's loop
              const WorkTile w = s.tile(static_cast<int>(t));
              ASSERT_TRUE(w.b >= 0 && w.b < sh.batch && w.h >= 0 && w.h < sh.heads_q && w.q >= 0 && w.q < s.q_blocks)
                  << sh.what() << " t " << t;
              ++seen[static_cast<size_t>((int64_t{w.b} * sh.heads_q + w.h) * s.q_blocks + w.q)];
            }
          for (size_t x = 0; x < seen.size(); ++x)
            ASSERT_EQ(seen[x], 1) << sh.what() << " br " << br << " grid " << grid << " tile " << x << " order "
                                  << s.grid_order();
        }
      }
}

// Causal (no left window): key tiles never increase along the order, and the round robin gives CTA 0
// the most work, at most one tile's cost more than any other CTA.
TEST(TileScheduler, CausalIsLongestFirstAndBalanced) {
  int checked = 0;
  for (const Shape& sh : kShapes) {
    if (!sh.mask().is_masked() || sh.window_left >= 0) continue;
    for (int br : kBrs)
      for (int bc : kBcs) {
        const TileScheduler s = make_tile_scheduler(sh.batch, sh.heads_q, sh.seqlen_q, br, sh.mask());
        ASSERT_EQ(s.order, TileOrder::heavy_first);
        int64_t max_cost = 0;
        for (int64_t t = 0; t < s.tiles(); ++t) {
          const int64_t c = cost(s, sh, br, bc, t);
          max_cost = std::max(max_cost, c);
          if (t > 0) {
            ASSERT_GE(cost(s, sh, br, bc, t - 1), c) << sh.what() << " br " << br << " bc " << bc << " t " << t;
          }
        }
        for (int64_t grid : {7, 132}) {
          std::vector<int64_t> work(static_cast<size_t>(grid), 0);
          for (int64_t t = 0; t < s.tiles(); ++t) work[static_cast<size_t>(t % grid)] += cost(s, sh, br, bc, t);
          const int64_t hi = *std::max_element(work.begin(), work.end());
          const int64_t lo = *std::min_element(work.begin(), work.end());
          ASSERT_EQ(hi, work[0]) << sh.what();
          ASSERT_LE(hi - lo, max_cost) << sh.what() << " br " << br << " bc " << bc << " grid " << grid;
        }
        ++checked;
      }
  }
  EXPECT_GE(checked, 30);  // the causal shapes above, every tile
}

// Serpentine assignment (v08p under every IOATTN_V08P_ORDER but rr): for any grid, the slots a CTA walks still
// visit every tile once; each round holds the plain round robin's tiles (same waves); and under a
// causal mask the busiest CTA has no more work than under the plain round robin, and is within one
// tile's cost of the least busy.
// For the head-major masked order the permutation checks hold as well (its costs are not sorted
// across heads, so the balance bounds are heavy first's only).
TEST(TileScheduler, SerpentineIsAPermutationAndNoLessBalanced) {
  int checked = 0;
  for (const Shape& sh : kShapes)
    for (int br : kBrs)
      for (TileOrder order : orders_of(sh))
        for (int64_t sms : {1, 7, 132, 100000}) {
          TileScheduler rr = make_tile_scheduler(sh.batch, sh.heads_q, sh.seqlen_q, br, sh.mask());
          rr.order = order;
          const int64_t grid = persistent_ctas(rr.tiles(), sms);
          rr.ctas = static_cast<int>(grid);
          TileScheduler sp = rr;
          sp.serpentine = true;
          std::vector<int> seen(static_cast<size_t>(sp.tiles()), 0);
          for (int64_t t = 0; t < sp.tiles(); ++t) {
            const int p = sp.position(static_cast<int>(t));
            ASSERT_TRUE(p >= 0 && p < sp.tiles()) << sh.what() << " grid " << grid << " slot " << t;
            ASSERT_EQ(p / grid, t / grid) << sh.what() << " grid " << grid << " slot " << t;  // same round
            ++seen[static_cast<size_t>(p)];
            if (!sh.mask().is_masked()) {
              ASSERT_EQ(p, t) << sh.what();  // unmasked: unchanged
            } else if ((t / grid) % 2 == 1) {  // both masked orders: odd rounds reversed
              ASSERT_EQ(p, std::min<int64_t>(t / grid * grid + grid, sp.tiles()) - 1 - t % grid)
                  << sh.what() << " grid " << grid << " slot " << t << " order " << sp.grid_order();
            } else {
              ASSERT_EQ(p, t) << sh.what() << " grid " << grid << " order " << sp.grid_order();
            }
          }
          for (size_t x = 0; x < seen.size(); ++x) ASSERT_EQ(seen[x], 1) << sh.what() << " grid " << grid;
          // The kernel's walk (CTA c, rounds k while c + k * grid < tiles, tile(k, c)) covers every
          // (b, h, q) once.
          std::vector<int> walked(static_cast<size_t>(sp.tiles()), 0);
          for (int c = 0; c < grid; ++c)
            for (int k = 0; c + k * grid < sp.tiles(); ++k) {
              const WorkTile w = sp.tile(k, c);
              ++walked[static_cast<size_t>((int64_t{w.b} * sp.heads_q + w.h) * sp.q_blocks + w.q)];
            }
          for (size_t x = 0; x < walked.size(); ++x)
            ASSERT_EQ(walked[x], 1) << sh.what() << " grid " << grid << " order " << sp.grid_order();
          if (order != TileOrder::heavy_first || sh.window_left >= 0) continue;
          for (int bc : kBcs) {
            std::vector<int64_t> w_rr(static_cast<size_t>(grid), 0), w_sp = w_rr;
            int64_t max_cost = 0;
            for (int64_t t = 0; t < sp.tiles(); ++t) {
              w_rr[static_cast<size_t>(t % grid)] += cost(rr, sh, br, bc, t);
              w_sp[static_cast<size_t>(t % grid)] += cost(sp, sh, br, bc, t);
              max_cost = std::max(max_cost, cost(rr, sh, br, bc, t));
            }
            const auto [lo, hi] = std::minmax_element(w_sp.begin(), w_sp.end());
            ASSERT_LE(*hi, *std::max_element(w_rr.begin(), w_rr.end())) << sh.what() << " grid " << grid;
            ASSERT_LE(*hi - *lo, max_cost) << sh.what() << " br " << br << " bc " << bc << " grid " << grid;
            ++checked;
          }
        }
  EXPECT_GE(checked, 60);
}

// The cost model's case of the header: causal, B*N = 16k, d 128 (Br = Bc = 128), 16 heads, 132 CTAs:
// the plain round robin's busiest CTA is ~6 % over the mean at N 16k, the serpentine's under 1 %.
TEST(TileScheduler, SerpentineCancelsTheRoundRobinSurplus) {
  const Shape sh{1, 16, 16, 16384, 16384, true, -1, -1};
  TileScheduler rr = make_tile_scheduler(sh.batch, sh.heads_q, sh.seqlen_q, 128, sh.mask());
  rr.ctas = 132;
  TileScheduler sp = rr;
  sp.serpentine = true;
  std::vector<double> w_rr(132, 0.0), w_sp(132, 0.0);
  double total = 0;
  for (int64_t t = 0; t < rr.tiles(); ++t) {
    w_rr[static_cast<size_t>(t % 132)] += static_cast<double>(cost(rr, sh, 128, 128, t) + 1);
    w_sp[static_cast<size_t>(t % 132)] += static_cast<double>(cost(sp, sh, 128, 128, t) + 1);
    total += static_cast<double>(cost(rr, sh, 128, 128, t) + 1);
  }
  const double mean = total / 132;
  EXPECT_GT(*std::max_element(w_rr.begin(), w_rr.end()) / mean, 1.05);
  EXPECT_LT(*std::max_element(w_sp.begin(), w_sp.end()) / mean, 1.01);
}

// A causal problem's cost really varies (the LPT check above is not vacuous), and the reversed order
// is what makes it non-increasing: the same blocks in index order would increase.
TEST(TileScheduler, CausalCostsDiffer) {
  const Shape sh{2, 6, 1, 1013, 1013, true, -1, -1};
  const TileScheduler s = make_tile_scheduler(sh.batch, sh.heads_q, sh.seqlen_q, 128, sh.mask());
  EXPECT_GT(cost(s, sh, 128, 128, 0), cost(s, sh, 128, 128, s.tiles() - 1));
  EXPECT_EQ(s.tile(0).q, s.q_blocks - 1);  // the last (heaviest) query block first
}

// Unmasked: head major; every tile of one (b, h_kv) lies in one contiguous run of the order
// (its group's query heads, each with all its query blocks), and costs are all equal.
TEST(TileScheduler, UnmaskedIsHeadMajorByKvHead) {
  for (const Shape& sh : kShapes) {
    if (sh.mask().is_masked()) continue;
    const int64_t group = sh.heads_q / sh.heads_kv;
    const TileScheduler s = make_tile_scheduler(sh.batch, sh.heads_q, sh.seqlen_q, 128, sh.mask());
    ASSERT_EQ(s.order, TileOrder::head_major);
    std::vector<int64_t> first(static_cast<size_t>(sh.batch * sh.heads_kv), -1), last = first, count = first;
    for (int64_t t = 0; t < s.tiles(); ++t) {
      const WorkTile w = s.tile(static_cast<int>(t));
      const size_t kv = static_cast<size_t>(w.b * sh.heads_kv + w.h / group);
      if (first[kv] < 0) first[kv] = t, count[kv] = 0;
      last[kv] = t;
      ++count[kv];
      ASSERT_EQ(w.q, t % s.q_blocks) << sh.what();
      ASSERT_EQ(cost(s, sh, 128, 128, t), cost(s, sh, 128, 128, 0)) << sh.what();
    }
    for (size_t kv = 0; kv < first.size(); ++kv)
      ASSERT_EQ(last[kv] - first[kv] + 1, count[kv]) << sh.what() << " kv head " << kv << " not contiguous";
  }
}

// Masked: within one query block the query heads of a GQA group are consecutive.
TEST(TileScheduler, MaskedKeepsGqaGroupsTogether) {
  const Shape sh{3, 8, 2, 17, 113, true, -1, -1};
  const TileScheduler s = make_tile_scheduler(sh.batch, sh.heads_q, sh.seqlen_q, 128, sh.mask());
  const int64_t group = sh.heads_q / sh.heads_kv;
  for (int64_t t = 0; t + 1 < s.tiles(); ++t) {
    const WorkTile a = s.tile(static_cast<int>(t)), b = s.tile(static_cast<int>(t + 1));
    if (a.q != b.q) continue;
    if (a.b != b.b || a.h / group != b.h / group) {
      ASSERT_EQ(b.h % group, 0) << t;  // a new group starts at its first query head
    } else {
      ASSERT_EQ(b.h, a.h + 1) << t;
    }
  }
}

// Head major, heavy first within a head: each head's Tr tiles are one contiguous run of the order,
// its query blocks from the last to the first, so under a causal mask (no left window) the cost
// never increases within a head.
TEST(TileScheduler, HeadMajorRevIsHeavyFirstWithinEachHead) {
  int checked = 0;
  for (const Shape& sh : kShapes) {
    if (!sh.mask().is_masked()) continue;
    for (int br : kBrs) {
      TileScheduler s = make_tile_scheduler(sh.batch, sh.heads_q, sh.seqlen_q, br, sh.mask());
      s.order = TileOrder::head_major_rev;
      for (int64_t t = 0; t < s.tiles(); ++t) {
        const WorkTile w = s.tile(static_cast<int>(t));
        ASSERT_EQ(int64_t{w.b} * sh.heads_q + w.h, t / s.q_blocks) << sh.what() << " t " << t;
        ASSERT_EQ(w.q, s.q_blocks - 1 - t % s.q_blocks) << sh.what() << " t " << t;
        if (sh.window_left >= 0 || t % s.q_blocks == 0) continue;
        for (int bc : kBcs) {
          ASSERT_GE(cost(s, sh, br, bc, t - 1), cost(s, sh, br, bc, t))
              << sh.what() << " br " << br << " bc " << bc << " t " << t;
          ++checked;
        }
      }
    }
  }
  EXPECT_GE(checked, 1000);
}

// The busiest CTA's work (key tiles + 1 per tile) by brute force: every slot t of the kernel's loop
// goes to CTA t % grid, its tile from tile(t) (with the divisions busiest_cta_work avoids).
int64_t busiest_brute(const TileScheduler& s, const Shape& sh, int br, int bc) {
  std::vector<int64_t> work(static_cast<size_t>(s.ctas), 0);
  for (int64_t t = 0; t < s.tiles(); ++t) work[static_cast<size_t>(t % s.ctas)] += cost(s, sh, br, bc, t) + 1;
  return *std::max_element(work.begin(), work.end());
}

TEST(TileScheduler, BusiestCtaWorkMatchesBruteForce) {
  int checked = 0;
  for (const Shape& sh : kShapes)
    for (int br : kBrs)
      for (int bc : kBcs)
        for (TileOrder order : orders_of(sh))
          for (bool serpentine : {false, true})
            for (int64_t sms : {1, 7, 132, 100000}) {
              TileScheduler s = make_tile_scheduler(sh.batch, sh.heads_q, sh.seqlen_q, br, sh.mask());
              s.order = order;
              s.serpentine = serpentine;
              s.ctas = static_cast<int>(persistent_ctas(s.tiles(), sms));
              ASSERT_EQ(busiest_cta_work(s, sh.mask(), br, bc), busiest_brute(s, sh, br, bc))
                  << sh.what() << " br " << br << " bc " << bc << " grid " << s.ctas << " order " << s.grid_order()
                  << " serpentine " << serpentine;
              ++checked;
            }
  EXPECT_GE(checked, 500);
}

// The busiest CTA's work over the mean, under the serpentine assignment, for the report below.
double imbalance(TileScheduler s, const Shape& sh, int br, int bc, TileOrder order) {
  s.order = order;
  s.serpentine = true;
  int64_t total = 0;
  for (int64_t t = 0; t < s.tiles(); ++t) total += cost(s, sh, br, bc, t) + 1;
  return static_cast<double>(busiest_brute(s, sh, br, bc)) * s.ctas / static_cast<double>(total);
}

// The two shapes of the header's model, causal d 128 (Br = Bc = 128), 16 heads, 132 CTAs:
// batch 32, N 512 (head major reads the compulsory bytes there, for a busiest CTA a few % over the
// mean) takes head major; batch 1, N 16k (head major's busiest CTA ~1.47x the mean) stays heavy
// first.
TEST(TileScheduler, ChoiceFollowsTheModelAtShortAndLongN) {
  struct Case {
    Shape sh;
    TileOrder expected;
  };
  const Case cases[] = {{{32, 16, 16, 512, 512, true, -1, -1}, TileOrder::head_major_rev},
                        {{1, 16, 16, 16384, 16384, true, -1, -1}, TileOrder::heavy_first}};
  for (const Case& c : cases) {
    TileScheduler s = make_tile_scheduler(c.sh.batch, c.sh.heads_q, c.sh.seqlen_q, 128, c.sh.mask());
    s.ctas = static_cast<int>(persistent_ctas(s.tiles(), 132));
    const double heavy = imbalance(s, c.sh, 128, 128, TileOrder::heavy_first),
                 head = imbalance(s, c.sh, 128, 128, TileOrder::head_major_rev);
    std::printf("%s: busiest CTA / mean, heavy first %.4f, head major %.4f\n", c.sh.what().c_str(), heavy, head);
    EXPECT_EQ(choose_masked_order(s, c.sh.mask(), 128, 128), c.expected) << c.sh.what();
  }
}

// Over every shape, tile and grid: the chosen order's busiest CTA (by brute force, not by the
// function the choice uses) is at most 3 % above heavy first's; unmasked problems stay head major;
// both outcomes occur.
TEST(TileScheduler, ChoiceNeverBalancesMoreThanThreePercentWorse) {
  int head = 0, heavy = 0;
  for (const Shape& sh : kShapes)
    for (int br : kBrs)
      for (int bc : kBcs)
        for (int64_t sms : {1, 7, 132}) {
          TileScheduler s = make_tile_scheduler(sh.batch, sh.heads_q, sh.seqlen_q, br, sh.mask());
          s.ctas = static_cast<int>(persistent_ctas(s.tiles(), sms));
          s.serpentine = true;
          const TileOrder chosen = choose_masked_order(s, sh.mask(), br, bc);
          if (!sh.mask().is_masked()) {
            ASSERT_EQ(chosen, TileOrder::head_major) << sh.what();
            continue;
          }
          ASSERT_NE(chosen, TileOrder::head_major) << sh.what();
          TileScheduler c = s, h = s;
          c.order = chosen;
          h.order = TileOrder::heavy_first;
          ASSERT_LE(busiest_brute(c, sh, br, bc) * 100, busiest_brute(h, sh, br, bc) * 103)
              << sh.what() << " br " << br << " bc " << bc << " grid " << s.ctas;
          ++(chosen == TileOrder::head_major_rev ? head : heavy);
        }
  EXPECT_GT(head, 0);
  EXPECT_GT(heavy, 0);
}

// Above kMaxTilesForOrderChoice tiles the choice is not evaluated: heavy first.
TEST(TileScheduler, ChoiceSkippedForHugeGrids) {
  const Shape sh{1024, 1024, 1024, 256, 256, true, -1, -1};  // 2^21 tiles at Br 128
  TileScheduler s = make_tile_scheduler(sh.batch, sh.heads_q, sh.seqlen_q, 128, sh.mask());
  s.ctas = 132;
  ASSERT_GT(s.tiles(), kMaxTilesForOrderChoice);
  EXPECT_EQ(choose_masked_order(s, sh.mask(), 128, 128), TileOrder::heavy_first);
}

// The names the launch reports (LaunchConfig::grid_order) are ones the simulator parses, to the
// non-persistent order with the same waves.
// The head-major masked order is modeled as bh_major (the same heads per wave; the reversal within a
// head is not modeled).
TEST(TileScheduler, GridOrderNamesKnownToTheSimulator) {
  const TileScheduler masked{1, 1, 1, TileOrder::heavy_first}, unmasked{1, 1, 1, TileOrder::head_major},
      head{1, 1, 1, TileOrder::head_major_rev};
  EXPECT_EQ(sim::parse_grid_order(masked.grid_order()), sim::GridOrder::qblock_major_rev);
  EXPECT_EQ(sim::parse_grid_order(unmasked.grid_order()), sim::GridOrder::bh_major);
  EXPECT_STREQ(head.grid_order(), "persistent_bh_major_rev");
  EXPECT_EQ(sim::parse_grid_order(head.grid_order()), sim::GridOrder::bh_major);
  EXPECT_FALSE(sim::parse_grid_order("bh_major_rev"));  // a persistent order's name only
  EXPECT_FALSE(sim::parse_grid_order("persistent_"));
  EXPECT_FALSE(sim::parse_grid_order("persistent_nonsense"));
}

}  // namespace
}  // namespace ioattn::kernels

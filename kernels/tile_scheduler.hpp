// kernels/tile_scheduler.hpp: the work-tile order of a persistent forward grid (v08p_fa3_persistent).
//
// A persistent kernel launches one CTA per SM (or fewer, when there are fewer tiles) instead of one
// CTA per tile; each CTA walks the work tiles (b, h, query block) of one linear order,
//     tile t = blockIdx.x + k * gridDim.x,   k = 0, 1, ...   while t < tiles()
// (static round robin: every thread of every CTA computes its own sequence, nothing is shared or
// counted on the GPU). At any moment the G = gridDim.x CTAs work on about G consecutive tiles of the
// order, as a non-persistent grid with one CTA per SM dispatched in that order would: the order is
// the schedule. It is chosen per problem:
//   unmasked (every query block visits the same key tiles, so every tile costs the same):
//     head major, t = (b * Hq + h) * Tr + q. A head's Tr query blocks run side by side and read its
//     K_j, V_j at about the same time (one HBM read, the rest L2 hits); the query heads of one
//     GQA group (h = h_kv * group + g) are consecutive, so K/V stays in L2 for group * Tr tiles.
//     (the simulator's `bh_major`)
//   masked (causal or a window: query blocks differ in cost): longest processing time first,
//     t = (Tr - 1 - q) * (B * Hq) + (b * Hq + h): every head's last query block, then every head's
//     second last, ...; within one query block the heads in (b, h_kv, g) order, so the query heads
//     of one GQA group run side by side on the same K_j, V_j. Heavy first makes the round robin
//     balanced: with tiles sorted by non-increasing cost, CTA c's k-th tile never costs more than
//     CTA c - 1's, so CTA 0 has the most work and at most one tile's cost more than any other CTA
//     (the unit test checks both). (the simulator's `qblock_major_rev`)
//     The cost of query block q is its key-tile count (key_tiles below; what the kernel loops
//     over). key_begin and key_end both grow with the row (include/ioattn/mask.hpp), so without a
//     left window (causal, right windows) the cost grows with q and this order is exactly
//     non-increasing in cost (the unit test checks it). With a left window the first blocks are
//     cheaper (their window is clipped at key 0; reversed, that is still heavy first) and, without
//     causality, so are the last ones (clipped at Nk): there the order is heavy first only up to
//     those clipped blocks.
//   masked, short sequences (few query blocks per head, many heads): head major with each head's
//     query blocks heavy first, t = (b * Hq + h) * Tr + (Tr - 1 - q). Why: in the order above a
//     head's next query block comes B * Hq tiles later, after every head's K/V went through L2.
//     Measured (ncu on the H200, experiments/results/h200/2026-12-02_a109f05_ncu_shortn): causal
//     bf16 d 128, N 512, batch 32, 16 heads, v08p read 400 MB from DRAM where cuDNN read the
//     compulsory 201 MB (v08p's L2 hit rate 38 %), and took 1.43x cuDNN's time. A model of the
//     schedule (not a measurement: cost = key tiles + 1 per tile, 132 CTAs, an LRU L2 of 30 MB
//     over (head, key tile) blocks of K/V; it gives 402 MB at that point and 1149 MB at N 16k,
//     batch 1, 16 heads, where v08p read 1.18 GB: 2026-12-01_72352b5_v08p_order) says head major
//     reads about the compulsory bytes at N 512-4k (causal d 128, batch * N = 16k, 16 heads:
//     201 MB against 402/655/1140/1141 MB at N 512/1k/2k/4k). Its balance, exact in the same cost
//     (busiest_cta_work below, serpentine, 132 CTAs): at those shapes (Br = Bc = 128) the busiest
//     CTA has 3.1 % more than the mean work (heavy first 0.5-3.1 %), but once Tr is comparable
//     to the grid head major balances badly (N 16k, batch 1: 1.47x the mean against 1.004x;
//     d 64, Br 192, Bc 128, N 8k, batch 2: 1.29x against 1.009x), and at times also at mid N
//     with few heads (d 64, N 2048, batch 2, 32 heads: 1.16x against 1.07x). (the simulator's
//     `bh_major`: it models the grouping of heads into waves, not the reversal within a head)
//   The choice between the two masked orders is made per problem at launch, once the grid is
//     known (choose_masked_order below): the exact work of the busiest CTA under the serpentine
//     assignment, for both; head major when it is within kHeadMajorSlackPercent (3 %) of heavy
//     first's. Measured on the H200 with v08p (kernels/README.md, "v08p at short N"): at d 128 it
//     reads the compulsory bytes and is faster than heavy first at causal N 512-2k (at 4k by less
//     than two benchmark processes differ); at d 64 (Br 192)
//     it reads fewer bytes but is slower at N 512 and 4k, as fast at 1k-2k (why is not measured), so v08p's launch keeps
//     heavy first for Br 192 tiles (kernels/v08_fa3_warpspec.hip, chosen_masked_order).
// Why static and not an atomic tile counter (FA3 takes a counter for causal problems): nothing to
// reset between launches and no tile index to pass from the producer to the consumers; the price is
// the L2 grouping of the heavy-first order across query blocks (the head-major masked order wins it
// back where its balance allows). A counter balances any order, so FA3
// can cut the heads into L2-sized sections and run each section heavy first; under the round robin
// such a sawtooth of costs gave the busiest CTA up to 15 % more work than the mean for sections of
// 32 MiB of K/V, and up to 50 % for other section sizes, against 3-6 % for one heavy-first order (a
// model of the schedule, not a measurement: per-tile cost = key tiles + 1, 132 CTAs, causal,
// batch * N = 16k, N 512-8k, d 64 and 128).
#pragma once

#include <cstdint>
#include <vector>

#include "ioattn/config.hpp"
#include "ioattn/mask.hpp"

namespace ioattn::kernels {

// One work tile: batch b, query head h, query block q (rows q * Br .. q * Br + Br - 1).
struct WorkTile {
  int b, h, q;
};

// The key tiles of width bc that query rows [i0, i1) visit: [j_first, j_last), empty when every row
// of the block is fully masked (block_key_end <= block_key_begin). The kernel's loop bounds.
struct KeyTiles {
  int64_t j_first, j_last;
  IOATTN_HD constexpr int64_t count() const { return j_last - j_first; }
};
IOATTN_HD constexpr KeyTiles key_tiles(const MaskSpec& m, int64_t i0, int64_t i1, int64_t bc) {
  const int64_t kb = m.block_key_begin(i0, i1), ke = m.block_key_end(i0, i1);
  const int64_t j_first = kb / bc;
  return {j_first, ke > kb ? (ke + bc - 1) / bc : j_first};
}

// The order of the work tiles (the header above): head major (unmasked problems), heavy first
// (masked: every head's last query block, then every head's second last, ...) or head major with
// each head's query blocks heavy first (masked, short sequences).
enum class TileOrder : int { head_major, heavy_first, head_major_rev };

struct TileScheduler {
  int batch = 1, heads_q = 1;
  int q_blocks = 1;                         // Tr = ceil(Nq / Br)
  TileOrder order = TileOrder::head_major;  // heavy_first or head_major_rev for masked problems
  // Serpentine assignment (the masked orders only; ctas = the grid): round k of the round robin
  // (slots [k G, k G + G)) goes to the CTAs in reverse when k is odd, so CTA c takes order positions
  // c, 2G - 1 - c, 2G + c, ... Each round's set of tiles, and so each wave, is the plain round
  // robin's (the simulator's wave model holds for both); only which CTA of the wave takes which tile
  // changes. With heavy-first costs the plain round robin gives CTA 0 the heaviest tile of every
  // round, so its surplus grows with the rounds (up to ~6 % of the mean for causal d 128 at N 4k-16k
  // in the cost model of the header: key tiles + 1 per tile, 132 CTAs); reversing every other round
  // cancels it pairwise (~0.2 %, as a greedy dynamic scheduler). It also keeps the CTAs in step: under
  // the plain round robin the CTAs of lighter rounds run ahead into later query blocks, so the
  // working set of K/V outgrows L2 (v08p at causal d 128, N 16k on the H200 read 2.3x the DRAM bytes
  // of the serpentine assignment; kernels/v08_fa3_warpspec.hip). v08p's default; IOATTN_V08P_ORDER=rr
  // selects the plain round robin (heavy first).
  int ctas = 1;
  bool serpentine = false;

  IOATTN_HD constexpr int64_t tiles() const { return int64_t{batch} * heads_q * q_blocks; }
  IOATTN_HD constexpr bool masked() const { return order != TileOrder::head_major; }

  // The order position that CTA c takes in round k of the round robin (slot t = c + k * ctas, the
  // kernel's t = blockIdx.x + k * gridDim.x): the slot itself, or with serpentine the reversed
  // position within odd rounds (the last round, when partial, is reversed within its own width, so
  // the map is a permutation of [0, tiles())). The kernel walks k (no division by the grid size)
  // and the clipping is 32-bit (tiles() + ctas < 2^31, checked at launch): with a division per walk
  // and 64-bit clipping every v08p kernel spilled 8-40 bytes (kernels/README.md, PTXAS table).
  IOATTN_HD constexpr int position(int k, int c) const {
    if (!serpentine || !masked() || k % 2 == 0) return k * ctas + c;
    const int end = (k + 1) * ctas, total = batch * heads_q * q_blocks;  // the round's end, clipped
    return (end < total ? end : total) - 1 - c;
  }
  // The same for a slot t (host and tests).
  IOATTN_HD constexpr int position(int t) const {
    return serpentine && masked() ? position(t / ctas, t % ctas) : t;
  }

  // The work tile at order position t, 0 <= t < tiles(); 32-bit arithmetic (the launch refuses
  // problems of 2^31 tiles or more; batch * heads_q <= 2^20 by validate()). head_major_rev is head
  // major walked from the end, t' = tiles - 1 - t, with the heads renumbered back (u = H - 1 - u'):
  // u = t / Tr, q = Tr - 1 - t % Tr, sharing head major's division. Written as a branch of its own
  // (q = Tr - 1 - t % Tr) it made ptxas spill 4 bytes of stores (24 of loads) in v08p's default
  // d 256 kernel, with selects instead of branches 12 (nvcc 13.0, sm_90a, -Xptxas -v); this form
  // spills none there.
  IOATTN_HD constexpr WorkTile tile_at(int t) const {
    const int heads = batch * heads_q;
    int u = 0, q = 0;  // u = b * Hq + h
    if (order == TileOrder::heavy_first) {
      q = q_blocks - 1 - t / heads;
      u = t % heads;
    } else {
      const bool rev = order == TileOrder::head_major_rev;
      if (rev) t = heads * q_blocks - 1 - t;
      u = t / q_blocks;
      q = t % q_blocks;
      if (rev) u = heads - 1 - u;
    }
    return {u / heads_q, u % heads_q, q};
  }
  // The work tile of round-robin slot t, and of CTA c's round k.
  IOATTN_HD constexpr WorkTile tile(int slot) const { return tile_at(position(slot)); }
  IOATTN_HD constexpr WorkTile tile(int k, int c) const { return tile_at(position(k, c)); }

  // The simulator's name of the order (simulator/simulator.hpp GridOrder) for a persistent grid.
  constexpr const char* grid_order() const {
    switch (order) {
      case TileOrder::heavy_first: return "persistent_qblock_major_rev";
      case TileOrder::head_major_rev: return "persistent_bh_major_rev";
      case TileOrder::head_major: break;
    }
    return "persistent_bh_major";
  }
};

// The scheduler of a problem tiled in query blocks of br rows. Masked problems go heavy first
// until the launch, knowing the grid, chooses between the masked orders (choose_masked_order).
IOATTN_HD constexpr TileScheduler make_tile_scheduler(int64_t batch, int64_t heads_q, int64_t seqlen_q, int br,
                                                      const MaskSpec& m) {
  return {static_cast<int>(batch), static_cast<int>(heads_q), static_cast<int>((seqlen_q + br - 1) / br),
          m.is_masked() ? TileOrder::heavy_first : TileOrder::head_major};
}
// The launch sets the grid and the assignment once the CTA count is known: sched.ctas = grid,
// sched.serpentine unless IOATTN_V08P_ORDER=rr, sched.order by choose_masked_order unless
// IOATTN_V08P_ORDER names one (kernels/v08_fa3_warpspec.hip, persistent_assignment).

// The work of the busiest CTA under s's order and assignment (s.ctas CTAs): the maximum over CTAs
// of the sum of (key tiles + 1) over the CTA's tiles, the cost model of the header (the + 1 is a
// tile's fixed cost: Q load, epilogue). Exact, host only, O(tiles() + Tr + ctas) and without a
// division per tile: the positions are walked in order, each given to its CTA (the serpentine
// reversal is its own inverse within a round), and q follows the position by counting. m.seqlen_q
// is the problem's Nq (the last query block is clipped to it).
inline int64_t busiest_cta_work(const TileScheduler& s, const MaskSpec& m, int br, int bc) {
  std::vector<int64_t> cost(static_cast<size_t>(s.q_blocks));  // per query block
  for (int q = 0; q < s.q_blocks; ++q) {
    const int64_t i0 = int64_t{q} * br, i1 = i0 + br < m.seqlen_q ? i0 + br : m.seqlen_q;
    cost[static_cast<size_t>(q)] = key_tiles(m, i0, i1, bc).count() + 1;
  }
  std::vector<int64_t> work(static_cast<size_t>(s.ctas), 0);
  const int total = static_cast<int>(s.tiles()), heads = s.batch * s.heads_q;
  // q of position p: heavy first, q = Tr - 1 - p / heads (a run of `heads` positions per q);
  // otherwise r = p % Tr, q = r or Tr - 1 - r.
  int run = 0, r = 0, q_heavy = s.q_blocks - 1;
  for (int k = 0, p = 0; p < total; ++k)
    for (int o = 0; o < s.ctas && p < total; ++o, ++p) {
      const int c = s.position(k, o) - k * s.ctas;  // the CTA that takes position p
      int q = 0;
      if (s.order == TileOrder::heavy_first) {
        q = q_heavy;
        if (++run == heads) run = 0, --q_heavy;
      } else {
        q = s.order == TileOrder::head_major_rev ? s.q_blocks - 1 - r : r;
        if (++r == s.q_blocks) r = 0;
      }
      work[static_cast<size_t>(c)] += cost[static_cast<size_t>(q)];
    }
  int64_t most = 0;
  for (int64_t w : work) most = w > most ? w : most;
  return most;
}

// The masked order for a problem, given s with its grid (s.ctas) set: head major (heads' query
// blocks heavy first) when the busiest CTA's work under the serpentine assignment is at most
// 1 + kHeadMajorSlackPercent / 100 times heavy first's, else heavy first. Why 3 %: a few percent of
// balance is worth a large DRAM saving at short N (the model of the header: head major reads about
// the compulsory 201 MB at causal d 128 N 512-4k where heavy first reads 402-1141 MB, for a
// busiest CTA 3.1 % over the mean against 0.5-3.1 %), and the problems where head major balances
// much worse (long N, or mid N with few heads: 9-47 % in the shapes above) stay heavy first. Above kMaxTilesForOrderChoice
// tiles it keeps heavy first without evaluating: the evaluation walks every tile twice on the host
// at every launch (about 10 us at 2048 tiles, the count at batch * N = 16k, 16 heads, Br 128;
// about 5 ms at 2^20; one CPU core), so its cost is bounded. Unmasked problems keep head major.
inline constexpr int64_t kHeadMajorSlackPercent = 3;
inline constexpr int64_t kMaxTilesForOrderChoice = int64_t{1} << 20;
inline TileOrder choose_masked_order(const TileScheduler& s, const MaskSpec& m, int br, int bc) {
  if (!s.masked()) return TileOrder::head_major;
  if (s.tiles() > kMaxTilesForOrderChoice) return TileOrder::heavy_first;
  TileScheduler heavy = s, head = s;
  heavy.order = TileOrder::heavy_first;
  head.order = TileOrder::head_major_rev;
  heavy.serpentine = head.serpentine = true;
  const int64_t w_heavy = busiest_cta_work(heavy, m, br, bc), w_head = busiest_cta_work(head, m, br, bc);
  return w_head * 100 <= w_heavy * (100 + kHeadMajorSlackPercent) ? TileOrder::head_major_rev : TileOrder::heavy_first;
}

// CTAs of the persistent grid: one per SM, fewer when there are fewer tiles (at least one).
constexpr int64_t persistent_ctas(int64_t tiles, int64_t sms) {
  return tiles < sms ? (tiles > 0 ? tiles : 1) : sms;
}

}  // namespace ioattn::kernels

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
// Why static and not an atomic tile counter (FA3 takes a counter for causal problems): nothing to
// reset between launches and no tile index to pass from the producer to the consumers; the price is
// the L2 grouping of the masked order across query blocks. A counter balances any order, so FA3
// can cut the heads into L2-sized sections and run each section heavy first; under the round robin
// such a sawtooth of costs gave the busiest CTA up to 15 % more work than the mean for sections of
// 32 MiB of K/V, and up to 50 % for other section sizes, against 3-6 % for one heavy-first order (a
// model of the schedule, not a measurement: per-tile cost = key tiles + 1, 132 CTAs, causal,
// batch * N = 16k, N 512-8k, d 64 and 128).
#pragma once

#include <cstdint>

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

struct TileScheduler {
  int batch = 1, heads_q = 1;
  int q_blocks = 1;          // Tr = ceil(Nq / Br)
  bool heavy_first = false;  // the masked order (longest processing time first), else head major
  // Serpentine assignment (masked order only; ctas = the grid): round k of the round robin (slots
  // [k G, k G + G)) goes to the CTAs in reverse when k is odd, so CTA c takes order positions
  // c, 2G - 1 - c, 2G + c, ... Each round's set of tiles, and so each wave, is the plain round
  // robin's (the simulator's wave model holds for both); only which CTA of the wave takes which tile
  // changes. With heavy-first costs the plain round robin gives CTA 0 the heaviest tile of every
  // round, so its surplus grows with the rounds (up to ~6 % of the mean for causal d 128 at N 4k-16k
  // in the cost model of the header: key tiles + 1 per tile, 132 CTAs); reversing every other round
  // cancels it pairwise (~0.2 %, as a greedy dynamic scheduler). It also keeps the CTAs in step: under
  // the plain round robin the CTAs of lighter rounds run ahead into later query blocks, so the
  // working set of K/V outgrows L2 (v08p at causal d 128, N 16k on the H200 read 2.3x the DRAM bytes
  // of the serpentine assignment; kernels/v08_fa3_warpspec.hip). v08p's default; IOATTN_V08P_ORDER=rr
  // selects the plain round robin.
  int ctas = 1;
  bool serpentine = false;

  IOATTN_HD constexpr int64_t tiles() const { return int64_t{batch} * heads_q * q_blocks; }

  // The order position that CTA c takes in round k of the round robin (slot t = c + k * ctas, the
  // kernel's t = blockIdx.x + k * gridDim.x): the slot itself, or with serpentine the reversed
  // position within odd rounds (the last round, when partial, is reversed within its own width, so
  // the map is a permutation of [0, tiles())). The kernel walks k (no division by the grid size)
  // and the clipping is 32-bit (tiles() + ctas < 2^31, checked at launch): with a division per walk
  // and 64-bit clipping every v08p kernel spilled 8-40 bytes (kernels/README.md, PTXAS table).
  IOATTN_HD constexpr int position(int k, int c) const {
    if (!serpentine || !heavy_first || k % 2 == 0) return k * ctas + c;
    const int end = (k + 1) * ctas, total = batch * heads_q * q_blocks;  // the round's end, clipped
    return (end < total ? end : total) - 1 - c;
  }
  // The same for a slot t (host and tests).
  IOATTN_HD constexpr int position(int t) const {
    return serpentine && heavy_first ? position(t / ctas, t % ctas) : t;
  }

  // The work tile at order position t, 0 <= t < tiles(); 32-bit arithmetic (the launch refuses
  // problems of 2^31 tiles or more; batch * heads_q <= 2^20 by validate()).
  IOATTN_HD constexpr WorkTile tile_at(int t) const {
    const int heads = batch * heads_q;
    int u = 0, q = 0;  // u = b * Hq + h
    if (heavy_first) {
      q = q_blocks - 1 - t / heads;
      u = t % heads;
    } else {
      u = t / q_blocks;
      q = t % q_blocks;
    }
    return {u / heads_q, u % heads_q, q};
  }
  // The work tile of round-robin slot t, and of CTA c's round k.
  IOATTN_HD constexpr WorkTile tile(int slot) const { return tile_at(position(slot)); }
  IOATTN_HD constexpr WorkTile tile(int k, int c) const { return tile_at(position(k, c)); }

  // The simulator's name of the order (simulator/simulator.hpp GridOrder) for a persistent grid.
  constexpr const char* grid_order() const {
    return heavy_first ? "persistent_qblock_major_rev" : "persistent_bh_major";
  }
};

// The scheduler of a problem tiled in query blocks of br rows. Masked problems go heavy first.
IOATTN_HD constexpr TileScheduler make_tile_scheduler(int64_t batch, int64_t heads_q, int64_t seqlen_q, int br,
                                                      const MaskSpec& m) {
  return {static_cast<int>(batch), static_cast<int>(heads_q), static_cast<int>((seqlen_q + br - 1) / br),
          m.is_masked()};
}
// The launch sets the grid and the assignment once the CTA count is known: sched.ctas = grid,
// sched.serpentine unless IOATTN_V08P_ORDER=rr.

// CTAs of the persistent grid: one per SM, fewer when there are fewer tiles (at least one).
constexpr int64_t persistent_ctas(int64_t tiles, int64_t sms) {
  return tiles < sms ? (tiles > 0 ? tiles : 1) : sms;
}

}  // namespace ioattn::kernels

// kernels/decode_splits.hpp: the split heuristic of the split-KV decode rungs (v07_decode_splitkv,
// v07b_decode_wgmma), host code only, so that the simulator's twin of a decode launch
// (`ioattn simulate --kernel v07_decode_splitkv` without --splits) takes the split count the kernel
// takes: one function, included by kernels/decode_common.hpp (the kernels) and apps/cmd_simulate.cpp.
// No CUDA/HIP header here: it needs only the problem (include/ioattn/problem.hpp).
#pragma once

#include <algorithm>
#include <cstdint>

#include "ioattn/problem.hpp"

namespace ioattn::kernels::decode {

// The GPU the split heuristic fills (a constant, so workspace_bytes() does not depend on the device):
// the H200 (and H100 SXM): 132 SMs, 228 KiB of shared memory per SM, 1 KiB of it reserved per CTA.
inline constexpr int64_t kSms = 132;
inline constexpr int kSmemPerSm = 228 * 1024;
inline constexpr int kSmemReservedPerCta = 1024;

// CTAs one SM holds by shared memory (smem_bytes of dynamic shared memory each), clamped to 1..2.
constexpr int ctas_per_sm(int smem_bytes) {
  const int n = kSmemPerSm / (smem_bytes + kSmemReservedPerCta);
  return n < 1 ? 1 : n > 2 ? 2 : n;
}

// The split heuristic (--splits 0). Work units: one "tile time" = the time one CTA takes for one
// K/V stage (keys keys of K and V) while every slot of the GPU streams; slots = 132 SMs x the
// CTAs one SM holds (ctas_per_sm, from shared memory). With base = B Hkv Tr CTAs per split and
// n = ceil(Nk / keys) stages of keys, S splits give base S CTAs of ceil(n / S) stages each, run in
// ceil(base S / slots) waves; each CTA also pays its pipeline fill and epilogue (kFillTiles: the
// first stage's memory latency, about the two stages the pipeline keeps in flight, plus the
// cross-warp reduction and the writes). S > 1 adds the combine: a second launch (kCombineTiles)
// and the partial O/LSE traffic, 2 x 4 S B Hq Nq (d + 1) bytes (written, then read), converted
// to tile times at the GPU's rate (slots x bytes per tile). So
//   cost(S) = ceil(base S / slots) (ceil(n / S) + kFillTiles) + [S > 1] (kCombineTiles + partial(S) / (slots x tile bytes))
// and S = argmin over 1 .. min(max_splits, n), where a larger S must be cheaper by 2 % (kSplitGain:
// the model is coarse; more splits cost partial traffic, and ties of many waves are noise).
// On the decode grid (32 query heads over 8 K/V heads, d 128, 64 keys per stage, seqlen_q 1 or 4:
// 2 CTAs per SM, 264 slots; seqlen_q 16: 1 per SM) it fills the GPU when base is small (batch 1:
// S = 32 from 4k to 128k keys, 256 CTAs; 16 at 1k; seqlen_q 16: 16 and 8) and avoids a partly
// filled last wave (batch 16: S = 2, 256 CTAs in one wave; the old rule, two waves' worth of
// CTAs, gave S = 5: 640 CTAs in 2.4 waves, about 0.8 of the GPU busy); batch 64: S = 1. It
// depends on the problem and the tile only, not on the device, so workspace_bytes() is a function
// of the problem. (The numbers are v07's tiles; v07b passes its own keys per stage and CTAs per SM.)
// The ctest cli_sim_decode_splits checks the simulator's use of it against the decode grid's
// measured launches (their splits column).
// --splits range of the decode rungs (0: this heuristic); the combine takes at most splitkv::kMaxSplits.
inline constexpr int kMaxSplits = 128;
inline constexpr int64_t kFillTiles = 3;
inline constexpr int64_t kCombineTiles = 2;
inline constexpr double kSplitGain = 0.98;
inline int64_t default_splits(const AttnProblem& p, int64_t keys, int64_t ctas_per_sm, int64_t row_tiles,
                              int64_t max_splits) {
  const int64_t base = p.batch * p.heads_kv * row_tiles;
  const int64_t n = std::max<int64_t>(1, (p.seqlen_k + keys - 1) / keys);
  const int64_t slots = kSms * ctas_per_sm;
  const double tile_bytes = 2.0 * 2.0 * static_cast<double>(keys * p.head_dim);  // K and V, 2-byte elements
  const double part_bytes_per_split = 2.0 * 4.0 * static_cast<double>(p.batch * p.heads_q * p.seqlen_q * (p.head_dim + 1));
  int64_t best = 1;
  double best_cost = 0;
  for (int64_t s = 1; s <= std::min<int64_t>(max_splits, n); ++s) {
    const int64_t waves = (base * s + slots - 1) / slots;
    double cost = static_cast<double>(waves * ((n + s - 1) / s + kFillTiles));
    if (s > 1) cost += kCombineTiles + part_bytes_per_split * static_cast<double>(s) / (static_cast<double>(slots) * tile_bytes);
    if (s == 1 || cost < kSplitGain * best_cost) best = s, best_cost = cost;
  }
  return best;
}

}  // namespace ioattn::kernels::decode

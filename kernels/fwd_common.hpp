// kernels/fwd_common.hpp: what the fast forward rungs share, whatever their matrix instruction
// (v05_fa2_fast: mma.sync fragments; v06_fa2_wgmma and v08 through kernels/fwd_wgmma_common.hpp:
// wgmma accumulators). Each rung's file keeps only its own idea: its tile struct, its loads, its
// fragment loops. Here:
//   - the online softmax's per-row rules (lazy rescaling threshold, the exp2 offset of a row that
//     has seen only masked keys, the rescale factor, P itself),
//   - the mask at tile granularity (which key tiles a block of rows can see),
//   - the epilogue's per-row rules (1 / l, LSE, where the LSE of row i goes),
//   - the host side: a table of compiled tile configurations with ONE selection rule (the first
//     listed for a head dim is its default; --br/--bc pick the first with that tile), the message
//     that lists the tiles, the query-block grid, and the tuning hooks kernels/dev calls.
// Everything device-side is a forced-inline scalar function: inlined, it is the same arithmetic
// the rungs had written out (kernels/dev/sass_compare.py compares their SASS before and after).
// Platform-neutral: v05 compiles for AMD with it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kernels/attn_view.hpp"
#include "kernels/launcher.hpp"
#include "kernels/layout_rows.hpp"
#include "kernels/platform/fragment.hpp"
#include "kernels/platform/platform.hpp"

namespace ioattn::kernels::fwd {

// ---- online softmax, per row --------------------------------------------------------------------
// Lazy rescaling (FlashAttention-3's trick, v05 onwards): the reference max m_i of a row moves only
// when the row's new max exceeds it by more than 2^kLazyLog2 in exp2 units (always on the first
// visible tile, where m_i = -inf); otherwise P = 2^(sl2 (S - m_i)) <= 2^kLazyLog2 = 256 stays well
// inside fp32/fp16/bf16 and O, l need no rescaling. Any m_i gives the same O / l and LSE.
inline constexpr float kLazyLog2 = 8.0f;

// Whether a row whose tile max is m_tile must move its reference max m_i (scores in raw units,
// sl2 = scale log2 e). kLazy false: eager rescaling (any growth), for measuring lazy's gain.
template <bool kLazy = true>
__device__ __forceinline__ bool max_moves(float m_tile, float m_i, float sl2) {
  if constexpr (kLazy) return (m_tile - m_i) * sl2 > kLazyLog2;
  else return m_tile > m_i;
}

// O and l of a row are multiplied by this when its max moves from m_old to m_new (m_old = -inf
// gives 0: nothing accumulated yet).
__device__ __forceinline__ float rescale_factor(float m_old, float m_new, float sl2) {
  return frag::fast_exp2((m_old - m_new) * sl2);
}

// The exp2 offset of a row: sl2 m_i, or 0 for a row that has seen only masked keys (m_i = -inf),
// so that sl2 S - offset is -inf (P = 0), not NaN.
__device__ __forceinline__ float exp2_offset(float m_i, float sl2) { return m_i == -INFINITY ? 0.f : m_i * sl2; }

// P = 2^(sl2 S - offset): one FFMA and one MUFU.EX2 per score.
__device__ __forceinline__ float p_of(float s, float sl2, float offset) {
  return frag::fast_exp2(fmaf(s, sl2, -offset));
}

// ---- mask at tile granularity -------------------------------------------------------------------
// Key tiles of Bc keys that any of the rows [i0, i1) can see: [first, last). The others are never
// loaded. (The per-element test is the spec's MaskSpec::key_begin/key_end, ioattn/mask.hpp.)
struct KeyTiles {
  int first, last;
};
__device__ __forceinline__ KeyTiles block_key_tiles(const MaskSpec& mask, int i0, int i1, int bc) {
  const int kb = static_cast<int>(mask.block_key_begin(i0, i1));
  const int ke = static_cast<int>(mask.block_key_end(i0, i1));
  const int first = kb / bc;
  return {first, ke > kb ? (ke + bc - 1) / bc : first};
}

// ---- epilogue, per row --------------------------------------------------------------------------
// O_i = O_i / l_i; a row with l = 0 saw no key and gives O = 0.
__device__ __forceinline__ float inv_row_sum(float l) { return l > 0.f ? 1.f / l : 0.f; }
// LSE_i = scale m_i + log l_i (m_i in raw score units); -inf for a row that saw no key.
__device__ __forceinline__ float row_lse(float m_i, float l, float scale) {
  return l > 0.f ? m_i * scale + logf(l) : -INFINITY;
}
// Where row i's LSE goes: a layout kernel's per-head row (g_LSE_h, layout_rows.hpp's seq_head), a
// dense kernel's (batch, head, i) element.
template <bool kLayout>
__device__ __forceinline__ void store_lse(float* g_LSE_h, float* g_LSE, const AttnView& a, int64_t b, int64_t h,
                                          int i, float lse) {
  if constexpr (kLayout) g_LSE_h[i] = lse;  // HBM write: LSE_i, fp32
  else g_LSE[a.lse_offset(b, h, i)] = lse;
}

// ---- host: the compiled tile configurations -----------------------------------------------------
// One row per compiled configuration. launch gets the problem's view, the packed/paged batch
// (null for a dense problem) and the dtype; `layouts` says whether a layout kernel is built for it.
using LaunchTile = LaunchStatus (*)(const AttnView&, const SeqLayout*, const DeviceTensors&, DType, const Launcher&);
struct Config {
  int d, br, bc;
  const char* name;  // the tile in words, e.g. "d128_w4_mt2_bc64_s2_qr0" (v05), "d128_wg2_bc128_s3_mb1_ov1" (v06)
  LaunchTile launch;
  bool layouts;
};

// The selection rule: the first configuration for head dim d with that (br, bc), 0 meaning "any",
// so the first one listed for a d is its default.
inline const Config* find_config(std::span<const Config> table, int64_t d, int br, int bc) {
  for (const Config& c : table)
    if (c.d == d && (br == 0 || br == c.br) && (bc == 0 || bc == c.bc)) return &c;
  return nullptr;
}

// The distinct (Br x Bc) tiles compiled for d, in table order ("128x32, 256x32"); empty: none.
inline std::string tiles_for(std::span<const Config> table, int64_t d) {
  std::vector<std::string> tiles;
  std::string have;
  for (const Config& c : table) {
    std::string tile = std::to_string(c.br) + "x" + std::to_string(c.bc);
    if (c.d != d || std::find(tiles.begin(), tiles.end(), tile) != tiles.end()) continue;
    have += (have.empty() ? "" : ", ") + tile;
    tiles.push_back(std::move(tile));
  }
  return have;
}

// The refusal of a (--br, --bc) that names no compiled tile (nullopt: the tile exists).
inline LaunchStatus check_tile(std::span<const Config> table, std::string_view variant, int64_t d, int br, int bc) {
  if (find_config(table, d, br, bc)) return std::nullopt;
  return std::string(variant) + ": for head_dim " + std::to_string(d) + " (--br x --bc) must be one of " +
         tiles_for(table, d);
}

// Grid of a query-block kernel: x = (batch, head), y = query blocks of br rows (the kernels reverse
// y: heavy query blocks first).
inline LaunchStatus query_grid(std::string_view variant, const AttnView& a, int br, dim3& grid) {
  const int64_t q_blocks = (a.seqlen_q + br - 1) / br;
  if (q_blocks > 65535)
    return std::string(variant) + ": seqlen_q must be <= " + std::to_string(65535 * static_cast<int64_t>(br)) +
           " (query blocks go in grid.y, at most 65535)";
  grid = dim3(static_cast<unsigned>(a.batch * a.heads_q), static_cast<unsigned>(q_blocks));
  return std::nullopt;
}

// Tuning hooks for kernels/dev (not in the registry): every compiled configuration by index. The
// caller has run its variant's supports(p, {}) first.
inline const char* config_name(std::span<const Config> table, int index) {
  return index >= 0 && index < static_cast<int>(table.size()) ? table[index].name : nullptr;
}
inline LaunchStatus launch_config(std::span<const Config> table, std::string_view variant, int index,
                                  const AttnProblem& p, const DeviceTensors& t, void* stream) {
  if (index < 0 || index >= static_cast<int>(table.size()))
    return std::string(variant) + ": no configuration " + std::to_string(index);
  const Config& c = table[index];
  if (c.d != p.head_dim) return std::string("config ") + c.name + " is for another head_dim";
  if (!p.layout.dense()) return std::string(variant) + ": the tuning hooks take dense problems only";
  return c.launch(AttnView::of(p), nullptr, t, p.dtype, Launcher::enqueue(stream));
}

}  // namespace ioattn::kernels::fwd

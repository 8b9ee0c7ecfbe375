// kernels/v07b_decode_wgmma.hip: Flash-Decoding on Hopper's warpgroup MMA (wgmma), NVIDIA sm_90a only.
//
// What changed vs v07_decode_splitkv (same problem, packing, splits, masks and combine): the two
// products of a K/V stage run as wgmma.mma_async on swizzled shared tiles instead of mma.sync
// fragments loaded by ldmatrix (v06's move from v05, applied to decoding):
//   S  = Q K^T : wgmma m64n64k16, A = the packed Q rows (shared, K-major), B = K (shared, K-major)
//   O += P V   : wgmma m64n{d}k16, A = P (registers), B = V (shared, N-major, imm-trans-b)
// At seqlen_q 16 and 4 query heads per K/V head (64 packed rows) a stage of 64 keys is
// 2 x 64 x 64 x d x 2 FLOP against 64 x d x 2 x 2 bytes of K and V: ~64 FLOP/byte, where v07's
// mma.sync loop plus its softmax measured 0.67-0.70 of the copy ceiling. One wgmma per 16 columns
// of d replaces v07's ldmatrix + mma.sync per 8 x 16 atom, and the B operands never pass through
// registers.
// Unchanged from v07 (shared code): GQA packing (packed row R = i * G + g is query i of head
// h_kv * G + g; a CTA owns one K/V head, its rows [r0, r1) and one split of its keys), the split
// bounds (a multiple of the stage's keys), the split heuristic (decode::default_splits), the
// page-granular row table of a paged cache (decode::paged_tile_row, one table read per key of a
// tile, one tile ahead), the K/V copy with its L2 prefetch hint (decode::copy_kv_16), the
// key-split epilogue (decode::finish_key_split_rows; kernels/decode_common.hpp) and the combine
// (kernels/splitkv_combine.hpp). From v06/v08 (kernels/fwd_wgmma_common.hpp): the two products
// (issue_qk, issue_pv), the boundary mask (mask_tile), the online softmax with lazy rescaling
// (softmax_tile) and P packed into wgmma's A operand (pack_p).
//
// HBM traffic (simulator strategy `splitkv`): v07's. e = 2 bytes, G = Hq / Hkv, R = G * Nq,
// Tr = ceil(R / Br):
//   K, V read once per (K/V head, row tile):  2 * e * B*Hkv*Tr*Nk*d   (R <= Br: once, the compulsory traffic)
//   Q read once, O written once:              2 * e * B*Hq*Nq*d,     LSE written once: 4 * B*Hq*Nq
//   S > 1, partials written and read once:    2 * 4 * S*B*Hq*Nq*(d + 1)
//   paged: the block table, 4 bytes per key of the sequence once (per split), from L2
//
// Tiling: a CTA is kWM x kWK warpgroups (128 threads each). Warpgroup (wm, wk) owns packed rows
// [64 wm, 64 wm + 64) of the CTA (Br = 64 kWM: wgmma's M is 64, rows past R are zero Q rows, never
// stored) and keys [wk Bc, (wk + 1) Bc) of every stage (kKeys = kWK Bc keys per stage); with
// kWK > 1 the warpgroups of a row block combine their partial rows in shared memory at the end
// (log-sum-exp, as v07's warps do). A stage's K (and V) is kWK swizzled (Bc, d) tiles, 128-byte
// swizzle (v06's layout: d/64 panels of Bc rows x 128 bytes, chunk c of row r at c ^ (r % 8)),
// filled by cp.async from every thread (K and V chunks of one key share one address) into a
// kStages-deep ring; one barrier per stage. Per thread: O d/2 + S Bc/2 fp32 registers + P Bc/4.
// Configurations (NVIDIA; per d in ascending Br, the first with Br >= R is taken, else the last):
//   d 128: R <= 64: 1 x 2 warpgroups, Bc 64 (128 keys, 64 KiB of K and V per stage), 3 stages
//          (210.5 KiB: one CTA per SM, 2 stages = 128 KiB in flight while one is consumed);
//          more: 2 x 1, Bc 64, 4 stages (row tiles of 128 rows beyond 128).
//   d 64:  R <= 64: 1 x 2, Bc 64, 4 stages; more: 2 x 1, Bc 64, 4 stages (two CTAs per SM).
//   d 256: R <= 64: 1 x 1, Bc 64, 3 stages; more: 2 x 1, Bc 64, 2 stages.
// Registers (ptxas -v, nvcc 13.0, sm_90a; dense / paged kernel, fp16 and bf16 alike), no stack, no
// spills: d 128 1x2 184 / 176, 2x1 176 / 168; d 64 1x2 140 / 132, 2x1 128 / 128 (two CTAs per SM
// cap it at 128); d 256 1x1 255 / 255, 2x1 248 / 249.
// Synchronization (the invariants the loop keeps; read, not yet run):
//   - Commit groups: Q, then one per prologue stage (kStages - 1), then exactly one per iteration
//     (possibly empty). Before iteration j's wait 1 + (kStages - 1) + j groups are committed;
//     async_wait<kStages - 2> leaves only the newest kStages - 2 pending, so Q and stages 0..j of
//     this thread have landed; fence.proxy.async then makes them visible to wgmma (async proxy).
//   - One __syncthreads per iteration, at its top: after it every thread's copies of stage j are
//     visible, and every warpgroup has finished tile j - 1 (each tile ends with wgmma.wait_group 0
//     for S and for P V), so the refill of stage (j - 1) % kStages issued right after the barrier
//     cannot overwrite data a wgmma still reads. No wgmma is in flight across a barrier; the
//     warpgroup-uniform skip (`continue`) comes after the barrier and the refill.
//   - Paged row table (v07's rule): slot (j + kStages) % kRowSlots is written before barrier j and
//     read by iteration j + 1's copies (after barrier j + 1); with kRowSlots >= 3 it is neither the
//     slot iteration j's copies read (tile j + kStages - 1) nor the one a thread still before
//     barrier j may read (tile j + kStages - 2). The prologue's copies (tiles 0 .. kStages - 2)
//     read slots that iteration 0 may overwrite (slot kStages % kRowSlots is slot 0 when
//     kRowSlots == kStages), so a barrier follows the prologue, as in v07 (racecheck found the
//     hazard on the H200 before it was there).
//   - kWK > 1 epilogue: every thread drains its copies (async_wait<0>) before the barrier after
//     which shared memory is reused for the partial rows; two more barriers order the statistics,
//     the scaled O rows and the final sum (finish_key_split_rows).
// Shared memory: 1 KiB alignment slack + Q (Br, d) + stages x [K, V (kKeys, d)] 2-byte elements +
// the paged row table (max(3, stages) x kKeys int32); the kWK > 1 epilogue reuses it for the
// (kWK, Br, d + 4) fp32 partial rows.
// Workspace: S = 1: none; else 4 * S * B*Hq*Nq*(d + 1) bytes (splitkv_combine.hpp).
// Launches: 1 (S = 1) or 2 (main + combine). Grid (1-D, grid order kv_splits_rows): CTA =
// ((b * Hkv + h_kv) * S + split) * Tr + row tile, as v07.
//
// Supports (matches v07's supports(), plus the sm_90a requirement): fp16, bf16; d in {64, 128,
// 256}; any Nq >= 1 (fast for R = 16..128; R > 128 re-reads K/V per 128-row tile through the L2);
// any Nk >= 1; causal (bottom-right), sliding windows, GQA/MQA/MHA; LSE out; fully masked rows give
// O = 0, LSE = -inf; --splits 1..128 (0: the heuristic), no --br/--bc. Paged KV cache of any
// page_size >= 1 (block table, seqused_k per sequence, 0 keys allowed: O = 0, LSE = -inf; each
// sequence its own bottom-right diagonal and window); Q dense; packed (varlen) Q or K refused.
// Needs sm_90a device code (kernels/CMakeLists.txt adds -gencode=arch=compute_90a,code=sm_90a for
// this file); supports() asks the device once (a one-thread probe) and refuses otherwise. AMD:
// refused (no wgmma; v07 is the AMD decode path). IOATTN_V07B_DISABLE=1 makes supports() refuse every
// problem (experiments/gpu/smoke.sh's probation switch).
//
// Measured on the H200: not yet measured. Compiled, not run: no GPU run of this file yet (the
// commands for the first one: kernels/dev/NEXT_GPU_RUN.md, section v07b_decode_wgmma). Listed below
// v07 in the registry until it has passed the GPU suite.
// Run: ioattn run --kernel v07b_decode_wgmma --batch 16 --heads-q 32 --heads-kv 8 --seqlen-q 16 --seqlen-k 16384 --head-dim 128 --dtype bf16 --check
// Paged: ioattn run --kernel v07b_decode_wgmma --seqlen-q 16 --seqlens-k 4096,0,1,17 --page-size 16 --shuffle-pages --heads-q 32 --heads-kv 8 --head-dim 128 --dtype bf16 --causal --check
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "kernels/attn_view.hpp"
#include "kernels/decode_common.hpp"
#include "kernels/fwd_common.hpp"
#include "kernels/fwd_wgmma_common.hpp"
#include "kernels/launcher.hpp"
#include "kernels/layout_rows.hpp"
#include "kernels/platform/fragment.hpp"
#include "kernels/platform/platform.hpp"
#include "kernels/platform/wgmma.hpp"
#include "kernels/splitkv_combine.hpp"

// The wgmma instructions exist only in the sm_90a device pass; elsewhere the kernel body is empty
// and a one-thread probe tells the launcher so at run time.
#if defined(IOATTN_PLATFORM_NVIDIA) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define IOATTN_V07B_WGMMA 1
#endif

namespace ioattn::kernels {
namespace {

#if defined(IOATTN_PLATFORM_NVIDIA)

// Compile-time shape of one configuration (the names fwd_wgmma_common.hpp's issue_qk/issue_pv read:
// kD, kBr = rows of the shared Q tile, kBc = keys of one warpgroup's K/V sub-tile).
template <int kD_, int kWM_, int kWK_, int kBc_, int kStages_>
struct WgDecodeTile {
  static constexpr int kD = kD_;
  static constexpr int kWM = kWM_;                // warpgroups along the packed rows (64 each)
  static constexpr int kWK = kWK_;                // warpgroups along the keys of a stage
  static constexpr int kBc = kBc_;                // keys per warpgroup per stage
  static constexpr int kStages = kStages_;
  static constexpr int kThreads = 128 * kWM_ * kWK_;
  static constexpr int kBr = 64 * kWM_;           // packed rows per CTA
  static constexpr int kKeys = kBc_ * kWK_;       // keys per stage
  static constexpr int kChunks = kD_ / 8;         // 16-byte chunks per row
  static constexpr int kQBytes = kBr * kD_ * 2;
  static constexpr int kSubBytes = kBc_ * kD_ * 2;  // one warpgroup's (Bc, d) K or V sub-tile
  static constexpr int kKVBytes = kKeys * kD_ * 2;  // K (or V) of one stage
  static constexpr int kRowSlots = kStages_ < 3 ? 3 : kStages_;  // paged row table slots (v07's rule)
  static constexpr int kMainBytes = kQBytes + 2 * kStages_ * kKVBytes + kRowSlots * kKeys * 4;
  static constexpr int kRedLd = kD_ + 4;          // fp32 row of the key-split epilogue (16-byte rows)
  static constexpr int kEpiBytes = kWK_ > 1 ? (kWK_ * kBr * kRedLd + 2 * kWK_ * kBr) * 4 : 0;
  static constexpr int kSmemBytes = 1024 /* alignment slack */ + (kMainBytes > kEpiBytes ? kMainBytes : kEpiBytes);
  static constexpr int kCtasPerSm = decode::ctas_per_sm(kSmemBytes);
  static_assert(kD_ == 64 || kD_ == 128 || kD_ == 256, "P V: d must be 64, 128 or 256");
  static_assert(kBc_ == 64 || kBc_ == 128, "wgmma N for Q K^T is Bc: 64 or 128");
  static_assert(kStages_ >= 2, "the pipeline needs at least two stages");
  static_assert(kKeys <= kThreads, "the paged row table is filled by one thread per key of a tile");
  static_assert(kThreads % kChunks == 0 && kKeys % (kThreads / kChunks) == 0, "K/V copy pattern");
  static_assert(kSmemBytes <= kMaxSharedBytes, "tiles exceed the shared memory per block");
};

// Byte offset of 16-byte chunk c8 (along d) of row r in a 128B-swizzled tile of kRows rows.
template <int kRows>
__device__ __forceinline__ uint32_t swz_offset(int r, int c8) {
  return static_cast<uint32_t>((c8 / 8) * (kRows * 128) + r * 128 + (((c8 % 8) ^ (r % 8)) * 16));
}

// Keys [k0, k0 + kKeys) of one K/V head into one stage (kWK swizzled (Bc, d) sub-tiles of K and of V:
// key r goes to sub-tile r / Bc, row r % Bc); keys >= k_end are zero-filled and never read. Dense:
// key j is row j at g + j * stride; paged: key k0 + r is cache row s_rows[r]. A thread copies chunk
// ch of keys r_t, r_t + kStep, ...; the K and V copies share one address.
template <class Tl, bool kPaged, class T>
__device__ __forceinline__ void load_kv_stage(uint8_t* sK, uint8_t* sV, const T* gK, const T* gV, int64_t stride,
                                              int k0, int k_end, int tid, const int32_t* s_rows) {
  constexpr int kStep = Tl::kThreads / Tl::kChunks;
  const int r_t = tid / Tl::kChunks, ch = tid % Tl::kChunks;
  int64_t off = int64_t{k0 + r_t} * stride + ch * 8;  // dense: key k0 + r_t's chunk
  const int64_t step = int64_t{kStep} * stride;
#pragma unroll
  for (int it = 0; it < Tl::kKeys / kStep; ++it) {
    const int r = r_t + it * kStep;
    const bool valid = k0 + r < k_end;
    if constexpr (kPaged) off = int64_t{s_rows[r]} * stride + ch * 8;  // row 0 past k_end
    const int64_t src = valid ? off : 0;
    const uint32_t dst = (r / Tl::kBc) * Tl::kSubBytes + swz_offset<Tl::kBc>(r % Tl::kBc, ch);
    decode::copy_kv_16(sK + dst, gK + src, valid);  // HBM read: K, 16 B
    decode::copy_kv_16(sV + dst, gV + src, valid);  // HBM read: V, 16 B
    if constexpr (!kPaged) off += step;
  }
}

#if defined(IOATTN_V07B_WGMMA)
using fwd_wg::issue_pv;
using fwd_wg::issue_qk;
using fwd_wg::mask_tile;
using fwd_wg::pack_p;
using fwd_wg::softmax_tile;
#endif

// blockIdx.x = ((b * Hkv + h_kv) * splits + split) * row_tiles + row_tile (v07's grid).
// splits == 1: writes O (B, Nq, Hq, d) and LSE. splits > 1: the split's O_s (fp32, normalized over
// its keys) and LSE_s into the partials (splitkv_combine.hpp), for every row of the tile.
// kPaged: K and V are a paged cache read through pk; sequence b has pk.seqused[b] keys and its own
// bottom-right causal alignment and window.
// Accumulators (wgmma m64nN D, platform/wgmma.hpp): warp w4 = warp % 4 of warpgroup (wm, wk) holds
// CTA rows 64 wm + 16 w4 + lane / 4 + 8 s (s = 0, 1); r_S column x of atom t is key kj0 + 8 t + c_col.
template <class T, class Tl, bool kPaged>
__global__ void __launch_bounds__(Tl::kThreads, Tl::kCtasPerSm)
decode_wgmma_kernel(AttnView a, PagedKv pk, int splits, int row_tiles, const T* __restrict__ g_Q_all,
                    const T* __restrict__ g_K_all, const T* __restrict__ g_V_all, T* __restrict__ g_O_all,
                    float* __restrict__ g_LSE, float* __restrict__ g_Opart, float* __restrict__ g_LSEpart) {
#if defined(IOATTN_V07B_WGMMA)
  constexpr int kD = Tl::kD, kBr = Tl::kBr, kBc = Tl::kBc, kStages = Tl::kStages, kKeys = Tl::kKeys;
  constexpr int kWK = Tl::kWK;

  extern __shared__ unsigned char smem_raw[];
  const uint32_t raw_addr = frag::smem_addr(smem_raw);
  uint8_t* s_base = smem_raw + ((1024 - raw_addr % 1024) % 1024);  // swizzled tiles: 1024-byte aligned
  uint8_t* s_Q = s_base;                                           // (Br, d) swizzled
  uint8_t* s_K = s_Q + Tl::kQBytes;                                // kStages x kWK x (Bc, d)
  uint8_t* s_V = s_K + kStages * Tl::kKVBytes;                     // kStages x kWK x (Bc, d)
  int32_t* s_rows = reinterpret_cast<int32_t*>(s_V + kStages * Tl::kKVBytes);  // (kRowSlots, kKeys): paged

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int wgi = warp / 4, wm = wgi / kWK, wk = wgi % kWK;
  int64_t cta = blockIdx.x;
  const int rt = static_cast<int>(cta % row_tiles);
  cta /= row_tiles;
  const int split = static_cast<int>(cta % splits);
  cta /= splits;
  const int64_t hk = cta % a.heads_kv, b = cta / a.heads_kv;
  const int G = static_cast<int>(a.group);
  const int rows = G * static_cast<int>(a.seqlen_q);  // packed rows of (b, h_kv): R = i * G + g
  const int r0 = rt * kBr, r1 = min(r0 + kBr, rows);  // this CTA's packed rows [r0, r1)
  const int q0 = r0 / G, q1 = (r1 - 1) / G + 1;       // ... are queries [q0, q1)

  // Keys the CTA's rows see, [kb, ke); this split's share, [k_lo, k_hi) (v07's split bounds).
  MaskSpec mask = a.mask;
  const int32_t* page_row = nullptr;
  if constexpr (kPaged) {
    mask.seqlen_k = pk.seqused[b];  // this sequence's keys: its causal diagonal and window edges
    page_row = pk.table + b * pk.max_pages;
  }
  const int kb = static_cast<int>(mask.block_key_begin(q0, q1));
  const int ke = max(kb, static_cast<int>(mask.block_key_end(q0, q1)));
  const int per_split = ((ke - kb + splits - 1) / splits + kKeys - 1) / kKeys * kKeys;
  const int k_lo = min(kb + split * per_split, ke), k_hi = min(k_lo + per_split, ke);
  const int n_tiles = (k_hi - k_lo + kKeys - 1) / kKeys;

  const int64_t kv_stride = a.kv_row_stride();
  const int64_t kv_base = kPaged ? hk * a.head_dim : a.kv_offset(b, 0, hk);
  const T* g_K = g_K_all + kv_base;
  const T* g_V = g_V_all + kv_base;

  // Prologue: the packed Q rows (one commit group), then the first kStages-1 K/V stages.
  for (int c = tid; c < kBr * Tl::kChunks; c += Tl::kThreads) {
    const int r = c / Tl::kChunks, c8 = c % Tl::kChunks, R = r0 + r;
    const bool valid = R < r1;
    const int64_t off = valid ? a.q_offset(b, R / G, hk * G + R % G) : 0;
    frag::async_copy_16(s_Q + swz_offset<kBr>(r, c8), g_Q_all + off + c8 * 8, valid);  // HBM read: Q, once
  }
  frag::async_commit();
  if constexpr (kPaged) {  // the row table of tiles 0 .. kStages-1; tile t in slot t % kRowSlots
    if (tid < kKeys) {
#pragma unroll
      for (int t = 0; t < kStages; ++t)
        s_rows[t * kKeys + tid] = decode::paged_tile_row(page_row, pk.page_size, k_lo + t * kKeys + tid, k_hi);  // table read
    }
    __syncthreads();
  }
#pragma unroll
  for (int st = 0; st < kStages - 1; ++st) {
    if (st < n_tiles)
      load_kv_stage<Tl, kPaged>(s_K + st * Tl::kKVBytes, s_V + st * Tl::kKVBytes, g_K, g_V, kv_stride,
                                k_lo + st * kKeys, k_hi, tid, s_rows + st * kKeys);  // HBM read: K, V
    frag::async_commit();  // possibly empty: keeps the group count uniform
  }
  if constexpr (kPaged) __syncthreads();  // every prologue copy has read its row slot (see the header)

  // This warpgroup's rows [ga, gb) (packed, valid ones) and the keys any of them sees in the split.
  const int ga = r0 + 64 * wm, gb = min(ga + 64, r1);
  const int gq0 = ga < gb ? ga / G : 0, gq1 = ga < gb ? (gb - 1) / G + 1 : 0;
  const int gkb = ga < gb ? max(k_lo, static_cast<int>(mask.key_begin(gq0))) : 0;
  const int gke = ga < gb ? min(k_hi, static_cast<int>(mask.key_end(gq1 - 1))) : 0;
  // This thread's rows (slot s): visible keys within the split, [key_lo, key_hi); padding rows none.
  const int tr0 = 64 * wm + 16 * (warp % 4) + lane / 4;  // CTA row of slot 0 (slot 1: + 8)
  int key_lo[2], key_hi[2];
#pragma unroll
  for (int s = 0; s < 2; ++s) {
    const int R = r0 + tr0 + 8 * s;
    key_lo[s] = R < r1 ? max(k_lo, static_cast<int>(mask.key_begin(R / G))) : 0;
    key_hi[s] = R < r1 ? min(k_hi, static_cast<int>(mask.key_end(R / G))) : 0;
  }
  const uint32_t q_addr = frag::smem_addr(s_Q) + 64 * wm * 128;  // this warpgroup's 64 rows, panel 0

  float r_O[kD / 2];
  float r_S[kBc / 2];
  uint32_t r_P[kBc / 16][4];
#pragma unroll
  for (int x = 0; x < kD / 2; ++x) r_O[x] = 0.f;
#pragma unroll
  for (int x = 0; x < kBc / 2; ++x) r_S[x] = 0.f;
  float m_i[2] = {-INFINITY, -INFINITY}, l_i[2] = {0.f, 0.f};
  const float sl2 = a.scale_log2;
  float alpha[2];

  for (int j = 0; j < n_tiles; ++j) {
    const int stage = j % kStages;
    // Paged: the table read for tile j + kStages before the wait, stored before the barrier (v07).
    int32_t next_row = 0;
    if constexpr (kPaged) {
      if (tid < kKeys && j + kStages < n_tiles)
        next_row = decode::paged_tile_row(page_row, pk.page_size, k_lo + (j + kStages) * kKeys + tid, k_hi);  // table read
    }
    frag::async_wait<kStages - 2>();  // stage j has landed (this thread's copies) ...
    wg::fence_proxy_async();          // ... visible to the tensor cores
    if constexpr (kPaged) {
      if (tid < kKeys) s_rows[((j + kStages) % Tl::kRowSlots) * kKeys + tid] = next_row;
    }
    __syncthreads();  // ... everyone's; and every warpgroup is done with stage j-1
    {
      const int jn = j + kStages - 1;  // refill the stage j-1 used
      if (jn < n_tiles) {
        const int sn = jn % kStages;
        load_kv_stage<Tl, kPaged>(s_K + sn * Tl::kKVBytes, s_V + sn * Tl::kKVBytes, g_K, g_V, kv_stride,
                                  k_lo + jn * kKeys, k_hi, tid, s_rows + (jn % Tl::kRowSlots) * kKeys);  // HBM read: K, V
      }
      frag::async_commit();
    }
    const int kj0 = k_lo + j * kKeys + wk * kBc;  // this warpgroup's keys [kj0, kj0 + Bc)
    if (kj0 >= gke || kj0 + kBc <= gkb) continue;  // warpgroup-uniform: none of its rows sees them
    const uint32_t k_addr = frag::smem_addr(s_K + stage * Tl::kKVBytes + wk * Tl::kSubBytes);
    const uint32_t v_addr = frag::smem_addr(s_V + stage * Tl::kKVBytes + wk * Tl::kSubBytes);

    issue_qk<T, Tl>(r_S, q_addr, k_addr);
    wg::commit();
    wg::wait_all();
    wg::fence_regs(r_S);
    // Mask only where the tile crosses a boundary: the mask's (diagonal, window edge) for the
    // warpgroup's queries, or the split's end (keys past it are the next split's, or past seqlen_k).
    if (!mask.tile_unmasked(gq0, gq1, kj0, kj0 + kBc) || kj0 + kBc > k_hi) mask_tile<kBc>(r_S, key_lo, key_hi, kj0, lane);
    if (softmax_tile<kBc>(r_S, m_i, l_i, alpha, sl2)) {
#pragma unroll
      for (int x = 0; x < kD / 2; ++x) r_O[x] *= alpha[(x % 4) / 2];
    }
    pack_p<T, kBc>(r_S, r_P);
    // V's N-major descriptor (v06): LBO = one 64-column panel of d to the next (Bc x 128 bytes),
    // SBO = one 8-key group to the next (1024 bytes).
    issue_pv<T, Tl>(r_O, r_P, v_addr, kBc * 128, 1024);
    wg::commit();
    wg::wait_all();
    wg::fence_regs(r_O);
  }
  frag::async_wait<0>();  // only empty groups remain; drain them

#pragma unroll
  for (int s = 0; s < 2; ++s) l_i[s] = frag::row_allreduce_sum(l_i[s]);
  if constexpr (kWK == 1) {
    // Epilogue: O / l straight from the accumulators, LSE = scale m + log l (fwd_common.hpp's rules).
#pragma unroll
    for (int s = 0; s < 2; ++s) {
      const int R = r0 + tr0 + 8 * s;
      if (R >= r1) continue;  // padding row
      const int64_t i = R / G, h = hk * G + R % G;
      const float inv_l = fwd::inv_row_sum(l_i[s]);
      const float lse = fwd::row_lse(m_i[s], l_i[s], a.scale);
      if (splits == 1) {
        T* o = g_O_all + a.q_offset(b, i, h) + 2 * (lane % 4);
#pragma unroll
        for (int t = 0; t < kD / 8; ++t)  // HBM write: O, once
          *reinterpret_cast<uint32_t*>(o + 8 * t) = frag::pack2<T>(r_O[4 * t + 2 * s] * inv_l, r_O[4 * t + 2 * s + 1] * inv_l);
        if (lane % 4 == 0) g_LSE[a.lse_offset(b, h, i)] = lse;  // HBM write: LSE
      } else {
        float* o = g_Opart + splitkv::o_part_offset(a, split, b, i, h) + 2 * (lane % 4);
#pragma unroll
        for (int t = 0; t < kD / 8; ++t)  // HBM write: O_s (fp32)
          *reinterpret_cast<float2*>(o + 8 * t) = make_float2(r_O[4 * t + 2 * s] * inv_l, r_O[4 * t + 2 * s + 1] * inv_l);
        if (lane % 4 == 0) g_LSEpart[splitkv::lse_part_offset(a, split, b, h, i)] = lse;  // HBM write: LSE_s
      }
    }
  } else {
    // Key-split epilogue: the kWK warpgroups of a row block combine their rows through shared
    // memory (reused: every copy has landed and, after the barrier, every wgmma has read its tiles).
    __syncthreads();
    float* s_Ored = reinterpret_cast<float*>(s_base);  // (kWK, Br, kRedLd) fp32
    float* s_m = s_Ored + kWK * kBr * Tl::kRedLd;      // (kWK, Br)
    float* s_l = s_m + kWK * kBr;                      // (kWK, Br)
    if (lane % 4 == 0) {
#pragma unroll
      for (int s = 0; s < 2; ++s) s_m[wk * kBr + tr0 + 8 * s] = m_i[s], s_l[wk * kBr + tr0 + 8 * s] = l_i[s];
    }
    __syncthreads();
#pragma unroll
    for (int s = 0; s < 2; ++s) {
      const int r = tr0 + 8 * s;
      float M = -INFINITY;
#pragma unroll
      for (int w = 0; w < kWK; ++w) M = fmaxf(M, s_m[w * kBr + r]);
      const float f = m_i[s] == -INFINITY ? 0.f : frag::fast_exp2((m_i[s] - M) * sl2);
      float* o = s_Ored + (wk * kBr + r) * Tl::kRedLd + 2 * (lane % 4);
#pragma unroll
      for (int t = 0; t < kD / 8; ++t)
        *reinterpret_cast<float2*>(o + 8 * t) = make_float2(r_O[4 * t + 2 * s] * f, r_O[4 * t + 2 * s + 1] * f);
    }
    __syncthreads();
    decode::finish_key_split_rows<T, kWK, kBr, kD, Tl::kRedLd, Tl::kThreads>(
        a, s_Ored, s_m, s_l, tid, r0, r1, G, hk, b, split, splits, sl2, g_O_all, g_LSE, g_Opart, g_LSEpart);
  }
#else
  (void)a, (void)pk, (void)splits, (void)row_tiles, (void)g_Q_all, (void)g_K_all, (void)g_V_all, (void)g_O_all;
  (void)g_LSE, (void)g_Opart, (void)g_LSEpart;
#endif
}

// Writes 1 when this binary's device code has wgmma (an sm_90a build), else 0.
__global__ void decode_wgmma_probe_kernel(int* out) {
#if defined(IOATTN_V07B_WGMMA)
  *out = 1;
#else
  *out = 0;
#endif
}

// Whether the device code of this build has wgmma: asked once, on the first call.
LaunchStatus wgmma_available() {
  static int cached = -1;
  if (cached < 0) {
    int* d_flag = nullptr;
    IOATTN_CHECK(hipMalloc(&d_flag, sizeof(int)));
    IOATTN_CHECK(hipMemset(d_flag, 0, sizeof(int)));
    decode_wgmma_probe_kernel<<<1, 1>>>(d_flag);
    IOATTN_CHECK_LAUNCH();
    int h_flag = 0;
    IOATTN_CHECK(hipMemcpy(&h_flag, d_flag, sizeof(int), hipMemcpyDeviceToHost));
    IOATTN_CHECK(hipFree(d_flag));
    cached = h_flag;
  }
  if (cached == 0)
    return "v07b_decode_wgmma: this build has no sm_90a device code (configure with -DIOATTN_CUDA_ARCH=90a)";
  return std::nullopt;
}

// ---- configurations -------------------------------------------------------------------------------
// decode::Config (kernels/decode_common.hpp, shared with v07): one compiled tile and its launch.
using decode::Config;

template <class Tl>
LaunchStatus launch_tile(const AttnView& a, const PagedKv& pk, const DeviceTensors& t, DType dt, int splits,
                         int row_tiles, const splitkv::Partials& w, const Launcher& L) {
  const MainKernel main{.br = Tl::kBr, .bc = Tl::kKeys, .stages = Tl::kStages, .splits = splits,
                        .grid_order = "kv_splits_rows"};
  return dispatch_dtype(dt, [&]<class T>() -> LaunchStatus {
    if constexpr (sizeof(T) != 2) {
      return "v07b_decode_wgmma: dtype must be fp16 or bf16";
    } else {
      auto* kernel = pk.page_size > 0 ? &decode_wgmma_kernel<T, Tl, true> : &decode_wgmma_kernel<T, Tl, false>;
      return decode::launch_main_and_combine<T>(L, main, kernel, Tl::kThreads, Tl::kSmemBytes, a, pk, t, splits,
                                                row_tiles, w);
    }
  });
}

// WgDecodeTile<d, W_M, W_K, Bc, stages>; per d in ascending Br (the first with Br >= G * Nq is
// taken, else the last).
#define V07B_CONFIG(d, wm, wk, bc, st)                                                                      \
  Config{d, 64 * (wm), (bc) * (wk), st, WgDecodeTile<d, wm, wk, bc, st>::kCtasPerSm,                        \
         "d" #d "_wg" #wm "x" #wk "_bc" #bc "_s" #st, &launch_tile<WgDecodeTile<d, wm, wk, bc, st>>}
const Config kConfigs[] = {
    V07B_CONFIG(128, 1, 2, 64, 3), V07B_CONFIG(128, 2, 1, 64, 4),
    V07B_CONFIG(64, 1, 2, 64, 4),  V07B_CONFIG(64, 2, 1, 64, 4),
    V07B_CONFIG(256, 1, 1, 64, 3), V07B_CONFIG(256, 2, 1, 64, 2),
};
#undef V07B_CONFIG

#endif  // IOATTN_PLATFORM_NVIDIA

}  // namespace

// The constraints (v07's: decode::check_problem), the plan (tile by packed rows, row tiles, splits:
// decode::default_splits when --splits is 0) and the launch path: kernels/decode_common.hpp, over
// this file's kConfigs; plus the probation switch and, on NVIDIA, the sm_90a probe.
LaunchStatus v07b_decode_wgmma_supports(const AttnProblem& p, const KernelOptions& opt) {
  if (auto e = p.validate()) return e;
  // On probation until it has passed the GPU suite: experiments/gpu/smoke.sh writes this switch for a
  // variant that failed a smoke case, so a suite run of all variants can leave it out.
  if (const char* off = std::getenv("IOATTN_V07B_DISABLE"); off && off[0] != '\0' && off[0] != '0')
    return "v07b_decode_wgmma: disabled by IOATTN_V07B_DISABLE";
#if defined(IOATTN_PLATFORM_NVIDIA)
  if (auto e = decode::check_problem("v07b_decode_wgmma", kConfigs, p, opt)) return e;
  return wgmma_available();  // an sm_90a build on a device that loads its code
#else
  (void)opt;
  return "v07b_decode_wgmma needs NVIDIA Hopper (wgmma); on AMD use v07_decode_splitkv";
#endif
}

std::size_t v07b_decode_wgmma_workspace_bytes(const AttnProblem& p, const KernelOptions& opt) {
#if defined(IOATTN_PLATFORM_NVIDIA)
  if (decode::check_problem("v07b_decode_wgmma", kConfigs, p, opt)) return 0;  // a function of the problem
  return decode::workspace_bytes(kConfigs, p, opt);
#else
  (void)p, (void)opt;
  return 0;
#endif
}

namespace {
// The launch path of launch() and config(): the main kernel (described), and the combine when S > 1.
LaunchStatus run(const AttnProblem& p, const DeviceTensors& t, const KernelOptions& opt, void* workspace,
                 const Launcher& L) {
  if (auto e = v07b_decode_wgmma_supports(p, opt)) return e;
#if defined(IOATTN_PLATFORM_NVIDIA)
  return decode::launch_plan("v07b_decode_wgmma", kConfigs, p, t, opt, workspace, L);
#else
  (void)t, (void)workspace, (void)L;
  return "v07b_decode_wgmma needs NVIDIA Hopper (wgmma)";
#endif
}
}  // namespace

LaunchStatus v07b_decode_wgmma_launch(const AttnProblem& p, const DeviceTensors& t, const KernelOptions& opt,
                                      void* workspace, void* stream) {
  return run(p, t, opt, workspace, Launcher::enqueue(stream));
}

LaunchStatus v07b_decode_wgmma_config(const AttnProblem& p, const KernelOptions& opt, LaunchConfig& out) {
  return describe_launch(out, [&](const Launcher& L) { return run(p, {}, opt, nullptr, L); });
}

}  // namespace ioattn::kernels

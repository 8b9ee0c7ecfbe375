// kernels/v07_decode_splitkv.hip: Flash-Decoding on matrix cores (split-KV for short queries).
//
// What changed vs v05_fa2_fast (same fragments, pipeline and softmax ideas) and v03b (same split
// and combine; the combine is kernels/splitkv_combine.hpp, shared with v03b):
//   1. GQA packing: a CTA owns one K/V head (b, h_kv) and the rows of ALL G = Hq/Hkv query heads of
//      its group times the query positions: packed row R = i * G + g is query i of head h_kv*G + g.
//      R = G * Nq rows form the M side of the MMA (seqlen_q 1, G 4: 4 rows padded to one 16-row
//      atom), so one K/V tile read from HBM serves every query head of the group. More than Br rows
//      (G * Nq > 64 here) are cut into row tiles, Tr = ceil(R / Br), each its own CTA.
//   2. Split-KV: the keys a row tile sees are cut into S splits, one CTA each; split s computes
//      its range into the workspace (partial O normalized over its keys, fp32, and its LSE), and
//      the shared combine adds them by log-sum-exp. S = 1 writes O and LSE directly, no combine.
//   3. Warps split the keys, not the rows: each K/V stage holds Bc * W_N keys, warp (w_m, w_n)
//      takes keys [w_n Bc, (w_n + 1) Bc) of it for its 16 kMT rows; at the end the W_N warps of
//      a row combine in shared memory (the same log-sum-exp, within the CTA). A decode tile has
//      few rows, so this keeps four warps (four SM sub-partitions' tensor cores) busy on one tile.
//
// Default S (when --splits is 0): decode::default_splits (kernels/decode_common.hpp, shared with
// v07b), a cost model of waves x stages per CTA on the H200 (132 SMs x the CTAs an SM holds;
// derived in its comment). --splits 1..128 overrides
// it; splits beyond the keys get no key: such a split writes LSE_s = -inf (and O_s = 0) and
// combines with weight 0.
//
// HBM traffic (simulator strategy `splitkv`), e = 2 bytes, G = Hq / Hkv, R = G * Nq, Tr = ceil(R / Br):
//   K, V read once per (K/V head, row tile):  2 * e * B*Hkv*Tr*Nk*d   (decode, R <= Br: Tr = 1, so
//                                             K and V once, whatever G: the compulsory traffic)
//   Q read once, O written once:              2 * e * B*Hq*Nq*d,     LSE written once: 4 * B*Hq*Nq
//   S > 1, partials written and read once:    2 * 4 * S*B*Hq*Nq*(d + 1)   (batch 1, 8k keys, S 32:
//                                             2.1 MB against 33.6 MB of K and V; batch 16, S 2: 0.5 %)
//   paged: the block table, 4 bytes per key of the sequence once (per split), from L2
//   causal/windowed: each row tile reads only the keys its rows see.
// The simulator's `splitkv` counts K/V per query head and lets its L2 model merge a GQA group's
// re-reads within a wave; this kernel reads them once by construction (packing).
//
// Supports: fp16, bf16 (fp32 accumulate); d in {64, 128, 256}; any Nq >= 1, fast for decode (up to
// G * Nq = 64 packed rows); more rows take 128-row tiles (64 at d = 256) that re-read K/V per row
// tile through the L2: correct, not tuned (prefill is v05's and v06's, and the ladder lists v07
// beside v03b, below them, so a caller that takes the highest rung that accepts a problem, as
// python/ioattn.py does, keeps choosing v05/v06); any Nk >= 1, causal (bottom-right), sliding
// windows, GQA/MQA/MHA; LSE out; fully masked rows give O = 0, LSE = -inf. No --br/--bc (the tile
// follows from G * Nq); --splits 1..128.
// Paged KV cache (ioattn/layout.hpp; declared in registry.cpp's layout table): K and V are
// (num_pages, page_size, Hkv, d), any page_size >= 1; each key's cache row comes from the block
// table (page-granular rows below; a row never straddles a page, a stage's keys may), sequence b has seqused_k[b] keys
// (0 allowed: O = 0, LSE = -inf) and its own bottom-right causal diagonal and window. Q stays dense
// (batch, seqlen_q, Hq, d): packed (varlen) queries or keys are refused. The tile, split count and
// grid come from seqlen_k (max_seqlen_k), so short sequences of a long batch leave splits empty.
// Page-granular rows: the cache row of each key of a tile is read from the table once, by one
// thread, one tile ahead, into a small shared row table (kRowSlots x keys per stage, int32); the
// 16-byte copies of K and V of that key take it from there (any page size; a tile may span pages).
// Tiles (NVIDIA, chosen by R; Br packed rows, W_M x W_N warps, kMT 16-row atoms per warp, Bc keys
// per warp, stages): R <= 16: 16 rows, 1x4 warps, Bc 16 (64 keys per stage), 3 stages (2 CTAs per
// SM); R <= 32: 32 rows, 1x4, kMT 2, 4 stages; R <= 64: 64 rows, 2x4 warps (8: seqlen_q 16 at
// G 4 is MMA-heavy, 64 x 64 x 128 per product per stage, and 4 warps on one SM left each
// sub-partition one warp to hide the MMA latency), kMT 2, Bc 16, 4 stages (these two hold one CTA
// per SM by shared memory, so a fourth stage keeps 3 stages, 96 KiB of K and V, in flight per SM
// instead of 2); more: 128 rows, 4x1, kMT 2, Bc 32, 3 stages. d = 256:
// 16 rows 1x4 or 64 rows 4x1 (kMT 1). AMD (64 KiB of LDS): 2 stages, smaller tiles (kConfigs).
// Shared memory: Q (Br, d+8) + stages * [K, V (keys per stage, d+8)] 2-byte elements + the paged row
// table (d = 128, R <= 16: 107 KiB: two CTAs per SM fit); the epilogue reuses it for the W_N fp32
// partial O rows.
// Workspace: S = 1: none; else 4 * S * B*Hq*Nq*(d + 1) bytes (kernels/splitkv_combine.hpp).
// Launches: 1 (S = 1) or 2 (main + combine). Grid (1-D, grid order kv_splits_rows): CTA =
// ((b * Hkv + h_kv) * S + split) * Tr + row tile. config() reports br = packed rows per CTA,
// bc = keys per stage (all warps), stages, splits (the resolved S) and launches.
// Measured on the H200: passes the GPU suite, memcheck and racecheck (2026-12-01); a first decode
// run (one sample, --quick) is experiments/results/h200/2026-12-01_02eaf49_backward_decode/decode.log:
// below the copy ceiling and below cuDNN, not yet tuned.
// The paged-KV path (kPaged), added after that run, passes the GPU suite (360 paged cases) and
// both sanitizers (experiments/results/h200/2026-12-01_0404dc1_verify). Quick decode grid
// (2026-12-01_f13273b_newkernels/decode.log): contiguous 0.19-0.86 of the copy ceiling, 0.52-0.80x
// cuDNN; paged page 16 at 55-90 % of contiguous.
// Tuning after that run (session 6), then measured (binaries eeb7765): GPU suite and memcheck pass
// (experiments/results/h200/2026-12-01_eeb7765_verify), racecheck of the changed paths is clean
// (2026-12-01_eeb7765_racecheck_new); the issue's full decode grid is 2026-12-01_eeb7765_decode
// (README.md's decode_headline: near the copy ceiling at 1 and 4 queries, below cuDNN at 1 query,
// short of the copy ceiling at 16 queries). The changes:
//   - page-granular rows (above): one table read per key per tile instead of one per 16-byte copy
//     of K and again of V (32 per key at d 128), and no division per copy; the reads hide behind
//     the pipeline wait. Expected: paged within a few % of contiguous (same HBM bytes, the table
//     adds 4 bytes per key from L2).
//   - the split heuristic (default_splits): one full wave at batch 16 (S 2; was S 5 in 2.4 waves,
//     the measured 0.78-0.86 of copy), 256 CTAs at batch 1 (S 32: 4 stages per CTA at 8k keys).
//   - K and V copies of one key chunk share one address (one offset, two cp.async), with an L2
//     prefetch hint of 256 bytes (a key's row of a head at d 128).
//   - the combine (splitkv_combine.hpp) sums the splits in groups with 16-byte loads (batch 1:
//     32 row blocks, each had 128 threads walking all S splits one float at a time).
// Paged: ioattn run --kernel v07_decode_splitkv --seqlen-q 1 --seqlens-k 4096,0,17 --page-size 16 --shuffle-pages --heads-q 32 --heads-kv 8 --head-dim 128 --dtype bf16 --check
// Run: ioattn run --kernel v07_decode_splitkv --batch 16 --heads-q 32 --heads-kv 8 --seqlen-q 1 --seqlen-k 8192 --head-dim 128 --dtype bf16 --check
#include <algorithm>
#include <cmath>
#include <iterator>
#include <string>

#include "kernels/attn_view.hpp"
#include "kernels/decode_common.hpp"
#include "kernels/launcher.hpp"
#include "kernels/layout_rows.hpp"
#include "kernels/platform/fragment.hpp"
#include "kernels/platform/platform.hpp"
#include "kernels/splitkv_combine.hpp"

namespace ioattn::kernels {
namespace {

// The GPU the split heuristic fills, the K/V copy, the paged row table, the key-split epilogue, the
// split heuristic and the host side (tile table, plan, constraints, launch path):
// kernels/decode_common.hpp (shared with v07b_decode_wgmma).
using decode::copy_kv_16;
using decode::kMaxSplits;
using decode::paged_tile_row;
#if defined(IOATTN_PLATFORM_NVIDIA)
constexpr bool kIsNvidia = true;
#else
constexpr bool kIsNvidia = false;
#endif

// Compile-time shape of one configuration, and its preconditions.
template <int kD_, int kWM_, int kWN_, int kMT_, int kBc_, int kStages_>
struct DecodeTile {
  static constexpr int kD = kD_;
  static constexpr int kWM = kWM_;                   // warps along the packed rows
  static constexpr int kWN = kWN_;                   // warps along the keys of a stage
  static constexpr int kMT = kMT_;                   // 16-row atoms per warp
  static constexpr int kBc = kBc_;                   // keys per warp per stage
  static constexpr int kStages = kStages_;
  static constexpr int kWarps = kWM_ * kWN_;
  static constexpr int kThreads = kWarps * kWarpSize;
  static constexpr int kWarpRows = frag::kM * kMT_;  // packed rows per warp
  static constexpr int kBr = kWarpRows * kWM_;       // packed rows per CTA
  static constexpr int kKeys = kBc_ * kWN_;          // keys per stage
  static constexpr int kLd = kD_ + 8;                // padded shared row (elements): conflict-free ldmatrix
  static constexpr int kChunks = kD_ / 8;            // 16-byte chunks per row
  static constexpr bool kQRegs = kMT_ * kD_ <= 128;  // Q fragments in registers (else re-read, ldmatrix)
  // Paged: the cache row of every key of kRowSlots tiles (int32: cache rows <= 2^24, layout.hpp),
  // filled one tile ahead of its copies (at least 3 slots: see the main loop).
  static constexpr int kRowSlots = kStages_ < 3 ? 3 : kStages_;
  static constexpr int kMainBytes =
      ((kBr + 2 * kStages_ * kKeys) * kLd + kWarps * frag::kPScratchElems) * 2 + kRowSlots * kKeys * 4;
  static constexpr int kRedLd = kD_ + 4;             // fp32 row of the epilogue's partial O (16-byte rows)
  static constexpr int kEpiBytes = (kWN_ * kBr * kRedLd + 2 * kWN_ * kBr) * 4;
  static constexpr int kSmemBytes = kMainBytes > kEpiBytes ? kMainBytes : kEpiBytes;
  // CTAs one SM holds by shared memory, at most 2 (the split heuristic's slots; on NVIDIA also the
  // launch bound: 2 x 128 threads x 255 registers fit the 64K register file, so the bound never
  // costs registers; a third CTA would cap them at 168 and spill): 228 KiB per SM on the H100/H200,
  // 1 KiB reserved per CTA.
  static constexpr int kCtasPerSm = decode::ctas_per_sm(kSmemBytes);
  static constexpr int kMinBlocks = kIsNvidia ? kCtasPerSm : 1;  // __launch_bounds__'s second argument
  static_assert(kKeys <= kThreads, "the paged row table is filled by one thread per key of a tile");
  static_assert(kD_ % 16 == 0, "head_dim must be a multiple of 16 (the MMA K)");
  static_assert(kBc_ % 16 == 0, "Bc must be a multiple of 16 (P V consumes 16 keys per MMA)");
  static_assert(kStages_ >= 2, "the pipeline needs at least two stages");
  static_assert(kSmemBytes <= kMaxSharedBytes, "tiles exceed the platform's shared memory (LDS) per block");
};

// Lazy rescaling threshold, in exp2 units: P <= 2^8 before normalization (v05's argument).
constexpr float kLazyLog2 = 8.0f;

// Keys [k0, k0 + kKeys) of one K/V head into the stage's K and V rows (kLd elements); keys >= k_end
// are zero-filled and never read from global. Dense (kPaged false): key j is row j, at g + j * stride.
// Paged: key k0 + r is cache row s_rows[r] (the tile's slot of the row table, filled before; a
// page holds whole rows, so no copy straddles a page, while the keys of a tile may span pages).
// Each 16-byte chunk's address is computed once and serves the K copy and the V copy.
template <class Tl, bool kPaged, class T>
__device__ inline void load_kv_stage(T* sK, T* sV, const T* gK, const T* gV, int64_t stride, int k0, int k_end,
                                     int tid, const int32_t* s_rows) {
  constexpr int kTotal = Tl::kKeys * Tl::kChunks;
  if constexpr (Tl::kThreads % Tl::kChunks == 0 && Tl::kKeys % (Tl::kThreads / Tl::kChunks) == 0) {
    // Every configuration: a thread copies the same chunk ch of keys r_t, r_t + kStep, ...; its
    // addresses advance by one step (kStep rows) per copy, so only one running offset (dense) or
    // the row table (paged) is live, not one hoisted 64-bit offset per copy.
    constexpr int kStep = Tl::kThreads / Tl::kChunks;
    const int r_t = tid / Tl::kChunks, ch = tid % Tl::kChunks;
    const int64_t step = int64_t{kStep} * stride;
    int64_t off = int64_t{k0 + r_t} * stride + ch * 8;  // dense: key k0 + r_t's chunk
    int s_off = r_t * Tl::kLd + ch * 8;
#pragma unroll
    for (int it = 0; it < Tl::kKeys / kStep; ++it) {
      const int r = r_t + it * kStep;
      const bool valid = k0 + r < k_end;
      if constexpr (kPaged) off = int64_t{s_rows[r]} * stride + ch * 8;  // row 0 past k_end
      const int64_t src = valid ? off : 0;
      copy_kv_16(sK + s_off, gK + src, valid);  // HBM read: K, 16 B
      copy_kv_16(sV + s_off, gV + src, valid);  // HBM read: V, 16 B
      if constexpr (!kPaged) off += step;
      s_off += kStep * Tl::kLd;
    }
  } else {
#pragma unroll
    for (int it = 0; it < (kTotal + Tl::kThreads - 1) / Tl::kThreads; ++it) {
      const int c = tid + it * Tl::kThreads;
      if (kTotal % Tl::kThreads != 0 && c >= kTotal) break;
      const int r = c / Tl::kChunks, ch = c % Tl::kChunks;
      const bool valid = k0 + r < k_end;
      int64_t row = 0;
      if constexpr (kPaged) {
        row = s_rows[r];  // 0 past k_end
      } else {
        row = valid ? k0 + r : 0;
      }
      const int64_t off = row * stride + ch * 8;
      copy_kv_16(sK + r * Tl::kLd + ch * 8, gK + off, valid);  // HBM read: K, 16 B
      copy_kv_16(sV + r * Tl::kLd + ch * 8, gV + off, valid);  // HBM read: V, 16 B
    }
  }
}

// Fragments (platform/fragment.hpp's maps: mma.sync m16n8k16 on NVIDIA, MFMA 16x16x16 on AMD).
// Rows are CTA-local packed rows (wr0 = this warp's first, R = r0 + row), keys absolute:
//   r_Q[mt][kk]   A of S = Q K^T: row wr0 + 16 mt + a_row(lane, e), d column 16 kk + a_col(lane, e)
//   r_Kb[u]       B of S: key kj0 + 16 g + kN u + b_n(lane, e), d column 16 kk + b_k(lane, e)
//   r_S[mt][t]    C (S, then P in place): row wr0 + 16 mt + c_row(lane, e), key kj0 + kN t + c_col(lane, e)
//   r_P[mt]       A of O += P V: P's keys kj0 + 16 g .. + 15 as the k dimension (frag::p_to_a)
//   r_Vb[u]       B of P V: key kj0 + 16 g + b_k(lane, e), d column 16 dd + kN u + b_n(lane, e)
//   r_O[mt][t]    C: row wr0 + 16 mt + c_row(lane, e), d column kN t + c_col(lane, e)
//   m_i, l_i, r_kb, r_ke [mt][s]: the lane's row slot s (= c_row_slot(e)), row wr0 + 16 mt + c_slot_row(lane, s)
// blockIdx.x = ((b * Hkv + h_kv) * splits + split) * row_tiles + row_tile.
// splits == 1: writes O (B, Nq, Hq, d) and LSE. splits > 1: writes split's O_s (fp32, normalized
// over its keys) and LSE_s into the partials (splitkv_combine.hpp), for every row of the tile.
// kPaged: K and V are a paged cache read through pk (PagedKv, layout_rows.hpp); sequence b then has
// pk.seqused[b] keys and its own bottom-right causal alignment and window (mask.seqlen_k).
template <class T, class Tl, bool kPaged>
__global__ void __launch_bounds__(Tl::kThreads, Tl::kMinBlocks)
decode_splitkv_kernel(AttnView a, PagedKv pk, int splits, int row_tiles, const T* __restrict__ g_Q_all,
                      const T* __restrict__ g_K_all, const T* __restrict__ g_V_all, T* __restrict__ g_O_all,
                      float* __restrict__ g_LSE, float* __restrict__ g_Opart, float* __restrict__ g_LSEpart) {
  constexpr int kD = Tl::kD, kBr = Tl::kBr, kBc = Tl::kBc, kLd = Tl::kLd, kStages = Tl::kStages;
  constexpr int kMT = Tl::kMT, kWN = Tl::kWN, kKeys = Tl::kKeys;
  constexpr int kNS = kBc / frag::kN;  // accumulator atoms across one warp's S strip (16, Bc)
  constexpr int kNO = kD / frag::kN;   // accumulator atoms across one O strip (16, d)
  constexpr int kKD = kD / frag::kK;   // k-steps over d
  constexpr int kR = frag::kCRows;     // accumulator rows a lane holds per 16-row atom

  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* s_Q = reinterpret_cast<T*>(smem_raw);  // (Br, kLd): packed rows, zero past the last
  T* s_K = s_Q + kBr * kLd;                 // (kStages, kKeys, kLd)
  T* s_V = s_K + kStages * kKeys * kLd;     // (kStages, kKeys, kLd)
  T* s_P = s_V + kStages * kKeys * kLd;     // (kWarps, 16, 16): AMD only (frag::p_to_a)
  int32_t* s_rows = reinterpret_cast<int32_t*>(s_P + Tl::kWarps * frag::kPScratchElems);  // (kRowSlots, kKeys): paged

  const int tid = threadIdx.x, warp = tid / kWarpSize, lane = tid % kWarpSize;
  const int wn = warp % kWN, wm = warp / kWN;
  int64_t cta = blockIdx.x;
  const int rt = static_cast<int>(cta % row_tiles);
  cta /= row_tiles;
  const int split = static_cast<int>(cta % splits);
  cta /= splits;
  const int64_t hk = cta % a.heads_kv, b = cta / a.heads_kv;
  const int G = static_cast<int>(a.group);
  const int rows = G * static_cast<int>(a.seqlen_q);  // packed rows of (b, h_kv): R = i * G + g
  const int r0 = rt * kBr, r1 = min(r0 + kBr, rows);  // this CTA's packed rows [r0, r1)
  const int q0 = r0 / G, q1 = (r1 - 1) / G + 1;       // ... are queries [q0, q1) of G heads

  // Keys the tile's rows see, [kb, ke); this split's share of them, [k_lo, k_hi), a multiple of
  // the stage's keys long (the last split may be shorter, later ones empty).
  MaskSpec mask = a.mask;
  const int32_t* page_row = nullptr;  // paged: this sequence's block-table row
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
  // Dense: key j at g_K + j * kv_stride. Paged: cache row r at g_K + r * kv_stride (load_kv_stage).
  const int64_t kv_base = kPaged ? hk * a.head_dim : a.kv_offset(b, 0, hk);
  const T* g_K = g_K_all + kv_base;
  const T* g_V = g_V_all + kv_base;

  // Prologue: Q (one commit group), then the first kStages-1 K/V stages, one group each.
  for (int c = tid; c < kBr * Tl::kChunks; c += Tl::kThreads) {
    const int r = c / Tl::kChunks, ch = c % Tl::kChunks, R = r0 + r;
    const bool valid = R < r1;
    const int64_t off = valid ? a.q_offset(b, R / G, hk * G + R % G) : 0;
    frag::async_copy_16(s_Q + r * kLd + ch * 8, g_Q_all + off + ch * 8, valid);  // HBM read: Q, once
  }
  frag::async_commit();
  // Paged: the row table of tiles 0 .. kStages-1 (the prologue's and iteration 0's copies); tile t
  // lives in slot t % kRowSlots. Later tiles are filled one iteration ahead in the main loop.
  if constexpr (kPaged) {
    if (tid < kKeys) {
#pragma unroll
      for (int t = 0; t < kStages; ++t)
        s_rows[t * kKeys + tid] = paged_tile_row(page_row, pk.page_size, k_lo + t * kKeys + tid, k_hi);  // table read
    }
    __syncthreads();
  }
#pragma unroll
  for (int st = 0; st < kStages - 1; ++st) {
    if (st < n_tiles)
      load_kv_stage<Tl, kPaged>(s_K + st * kKeys * kLd, s_V + st * kKeys * kLd, g_K, g_V, kv_stride, k_lo + st * kKeys,
                                k_hi, tid, s_rows + st * kKeys);  // HBM read: K, V
    frag::async_commit();  // possibly empty: keeps the group count uniform
  }
  frag::async_wait<kStages - 1>();  // Q has landed
  __syncthreads();

  // This warp: CTA rows [wr0, wr0 + 16 kMT), atom mt = rows wr0 + 16 mt ...; valid ones [wa, wb).
  const int wr0 = wm * Tl::kWarpRows;
  const int wa = r0 + wr0, wb = min(wa + Tl::kWarpRows, r1);
  frag::FragA r_Q[Tl::kQRegs ? kMT : 1][Tl::kQRegs ? kKD : 1];  // (16 kMT, d) A fragments
  if constexpr (Tl::kQRegs) {
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int kk = 0; kk < kKD; ++kk) r_Q[mt][kk] = frag::load_a_fast(s_Q, kLd, wr0 + mt * frag::kM, kk * frag::kK, lane);
  }
  // Keys any valid row of the warp sees within the split: [wkb, wke) (queries [wq0, wq1)).
  const int wq0 = wa < wb ? wa / G : 0, wq1 = wa < wb ? (wb - 1) / G + 1 : 0;
  const int wkb = wa < wb ? max(k_lo, static_cast<int>(mask.key_begin(wq0))) : 0;
  const int wke = wa < wb ? min(k_hi, static_cast<int>(mask.key_end(wq1 - 1))) : 0;
  // Per lane row (atom mt, slot s): its visible keys in the split, [r_kb, r_ke); padding rows
  // (R >= r1) see none.
  int r_kb[kMT][kR], r_ke[kMT][kR];
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int s = 0; s < kR; ++s) {
      const int R = wa + mt * frag::kM + frag::c_slot_row(lane, s);
      r_kb[mt][s] = R < r1 ? max(k_lo, static_cast<int>(mask.key_begin(R / G))) : 0;
      r_ke[mt][s] = R < r1 ? min(k_hi, static_cast<int>(mask.key_end(R / G))) : 0;
    }

  frag::FragC r_O[kMT][kNO];  // (16 kMT, d) fp32, unnormalized, relative to m_i
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int t = 0; t < kNO; ++t) frag::zero(r_O[mt][t]);
  float m_i[kMT][kR], l_i[kMT][kR];  // running max (raw score units), this lane's share of the row sum
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int s = 0; s < kR; ++s) m_i[mt][s] = -INFINITY, l_i[mt][s] = 0.f;
  const float sl2 = a.scale_log2;

  for (int j = 0; j < n_tiles; ++j) {
    const int stage = j % kStages;
    // Paged: the table read for tile j + kStages is issued before the wait (its latency hides
    // behind it) and stored before the barrier, into slot (j + kStages) % kRowSlots; iteration
    // j + 1 copies that tile after its own barrier. With kRowSlots >= 3 the slot written here is
    // neither the one this iteration's copies read (tile j + kStages - 1) nor the one a thread
    // still in iteration j - 1 may read (tile j + kStages - 2).
    int32_t next_row = 0;
    if constexpr (kPaged) {
      if (tid < kKeys && j + kStages < n_tiles)
        next_row = paged_tile_row(page_row, pk.page_size, k_lo + (j + kStages) * kKeys + tid, k_hi);  // table read
    }
    frag::async_wait<kStages - 2>();  // stage j has landed (this thread's copies) ...
    if constexpr (kPaged) {
      if (tid < kKeys) s_rows[((j + kStages) % Tl::kRowSlots) * kKeys + tid] = next_row;
    }
    __syncthreads();                  // ... everyone's; and everyone is done with stage j-1
    {
      const int jn = j + kStages - 1;  // refill the stage j-1 used
      if (jn < n_tiles) {
        const int sn = jn % kStages;
        load_kv_stage<Tl, kPaged>(s_K + sn * kKeys * kLd, s_V + sn * kKeys * kLd, g_K, g_V, kv_stride,
                                  k_lo + jn * kKeys, k_hi, tid, s_rows + (jn % Tl::kRowSlots) * kKeys);  // HBM read: K, V
      }
      frag::async_commit();
    }
    const int kj0 = k_lo + j * kKeys + wn * kBc;  // this warp's keys [kj0, kj0 + Bc)
    if (kj0 >= wke || kj0 + kBc <= wkb) continue;  // warp-uniform: no row of the warp sees them
    const T* s_Kw = s_K + (stage * kKeys + wn * kBc) * kLd;  // (Bc, kLd)
    const T* s_Vw = s_V + (stage * kKeys + wn * kBc) * kLd;  // (Bc, kLd)

    // S = Q K^T  (16 kMT, Bc) raw scores; each K fragment feeds kMT MMAs.
    frag::FragC r_S[kMT][kNS];
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int t = 0; t < kNS; ++t) frag::zero(r_S[mt][t]);
#pragma unroll
    for (int kk = 0; kk < kKD; ++kk) {
      frag::FragA r_Qk[kMT];
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt) {
        if constexpr (Tl::kQRegs) r_Qk[mt] = r_Q[mt][kk];
        else r_Qk[mt] = frag::load_a_fast(s_Q, kLd, wr0 + mt * frag::kM, kk * frag::kK, lane);
      }
#pragma unroll
      for (int g = 0; g < kBc / 16; ++g) {
        frag::FragB r_Kb[frag::kNPer16];
        frag::load_b_nk_fast(r_Kb, s_Kw, kLd, g * 16, kk * frag::kK, lane);
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
          for (int u = 0; u < frag::kNPer16; ++u) frag::mma<T>(r_S[mt][g * frag::kNPer16 + u], r_Qk[mt], r_Kb[u]);
      }
    }

    // Mask only where the tile crosses a boundary: the mask's (diagonal, window edge) for the
    // warp's queries, or the split's end (keys past it are the next split's, or past seqlen_k).
    if (!mask.tile_unmasked(wq0, wq1, kj0, kj0 + kBc) || kj0 + kBc > k_hi) {
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
        for (int t = 0; t < kNS; ++t)
#pragma unroll
          for (int e = 0; e < frag::kCElems; ++e) {
            const int s = frag::c_row_slot(e), col = kj0 + t * frag::kN + frag::c_col(lane, e);
            if (col < r_kb[mt][s] || col >= r_ke[mt][s]) r_S[mt][t].x[e] = -INFINITY;
          }
    }

    // Online softmax per 16-row atom, lazy rescaling (m_i moves only when a row's max grows by
    // more than 2^kLazyLog2 in exp2 units, always on its first visible tile where m_i = -inf).
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt) {
      float m_new[kR];
      bool grow[kR], any_grow = false;
#pragma unroll
      for (int s = 0; s < kR; ++s) m_new[s] = -INFINITY;
#pragma unroll
      for (int t = 0; t < kNS; ++t)
#pragma unroll
        for (int e = 0; e < frag::kCElems; ++e)
          m_new[frag::c_row_slot(e)] = fmaxf(m_new[frag::c_row_slot(e)], r_S[mt][t].x[e]);
#pragma unroll
      for (int s = 0; s < kR; ++s) {
        m_new[s] = frag::row_allreduce_max(m_new[s]);
        grow[s] = (m_new[s] - m_i[mt][s]) * sl2 > kLazyLog2;  // m_i = -inf: grows unless m_new is too
        any_grow |= grow[s];
      }
      if (frag::warp_any(any_grow)) {  // warp-uniform branch
        float alpha[kR];
#pragma unroll
        for (int s = 0; s < kR; ++s) {
          alpha[s] = grow[s] ? frag::fast_exp2((m_i[mt][s] - m_new[s]) * sl2) : 1.f;  // m_i = -inf -> 0
          if (grow[s]) m_i[mt][s] = m_new[s];
          l_i[mt][s] *= alpha[s];
        }
#pragma unroll
        for (int t = 0; t < kNO; ++t)
#pragma unroll
          for (int e = 0; e < frag::kCElems; ++e) r_O[mt][t].x[e] *= alpha[frag::c_row_slot(e)];
      }
      // A row that has seen only masked keys keeps m = -inf: use 0 so S - m is -inf, not NaN.
      float m_scaled[kR];
#pragma unroll
      for (int s = 0; s < kR; ++s) m_scaled[s] = m_i[mt][s] == -INFINITY ? 0.f : m_i[mt][s] * sl2;
#pragma unroll
      for (int t = 0; t < kNS; ++t)
#pragma unroll
        for (int e = 0; e < frag::kCElems; ++e) {
          const int s = frag::c_row_slot(e);
          const float p = frag::fast_exp2(fmaf(r_S[mt][t].x[e], sl2, -m_scaled[s]));  // P, in place
          r_S[mt][t].x[e] = p;
          l_i[mt][s] += p;
        }
    }

    // O += P V  (16 kMT, d); P becomes the A operand (registers on NVIDIA, LDS scratch on AMD).
#pragma unroll
    for (int g = 0; g < kBc / 16; ++g) {
      frag::FragA r_P[kMT];
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt)
        r_P[mt] = frag::p_to_a<T>(*reinterpret_cast<const frag::FragC(*)[frag::kNPer16]>(&r_S[mt][g * frag::kNPer16]),
                                  s_P + warp * frag::kPScratchElems, lane);
#pragma unroll
      for (int dd = 0; dd < kD / 16; ++dd) {
        frag::FragB r_Vb[frag::kNPer16];
        frag::load_b_kn_fast(r_Vb, s_Vw, kLd, g * 16, dd * 16, lane);
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
          for (int u = 0; u < frag::kNPer16; ++u) frag::mma<T>(r_O[mt][dd * frag::kNPer16 + u], r_P[mt], r_Vb[u]);
      }
    }
  }
  frag::async_wait<0>();  // only empty groups remain; drain them
  __syncthreads();        // every warp is done with Q, K, V: the epilogue reuses shared memory

  // Epilogue 1: each warp's row statistics to shared memory. Warp w_n's row r (CTA-local):
  // s_m[w_n][r] = m (raw units, -inf when it saw no key), s_l[w_n][r] = l relative to m.
  float* s_Ored = reinterpret_cast<float*>(smem_raw);  // (kWN, Br, kRedLd) fp32
  float* s_m = s_Ored + kWN * kBr * Tl::kRedLd;        // (kWN, Br)
  float* s_l = s_m + kWN * kBr;                        // (kWN, Br)
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int s = 0; s < kR; ++s) {
      const float l = frag::row_allreduce_sum(l_i[mt][s]);
      if (lane % frag::kRowLanes == 0) {
        const int r = wr0 + mt * frag::kM + frag::c_slot_row(lane, s);
        s_m[wn * kBr + r] = m_i[mt][s];
        s_l[wn * kBr + r] = l;
      }
    }
  __syncthreads();
  // Epilogue 2: each warp rescales its O rows to the row's max over the W_N warps, M, and writes
  // them as fp32: s_Ored[w_n][r][x] = 2^(sl2 (m_wn - M)) O_wn[r][x] (0 for a warp that saw no key).
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt) {
    float f[kR];
#pragma unroll
    for (int s = 0; s < kR; ++s) {
      const int r = wr0 + mt * frag::kM + frag::c_slot_row(lane, s);
      float M = -INFINITY;
#pragma unroll
      for (int w = 0; w < kWN; ++w) M = fmaxf(M, s_m[w * kBr + r]);
      f[s] = m_i[mt][s] == -INFINITY ? 0.f : frag::fast_exp2((m_i[mt][s] - M) * sl2);
    }
#pragma unroll
    for (int t = 0; t < kNO; ++t)
#pragma unroll
      for (int e = 0; e < frag::kCElems; ++e) {
        const int r = wr0 + mt * frag::kM + frag::c_row(lane, e);
        s_Ored[(wn * kBr + r) * Tl::kRedLd + t * frag::kN + frag::c_col(lane, e)] = r_O[mt][t].x[e] * f[frag::c_row_slot(e)];
      }
  }
  __syncthreads();
  // Epilogue 3: all threads, 4 columns each: O = sum_w O_w / sum_w f_w l_w; LSE = scale M + log L.
  // splits == 1: O (element type) and LSE out; else the split's normalized partial O_s, LSE_s.
  decode::finish_key_split_rows<T, kWN, kBr, kD, Tl::kRedLd, Tl::kThreads>(a, s_Ored, s_m, s_l, tid, r0, r1, G, hk, b, split,
                                                                          splits, sl2, g_O_all, g_LSE, g_Opart, g_LSEpart);
}

// ---- configurations -------------------------------------------------------------------------------
// decode::Config (kernels/decode_common.hpp): one compiled tile and its launch.
using decode::Config;

template <class Tl>
LaunchStatus launch_tile(const AttnView& a, const PagedKv& pk, const DeviceTensors& t, DType dt, int splits,
                         int row_tiles, const splitkv::Partials& w, const Launcher& L) {
  const MainKernel main{.br = Tl::kBr, .bc = Tl::kKeys, .stages = Tl::kStages, .splits = splits,
                        .grid_order = "kv_splits_rows"};
  return dispatch_dtype(dt, [&]<class T>() -> LaunchStatus {
    if constexpr (sizeof(T) != 2) {
      return "v07_decode_splitkv: dtype must be fp16 or bf16";
    } else {
      auto* kernel = pk.page_size > 0 ? &decode_splitkv_kernel<T, Tl, true> : &decode_splitkv_kernel<T, Tl, false>;
      return decode::launch_main_and_combine<T>(L, main, kernel, Tl::kThreads, Tl::kSmemBytes, a, pk, t, splits,
                                                row_tiles, w);
    }
  });
}

// DecodeTile<d, W_M, W_N, kMT, Bc, stages>; per d in ascending Br (the first with Br >= G * Nq
// is taken, else the last).
#define V07_CONFIG(d, wm, wn, mt, bc, st)                                                            \
  Config{d, 16 * (wm) * (mt), (bc) * (wn), st, DecodeTile<d, wm, wn, mt, bc, st>::kCtasPerSm,            \
         "d" #d "_w" #wm "x" #wn "_mt" #mt "_bc" #bc "_s" #st, &launch_tile<DecodeTile<d, wm, wn, mt, bc, st>>}
#if defined(IOATTN_PLATFORM_NVIDIA)
const Config kConfigs[] = {
    V07_CONFIG(128, 1, 4, 1, 16, 3), V07_CONFIG(128, 1, 4, 2, 16, 4), V07_CONFIG(128, 2, 4, 2, 16, 4),
    V07_CONFIG(128, 4, 1, 2, 32, 3),
    V07_CONFIG(64, 1, 4, 1, 16, 3),  V07_CONFIG(64, 1, 4, 2, 16, 3),  V07_CONFIG(64, 2, 2, 2, 32, 3),
    V07_CONFIG(64, 4, 1, 2, 32, 3),
    V07_CONFIG(256, 1, 4, 1, 16, 3), V07_CONFIG(256, 4, 1, 1, 16, 3),
};
#else
const Config kConfigs[] = {
    V07_CONFIG(128, 1, 2, 1, 16, 2), V07_CONFIG(128, 2, 1, 2, 16, 2),
    V07_CONFIG(64, 1, 2, 1, 16, 2),  V07_CONFIG(64, 2, 1, 2, 16, 2),
    V07_CONFIG(256, 1, 1, 1, 16, 2), V07_CONFIG(256, 2, 1, 1, 16, 2),
};
#endif
#undef V07_CONFIG

}  // namespace

// The constraints, the plan (tile by packed rows, row tiles, splits: decode::default_splits when
// --splits is 0) and the launch path: kernels/decode_common.hpp, over this file's kConfigs.
LaunchStatus v07_decode_splitkv_supports(const AttnProblem& p, const KernelOptions& opt) {
  return decode::check_problem("v07_decode_splitkv", kConfigs, p, opt);
}

std::size_t v07_decode_splitkv_workspace_bytes(const AttnProblem& p, const KernelOptions& opt) {
  if (v07_decode_splitkv_supports(p, opt)) return 0;
  return decode::workspace_bytes(kConfigs, p, opt);
}

namespace {
// The launch path of launch() and config(): the main kernel (described), and the combine when S > 1.
LaunchStatus run(const AttnProblem& p, const DeviceTensors& t, const KernelOptions& opt, void* workspace,
                 const Launcher& L) {
  if (auto e = v07_decode_splitkv_supports(p, opt)) return e;
  return decode::launch_plan("v07_decode_splitkv", kConfigs, p, t, opt, workspace, L);
}
}  // namespace

LaunchStatus v07_decode_splitkv_launch(const AttnProblem& p, const DeviceTensors& t, const KernelOptions& opt,
                                       void* workspace, void* stream) {
  return run(p, t, opt, workspace, Launcher::enqueue(stream));
}

LaunchStatus v07_decode_splitkv_config(const AttnProblem& p, const KernelOptions& opt, LaunchConfig& out) {
  return describe_launch(out, [&](const Launcher& L) { return run(p, {}, opt, nullptr, L); });
}

}  // namespace ioattn::kernels

// kernels/v05_fa2_fast.hip: FlashAttention-2 on matrix cores, fed like the hardware wants.
//
// What changed vs v04_fa2_mma (same algorithm, same fragments, same tile loop):
//   1. cp.async: K_j, V_j go global -> shared without passing through registers, zero-filling
//      rows past seqlen_k (frag::async_copy_16);
//   2. kStages-deep pipeline: tile j+kStages-1 is in flight while tile j is computed, one
//      __syncthreads per tile;
//   3. padded shared rows (kD + 8 elements, +16 bytes): the 8 rows one ldmatrix phase reads start
//      in 8 different 4-bank groups for every supported d, so fragment loads are conflict-free;
//   4. ldmatrix (x4, and .trans for V): one instruction per 16x16 operand instead of 8 loads;
//   5. Q fragments live in registers for the whole key loop (loaded once);
//   6. P never leaves registers: the accumulator layout of S is the A layout of P V (fragment.hpp);
//   7. exp2 with log2(e) folded into the scale: one FFMA + one MUFU.EX2 per score;
//   8. only boundary tiles evaluate the mask; tiles no row of a warp can see are skipped by that
//      warp, tiles no row of the block can see are never loaded;
//   9. heavy query blocks first (causal: the last query blocks see the most keys), O written back
//      through shared memory with 16-byte coalesced stores.
//
// Tiling: a block owns Br = 16 * kWarps query rows of one (batch, head); each warp owns 16 rows.
// Shared memory: Q (Br, d+8) + kStages * [K (Bc, d+8) + V (Bc, d+8)], elements of 2 bytes.
// Per thread (NVIDIA, d = 128, Bc = 64): O 64 fp32 + Q 32 + S 32 registers.
//
// HBM traffic (simulator strategy `fa2`), e = 2 bytes, Tr = ceil(Nq / Br):
//   Q read once, O written once:       2 * e * B*Hq*Nq*d
//   K, V read once per query block:    2 * e * B*Hq*Tr*Nk*d   (GQA: per query head; L2 absorbs
//                                                              most of it on the H200)
//   LSE written once:                  4 * B*Hq*Nq
//   causal/windowed: only the visible tiles of K, V are read.
//
// Supports: fp16, bf16 (fp32 accumulate); d in {32, 64, 96, 128, 256}; any Nq, Nk; causal
// (bottom-right), sliding windows, GQA/MQA; LSE out; fully masked rows give O = 0, LSE = -inf.
// Tile sizes: --br/--bc pick one of the compiled configurations (list in the refusal message).
// Measured on the H200 (experiments/results/h200/2026-11-29_4f8a955; default configuration per d;
// TFLOP/s at N = 1k/4k/16k, bf16; SDPA flash in the same run in brackets):
//   d 128 (Br 128, Bc 32, 3 stages): 279/318/325 (302/333/351), causal 221/277/326 (222/285/317)
//   d  64 (Br 128, Bc 64, 2 stages): 268/304/306 (269/295/303), causal 203/277/312 (197/245/285)
// (tuning history: kernels/dev/NOTES.md runs 1-2).
// Run: ioattn run --kernel v05_fa2_fast --seqlen 4096 --heads 16 --head-dim 128 --dtype bf16 --check
#include <cmath>
#include <iterator>
#include <string>

#include "kernels/attn_view.hpp"
#include "kernels/launcher.hpp"
#include "kernels/platform/fragment.hpp"
#include "kernels/platform/platform.hpp"

namespace ioattn::kernels {
namespace {

// Compile-time shape of one configuration, and its preconditions.
//   kWarps warps per block, each owning kMT row tiles of 16 query rows (Br = 16 * kMT * kWarps);
//   kMT = 2 lets every K/V fragment read from shared memory feed two MMAs (half the shared-memory
//   traffic per MMA), at the price of twice the accumulator registers. kQRegs keeps Q's fragments
//   in registers for the whole key loop instead of re-reading them from shared memory.
template <int kD_, int kWarps_, int kMT_, int kBc_, int kStages_, bool kQRegs_, bool kLazy_ = true>
struct V05Tile {
  static constexpr int kD = kD_;
  static constexpr int kWarps = kWarps_;
  static constexpr int kMT = kMT_;
  static constexpr int kWarpRows = frag::kM * kMT_;  // query rows per warp
  static constexpr int kBr = kWarpRows * kWarps_;    // query rows per block
  static constexpr int kBc = kBc_;                   // keys per tile
  static constexpr int kStages = kStages_;
  static constexpr bool kQRegs = kQRegs_;
  static constexpr bool kLazy = kLazy_;  // lazy rescaling of O (see the softmax)
  static constexpr int kThreads = kWarps_ * kWarpSize;
  static constexpr int kLd = kD_ + 8;                // padded shared row (elements)
  static constexpr int kChunks = kD_ / 8;            // 16-byte chunks per row
  static constexpr int kSmemElems = (kBr + 2 * kStages_ * kBc_) * kLd + kWarps_ * frag::kPScratchElems;
  static constexpr int kSmemBytes = kSmemElems * 2;
  static_assert(kD_ % 16 == 0, "head_dim must be a multiple of 16 (the MMA K)");
  static_assert(kBc_ % 16 == 0, "Bc must be a multiple of 16 (P V consumes 16 keys per MMA)");
  static_assert(kStages_ >= 2, "the pipeline needs at least two stages");
  static_assert(kSmemBytes <= kMaxSharedBytes, "tiles exceed the platform's shared memory (LDS) per block");
};

// Lazy rescaling threshold, in exp2 units: P <= 2^8 = 256 before normalization.
constexpr float kLazyLog2 = 8.0f;

// Copy rows [r0, r0 + kRows) of a (rows_end, kD) strided global tile into shared rows of kLd
// elements; rows >= rows_end are zero-filled (never read from global).
template <class Tl, int kRows, class T>
__device__ inline void load_tile(T* s, const T* g, int64_t row_stride, int r0, int rows_end, int tid) {
  constexpr int kTotal = kRows * Tl::kChunks;
#pragma unroll
  for (int it = 0; it < (kTotal + Tl::kThreads - 1) / Tl::kThreads; ++it) {
    const int c = tid + it * Tl::kThreads;
    if (kTotal % Tl::kThreads != 0 && c >= kTotal) break;
    const int r = c / Tl::kChunks, ch = c % Tl::kChunks;
    const bool valid = r0 + r < rows_end;
    const T* src = g + (valid ? (r0 + r) : 0) * row_stride + ch * 8;
    frag::async_copy_16(s + r * Tl::kLd + ch * 8, src, valid);  // HBM/L2 read, 16 bytes
  }
}

template <class T, class Tl>
__global__ void __launch_bounds__(Tl::kThreads, 1) fa2_fast_kernel(AttnView a, const T* __restrict__ g_Q_all,
                                                                    const T* __restrict__ g_K_all,
                                                                    const T* __restrict__ g_V_all,
                                                                    T* __restrict__ g_O_all,
                                                                    float* __restrict__ g_LSE) {
  constexpr int kD = Tl::kD, kBr = Tl::kBr, kBc = Tl::kBc, kLd = Tl::kLd, kStages = Tl::kStages;
  constexpr int kMT = Tl::kMT;
  constexpr int kNS = kBc / frag::kN;  // accumulator atoms across one S row strip (16, Bc)
  constexpr int kNO = kD / frag::kN;   // accumulator atoms across one O row strip (16, d)
  constexpr int kKD = kD / frag::kK;   // k-steps over d
  constexpr int kR = frag::kCRows;     // rows a lane holds per 16-row tile

  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* s_Q = reinterpret_cast<T*>(smem_raw);  // (Br, kLd); at the end each warp's O rows
  T* s_K = s_Q + kBr * kLd;                 // (kStages, Bc, kLd)
  T* s_V = s_K + kStages * kBc * kLd;       // (kStages, Bc, kLd)
  T* s_P = s_V + kStages * kBc * kLd;       // (kWarps, 16, 16): AMD only (frag::p_to_a)

  const int tid = threadIdx.x, warp = tid / kWarpSize, lane = tid % kWarpSize;
  const int seqlen_q = static_cast<int>(a.seqlen_q), seqlen_k = static_cast<int>(a.seqlen_k);
  const int64_t b = blockIdx.x / a.heads_q, h = blockIdx.x % a.heads_q;
  const int q_block = static_cast<int>(gridDim.y - 1 - blockIdx.y);  // heavy (late) query blocks first
  const int i0 = q_block * kBr;
  const int i1 = min(i0 + kBr, seqlen_q);

  const T* g_Q = g_Q_all + a.q_offset(b, 0, h);  // row i at + i * q_stride
  const T* g_K = g_K_all + a.kv_offset(b, 0, a.kv_head_of(h));
  const T* g_V = g_V_all + a.kv_offset(b, 0, a.kv_head_of(h));
  T* g_O = g_O_all + a.q_offset(b, 0, h);
  const int64_t q_stride = a.q_row_stride(), kv_stride = a.kv_row_stride();

  // Key tiles any row of this block can see: [j_first, j_last). Others are never loaded.
  const MaskSpec& mask = a.mask;
  const int kb_blk = static_cast<int>(mask.block_key_begin(i0, i1));
  const int ke_blk = static_cast<int>(mask.block_key_end(i0, i1));
  const int j_first = kb_blk / kBc;
  const int j_last = ke_blk > kb_blk ? (ke_blk + kBc - 1) / kBc : j_first;

  // Prologue: Q, then the first kStages-1 K/V tiles, one commit group each.
  load_tile<Tl, kBr>(s_Q, g_Q, q_stride, i0, seqlen_q, tid);  // HBM read: Q_i, once
  frag::async_commit();
#pragma unroll
  for (int st = 0; st < kStages - 1; ++st) {
    const int j = j_first + st;
    if (j < j_last) {
      load_tile<Tl, kBc>(s_K + st * kBc * kLd, g_K, kv_stride, j * kBc, seqlen_k, tid);  // HBM read: K_j
      load_tile<Tl, kBc>(s_V + st * kBc * kLd, g_V, kv_stride, j * kBc, seqlen_k, tid);  // HBM read: V_j
    }
    frag::async_commit();  // possibly empty: keeps the group count uniform
  }
  frag::async_wait<kStages - 1>();  // Q has landed
  __syncthreads();

  // This warp's rows [wi0, wi0 + 16 kMT); row tile mt is rows wr0 + 16 mt of the block.
  const int wr0 = warp * Tl::kWarpRows;
  const int wi0 = i0 + wr0;
  frag::FragA r_Q[Tl::kQRegs ? kMT : 1][Tl::kQRegs ? kKD : 1];  // (16 kMT, d) when kept in registers
  if constexpr (Tl::kQRegs) {
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int kk = 0; kk < kKD; ++kk)
        r_Q[mt][kk] = frag::load_a_fast(s_Q, kLd, wr0 + mt * frag::kM, kk * frag::kK, lane);
  }

  // Visible key range of the warp as a whole (per-row ranges are recomputed in boundary tiles only).
  const int wi1 = min(wi0 + Tl::kWarpRows, seqlen_q);  // valid rows of this warp: [wi0, wi1)
  const int wkb = wi0 < wi1 ? static_cast<int>(mask.key_begin(wi0)) : 0;
  const int wke = wi0 < wi1 ? static_cast<int>(mask.key_end(wi1 - 1)) : 0;

  frag::FragC r_O[kMT][kNO];  // (16 kMT, d) fp32
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int t = 0; t < kNO; ++t) frag::zero(r_O[mt][t]);
  float m_i[kMT][kR], l_i[kMT][kR];  // running max (raw score units), this lane's partial row sum
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int s = 0; s < kR; ++s) {
      m_i[mt][s] = -INFINITY;
      l_i[mt][s] = 0.f;
    }
  const float sl2 = a.scale_log2;

  for (int j = j_first; j < j_last; ++j) {
    const int stage = (j - j_first) % kStages;
    frag::async_wait<kStages - 2>();  // tile j has landed (this thread's copies) ...
    __syncthreads();                  // ... everyone's; and everyone is done with tile j-1's stage
    {
      const int jn = j + kStages - 1;  // refill the stage tile j-1 used
      if (jn < j_last) {
        const int sn = (jn - j_first) % kStages;
        load_tile<Tl, kBc>(s_K + sn * kBc * kLd, g_K, kv_stride, jn * kBc, seqlen_k, tid);  // HBM read: K_jn
        load_tile<Tl, kBc>(s_V + sn * kBc * kLd, g_V, kv_stride, jn * kBc, seqlen_k, tid);  // HBM read: V_jn
      }
      frag::async_commit();
    }
    const int j0 = j * kBc;
    if (j0 >= wke || j0 + kBc <= wkb) continue;  // no row of this warp sees this tile
    const T* s_Kj = s_K + stage * kBc * kLd;     // (Bc, kLd)
    const T* s_Vj = s_V + stage * kBc * kLd;     // (Bc, kLd)

    // S_ij = Q_i K_j^T  (16 kMT, Bc) per warp, raw (unscaled) scores. Each K fragment feeds kMT MMAs.
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
        frag::load_b_nk_fast(r_Kb, s_Kj, kLd, g * 16, kk * frag::kK, lane);
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
          for (int u = 0; u < frag::kNPer16; ++u) frag::mma<T>(r_S[mt][g * frag::kNPer16 + u], r_Qk[mt], r_Kb[u]);
      }
    }

    // Mask only where the tile crosses a boundary (diagonal, window edge, seqlen_k).
    if (!mask.tile_unmasked(wi0, wi1, j0, j0 + kBc)) {
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
        for (int t = 0; t < kNS; ++t)
#pragma unroll
          for (int e = 0; e < frag::kCElems; ++e) {
            const int i = wi0 + mt * frag::kM + frag::c_row(lane, e);
            const int col = j0 + t * frag::kN + frag::c_col(lane, e);
            if (col < mask.key_begin(i) || col >= mask.key_end(i)) r_S[mt][t].x[e] = -INFINITY;
          }
    }

#pragma unroll
    for (int mt = 0; mt < kMT; ++mt) {
      // Online softmax with lazy rescaling. The reference max m_i moves only when a row's new max
      // exceeds it by more than 2^kLazyLog2 in exp2 units (always on the first visible tile, where
      // m_i = -inf); otherwise P = 2^(sl2 (S - m_i)) <= 2^kLazyLog2 stays well inside fp32/fp16/bf16
      // and O, l need no rescaling. Any m_i gives the same O / l and LSE: only overflow matters.
      float m_tile[kR];
#pragma unroll
      for (int s = 0; s < kR; ++s) m_tile[s] = -INFINITY;
#pragma unroll
      for (int t = 0; t < kNS; ++t)
#pragma unroll
        for (int e = 0; e < frag::kCElems; ++e)
          m_tile[frag::c_row_slot(e)] = fmaxf(m_tile[frag::c_row_slot(e)], r_S[mt][t].x[e]);
      bool grow[kR], any_grow = false;
#pragma unroll
      for (int s = 0; s < kR; ++s) {
        m_tile[s] = frag::row_allreduce_max(m_tile[s]);
        grow[s] = Tl::kLazy ? (m_tile[s] - m_i[mt][s]) * sl2 > kLazyLog2 : m_tile[s] > m_i[mt][s];
        any_grow |= grow[s];
      }
      if (frag::warp_any(any_grow)) {  // warp-uniform: rescale O and l of the rows that moved
        float alpha[kR];
#pragma unroll
        for (int s = 0; s < kR; ++s) {
          alpha[s] = grow[s] ? frag::fast_exp2((m_i[mt][s] - m_tile[s]) * sl2) : 1.f;  // m_i = -inf -> 0
          if (grow[s]) m_i[mt][s] = m_tile[s];
          l_i[mt][s] *= alpha[s];
        }
#pragma unroll
        for (int t = 0; t < kNO; ++t)
#pragma unroll
          for (int e = 0; e < frag::kCElems; ++e) r_O[mt][t].x[e] *= alpha[frag::c_row_slot(e)];
      }
      // A row that has seen only masked keys keeps m = -inf; use 0 so S - m is -inf, not NaN.
      float m_scaled[kR];
#pragma unroll
      for (int s = 0; s < kR; ++s) m_scaled[s] = m_i[mt][s] == -INFINITY ? 0.f : m_i[mt][s] * sl2;
      // P = 2^(sl2 S - sl2 m), in place; l_i += rowsum(P) (this lane's share).
#pragma unroll
      for (int t = 0; t < kNS; ++t)
#pragma unroll
        for (int e = 0; e < frag::kCElems; ++e) {
          const int s = frag::c_row_slot(e);
          const float p = frag::fast_exp2(fmaf(r_S[mt][t].x[e], sl2, -m_scaled[s]));
          r_S[mt][t].x[e] = p;
          l_i[mt][s] += p;
        }
    }

    // O_i += P V_j  (16 kMT, d) per warp; P is the A operand straight from registers, and each V
    // fragment feeds kMT MMAs.
#pragma unroll
    for (int g = 0; g < kBc / 16; ++g) {
      frag::FragA r_P[kMT];
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt)
        r_P[mt] = frag::p_to_a<T>(
            *reinterpret_cast<const frag::FragC(*)[frag::kNPer16]>(&r_S[mt][g * frag::kNPer16]),
            s_P + warp * frag::kPScratchElems, lane);
#pragma unroll
      for (int dd = 0; dd < kD / 16; ++dd) {
        frag::FragB r_Vb[frag::kNPer16];
        frag::load_b_kn_fast(r_Vb, s_Vj, kLd, g * 16, dd * 16, lane);
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
          for (int u = 0; u < frag::kNPer16; ++u) frag::mma<T>(r_O[mt][dd * frag::kNPer16 + u], r_P[mt], r_Vb[u]);
      }
    }
  }
  frag::async_wait<0>();  // only empty groups remain; drain them before the block exits

  // Epilogue: O_i = O_i / l_i, LSE_i = scale * m_i + log(l_i); a row with l = 0 saw no key.
  // O goes through this warp's own Q rows of shared memory (no other warp touches them, and Q is
  // no longer read), then out in whole 16-byte chunks per row.
  T* s_O = s_Q + wr0 * kLd;  // (16 kMT, kLd)
  warp_sync();  // every lane's last ldmatrix of these Q rows is done before O overwrites them
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt) {
    float inv_l[kR];
#pragma unroll
    for (int s = 0; s < kR; ++s) {
      l_i[mt][s] = frag::row_allreduce_sum(l_i[mt][s]);
      inv_l[s] = l_i[mt][s] > 0.f ? 1.f / l_i[mt][s] : 0.f;
    }
    T* s_Om = s_O + mt * frag::kM * kLd;
#pragma unroll
    for (int t = 0; t < kNO; ++t) {
#if defined(IOATTN_PLATFORM_NVIDIA)
#pragma unroll
      for (int e = 0; e < frag::kCElems; e += 2) {  // elements e, e+1 are adjacent columns
        const int s = frag::c_row_slot(e);
        *reinterpret_cast<uint32_t*>(&s_Om[frag::c_row(lane, e) * kLd + t * frag::kN + frag::c_col(lane, e)]) =
            frag::pack2<T>(r_O[mt][t].x[e] * inv_l[s], r_O[mt][t].x[e + 1] * inv_l[s]);
      }
#else
#pragma unroll
      for (int e = 0; e < frag::kCElems; ++e)
        s_Om[frag::c_row(lane, e) * kLd + t * frag::kN + frag::c_col(lane, e)] =
            from_float<T>(r_O[mt][t].x[e] * inv_l[frag::c_row_slot(e)]);
#endif
    }
    if (lane % frag::kRowLanes == 0) {
#pragma unroll
      for (int s = 0; s < kR; ++s) {
        const int i = wi0 + mt * frag::kM + frag::c_slot_row(lane, s);
        if (i < seqlen_q)  // HBM write: LSE_i, fp32
          g_LSE[a.lse_offset(b, h, i)] = l_i[mt][s] > 0.f ? m_i[mt][s] * a.scale + logf(l_i[mt][s]) : -INFINITY;
      }
    }
  }
  warp_sync();
  constexpr int kOutChunks = Tl::kWarpRows * Tl::kChunks;
#pragma unroll
  for (int it = 0; it < (kOutChunks + kWarpSize - 1) / kWarpSize; ++it) {
    const int c = lane + it * kWarpSize;
    if (kOutChunks % kWarpSize != 0 && c >= kOutChunks) break;
    const int r = c / Tl::kChunks, ch = c % Tl::kChunks;
    if (wi0 + r < seqlen_q)
      *reinterpret_cast<uint4*>(g_O + (wi0 + r) * q_stride + ch * 8) =
          *reinterpret_cast<const uint4*>(s_O + r * kLd + ch * 8);  // HBM write: O_i, once
  }
}

// ---- configurations -------------------------------------------------------------------------------
// The first one listed for a d is its default; --br/--bc pick the first with that (Br, Bc).
// NVIDIA: up to 227 KiB of shared memory per block; AMD CDNA: 64 KiB of LDS per workgroup.
struct Config {
  int d, br, bc;
  const char* name;  // "d128_w4_mt2_bc64_s2_qr0": warps, row tiles per warp, Bc, stages, Q in registers (1/0)
  LaunchStatus (*launch)(const AttnView&, const DeviceTensors&, DType, const Launcher&);
};

template <class Tl>
LaunchStatus launch_tile(const AttnView& a, const DeviceTensors& t, DType dt, const Launcher& L) {
  const int64_t q_blocks = (a.seqlen_q + Tl::kBr - 1) / Tl::kBr;
  if (q_blocks > 65535)
    return "v05_fa2_fast: seqlen_q must be <= " + std::to_string(65535 * Tl::kBr) +
           " (query blocks go in grid.y, at most 65535)";
  const dim3 grid(static_cast<unsigned>(a.batch * a.heads_q), static_cast<unsigned>(q_blocks));
  // The kernel reverses blockIdx.y (heavy query blocks first).
  const MainKernel main{.br = Tl::kBr, .bc = Tl::kBc, .stages = Tl::kStages, .splits = 0,
                        .grid_order = "qblock_major_rev"};
  return dispatch_dtype(dt, [&]<class T>() -> LaunchStatus {
    if constexpr (sizeof(T) != 2) {
      return "v05_fa2_fast: dtype must be fp16 or bf16";
    } else {
      return L.main(main, &fa2_fast_kernel<T, Tl>, grid, Tl::kThreads, Tl::kSmemBytes, a, static_cast<const T*>(t.q),
                    static_cast<const T*>(t.k), static_cast<const T*>(t.v), static_cast<T*>(t.o), t.lse);
    }
  });
}

#define V05_CONFIG(d, w, mt, bc, st, qr) \
  Config{d, 16 * (w) * (mt), bc, "d" #d "_w" #w "_mt" #mt "_bc" #bc "_s" #st "_qr" #qr, \
         &launch_tile<V05Tile<d, w, mt, bc, st, qr != 0>>}
// The same with eager rescaling (O rescaled whenever a row max grows): for measuring lazy's gain.
#define V05_CONFIG_EAGER(d, w, mt, bc, st, qr) \
  Config{d, 16 * (w) * (mt), bc, "d" #d "_w" #w "_mt" #mt "_bc" #bc "_s" #st "_qr" #qr "_eager", \
         &launch_tile<V05Tile<d, w, mt, bc, st, qr != 0, false>>}

#if defined(IOATTN_PLATFORM_NVIDIA)
const Config kConfigs[] = {
    V05_CONFIG(128, 4, 2, 32, 3, 0), V05_CONFIG(128, 4, 2, 32, 4, 0), V05_CONFIG(128, 4, 2, 32, 2, 0),
    V05_CONFIG(128, 8, 2, 32, 3, 0), V05_CONFIG(128, 8, 1, 64, 2, 1), V05_CONFIG(128, 4, 2, 64, 2, 0),
    V05_CONFIG_EAGER(128, 4, 2, 32, 3, 0),
    V05_CONFIG(64, 4, 2, 64, 2, 1),  V05_CONFIG(64, 4, 2, 64, 3, 1),  V05_CONFIG(64, 4, 2, 32, 3, 1),
    V05_CONFIG(64, 4, 2, 32, 2, 1),  V05_CONFIG(64, 8, 2, 64, 2, 1),  V05_CONFIG(64, 4, 1, 64, 2, 1),
    V05_CONFIG_EAGER(64, 4, 2, 64, 2, 1),
    V05_CONFIG(32, 4, 1, 64, 2, 1),  V05_CONFIG(96, 4, 1, 64, 2, 1),  V05_CONFIG(256, 4, 1, 32, 2, 0),
};
#else
const Config kConfigs[] = {
    V05_CONFIG(128, 4, 1, 32, 2, 1), V05_CONFIG(64, 4, 1, 64, 2, 1), V05_CONFIG(32, 4, 1, 64, 2, 1),
    V05_CONFIG(96, 4, 1, 32, 2, 1),  V05_CONFIG(256, 2, 1, 16, 2, 0),
};
#endif
#undef V05_CONFIG
#undef V05_CONFIG_EAGER

// The configuration for (d, br, bc), 0 meaning "the default".
const Config* find_config(int64_t d, int br, int bc) {
  for (const Config& c : kConfigs)
    if (c.d == d && (br == 0 || br == c.br) && (bc == 0 || bc == c.bc)) return &c;
  return nullptr;
}

std::string configs_for(int64_t d) {
  std::string s;
  for (const Config& c : kConfigs)
    if (c.d == d) s += (s.empty() ? "" : ", ") + std::to_string(c.br) + "x" + std::to_string(c.bc);
  return s;
}

}  // namespace

LaunchStatus v05_fa2_fast_supports(const AttnProblem& p, const KernelOptions& opt) {
  if (auto e = p.validate()) return e;
  if (p.dtype == DType::fp32) return "v05_fa2_fast: dtype must be fp16 or bf16 (matrix cores take 16-bit inputs)";
  if (opt.splits) return "v05_fa2_fast takes no split-KV (--splits)";
  const std::string have = configs_for(p.head_dim);
  if (have.empty()) return "v05_fa2_fast: head_dim must be one of 32, 64, 96, 128, 256";
  if (!find_config(p.head_dim, opt.br, opt.bc))
    return "v05_fa2_fast: for head_dim " + std::to_string(p.head_dim) + " (--br x --bc) must be one of " + have;
  return std::nullopt;
}

std::size_t v05_fa2_fast_workspace_bytes(const AttnProblem&, const KernelOptions&) { return 0; }

namespace {
// The launch path of launch() and config().
LaunchStatus run(const AttnProblem& p, const DeviceTensors& t, const KernelOptions& opt, const Launcher& L) {
  if (auto e = v05_fa2_fast_supports(p, opt)) return e;
  const Config* c = find_config(p.head_dim, opt.br, opt.bc);
  return c->launch(AttnView::of(p), t, p.dtype, L);
}
}  // namespace

LaunchStatus v05_fa2_fast_launch(const AttnProblem& p, const DeviceTensors& t, const KernelOptions& opt,
                                 void* /*workspace*/, void* stream) {
  return run(p, t, opt, Launcher::enqueue(stream));
}

LaunchStatus v05_fa2_fast_config(const AttnProblem& p, const KernelOptions& opt, LaunchConfig& out) {
  return describe_launch(out, [&](const Launcher& L) { return run(p, {}, opt, L); });
}

// Tuning hook for kernels/dev (not in the registry): every compiled configuration by index.
const char* v05_fa2_fast_config_name(int index) {
  return index >= 0 && index < static_cast<int>(std::size(kConfigs)) ? kConfigs[index].name : nullptr;
}
LaunchStatus v05_fa2_fast_launch_config(int index, const AttnProblem& p, const DeviceTensors& t, void* stream) {
  if (auto e = v05_fa2_fast_supports(p, {})) return e;
  if (index < 0 || index >= static_cast<int>(std::size(kConfigs))) return "v05_fa2_fast: no configuration " + std::to_string(index);
  const Config& c = kConfigs[index];
  if (c.d != p.head_dim) return std::string("config ") + c.name + " is for another head_dim";
  return c.launch(AttnView::of(p), t, p.dtype, Launcher::enqueue(stream));
}

}  // namespace ioattn::kernels

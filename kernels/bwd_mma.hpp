// kernels/bwd_mma.hpp: the building blocks of the matrix-core FA2 backward (bwd02, bwd02b).
//
// Shared by the two variants of the second backward rung: the tiles of the K/V-outer CTA, the
// checks both make, the preprocess (D_i, and the fp32 dQ accumulator zeroed in the same pass), the
// dQ convert kernel, the fragment <-> memory moves (tiles into padded shared rows by 16-byte async
// copies, accumulator rows out to HBM), and the host entry of bwd02's K/V-outer launch (bwd02b
// reuses it with the dQ step off). The workspace layout and the query rows a key block can be seen
// by are the scalar rung's (bwd_scalar.hpp).
//
// Numerics: the matrix cores take 16-bit operands, so P_ij and dS_ij are rounded to the input
// dtype once, before the products that consume them (dV += P^T dO; dK += dS^T Q and dQ += dS K use
// the same rounded dS), as the same-precision baseline rounds them (reference/naive.cpp); every
// product accumulates in fp32, D_i is an fp32 sum, dQ, dK, dV are rounded once at the end.
// Rows that must contribute nothing (fully masked: LSE = -inf; padding rows past the tile) are
// staged with LSE = +inf: exp(S - +inf) = 0 for any finite S, so P = 0 and dS = 0 * (dP - D) = 0
// without a branch, and exp(-inf - -inf) = NaN is never evaluated.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#include "kernels/attn_view.hpp"
#include "kernels/bwd_scalar.hpp"  // Workspace, workspace_bytes, query_rows_seeing, check_pointers
#include "kernels/launcher.hpp"
#include "kernels/platform/fragment.hpp"
#include "kernels/platform/platform.hpp"

namespace ioattn::kernels::mma_bwd {

using scalar_bwd::Workspace;

// ---- the K/V-outer CTA ------------------------------------------------------------------------
// kWarps warps, each owning 16 keys of the block (Bc = 16 kWarps) and their rows of dK_j, dV_j in
// registers; the query tiles Q_i, dO_i (Br = 32 rows) stream past. Br = 32 keeps dK_j, dV_j (2 x 16
// x d fp32 per warp) and S^T, dP^T (2 x 16 x Br) in registers without spilling (at Br = 64 ptxas
// spilled at d = 64, with 255 registers) and the CTA within AMD's 64 KiB of LDS at d = 128.
template <int kD_>
struct KvTile {
  static constexpr int kD = kD_;
  static constexpr int kWarps = 4;
  static constexpr int kBc = frag::kM * kWarps;    // 64 keys per CTA, 16 per warp
  static constexpr int kBr = 32;                   // query rows per streamed tile
  static constexpr int kThreads = kWarps * kWarpSize;
  static constexpr int kLd = kD_ + 8;    // padded row of the (rows, d) tiles: conflict-free ldmatrix
  static constexpr int kLdS = kBc + 8;   // padded row of s_dS (Br, Bc)
  // fp32 LSE_i, D_i (Br each), then K_j, V_j (Bc, kLd), Q_i, dO_i (Br, kLd), dS_ij (Br, kLdS) and
  // AMD's P scratch, in the dtype.
  static constexpr int kSmemBytes =
      2 * kBr * 4 + ((2 * kBc + 2 * kBr) * kLd + kBr * kLdS + kWarps * frag::kPScratchElems) * 2;
  // The dQ step: the (Br, d) product dS_ij K_j is cut into kBr/16 row tiles x kDqSplit column
  // ranges of kDqCols, one per warp.
  static constexpr int kRowTiles = kBr / frag::kM;
  static constexpr int kDqSplit = kWarps / kRowTiles;
  static constexpr int kDqCols = kD_ / kDqSplit;
  static_assert(kD_ % 16 == 0 && kBr % 16 == 0, "d and Br must be multiples of the MMA K (16)");
  static_assert(kWarps % kRowTiles == 0 && kDqCols % 16 == 0, "the dQ step's warp grid must cover (Br, d)");
  static_assert((2 * kBr * 4) % 16 == 0 && (kLd * 2) % 16 == 0 && (kLdS * 2) % 16 == 0,
                "every shared tile and row starts 16-byte aligned (cp.async, ldmatrix)");
  static_assert(kSmemBytes <= kMaxSharedBytes, "the K/V-outer CTA exceeds the platform's shared memory (LDS)");
};

// The one check of the problem both variants make; `who` names the variant in the message.
inline LaunchStatus check_common(const std::string& who, const AttnProblem& p, const BackwardOptions& opt) {
  if (auto e = p.validate()) return e;
  if (p.dtype == DType::fp32) return who + ": dtype must be fp16 or bf16 (matrix cores take 16-bit inputs)";
  if (p.head_dim != 64 && p.head_dim != 128) return who + ": head_dim must be 64 or 128";
  if (opt.br || opt.bc)
    return who + " has fixed tiles (Bc = 64 keys per K/V-outer CTA, Br = 32 query rows per streamed tile)";
  if (p.batch * p.heads_kv * ((p.seqlen_k + 63) / 64) > 0x7fffffff)
    return who + ": batch*heads_kv*ceil(seqlen_k/64) must be < 2^31 blocks";
  return std::nullopt;
}

// ---- fragment <-> memory --------------------------------------------------------------------------
// Rows [r0, r0 + kRows) of a strided global (rows_end, kD) tile into shared rows of ld elements,
// 16 bytes per copy (frag::async_copy_16); rows >= rows_end are zero-filled, never read. The
// caller commits, waits and synchronizes.
template <int kRows, int kD, int kThreads, class T>
__device__ inline void load_rows_async(T* s, int ld, const T* g, int64_t row_stride, int64_t r0, int64_t rows_end,
                                       int tid) {
  constexpr int kChunks = kD / 8, kTotal = kRows * kChunks;
#pragma unroll
  for (int it = 0; it < (kTotal + kThreads - 1) / kThreads; ++it) {
    const int c = tid + it * kThreads;
    if (kTotal % kThreads != 0 && c >= kTotal) break;
    const int r = c / kChunks, ch = c % kChunks;
    const bool valid = r0 + r < rows_end;
    frag::async_copy_16(s + r * ld + ch * 8, g + (valid ? r0 + r : 0) * row_stride + ch * 8, valid);  // HBM read
  }
}

// scale * C to the rows [0, rows) of a strided global tile: atom t holds columns t*kN.. of the
// 16 accumulator rows (frag::c_row / c_col). NVIDIA: elements e, e + 1 are adjacent columns, one
// 4-byte store.
template <int kAtoms, class T>
__device__ inline void store_rows(T* g, int64_t row_stride, int rows, const frag::FragC (&c)[kAtoms], float scale,
                                  int lane) {
#pragma unroll
  for (int t = 0; t < kAtoms; ++t) {
#if defined(IOATTN_PLATFORM_NVIDIA)
#pragma unroll
    for (int e = 0; e < frag::kCElems; e += 2) {
      const int r = frag::c_row(lane, e);
      if (r < rows)
        *reinterpret_cast<uint32_t*>(g + r * row_stride + t * frag::kN + frag::c_col(lane, e)) =
            frag::pack2<T>(scale * c[t].x[e], scale * c[t].x[e + 1]);
    }
#else
#pragma unroll
    for (int e = 0; e < frag::kCElems; ++e) {
      const int r = frag::c_row(lane, e);
      if (r < rows) g[r * row_stride + t * frag::kN + frag::c_col(lane, e)] = from_float<T>(scale * c[t].x[e]);
    }
#endif
  }
}

// The LSE a row is staged with, in base 2 (lse log2(e), so that P = 2^(s scale log2(e) - lse log2(e))
// is one FMA and one ex2): its own, or +inf when it must contribute nothing (see the header).
__device__ inline float staged_lse_log2(bool row_valid, float lse) {
  return row_valid && lse != -INFINITY ? lse * 1.4426950408889634f : INFINITY;
}

// P_ij = exp(s_ij scale - lse_i) = 2^(s_ij scale_log2 - lse2_i) where (i, j) is visible, else 0
// (`visible` is false only at boundary tiles), and dS_ij = P_ij (dP_ij - D_i), in place of s and
// dp. lse2 is staged_lse_log2's; exp2 is the forward's (frag::fast_exp2: ex2.approx on NVIDIA).
__device__ inline void prob_and_dscore(float& s, float& dp, bool visible, float scale_log2, float lse2, float D) {
  const float p = visible ? frag::fast_exp2(fmaf(s, scale_log2, -lse2)) : 0.f;
  s = p;
  dp = p * (dp - D);
}

// Calls f(std::false_type{}) for a tile that crosses no mask boundary (`unmasked`), else
// f(std::true_type{}): the element loop inside f tests (i, j) only when its argument is true, so
// the common, unmasked tile carries no per-element mask arithmetic (the compiler folds the test
// away in that instance).
template <class F>
__device__ __forceinline__ void with_mask(bool unmasked, F&& f) {
  if (unmasked) f(std::false_type{});
  else f(std::true_type{});
}

// ---- the element-wise kernels ---------------------------------------------------------------------
inline constexpr int kStreamThreads = 256;
inline constexpr int64_t kMaxStreamBlocks = 1 << 16;  // grid-stride loops beyond this
inline unsigned stream_blocks(int64_t n) {
  return static_cast<unsigned>(std::clamp<int64_t>((n + kStreamThreads - 1) / kStreamThreads, 1, kMaxStreamBlocks));
}

// D_i = rowsum(dO_i o O_i) for the rows r = (b * Hq + h) * Nq + i (the LSE layout): 8 lanes per
// row, 8 elements (16 bytes) per lane and step, an fp32 sum reduced over the 8 lanes; and, when
// g_dQaccum is given, the fp32 dQ accumulator zeroed (q_elems floats, 16 bytes per store).
// HBM traffic: dO, O read once (2 e Nq d), D written once (4 Nq); dQ_accum written once (4 Nq d).
template <class T>
__global__ void __launch_bounds__(kStreamThreads)
preprocess_kernel(AttnView a, const T* __restrict__ g_O, const T* __restrict__ g_dO, float* __restrict__ g_D,
                  float* __restrict__ g_dQaccum) {
  constexpr int kLanes = 8, kRowsPerBlock = kStreamThreads / kLanes;
  const int64_t rows = a.batch * a.heads_q * a.seqlen_q;
  const int sub = threadIdx.x % kLanes;
  // The loop bound is the same for the whole block, so every lane reaches the shuffles.
  for (int64_t base = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock; base < rows;
       base += static_cast<int64_t>(gridDim.x) * kRowsPerBlock) {
    const int64_t r = base + threadIdx.x / kLanes;
    float acc = 0.f;
    if (r < rows) {
      const int64_t i = r % a.seqlen_q, h = (r / a.seqlen_q) % a.heads_q, b = r / (a.seqlen_q * a.heads_q);
      const int64_t off = a.q_offset(b, i, h);
      for (int64_t x = sub * 8; x < a.head_dim; x += kLanes * 8) {
        T to[8], td[8];  // one 16-byte load each, unpacked by memcpy (no type punning of a local)
        const uint4 o = *reinterpret_cast<const uint4*>(g_O + off + x);   // HBM read: O_i
        const uint4 d = *reinterpret_cast<const uint4*>(g_dO + off + x);  // HBM read: dO_i
        memcpy(to, &o, sizeof(o));
        memcpy(td, &d, sizeof(d));
#pragma unroll
        for (int k = 0; k < 8; ++k) acc += to_float(td[k]) * to_float(to[k]);
      }
    }
#pragma unroll
    for (int m = 1; m < kLanes; m *= 2) acc += shfl_xor(acc, m, kLanes);
    if (r < rows && sub == 0) g_D[r] = acc;  // HBM write: D_i
  }
  if (g_dQaccum) {
    const int64_t n4 = a.batch * a.seqlen_q * a.heads_q * a.head_dim / 4;
    const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < n4; e += step)
      reinterpret_cast<float4*>(g_dQaccum)[e] = make_float4(0.f, 0.f, 0.f, 0.f);  // HBM write: dQ_accum = 0
  }
}

// dQ = scale * dQ_accum in the dtype, 4 elements per step (n is a multiple of 4: d is 64 or 128).
// HBM traffic: 4 Nq d read, e Nq d written.
template <class T>
__global__ void __launch_bounds__(kStreamThreads)
dq_convert_kernel(int64_t n, float scale, const float* __restrict__ g_dQaccum, T* __restrict__ g_dQ) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < n / 4; e += step) {
    const float4 v = reinterpret_cast<const float4*>(g_dQaccum)[e];  // HBM read: dQ_accum
    T* out = g_dQ + 4 * e;                                            // HBM write: dQ
    out[0] = from_float<T>(scale * v.x);
    out[1] = from_float<T>(scale * v.y);
    out[2] = from_float<T>(scale * v.z);
    out[3] = from_float<T>(scale * v.w);
  }
}

// ---- bwd02's launch, shared with bwd02b -------------------------------------------------------------
// Through `L` (kernels/launcher.hpp): the preprocess (D_i; with dq_atomic also dQ_accum = 0), then
// the K/V-outer kernel, the main one (dK, dV; with dq_atomic also dQ_accum += dS K by fp32
// atomics), then with dq_atomic the convert kernel. Defined in bwd02_fa2_mma.hip; the caller has
// checked the problem (check_common) and, when enqueuing, the pointers.
LaunchStatus launch_kv_outer(const AttnProblem& p, const BackwardTensors& t, const Workspace& ws, bool dq_atomic,
                             const Launcher& L);

}  // namespace ioattn::kernels::mma_bwd

// kernels/scalar_rows.hpp: the scalar (no matrix cores) building blocks of v02 and v03.
//
// Thread layout: kLanesPerRow consecutive lanes own one query row i. Lane t of a row owns the
// head-dim columns x = t, t + kLanesPerRow, t + 2*kLanesPerRow, ... (strided: the lanes of a row
// read consecutive words of a shared-memory K/V row, so there are no bank conflicts, and the
// rows of a warp read the same key row, a broadcast). A block of Br rows has Br*kLanesPerRow threads.
//
//   r_q[kCols], r_o[kCols]   this lane's columns of q_i and of the output accumulator O_i
//   s_K, s_V                 (Bc, d) fp32 tiles in shared memory, converted from the dtype on load
//   s_S                      (Br, Bc + 1) fp32 score tile S_ij in shared memory (+1: rows of one
//                            warp fall in different banks). Shared, not registers, because a
//                            register array indexed by a loop that is not unrolled spills to
//                            local memory, and unrolling Bc x d/8 for every tile size is huge.
//
// Scores are kept in log2 units (exp2 is one instruction; exp is exp2 of a product): the softmax is
// the same, and LSE = (m + log2 l) * ln 2 at the end.
#pragma once

#include <cmath>
#include <string>

#include "kernels/attn_view.hpp"
#include "kernels/platform/platform.hpp"

namespace ioattn::kernels::scalar {

inline constexpr int kLanesPerRow = 8;  // divides 32 and 64: a row never straddles two warps
inline constexpr float kLn2 = 0.69314718055994531f;

// Columns per lane for a head-dim bucket kD (head_dim <= kD; columns >= head_dim are zero).
template <int kD>
inline constexpr int kCols = kD / kLanesPerRow;

// Smallest supported bucket >= d, or 0 when d is too large.
inline int head_dim_bucket(int64_t d) {
  for (int b : {32, 64, 128, 256})
    if (d <= b) return b;
  return 0;
}

// Shared memory of one block: s_K, s_V (Bc, d) and s_S (Br, Bc + 1), fp32.
inline int64_t shared_bytes(int64_t br, int64_t bc, int64_t d) {
  return 4 * (2 * bc * d + br * (bc + 1));
}

// Cooperative load of rows [j0, j0 + bc) of K and V for kv head h_kv into s_K, s_V (bc, d) fp32.
// Rows >= seqlen_k are zero-filled (their scores are masked to -inf anyway).
// HBM traffic: 2 * bc * d elements, coalesced along d.
template <class T>
__device__ void load_kv_tile(const AttnView& a, const T* g_K, const T* g_V, int64_t b, int64_t h_kv,
                             int64_t j0, int bc, float* s_K, float* s_V) {
  const int d = static_cast<int>(a.head_dim);
  for (int e = threadIdx.x; e < bc * d; e += blockDim.x) {
    const int r = e / d, x = e % d;
    const int64_t j = j0 + r;
    float k = 0.f, v = 0.f;
    if (j < a.seqlen_k) {
      const int64_t off = a.kv_offset(b, j, h_kv) + x;
      k = to_float(g_K[off]);  // HBM read: K_j
      v = to_float(g_V[off]);  // HBM read: V_j
    }
    s_K[e] = k;
    s_V[e] = v;
  }
}

// s_S_row[jj] = scale*log2(e) * <q_i, K[j0 + jj]>, or -inf when masked or past seqlen_k, for
// jj < bc; returns max_jj of them. Every lane of the row computes its columns' partial dot, a
// butterfly over the row's lanes gives all of them the sum; lane jj % 8 stores it.
// A padding row (past seqlen_q) still runs the shuffles: all lanes must take part.
template <int kD>
__device__ float tile_scores(const AttnView& a, const float (&r_q)[kCols<kD>], const float* s_K,
                             int64_t i, int64_t j0, int bc, int lane, float* s_S_row) {
  const int d = static_cast<int>(a.head_dim);
  float m_tile = -INFINITY;
  for (int jj = 0; jj < bc; ++jj) {
    float dot = 0.f;
#pragma unroll
    for (int c = 0; c < kCols<kD>; ++c) {
      const int x = lane + c * kLanesPerRow;
      if (x < d) dot += r_q[c] * s_K[jj * d + x];  // LDS read: K_j row jj (broadcast across rows)
    }
#pragma unroll
    for (int m = kLanesPerRow / 2; m > 0; m /= 2) dot += shfl_xor(dot, m, kLanesPerRow);
    const int64_t j = j0 + jj;
    const float s = (j < a.seqlen_k && a.mask.allowed(i, j)) ? dot * a.scale_log2 : -INFINITY;
    if (jj % kLanesPerRow == lane) s_S_row[jj] = s;  // LDS write: S_ij (Br, Bc)
    m_tile = fmaxf(m_tile, s);
  }
  return m_tile;
}

// The online-softmax step for one row and one tile (FlashAttention's rescaling):
//   m_new = max(m_i, max_j S_ij);  P_ij = exp2(S_ij - m_new);  alpha = exp2(m_i - m_new)
//   l_i  <- alpha * l_i + sum_j P_ij;   O_i <- alpha * O_i + P_ij V_j
// A row whose scores are all -inf so far keeps m_i = -inf, l_i = 0, O_i = 0 (no NaN from -inf - -inf).
// Call warp_sync() between tile_scores and this (s_S_row was written by other lanes of the row).
template <int kD>
__device__ void online_softmax_update(const AttnView& a, const float* s_S_row, float m_tile,
                                      const float* s_V, int bc, int lane, float& m_i, float& l_i,
                                      float (&r_o)[kCols<kD>]) {
  const int d = static_cast<int>(a.head_dim);
  const float m_new = fmaxf(m_i, m_tile);
  if (m_new == -INFINITY) return;  // every key so far masked
  const float alpha = exp2f(m_i - m_new);  // m_i = -inf gives 0
  l_i *= alpha;
#pragma unroll
  for (int c = 0; c < kCols<kD>; ++c) r_o[c] *= alpha;
  for (int jj = 0; jj < bc; ++jj) {
    const float p = exp2f(s_S_row[jj] - m_new);  // LDS read: S_ij; masked: exp2(-inf) = 0
    l_i += p;
#pragma unroll
    for (int c = 0; c < kCols<kD>; ++c) {
      const int x = lane + c * kLanesPerRow;
      if (x < d) r_o[c] += p * s_V[jj * d + x];  // LDS read: V_j row jj
    }
  }
  m_i = m_new;
}

// Natural-log LSE of a finished row: -inf for a fully masked row (l_i = 0).
__device__ inline float row_lse(float m_i, float l_i) {
  return l_i > 0.f ? (m_i + log2f(l_i)) * kLn2 : -INFINITY;
}

// Calls f.template operator()<kD>() for the head-dim bucket of d (32, 64, 128, 256).
template <class F>
LaunchStatus dispatch_head_dim(int64_t d, F&& f) {
  switch (head_dim_bucket(d)) {
    case 32: return f.template operator()<32>();
    case 64: return f.template operator()<64>();
    case 128: return f.template operator()<128>();
    case 256: return f.template operator()<256>();
  }
  return "head_dim must be <= 256 for the scalar variants (got " + std::to_string(d) + ")";
}

}  // namespace ioattn::kernels::scalar

// kernels/scalar_rows.hpp: the scalar (no matrix cores) building blocks of v02, v03 and v03b.
//
// Thread layout: kLanesPerRow consecutive lanes own one query row i. A block of Br rows has
// Br*kLanesPerRow threads. Two different splits of the work among a row's 8 lanes:
//   scores  S_ij: lane t computes the keys jj = t, t + 8, ... of the tile, each as a whole dot
//           product over d, sequentially in x, every product and sum rounded separately (no
//           fused multiply-add), then times scale: the order of reference/scores.hpp, so S is
//           bit-identical to the reference's fp32 S. With logits of 1e2..1e4 a last-bit change
//           of S moves P visibly; matching the order makes the error rule compare algorithms
//           (online softmax, rescaling, P V), not summation orders. It costs speed (no FMA).
//   output  O_i: lane t owns the head-dim columns x = t, t + 8, ... (the lanes of a row read
//           consecutive words of a V row: no bank conflicts; rows of a warp read the same V row).
//
//   s_Q     (Br, d + 1) fp32  q_i of every row (+1: the 4 rows of a warp hit different banks)
//   s_K     (Bc, d + 1) fp32  K_j (+1: the 8 lanes of a row read 8 keys in different banks)
//   s_V     (Bc, d)     fp32  V_j
//   s_S     (Br, Bc + 1) fp32 S_ij, one row per query row (+1: rows of a warp in different banks)
//   r_o[kCols]                this lane's columns of the unnormalized O_i
// Softmax in natural units, as the reference: P = exp(S - m), LSE = m + log(l).
#pragma once

#include <cmath>
#include <string>

#include "kernels/attn_view.hpp"
#include "kernels/platform/platform.hpp"

namespace ioattn::kernels::scalar {

inline constexpr int kLanesPerRow = 8;  // divides 32 and 64: a row never straddles two warps

// Columns per lane for a head-dim bucket kD (head_dim <= kD; columns >= head_dim are zero).
template <int kD>
inline constexpr int kCols = kD / kLanesPerRow;

// Smallest supported bucket >= d, or 0 when d is too large.
inline int head_dim_bucket(int64_t d) {
  for (int b : {32, 64, 128, 256})
    if (d <= b) return b;
  return 0;
}

// Shared memory of one block, in bytes (the layout above).
inline int64_t shared_bytes(int64_t br, int64_t bc, int64_t d) {
  return 4 * (br * (d + 1) + bc * (d + 1) + bc * d + br * (bc + 1));
}

struct SharedTiles {
  float *s_Q, *s_K, *s_V, *s_S;
  __device__ static SharedTiles carve(float* s_mem, int br, int bc, int d) {
    SharedTiles t;
    t.s_Q = s_mem;                    // (Br, d + 1)
    t.s_K = t.s_Q + br * (d + 1);     // (Bc, d + 1)
    t.s_V = t.s_K + bc * (d + 1);     // (Bc, d)
    t.s_S = t.s_V + bc * d;           // (Br, Bc + 1)
    return t;
  }
};

// The 8 lanes of row i copy q_i (zeros for a padding row past seqlen_q) into s_Q_row.
// HBM traffic: d elements.
template <class T>
__device__ void load_q_row(const AttnView& a, const T* g_Q, int64_t b, int64_t i, int64_t h, bool row_valid,
                           int lane, float* s_Q_row) {
  for (int x = lane; x < a.head_dim; x += kLanesPerRow)
    s_Q_row[x] = row_valid ? to_float(g_Q[a.q_offset(b, i, h) + x]) : 0.f;  // HBM read: q_i
  warp_sync();  // the row's other lanes read all of it
}

// Cooperative load of rows [j0, j0 + bc) of K and V for kv head h_kv into s_K (bc, d + 1) and
// s_V (bc, d), fp32. Rows >= seqlen_k are zero-filled (their scores are masked to -inf anyway).
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
    s_K[r * (d + 1) + x] = k;
    s_V[e] = v;
  }
}

// s_S_row[jj] = scale * <q_i, K[j0 + jj]> (the reference's order, see above), or -inf when masked
// or past seqlen_k, for jj < bc; returns the tile's row max to every lane of the row.
__device__ inline float tile_scores(const AttnView& a, const float* s_Q_row, const float* s_K, int64_t i,
                                    int64_t j0, int bc, int lane, float* s_S_row) {
  const int d = static_cast<int>(a.head_dim);
  float m_tile = -INFINITY;
  for (int jj = lane; jj < bc; jj += kLanesPerRow) {
    const int64_t j = j0 + jj;
    float s = -INFINITY;
    if (j < a.seqlen_k && a.mask.allowed(i, j)) {
      const float* k = s_K + jj * (d + 1);
      float dot = 0.f;
      for (int x = 0; x < d; ++x) dot = __fadd_rn(dot, __fmul_rn(s_Q_row[x], k[x]));  // LDS: q_i, K_j row jj
      s = __fmul_rn(dot, a.scale);
    }
    s_S_row[jj] = s;  // LDS write: S_ij
    m_tile = fmaxf(m_tile, s);
  }
#pragma unroll
  for (int o = kLanesPerRow / 2; o > 0; o /= 2) m_tile = fmaxf(m_tile, shfl_xor(m_tile, o, kLanesPerRow));
  return m_tile;
}

// The online-softmax step for one row and one tile (FlashAttention's rescaling):
//   m_new = max(m_i, max_j S_ij);  P_ij = exp(S_ij - m_new);  alpha = exp(m_i - m_new)
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
  const float alpha = expf(m_i - m_new);  // m_i = -inf gives 0
  l_i *= alpha;
#pragma unroll
  for (int c = 0; c < kCols<kD>; ++c) r_o[c] *= alpha;
  for (int jj = 0; jj < bc; ++jj) {
    const float p = expf(s_S_row[jj] - m_new);  // LDS read: S_ij; masked: exp(-inf) = 0
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
__device__ inline float row_lse(float m_i, float l_i) { return l_i > 0.f ? m_i + logf(l_i) : -INFINITY; }

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

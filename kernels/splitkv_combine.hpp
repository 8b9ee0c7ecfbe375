// kernels/splitkv_combine.hpp: the split-KV workspace and the log-sum-exp combine, shared by the
// split-KV forwards (v03b_splitkv_scalar, v07_decode_splitkv).
//
// A split-KV forward cuts the keys of every query row into S ranges ("splits") and computes each
// range on its own. Split s leaves, per row (b, h, i), a partial result in the workspace:
//   O_s   (S, B, Nq, Hq, d) fp32: softmax(S_i over the split's keys) V, normalized over those keys
//   LSE_s (S, B, Hq, Nq)    fp32: natural log of sum_j exp(S_ij) over the split's keys; -inf when
//                                 the split saw no visible key (an empty split, or a masked one)
// The combine turns them into the forward's outputs, per row:
//   M = max_s LSE_s,   w_s = exp(LSE_s - M),   O = sum_s w_s O_s / sum_s w_s,   LSE = M + log sum_s w_s
// A split with LSE_s = -inf has weight 0 and its O_s is never read (it may be anything, even the
// harness's NaN poison). A row whose every split is empty is fully masked: O = 0, LSE = -inf.
// Splits are summed in a fixed order (combine_kernel): the result does not depend on the launch's timing.
//
// HBM traffic of the combine (simulator strategy `splitkv`, kernel splitkv_combine):
//   partials read once: 4 * S * B*Hq*Nq*(d + 1)      O written once (e bytes), LSE once (fp32)
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "kernels/attn_view.hpp"
#include "kernels/launcher.hpp"
#include "kernels/platform/platform.hpp"

namespace ioattn::kernels::splitkv {

// The most splits the combine takes (its per-row weights live in shared memory).
inline constexpr int kMaxSplits = 256;
inline constexpr int kCombineThreads = 128;

// Where the partials live in a workspace of workspace_bytes(p, S) bytes.
struct Partials {
  float* o = nullptr;    // (S, B, Nq, Hq, d)
  float* lse = nullptr;  // (S, B, Hq, Nq)

  static std::size_t workspace_bytes(const AttnProblem& p, int splits) {
    return static_cast<std::size_t>(splits) * static_cast<std::size_t>(p.q_elems() + p.lse_elems()) * sizeof(float);
  }
  // nullptr in, nullptr out (config() describes the launch without a workspace).
  static Partials carve(void* workspace, const AttnProblem& p, int splits) {
    Partials w;
    if (workspace == nullptr) return w;
    w.o = static_cast<float*>(workspace);
    w.lse = w.o + static_cast<int64_t>(splits) * p.q_elems();
    return w;
  }
};

// Element offsets of split s's partial for (b, i, h) (O, add the column) and (b, h, i) (LSE).
__host__ __device__ inline int64_t o_part_offset(const AttnView& a, int s, int64_t b, int64_t i, int64_t h) {
  return s * (a.batch * a.seqlen_q * a.heads_q * a.head_dim) + a.q_offset(b, i, h);
}
__host__ __device__ inline int64_t lse_part_offset(const AttnView& a, int s, int64_t b, int64_t h, int64_t i) {
  return s * (a.batch * a.heads_q * a.seqlen_q) + a.lse_offset(b, h, i);
}

// One block per row r = (b * Hq + h) * Nq + i (the LSE layout), grid-stride over rows. The
// block's threads first bring the row's S partial LSEs into shared memory and turn them into
// weights (one HBM/L2 read each). Then, when d is a multiple of 4 and d / 4 <= kCombineThreads
// (every head dim of the split-KV variants up to 512): the threads are G = kCombineThreads / (d / 4)
// split groups of d / 4 threads, thread (g, c) sums columns [4c, 4c + 4) over splits g, g + G, ...
// with 16-byte loads, 8 issued before the first is used (G times fewer rounds than one thread per
// column walking all S splits; an empty split's O_s, weight 0, is not loaded), the G group sums
// go through shared memory and are added in group order. Otherwise thread t sums columns t,
// t + 128, ... over all splits. Either way the sum order is fixed: the result does not depend on
// the launch's timing.
template <class T>
__global__ void __launch_bounds__(kCombineThreads) combine_kernel(AttnView a, int splits,
                                                                  const float* __restrict__ g_Opart,
                                                                  const float* __restrict__ g_LSEpart,
                                                                  T* __restrict__ g_O, float* __restrict__ g_LSE) {
  __shared__ float s_lse[kMaxSplits];  // LSE_s of the row
  __shared__ float s_w[kMaxSplits];    // w_s = exp(LSE_s - M), 0 for an empty split
  __shared__ __align__(16) float s_acc[4 * kCombineThreads];  // the split groups' column sums
  const int64_t rows = a.batch * a.heads_q * a.seqlen_q;
  const int tid = threadIdx.x;
  const int d = static_cast<int>(a.head_dim);
  const bool vec = d % 4 == 0 && d / 4 <= kCombineThreads;
  const int cols4 = vec ? d / 4 : 1;
  const int groups = kCombineThreads / cols4;       // split groups (vec)
  const int grp = tid / cols4, c4 = tid % cols4;    // this thread's group and 4-column chunk (vec)
  const int64_t split_stride = a.batch * a.seqlen_q * a.heads_q * a.head_dim;  // O_s to O_{s+1}
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const int64_t i = r % a.seqlen_q, h = (r / a.seqlen_q) % a.heads_q, b = r / (a.seqlen_q * a.heads_q);
    for (int s = tid; s < splits; s += kCombineThreads) s_lse[s] = g_LSEpart[lse_part_offset(a, s, b, h, i)];  // HBM read: LSE_s
    __syncthreads();
    float M = -INFINITY;
    for (int s = 0; s < splits; ++s) M = fmaxf(M, s_lse[s]);
    for (int s = tid; s < splits; s += kCombineThreads)
      s_w[s] = (M == -INFINITY || s_lse[s] == -INFINITY) ? 0.f : expf(s_lse[s] - M);
    __syncthreads();
    float sum_w = 0.f;
    for (int s = 0; s < splits; ++s) sum_w += s_w[s];
    const float inv = sum_w > 0.f ? 1.f / sum_w : 0.f;  // every split empty: O = 0
    if (vec) {
      float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
      if (grp < groups) {
        const float* src = g_Opart + o_part_offset(a, 0, b, i, h) + 4 * c4;
        constexpr int kBatch = 8;  // loads issued before the first is used
        for (int s0 = grp; s0 < splits; s0 += kBatch * groups) {
          float4 o[kBatch];
#pragma unroll
          for (int u = 0; u < kBatch; ++u) {
            const int s = s0 + u * groups;
            o[u] = s < splits && s_w[s] != 0.f ? *reinterpret_cast<const float4*>(src + s * split_stride)  // HBM read: O_s, 16 B
                                               : make_float4(0.f, 0.f, 0.f, 0.f);
          }
#pragma unroll
          for (int u = 0; u < kBatch; ++u) {
            const int s = s0 + u * groups;
            const float w = s < splits ? s_w[s] : 0.f;
            if (w != 0.f) acc.x += w * o[u].x, acc.y += w * o[u].y, acc.z += w * o[u].z, acc.w += w * o[u].w;
          }
        }
        *reinterpret_cast<float4*>(&s_acc[4 * (grp * cols4 + c4)]) = acc;
      }
      __syncthreads();
      for (int x = tid; x < d; x += kCombineThreads) {
        float sum = 0.f;
        for (int g = 0; g < groups; ++g) sum += s_acc[g * d + x];
        g_O[a.q_offset(b, i, h) + x] = from_float<T>(sum * inv);  // HBM write: O
      }
    } else {
      for (int64_t x = tid; x < a.head_dim; x += kCombineThreads) {
        float acc = 0.f;
#pragma unroll 8
        for (int s = 0; s < splits; ++s)
          if (s_w[s] != 0.f) acc += s_w[s] * g_Opart[o_part_offset(a, s, b, i, h) + x];  // HBM read: O_s
        g_O[a.q_offset(b, i, h) + x] = from_float<T>(acc * inv);  // HBM write: O
      }
    }
    if (tid == 0) g_LSE[r] = sum_w > 0.f ? M + logf(sum_w) : -INFINITY;  // HBM write: LSE
    __syncthreads();  // s_lse, s_w, s_acc are rewritten for the next row
  }
}

// Enqueue (or describe) the combine as an auxiliary launch of the forward's path.
template <class T>
LaunchStatus launch_combine(const Launcher& L, const AttnView& a, int splits, const Partials& w, T* o, float* lse) {
  if (splits < 1 || splits > kMaxSplits)
    return "split-KV combine: splits must be in 1.." + std::to_string(kMaxSplits) + " (got " + std::to_string(splits) + ")";
  const int64_t rows = a.batch * a.heads_q * a.seqlen_q;
  const int64_t blocks = rows < (int64_t{1} << 20) ? rows : (int64_t{1} << 20);
  return L.aux(&combine_kernel<T>, dim3(static_cast<unsigned>(blocks)), kCombineThreads, 0, a, splits,
               static_cast<const float*>(w.o), static_cast<const float*>(w.lse), o, lse);
}

}  // namespace ioattn::kernels::splitkv

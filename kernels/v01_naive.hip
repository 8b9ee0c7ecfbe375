// kernels/v01_naive.hip: attention as its definition, three kernels through HBM.
//
// What it is: the starting point of the ladder. Nothing is fused:
//   pass 1  S = scale * Q K^T, masked to -inf          -> g_S  (batch, heads_q, Nq, Nk) fp32 in HBM
//   pass 2  P = softmax_rows(S) in place, LSE per row  -> g_S holds P; LSE (batch, heads_q, Nq)
//   pass 3  O = P V                                    -> O    (batch, Nq, heads_q, d)
// One thread per output element in passes 1 and 3, one block per row in pass 2; operands come
// straight from global memory (L1/L2 catch the reuse, nothing is staged in shared memory).
//
// HBM traffic (simulator strategy `standard`), elements of size e (2 or 4 bytes), S/P fp32:
//   read Q, K, V once + write O:          e * (2*B*Hq*Nq*d + 2*B*Hkv*Nk*d)   (ideal, L2 reuse)
//   S written, read, P written, read:     4 bytes * 4 * B*Hq*Nq*Nk          <- the N^2 term
// The N^2 term is what every later variant removes. Workspace: 4*B*Hq*Nq*Nk bytes (O(N^2) memory).
//
// Supports: fp32/fp16/bf16 in, any head_dim, any Nq/Nk, causal, windows, GQA, LSE out; a fully
// masked row gives O = 0, LSE = -inf.
// Measured on the H200 (experiments/results/h200/2026-11-29_4f8a955; bf16, d 128, non-causal,
// batch x N = 16384, 16 heads):
// 0.90 / 0.86 TFLOP/s at N = 1k / 4k (scalar fp32 products), DRAM reads 8.7x / 40x the compulsory
// bytes (ncu): the N^2 S and P round trips. Table and other sizes: kernels/README.md.
// Run: ioattn run --kernel v01_naive --seqlen 1024 --heads 16 --head-dim 128 --dtype bf16 --check
#include <cmath>

#include "kernels/attn_view.hpp"
#include "kernels/launcher.hpp"
#include "kernels/platform/platform.hpp"

namespace ioattn::kernels {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = int64_t{1} << 20;  // grid-stride loops cover the rest

inline int grid_for(int64_t work) {
  const int64_t blocks = (work + kThreads - 1) / kThreads;
  return static_cast<int>(blocks < kMaxBlocks ? (blocks > 0 ? blocks : 1) : kMaxBlocks);
}

// Pass 1: g_S[b, h, i, j] = scale * <Q[b, i, h, :], K[b, j, h_kv, :]>, or -inf where masked.
template <class T>
__global__ void scores_kernel(AttnView a, const T* __restrict__ g_Q, const T* __restrict__ g_K,
                              float* __restrict__ g_S) {
  const int64_t total = a.batch * a.heads_q * a.seqlen_q * a.seqlen_k;
  for (int64_t idx = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; idx < total;
       idx += int64_t{gridDim.x} * blockDim.x) {
    const int64_t j = idx % a.seqlen_k;
    const int64_t i = (idx / a.seqlen_k) % a.seqlen_q;
    const int64_t h = (idx / (a.seqlen_k * a.seqlen_q)) % a.heads_q;
    const int64_t b = idx / (a.seqlen_k * a.seqlen_q * a.heads_q);
    float s = -INFINITY;
    if (a.mask.allowed(i, j)) {
      const T* q = g_Q + a.q_offset(b, i, h);                  // HBM/L2 read: Q row i, (d)
      const T* k = g_K + a.kv_offset(b, j, a.kv_head_of(h));   // HBM/L2 read: K row j, (d)
      // The reference's order and roundings (reference/scores.hpp): a sequential fp32 dot product,
      // each product and sum rounded separately (no fused multiply-add), then times scale. v01 is
      // the definition on the GPU; with logits of 1e2..1e4 a last-bit change of S moves P visibly,
      // so its S should be the reference's fp32 S, not another summation order.
      float dot = 0.f;
      for (int64_t x = 0; x < a.head_dim; ++x) dot = __fadd_rn(dot, __fmul_rn(to_float(q[x]), to_float(k[x])));
      s = __fmul_rn(dot, a.scale);
    }
    g_S[idx] = s;  // HBM write: S, 4 bytes per score
  }
}

// Block-wide reduction of one float (max or sum) through shared memory.
template <class Op>
__device__ float block_reduce(float v, float* s_buf, Op op) {
  s_buf[threadIdx.x] = v;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) s_buf[threadIdx.x] = op(s_buf[threadIdx.x], s_buf[threadIdx.x + stride]);
    __syncthreads();
  }
  const float r = s_buf[0];
  __syncthreads();  // s_buf is reused by the next reduction
  return r;
}

// Pass 2: one block per row of S: m = max_j S, l = sum_j exp(S - m), P = exp(S - m) / l in place,
// LSE = m + log(l). A fully masked row has m = -inf: P = 0 and LSE = -inf, never NaN.
__global__ void softmax_kernel(AttnView a, float* __restrict__ g_S, float* __restrict__ g_LSE) {
  __shared__ float s_red[kThreads];
  const int64_t rows = a.batch * a.heads_q * a.seqlen_q;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    float* g_row = g_S + row * a.seqlen_k;  // (Nk)
    float m = -INFINITY;
    for (int64_t j = threadIdx.x; j < a.seqlen_k; j += blockDim.x) m = fmaxf(m, g_row[j]);  // HBM read S
    m = block_reduce(m, s_red, [](float x, float y) { return fmaxf(x, y); });
    float l = 0.f;
    if (m != -INFINITY)
      for (int64_t j = threadIdx.x; j < a.seqlen_k; j += blockDim.x) l += expf(g_row[j] - m);  // HBM read S
    l = block_reduce(l, s_red, [](float x, float y) { return x + y; });
    for (int64_t j = threadIdx.x; j < a.seqlen_k; j += blockDim.x)
      g_row[j] = (m == -INFINITY) ? 0.f : expf(g_row[j] - m) / l;  // HBM read S, write P
    if (threadIdx.x == 0) {
      // row = (b * Hq + h) * Nq + i, which is exactly the LSE layout (batch, heads_q, seqlen_q).
      g_LSE[row] = (m == -INFINITY) ? -INFINITY : m + logf(l);
    }
  }
}

// Pass 3: O[b, i, h, x] = sum_j P[b, h, i, j] * V[b, j, h_kv, x].
template <class T>
__global__ void pv_kernel(AttnView a, const float* __restrict__ g_P, const T* __restrict__ g_V,
                          T* __restrict__ g_O) {
  const int64_t total = a.batch * a.seqlen_q * a.heads_q * a.head_dim;  // O in BSHD order
  for (int64_t idx = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; idx < total;
       idx += int64_t{gridDim.x} * blockDim.x) {
    const int64_t x = idx % a.head_dim;
    const int64_t h = (idx / a.head_dim) % a.heads_q;
    const int64_t i = (idx / (a.head_dim * a.heads_q)) % a.seqlen_q;
    const int64_t b = idx / (a.head_dim * a.heads_q * a.seqlen_q);
    const float* p = g_P + ((b * a.heads_q + h) * a.seqlen_q + i) * a.seqlen_k;  // HBM read P row
    const T* v = g_V + a.kv_offset(b, 0, a.kv_head_of(h)) + x;                  // HBM read V column
    float acc = 0.f;
    for (int64_t j = 0; j < a.seqlen_k; ++j) acc += p[j] * to_float(v[j * a.kv_row_stride()]);
    g_O[idx] = from_float<T>(acc);  // HBM write: O
  }
}

}  // namespace

LaunchStatus v01_naive_supports(const AttnProblem& p, const KernelOptions& opt) {
  if (auto e = p.validate()) return e;
  if (opt.br || opt.bc || opt.splits) return "v01_naive takes no tile sizes or splits (--br/--bc/--splits)";
  return std::nullopt;
}

std::size_t v01_naive_workspace_bytes(const AttnProblem& p, const KernelOptions&) {
  return static_cast<std::size_t>(p.batch * p.heads_q) * p.score_elems_per_head() * sizeof(float);
}

namespace {

// The launch path of launch() and config(): three launches; LaunchConfig describes pass 1.
LaunchStatus run(const AttnProblem& p, const DeviceTensors& t, const KernelOptions& opt, void* workspace,
                 const Launcher& L) {
  if (auto e = v01_naive_supports(p, opt)) return e;
  if (workspace == nullptr && !L.describes())
    return "v01_naive needs a workspace of workspace_bytes() (the N^2 scores)";
  const AttnView a = AttnView::of(p);
  auto* g_S = static_cast<float*>(workspace);
  return dispatch_dtype(p.dtype, [&]<class T>() -> LaunchStatus {
    const MainKernel pass1{.br = 0, .bc = 0, .stages = 1, .splits = 0, .grid_order = "rows_strided"};
    if (auto e = L.main(pass1, &scores_kernel<T>, dim3(grid_for(a.batch * a.heads_q * a.seqlen_q * a.seqlen_k)),
                        kThreads, 0, a, static_cast<const T*>(t.q), static_cast<const T*>(t.k), g_S))
      return e;
    const int64_t rows = a.batch * a.heads_q * a.seqlen_q;
    if (auto e = L.aux(&softmax_kernel, dim3(static_cast<unsigned>(rows < kMaxBlocks ? rows : kMaxBlocks)),
                       kThreads, 0, a, g_S, t.lse))
      return e;
    return L.aux(&pv_kernel<T>, dim3(grid_for(a.batch * a.seqlen_q * a.heads_q * a.head_dim)), kThreads, 0, a,
                 static_cast<const float*>(g_S), static_cast<const T*>(t.v), static_cast<T*>(t.o));
  });
}

}  // namespace

LaunchStatus v01_naive_launch(const AttnProblem& p, const DeviceTensors& t, const KernelOptions& opt,
                              void* workspace, void* stream) {
  return run(p, t, opt, workspace, Launcher::enqueue(stream));
}

LaunchStatus v01_naive_config(const AttnProblem& p, const KernelOptions& opt, LaunchConfig& out) {
  return describe_launch(out, [&](const Launcher& L) { return run(p, {}, opt, nullptr, L); });
}

}  // namespace ioattn::kernels

// kernels/v03b_splitkv_scalar.hip: split-KV (Flash-Decoding) on top of v03, a side branch of the ladder.
//
// What changed against v03_fa2_scalar: the keys of every query block are cut into `splits` equal
// ranges, and each (query block, split) is its own thread block running v03's loop over its range
// only. A split ends with a partial result: O_s normalized over its keys, and LSE_s (fp32, in a
// workspace). A second kernel combines them per row with a log-sum-exp:
//   M = max_s LSE_s,   w_s = exp(LSE_s - M),   O = sum_s w_s O_s / sum_s w_s,   LSE = M + log sum_s w_s
// Why: v03's grid is B*Hq*Tr blocks. When that is small (short queries, decoding with Nq = 1, few
// heads) most of the GPU idles; splits multiply the parallelism by `splits` at the price of the
// partials' round trip. A split that sees no key (masked) has LSE_s = -inf and weight 0; a row with
// every split empty is fully masked: O = 0, LSE = -inf.
//
// HBM traffic (simulator strategy `splitkv`), e bytes per element, S = splits:
//   as v03 (Q read once per split: e*S*B*Hq*Nq*d; K, V once per query block: e*2*B*Hq*Tr*Nk*d)
//   + partials written and read once: 2 * 4 * S*B*Hq*Nq*(d + 1)     + O, LSE written once
// Default S: enough blocks for 2 waves of 132 SMs (the H200's count; a constant, so the workspace
// size does not depend on the device), at most the number of key blocks and 64.
//
// Supports: as v03 (fp32/fp16/bf16, d <= 256, Br <= 64, Bc <= 256, any Nq/Nk, masks, GQA, LSE out).
// Workspace: 4 * S * B*Hq*Nq*(d + 1) bytes.
// Measured on the H200 (experiments/results/h200/2026-11-29_4f8a955 and _ca6c74b_ncu;
// bf16, d 128, non-causal, batch x N = 16384):
// 8.6 / 8.8 TFLOP/s at N = 1k / 4k; DRAM reads 1.25x the compulsory bytes (the partial O/LSE
// round trip). Its use is short queries (--seqlen-q 1), not this benchmark. Table: kernels/README.md.
// Run: ioattn run --kernel v03b_splitkv_scalar --seqlen-q 1 --seqlen-k 16384 --heads 16 --head-dim 128 --splits 32 --check
#include <algorithm>

#include "kernels/launcher.hpp"
#include "kernels/scalar_rows.hpp"

namespace ioattn::kernels {
namespace {

using namespace scalar;
constexpr int kDefaultBr = 64;
constexpr int kDefaultBc = 64;
constexpr int kMaxThreads = 512;  // __launch_bounds__: <= 128 registers per thread
constexpr int kMaxBr = kMaxThreads / kLanesPerRow;
constexpr int kMaxBc = 256;
constexpr int kMaxSplits = 64;
constexpr int64_t kTargetBlocks = 2 * 132;  // two waves on an H200

int br_of(const KernelOptions& opt) { return opt.br ? opt.br : kDefaultBr; }
int bc_of(const KernelOptions& opt) { return opt.bc ? opt.bc : kDefaultBc; }
int64_t tr_of(const AttnProblem& p, int br) { return (p.seqlen_q + br - 1) / br; }
int splits_of(const AttnProblem& p, const KernelOptions& opt) {
  if (opt.splits) return opt.splits;
  const int64_t blocks = p.batch * p.heads_q * tr_of(p, br_of(opt));
  const int64_t tc = (p.seqlen_k + bc_of(opt) - 1) / bc_of(opt);
  return static_cast<int>(std::clamp<int64_t>((kTargetBlocks + blocks - 1) / blocks, 1, std::min<int64_t>(tc, kMaxSplits)));
}

// Pass 1: blockIdx.x = ((b * Hq + h) * Tr + i_block) * S + split.
// Writes g_Opart[split] (B, Nq, Hq, d) fp32 normalized over the split's keys and g_LSEpart[split]
// (B, Hq, Nq), -inf when the split saw no visible key.
template <class T, int kD>
__global__ void __launch_bounds__(kMaxThreads)
splitkv_partial_kernel(AttnView a, int br, int bc, int splits, const T* __restrict__ g_Q,
                       const T* __restrict__ g_K, const T* __restrict__ g_V, float* __restrict__ g_Opart,
                       float* __restrict__ g_LSEpart) {
  extern __shared__ float s_mem[];
  const int d = static_cast<int>(a.head_dim);
  const SharedTiles sh = SharedTiles::carve(s_mem, br, bc, d);  // s_Q, s_K, s_V, s_S (scalar_rows.hpp)

  const int64_t Tr = (a.seqlen_q + br - 1) / br;
  const int split = static_cast<int>(blockIdx.x % splits);
  const int64_t qb = blockIdx.x / splits;
  const int64_t i_block = qb % Tr;
  const int64_t h = (qb / Tr) % a.heads_q;
  const int64_t b = qb / (Tr * a.heads_q);
  const int64_t h_kv = a.kv_head_of(h);
  const int lane = threadIdx.x % kLanesPerRow;
  const int row = threadIdx.x / kLanesPerRow;
  const int64_t i0 = i_block * br;
  const int64_t i1 = i0 + br < a.seqlen_q ? i0 + br : a.seqlen_q;
  const int64_t i = i0 + row;
  const bool row_valid = i < a.seqlen_q;
  float* s_Q_row = sh.s_Q + row * (d + 1);
  float* s_S_row = sh.s_S + row * (bc + 1);

  load_q_row(a, g_Q, b, i, h, row_valid, lane, s_Q_row);  // HBM read: Q_i, once per split
  float r_o[kCols<kD>];
#pragma unroll
  for (int c = 0; c < kCols<kD>; ++c) r_o[c] = 0.f;
  float m_i = -INFINITY, l_i = 0.f;

  // This split's keys [ks, ke) intersected with what the query block can see.
  const int64_t per_split = (a.seqlen_k + splits - 1) / splits;
  const int64_t vis_b = a.mask.block_key_begin(i0, i1), vis_e = a.mask.block_key_end(i0, i1);
  const int64_t ks = split * per_split > vis_b ? split * per_split : vis_b;
  const int64_t ke = (split + 1) * per_split < vis_e ? (split + 1) * per_split : vis_e;
  for (int64_t j0 = ks; j0 < ke; j0 += bc) {
    __syncthreads();
    // Rows past the split's end are loaded but masked below: the tile width stays bc.
    load_kv_tile(a, g_K, g_V, b, h_kv, j0, bc, sh.s_K, sh.s_V);  // HBM read: K_j, V_j
    __syncthreads();
    float m_tile = tile_scores(a, s_Q_row, sh.s_K, i, j0, bc, lane, s_S_row);
    warp_sync();
    // Keys of the next split must not count here: mask them in the score row.
    if (j0 + bc > ke) {
      m_tile = -INFINITY;
      for (int jj = lane; jj < bc; jj += kLanesPerRow)
        if (j0 + jj >= ke) s_S_row[jj] = -INFINITY;
      warp_sync();
      for (int jj = 0; jj < bc; ++jj) m_tile = fmaxf(m_tile, s_S_row[jj]);
    }
    online_softmax_update<kD>(a, s_S_row, m_tile, sh.s_V, bc, lane, m_i, l_i, r_o);
  }

  if (!row_valid) return;
  const int64_t part = static_cast<int64_t>(split) * a.batch * a.seqlen_q * a.heads_q;  // partials per split
  const float inv_l = l_i > 0.f ? 1.f / l_i : 0.f;
#pragma unroll
  for (int c = 0; c < kCols<kD>; ++c) {
    const int x = lane + c * kLanesPerRow;
    if (x < d) g_Opart[part * a.head_dim + a.q_offset(b, i, h) + x] = r_o[c] * inv_l;  // HBM write: O_s
  }
  if (lane == 0) g_LSEpart[part + a.lse_offset(b, h, i)] = row_lse(m_i, l_i);  // HBM write: LSE_s
}

// Pass 2: one group of 8 lanes per row (b, h, i): combine the splits' partials.
template <class T>
__global__ void splitkv_combine_kernel(AttnView a, int splits, const float* __restrict__ g_Opart,
                                       const float* __restrict__ g_LSEpart, T* __restrict__ g_O,
                                       float* __restrict__ g_LSE) {
  const int64_t rows = a.batch * a.heads_q * a.seqlen_q;
  const int64_t per_split = rows;  // LSE partials per split; O partials per split = rows * d
  const int lane = threadIdx.x % kLanesPerRow;
  for (int64_t r = (blockIdx.x * int64_t{blockDim.x} + threadIdx.x) / kLanesPerRow; r < rows;
       r += int64_t{gridDim.x} * blockDim.x / kLanesPerRow) {
    // r = (b * Hq + h) * Nq + i, the LSE layout.
    const int64_t i = r % a.seqlen_q, h = (r / a.seqlen_q) % a.heads_q, b = r / (a.seqlen_q * a.heads_q);
    float M = -INFINITY;
    for (int s = 0; s < splits; ++s) M = fmaxf(M, g_LSEpart[s * per_split + r]);  // HBM read: LSE_s
    float sum_w = 0.f;
    for (int s = 0; s < splits; ++s) {
      const float lse_s = g_LSEpart[s * per_split + r];
      sum_w += (M == -INFINITY || lse_s == -INFINITY) ? 0.f : expf(lse_s - M);
    }
    const float inv = sum_w > 0.f ? 1.f / sum_w : 0.f;  // every split empty: O = 0
    for (int64_t x = lane; x < a.head_dim; x += kLanesPerRow) {
      float acc = 0.f;
      for (int s = 0; s < splits; ++s) {
        const float lse_s = g_LSEpart[s * per_split + r];
        if (M == -INFINITY || lse_s == -INFINITY) continue;
        acc += expf(lse_s - M) * g_Opart[(s * per_split) * a.head_dim + a.q_offset(b, i, h) + x];  // HBM read: O_s
      }
      g_O[a.q_offset(b, i, h) + x] = from_float<T>(acc * inv);  // HBM write: O
    }
    if (lane == 0) g_LSE[r] = sum_w > 0.f ? M + logf(sum_w) : -INFINITY;  // HBM write: LSE
  }
}

}  // namespace

LaunchStatus v03b_splitkv_scalar_supports(const AttnProblem& p, const KernelOptions& opt) {
  if (auto e = p.validate()) return e;
  if (head_dim_bucket(p.head_dim) == 0)
    return "v03b_splitkv_scalar: head_dim must be <= 256 (got " + std::to_string(p.head_dim) + ")";
  const int br = br_of(opt), bc = bc_of(opt);
  if (br < 1 || br > kMaxBr)
    return "v03b_splitkv_scalar: Br must be in 1.." + std::to_string(kMaxBr) + " (Br*8 threads <= 512)";
  if (bc < 1 || bc > kMaxBc) return "v03b_splitkv_scalar: Bc must be in 1.." + std::to_string(kMaxBc);
  if (opt.splits < 0 || opt.splits > kMaxSplits)
    return "v03b_splitkv_scalar: --splits must be in 1.." + std::to_string(kMaxSplits) + " (0: default)";
  const int64_t smem = shared_bytes(br, bc, p.head_dim);
  if (smem > kMaxSharedBytes)
    return "v03b_splitkv_scalar: tiles need 4*((Br+Bc)*(d+1) + Bc*d + Br*(Bc+1)) = " + std::to_string(smem) +
           " bytes of shared memory, more than the " + std::to_string(kMaxSharedBytes) + " a block may use";
  if (p.batch * p.heads_q * tr_of(p, br) * splits_of(p, opt) > 0x7fffffff)
    return "v03b_splitkv_scalar: batch*heads_q*Tr*splits must be < 2^31 blocks";
  return std::nullopt;
}

std::size_t v03b_splitkv_scalar_workspace_bytes(const AttnProblem& p, const KernelOptions& opt) {
  return static_cast<std::size_t>(splits_of(p, opt)) * static_cast<std::size_t>(p.q_elems() + p.lse_elems()) *
         sizeof(float);
}

namespace {

// The launch path of launch() and config(): the partial pass (described) and the combine.
LaunchStatus run(const AttnProblem& p, const DeviceTensors& t, const KernelOptions& opt, void* workspace,
                 const Launcher& L) {
  if (auto e = v03b_splitkv_scalar_supports(p, opt)) return e;
  if (workspace == nullptr && !L.describes())
    return "v03b_splitkv_scalar needs a workspace of workspace_bytes() (the partials)";
  const AttnView a = AttnView::of(p);
  const int br = br_of(opt), bc = bc_of(opt), splits = splits_of(p, opt);
  const int64_t blocks = p.batch * p.heads_q * tr_of(p, br) * splits;
  const int smem = static_cast<int>(shared_bytes(br, bc, p.head_dim));
  float* g_Opart = static_cast<float*>(workspace);                                          // (S, B, Nq, Hq, d)
  float* g_LSEpart = g_Opart ? g_Opart + static_cast<int64_t>(splits) * p.q_elems() : nullptr;  // (S, B, Hq, Nq)
  const MainKernel main{.br = br, .bc = bc, .stages = 1, .splits = splits, .grid_order = "bh_major_splits"};
  return dispatch_dtype(p.dtype, [&]<class T>() -> LaunchStatus {
    LaunchStatus st = dispatch_head_dim(p.head_dim, [&]<int kD>() -> LaunchStatus {
      return L.main(main, &splitkv_partial_kernel<T, kD>, dim3(static_cast<unsigned>(blocks)), br * kLanesPerRow,
                    smem, a, br, bc, splits, static_cast<const T*>(t.q), static_cast<const T*>(t.k),
                    static_cast<const T*>(t.v), g_Opart, g_LSEpart);
    });
    if (st) return st;
    const int64_t rows = p.batch * p.heads_q * p.seqlen_q;
    const int64_t cblocks = std::min<int64_t>((rows * kLanesPerRow + 255) / 256, int64_t{1} << 20);
    return L.aux(&splitkv_combine_kernel<T>, dim3(static_cast<unsigned>(cblocks)), 256, 0, a, splits,
                 static_cast<const float*>(g_Opart), static_cast<const float*>(g_LSEpart), static_cast<T*>(t.o),
                 t.lse);
  });
}

}  // namespace

LaunchStatus v03b_splitkv_scalar_launch(const AttnProblem& p, const DeviceTensors& t, const KernelOptions& opt,
                                        void* workspace, void* stream) {
  return run(p, t, opt, workspace, Launcher::enqueue(stream));
}

LaunchStatus v03b_splitkv_scalar_config(const AttnProblem& p, const KernelOptions& opt, LaunchConfig& out) {
  return describe_launch(out, [&](const Launcher& L) { return run(p, {}, opt, nullptr, L); });
}

}  // namespace ioattn::kernels

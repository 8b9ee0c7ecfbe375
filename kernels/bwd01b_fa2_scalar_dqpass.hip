// kernels/bwd01b_fa2_scalar_dqpass.hip: bwd01 with dQ by a separate Q-outer pass: no atomics,
// deterministic. Pairs with v03_fa2_scalar.
//
// What changed against bwd01_fa2_scalar: dQ_i is no longer accumulated by fp32 atomics from every
// K/V-outer CTA. bwd01's preprocess (D_i) and K/V-outer kernel run with their dQ step off (they
// compute dK_j, dV_j only), and a second kernel with FA2's forward loop order owns dQ_i:
//   per (b, query head h, query block i): Q_i, dO_i, LSE_i, D_i once, then for every key block j
//   some row of Q_i can see:
//     S_ij = scale Q_i K_j^T (masked), P_ij = exp(S_ij - LSE_i),  dP_ij = dO_i V_j^T    (Br, Bc)
//     dS_ij = P_ij o (dP_ij - D_i);  dQ_i += dS_ij K_j                                 (Br, d) registers
//   dQ_i = scale dQ_i, written once in the dtype.
// The price: S_ij and dP_ij are computed twice (once per pass: 4 products per tile in the K/V pass
// + 3 in the dQ pass, against bwd01's 5) and K_j, V_j are re-read per query block. The gain: no fp32
// dQ accumulator (4 B Nq Hq d bytes less workspace), no read-modify-write per (j, i), and every sum
// has a fixed order, so dQ, dK and dV are bit-identical across launches.
//
// HBM traffic (simulator: `ioattn simulate --pass bwd --strategy fa2 --dq separate`), e bytes per
// element, per query head, unmasked, Tr = ceil(Nq / Br), Tc = ceil(Nk / Bc):
//   preprocess : dO, O read (2 e Nq d), D written (4 Nq)
//   K/V outer  : as bwd01 without dQ_accum: K_j, V_j read and dK_j, dV_j written once per K/V head
//                (4 e Nk d); per (j, i) Q_i, dO_i (2 e Tc Nq d), LSE_i, D_i (8 Tc Nq)
//   dQ pass    : Q_i, dO_i, LSE_i, D_i once (2 e Nq d + 8 Nq), K_j, V_j per (i, j) (2 e Tr Nk d),
//                dQ written once (e Nq d)
//
// Supports: as bwd01 (fp32/fp16/bf16, head_dim <= 256, any Nq/Nk, causal, windows, GQA/MQA, fully
// masked rows: dQ = 0). Tiles: as bwd01; the dQ pass uses the same (Br, Bc) with Br*8 threads and
// 4*(2*Br*(d+1) + 2*Bc*(d+1) + Br*(Bc+1)) bytes of shared memory (less than the K/V pass's).
// Workspace: D only (4 B Hq Nq, padded to 256 bytes).
// Launches: 3 (bwd01's preprocess and K/V-outer kernel, then the dQ pass), one launch path for
// launch() and config() (run() below, against launcher.hpp's Launcher); the configuration
// describes the K/V-outer kernel, as bwd01's.
// Measured: passes the GPU suite and memcheck on the H200 (2026-12-01); its times are in
// kernels/README.md's generated backward tables (the run CANONICAL names as `bwd`).
// Run: build-gpu/verify/kernels/gpu_backward (its determinism check: 100 launches bit-identical), or
//   build-gpu/apps/ioattn run --backward --bwd-kernel bwd01b_fa2_scalar_dqpass --seqlen 1024 --check
#include "kernels/bwd_scalar.hpp"

namespace ioattn::kernels {
namespace {

using namespace scalar_bwd;
using scalar::kCols;
constexpr int kDqThreads = kMaxBr * kLanesPerRow;  // 512: __launch_bounds__, <= 128 registers

int64_t dq_pass_shared_bytes(int64_t br, int64_t bc, int64_t d) {
  return 4 * (2 * br * (d + 1) + 2 * bc * (d + 1) + br * (bc + 1));
}

// The dQ pass. blockIdx.x = (b * Hq + h) * Tr + i_block (as v03: blocks of one head adjacent);
// thread = (query row of the block, lane), kLanesPerRow lanes per row, Br*8 threads.
template <class T, int kD>
__global__ void __launch_bounds__(kDqThreads)
dq_pass_kernel(AttnView a, int br, int bc, const T* __restrict__ g_Q, const T* __restrict__ g_K,
               const T* __restrict__ g_V, const T* __restrict__ g_dO, const float* __restrict__ g_LSE,
               const float* __restrict__ g_D, T* __restrict__ g_dQ) {
  extern __shared__ float s_mem[];
  const int d = static_cast<int>(a.head_dim);
  const int ld = d + 1;    // row stride of the (rows, d) tiles
  const int lds = bc + 1;  // row stride of s_dS
  float* s_Q = s_mem;            // (Br, d + 1)  Q_i
  float* s_dO = s_Q + br * ld;   // (Br, d + 1)  dO_i
  float* s_K = s_dO + br * ld;   // (Bc, d + 1)  K_j
  float* s_V = s_K + bc * ld;    // (Bc, d + 1)  V_j
  float* s_dS = s_V + bc * ld;   // (Br, Bc + 1) dS_ij

  const int64_t Tr = (a.seqlen_q + br - 1) / br;
  const int64_t i_block = blockIdx.x % Tr;
  const int64_t h = (blockIdx.x / Tr) % a.heads_q;
  const int64_t b = blockIdx.x / (Tr * a.heads_q);
  const int64_t h_kv = a.kv_head_of(h);
  const int lane = threadIdx.x % kLanesPerRow;
  const int row = threadIdx.x / kLanesPerRow;
  const int64_t i0 = i_block * br;
  const int64_t i1 = i0 + br < a.seqlen_q ? i0 + br : a.seqlen_q;
  const int64_t i = i0 + row;  // this thread's query row
  const bool row_valid = i < a.seqlen_q;
  float* s_Q_row = s_Q + row * ld;
  float* s_dO_row = s_dO + row * ld;
  float* s_dS_row = s_dS + row * lds;

  for (int x = lane; x < d; x += kLanesPerRow) {
    const int64_t off = a.q_offset(b, i, h) + x;
    s_Q_row[x] = row_valid ? to_float(g_Q[off]) : 0.f;    // HBM read: Q_i, once
    s_dO_row[x] = row_valid ? to_float(g_dO[off]) : 0.f;  // HBM read: dO_i, once
  }
  const float lse_i = row_valid ? g_LSE[a.lse_offset(b, h, i)] : -INFINITY;  // HBM read: LSE_i, once
  const float D_i = row_valid ? g_D[a.lse_offset(b, h, i)] : 0.f;            // HBM read: D_i, once
  float r_dq[kCols<kD>];  // this lane's columns x = lane + 8c of dQ row i (unscaled)
#pragma unroll
  for (int c = 0; c < kCols<kD>; ++c) r_dq[c] = 0.f;

  // Only key blocks that some row of this query block may see (as v03).
  const int64_t kb = a.mask.block_key_begin(i0, i1), ke = a.mask.block_key_end(i0, i1);
  for (int64_t j0 = kb; j0 < ke; j0 += bc) {
    __syncthreads();  // Q_i, dO_i staged; every row is done with the previous K_j, V_j, dS_ij
    for (int e = threadIdx.x; e < bc * d; e += blockDim.x) {
      const int r = e / d, x = e % d;
      float k = 0.f, v = 0.f;
      if (j0 + r < a.seqlen_k) {
        const int64_t off = a.kv_offset(b, j0 + r, h_kv) + x;
        k = to_float(g_K[off]);  // HBM read: K_j, per (i, j)
        v = to_float(g_V[off]);  // HBM read: V_j, per (i, j)
      }
      s_K[r * ld + x] = k;
      s_V[r * ld + x] = v;
    }
    __syncthreads();
    // dS_ij of row i: lane t takes the keys jj = t, t + 8, ...
    for (int jj = lane; jj < bc; jj += kLanesPerRow) {
      const int64_t j = j0 + jj;
      float ds = 0.f;
      if (row_valid && j < a.seqlen_k && lse_i != -INFINITY && a.mask.allowed(i, j))
        ds = prob_and_dscore(s_Q_row, s_K + jj * ld, s_dO_row, s_V + jj * ld, d, a.scale, lse_i, D_i).ds;
      s_dS_row[jj] = ds;  // LDS write: dS_ij
    }
    warp_sync();  // s_dS_row complete for every lane of the row (a row never straddles two warps)
    // dQ_i += dS_ij K_j, columns x = lane + 8c: summed over the tile's keys first, then into the
    // total (a blocked sum, as the atomic variant's per-block partials and a GEMM's order).
    float t_dq[kCols<kD>];
#pragma unroll
    for (int c = 0; c < kCols<kD>; ++c) t_dq[c] = 0.f;
    for (int jj = 0; jj < bc; ++jj) {
      const float ds = s_dS_row[jj];
#pragma unroll
      for (int c = 0; c < kCols<kD>; ++c) {
        const int x = lane + c * kLanesPerRow;
        if (x < d) t_dq[c] += ds * s_K[jj * ld + x];
      }
    }
#pragma unroll
    for (int c = 0; c < kCols<kD>; ++c) r_dq[c] += t_dq[c];
  }

  if (!row_valid) return;
#pragma unroll
  for (int c = 0; c < kCols<kD>; ++c) {
    const int x = lane + c * kLanesPerRow;
    if (x < d) g_dQ[a.q_offset(b, i, h) + x] = from_float<T>(a.scale * r_dq[c]);  // HBM write: dQ_i, once
  }
}

}  // namespace

LaunchStatus bwd01b_fa2_scalar_dqpass_supports(const AttnProblem& p, const BackwardOptions& opt) {
  const Tiles t = tiles_of(p, opt);
  if (auto e = check_common("bwd01b_fa2_scalar_dqpass", p, t)) return e;
  const int64_t smem = dq_pass_shared_bytes(t.br, t.bc, p.head_dim);
  if (smem > kMaxSharedBytes)  // smaller than the K/V pass's, checked above; kept for a future layout
    return "bwd01b_fa2_scalar_dqpass: the dQ pass needs " + std::to_string(smem) + " bytes of shared memory, more than " +
           std::to_string(kMaxSharedBytes);
  if (p.batch * p.heads_q * ((p.seqlen_q + t.br - 1) / t.br) > 0x7fffffff)
    return "bwd01b_fa2_scalar_dqpass: batch*heads_q*ceil(seqlen_q/Br) must be < 2^31 blocks";
  return std::nullopt;
}

std::size_t bwd01b_fa2_scalar_dqpass_workspace_bytes(const AttnProblem& p, const BackwardOptions&) {
  return workspace_bytes(p, /*with_dq_accum=*/false);
}

namespace {

// The launch path of launch() and config() (three launches; LaunchConfig describes the K/V-outer one).
LaunchStatus run(const AttnProblem& p, const BackwardTensors& t, const BackwardOptions& opt, void* workspace,
                 const Launcher& L) {
  if (auto e = bwd01b_fa2_scalar_dqpass_supports(p, opt)) return e;
  if (!L.describes())
    if (auto e = check_pointers("bwd01b_fa2_scalar_dqpass", t, workspace)) return e;
  const Tiles tiles = tiles_of(p, opt);
  const Workspace ws = Workspace::carve(workspace, p, false);
  // Preprocess (D) and the K/V-outer kernel with its dQ step off: dK, dV.
  if (auto e = launch_kv_outer(p, t, tiles, ws, /*dq_atomic=*/false, L)) return e;
  // The dQ pass (reads D, written by the preprocess before it on the same stream).
  const AttnView a = AttnView::of(p);
  const int64_t blocks = p.batch * p.heads_q * ((p.seqlen_q + tiles.br - 1) / tiles.br);
  const int smem = static_cast<int>(dq_pass_shared_bytes(tiles.br, tiles.bc, p.head_dim));
  return dispatch_dtype(p.dtype, [&]<class T>() -> LaunchStatus {
    return scalar::dispatch_head_dim(p.head_dim, [&]<int kD>() -> LaunchStatus {
      return L.aux(&dq_pass_kernel<T, kD>, dim3(static_cast<unsigned>(blocks)), tiles.br * kLanesPerRow, smem, a,
                   tiles.br, tiles.bc, static_cast<const T*>(t.q), static_cast<const T*>(t.k),
                   static_cast<const T*>(t.v), static_cast<const T*>(t.d_o), t.lse, static_cast<const float*>(ws.D),
                   static_cast<T*>(t.dq));
    });
  });
}

}  // namespace

LaunchStatus bwd01b_fa2_scalar_dqpass_launch(const AttnProblem& p, const BackwardTensors& t,
                                             const BackwardOptions& opt, void* workspace, void* stream) {
  return run(p, t, opt, workspace, Launcher::enqueue(stream));
}

LaunchStatus bwd01b_fa2_scalar_dqpass_config(const AttnProblem& p, const BackwardOptions& opt, LaunchConfig& out) {
  return describe_launch(out, [&](const Launcher& L) { return run(p, {}, opt, nullptr, L); });
}

}  // namespace ioattn::kernels

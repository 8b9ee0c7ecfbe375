// kernels/bwd01_fa2_scalar.hip: the FlashAttention-2 backward, scalar fp32 math. The teaching
// kernel of the backward ladder; it pairs with v03_fa2_scalar (it reads that forward's O and LSE).
//
// The forward saved only O and LSE, not the (Nq, Nk) matrix P: the backward recomputes it, tile by
// tile, from the scores and the LSE (P_ij = exp(S_ij - LSE_i)). The loops are FA2's backward
// (Algorithm 2): a CTA owns ONE key block K_j, V_j (Bc rows) for its whole life and streams the
// query tiles Q_i, dO_i (Br rows) past it, so dK_j and dV_j accumulate in registers and are written
// once. dQ_i receives a contribution from every key block: here by fp32 atomics into an fp32
// accumulator in the workspace, rounded to the dtype by a last kernel (dq_mode "atomic").
//   1. preprocess   D_i = rowsum(dO_i o O_i)                              (B, Hq, Nq) fp32
//                   dQ_accum = 0
//   2. K/V outer    per (b, kv head, key block j), for every query head h of the group, for every
//                   query tile i whose rows can see block j:
//                     S_ij = scale Q_i K_j^T (masked), P_ij = exp(S_ij - LSE_i)     (Br, Bc)
//                     dP_ij = dO_i V_j^T,  dS_ij = P_ij o (dP_ij - D_i)             (Br, Bc)
//                     dV_j += P_ij^T dO_i,  dK_j += dS_ij^T Q_i                     (Bc, d) registers
//                     dQ_accum_i += dS_ij K_j                                       atomics
//                   dK_j = scale dK_j, dV_j written once, in the dtype
//   3. dq_convert   dQ = scale dQ_accum, in the dtype
// GQA/MQA: the CTA of a K/V head walks the query heads of its group one after the other, so dK_j
// and dV_j sum over the group in registers, in a fixed order (deterministic; no expanded per-head
// dK/dV and no reduce kernel). dK and dV are therefore bit-identical across launches; dQ is not
// (the order of the atomics varies). bwd01b_fa2_scalar_dqpass removes the atomics.
// Masks: the query rows a key block can be seen by are one range (mask.hpp's per-row key ranges,
// bwd_scalar.hpp query_rows_seeing); only those rows are streamed. Inside a tile every (i, j) is
// tested with MaskSpec::allowed. A fully masked row has LSE = -inf: its P row is 0 (exp is not
// evaluated, exp(-inf + inf) would be NaN), so it adds nothing and its dQ row is exactly 0.
//
// HBM traffic (simulator: `ioattn simulate --pass bwd --strategy fa2 --dq atomic`), e bytes per
// element, per query head, Nq x Nk unmasked, Tc = ceil(Nk / Bc):
//   preprocess : dO, O read (2 e Nq d), D written (4 Nq), dQ_accum zeroed (4 Nq d)
//   K/V outer  : K_j, V_j read once (2 e Nk d) and dK_j, dV_j written once (2 e Nk d) per K/V head;
//                per (j, i): Q_i, dO_i (2 e Tc Nq d), LSE_i, D_i (8 Tc Nq), dQ_accum read + written
//                by the atomics (8 Tc Nq d)
//   dq_convert : dQ_accum read (4 Nq d), dQ written (e Nq d)
// The simulator's GQA model differs: it writes per-query-head dK/dV and reduces them; here K_j, V_j
// are read and dK_j, dV_j written once per K/V head.
//
// Supports: fp32/fp16/bf16 in (fp32 math), head_dim <= 256 (register buckets 32/64/128/256), any
// Nq/Nk, causal (bottom-right), windows, GQA/MQA, fully masked rows.
// Tiles: Bc in 1..32 (Bc*8 threads <= 256), Br in 1..64, shared memory
// 4*(2*Bc*(d+1) + 2*Br*(d+1) + 2*Br*(Bc+1) + 2*Br) bytes (bwd_scalar.hpp); default (32, 32),
// halved until it fits (on the H200 d = 256 keeps (32, 32): 140 KB; on AMD's 64 KiB LDS d = 128
// runs (16, 32)).
// Workspace: D (4 B Hq Nq, padded to 256 bytes) + dQ_accum (4 B Nq Hq d).
// Launches: 3 (preprocess, K/V outer, dq_convert), all written once in run() below against the
// Launcher (launcher.hpp), so config() reports the launched K/V-outer kernel: grid B*Hkv*Tc in
// "kv_bh_major" order (launch.hpp), Bc*8 threads, the shared memory above.
// Measured: passes the GPU suite and memcheck on the H200 (2026-12-01); its times are in
// kernels/README.md's generated backward tables (the run CANONICAL names as `bwd`).
// Run: build-gpu/verify/kernels/gpu_backward (the GPU property tests of every backward variant), or
//   build-gpu/apps/ioattn run --backward --bwd-kernel bwd01_fa2_scalar --seqlen 1024 --dtype bf16 --check
#include <algorithm>

#include "kernels/bwd_scalar.hpp"

namespace ioattn::kernels {
namespace scalar_bwd {
namespace {

using scalar::kCols;
constexpr int kKvOuterThreads = kMaxBc * kLanesPerRow;  // 256
constexpr int kStreamThreads = 256;                     // the element-wise kernels
constexpr int64_t kMaxStreamBlocks = 1 << 16;           // grid-stride loops beyond this
// The default tiles the header states (tiles_of halves them until the CTA fits).
#if defined(IOATTN_PLATFORM_NVIDIA)
static_assert(tiles_of(256, {}) == Tiles{32, 32} && kv_outer_shared_bytes(32, 32, 256) == 140288);
#else
static_assert(tiles_of(128, {}) == Tiles{16, 32} && tiles_of(64, {}) == Tiles{32, 32});
#endif

// 1. D_i = rowsum(dO_i o O_i), one thread per row r = (b * Hq + h) * Nq + i (the LSE layout),
// in the order of dP_ij = <dO_i, V_j> (sequential fp32, no FMA; why: bwd_scalar.hpp). With a dQ
// accumulator (dq_mode "atomic"; nullptr otherwise) the thread also zeroes that row of it, so the
// atomics of step 2 start from 0 without a separate memset (the simulator's bwd_preprocess too).
// HBM traffic: dO, O read once (2 e Nq d), D written once (4 Nq), dQ_accum written once (4 Nq d).
template <class T>
__global__ void bwd_preprocess_kernel(AttnView a, const T* __restrict__ g_O, const T* __restrict__ g_dO,
                                      float* __restrict__ g_D, float* __restrict__ g_dQaccum) {
  const int64_t rows = a.batch * a.heads_q * a.seqlen_q;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; r < rows; r += step) {
    const int64_t i = r % a.seqlen_q;
    const int64_t h = (r / a.seqlen_q) % a.heads_q;
    const int64_t b = r / (a.seqlen_q * a.heads_q);
    const int64_t off = a.q_offset(b, i, h);
    float acc = 0.f;
    for (int64_t x = 0; x < a.head_dim; ++x)
      acc = __fadd_rn(acc, __fmul_rn(to_float(g_dO[off + x]), to_float(g_O[off + x])));  // HBM read: dO_i, O_i
    g_D[r] = acc;  // HBM write: D_i
    if (g_dQaccum)
      for (int64_t x = 0; x < a.head_dim; ++x) g_dQaccum[off + x] = 0.f;  // HBM write: dQ_accum_i = 0
  }
}

// 2. The K/V-outer kernel. blockIdx.x = (b * Hkv + h_kv) * Tc + j_block; thread = (key row jj of
// the block, lane): kLanesPerRow lanes per key row, Bc*8 threads.
template <class T, int kD, bool kDqAtomic>
__global__ void __launch_bounds__(kKvOuterThreads)
kv_outer_kernel(AttnView a, int br, int bc, const T* __restrict__ g_Q, const T* __restrict__ g_K,
                const T* __restrict__ g_V, const T* __restrict__ g_dO, const float* __restrict__ g_LSE,
                const float* __restrict__ g_D, float* __restrict__ g_dQaccum, T* __restrict__ g_dK,
                T* __restrict__ g_dV) {
  extern __shared__ float s_mem[];
  const int d = static_cast<int>(a.head_dim);
  const int ld = d + 1;    // row stride of the (rows, d) tiles
  const int lds = bc + 1;  // row stride of s_P, s_dS
  float* s_K = s_mem;              // (Bc, d + 1)  K_j
  float* s_V = s_K + bc * ld;      // (Bc, d + 1)  V_j
  float* s_Q = s_V + bc * ld;      // (Br, d + 1)  Q_i
  float* s_dO = s_Q + br * ld;     // (Br, d + 1)  dO_i
  float* s_P = s_dO + br * ld;     // (Br, Bc + 1) P_ij
  float* s_dS = s_P + br * lds;    // (Br, Bc + 1) dS_ij
  float* s_lse = s_dS + br * lds;  // (Br)         LSE_i
  float* s_D = s_lse + br;         // (Br)         D_i

  const int64_t Tc = (a.seqlen_k + bc - 1) / bc;
  const int64_t j_block = blockIdx.x % Tc;
  const int64_t h_kv = (blockIdx.x / Tc) % a.heads_kv;
  const int64_t b = blockIdx.x / (Tc * a.heads_kv);
  const int jj = threadIdx.x / kLanesPerRow;  // this thread's key row in the block
  const int lane = threadIdx.x % kLanesPerRow;
  const int64_t j0 = j_block * bc;
  const int64_t j1 = j0 + bc < a.seqlen_k ? j0 + bc : a.seqlen_k;
  const int64_t j = j0 + jj;  // this thread's key
  const bool key_valid = j < a.seqlen_k;

  // K_j, V_j into shared memory; rows past seqlen_k are zero (their P is 0 anyway).
  for (int e = threadIdx.x; e < bc * d; e += blockDim.x) {
    const int r = e / d, x = e % d;
    float k = 0.f, v = 0.f;
    if (j0 + r < a.seqlen_k) {
      const int64_t off = a.kv_offset(b, j0 + r, h_kv) + x;
      k = to_float(g_K[off]);  // HBM read: K_j, once per CTA
      v = to_float(g_V[off]);  // HBM read: V_j, once per CTA
    }
    s_K[r * ld + x] = k;
    s_V[r * ld + x] = v;
  }
  float r_dk[kCols<kD>], r_dv[kCols<kD>];  // this lane's columns x = lane + 8c of dK_j, dV_j row jj
#pragma unroll
  for (int c = 0; c < kCols<kD>; ++c) r_dk[c] = r_dv[c] = 0.f;

  const scalar_bwd::RowRange seen = query_rows_seeing(a.mask, j0, j1);
  for (int64_t h = h_kv * a.group; h < (h_kv + 1) * a.group; ++h) {  // the group's query heads (GQA)
    for (int64_t i0 = seen.first; i0 < seen.last; i0 += br) {
      const int rows = static_cast<int>(seen.last - i0 < br ? seen.last - i0 : br);
      __syncthreads();  // K_j, V_j staged; the previous tile is no longer read
      for (int e = threadIdx.x; e < rows * d; e += blockDim.x) {
        const int r = e / d, x = e % d;
        const int64_t off = a.q_offset(b, i0 + r, h) + x;
        s_Q[r * ld + x] = to_float(g_Q[off]);    // HBM read: Q_i, per (j, i)
        s_dO[r * ld + x] = to_float(g_dO[off]);  // HBM read: dO_i, per (j, i)
      }
      for (int r = threadIdx.x; r < rows; r += blockDim.x) {
        s_lse[r] = g_LSE[a.lse_offset(b, h, i0 + r)];  // HBM read: LSE_i, per (j, i)
        s_D[r] = g_D[a.lse_offset(b, h, i0 + r)];      // HBM read: D_i, per (j, i)
      }
      __syncthreads();

      // P_ij and dS_ij: the lanes of key row jj take the query rows r = lane, lane + 8, ...
      for (int r = lane; r < rows; r += kLanesPerRow) {
        ProbGrad g{0.f, 0.f};
        if (key_valid && s_lse[r] != -INFINITY && a.mask.allowed(i0 + r, j))
          g = prob_and_dscore(s_Q + r * ld, s_K + jj * ld, s_dO + r * ld, s_V + jj * ld, d, a.scale, s_lse[r],
                              s_D[r]);
        s_P[r * lds + jj] = g.p;    // LDS write: P_ij
        s_dS[r * lds + jj] = g.ds;  // LDS write: dS_ij
      }
      __syncthreads();

      // dV_j += P_ij^T dO_i and dK_j += dS_ij^T Q_i (scale at the end), row jj, columns lane + 8c.
      // Summed over the tile's rows first, then into the total: a blocked sum (a GEMM's order), so
      // the rounding of dK_j, dV_j grows with the number of tiles, not with Nq * group.
      float t_dk[kCols<kD>], t_dv[kCols<kD>];
#pragma unroll
      for (int c = 0; c < kCols<kD>; ++c) t_dk[c] = t_dv[c] = 0.f;
      for (int r = 0; r < rows; ++r) {
        const float p = s_P[r * lds + jj], ds = s_dS[r * lds + jj];
#pragma unroll
        for (int c = 0; c < kCols<kD>; ++c) {
          const int x = lane + c * kLanesPerRow;
          if (x < d) {
            t_dv[c] += p * s_dO[r * ld + x];
            t_dk[c] += ds * s_Q[r * ld + x];
          }
        }
      }
#pragma unroll
      for (int c = 0; c < kCols<kD>; ++c) {
        r_dv[c] += t_dv[c];
        r_dk[c] += t_dk[c];
      }

      if constexpr (kDqAtomic) {
        // dQ_i += dS_ij K_j (scale in dq_convert): one thread per (r, x), summed over the block's keys.
        const int keys = static_cast<int>(j1 - j0);
        for (int e = threadIdx.x; e < rows * d; e += blockDim.x) {
          const int r = e / d, x = e % d;
          float acc = 0.f;
          for (int c = 0; c < keys; ++c) acc += s_dS[r * lds + c] * s_K[c * ld + x];
          atomicAdd(g_dQaccum + a.q_offset(b, i0 + r, h) + x, acc);  // HBM read + write: dQ_accum_i, per (j, i)
        }
      }
    }
  }

  if (!key_valid) return;
#pragma unroll
  for (int c = 0; c < kCols<kD>; ++c) {
    const int x = lane + c * kLanesPerRow;
    if (x < d) {
      const int64_t off = a.kv_offset(b, j, h_kv) + x;
      g_dK[off] = from_float<T>(a.scale * r_dk[c]);  // HBM write: dK_j, once
      g_dV[off] = from_float<T>(r_dv[c]);            // HBM write: dV_j, once
    }
  }
}

// 3. dQ = scale * dQ_accum, rounded to the dtype. HBM traffic: 4 Nq d read, e Nq d written.
template <class T>
__global__ void dq_convert_kernel(int64_t n, float scale, const float* __restrict__ g_dQaccum,
                                  T* __restrict__ g_dQ) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < n; e += step)
    g_dQ[e] = from_float<T>(scale * g_dQaccum[e]);
}

unsigned stream_blocks(int64_t n) {
  return static_cast<unsigned>(std::clamp<int64_t>((n + kStreamThreads - 1) / kStreamThreads, 1, kMaxStreamBlocks));
}

}  // namespace

LaunchStatus launch_kv_outer(const AttnProblem& p, const BackwardTensors& t, const Tiles& tiles,
                             const Workspace& ws, bool dq_atomic, const Launcher& L) {
  const AttnView a = AttnView::of(p);
  const int64_t blocks = p.batch * p.heads_kv * ((p.seqlen_k + tiles.bc - 1) / tiles.bc);
  const int smem = static_cast<int>(kv_outer_shared_bytes(tiles.br, tiles.bc, p.head_dim));
  const MainKernel kv_outer{.br = tiles.br, .bc = tiles.bc, .stages = 1, .splits = 0, .grid_order = "kv_bh_major"};
  float* dq_accum = dq_atomic ? ws.dq_accum : nullptr;
  return dispatch_dtype(p.dtype, [&]<class T>() -> LaunchStatus {
    const T* q = static_cast<const T*>(t.q);
    const T* d_o = static_cast<const T*>(t.d_o);
    if (auto e = L.aux(&bwd_preprocess_kernel<T>, dim3(stream_blocks(p.lse_elems())), kStreamThreads, 0, a,
                       static_cast<const T*>(t.o), d_o, ws.D, dq_accum))
      return e;
    if (auto e = scalar::dispatch_head_dim(p.head_dim, [&]<int kD>() -> LaunchStatus {
          auto* kernel = dq_atomic ? &kv_outer_kernel<T, kD, true> : &kv_outer_kernel<T, kD, false>;
          return L.main(kv_outer, kernel, dim3(static_cast<unsigned>(blocks)), tiles.bc * kLanesPerRow, smem, a,
                        tiles.br, tiles.bc, q, static_cast<const T*>(t.k), static_cast<const T*>(t.v), d_o, t.lse,
                        static_cast<const float*>(ws.D), dq_accum, static_cast<T*>(t.dk), static_cast<T*>(t.dv));
        }))
      return e;
    if (!dq_atomic) return std::nullopt;
    return L.aux(&dq_convert_kernel<T>, dim3(stream_blocks(p.q_elems())), kStreamThreads, 0, p.q_elems(), a.scale,
                 static_cast<const float*>(dq_accum), static_cast<T*>(t.dq));
  });
}

LaunchStatus check_pointers(const std::string& who, const BackwardTensors& t, const void* workspace) {
  for (const void* ptr : {t.q, t.k, t.v, t.o, static_cast<const void*>(t.lse), t.d_o,
                          static_cast<const void*>(t.dq), static_cast<const void*>(t.dk),
                          static_cast<const void*>(t.dv), workspace})
    if (!ptr) return who + ": every tensor (q, k, v, o, lse, d_o, dq, dk, dv) and the workspace must be non-null";
  return std::nullopt;
}

}  // namespace scalar_bwd

LaunchStatus bwd01_fa2_scalar_supports(const AttnProblem& p, const BackwardOptions& opt) {
  return scalar_bwd::check_common("bwd01_fa2_scalar", p, scalar_bwd::tiles_of(p, opt));
}

std::size_t bwd01_fa2_scalar_workspace_bytes(const AttnProblem& p, const BackwardOptions&) {
  return scalar_bwd::workspace_bytes(p, /*with_dq_accum=*/true);
}

namespace {

// The launch path of launch() and config() (three launches; LaunchConfig describes the K/V-outer one).
LaunchStatus run(const AttnProblem& p, const BackwardTensors& t, const BackwardOptions& opt, void* workspace,
                 const Launcher& L) {
  if (auto e = bwd01_fa2_scalar_supports(p, opt)) return e;
  if (!L.describes())
    if (auto e = scalar_bwd::check_pointers("bwd01_fa2_scalar", t, workspace)) return e;
  return scalar_bwd::launch_kv_outer(p, t, scalar_bwd::tiles_of(p, opt),
                                     scalar_bwd::Workspace::carve(workspace, p, true), /*dq_atomic=*/true, L);
}

}  // namespace

LaunchStatus bwd01_fa2_scalar_launch(const AttnProblem& p, const BackwardTensors& t, const BackwardOptions& opt,
                                     void* workspace, void* stream) {
  return run(p, t, opt, workspace, Launcher::enqueue(stream));
}

LaunchStatus bwd01_fa2_scalar_config(const AttnProblem& p, const BackwardOptions& opt, LaunchConfig& out) {
  return describe_launch(out, [&](const Launcher& L) { return run(p, {}, opt, nullptr, L); });
}

}  // namespace ioattn::kernels

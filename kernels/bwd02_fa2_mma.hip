// kernels/bwd02_fa2_mma.hip: the FlashAttention-2 backward on matrix cores. Pairs with v04_fa2_mma
// (it reads that forward's O and LSE).
//
// What changed against bwd01_fa2_scalar: the five products of a tile run on the matrix cores
// (mma.sync m16n8k16 on NVIDIA, MFMA 16x16x16 on AMD) through kernels/platform/fragment.hpp, with
// 16-bit operands and fp32 accumulators. The loops are bwd01's (FA2's Algorithm 2): a CTA owns one
// key block K_j, V_j (Bc = 64 keys, in shared memory) for its whole life, streams the query tiles
// Q_i, dO_i (Br rows) of every query head of its group past it, keeps dK_j, dV_j in registers and
// adds dQ_i by fp32 atomics into an fp32 accumulator (dq_mode "atomic").
// The new fact is which operand a warp owns: each of the 4 warps owns 16 KEYS (rows of dK_j, dV_j),
// so the products are computed transposed, keys as the M dimension of the atom:
//   S^T  = K_j Q_i^T       A = K rows (load_a), B = Q rows as (n, k) (load_b_nk)      (16, Br)
//   dP^T = V_j dO_i^T      A = V rows, B = dO rows as (n, k)                          (16, Br)
//   P^T  = exp(scale S^T - LSE_i) (LSE per column), dS^T = P^T o (dP^T - D_i)
//   dV_j += P^T dO_i       A = P^T from its accumulators (frag::p_to_a), B = dO (load_b_kn)  (16, d)
//   dK_j += dS^T Q_i       A = dS^T (frag::p_to_a), B = Q (load_b_kn)                        (16, d)
//   dQ_i += dS_ij K_j      dS^T goes to shared memory query-major, s_dS (Br, Bc); each warp
//                          takes a (16, d/2) piece: A = s_dS rows (load_a), B = K (load_b_kn)
// so P and dS never need a transposed load: the accumulator layout of a (16 keys x 16 queries)
// pair of atoms is the A layout of the next product (fragment.hpp, p_to_a). dS_ij is rounded to
// the dtype once and the same values feed dK and dQ.
//   1. preprocess   D_i = rowsum(dO_i o O_i), dQ_accum = 0                   (bwd_mma.hpp)
//   2. K/V outer    per (b, kv head, key block j); dK_j = scale dK_j, dV_j written once
//   3. dq_convert   dQ = scale dQ_accum, in the dtype                        (bwd_mma.hpp)
// GQA/MQA: the CTA of a K/V head walks the query heads of its group in a fixed order, so dK_j and
// dV_j sum over the group in registers (deterministic: bit-identical dK, dV across launches; dQ is
// not, the order of the atomics varies; bwd02b_fa2_mma_dqpass removes them).
// Masks: only the query rows that can see block j are streamed (bwd_scalar.hpp query_rows_seeing,
// from mask.hpp's per-row key ranges); only tiles that cross a boundary (diagonal, window edge,
// seqlen_k) evaluate the mask (MaskSpec::tile_unmasked). A fully masked row (LSE = -inf) and the
// padding rows of the last tile are staged with LSE = +inf: P = 0, dS = 0, its dQ row exactly 0.
//
// HBM traffic (simulator: `ioattn simulate --pass bwd --strategy fa2 --dq atomic`), e = 2 bytes,
// per query head, Nq x Nk unmasked, Tc = ceil(Nk / 64):
//   preprocess : dO, O read (2 e Nq d), D written (4 Nq), dQ_accum zeroed (4 Nq d)
//   K/V outer  : K_j, V_j read and dK_j, dV_j written once per K/V head (4 e Nk d); per (j, i):
//                Q_i, dO_i (2 e Tc Nq d), LSE_i, D_i (8 Tc Nq), dQ_accum read + written by the
//                atomics (8 Tc Nq d)
//   dq_convert : dQ_accum read (4 Nq d), dQ written (e Nq d)
//
// Supports: fp16, bf16 (fp32 accumulation); d in {64, 128}; any Nq, Nk; causal (bottom-right),
// windows, GQA/MQA; fully masked rows (dQ = 0).
// Tiles (fixed): Bc = 64 keys per CTA (4 warps x 16), Br = 32 query rows per streamed tile.
// Shared memory: 8 Br + 2 (2 Bc (d+8) + 2 Br (d+8) + Br (Bc+8)) bytes (+ 2 KiB of P scratch on
// AMD): 31.75 KiB at d = 64, 55.75 KiB at d = 128 on NVIDIA (the launcher raises the 48 KiB
// default), 33.75 / 57.75 KiB on AMD.
// Workspace: D (4 B Hq Nq, padded to 256 bytes) + dQ_accum (4 B Nq Hq d).
// Launches: 3 (preprocess, K/V outer, dq_convert), written once in run() below against the
// Launcher (launcher.hpp), so config() reports the launched K/V-outer kernel: grid B*Hkv*Tc in
// "kv_bh_major" order (launch.hpp), 128 threads (256 on AMD), the shared memory above.
// ptxas (not measured on a GPU; nvcc 13.0, sm_90, -O3 -Xptxas -v): K/V-outer kernel, registers per
// thread, fp16 = bf16: d = 64: 169, d = 128: 251; 0 bytes of spill. Preprocess 36, dq_convert 12.
// (The instances without the dQ step, bwd02b's: d = 64: 166, d = 128: 244, no spill.) AMD
// (hipcc -Rpass-analysis=kernel-resource-usage, gfx90a / gfx940): at most 247 VGPRs + 64 AGPRs, no
// scratch.
// Measured: passes the GPU suite and memcheck on the H200 (2026-12-01); its times are in
// kernels/README.md's generated backward tables (the run CANONICAL names as `bwd`).
// Run: build-gpu/verify/kernels/gpu_backward (the GPU property tests of every backward variant), or
//   build-gpu/apps/ioattn run --backward --bwd-kernel bwd02_fa2_mma --seqlen 1024 --head-dim 128 --dtype bf16 --check
#include "kernels/bwd_mma.hpp"

namespace ioattn::kernels {
namespace mma_bwd {
namespace {

// The shared memory the header states.
#if defined(IOATTN_PLATFORM_NVIDIA)
static_assert(KvTile<64>::kSmemBytes == 32512 && KvTile<128>::kSmemBytes == 57088);
#else
static_assert(KvTile<64>::kSmemBytes == 32512 + 2048 && KvTile<128>::kSmemBytes == 57088 + 2048);
#endif

// The K/V-outer kernel. blockIdx.x = (b * Hkv + h_kv) * Tc + j_block; warp w owns keys
// [16 w, 16 w + 16) of the block.
template <class T, class Tl, bool kDqAtomic>
__global__ void __launch_bounds__(Tl::kThreads)
kv_outer_mma_kernel(AttnView a, const T* __restrict__ g_Q_all, const T* __restrict__ g_K_all,
                    const T* __restrict__ g_V_all, const T* __restrict__ g_dO_all, const float* __restrict__ g_LSE,
                    const float* __restrict__ g_D, float* __restrict__ g_dQaccum, T* __restrict__ g_dK_all,
                    T* __restrict__ g_dV_all) {
  constexpr int kD = Tl::kD, kBr = Tl::kBr, kBc = Tl::kBc, kLd = Tl::kLd, kLdS = Tl::kLdS;
  constexpr int kNQ = kBr / frag::kN;  // accumulator atoms across S^T, dP^T (16, Br)
  constexpr int kND = kD / frag::kN;   // accumulator atoms across dK_j, dV_j (16, d)
  constexpr int kKD = kD / frag::kK;   // k-steps over d
  constexpr int kNP = frag::kNPer16;

  extern __shared__ __align__(16) unsigned char smem_raw[];
  float* s_lse = reinterpret_cast<float*>(smem_raw);  // (Br)       staged LSE_i (+inf: no contribution)
  float* s_D = s_lse + kBr;                           // (Br)       D_i
  T* s_K = reinterpret_cast<T*>(s_D + kBr);           // (Bc, kLd)  K_j, for the CTA's life
  T* s_V = s_K + kBc * kLd;                           // (Bc, kLd)  V_j, idem
  T* s_Q = s_V + kBc * kLd;                           // (Br, kLd)  Q_i
  T* s_dO = s_Q + kBr * kLd;                          // (Br, kLd)  dO_i
  T* s_dS = s_dO + kBr * kLd;                         // (Br, kLdS) dS_ij, query-major (dQ step)
  T* s_P = s_dS + kBr * kLdS;                         // (warps, 16, 16): AMD only (frag::p_to_a)

  const int tid = threadIdx.x, warp = tid / kWarpSize, lane = tid % kWarpSize;
  const int64_t Tc = (a.seqlen_k + kBc - 1) / kBc;
  const int64_t j_block = blockIdx.x % Tc;
  const int64_t h_kv = (blockIdx.x / Tc) % a.heads_kv;
  const int64_t b = blockIdx.x / (Tc * a.heads_kv);
  const int64_t j0 = j_block * kBc, j1 = j0 + kBc < a.seqlen_k ? j0 + kBc : a.seqlen_k;
  const int kr0 = warp * frag::kM;  // this warp's keys in the block: [kr0, kr0 + 16)
  const int64_t q_stride = a.q_row_stride(), kv_stride = a.kv_row_stride();
  const MaskSpec& mask = a.mask;

  load_rows_async<kBc, kD, Tl::kThreads>(s_K, kLd, g_K_all + a.kv_offset(b, 0, h_kv), kv_stride, j0, a.seqlen_k,
                                         tid);  // HBM read: K_j, once per CTA
  load_rows_async<kBc, kD, Tl::kThreads>(s_V, kLd, g_V_all + a.kv_offset(b, 0, h_kv), kv_stride, j0, a.seqlen_k,
                                         tid);  // HBM read: V_j, once per CTA
  frag::async_commit();

  frag::FragC r_dK[kND], r_dV[kND];  // (16, d) each: this warp's keys, summed over the group
#pragma unroll
  for (int t = 0; t < kND; ++t) frag::zero(r_dK[t]), frag::zero(r_dV[t]);

  const scalar_bwd::RowRange seen = scalar_bwd::query_rows_seeing(mask, j0, j1);
  for (int64_t h = h_kv * a.group; h < (h_kv + 1) * a.group; ++h) {  // the group's query heads (GQA)
    const T* g_Q = g_Q_all + a.q_offset(b, 0, h);
    const T* g_dO = g_dO_all + a.q_offset(b, 0, h);
    for (int64_t i0 = seen.first; i0 < seen.last; i0 += kBr) {
      const int64_t i1 = i0 + kBr < seen.last ? i0 + kBr : seen.last;  // rows >= i1 are padding
      __syncthreads();  // every warp is done with the previous tile's s_Q, s_dO, s_dS, s_lse, s_D
      load_rows_async<kBr, kD, Tl::kThreads>(s_Q, kLd, g_Q, q_stride, i0, i1, tid);    // HBM read: Q_i, per (j, i)
      load_rows_async<kBr, kD, Tl::kThreads>(s_dO, kLd, g_dO, q_stride, i0, i1, tid);  // HBM read: dO_i, per (j, i)
      frag::async_commit();
      for (int r = tid; r < kBr; r += Tl::kThreads) {
        const bool valid = i0 + r < i1;
        s_lse[r] = staged_lse_log2(valid, valid ? g_LSE[a.lse_offset(b, h, i0 + r)] : 0.f);  // HBM read: LSE_i
        s_D[r] = valid ? g_D[a.lse_offset(b, h, i0 + r)] : 0.f;                         // HBM read: D_i
      }
      frag::async_wait<0>();
      __syncthreads();

      // S^T = K_j Q_i^T and dP^T = V_j dO_i^T for this warp's 16 keys: (16, Br) each.
      frag::FragC r_S[kNQ], r_dP[kNQ];
#pragma unroll
      for (int t = 0; t < kNQ; ++t) frag::zero(r_S[t]), frag::zero(r_dP[t]);
#pragma unroll
      for (int kk = 0; kk < kKD; ++kk) {
        const frag::FragA r_Ka = frag::load_a_fast(s_K, kLd, kr0, kk * frag::kK, lane);
        const frag::FragA r_Va = frag::load_a_fast(s_V, kLd, kr0, kk * frag::kK, lane);
#pragma unroll
        for (int g = 0; g < kBr / 16; ++g) {
          frag::FragB r_Qb[kNP], r_dOb[kNP];
          frag::load_b_nk_fast(r_Qb, s_Q, kLd, g * 16, kk * frag::kK, lane);
          frag::load_b_nk_fast(r_dOb, s_dO, kLd, g * 16, kk * frag::kK, lane);
#pragma unroll
          for (int u = 0; u < kNP; ++u) {
            frag::mma<T>(r_S[g * kNP + u], r_Ka, r_Qb[u]);
            frag::mma<T>(r_dP[g * kNP + u], r_Va, r_dOb[u]);
          }
        }
      }

      // P^T and dS^T in place (row = key j, column = query i). Only a tile that crosses a mask
      // boundary tests (i, j); keys past seqlen_k (zero rows of s_K) are such a boundary.
      with_mask(mask.tile_unmasked(i0, i1, j0, j0 + kBc), [&](auto masked) {
#pragma unroll
        for (int t = 0; t < kNQ; ++t)
#pragma unroll
          for (int e = 0; e < frag::kCElems; ++e) {
            const int n = t * frag::kN + frag::c_col(lane, e);
            const int64_t i = i0 + n, j = j0 + kr0 + frag::c_row(lane, e);
            const bool visible = !masked || (j >= mask.key_begin(i) && j < mask.key_end(i));
            prob_and_dscore(r_S[t].x[e], r_dP[t].x[e], visible, a.scale_log2, s_lse[n], s_D[n]);
          }
      });

      // dV_j += P^T dO_i and dK_j += dS^T Q_i (scale at the end): 16 queries per MMA, P^T and dS^T
      // from their accumulators (rounded to the dtype there).
#pragma unroll
      for (int g = 0; g < kBr / 16; ++g) {
        using Pair = const frag::FragC(*)[kNP];
        const frag::FragA r_Pa =
            frag::p_to_a<T>(*reinterpret_cast<Pair>(&r_S[g * kNP]), s_P + warp * frag::kPScratchElems, lane);
        const frag::FragA r_dSa =
            frag::p_to_a<T>(*reinterpret_cast<Pair>(&r_dP[g * kNP]), s_P + warp * frag::kPScratchElems, lane);
#pragma unroll
        for (int dd = 0; dd < kD / 16; ++dd) {
          frag::FragB r_dOb[kNP], r_Qb[kNP];
          frag::load_b_kn_fast(r_dOb, s_dO, kLd, g * 16, dd * 16, lane);
          frag::load_b_kn_fast(r_Qb, s_Q, kLd, g * 16, dd * 16, lane);
#pragma unroll
          for (int u = 0; u < kNP; ++u) {
            frag::mma<T>(r_dV[dd * kNP + u], r_Pa, r_dOb[u]);
            frag::mma<T>(r_dK[dd * kNP + u], r_dSa, r_Qb[u]);
          }
        }
      }

      if constexpr (kDqAtomic) {
        // dS^T to shared memory, query-major: s_dS[i][j] (the rounding p_to_a applied above).
#pragma unroll
        for (int t = 0; t < kNQ; ++t)
#pragma unroll
          for (int e = 0; e < frag::kCElems; ++e)
            s_dS[(t * frag::kN + frag::c_col(lane, e)) * kLdS + kr0 + frag::c_row(lane, e)] =
                from_float<T>(r_dP[t].x[e]);  // LDS write: dS_ij
        __syncthreads();
        // dQ_i += dS_ij K_j (scale in dq_convert): this warp's rows [16 rt, 16 rt + 16) of the
        // tile and columns [c0, c0 + kDqCols), summed over the block's 64 keys, then one fp32
        // atomic per element.
        const int rt = warp % Tl::kRowTiles, c0 = warp / Tl::kRowTiles * Tl::kDqCols;
        const int rows = static_cast<int>(i1 - i0) - rt * frag::kM;  // valid rows of this row tile
        float* g_dQ = g_dQaccum + a.q_offset(b, i0 + rt * frag::kM, h);
#pragma unroll 1  // one 16-column step at a time: dK_j, dV_j hold most of the registers
        for (int dd = 0; dd < Tl::kDqCols / 16; ++dd) {
          frag::FragC r_dQ[kNP];
#pragma unroll
          for (int u = 0; u < kNP; ++u) frag::zero(r_dQ[u]);
#pragma unroll
          for (int g = 0; g < kBc / 16; ++g) {
            const frag::FragA r_dSa = frag::load_a_fast(s_dS, kLdS, rt * frag::kM, g * 16, lane);
            frag::FragB r_Kb[kNP];
            frag::load_b_kn_fast(r_Kb, s_K, kLd, g * 16, c0 + dd * 16, lane);
#pragma unroll
            for (int u = 0; u < kNP; ++u) frag::mma<T>(r_dQ[u], r_dSa, r_Kb[u]);
          }
#pragma unroll
          for (int u = 0; u < kNP; ++u)
#pragma unroll
            for (int e = 0; e < frag::kCElems; ++e) {
              const int r = frag::c_row(lane, e);
              if (r < rows)  // HBM read + write: dQ_accum_i, per (j, i)
                atomicAdd(g_dQ + r * q_stride + c0 + dd * 16 + u * frag::kN + frag::c_col(lane, e), r_dQ[u].x[e]);
            }
        }
      }
    }
  }
  frag::async_wait<0>();  // K_j, V_j landed even when no tile was streamed (nothing left in flight)

  // dK_j = scale dK_j, dV_j: this warp's keys j0 + kr0 + r < seqlen_k.
  const int keys = static_cast<int>(j1 - j0) - kr0;
  store_rows(g_dK_all + a.kv_offset(b, j0 + kr0, h_kv), kv_stride, keys, r_dK, a.scale, lane);  // HBM write: dK_j, once
  store_rows(g_dV_all + a.kv_offset(b, j0 + kr0, h_kv), kv_stride, keys, r_dV, 1.f, lane);      // HBM write: dV_j, once
}

template <int kD, bool kDqAtomic>
LaunchStatus launch_d(const AttnView& a, const BackwardTensors& t, const Workspace& ws, DType dt, const Launcher& L) {
  using Tl = KvTile<kD>;
  const int64_t blocks = a.batch * a.heads_kv * ((a.seqlen_k + Tl::kBc - 1) / Tl::kBc);
  const MainKernel main{.br = Tl::kBr, .bc = Tl::kBc, .stages = 1, .splits = 0, .grid_order = "kv_bh_major"};
  return dispatch_dtype(dt, [&]<class T>() -> LaunchStatus {
    if constexpr (sizeof(T) != 2) {
      return "bwd02_fa2_mma: dtype must be fp16 or bf16";
    } else {
      const T* d_o = static_cast<const T*>(t.d_o);
      if (auto e = L.aux(&preprocess_kernel<T>, dim3(stream_blocks(a.batch * a.heads_q * a.seqlen_q * 8)),
                         kStreamThreads, 0, a, static_cast<const T*>(t.o), d_o, ws.D, ws.dq_accum))
        return e;
      if (auto e = L.main(main, &kv_outer_mma_kernel<T, Tl, kDqAtomic>, dim3(static_cast<unsigned>(blocks)),
                          Tl::kThreads, Tl::kSmemBytes, a, static_cast<const T*>(t.q), static_cast<const T*>(t.k),
                          static_cast<const T*>(t.v), d_o, t.lse, static_cast<const float*>(ws.D), ws.dq_accum,
                          static_cast<T*>(t.dk), static_cast<T*>(t.dv)))
        return e;
      if (!kDqAtomic) return std::nullopt;
      const int64_t n = a.batch * a.seqlen_q * a.heads_q * a.head_dim;
      return L.aux(&dq_convert_kernel<T>, dim3(stream_blocks(n / 4)), kStreamThreads, 0, n, a.scale,
                   static_cast<const float*>(ws.dq_accum), static_cast<T*>(t.dq));
    }
  });
}

}  // namespace

LaunchStatus launch_kv_outer(const AttnProblem& p, const BackwardTensors& t, const Workspace& ws, bool dq_atomic,
                             const Launcher& L) {
  const AttnView a = AttnView::of(p);
  if (p.head_dim == 64) return dq_atomic ? launch_d<64, true>(a, t, ws, p.dtype, L) : launch_d<64, false>(a, t, ws, p.dtype, L);
  return dq_atomic ? launch_d<128, true>(a, t, ws, p.dtype, L) : launch_d<128, false>(a, t, ws, p.dtype, L);
}

}  // namespace mma_bwd

LaunchStatus bwd02_fa2_mma_supports(const AttnProblem& p, const BackwardOptions& opt) {
  return mma_bwd::check_common("bwd02_fa2_mma", p, opt);
}

std::size_t bwd02_fa2_mma_workspace_bytes(const AttnProblem& p, const BackwardOptions&) {
  return scalar_bwd::workspace_bytes(p, /*with_dq_accum=*/true);
}

namespace {
// The launch path (written once against a Launcher: kernels/launcher.hpp).
LaunchStatus run(const AttnProblem& p, const BackwardTensors& t, const BackwardOptions& opt, void* workspace,
                 const Launcher& L) {
  if (auto e = bwd02_fa2_mma_supports(p, opt)) return e;
  if (!L.describes())
    if (auto e = scalar_bwd::check_pointers("bwd02_fa2_mma", t, workspace)) return e;
  const mma_bwd::Workspace ws = workspace ? mma_bwd::Workspace::carve(workspace, p, true) : mma_bwd::Workspace{};
  return mma_bwd::launch_kv_outer(p, t, ws, /*dq_atomic=*/true, L);
}
}  // namespace

LaunchStatus bwd02_fa2_mma_launch(const AttnProblem& p, const BackwardTensors& t, const BackwardOptions& opt,
                                  void* workspace, void* stream) {
  return run(p, t, opt, workspace, Launcher::enqueue(stream));
}

LaunchStatus bwd02_fa2_mma_config(const AttnProblem& p, const BackwardOptions& opt, LaunchConfig& out) {
  return describe_launch(out, [&](const Launcher& L) { return run(p, {}, opt, nullptr, L); });
}

}  // namespace ioattn::kernels

// kernels/bwd02b_fa2_mma_dqpass.hip: bwd02 with dQ by a separate Q-outer pass on matrix cores: no
// atomics, deterministic. Pairs with v04_fa2_mma.
//
// What changed against bwd02_fa2_mma (as bwd01b against bwd01): dQ_i is no longer accumulated by
// fp32 atomics from every K/V-outer CTA. bwd02's preprocess (D_i) and K/V-outer kernel run with
// their dQ step off (dK_j, dV_j only), and a second kernel with FA2's forward loop order owns dQ_i:
// per (b, query head h, query block i of 64 rows; each of the 4 warps owns 16 query rows), Q_i,
// dO_i once, then for every key block j (Bc keys) some row of the warp can see:
//   S_ij  = Q_i K_j^T      A = Q rows (load_a), B = K rows as (n, k) (load_b_nk)      (16, Bc)
//   dP_ij = dO_i V_j^T     A = dO rows, B = V rows as (n, k)                          (16, Bc)
//   P_ij  = exp(scale S_ij - LSE_i), dS_ij = P_ij o (dP_ij - D_i)   (LSE_i, D_i in registers)
//   dQ_i += dS_ij K_j      A = dS from its accumulators (frag::p_to_a), B = K (load_b_kn) (16, d)
// then dQ_i = scale dQ_i, written once in the dtype. Every sum has a fixed order (the MMAs of a warp
// run in program order, no atomics), so dQ, dK and dV are bit-identical across launches.
// The price: S_ij and dP_ij are computed twice (4 products per tile in the K/V pass + 3 here,
// against bwd02's 5) and K_j, V_j are re-read per query block; the gain: no fp32 dQ accumulator
// (4 B Nq Hq d bytes less workspace) and no read-modify-write of it per (j, i).
// Masks: key tiles no row of the block can see are never loaded, tiles no row of a warp can see are
// skipped by that warp, only boundary tiles evaluate the mask; fully masked rows and rows past
// seqlen_q are staged with LSE = +inf (bwd_mma.hpp), so their dQ row is exactly 0.
//
// HBM traffic (simulator: `ioattn simulate --pass bwd --strategy fa2 --dq separate`), e = 2 bytes,
// per query head, unmasked, Tr = ceil(Nq / 64), Tc = ceil(Nk / 64):
//   preprocess : dO, O read (2 e Nq d), D written (4 Nq)
//   K/V outer  : as bwd02 without dQ_accum: K_j, V_j read and dK_j, dV_j written once per K/V head
//                (4 e Nk d); per (j, i) Q_i, dO_i (2 e Tc Nq d), LSE_i, D_i (8 Tc Nq)
//   dQ pass    : Q_i, dO_i, LSE_i, D_i once (2 e Nq d + 8 Nq), K_j, V_j per (i, j) (2 e Tr Nk d),
//                dQ written once (e Nq d)
//
// Supports: as bwd02 (fp16, bf16; d in {64, 128}; any Nq, Nk; causal, windows, GQA/MQA; fully
// masked rows: dQ = 0). Tiles (fixed): the K/V pass as bwd02; the dQ pass Br = 64 query rows
// (4 warps x 16) and Bc = 64 keys at d = 64, 32 at d = 128 (AMD's 64 KiB of LDS), shared memory
// 2 (2 Br (d+8) + 2 Bc (d+8)) bytes (+ 2 KiB of P scratch on AMD): 36 KiB at d = 64, 51 KiB at
// d = 128 on NVIDIA, 38 / 53 KiB on AMD.
// Workspace: D only (4 B Hq Nq, padded to 256 bytes).
// Launches: 3 (bwd02's preprocess and K/V-outer kernel, then the dQ pass), one launch path for
// launch() and config() (run() below); the configuration describes the K/V-outer kernel, as bwd02's.
// ptxas (not measured on a GPU; nvcc 13.0, sm_90, -O3 -Xptxas -v): dQ pass 168 registers per thread
// at d = 64 and 128, fp16 = bf16; the K/V-outer kernel without the dQ step d = 64: 166, d = 128: 244;
// 0 bytes of spill. AMD (hipcc -Rpass-analysis=kernel-resource-usage, gfx90a / gfx940): dQ pass at
// most 155 VGPRs + 48 AGPRs, no scratch.
// Measured: passes the GPU suite and memcheck on the H200 (2026-12-01); its times are in
// kernels/README.md's generated backward tables (the run CANONICAL names as `bwd`).
// Run: build-gpu/verify/kernels/gpu_backward (its determinism check: 100 launches bit-identical), or
//   build-gpu/apps/ioattn run --backward --bwd-kernel bwd02b_fa2_mma_dqpass --seqlen 1024 --head-dim 128 --dtype bf16 --check
#include "kernels/bwd_mma.hpp"

namespace ioattn::kernels {
namespace {

using namespace mma_bwd;

template <int kD_>
struct DqTile {
  static constexpr int kD = kD_;
  static constexpr int kWarps = 4;
  static constexpr int kBr = frag::kM * kWarps;    // 64 query rows per CTA, 16 per warp
  static constexpr int kBc = kD_ <= 64 ? 64 : 32;  // keys per tile
  static constexpr int kThreads = kWarps * kWarpSize;
  static constexpr int kLd = kD_ + 8;  // padded shared row (conflict-free ldmatrix)
  // Q_i, dO_i (Br, kLd), K_j, V_j (Bc, kLd), AMD's P scratch, in the dtype.
  static constexpr int kSmemBytes = ((2 * kBr + 2 * kBc) * kLd + kWarps * frag::kPScratchElems) * 2;
  static_assert(kD_ % 16 == 0 && kBc % 16 == 0, "d and Bc must be multiples of the MMA K (16)");
  static_assert(kSmemBytes <= kMaxSharedBytes, "the dQ pass CTA exceeds the platform's shared memory (LDS)");
};
// The shared memory the header states.
#if defined(IOATTN_PLATFORM_NVIDIA)
static_assert(DqTile<64>::kSmemBytes == 36 * 1024 && DqTile<128>::kSmemBytes == 51 * 1024);
#else
static_assert(DqTile<64>::kSmemBytes == 38 * 1024 && DqTile<128>::kSmemBytes == 53 * 1024);
#endif

// The dQ pass. blockIdx.x = b * Hq + h, blockIdx.y = Tr - 1 - query block (heavy, late query
// blocks of a causal mask first).
template <class T, class Tl>
__global__ void __launch_bounds__(Tl::kThreads)
dq_pass_mma_kernel(AttnView a, const T* __restrict__ g_Q_all, const T* __restrict__ g_K_all,
                   const T* __restrict__ g_V_all, const T* __restrict__ g_dO_all, const float* __restrict__ g_LSE,
                   const float* __restrict__ g_D, T* __restrict__ g_dQ_all) {
  constexpr int kD = Tl::kD, kBr = Tl::kBr, kBc = Tl::kBc, kLd = Tl::kLd;
  constexpr int kNS = kBc / frag::kN;  // accumulator atoms across S, dP (16, Bc)
  constexpr int kNO = kD / frag::kN;   // accumulator atoms across dQ (16, d)
  constexpr int kKD = kD / frag::kK;   // k-steps over d
  constexpr int kNP = frag::kNPer16;
  constexpr int kR = frag::kCRows;     // rows a lane holds per 16-row tile

  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* s_Q = reinterpret_cast<T*>(smem_raw);  // (Br, kLd) Q_i
  T* s_dO = s_Q + kBr * kLd;                // (Br, kLd) dO_i
  T* s_K = s_dO + kBr * kLd;                // (Bc, kLd) K_j
  T* s_V = s_K + kBc * kLd;                 // (Bc, kLd) V_j
  T* s_P = s_V + kBc * kLd;                 // (warps, 16, 16): AMD only (frag::p_to_a)

  const int tid = threadIdx.x, warp = tid / kWarpSize, lane = tid % kWarpSize;
  const int64_t b = blockIdx.x / a.heads_q, h = blockIdx.x % a.heads_q, h_kv = a.kv_head_of(h);
  const int64_t i0 = (static_cast<int64_t>(gridDim.y) - 1 - blockIdx.y) * kBr;
  const int64_t i1 = i0 + kBr < a.seqlen_q ? i0 + kBr : a.seqlen_q;
  const int64_t q_stride = a.q_row_stride(), kv_stride = a.kv_row_stride();
  const T* g_K = g_K_all + a.kv_offset(b, 0, h_kv);
  const T* g_V = g_V_all + a.kv_offset(b, 0, h_kv);
  const MaskSpec& mask = a.mask;

  load_rows_async<kBr, kD, Tl::kThreads>(s_Q, kLd, g_Q_all + a.q_offset(b, 0, h), q_stride, i0, a.seqlen_q,
                                         tid);  // HBM read: Q_i, once
  load_rows_async<kBr, kD, Tl::kThreads>(s_dO, kLd, g_dO_all + a.q_offset(b, 0, h), q_stride, i0, a.seqlen_q,
                                         tid);  // HBM read: dO_i, once
  frag::async_commit();

  // This warp's rows [wi0, wi1) and its lane's kR rows: staged LSE_i and D_i in registers.
  const int64_t wi0 = i0 + warp * frag::kM, wi1 = wi0 + frag::kM < a.seqlen_q ? wi0 + frag::kM : a.seqlen_q;
  float lse[kR], D[kR];
#pragma unroll
  for (int s = 0; s < kR; ++s) {
    const int64_t i = wi0 + frag::c_slot_row(lane, s);
    const bool valid = i < a.seqlen_q;
    lse[s] = staged_lse_log2(valid, valid ? g_LSE[a.lse_offset(b, h, i)] : 0.f);  // HBM read: LSE_i, once
    D[s] = valid ? g_D[a.lse_offset(b, h, i)] : 0.f;                         // HBM read: D_i, once
  }
  // The keys any row of the block, and of the warp, can see.
  const int64_t kb_blk = mask.block_key_begin(i0, i1), ke_blk = mask.block_key_end(i0, i1);
  const int64_t wkb = wi0 < wi1 ? mask.key_begin(wi0) : 0, wke = wi0 < wi1 ? mask.key_end(wi1 - 1) : 0;

  frag::FragC r_dQ[kNO];  // (16, d): this warp's rows of dQ_i, unscaled
#pragma unroll
  for (int t = 0; t < kNO; ++t) frag::zero(r_dQ[t]);

  for (int64_t j0 = kb_blk / kBc * kBc; j0 < ke_blk; j0 += kBc) {
    __syncthreads();  // every warp is done with the previous K_j, V_j
    load_rows_async<kBc, kD, Tl::kThreads>(s_K, kLd, g_K, kv_stride, j0, a.seqlen_k, tid);  // HBM read: K_j, per (i, j)
    load_rows_async<kBc, kD, Tl::kThreads>(s_V, kLd, g_V, kv_stride, j0, a.seqlen_k, tid);  // HBM read: V_j, per (i, j)
    frag::async_commit();
    frag::async_wait<0>();  // (the first time also Q_i, dO_i)
    __syncthreads();
    if (j0 >= wke || j0 + kBc <= wkb) continue;  // no row of this warp sees this tile (warp-uniform)

    // S_ij = Q_i K_j^T and dP_ij = dO_i V_j^T for this warp's 16 rows: (16, Bc) each.
    frag::FragC r_S[kNS], r_dP[kNS];
#pragma unroll
    for (int t = 0; t < kNS; ++t) frag::zero(r_S[t]), frag::zero(r_dP[t]);
#pragma unroll
    for (int kk = 0; kk < kKD; ++kk) {
      const frag::FragA r_Qa = frag::load_a_fast(s_Q, kLd, warp * frag::kM, kk * frag::kK, lane);
      const frag::FragA r_dOa = frag::load_a_fast(s_dO, kLd, warp * frag::kM, kk * frag::kK, lane);
#pragma unroll
      for (int g = 0; g < kBc / 16; ++g) {
        frag::FragB r_Kb[kNP], r_Vb[kNP];
        frag::load_b_nk_fast(r_Kb, s_K, kLd, g * 16, kk * frag::kK, lane);
        frag::load_b_nk_fast(r_Vb, s_V, kLd, g * 16, kk * frag::kK, lane);
#pragma unroll
        for (int u = 0; u < kNP; ++u) {
          frag::mma<T>(r_S[g * kNP + u], r_Qa, r_Kb[u]);
          frag::mma<T>(r_dP[g * kNP + u], r_dOa, r_Vb[u]);
        }
      }
    }

    // P and dS in place; only a tile that crosses a boundary for this warp's rows tests (i, j).
    with_mask(mask.tile_unmasked(wi0, wi1, j0, j0 + kBc), [&](auto masked) {
#pragma unroll
      for (int t = 0; t < kNS; ++t)
#pragma unroll
        for (int e = 0; e < frag::kCElems; ++e) {
          const int s = frag::c_row_slot(e);
          const int64_t i = wi0 + frag::c_row(lane, e), j = j0 + t * frag::kN + frag::c_col(lane, e);
          const bool visible = !masked || (j >= mask.key_begin(i) && j < mask.key_end(i));
          prob_and_dscore(r_S[t].x[e], r_dP[t].x[e], visible, a.scale_log2, lse[s], D[s]);
        }
    });

    // dQ_i += dS_ij K_j: 16 keys per MMA, dS from its accumulators (rounded to the dtype there).
#pragma unroll
    for (int g = 0; g < kBc / 16; ++g) {
      const frag::FragA r_dSa = frag::p_to_a<T>(*reinterpret_cast<const frag::FragC(*)[kNP]>(&r_dP[g * kNP]),
                                                s_P + warp * frag::kPScratchElems, lane);
#pragma unroll
      for (int dd = 0; dd < kD / 16; ++dd) {
        frag::FragB r_Kb[kNP];
        frag::load_b_kn_fast(r_Kb, s_K, kLd, g * 16, dd * 16, lane);
#pragma unroll
        for (int u = 0; u < kNP; ++u) frag::mma<T>(r_dQ[dd * kNP + u], r_dSa, r_Kb[u]);
      }
    }
  }
  frag::async_wait<0>();  // Q_i, dO_i landed even when no key tile was loaded

  store_rows(g_dQ_all + a.q_offset(b, wi0, h), q_stride, static_cast<int>(wi1 - wi0), r_dQ, a.scale,
             lane);  // HBM write: dQ_i, once
}

}  // namespace

LaunchStatus bwd02b_fa2_mma_dqpass_supports(const AttnProblem& p, const BackwardOptions& opt) {
  if (auto e = check_common("bwd02b_fa2_mma_dqpass", p, opt)) return e;
  if ((p.seqlen_q + 63) / 64 > 65535)
    return "bwd02b_fa2_mma_dqpass: seqlen_q must be <= " + std::to_string(65535 * 64) +
           " (the dQ pass's query blocks go in grid.y, at most 65535)";
  if (p.batch * p.heads_q > 0x7fffffff) return "bwd02b_fa2_mma_dqpass: batch*heads_q must be < 2^31";
  return std::nullopt;
}

std::size_t bwd02b_fa2_mma_dqpass_workspace_bytes(const AttnProblem& p, const BackwardOptions&) {
  return scalar_bwd::workspace_bytes(p, /*with_dq_accum=*/false);
}

namespace {
template <int kD>
LaunchStatus launch_dq_pass(const AttnView& a, const BackwardTensors& t, const Workspace& ws, DType dt,
                            const Launcher& L) {
  using Tl = DqTile<kD>;
  const dim3 grid(static_cast<unsigned>(a.batch * a.heads_q), static_cast<unsigned>((a.seqlen_q + Tl::kBr - 1) / Tl::kBr));
  return dispatch_dtype(dt, [&]<class T>() -> LaunchStatus {
    if constexpr (sizeof(T) != 2) {
      return "bwd02b_fa2_mma_dqpass: dtype must be fp16 or bf16";
    } else {
      return L.aux(&dq_pass_mma_kernel<T, Tl>, grid, Tl::kThreads, Tl::kSmemBytes, a, static_cast<const T*>(t.q),
                   static_cast<const T*>(t.k), static_cast<const T*>(t.v), static_cast<const T*>(t.d_o), t.lse,
                   static_cast<const float*>(ws.D), static_cast<T*>(t.dq));
    }
  });
}

// The launch path (written once against a Launcher: kernels/launcher.hpp): the K/V-outer launch
// of bwd02 with its dQ step off (preprocess, dK/dV kernel: the main one), then the dQ pass, which
// reads D, written by the preprocess before it on the same stream.
LaunchStatus run(const AttnProblem& p, const BackwardTensors& t, const BackwardOptions& opt, void* workspace,
                 const Launcher& L) {
  if (auto e = bwd02b_fa2_mma_dqpass_supports(p, opt)) return e;
  if (!L.describes())
    if (auto e = scalar_bwd::check_pointers("bwd02b_fa2_mma_dqpass", t, workspace)) return e;
  const Workspace ws = workspace ? Workspace::carve(workspace, p, false) : Workspace{};
  if (auto e = launch_kv_outer(p, t, ws, /*dq_atomic=*/false, L)) return e;
  const AttnView a = AttnView::of(p);
  return p.head_dim == 64 ? launch_dq_pass<64>(a, t, ws, p.dtype, L) : launch_dq_pass<128>(a, t, ws, p.dtype, L);
}
}  // namespace

LaunchStatus bwd02b_fa2_mma_dqpass_launch(const AttnProblem& p, const BackwardTensors& t, const BackwardOptions& opt,
                                          void* workspace, void* stream) {
  return run(p, t, opt, workspace, Launcher::enqueue(stream));
}

LaunchStatus bwd02b_fa2_mma_dqpass_config(const AttnProblem& p, const BackwardOptions& opt, LaunchConfig& out) {
  return describe_launch(out, [&](const Launcher& L) { return run(p, {}, opt, nullptr, L); });
}

}  // namespace ioattn::kernels

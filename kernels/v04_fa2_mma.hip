// kernels/v04_fa2_mma.hip: FlashAttention-2 on matrix cores, the straightforward version.
//
// What changed vs v03_fa2_scalar: the two products of the tile loop, S_ij = Q_i K_j^T and
// O_i += P_ij V_j, run on the matrix cores (mma.sync m16n8k16 on NVIDIA, MFMA 16x16x16 on AMD)
// through kernels/platform/fragment.hpp, instead of scalar FMAs. The loop order and the online
// softmax are v03's; the new fact is the *fragment*: each warp owns 16 query rows, and every lane
// holds a fixed scattered piece of S and O (frag::c_row/c_col), so the row max and row sum of the
// softmax are reductions over the few lanes that share a row (frag::row_allreduce_*).
//
// Kept deliberately plain (v05 fixes each): tiles go global -> registers -> shared with ordinary
// 16-byte loads and two barriers per tile (no overlap of loads and math); shared rows are unpadded
// (bank conflicts); fragments are read element by element (no ldmatrix); Q fragments are re-read
// from shared memory every tile; every tile evaluates the mask; O is stored straight from the
// fragments (2-byte stores).
//
// Tiling: Br = 64 query rows per block (4 warps x 16), Bc = 64 keys per tile.
// Shared memory: Q (Br, d) + K (Bc, d) + V (Bc, d), 2-byte elements: 48 KiB at d = 128.
//
// HBM traffic (simulator strategy `fa2`), e = 2 bytes, Tr = ceil(Nq / Br):
//   Q read once, O written once:      2 * e * B*Hq*Nq*d
//   K, V read once per query block:   2 * e * B*Hq*Tr*Nk*d     (visible tiles only when masked)
//   LSE written once:                 4 * B*Hq*Nq
//
// Supports: fp16, bf16 (fp32 accumulate); d in {64, 128}; any Nq, Nk; causal (bottom-right),
// windows, GQA/MQA; LSE out; fully masked rows give O = 0, LSE = -inf.
// Measured on the H200 (experiments/results/h200/2026-11-29_4f8a955): 42-49 TFLOP/s at N = 1k-16k,
// d 64 and 128, bf16 and fp16, causal or not (v05: 201-326): element-wise fragment loads from
// unpadded rows conflict in the shared-memory banks and nothing overlaps the loads.
// Run: ioattn run --kernel v04_fa2_mma --seqlen 1024 --heads 16 --head-dim 128 --dtype bf16 --check
#include <cmath>
#include <string>

#include "kernels/attn_view.hpp"
#include "kernels/launcher.hpp"
#include "kernels/platform/fragment.hpp"
#include "kernels/platform/platform.hpp"

namespace ioattn::kernels {
namespace {

constexpr int kWarps = 4;
constexpr int kBr = frag::kM * kWarps;  // 64 query rows per block, 16 per warp
constexpr int kBc = 64;                 // keys per tile
constexpr int kThreads = kWarps * kWarpSize;

template <int kD>
constexpr int smem_bytes() {
  return ((kBr + 2 * kBc) * kD + kWarps * frag::kPScratchElems) * 2;
}

// Rows [r0, r0 + kRows) of a strided (rows_end, kD) global tile -> shared (kRows, kD); rows past
// rows_end become zeros. 16 bytes per thread per step, through registers.
template <int kRows, int kD, class T>
__device__ void load_rows(T* s, const T* g, int64_t row_stride, int r0, int rows_end) {
  for (int c = threadIdx.x; c < kRows * kD / 8; c += kThreads) {
    const int r = c / (kD / 8), x = (c % (kD / 8)) * 8;
    uint4 val = {0, 0, 0, 0};
    if (r0 + r < rows_end) val = *reinterpret_cast<const uint4*>(g + (r0 + r) * row_stride + x);  // HBM read
    *reinterpret_cast<uint4*>(s + r * kD + x) = val;
  }
}

template <class T, int kD>
__global__ void __launch_bounds__(kThreads) fa2_mma_kernel(AttnView a, const T* __restrict__ g_Q_all,
                                                           const T* __restrict__ g_K_all,
                                                           const T* __restrict__ g_V_all,
                                                           T* __restrict__ g_O_all, float* __restrict__ g_LSE) {
  static_assert(kD % 16 == 0, "head_dim must be a multiple of the MMA K (16)");
  constexpr int kNS = kBc / frag::kN;  // accumulator atoms across S (16, Bc)
  constexpr int kNO = kD / frag::kN;   // accumulator atoms across O (16, d)

  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* s_Q = reinterpret_cast<T*>(smem_raw);  // (Br, d)
  T* s_K = s_Q + kBr * kD;                  // (Bc, d)
  T* s_V = s_K + kBc * kD;                  // (Bc, d)
  T* s_P = s_V + kBc * kD;                  // (warps, 16, 16), AMD only

  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  const int seqlen_q = static_cast<int>(a.seqlen_q), seqlen_k = static_cast<int>(a.seqlen_k);
  const int64_t b = blockIdx.x / a.heads_q, h = blockIdx.x % a.heads_q;
  const int i0 = static_cast<int>(blockIdx.y) * kBr, i1 = min(i0 + kBr, seqlen_q);
  const T* g_Q = g_Q_all + a.q_offset(b, 0, h);
  const T* g_K = g_K_all + a.kv_offset(b, 0, a.kv_head_of(h));
  const T* g_V = g_V_all + a.kv_offset(b, 0, a.kv_head_of(h));
  T* g_O = g_O_all + a.q_offset(b, 0, h);

  load_rows<kBr, kD>(s_Q, g_Q, a.q_row_stride(), i0, seqlen_q);  // HBM read: Q_i, once

  // Rows this lane holds and their visible key ranges [kb, ke).
  const int wi0 = i0 + warp * frag::kM;
  int kb[frag::kCRows], ke[frag::kCRows];
  #pragma unroll
  for (int s = 0; s < frag::kCRows; ++s) {
    const int i = wi0 + frag::c_slot_row(lane, s);
    kb[s] = static_cast<int>(a.mask.key_begin(i));
    ke[s] = static_cast<int>(a.mask.key_end(i));
  }
  frag::FragC r_O[kNO];
  #pragma unroll
  for (int t = 0; t < kNO; ++t) frag::zero(r_O[t]);
  float m_i[frag::kCRows], l_i[frag::kCRows];
  #pragma unroll
  for (int s = 0; s < frag::kCRows; ++s) m_i[s] = -INFINITY, l_i[s] = 0.f;

  // Only key tiles that some row of the block can see.
  const int kb_blk = static_cast<int>(a.mask.block_key_begin(i0, i1));
  const int ke_blk = static_cast<int>(a.mask.block_key_end(i0, i1));
  for (int j0 = (kb_blk / kBc) * kBc; j0 < ke_blk; j0 += kBc) {
    __syncthreads();  // everyone is done with the previous K_j, V_j
    load_rows<kBc, kD>(s_K, g_K, a.kv_row_stride(), j0, seqlen_k);  // HBM read: K_j
    load_rows<kBc, kD>(s_V, g_V, a.kv_row_stride(), j0, seqlen_k);  // HBM read: V_j
    __syncthreads();

    // S = Q_i K_j^T for this warp's 16 rows: (16, Bc).
    frag::FragC r_S[kNS];
    #pragma unroll
    for (int t = 0; t < kNS; ++t) frag::zero(r_S[t]);
    #pragma unroll
    for (int kk = 0; kk < kD; kk += frag::kK) {
      const frag::FragA q = frag::load_a(s_Q, kD, warp * frag::kM, kk, lane);
      #pragma unroll
      for (int t = 0; t < kNS; ++t) frag::mma<T>(r_S[t], q, frag::load_b_nk(s_K, kD, t * frag::kN, kk, lane));
    }
    // Mask (-inf) keys outside each row's range, including the zero rows past seqlen_k.
    #pragma unroll
    for (int t = 0; t < kNS; ++t)
      #pragma unroll
      for (int e = 0; e < frag::kCElems; ++e) {
        const int col = j0 + t * frag::kN + frag::c_col(lane, e), s = frag::c_row_slot(e);
        if (col < kb[s] || col >= ke[s]) r_S[t].x[e] = -INFINITY;
      }
    // Online softmax (v03's, per fragment row), scores scaled here.
    #pragma unroll
    for (int s = 0; s < frag::kCRows; ++s) {
      float mx = m_i[s];
      #pragma unroll
      for (int t = 0; t < kNS; ++t)
        #pragma unroll
        for (int e = 0; e < frag::kCElems; ++e)
          if (frag::c_row_slot(e) == s) mx = fmaxf(mx, r_S[t].x[e] * a.scale);
      mx = frag::row_allreduce_max(mx);
      const float m_use = mx == -INFINITY ? 0.f : mx;  // all keys so far masked: avoid -inf - -inf
      const float alpha = expf(m_i[s] - m_use);
      float rowsum = 0.f;
      #pragma unroll
      for (int t = 0; t < kNS; ++t)
        #pragma unroll
        for (int e = 0; e < frag::kCElems; ++e)
          if (frag::c_row_slot(e) == s) {
            r_S[t].x[e] = expf(r_S[t].x[e] * a.scale - m_use);
            rowsum += r_S[t].x[e];
          }
      l_i[s] = alpha * l_i[s] + frag::row_allreduce_sum(rowsum);
      m_i[s] = mx;
      #pragma unroll
      for (int t = 0; t < kNO; ++t)
        #pragma unroll
        for (int e = 0; e < frag::kCElems; ++e)
          if (frag::c_row_slot(e) == s) r_O[t].x[e] *= alpha;
    }
    // O_i += P V_j, 16 keys per MMA; P converted from accumulator to A layout.
    #pragma unroll
    for (int g = 0; g < kBc / 16; ++g) {
      const frag::FragA p = frag::p_to_a<T>(*reinterpret_cast<const frag::FragC(*)[frag::kNPer16]>(
                                                &r_S[g * frag::kNPer16]),
                                            s_P + warp * frag::kPScratchElems, lane);
      #pragma unroll
      for (int t = 0; t < kNO; ++t) frag::mma<T>(r_O[t], p, frag::load_b_kn(s_V, kD, g * 16, t * frag::kN, lane));
    }
  }

  // O_i / l_i to HBM; LSE_i = m_i + log(l_i), -inf (and O = 0) for a row that saw no key.
  #pragma unroll
  for (int t = 0; t < kNO; ++t)
    #pragma unroll
    for (int e = 0; e < frag::kCElems; ++e) {
      const int i = wi0 + frag::c_row(lane, e), s = frag::c_row_slot(e);
      if (i < seqlen_q)
        g_O[i * a.q_row_stride() + t * frag::kN + frag::c_col(lane, e)] =
            from_float<T>(l_i[s] > 0.f ? r_O[t].x[e] / l_i[s] : 0.f);  // HBM write: O_i
    }
  if (lane % frag::kRowLanes == 0)
    #pragma unroll
    for (int s = 0; s < frag::kCRows; ++s) {
      const int i = wi0 + frag::c_slot_row(lane, s);
      if (i < seqlen_q) g_LSE[a.lse_offset(b, h, i)] = l_i[s] > 0.f ? m_i[s] + logf(l_i[s]) : -INFINITY;
    }
}

template <int kD>
LaunchStatus launch_d(const AttnView& a, const DeviceTensors& t, DType dt, const Launcher& L) {
  const int64_t q_blocks = (a.seqlen_q + kBr - 1) / kBr;
  if (q_blocks > 65535) return "v04_fa2_mma: seqlen_q must be <= " + std::to_string(65535 * kBr);
  const dim3 grid(static_cast<unsigned>(a.batch * a.heads_q), static_cast<unsigned>(q_blocks));
  const MainKernel main{.br = kBr, .bc = kBc, .stages = 1, .splits = 0, .grid_order = "qblock_major"};
  return dispatch_dtype(dt, [&]<class T>() -> LaunchStatus {
    if constexpr (sizeof(T) != 2) {
      return "v04_fa2_mma: dtype must be fp16 or bf16";
    } else {
      return L.main(main, &fa2_mma_kernel<T, kD>, grid, kThreads, smem_bytes<kD>(), a, static_cast<const T*>(t.q),
                    static_cast<const T*>(t.k), static_cast<const T*>(t.v), static_cast<T*>(t.o), t.lse);
    }
  });
}

}  // namespace

LaunchStatus v04_fa2_mma_supports(const AttnProblem& p, const KernelOptions& opt) {
  if (auto e = p.validate()) return e;
  if (p.dtype == DType::fp32) return "v04_fa2_mma: dtype must be fp16 or bf16 (matrix cores take 16-bit inputs)";
  if (p.head_dim != 64 && p.head_dim != 128) return "v04_fa2_mma: head_dim must be 64 or 128";
  if (opt.br || opt.bc || opt.splits) return "v04_fa2_mma has fixed tiles (Br = Bc = 64) and no split-KV";
  return std::nullopt;
}

std::size_t v04_fa2_mma_workspace_bytes(const AttnProblem&, const KernelOptions&) { return 0; }

namespace {
// The launch path of launch() and config().
LaunchStatus run(const AttnProblem& p, const DeviceTensors& t, const KernelOptions& opt, const Launcher& L) {
  if (auto e = v04_fa2_mma_supports(p, opt)) return e;
  const AttnView a = AttnView::of(p);
  return p.head_dim == 64 ? launch_d<64>(a, t, p.dtype, L) : launch_d<128>(a, t, p.dtype, L);
}
}  // namespace

LaunchStatus v04_fa2_mma_launch(const AttnProblem& p, const DeviceTensors& t, const KernelOptions& opt,
                                void* /*workspace*/, void* stream) {
  return run(p, t, opt, Launcher::enqueue(stream));
}

LaunchStatus v04_fa2_mma_config(const AttnProblem& p, const KernelOptions& opt, LaunchConfig& out) {
  return describe_launch(out, [&](const Launcher& L) { return run(p, {}, opt, L); });
}

}  // namespace ioattn::kernels

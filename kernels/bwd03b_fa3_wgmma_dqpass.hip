// kernels/bwd03b_fa3_wgmma_dqpass.hip: bwd03 with dQ by a separate Q-outer wgmma pass: no atomics,
// deterministic. NVIDIA sm_90a only. Pairs with v06_fa2_wgmma.
//
// What changed against bwd03_fa3_wgmma (as bwd02b against bwd02): dQ_i is no longer accumulated by
// fp32 atomics from every K/V-outer CTA. bwd03's preprocess (D_i) and K/V-outer wgmma kernel run
// with their dQ step off (dK_j, dV_j only; no dS^T tile in shared memory, no second barrier per
// tile), and a second kernel with the forward's loop order (v06's: 2 warpgroups x 64 query rows,
// K_j, V_j streamed through a kStages-deep cp.async ring) owns dQ_i. Per (b, query head h, query
// block of 128 rows), Q_i, dO_i once, then for every key tile j (64 keys) some row of the
// warpgroup can see, warpgroup w (rows 64w..64w+63 of the block) computes
//   S_ij  = Q_w K_j^T    wgmma m64n64k16, A = Q_w (shared, K-major), B = K_j (shared, K-major)
//   dP_ij = dO_w V_j^T   wgmma m64n64k16, A = dO_w, B = V_j, as above (both issued, one wait)
//   P_ij = exp(scale S_ij - LSE_i), dS_ij = P_ij o (dP_ij - D_i)   (LSE_i, D_i in registers)
//   dQ_w += dS_ij K_j    wgmma m64n{d}k16, A = dS (registers, rounded to the dtype once),
//                        B = K_j (shared, MN-major)
// then dQ_i = scale dQ_i, written once in the dtype. Every sum has a fixed order (a warpgroup's
// wgmmas run in program order; no atomics), so dQ, dK and dV are bit-identical across launches.
// The price: S_ij and dP_ij are computed twice (4 products per tile in the K/V pass + 3 here,
// against bwd03's 5) and K_j, V_j are re-read per query block; the gain: no fp32 dQ accumulator
// (4 B Nq Hq d bytes less workspace), no read-modify-write of it per (j, i), and a K/V-outer CTA
// with 16-32 KiB less shared memory and no atomics.
// Masks: key tiles no row of the block can see are never loaded, tiles no row of a warpgroup can
// see are skipped by that warpgroup (wgmma needs all 4 of its warps), only a warp whose rows cross
// a boundary evaluates the mask (MaskSpec::tile_unmasked); fully masked rows and rows past
// seqlen_q are staged with LSE = +inf (bwd_mma.hpp staged_lse_log2), so their dQ row is exactly 0;
// padding keys (zero rows of K_j, V_j past seqlen_k) are masked.
//
// HBM traffic (simulator: `ioattn simulate --pass bwd --strategy fa2 --dq separate`), e = 2 bytes,
// per query head, unmasked, Tr = ceil(Nq / 128), Tc = ceil(Nk / 128):
//   preprocess : dO, O read (2 e Nq d), D written (4 Nq)
//   K/V outer  : as bwd03 without dQ_accum: K_j, V_j read and dK_j, dV_j written once per K/V head
//                (4 e Nk d); per (j, i) Q_i, dO_i (2 e Tc Nq d), LSE_i, D_i (8 Tc Nq)
//   dQ pass    : Q_i, dO_i, LSE_i, D_i once (2 e Nq d + 8 Nq), K_j, V_j per (i, j) (2 e Tr Nk d),
//                dQ written once (e Nq d)
//
// Supports: as bwd03 (fp16, bf16; d in {64, 128}; any Nq, Nk; causal, windows, GQA/MQA; fully
// masked rows: dQ = 0; NVIDIA sm_90a only, probed at run time; refused on AMD).
// Tiles (fixed): the K/V pass as bwd03 (Bc = 128, Br = 128 at d = 64, 64 at d = 128, 2 stages);
// the dQ pass Br = 128 query rows (2 warpgroups x 64), Bc = 64 keys per tile, 2 stages.
// Shared memory: K/V pass 1024 + 2 Bc d e + 2 kStages Br d e + 2 kStages 4 Br bytes: 99 KiB at
// d = 64, 130 KiB at d = 128; dQ pass 1024 + 2 Br d e (Q, dO) + 2 kStages Bc d e (K, V ring)
// bytes: 65 KiB at d = 64, 129 KiB at d = 128.
// Workspace: D only (4 B Hq Nq, padded to 256 bytes).
// Launches: 3 (bwd03's preprocess and K/V-outer kernel, then the dQ pass, grid (B*Hq, Tr), heavy
// query blocks first), one launch path for launch() and config() (run() below); the configuration
// describes the K/V-outer kernel, as bwd03's.
// ptxas (not measured on a GPU; nvcc 13.0, sm_90a, -O3 -Xptxas -v): dQ pass 166 registers per thread
// at d = 64, 225 at d = 128, fp16 = bf16; the K/V-outer kernel without the dQ step d = 64: 253,
// d = 128: 233; 0 bytes of spill, and no wgmma serialization reported.
// Measured: passes the GPU suite and memcheck on the H200 (2026-12-01); its times are in
// kernels/README.md's generated backward tables (the run CANONICAL names as `bwd`).
// Run: build-gpu/verify/kernels/gpu_backward (its determinism check: 100 launches bit-identical), or
//   build-gpu/apps/ioattn run --backward --bwd-kernel bwd03b_fa3_wgmma_dqpass --seqlen 4096 --heads 16 --head-dim 128 --dtype bf16 --check
#include <cmath>
#include <cstdint>
#include <string>

#include "kernels/bwd_wgmma.hpp"

namespace ioattn::kernels {

#if defined(IOATTN_PLATFORM_NVIDIA)
namespace {

using namespace wgmma_bwd;

template <int kD_, int kStages_>
struct DqTile {
  static constexpr int kD = kD_;
  static constexpr int kStages = kStages_;
  static constexpr int kWG = 2;
  static constexpr int kThreads = 128 * kWG;
  static constexpr int kBr = 64 * kWG;  // 128 query rows per CTA, 64 per warpgroup
  static constexpr int kBc = 64;        // keys per tile
  static constexpr int kQBytes = kBr * kD_ * 2;   // Q_i (and dO_i)
  static constexpr int kKVBytes = kBc * kD_ * 2;  // one ring slot of K_j (and of V_j)
  static constexpr int kSmemBytes = 1024 /* alignment slack */ + 2 * kQBytes + 2 * kStages_ * kKVBytes;
  static_assert(kD_ == 64 || kD_ == 128, "wgmma N of dQ += dS K is d: 64 or 128 here");
  static_assert(kStages_ >= 2, "the K/V pipeline needs at least two ring slots");
  static_assert(kSmemBytes <= kMaxSharedBytes, "the dQ pass CTA exceeds the shared memory of a block");
};
// The shared memory the header states.
static_assert(DqTile<64, 2>::kSmemBytes == 65 * 1024 && DqTile<128, 2>::kSmemBytes == 129 * 1024);
static_assert(KvTile<64, 2, false>::kSmemBytes == 99 * 1024 && KvTile<128, 2, false>::kSmemBytes == 130 * 1024);

// The dQ pass. blockIdx.x = b * Hq + h, blockIdx.y = Tr - 1 - query block (heavy, late query
// blocks of a causal mask first). Warpgroup wg owns rows [64 wg, 64 wg + 64) of the block, warp wq
// of it rows 16 wq.. of those; accumulators as in bwd03 (rows = this warp's queries).
template <class T, class Tl>
__global__ void __launch_bounds__(Tl::kThreads, 1)
dq_pass_wgmma_kernel(AttnView a, const T* __restrict__ g_Q_all, const T* __restrict__ g_K_all,
                     const T* __restrict__ g_V_all, const T* __restrict__ g_dO_all, const float* __restrict__ g_LSE,
                     const float* __restrict__ g_D, T* __restrict__ g_dQ_all) {
#if defined(IOATTN_BWD03_WGMMA)
  constexpr int kD = Tl::kD, kBr = Tl::kBr, kBc = Tl::kBc, kStages = Tl::kStages, kThreads = Tl::kThreads;

  extern __shared__ unsigned char smem_raw[];
  const uint32_t raw_addr = frag::smem_addr(smem_raw);
  uint8_t* s_Q = smem_raw + ((1024 - raw_addr % 1024) % 1024);  // (Br, d) swizzled
  uint8_t* s_dO = s_Q + Tl::kQBytes;                            // (Br, d) swizzled
  uint8_t* s_K = s_dO + Tl::kQBytes;                            // kStages x (Bc, d) swizzled
  uint8_t* s_V = s_K + kStages * Tl::kKVBytes;                  // kStages x (Bc, d) swizzled

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int wg = warp / 4, wq = warp % 4;
  const int64_t b = blockIdx.x / a.heads_q, h = blockIdx.x % a.heads_q, h_kv = a.kv_head_of(h);
  const int64_t i0 = (static_cast<int64_t>(gridDim.y) - 1 - blockIdx.y) * kBr;
  const int64_t i1 = i0 + kBr < a.seqlen_q ? i0 + kBr : a.seqlen_q;
  const int64_t q_stride = a.q_row_stride(), kv_stride = a.kv_row_stride();
  const T* g_K = g_K_all + a.kv_offset(b, 0, h_kv);
  const T* g_V = g_V_all + a.kv_offset(b, 0, h_kv);
  const MaskSpec& mask = a.mask;

  load_swizzled<kBr, kD, kThreads>(s_Q, g_Q_all + a.q_offset(b, 0, h), q_stride, i0, a.seqlen_q,
                                   tid);  // HBM read: Q_i, once
  load_swizzled<kBr, kD, kThreads>(s_dO, g_dO_all + a.q_offset(b, 0, h), q_stride, i0, a.seqlen_q,
                                   tid);  // HBM read: dO_i, once
  frag::async_commit();

  // Key tiles [j_first, j_last) of Bc keys: those some row of the block can see.
  const int64_t kb_blk = mask.block_key_begin(i0, i1), ke_blk = mask.block_key_end(i0, i1);
  const int64_t j_first = kb_blk / kBc;
  const int64_t j_last = ke_blk > kb_blk ? (ke_blk + kBc - 1) / kBc : j_first;
  auto k_stage = [&](int64_t j) { return s_K + static_cast<int>((j - j_first) % kStages) * Tl::kKVBytes; };
  auto v_stage = [&](int64_t j) { return s_V + static_cast<int>((j - j_first) % kStages) * Tl::kKVBytes; };
  // Copy group of tile n: K_n, V_n where it exists; one commit, always.
  auto load_group = [&](int64_t n) {
    if (n < j_last) {
      load_swizzled<kBc, kD, kThreads>(k_stage(n), g_K, kv_stride, n * kBc, a.seqlen_k, tid);  // HBM read: K_j, per (i, j)
      load_swizzled<kBc, kD, kThreads>(v_stage(n), g_V, kv_stride, n * kBc, a.seqlen_k, tid);  // HBM read: V_j, per (i, j)
    }
    frag::async_commit();
  };
#pragma unroll
  for (int st = 0; st < kStages - 1; ++st) load_group(j_first + st);

  // This warpgroup's rows [g_i0, g_i1) and the keys they see; this warp's rows [wi0, wi1); this
  // thread's rows wi0 + lane/4 + 8 s: staged LSE_i, D_i and the visible keys, in registers.
  const int64_t g_i0 = i0 + 64 * wg, g_i1 = g_i0 + 64 < a.seqlen_q ? g_i0 + 64 : a.seqlen_q;
  const int64_t gkb = g_i0 < g_i1 ? mask.key_begin(g_i0) : 0, gke = g_i0 < g_i1 ? mask.key_end(g_i1 - 1) : 0;
  const int64_t wi0 = g_i0 + 16 * wq, wi1 = wi0 + 16 < a.seqlen_q ? wi0 + 16 : a.seqlen_q;
  float lse[2], D[2];
  int64_t key_lo[2], key_hi[2];
#pragma unroll
  for (int s = 0; s < 2; ++s) {
    const int64_t i = wi0 + frag::c_slot_row(lane, s);
    const bool valid = i < a.seqlen_q;
    lse[s] = mma_bwd::staged_lse_log2(valid, valid ? g_LSE[a.lse_offset(b, h, i)] : 0.f);  // HBM read: LSE_i, once
    D[s] = valid ? g_D[a.lse_offset(b, h, i)] : 0.f;                                  // HBM read: D_i, once
    key_lo[s] = valid ? mask.key_begin(i) : 0;
    key_hi[s] = valid ? mask.key_end(i) : 0;
  }
  const uint32_t q_addr = frag::smem_addr(s_Q) + 64 * wg * 128;  // this warpgroup's 64 rows, panel 0
  const uint32_t do_addr = frag::smem_addr(s_dO) + 64 * wg * 128;

  float r_dQ[kD / 2];  // (64 rows, d) per warpgroup, unscaled
  float r_S[kBc / 2], r_dP[kBc / 2];
#pragma unroll
  for (int x = 0; x < kD / 2; ++x) r_dQ[x] = 0.f;
#pragma unroll
  for (int x = 0; x < kBc / 2; ++x) r_S[x] = 0.f, r_dP[x] = 0.f;

  for (int64_t j = j_first; j < j_last; ++j) {
    // Tile j's copy group (the first time also Q_i, dO_i) has landed and is visible to the tensor
    // cores; every thread is done with tile j - 1, so its ring slot takes tile j + kStages - 1.
    frag::async_wait<kStages - 2>();
    wg::fence_proxy_async();
    __syncthreads();
    load_group(j + kStages - 1);
    if (j * kBc >= gke || (j + 1) * kBc <= gkb) continue;  // no row of this warpgroup sees tile j

    const uint32_t k_addr = frag::smem_addr(k_stage(j)), v_addr = frag::smem_addr(v_stage(j));
    // S = Q_w K_j^T and dP = dO_w V_j^T: d/16 k-steps, issued together.
    wg::fence_regs(r_S);
    wg::fence_regs(r_dP);
    wg::fence();
#pragma unroll
    for (int kk = 0; kk < kD / 16; ++kk) {
      const uint32_t q_off = (kk / 4) * (kBr * 128) + (kk % 4) * 32;
      const uint32_t kv_off = (kk / 4) * (kBc * 128) + (kk % 4) * 32;
      wgmma_ss<T, kBc>(r_S, wg::desc(q_addr + q_off, 16, 1024), wg::desc(k_addr + kv_off, 16, 1024), kk > 0);
      wgmma_ss<T, kBc>(r_dP, wg::desc(do_addr + q_off, 16, 1024), wg::desc(v_addr + kv_off, 16, 1024), kk > 0);
    }
    wg::commit();
    wg::wait_all();
    wg::fence_regs(r_S);
    wg::fence_regs(r_dP);

    // P and dS in place: element r[4 t + e] is row wi0 + lane/4 + 8 (e/2), key j Bc + 8 t +
    // 2 (lane%4) + e%2. Only a warp whose rows cross a mask boundary in this tile tests (i, j).
    mma_bwd::with_mask(mask.tile_unmasked(wi0, wi1, j * kBc, (j + 1) * kBc), [&](auto masked) {
#pragma unroll
      for (int t = 0; t < kBc / 8; ++t)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int s = frag::c_row_slot(e);
          const int64_t col = j * kBc + 8 * t + frag::c_col(lane, e);
          const bool visible = !masked || (col >= key_lo[s] && col < key_hi[s]);
          mma_bwd::prob_and_dscore(r_S[4 * t + e], r_dP[4 * t + e], visible, a.scale_log2, lse[s], D[s]);
        }
    });
    uint32_t r_dSa[kBc / 16][4];  // dS as the A operand of dQ += dS K, 16 keys each
    pack_a<T, kBc>(r_dP, r_dSa);

    // dQ_w += dS K_j: Bc/16 MMAs of 16 keys; the g-th 16-key slice of K_j starts 16 rows in.
    wg::fence_regs(r_dQ);
    wg::fence();
#pragma unroll
    for (int g = 0; g < kBc / 16; ++g)
      wgmma_rs<T, kD>(r_dQ, r_dSa[g], wg::desc(k_addr + g * 16 * 128, kBc * 128, 1024), 1);
    wg::commit();
    wg::wait_all();
    wg::fence_regs(r_dQ);
  }
  frag::async_wait<0>();  // Q_i, dO_i landed even when no key tile was loaded

  mma_bwd::store_rows(g_dQ_all + a.q_offset(b, wi0, h), q_stride, static_cast<int>(wi1 - wi0), as_atoms<kD>(r_dQ),
                      a.scale, lane);  // HBM write: dQ_i, once
#else
  (void)a, (void)g_Q_all, (void)g_K_all, (void)g_V_all, (void)g_dO_all, (void)g_LSE, (void)g_D, (void)g_dQ_all;
#endif
}

template <int kD>
LaunchStatus launch_dq_pass(const AttnView& a, const BackwardTensors& t, const Workspace& ws, DType dt,
                            const Launcher& L) {
  using Tl = DqTile<kD, 2>;
  const dim3 grid(static_cast<unsigned>(a.batch * a.heads_q),
                  static_cast<unsigned>((a.seqlen_q + Tl::kBr - 1) / Tl::kBr));
  return dispatch_dtype(dt, [&]<class T>() -> LaunchStatus {
    if constexpr (sizeof(T) != 2) {
      return "bwd03b_fa3_wgmma_dqpass: dtype must be fp16 or bf16";
    } else {
      return L.aux(&dq_pass_wgmma_kernel<T, Tl>, grid, Tl::kThreads, Tl::kSmemBytes, a, static_cast<const T*>(t.q),
                   static_cast<const T*>(t.k), static_cast<const T*>(t.v), static_cast<const T*>(t.d_o), t.lse,
                   static_cast<const float*>(ws.D), static_cast<T*>(t.dq));
    }
  });
}

}  // namespace
#endif  // IOATTN_PLATFORM_NVIDIA

LaunchStatus bwd03b_fa3_wgmma_dqpass_supports(const AttnProblem& p, const BackwardOptions& opt) {
  if (auto e = wgmma_bwd::check_common("bwd03b_fa3_wgmma_dqpass", p, opt)) return e;
  if ((p.seqlen_q + 127) / 128 > 65535)
    return "bwd03b_fa3_wgmma_dqpass: seqlen_q must be <= " + std::to_string(65535 * 128) +
           " (the dQ pass's query blocks go in grid.y, at most 65535)";
  if (p.batch * p.heads_q > 0x7fffffff) return "bwd03b_fa3_wgmma_dqpass: batch*heads_q must be < 2^31";
#if defined(IOATTN_PLATFORM_NVIDIA)
  return wgmma_bwd::wgmma_available("bwd03b_fa3_wgmma_dqpass");
#else
  return std::nullopt;
#endif
}

std::size_t bwd03b_fa3_wgmma_dqpass_workspace_bytes(const AttnProblem& p, const BackwardOptions&) {
  return scalar_bwd::workspace_bytes(p, /*with_dq_accum=*/false);
}

namespace {
// The launch path (written once against a Launcher: kernels/launcher.hpp): the K/V-outer launch
// of bwd03 with its dQ step off (preprocess, dK/dV kernel: the main one), then the dQ pass, which
// reads D, written by the preprocess before it on the same stream.
LaunchStatus run(const AttnProblem& p, const BackwardTensors& t, const BackwardOptions& opt, void* workspace,
                 const Launcher& L) {
  if (auto e = bwd03b_fa3_wgmma_dqpass_supports(p, opt)) return e;
#if defined(IOATTN_PLATFORM_NVIDIA)
  if (!L.describes())
    if (auto e = scalar_bwd::check_pointers("bwd03b_fa3_wgmma_dqpass", t, workspace)) return e;
  const scalar_bwd::Workspace ws =
      workspace ? scalar_bwd::Workspace::carve(workspace, p, false) : scalar_bwd::Workspace{};
  if (auto e = wgmma_bwd::launch_kv_outer(p, t, ws, /*dq_atomic=*/false, L)) return e;
  const AttnView a = AttnView::of(p);
  return p.head_dim == 64 ? launch_dq_pass<64>(a, t, ws, p.dtype, L) : launch_dq_pass<128>(a, t, ws, p.dtype, L);
#else
  (void)t, (void)workspace, (void)L;
  return "bwd03b_fa3_wgmma_dqpass needs NVIDIA Hopper (wgmma)";
#endif
}
}  // namespace

LaunchStatus bwd03b_fa3_wgmma_dqpass_launch(const AttnProblem& p, const BackwardTensors& t,
                                            const BackwardOptions& opt, void* workspace, void* stream) {
  return run(p, t, opt, workspace, Launcher::enqueue(stream));
}

LaunchStatus bwd03b_fa3_wgmma_dqpass_config(const AttnProblem& p, const BackwardOptions& opt, LaunchConfig& out) {
  return describe_launch(out, [&](const Launcher& L) { return run(p, {}, opt, nullptr, L); });
}

}  // namespace ioattn::kernels

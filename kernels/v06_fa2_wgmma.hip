// kernels/v06_fa2_wgmma.hip: FlashAttention-2 on Hopper's warpgroup MMA (wgmma), NVIDIA sm_90a only.
//
// What changed vs v05_fa2_fast: the two products run as wgmma.mma_async, which a *warpgroup* (4
// warps, 128 threads) issues together and which reads its B operand (and for S also A) straight
// from shared memory through 64-bit descriptors instead of through ldmatrix into registers:
//   S  = Q K^T : wgmma m64n{Bc}k16, A = Q (shared, K-major), B = K (shared, K-major)
//   O += P V   : wgmma m64n{d}k16,  A = P (registers, the mma.sync A layout per warp),
//                B = V (shared, N-major: the instruction transposes, imm-trans-b = 1)
// mma.sync (v05) tops out near FlashAttention-2's rate on Hopper (the legacy tensor-core path and
// the ldmatrix traffic per MMA); wgmma is the path to the H200's matrix rate (671-790 TFLOP/s
// measured for GEMM; cuDNN's attention reaches ~600).
// Because wgmma is asynchronous, a warpgroup can also overlap its own work (FlashAttention-3's
// intra-warpgroup pipelining, kOverlap): step j issues S_j = Q K_j^T and then O += P_{j-1} V_{j-1},
// waits for S_j only, and runs the softmax of S_j on the FP32/SFU units while the tensor cores
// still work on P V. ptxas keeps the two in flight only if nothing in between touches their
// registers or branches; otherwise it silently serializes every wgmma (see the loop below).
// Shared tiles use the 128-byte swizzle wgmma understands: a tile of R rows x d columns is stored
// as d/64 panels of R rows x 128 bytes; in row r the 16-byte chunk c sits at chunk c ^ (r % 8),
// so 8 consecutive rows of one chunk hit 8 different bank groups. cp.async writes that layout
// directly. Each warp still owns 16 query rows; the online softmax (lazy rescaling), the masks,
// the pipeline and the tile skipping are v05's.
//
// Tiling: a block is kWG warpgroups, each owning 64 query rows (Br = 64 kWG); Bc keys per tile;
// kStages-deep cp.async pipeline. Per thread: O d/2 + S Bc/2 fp32 registers + P Bc/4.
// Defaults: d = 128: Br 128, Bc 128, 3 stages (255 registers and 40 bytes of spills per thread,
// ptxas -v; still the fastest d = 128 configuration measured); d = 64: Br 128, Bc 64, 2 stages
// (128 registers: 2 blocks per SM).
//
// HBM traffic (simulator strategy `fa2`): as v05, with Br = 128.
//
// Measured on the H200 (experiments/results/h200/2026-11-29_4f8a955, SDPA in the same run; TFLOP/s
// bf16, FA2 convention, N = 1k / 4k / 16k, batch x N = 16384, hidden 2048):
//   d 128 non-causal 321 / 407 / 431 (SDPA flash 302 / 333 / 351, cuDNN 475 / 636 / 656)
//   d 128 causal     229 / 339 / 419 (flash 222 / 286 / 317)
//   d  64 non-causal 304 / 346 / 372 (flash 269 / 295 / 303), causal 226 / 324 / 379 (197 / 245 / 285)
// That is 1.04-1.44x FlashAttention-2 at every N >= 1k (both dtypes) and 0.62-0.89x cuDNN. On the
// same tiles the overlap alone is worth a median +2% (d 128) and +4% (d 64), -6% to +12% per
// point; Bc = 128 with 3 stages gave d = 128 more (+9% at 1k, +14% at 16k over Bc 64, 2 stages)
// (kernels/dev/NOTES.md, runs 5-9). Not done: a TMA producer warpgroup with
// setmaxnreg, ping-pong between consumer warpgroups, a persistent grid (short N runs one block per
// SM with nothing to hide its prologue).
// Run: ioattn run --kernel v06_fa2_wgmma --seqlen 4096 --heads 16 --head-dim 128 --dtype bf16 --check
//
// Supports: fp16, bf16; d in {64, 128}; any Nq, Nk; causal (bottom-right), windows, GQA/MQA; LSE
// out; fully masked rows give O = 0, LSE = -inf. Needs sm_90a device code (-DIOATTN_CUDA_ARCH=90a,
// or nvcc -gencode=arch=compute_90a,code=sm_90a, which kernels/CMakeLists.txt adds for this file);
// supports() asks the device once (a one-thread probe kernel) and refuses with that message
// otherwise. AMD: refused (no wgmma; v05 is the AMD path).
#include <cmath>
#include <cstdint>
#include <iterator>
#include <string>
#include <type_traits>
#include <utility>

#include "kernels/attn_view.hpp"
#include "kernels/launcher.hpp"
#include "kernels/platform/fragment.hpp"
#include "kernels/platform/platform.hpp"
#include "kernels/platform/wgmma.hpp"

// The wgmma instructions exist only in the sm_90a device pass; elsewhere the kernel body is empty
// and a one-thread probe tells the launcher so at run time.
#if defined(IOATTN_PLATFORM_NVIDIA) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define IOATTN_V06_WGMMA 1
#endif

namespace ioattn::kernels {
namespace {

#if defined(IOATTN_PLATFORM_NVIDIA)

// Byte offset of 16-byte chunk c8 (along d) of row r in a 128B-swizzled tile of kRows rows.
template <int kRows>
__device__ inline uint32_t swizzled(int r, int c8) {
  return static_cast<uint32_t>((c8 / 8) * (kRows * 128) + r * 128 + (((c8 % 8) ^ (r % 8)) * 16));
}

template <int kD_, int kWG_, int kBc_, int kStages_, int kMinBlocks_ = 1, bool kOverlap_ = false>
struct V06Tile {
  static constexpr int kD = kD_;
  static constexpr int kWG = kWG_;
  static constexpr int kBr = 64 * kWG_;
  static constexpr int kBc = kBc_;
  static constexpr int kStages = kStages_;
  static constexpr int kMinBlocks = kMinBlocks_;  // blocks per SM the register budget must allow
  // kOverlap: O += P_{j-1} V_{j-1} runs on the tensor cores while the softmax of S_j runs on the
  // other units, so V_j is consumed one step after K_j: V lags K by kVLag tiles in the ring.
  static constexpr bool kOverlap = kOverlap_;
  static constexpr int kVLag = kOverlap_ ? 1 : 0;
  static constexpr int kThreads = 128 * kWG_;
  static constexpr int kQBytes = kBr * kD_ * 2;
  static constexpr int kKVBytes = kBc_ * kD_ * 2;
  static constexpr int kSmemBytes = 1024 /* alignment slack */ + kQBytes + 2 * kStages_ * kKVBytes;
  static_assert(kD_ == 64 || kD_ == 128, "wgmma N for P V is d: 64 or 128 here");
  static_assert(kBc_ == 64 || kBc_ == 128, "wgmma N for Q K^T is Bc: 64 or 128 here");
  static_assert(kStages_ >= 2, "the pipeline needs at least two stages");
  static_assert(kSmemBytes <= kMaxSharedBytes, "tiles exceed the platform's shared memory (LDS) per block");
};

// Rows [r0, r0 + kRows) of a strided global tile into a swizzled shared tile; zero-fill past rows_end.
template <class Tl, int kRows, class T>
__device__ inline void load_swizzled(uint8_t* s, const T* g, int64_t row_stride, int r0, int rows_end, int tid) {
  constexpr int kChunks = Tl::kD / 8, kTotal = kRows * kChunks;
#pragma unroll
  for (int it = 0; it < (kTotal + Tl::kThreads - 1) / Tl::kThreads; ++it) {
    const int c = tid + it * Tl::kThreads;
    if (kTotal % Tl::kThreads != 0 && c >= kTotal) break;
    const int r = c / kChunks, c8 = c % kChunks;
    const bool valid = r0 + r < rows_end;
    frag::async_copy_16(s + swizzled<kRows>(r, c8), g + (valid ? r0 + r : 0) * row_stride + c8 * 8, valid);  // HBM read
  }
}

#if defined(IOATTN_V06_WGMMA)
// S = Q K^T for one tile, issued (the caller commits and waits): d/16 MMAs of
// k = 16; the kk-th 16-column slice of a swizzled row starts 32 kk bytes into its 64-column panel.
template <class T, class Tl>
__device__ __forceinline__ void issue_qk(float (&r_S)[Tl::kBc / 2], uint32_t q_addr, uint32_t k_addr) {
  wg::fence_regs(r_S);
  wg::fence();
#pragma unroll
  for (int kk = 0; kk < Tl::kD / 16; ++kk) {
    const uint64_t dq = wg::desc(q_addr + (kk / 4) * (Tl::kBr * 128) + (kk % 4) * 32, 16, 1024);
    const uint64_t dk = wg::desc(k_addr + (kk / 4) * (Tl::kBc * 128) + (kk % 4) * 32, 16, 1024);
    if constexpr (Tl::kBc == 64) wg::wgmma_ss_n64<T>(r_S, dq, dk, kk > 0);
    else wg::wgmma_ss_n128<T>(r_S, dq, dk, kk > 0);
  }
}

// O += P V for one tile, issued (the caller commits and waits): Bc/16 MMAs of k = 16 keys; the
// g-th 16-key slice of V starts 16 rows x 128 bytes in. r_P must stay untouched until it completes.
template <class T, class Tl>
__device__ __forceinline__ void issue_pv(float (&r_O)[Tl::kD / 2], const uint32_t (&r_P)[Tl::kBc / 16][4],
                                         uint32_t v_addr, uint32_t v_lbo, uint32_t v_sbo) {
  wg::fence_regs(r_O);
  wg::fence();
#pragma unroll
  for (int g = 0; g < Tl::kBc / 16; ++g) {
    const uint64_t dv = wg::desc(v_addr + g * 16 * 128, v_lbo, v_sbo);
    if constexpr (Tl::kD == 64) wg::wgmma_rs_n64<T>(r_O, r_P[g], dv, 1);
    else wg::wgmma_rs_n128<T>(r_O, r_P[g], dv, 1);
  }
}

// Boundary tiles: -inf outside each row's visible keys [key_lo[s], key_hi[s]) (this thread's
// rows lane/4 + 8s of its warp). Atom t holds r_S[4t .. 4t+3], columns j0 + 8t + c_col. Selects,
// no branch, so it may run while a wgmma is in flight.
template <int kBc>
__device__ __forceinline__ void mask_tile(float (&r_S)[kBc / 2], const int (&key_lo)[2], const int (&key_hi)[2],
                                          int j0, int lane) {
#pragma unroll
  for (int t = 0; t < kBc / 8; ++t)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int s = e / 2, col = j0 + 8 * t + frag::c_col(lane, e);
      r_S[4 * t + e] = col >= key_lo[s] && col < key_hi[s] ? r_S[4 * t + e] : -INFINITY;
    }
}

// Online softmax of one S tile with lazy rescaling (v05): the running max m_i moves only when a
// row max grows by more than 2^kLazyLog2, so P <= 2^8 (safe in fp16/bf16). Overwrites S with
// P = exp2(S scale log2 e - m) in place (fp32), updates m_i and l_i and returns whether this warp
// must multiply its O rows by alpha (warp-uniform).
template <int kBc>
__device__ __forceinline__ bool softmax_tile(float (&r_S)[kBc / 2], float (&m_i)[2], float (&l_i)[2],
                                             float (&alpha)[2], float sl2) {
  constexpr int kLazyLog2 = 8;
  float m_tile[2] = {-INFINITY, -INFINITY};
#pragma unroll
  for (int x = 0; x < kBc / 2; ++x) m_tile[(x % 4) / 2] = fmaxf(m_tile[(x % 4) / 2], r_S[x]);
  bool grow[2], any_grow = false;
#pragma unroll
  for (int s = 0; s < 2; ++s) {
    m_tile[s] = frag::row_allreduce_max(m_tile[s]);
    grow[s] = (m_tile[s] - m_i[s]) * sl2 > kLazyLog2;
    any_grow |= grow[s];
  }
  const bool rescale = frag::warp_any(any_grow);
#pragma unroll
  for (int s = 0; s < 2; ++s) {  // selects, not branches (see mask_tile)
    const bool move = rescale && grow[s];
    const float m_new = move ? m_tile[s] : m_i[s];
    alpha[s] = move ? frag::fast_exp2((m_i[s] - m_new) * sl2) : 1.f;
    m_i[s] = m_new;
    l_i[s] *= alpha[s];
  }
  float m_scaled[2];
#pragma unroll
  for (int s = 0; s < 2; ++s) m_scaled[s] = m_i[s] == -INFINITY ? 0.f : m_i[s] * sl2;
#pragma unroll
  for (int x = 0; x < kBc / 2; ++x) {
    r_S[x] = frag::fast_exp2(fmaf(r_S[x], sl2, -m_scaled[(x % 4) / 2]));
    l_i[(x % 4) / 2] += r_S[x];
  }
  return rescale;
}

// P (fp32, in the S accumulator layout) -> the A fragments of O += P V, 16 keys per MMA: the
// accumulator layout of a 16x16 slice is mma.sync's A layout, so packing pairs is all it takes.
template <class T, int kBc>
__device__ __forceinline__ void pack_p(const float (&r_S)[kBc / 2], uint32_t (&r_P)[kBc / 16][4]) {
#pragma unroll
  for (int x = 0; x < kBc / 2; x += 2) r_P[x / 8][(x % 8) / 2] = frag::pack2<T>(r_S[x], r_S[x + 1]);
}
#endif  // IOATTN_V06_WGMMA

template <class T, class Tl>
__global__ void __launch_bounds__(Tl::kThreads, Tl::kMinBlocks)
    fa2_wgmma_kernel(AttnView a, const T* __restrict__ g_Q_all, const T* __restrict__ g_K_all,
                     const T* __restrict__ g_V_all, T* __restrict__ g_O_all, float* __restrict__ g_LSE,
                     uint32_t v_lbo, uint32_t v_sbo) {
#if defined(IOATTN_V06_WGMMA)
  constexpr int kD = Tl::kD, kBr = Tl::kBr, kBc = Tl::kBc, kStages = Tl::kStages;

  extern __shared__ unsigned char smem_raw[];
  // The swizzle pattern repeats every 8 rows x 128 bytes: tiles start 1024-byte aligned.
  const uint32_t raw_addr = frag::smem_addr(smem_raw);
  uint8_t* s_Q = smem_raw + ((1024 - raw_addr % 1024) % 1024);  // (Br, d) swizzled
  uint8_t* s_K = s_Q + Tl::kQBytes;                             // kStages x (Bc, d) swizzled
  uint8_t* s_V = s_K + kStages * Tl::kKVBytes;                  // kStages x (Bc, d) swizzled

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int wgi = warp / 4;  // warpgroup of this thread: query rows 64 wgi .. 64 wgi + 63 of the block
  const int seqlen_q = static_cast<int>(a.seqlen_q), seqlen_k = static_cast<int>(a.seqlen_k);
  const int64_t b = blockIdx.x / a.heads_q, h = blockIdx.x % a.heads_q;
  const int i0 = static_cast<int>(gridDim.y - 1 - blockIdx.y) * kBr;  // heavy query blocks first
  const int i1 = min(i0 + kBr, seqlen_q);
  const T* g_Q = g_Q_all + a.q_offset(b, 0, h);
  const T* g_K = g_K_all + a.kv_offset(b, 0, a.kv_head_of(h));
  const T* g_V = g_V_all + a.kv_offset(b, 0, a.kv_head_of(h));
  T* g_O = g_O_all + a.q_offset(b, 0, h);
  const int64_t q_stride = a.q_row_stride(), kv_stride = a.kv_row_stride();
  const MaskSpec& mask = a.mask;

  const int kb_blk = static_cast<int>(mask.block_key_begin(i0, i1));
  const int ke_blk = static_cast<int>(mask.block_key_end(i0, i1));
  const int j_first = kb_blk / kBc;
  const int j_last = ke_blk > kb_blk ? (ke_blk + kBc - 1) / kBc : j_first;
  auto k_stage = [&](int j) { return s_K + ((j - j_first) % kStages) * Tl::kKVBytes; };
  auto v_stage = [&](int j) { return s_V + ((j - j_first) % kStages) * Tl::kKVBytes; };
  // Copy group n: K_n and V_{n - kVLag}, each where it exists; one commit per group, always.
  auto load_group = [&](int n) {
    if (n < j_last) load_swizzled<Tl, kBc>(k_stage(n), g_K, kv_stride, n * kBc, seqlen_k, tid);  // HBM read: K
    const int m = n - Tl::kVLag;
    if (m >= j_first && m < j_last) load_swizzled<Tl, kBc>(v_stage(m), g_V, kv_stride, m * kBc, seqlen_k, tid);  // HBM read: V
    frag::async_commit();
  };

  load_swizzled<Tl, kBr>(s_Q, g_Q, q_stride, i0, seqlen_q, tid);  // HBM read: Q_i, once
  frag::async_commit();
#pragma unroll
  for (int st = 0; st < kStages - 1; ++st) load_group(j_first + st);

  // Rows of this warpgroup and of this warp. A tile is skipped by a whole warpgroup (wgmma needs
  // all 4 warps) when none of its 64 rows sees any of its keys.
  const int g_i0 = i0 + 64 * wgi, g_i1 = min(g_i0 + 64, seqlen_q);
  const int gkb = g_i0 < g_i1 ? static_cast<int>(mask.key_begin(g_i0)) : 0;
  const int gke = g_i0 < g_i1 ? static_cast<int>(mask.key_end(g_i1 - 1)) : 0;
  auto visible = [&](int j) { return j < j_last && j * kBc < gke && (j + 1) * kBc > gkb; };
  const int wi0 = g_i0 + 16 * (warp % 4), wi1 = min(wi0 + 16, seqlen_q);
  int key_lo[2], key_hi[2];  // visible keys of this thread's rows wi0 + lane/4 + 8s (none past seqlen_q)
#pragma unroll
  for (int s = 0; s < 2; ++s) {
    const int i = wi0 + lane / 4 + 8 * s;
    key_lo[s] = i < seqlen_q ? static_cast<int>(mask.key_begin(i)) : 0;
    key_hi[s] = i < seqlen_q ? static_cast<int>(mask.key_end(i)) : 0;
  }
  const uint32_t q_addr = frag::smem_addr(s_Q) + 64 * wgi * 128;  // this warpgroup's 64 rows, panel 0

  float r_O[kD / 2];  // (64, d) per warpgroup: (16, d) per warp in 16x8 atoms, 4 registers each
  float r_S[kBc / 2];
  uint32_t r_P[kBc / 16][4];  // P as the A operand of O += P V, 16 keys per MMA
#pragma unroll
  for (int x = 0; x < kD / 2; ++x) r_O[x] = 0.f;
#pragma unroll
  for (int x = 0; x < kBc / 2; ++x) r_S[x] = 0.f;
  float m_i[2] = {-INFINITY, -INFINITY}, l_i[2] = {0.f, 0.f};  // rows lane/4 and lane/4 + 8
  const float sl2 = a.scale_log2;
  // Start of step j: copy group j (K_j, V_{j - kVLag}) has landed and is visible to the tensor
  // cores; every warpgroup is done with step j - 1, so its stages take the next loads.
  auto begin_step = [&](int j) {
    frag::async_wait<kStages - 2>();
    wg::fence_proxy_async();  // this thread's cp.async data -> visible to the tensor cores
    __syncthreads();          // ... and everyone's
    load_group(j + kStages - 1);
  };
  auto rescale_o = [&](const float (&alpha)[2]) {
#pragma unroll
    for (int x = 0; x < kD / 2; ++x) r_O[x] *= alpha[(x % 4) / 2];
  };
  float alpha[2];
  // S_j = Q K_j^T with nothing else in flight, waited for, masked where `masked`, and its softmax:
  // P_j (fp32) in r_S; returns whether O must be rescaled by alpha.
  auto s_and_softmax = [&](int j, bool masked) {
    issue_qk<T, Tl>(r_S, q_addr, frag::smem_addr(k_stage(j)));
    wg::commit();
    wg::wait_all();
    wg::fence_regs(r_S);
    if (masked) mask_tile<kBc>(r_S, key_lo, key_hi, j * kBc, lane);
    return softmax_tile<kBc>(r_S, m_i, l_i, alpha, sl2);
  };

  if constexpr (!Tl::kOverlap) {
    // Step j in order: S_j, softmax, O += P_j V_j; each product waited for before the next.
    // A warpgroup skips the tiles none of its 64 rows can see (wgmma needs all 4 of its warps).
    for (int j = j_first; j < j_last; ++j) {
      begin_step(j);
      if (!visible(j)) continue;
      if (s_and_softmax(j, !mask.tile_unmasked(wi0, wi1, j * kBc, (j + 1) * kBc))) rescale_o(alpha);
      pack_p<T, kBc>(r_S, r_P);
      issue_pv<T, Tl>(r_O, r_P, frag::smem_addr(v_stage(j)), v_lbo, v_sbo);
      wg::commit();
      wg::wait_all();
      wg::fence_regs(r_O);
    }
  } else if (j_last > j_first) {
    // FlashAttention-3's intra-warpgroup overlap, software-pipelined by one step: step j issues
    // S_j = Q K_j^T, then O += P_{j-1} V_{j-1}; waits for S_j only (the older group), runs its
    // softmax while P V runs, then waits for P V and rescales O (P_{j-1} was exponentiated against
    // the old max). While a wgmma is in flight nothing touches the registers it reads (r_P) or
    // writes (r_O), and no branch runs: the first S and the last P V are peeled off, and the steps
    // that need the mask are separate loops from those that do not. Otherwise ptxas serializes
    // every wgmma of the kernel (checked in the SASS: one WARPGROUP.DEPBAR per HGMMA). Every
    // warpgroup runs every tile of the block (masked keys give P = 0): causal blocks do a little
    // extra work on the diagonal.
    begin_step(j_first);
    (void)s_and_softmax(j_first, true);  // O is still 0: nothing to rescale
    pack_p<T, kBc>(r_S, r_P);
    auto step = [&](int j, auto masked) {
      begin_step(j);
      issue_qk<T, Tl>(r_S, q_addr, frag::smem_addr(k_stage(j)));
      wg::commit();
      issue_pv<T, Tl>(r_O, r_P, frag::smem_addr(v_stage(j - 1)), v_lbo, v_sbo);
      wg::commit();
      wg::wait<1>();
      wg::fence_regs(r_S);
      if constexpr (decltype(masked)::value) mask_tile<kBc>(r_S, key_lo, key_hi, j * kBc, lane);
      const bool rescale = softmax_tile<kBc>(r_S, m_i, l_i, alpha, sl2);  // P_j stays fp32 in r_S
      wg::wait_all();
      wg::fence_regs(r_O);
      if (rescale) rescale_o(alpha);
      pack_p<T, kBc>(r_S, r_P);  // only now: the P V just waited for read r_P until it completed
    };
    // Tiles [ju0, ju1) are unmasked for every row of the block (key_begin and key_end grow with i).
    const int ju0 = max(j_first + 1, (static_cast<int>(mask.key_begin(i1 - 1)) + kBc - 1) / kBc);
    const int ju1 = max(ju0, min(j_last, static_cast<int>(mask.key_end(i0)) / kBc));
    for (int j = j_first + 1; j < ju0 && j < j_last; ++j) step(j, std::true_type{});
    for (int j = ju0; j < ju1; ++j) step(j, std::false_type{});
    for (int j = max(ju1, j_first + 1); j < j_last; ++j) step(j, std::true_type{});
    begin_step(j_last);  // copy group j_last holds V_{j_last - 1}
    issue_pv<T, Tl>(r_O, r_P, frag::smem_addr(v_stage(j_last - 1)), v_lbo, v_sbo);
    wg::commit();
    wg::wait_all();
    wg::fence_regs(r_O);
  }
  frag::async_wait<0>();

  // Epilogue: O / l straight from the accumulators (4-byte stores), LSE = scale m + log l.
#pragma unroll
  for (int s = 0; s < 2; ++s) l_i[s] = frag::row_allreduce_sum(l_i[s]);
#pragma unroll
  for (int s = 0; s < 2; ++s) {
    const int i = wi0 + lane / 4 + 8 * s;
    if (i >= seqlen_q) continue;
    const float inv_l = l_i[s] > 0.f ? 1.f / l_i[s] : 0.f;
#pragma unroll
    for (int t = 0; t < kD / 8; ++t)  // HBM write: O_i, once
      *reinterpret_cast<uint32_t*>(g_O + i * q_stride + 8 * t + 2 * (lane % 4)) =
          frag::pack2<T>(r_O[4 * t + 2 * s] * inv_l, r_O[4 * t + 2 * s + 1] * inv_l);
    if (lane % 4 == 0) g_LSE[a.lse_offset(b, h, i)] = l_i[s] > 0.f ? m_i[s] * a.scale + logf(l_i[s]) : -INFINITY;
  }
#else
  (void)a, (void)g_Q_all, (void)g_K_all, (void)g_V_all, (void)g_O_all, (void)g_LSE, (void)v_lbo, (void)v_sbo;
#endif
}

// Writes 1 when this binary's device code has wgmma (an sm_90a build), else 0.
__global__ void wgmma_probe_kernel(int* out) {
#if defined(IOATTN_V06_WGMMA)
  *out = 1;
#else
  *out = 0;
#endif
}

// V's descriptor for the N-major B operand (PTX ISA, "Leading/Stride Dimension Byte Offset", whose
// "rows" of an N-major matrix run along N): LBO = from one 64-column (128-byte) panel of d to the
// next = Bc x 128 bytes; SBO = from one 8-key group to the next = 1024 bytes. kernels/dev can swap
// the two to check the reading (g_v_desc_swapped = 1); the swapped pair reads outside the tile.
int g_v_desc_swapped = 0;

struct Config {
  int d, br, bc;
  const char* name;
  LaunchStatus (*launch)(const AttnView&, const DeviceTensors&, DType, const Launcher&);
};

template <class Tl>
LaunchStatus launch_tile(const AttnView& a, const DeviceTensors& t, DType dt, const Launcher& L) {
  const int64_t q_blocks = (a.seqlen_q + Tl::kBr - 1) / Tl::kBr;
  if (q_blocks > 65535) return "v06_fa2_wgmma: seqlen_q must be <= " + std::to_string(65535 * Tl::kBr);
  const dim3 grid(static_cast<unsigned>(a.batch * a.heads_q), static_cast<unsigned>(q_blocks));
  uint32_t lbo = Tl::kBc * 128, sbo = 1024;
  if (g_v_desc_swapped == 1) std::swap(lbo, sbo);
  // The kernel reverses blockIdx.y (heavy query blocks first).
  const MainKernel main{.br = Tl::kBr, .bc = Tl::kBc, .stages = Tl::kStages, .splits = 0,
                        .grid_order = "qblock_major_rev"};
  return dispatch_dtype(dt, [&]<class T>() -> LaunchStatus {
    if constexpr (sizeof(T) != 2) {
      return "v06_fa2_wgmma: dtype must be fp16 or bf16";
    } else {
      return L.main(main, &fa2_wgmma_kernel<T, Tl>, grid, Tl::kThreads, Tl::kSmemBytes, a,
                    static_cast<const T*>(t.q), static_cast<const T*>(t.k), static_cast<const T*>(t.v),
                    static_cast<T*>(t.o), t.lse, lbo, sbo);
    }
  });
}

#define V06_CONFIG(d, wgs, bc, st, mb, ov)                                                      \
  Config{d, 64 * (wgs), bc, "d" #d "_wg" #wgs "_bc" #bc "_s" #st "_mb" #mb "_ov" #ov, \
         &launch_tile<V06Tile<d, wgs, bc, st, mb, ov != 0>>}
// The first configuration listed for a head dim is the default; --br/--bc pick the first one with
// that tile. The kOverlap = 0 rows are reachable only through kernels/dev's tuning hooks (they
// measure what the overlap buys). Only configurations checked on the H200 are listed
// (kernels/dev/NOTES.md); V06Tile takes others for tuning with kernels/dev.
const Config kConfigs[] = {
    V06_CONFIG(128, 2, 128, 3, 1, 1),
    V06_CONFIG(128, 2, 64, 3, 1, 1),
    V06_CONFIG(128, 2, 128, 3, 1, 0),
    V06_CONFIG(128, 2, 64, 2, 1, 0),
    V06_CONFIG(64, 2, 64, 2, 1, 1),
    V06_CONFIG(64, 2, 128, 2, 1, 1),
    V06_CONFIG(64, 2, 64, 2, 1, 0),
};
#undef V06_CONFIG

const Config* find_config(int64_t d, int br, int bc) {
  for (const Config& c : kConfigs)
    if (c.d == d && (br == 0 || br == c.br) && (bc == 0 || bc == c.bc)) return &c;
  return nullptr;
}

// Whether the device code of this build has wgmma: asked once, on the first launch.
LaunchStatus wgmma_available() {
  static int cached = -1;
  if (cached < 0) {
    int* d_flag = nullptr;
    IOATTN_CHECK(hipMalloc(&d_flag, sizeof(int)));
    IOATTN_CHECK(hipMemset(d_flag, 0, sizeof(int)));
    wgmma_probe_kernel<<<1, 1>>>(d_flag);
    IOATTN_CHECK_LAUNCH();
    int h_flag = 0;
    IOATTN_CHECK(hipMemcpy(&h_flag, d_flag, sizeof(int), hipMemcpyDeviceToHost));
    IOATTN_CHECK(hipFree(d_flag));
    cached = h_flag;
  }
  if (cached == 0)
    return "v06_fa2_wgmma: this build has no sm_90a device code (configure with -DIOATTN_CUDA_ARCH=90a)";
  return std::nullopt;
}
#endif  // IOATTN_PLATFORM_NVIDIA

}  // namespace

LaunchStatus v06_fa2_wgmma_supports(const AttnProblem& p, const KernelOptions& opt) {
  if (auto e = p.validate()) return e;
#if defined(IOATTN_PLATFORM_NVIDIA)
  if (auto e = wgmma_available()) return e;  // an sm_90a build on a device that loads its code
  if (p.dtype == DType::fp32) return "v06_fa2_wgmma: dtype must be fp16 or bf16 (matrix cores take 16-bit inputs)";
  if (p.head_dim != 64 && p.head_dim != 128) return "v06_fa2_wgmma: head_dim must be 64 or 128";
  if (opt.splits) return "v06_fa2_wgmma takes no split-KV (--splits)";
  if (!find_config(p.head_dim, opt.br, opt.bc)) {
    std::string have;
    for (const Config& c : kConfigs) {
      const std::string tile = std::to_string(c.br) + "x" + std::to_string(c.bc);
      if (c.d == p.head_dim && have.find(tile) == std::string::npos) have += (have.empty() ? "" : ", ") + tile;
    }
    return "v06_fa2_wgmma: for head_dim " + std::to_string(p.head_dim) + " (--br x --bc) must be one of " + have;
  }
  return std::nullopt;
#else
  (void)opt;
  return "v06_fa2_wgmma needs NVIDIA Hopper (wgmma); on AMD use v05_fa2_fast";
#endif
}

std::size_t v06_fa2_wgmma_workspace_bytes(const AttnProblem&, const KernelOptions&) { return 0; }

namespace {
// The launch path of launch() and config().
LaunchStatus run(const AttnProblem& p, const DeviceTensors& t, const KernelOptions& opt, const Launcher& L) {
  if (auto e = v06_fa2_wgmma_supports(p, opt)) return e;
#if defined(IOATTN_PLATFORM_NVIDIA)
  if (auto e = wgmma_available()) return e;
  return find_config(p.head_dim, opt.br, opt.bc)->launch(AttnView::of(p), t, p.dtype, L);
#else
  (void)t, (void)L;
  return "v06_fa2_wgmma needs NVIDIA Hopper (wgmma)";
#endif
}
}  // namespace

LaunchStatus v06_fa2_wgmma_launch(const AttnProblem& p, const DeviceTensors& t, const KernelOptions& opt,
                                  void* /*workspace*/, void* stream) {
  return run(p, t, opt, Launcher::enqueue(stream));
}

LaunchStatus v06_fa2_wgmma_config(const AttnProblem& p, const KernelOptions& opt, LaunchConfig& out) {
  return describe_launch(out, [&](const Launcher& L) { return run(p, {}, opt, L); });
}

#if defined(IOATTN_PLATFORM_NVIDIA)
// Tuning hooks for kernels/dev (not in the registry).
const char* v06_fa2_wgmma_config_name(int index) {
  return index >= 0 && index < static_cast<int>(std::size(kConfigs)) ? kConfigs[index].name : nullptr;
}
LaunchStatus v06_fa2_wgmma_launch_config(int index, const AttnProblem& p, const DeviceTensors& t, void* stream) {
  if (auto e = v06_fa2_wgmma_supports(p, {})) return e;
  if (auto e = wgmma_available()) return e;
  if (index < 0 || index >= static_cast<int>(std::size(kConfigs))) return "v06_fa2_wgmma: no configuration " + std::to_string(index);
  const Config& c = kConfigs[index];
  if (c.d != p.head_dim) return std::string("config ") + c.name + " is for another head_dim";
  return c.launch(AttnView::of(p), t, p.dtype, Launcher::enqueue(stream));
}
void v06_fa2_wgmma_set_v_desc(int swapped) { g_v_desc_swapped = swapped ? 1 : 0; }
#endif

}  // namespace ioattn::kernels

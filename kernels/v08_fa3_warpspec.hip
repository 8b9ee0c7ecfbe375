// kernels/v08_fa3_warpspec.hip: FlashAttention-3's warp-specialized forward on Hopper (TMA producer,
// two or three wgmma consumer warpgroups in ping-pong), NVIDIA sm_90a only.
//
// What changed vs v06_fa2_wgmma: in v06 every thread both loads (cp.async) and computes, and a
// __syncthreads per K/V tile keeps the two warpgroups in lock step. Here the block is split by role:
//   warpgroup 0, the producer: one thread issues every load as TMA (cp.async.bulk.tensor, 4-D
//     tensor maps over (d, head, seq, batch) built on the host with cuTensorMapEncodeTiled through
//     the runtime's driver entry point, 128-byte swizzle, boxes of 64 columns x rows; rows past
//     seqlen and columns past d are zero-filled by the TMA unit): Q once, then K_j and V_j into two
//     rings of kStages shared buffers. Each buffer has a "full" mbarrier (the TMA's bytes,
//     expect_tx) and an "empty" mbarrier (one arrival per consumer warp once its wgmma has read
//     the buffer). setmaxnreg.dec gives its registers away (24 per thread).
//   warpgroups 1 .. kC, the consumers (kC = Br / 64: 2 at Br 128, 3 at Br 192): 64 query rows each,
//     setmaxnreg.inc to 240 (kC 2) or 160 (kC 3); wgmma S = Q K^T and O += P V with the online
//     softmax, v06's intra-warpgroup overlap (step j issues S_j and O += P_{j-1} V_{j-1}, runs the
//     softmax of S_j while P V is on the tensor cores); K_j's buffer is released as soon as S_j
//     has completed, V_j's after P_j V_j.
//   ping-pong (kPingPong): named barriers (ids 1 .. kC) order the consumers' issue slots round
//     robin: a consumer waits on its own barrier before issuing its GEMMs and arrives on the next
//     one's right after, so the others issue while one runs its softmax; the tensor cores see the
//     warpgroups' GEMMs back to back. The last consumer arrives once up front (consumer 0 goes
//     first) and consumer 0 waits once after its loop (the barrier counts balance at exit).
// The boundary mask, the softmax (lazy rescaling) and the P packing are v06's functions
// (kernels/fwd_wgmma_common.hpp); the two products are issued by issue_qk_ws / issue_pv_ws below
// (fwd_wg::issue_qk / issue_pv generalized to S and O as wgmma N = 128 + 64 chunks: Bc 192, d 192);
// the tile skipping and the masked/unmasked loop split are v06's overlap path.
// Hang guard: every mbarrier wait is a bounded try_wait loop (2^22 polls, each sleeping at most
// 1 us: a few seconds); a thread whose wait gave up stops waiting and traps at its end, so a
// protocol bug fails the launch instead of hanging the device. Named barriers (ping-pong) cannot be
// bounded; their counts balance by construction (see the consumer loop). A trap leaves the CUDA
// context unusable for the rest of the process: IOATTN_V08_DISABLE=1 in the environment makes
// supports() refuse every problem, so a suite run of all variants can leave v08 out.
//
// Head dims: any d <= 256 that is a multiple of 8 (TMA's global row stride must be a 16-byte
// multiple). d runs in the smallest class >= d of 64, 96, 128, 192, 256 (head_dim_class): Q K^T is
// class / 16 MMAs deep, the shared tiles and O are kDp = the class rounded up to 64-column panels
// wide (96 -> 128: d 96's O += P V runs N = 128, a quarter of it on zero columns). The TMA boxes
// stay 64 columns wide; the columns past the tensor's d arrive as zeros, so they add nothing to S
// and give O columns of zeros, which the epilogue does not store (it writes the 8-column atoms
// below d only). The softmax scale is the problem's (1/sqrt(d) of the real d by default).
//
// Tiling: Br = 64 kC, Bc keys per tile, kStages buffers per ring; 128 (1 + kC) threads, one block per
// SM. Shared memory: Q (Br, kDp) + 2 kStages (Bc, kDp) + barriers. Per consumer thread: O kDp/2 + S
// Bc/2 fp32 registers + P Bc/4. kConfigs below lists every configuration; the default per class
// (the first row): d 64: Br 192, Bc 128, 2 stages (91,208 bytes; FA3's d-64 tile: three consumers
// of 160 registers, O + S + P = 128 of them); d 96: Br 128, Bc 128, 2 stages (164,936 bytes); d 128:
// Br 128, Bc 128, 2 stages (164,936); d 192: Br 128, Bc 64, 2 stages (148,552; Bc 128 exceeds shared
// memory); d 256: Br 128, Bc 64, 2 stages (197,704).
// Registers (ptxas -v, CUDA 13.0, fp16 and bf16, every row of kConfigs): 168 per thread at launch for
// the 384-thread blocks (Br 128; 24 / 240 after setmaxnreg) and 128 for the 512-thread blocks (Br
// 192; 24 / 160 after setmaxnreg); 0 bytes of spills, no wgmma serialization warning. Tried and
// dropped: d 128 with Bc 192 (O + S + P = 208 of 240: 20 bytes of spill stores, 64 of loads).
//
// HBM traffic (simulator strategy `fa2`): as v06, Q, O once, K and V once per query block of
// Br rows: 2e·B·Hq·Nq·d (Q, O) + 2e·B·Hq·Tr·Nk·d (K, V), Tr = ceil(Nq / Br) (fewer under a causal
// mask or window: skipped tiles are not loaded); LSE 4·B·Hq·Nq. Padded columns are not read from
// HBM (the TMA unit fills them).
//
// Measured: the d 64/128/256 configurations of session 5 (Br 128) pass the GPU suite, memcheck and
// racecheck on the H200 (experiments/results/h200/2026-12-01_f13273b_newkernels); their speed against
// v06, SDPA and the Triton peer is README.md's fast_headline (CANONICAL role `fast`). The Br 192
// configurations, Bc 192, d 96/192 and the padded head dims (session 6, binaries eeb7765) pass the
// GPU suite (named cases at d 40/96/136/192/200, every d 64/96/128 tile) and memcheck
// (experiments/results/h200/2026-12-01_eeb7765_verify), racecheck of Br 192 d 64, d 96, d 192 and
// padded d 40 is clean (2026-12-01_eeb7765_racecheck_new); the tile sweep kernels/dev/v08_tiles.sh
// (IOATTN_V08_CONFIG selects a row by name) picked d 64's Br 192 x Bc 128 (eeb7765_verify/
// v08_tiles.csv); its benchmark is 2026-12-01_eeb7765_fwd_d64 (first in role `fast`).
// Not done: a persistent grid with a tile scheduler, a TMA store of O, P through shared memory (what
// lets FA3 take Bc 192 at d 64 beside 160 registers), varlen/paged layouts (refused by the registry).
// Run: ioattn run --kernel v08_fa3_warpspec --seqlen 4096 --heads 16 --head-dim 128 --dtype bf16 --check
//
// Supports: fp16, bf16; d a multiple of 8, <= 256; any Nq, Nk; causal (bottom-right), windows,
// GQA/MQA; LSE out; fully masked rows give O = 0, LSE = -inf. Needs sm_90a device code
// (kernels/CMakeLists.txt adds -gencode=arch=compute_90a,code=sm_90a for this file); supports() asks
// the device once (a one-thread probe kernel) and refuses with that message otherwise. Tensors must
// be 16-byte aligned (TMA); cuTensorMapEncodeTiled's refusal is returned as one line. AMD: refused
// (no wgmma, no TMA; v05 is the AMD path).
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "kernels/attn_view.hpp"
#include "kernels/fwd_wgmma_common.hpp"
#include "kernels/launcher.hpp"
#include "kernels/platform/fragment.hpp"
#include "kernels/platform/platform.hpp"
#include "kernels/platform/wgmma.hpp"

#if defined(IOATTN_PLATFORM_NVIDIA)
#include <cuda.h>          // CUtensorMap and its enums
#include <cudaTypedefs.h>  // the encoder's type; the function comes through cudaGetDriverEntryPointByVersion
#endif

// TMA, mbarrier transactions, setmaxnreg and wgmma exist only in the sm_90a device pass.
#if defined(IOATTN_PLATFORM_NVIDIA) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define IOATTN_V08_WS 1
#endif

namespace ioattn::kernels {
namespace {

#if defined(IOATTN_PLATFORM_NVIDIA)

// Head-dim classes: a problem's d runs in the smallest class >= d (64, 96, 128, 192, 256); the
// class is the depth of Q K^T (kD / 16 MMAs of k = 16), the shared tiles and O are kDp = kD rounded
// up to a 64-column panel wide (96 -> 128). Columns past the real d are zeros: the TMA unit fills
// box columns past the tensor's d with zeros, so they add nothing to S and make O's extra columns 0
// (never stored).
constexpr int head_dim_class(int64_t d) { return d <= 64 ? 64 : d <= 96 ? 96 : d <= 128 ? 128 : d <= 192 ? 192 : 256; }

template <int kD_, int kBr_, int kBc_, int kStages_, bool kPingPong_>
struct V08Tile {
  static constexpr int kD = kD_;                  // Q K^T depth (the head-dim class)
  static constexpr int kDp = (kD_ + 63) / 64 * 64;  // shared tile / O width: whole 64-column panels
  static constexpr int kBr = kBr_;                // kConsumers consumer warpgroups of 64 rows
  static constexpr int kConsumers = kBr_ / 64;
  static constexpr int kBc = kBc_;
  static constexpr int kStages = kStages_;
  static constexpr bool kPingPong = kPingPong_;
  static constexpr int kThreads = 128 * (1 + kConsumers);  // producer warpgroup + consumers
  // Registers at launch (__launch_bounds__(kThreads, 1)): 65536 / kThreads rounded down to 8
  // (384 threads: 168, 512: 128); setmaxnreg moves them from the producer to the consumers.
  static constexpr int kLaunchRegs = 65536 / kThreads / 8 * 8;
  static constexpr int kProducerRegs = 24, kConsumerRegs = kConsumers == 2 ? 240 : 160;
  static constexpr int kQBytes = kBr_ * kDp * 2;
  static constexpr int kKVBytes = kBc_ * kDp * 2;
  static constexpr int kBarriers = 1 + 4 * kStages_;  // Q full; K full/empty, V full/empty per stage
  static constexpr int kSmemBytes = 1024 /* alignment slack */ + kQBytes + 2 * kStages_ * kKVBytes + 8 * kBarriers;
  static_assert(kD_ == 64 || kD_ == 96 || kD_ == 128 || kD_ == 192 || kD_ == 256, "head-dim classes: 64, 96, 128, 192, 256");
  static_assert(kBr_ == 128 || kBr_ == 192, "Br: two or three consumer warpgroups of 64 rows");
  static_assert(kBc_ == 64 || kBc_ == 128 || kBc_ == 192, "Bc: S = Q K^T as wgmma N = 64 / 128 chunks; a TMA box has <= 256 rows");
  static_assert(kStages_ >= 2, "each ring needs at least two buffers");
  static_assert(kSmemBytes <= kMaxSharedBytes, "tiles exceed the platform's shared memory per block");
  // What the producer gives back must cover what the consumers take (setmaxnreg.inc blocks until
  // the registers are free).
  static_assert(128 * kProducerRegs + 128 * kConsumers * kConsumerRegs <= kThreads * kLaunchRegs,
                "setmaxnreg targets exceed the block's registers");
};

static_assert(V08Tile<128, 128, 128, 2, true>::kSmemBytes == 164936 && V08Tile<64, 128, 128, 2, true>::kSmemBytes == 83016 &&
                  V08Tile<256, 128, 64, 2, true>::kSmemBytes == 197704 &&
                  V08Tile<64, 192, 128, 2, true>::kSmemBytes == 91208 &&
                  V08Tile<192, 128, 64, 2, true>::kSmemBytes == 148552,
              "the header's shared-memory figures");

// The three tensor maps, passed as one __grid_constant__ kernel parameter (TMA reads them from the
// parameter space; CUtensorMap is 128-byte aligned).
struct V08Maps {
  CUtensorMap q, k, v;
};

#if defined(IOATTN_V08_WS)
using fwd_wg::mask_tile;
using fwd_wg::pack_p;
using fwd_wg::softmax_tile;

// S = Q K^T for one tile, issued (the caller commits and waits): kD / 16 MMAs of k = 16 (the kk-th
// 16-column slice of a swizzled row starts 32 kk bytes into its 64-column panel), each as wgmma
// N = 128 / 64 chunks of S's columns (Bc 192: 128 + 64; chunk keys c0.. are K rows c0.., c0 x 128
// bytes into each K panel, a multiple of the 1024-byte swizzle period). fwd_wg::issue_qk's
// generalization to d 96/192 and Bc 192; registers 4t .. 4t + 3 of S are columns 8t .. 8t + 7, so a
// chunk's accumulator is a contiguous slice of r_S.
template <class T, class Tl>
__device__ __forceinline__ void issue_qk_ws(float (&r_S)[Tl::kBc / 2], uint32_t q_addr, uint32_t k_addr) {
  wg::fence_regs(r_S);
  wg::fence();
#pragma unroll
  for (int kk = 0; kk < Tl::kD / 16; ++kk) {
    const uint64_t dq = wg::desc(q_addr + (kk / 4) * (Tl::kBr * 128) + (kk % 4) * 32, 16, 1024);
    const uint32_t k_kk = k_addr + (kk / 4) * (Tl::kBc * 128) + (kk % 4) * 32;
#pragma unroll
    for (int c0 = 0; c0 + 128 <= Tl::kBc; c0 += 128)
      wg::wgmma_ss_n128<T>(*reinterpret_cast<float(*)[64]>(&r_S[c0 / 2]), dq, wg::desc(k_kk + c0 * 128, 16, 1024),
                           kk > 0);
    if constexpr (Tl::kBc % 128 != 0) {
      constexpr int c0 = Tl::kBc / 128 * 128;
      wg::wgmma_ss_n64<T>(*reinterpret_cast<float(*)[32]>(&r_S[c0 / 2]), dq, wg::desc(k_kk + c0 * 128, 16, 1024),
                          kk > 0);
    }
  }
}

// O += P V for one tile, issued (the caller commits and waits): Bc / 16 MMAs of k = 16 keys (the
// g-th 16-key slice of V starts 16 rows x 128 bytes in), each as wgmma N = 128 / 64 chunks of O's
// kDp columns (d 192: 128 + 64, d 256: 128 + 128); the chunk at column n0 starts at V's panel
// n0 / 64, n0 / 64 LBO bytes in, and owns O's registers n0 / 2 ... fwd_wg::issue_pv's
// generalization to d 192. r_P must stay untouched until it completes.
template <class T, class Tl>
__device__ __forceinline__ void issue_pv_ws(float (&r_O)[Tl::kDp / 2], const uint32_t (&r_P)[Tl::kBc / 16][4],
                                            uint32_t v_addr, uint32_t v_lbo, uint32_t v_sbo) {
  wg::fence_regs(r_O);
  wg::fence();
#pragma unroll
  for (int g = 0; g < Tl::kBc / 16; ++g) {
    const uint32_t v_g = v_addr + g * 16 * 128;
#pragma unroll
    for (int n0 = 0; n0 + 128 <= Tl::kDp; n0 += 128)
      wg::wgmma_rs_n128<T>(*reinterpret_cast<float(*)[64]>(&r_O[n0 / 2]), r_P[g],
                           wg::desc(v_g + (n0 / 64) * v_lbo, v_lbo, v_sbo), 1);
    if constexpr (Tl::kDp % 128 != 0) {
      constexpr int n0 = Tl::kDp / 128 * 128;
      wg::wgmma_rs_n64<T>(*reinterpret_cast<float(*)[32]>(&r_O[n0 / 2]), r_P[g],
                          wg::desc(v_g + (n0 / 64) * v_lbo, v_lbo, v_sbo), 1);
    }
  }
}

// ---- mbarrier, TMA, named barriers, setmaxnreg (PTX ISA 8.0, sm_90a) ----------------------------
__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
// Make the initialized barriers visible to the other threads and to the async proxy (TMA).
__device__ __forceinline__ void mbar_init_fence() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
// Arrive once and add `bytes` to the transaction count the current phase waits for.
__device__ __forceinline__ void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
// Arrive once from lane 0 of the calling warp (a predicate inside the asm, not a branch: this runs
// while wgmma is in flight, where a branch makes ptxas serialize the wgmma).
__device__ __forceinline__ void mbar_arrive_lane0(uint32_t bar, int lane) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.eq.u32 p, %1, 0;\n@p mbarrier.arrive.shared::cta.b64 _, [%0];\n}\n" ::"r"(bar),
      "r"(lane)
      : "memory");
}
// One poll; a thread may sleep in it up to kPollNs while the phase is incomplete.
constexpr int kPollNs = 1000;
constexpr uint32_t kMaxPolls = 1u << 22;  // 2^22 polls: a few seconds at most
__device__ __forceinline__ bool mbar_try_wait(uint32_t bar, uint32_t parity) {
  uint32_t done;
  asm volatile(
      "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2, %3;\nselp.u32 %0, 1, 0, p;\n}\n"
      : "=r"(done)
      : "r"(bar), "r"(parity), "n"(kPollNs)
      : "memory");
  return done != 0;
}
// Wait until the phase of parity `parity` has completed (a fresh barrier is in phase 0, so waiting
// for parity 1 returns at once). Bounded: after kMaxPolls polls it gives up, sets `timed_out` and
// every later wait of this thread returns at once; the thread traps at its end (outside the MMA
// loop: a trap inside it made ptxas spill 564 bytes per thread and serialize the wgmma at d 128).
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity, bool& timed_out) {
  if (timed_out) return;
  for (uint32_t polls = 0; !mbar_try_wait(bar, parity);)
    if (++polls == kMaxPolls) {
      timed_out = true;
      return;
    }
}
// One box of a 4-D tensor map (coordinates innermost first: column, head, row, batch) into shared
// memory at `dst`; its bytes complete on `bar`. HBM read.
__device__ __forceinline__ void tma_load_4d(uint32_t dst, const CUtensorMap* map, uint32_t bar, int c0, int c1,
                                            int c2, int c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, %6}], "
      "[%2];\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(bar), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
      : "memory");
}
__device__ __forceinline__ void named_bar_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void named_bar_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
template <int kRegs>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kRegs));
}
template <int kRegs>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kRegs));
}
#endif  // IOATTN_V08_WS

// Named barrier ids of the ping-pong (0 is __syncthreads): consumer c waits on kSchedBar + c.
constexpr int kSchedBar = 1;

template <class T, class Tl>
__global__ void __launch_bounds__(Tl::kThreads, 1)
    fa3_warpspec_kernel(const __grid_constant__ V08Maps maps, AttnView a, T* __restrict__ g_O_all,
                        float* __restrict__ g_LSE, uint32_t v_lbo, uint32_t v_sbo) {
#if defined(IOATTN_V08_WS)
  constexpr int kDp = Tl::kDp, kBr = Tl::kBr, kBc = Tl::kBc, kStages = Tl::kStages, kC = Tl::kConsumers;

  extern __shared__ unsigned char smem_raw[];
  // The swizzle pattern repeats every 8 rows x 128 bytes (TMA and wgmma agree on it when the tile
  // starts 1024-byte aligned).
  const uint32_t raw_addr = frag::smem_addr(smem_raw);
  unsigned char* s_base = smem_raw + ((1024 - raw_addr % 1024) % 1024);
  const uint32_t s_Q = frag::smem_addr(s_base);          // (Br, kDp): kDp/64 panels of Br rows x 128 B
  const uint32_t s_K = s_Q + Tl::kQBytes;                // kStages x (Bc, kDp), same layout
  const uint32_t s_V = s_K + kStages * Tl::kKVBytes;     // kStages x (Bc, kDp)
  const uint32_t s_bar = s_V + kStages * Tl::kKVBytes;   // kBarriers x 8 bytes
  const uint32_t q_full = s_bar;
  auto k_full = [&](int s) { return s_bar + 8 * (1 + s); };
  auto k_empty = [&](int s) { return s_bar + 8 * (1 + kStages + s); };
  auto v_full = [&](int s) { return s_bar + 8 * (1 + 2 * kStages + s); };
  auto v_empty = [&](int s) { return s_bar + 8 * (1 + 3 * kStages + s); };

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, wg_id = tid / 128;
  const int seqlen_q = static_cast<int>(a.seqlen_q);
  const int b = static_cast<int>(blockIdx.x / a.heads_q), h = static_cast<int>(blockIdx.x % a.heads_q);
  const int i0 = static_cast<int>(gridDim.y - 1 - blockIdx.y) * kBr;  // heavy query blocks first
  const int i1 = min(i0 + kBr, seqlen_q);
  const MaskSpec& mask = a.mask;
  const int kb_blk = static_cast<int>(mask.block_key_begin(i0, i1));
  const int ke_blk = static_cast<int>(mask.block_key_end(i0, i1));
  const int j_first = kb_blk / kBc;
  const int j_last = ke_blk > kb_blk ? (ke_blk + kBc - 1) / kBc : j_first;
  const int n_tiles = j_last - j_first;  // the same for every warpgroup of the block
  // Tile n (= j - j_first) of either ring sits in buffer n % kStages, filled for the
  // (n / kStages)-th time: its full barrier completes phase n / kStages, whose parity is waited for.
  auto stage = [](int n) { return n % kStages; };
  auto parity = [](int n) { return static_cast<uint32_t>((n / kStages) & 1); };

  bool timed_out = false;  // a barrier wait gave up (mbar_wait): trap before exiting
  if (tid == 0) {
    mbar_init(q_full, 1);
    for (int s = 0; s < kStages; ++s) {
      mbar_init(k_full(s), 1);   // the producer's arrive.expect_tx; the TMA bytes complete it
      mbar_init(v_full(s), 1);
      mbar_init(k_empty(s), 4 * kC);  // lane 0 of each consumer warp
      mbar_init(v_empty(s), 4 * kC);
    }
    mbar_init_fence();
  }
  __syncthreads();  // the last block-wide barrier: the roles part here

  if (wg_id == 0) {
    // ---- producer -------------------------------------------------------------------------------
    setmaxnreg_dec<Tl::kProducerRegs>();
    if (warp == 0 && lane == 0 && n_tiles > 0) {  // no tile: nothing is loaded, nothing waited for
      const int hk = static_cast<int>(a.kv_head_of(h));
      mbar_arrive_expect_tx(q_full, Tl::kQBytes);
#pragma unroll
      for (int c = 0; c < kC; ++c)  // consumer c's 64 rows, panel p: rows 64c.. of panel p
#pragma unroll
        for (int p = 0; p < kDp / 64; ++p)  // HBM read: Q_i, once
          tma_load_4d(s_Q + p * (kBr * 128) + c * (64 * 128), &maps.q, q_full, 64 * p, h, i0 + 64 * c, b);
      // Loads in the order the consumers use them: K_0, then K_{n+1}, V_n for n = 0, 1, ...
      // Before refilling a buffer, wait until the 4 kC consumer warps released its previous tile
      // (tile n - kStages: phase parity(n) ^ 1 of the empty barrier; immediate for n < kStages).
      auto load_kv = [&](uint32_t s_ring, uint32_t full, uint32_t empty, const CUtensorMap* map, int n) {
        mbar_wait(empty, parity(n) ^ 1u, timed_out);
        mbar_arrive_expect_tx(full, Tl::kKVBytes);
        const uint32_t dst = s_ring + stage(n) * Tl::kKVBytes;
#pragma unroll
        for (int p = 0; p < kDp / 64; ++p)  // HBM read: K_j / V_j, once per (query block, j)
          tma_load_4d(dst + p * (kBc * 128), map, full, 64 * p, hk, (j_first + n) * kBc, b);
      };
      load_kv(s_K, k_full(0), k_empty(0), &maps.k, 0);
      for (int n = 0; n < n_tiles; ++n) {
        if (n + 1 < n_tiles) load_kv(s_K, k_full(stage(n + 1)), k_empty(stage(n + 1)), &maps.k, n + 1);
        load_kv(s_V, v_full(stage(n)), v_empty(stage(n)), &maps.v, n);
      }
    }
    if (timed_out) __trap();
    return;  // every load issued is waited for by the consumers, so the block outlives it
  }

  // ---- consumers ----------------------------------------------------------------------------------
  setmaxnreg_inc<Tl::kConsumerRegs>();
  const int c = wg_id - 1;  // consumer warpgroup (0 .. kC - 1): query rows 64c .. 64c + 63 of the block
  const int cw = warp % 4;  // warp within it: rows 16 cw .. 16 cw + 15 of those
  const int wi0 = i0 + 64 * c + 16 * cw, wi1 = min(wi0 + 16, seqlen_q);
  int key_lo[2], key_hi[2];  // visible keys of this thread's rows wi0 + lane/4 + 8s (none past seqlen_q)
#pragma unroll
  for (int s = 0; s < 2; ++s) {
    const int i = wi0 + lane / 4 + 8 * s;
    key_lo[s] = i < seqlen_q ? static_cast<int>(mask.key_begin(i)) : 0;
    key_hi[s] = i < seqlen_q ? static_cast<int>(mask.key_end(i)) : 0;
  }
  const uint32_t q_addr = s_Q + 64 * c * 128;  // this warpgroup's 64 rows, panel 0
  auto k_addr = [&](int n) { return s_K + stage(n) * Tl::kKVBytes; };
  auto v_addr = [&](int n) { return s_V + stage(n) * Tl::kKVBytes; };

  float r_O[kDp / 2];  // (64, kDp) per warpgroup: (16, d) per warp in 16x8 atoms, 4 registers each
  float r_S[kBc / 2];
  uint32_t r_P[kBc / 16][4];  // P as the A operand of O += P V, 16 keys per MMA
#pragma unroll
  for (int x = 0; x < kDp / 2; ++x) r_O[x] = 0.f;
#pragma unroll
  for (int x = 0; x < kBc / 2; ++x) r_S[x] = 0.f;
  float m_i[2] = {-INFINITY, -INFINITY}, l_i[2] = {0.f, 0.f};  // rows lane/4 and lane/4 + 8
  const float sl2 = a.scale_log2;
  float alpha[2];
  auto rescale_o = [&](const float (&al)[2]) {
#pragma unroll
    for (int x = 0; x < kDp / 2; ++x) r_O[x] *= al[(x % 4) / 2];
  };
  // Ping-pong (round robin over kC consumers): wait for this consumer's issue slot / hand the slot
  // to the next consumer. Each barrier joins the waiting warpgroup and the arriving one: 256 threads.
  auto slot_wait = [&] {
    if constexpr (Tl::kPingPong) named_bar_sync(kSchedBar + c, 256);
  };
  auto slot_pass = [&] {
    if constexpr (Tl::kPingPong) named_bar_arrive(kSchedBar + (c + 1) % kC, 256);
  };

  if (n_tiles > 0) {
    if constexpr (Tl::kPingPong)
      if (c == kC - 1) named_bar_arrive(kSchedBar + 0, 256);  // consumer 0 issues first
    mbar_wait(q_full, 0, timed_out);
    // Tile 0: S_0 alone (O is still 0: nothing to rescale), masked (it may hold the first keys).
    mbar_wait(k_full(0), 0, timed_out);
    slot_wait();
    issue_qk_ws<T, Tl>(r_S, q_addr, k_addr(0));
    wg::commit();
    slot_pass();
    wg::wait_all();
    wg::fence_regs(r_S);
    mbar_arrive_lane0(k_empty(0), lane);  // K_0 read by this warp's share of the wgmma
    mask_tile<kBc>(r_S, key_lo, key_hi, j_first * kBc, lane);
    (void)softmax_tile<kBc>(r_S, m_i, l_i, alpha, sl2);
    pack_p<T, kBc>(r_S, r_P);
    // Step n: S_n = Q K_n^T and O += P_{n-1} V_{n-1} issued together, S_n waited for, its softmax
    // while P V runs, then P V waited for and O rescaled. As in v06 nothing between issue and wait
    // touches r_P or r_O or branches (the barrier arrivals are predicated asm).
    auto step = [&](int n, auto masked) {
      mbar_wait(k_full(stage(n)), parity(n), timed_out);
      mbar_wait(v_full(stage(n - 1)), parity(n - 1), timed_out);
      slot_wait();
      issue_qk_ws<T, Tl>(r_S, q_addr, k_addr(n));
      wg::commit();
      issue_pv_ws<T, Tl>(r_O, r_P, v_addr(n - 1), v_lbo, v_sbo);
      wg::commit();
      slot_pass();
      wg::wait<1>();
      wg::fence_regs(r_S);
      mbar_arrive_lane0(k_empty(stage(n)), lane);
      if constexpr (decltype(masked)::value) mask_tile<kBc>(r_S, key_lo, key_hi, (j_first + n) * kBc, lane);
      const bool rescale = softmax_tile<kBc>(r_S, m_i, l_i, alpha, sl2);  // P_n stays fp32 in r_S
      wg::wait_all();
      wg::fence_regs(r_O);
      mbar_arrive_lane0(v_empty(stage(n - 1)), lane);
      if (rescale) rescale_o(alpha);
      pack_p<T, kBc>(r_S, r_P);  // only now: the P V just waited for read r_P until it completed
    };
    // Tiles [ju0, ju1) are unmasked for every row of the block (key_begin and key_end grow with i).
    const int ju0 = max(j_first + 1, (static_cast<int>(mask.key_begin(i1 - 1)) + kBc - 1) / kBc);
    const int ju1 = max(ju0, min(j_last, static_cast<int>(mask.key_end(i0)) / kBc));
    for (int j = j_first + 1; j < ju0 && j < j_last; ++j) step(j - j_first, std::true_type{});
    for (int j = ju0; j < ju1; ++j) step(j - j_first, std::false_type{});
    for (int j = max(ju1, j_first + 1); j < j_last; ++j) step(j - j_first, std::true_type{});
    // The last P V.
    mbar_wait(v_full(stage(n_tiles - 1)), parity(n_tiles - 1), timed_out);
    issue_pv_ws<T, Tl>(r_O, r_P, v_addr(n_tiles - 1), v_lbo, v_sbo);
    wg::commit();
    wg::wait_all();
    wg::fence_regs(r_O);
    mbar_arrive_lane0(v_empty(stage(n_tiles - 1)), lane);
    // The last consumer's last arrival on consumer 0's barrier is still pending: take it, so both named
    // barriers are idle when the block exits.
    if constexpr (Tl::kPingPong)
      if (c == 0) named_bar_sync(kSchedBar + 0, 256);
  }

  if (timed_out) __trap();  // a protocol bug: fail the launch rather than write O
  // Epilogue (v06's): O / l straight from the accumulators (4-byte stores), LSE = scale m + log l.
  T* g_O = g_O_all + a.q_offset(b, 0, h);
  const int64_t q_stride = a.q_row_stride();
  const int d = static_cast<int>(a.head_dim);  // a multiple of 8 (supports()): whole 8-column atoms
#pragma unroll
  for (int s = 0; s < 2; ++s) l_i[s] = frag::row_allreduce_sum(l_i[s]);
#pragma unroll
  for (int s = 0; s < 2; ++s) {
    const int i = wi0 + lane / 4 + 8 * s;
    if (i >= seqlen_q) continue;
    const float inv_l = l_i[s] > 0.f ? 1.f / l_i[s] : 0.f;
#pragma unroll
    for (int t = 0; t < kDp / 8; ++t)  // HBM write: O_i, once; atoms of columns >= d (padding) are not stored
      if (8 * t < d)
        *reinterpret_cast<uint32_t*>(g_O + i * q_stride + 8 * t + 2 * (lane % 4)) =
            frag::pack2<T>(r_O[4 * t + 2 * s] * inv_l, r_O[4 * t + 2 * s + 1] * inv_l);
    if (lane % 4 == 0) g_LSE[a.lse_offset(b, h, i)] = l_i[s] > 0.f ? m_i[s] * a.scale + logf(l_i[s]) : -INFINITY;
  }
#else
  (void)maps, (void)a, (void)g_O_all, (void)g_LSE, (void)v_lbo, (void)v_sbo;
#endif
}

// Writes 1 when this binary's device code has TMA and wgmma (an sm_90a build), else 0.
__global__ void warpspec_probe_kernel(int* out) {
#if defined(IOATTN_V08_WS)
  *out = 1;
#else
  *out = 0;
#endif
}

// ---- host: tensor maps --------------------------------------------------------------------------
using EncodeTiled = PFN_cuTensorMapEncodeTiled_v12000;

// The driver's cuTensorMapEncodeTiled, looked up once through the runtime (no -lcuda needed).
LaunchStatus encoder(EncodeTiled& fn) {
  static EncodeTiled cached = nullptr;
  static bool looked = false;
  if (!looked) {
    looked = true;
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q) == cudaSuccess &&
        q == cudaDriverEntryPointSuccess)
      cached = reinterpret_cast<EncodeTiled>(p);
    (void)cudaGetLastError();
  }
  if (!cached) return "v08_fa3_warpspec: the driver has no cuTensorMapEncodeTiled (TMA needs CUDA 12 or later)";
  fn = cached;
  return std::nullopt;
}

// A (batch, seqlen, heads, d) BSHD tensor as a 4-D tensor map, dims innermost first (d, heads,
// seqlen, batch), boxes of 64 columns (128 bytes: the swizzle span) x 1 head x box_rows rows x 1
// sequence, 128-byte swizzle; rows past seqlen are zero-filled. describe(): `base` is null and a
// stand-in aligned address is encoded instead (the map is then never used), so the shape checks run
// the same in config() as in launch().
LaunchStatus encode(CUtensorMap& m, const char* what, const void* base, DType dt, int64_t batch, int64_t seqlen,
                    int64_t heads, int64_t d, int box_rows) {
  EncodeTiled fn = nullptr;
  if (auto e = encoder(fn)) return e;
  void* addr = base ? const_cast<void*>(base) : reinterpret_cast<void*>(uintptr_t{1} << 20);
  const cuuint64_t e = 2;  // bytes per element
  // A zero-length dimension is not encodable; with seqlen 0 no box of that tensor is loaded.
  const int64_t rows = seqlen > 0 ? seqlen : 1;
  const cuuint64_t dims[4] = {static_cast<cuuint64_t>(d), static_cast<cuuint64_t>(heads),
                              static_cast<cuuint64_t>(rows), static_cast<cuuint64_t>(batch)};
  const cuuint64_t strides[3] = {static_cast<cuuint64_t>(d) * e, static_cast<cuuint64_t>(heads * d) * e,
                                 static_cast<cuuint64_t>(rows * heads * d) * e};
  const cuuint32_t box[4] = {64, 1, static_cast<cuuint32_t>(box_rows), 1};
  const cuuint32_t elem_strides[4] = {1, 1, 1, 1};
  const CUresult r = fn(&m, dt == DType::bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 4,
                        addr, dims, strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                        CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    return std::string("v08_fa3_warpspec: cuTensorMapEncodeTiled refused the ") + what +
           " tensor (error " + std::to_string(static_cast<int>(r)) +
           "; TMA needs a 16-byte aligned base and 16-byte row strides)";
  return std::nullopt;
}

struct Config {
  int d, br, bc;
  const char* name;
  LaunchStatus (*launch)(const AttnView&, const DeviceTensors&, DType, const Launcher&);
};

template <class Tl>
LaunchStatus launch_tile(const AttnView& a, const DeviceTensors& t, DType dt, const Launcher& L) {
  const int64_t q_blocks = (a.seqlen_q + Tl::kBr - 1) / Tl::kBr;
  if (q_blocks > 65535) return "v08_fa3_warpspec: seqlen_q must be <= " + std::to_string(65535 * Tl::kBr);
  const dim3 grid(static_cast<unsigned>(a.batch * a.heads_q), static_cast<unsigned>(q_blocks));
  V08Maps maps{};
  if (auto e = encode(maps.q, "Q", t.q, dt, a.batch, a.seqlen_q, a.heads_q, a.head_dim, 64)) return e;
  if (auto e = encode(maps.k, "K", t.k, dt, a.batch, a.seqlen_k, a.heads_kv, a.head_dim, Tl::kBc)) return e;
  if (auto e = encode(maps.v, "V", t.v, dt, a.batch, a.seqlen_k, a.heads_kv, a.head_dim, Tl::kBc)) return e;
  // V's descriptor for the N-major B operand, as v06: LBO = Bc x 128 bytes (one 64-column panel of
  // d to the next), SBO = 1024 bytes (one 8-key group to the next).
  const uint32_t lbo = Tl::kBc * 128, sbo = 1024;
  // The kernel reverses blockIdx.y (heavy query blocks first).
  const MainKernel main{.br = Tl::kBr, .bc = Tl::kBc, .stages = Tl::kStages, .splits = 0,
                        .grid_order = "qblock_major_rev"};
  return dispatch_dtype(dt, [&]<class T>() -> LaunchStatus {
    if constexpr (sizeof(T) != 2) {
      return "v08_fa3_warpspec: dtype must be fp16 or bf16";
    } else {
      return L.main(main, &fa3_warpspec_kernel<T, Tl>, grid, Tl::kThreads, Tl::kSmemBytes, maps, a,
                    static_cast<T*>(t.o), t.lse, lbo, sbo);
    }
  });
}

#define V08_CONFIG(d, br, bc, st, pp)                                                    \
  Config{d, br, bc, "d" #d "_br" #br "_bc" #bc "_s" #st "_pp" #pp, \
         &launch_tile<V08Tile<d, br, bc, st, pp != 0>>}
// Per head-dim class (head_dim_class: d 8..64 -> 64, 72..96 -> 96, 104..128 -> 128, 136..192 -> 192,
// 200..256 -> 256) the first configuration listed is the default, and --br/--bc pick the first one
// with that tile; the rows marked "env" share a tile with an earlier row (another stage count, or
// ping-pong off) and are reached only by name through IOATTN_V08_CONFIG (a tuning selector: the
// tile sweep sets it; a name of another class or an unknown name is refused by name). Registers
// per thread from ptxas: the header.
const Config kConfigs[] = {
    // d 64: FA3's tall block (three consumer warpgroups, 160 registers each) first.
    V08_CONFIG(64, 192, 128, 2, 1),
    V08_CONFIG(64, 128, 128, 2, 1),  // session 5's default
    V08_CONFIG(64, 128, 192, 2, 1),
    V08_CONFIG(64, 192, 64, 3, 1),
    V08_CONFIG(64, 128, 64, 3, 1),
    V08_CONFIG(64, 192, 128, 3, 1),  // env
    V08_CONFIG(64, 192, 128, 4, 1),  // env
    V08_CONFIG(64, 128, 128, 3, 1),  // env
    V08_CONFIG(64, 128, 192, 3, 1),  // env
    V08_CONFIG(64, 192, 128, 2, 0),  // env
    V08_CONFIG(64, 128, 128, 2, 0),  // env
    // d 96 (shared tiles and O 128 wide, Q K^T 6 MMAs deep)
    V08_CONFIG(96, 128, 128, 2, 1),
    V08_CONFIG(96, 192, 64, 2, 1),
    V08_CONFIG(96, 128, 64, 3, 1),
    V08_CONFIG(96, 128, 128, 3, 1),  // env
    // d 128
    V08_CONFIG(128, 128, 128, 2, 1),
    V08_CONFIG(128, 128, 64, 2, 1),
    V08_CONFIG(128, 128, 128, 3, 1),  // env
    V08_CONFIG(128, 128, 128, 2, 0),  // env
    // d 192 (O 96 registers: S and P fit beside it at Bc 64; Bc 128 does not fit shared memory)
    V08_CONFIG(192, 128, 64, 2, 1),
    V08_CONFIG(192, 128, 64, 3, 1),  // env
    // d 256
    V08_CONFIG(256, 128, 64, 2, 1),
    V08_CONFIG(256, 128, 64, 2, 0),  // env
};
#undef V08_CONFIG

// The configuration for (d, --br, --bc); IOATTN_V08_CONFIG (if set and not empty) must name it.
const char* config_by_name() {
  const char* want = std::getenv("IOATTN_V08_CONFIG");
  return want && want[0] != '\0' ? want : nullptr;
}
const Config* find_config(int64_t d, int br, int bc) {
  const char* want = config_by_name();
  for (const Config& c : kConfigs)
    if (c.d == head_dim_class(d) && (br == 0 || br == c.br) && (bc == 0 || bc == c.bc) &&
        (!want || std::string_view(want) == c.name))
      return &c;
  return nullptr;
}

// Whether the device code of this build has TMA/wgmma: asked once, on the first launch.
LaunchStatus warpspec_available() {
  static int cached = -1;
  if (cached < 0) {
    int* d_flag = nullptr;
    IOATTN_CHECK(hipMalloc(&d_flag, sizeof(int)));
    IOATTN_CHECK(hipMemset(d_flag, 0, sizeof(int)));
    warpspec_probe_kernel<<<1, 1>>>(d_flag);
    IOATTN_CHECK_LAUNCH();
    int h_flag = 0;
    IOATTN_CHECK(hipMemcpy(&h_flag, d_flag, sizeof(int), hipMemcpyDeviceToHost));
    IOATTN_CHECK(hipFree(d_flag));
    cached = h_flag;
  }
  if (cached == 0)
    return "v08_fa3_warpspec: this build has no sm_90a device code (TMA, wgmma, setmaxnreg; configure with -DIOATTN_CUDA_ARCH=90a)";
  return std::nullopt;
}
#endif  // IOATTN_PLATFORM_NVIDIA

}  // namespace

LaunchStatus v08_fa3_warpspec_supports(const AttnProblem& p, const KernelOptions& opt) {
  if (auto e = p.validate()) return e;
#if defined(IOATTN_PLATFORM_NVIDIA)
  if (const char* off = std::getenv("IOATTN_V08_DISABLE"); off && off[0] != '\0' && off[0] != '0')
    return "v08_fa3_warpspec: disabled by IOATTN_V08_DISABLE (the header's hang guard)";
  if (auto e = warpspec_available()) return e;
  if (p.dtype == DType::fp32) return "v08_fa3_warpspec: dtype must be fp16 or bf16 (matrix cores take 16-bit inputs)";
  if (p.head_dim % 8 != 0 || p.head_dim > 256)
    return "v08_fa3_warpspec: head_dim must be a multiple of 8 and <= 256 (TMA rows are 16-byte multiples; "
           "d is padded to the next of 64, 96, 128, 192, 256 inside)";
  if (opt.splits) return "v08_fa3_warpspec takes no split-KV (--splits)";
  if (!find_config(p.head_dim, opt.br, opt.bc)) {
    const int cls = head_dim_class(p.head_dim);
    std::string have;
    for (const Config& c : kConfigs) {
      const std::string item = config_by_name() ? std::string(c.name) : std::to_string(c.br) + "x" + std::to_string(c.bc);
      if (c.d == cls && have.find(item) == std::string::npos) have += (have.empty() ? "" : ", ") + item;
    }
    if (const char* want = config_by_name())
      return std::string("v08_fa3_warpspec: IOATTN_V08_CONFIG=") + want + " with --br " + std::to_string(opt.br) +
             " --bc " + std::to_string(opt.bc) + " names no configuration of head_dim " + std::to_string(p.head_dim) +
             " (class " + std::to_string(cls) + "): one of " + have;
    return "v08_fa3_warpspec: for head_dim " + std::to_string(p.head_dim) + " (--br x --bc) must be one of " + have;
  }
  return std::nullopt;
#else
  (void)opt;
  return "v08_fa3_warpspec needs NVIDIA Hopper (TMA, wgmma); on AMD use v05_fa2_fast";
#endif
}

std::size_t v08_fa3_warpspec_workspace_bytes(const AttnProblem&, const KernelOptions&) { return 0; }

namespace {
// The launch path of launch() and config().
LaunchStatus run(const AttnProblem& p, const DeviceTensors& t, const KernelOptions& opt, const Launcher& L) {
  if (auto e = v08_fa3_warpspec_supports(p, opt)) return e;
#if defined(IOATTN_PLATFORM_NVIDIA)
  return find_config(p.head_dim, opt.br, opt.bc)->launch(AttnView::of(p), t, p.dtype, L);
#else
  (void)t, (void)L;
  return "v08_fa3_warpspec needs NVIDIA Hopper (TMA, wgmma)";
#endif
}
}  // namespace

LaunchStatus v08_fa3_warpspec_launch(const AttnProblem& p, const DeviceTensors& t, const KernelOptions& opt,
                                     void* /*workspace*/, void* stream) {
  return run(p, t, opt, Launcher::enqueue(stream));
}

LaunchStatus v08_fa3_warpspec_config(const AttnProblem& p, const KernelOptions& opt, LaunchConfig& out) {
  return describe_launch(out, [&](const Launcher& L) { return run(p, {}, opt, L); });
}

#if defined(IOATTN_PLATFORM_NVIDIA)
// Tuning hooks for kernels/dev (not in the registry).
const char* v08_fa3_warpspec_config_name(int index) {
  return index >= 0 && index < static_cast<int>(std::size(kConfigs)) ? kConfigs[index].name : nullptr;
}
LaunchStatus v08_fa3_warpspec_launch_config(int index, const AttnProblem& p, const DeviceTensors& t, void* stream) {
  if (auto e = v08_fa3_warpspec_supports(p, {})) return e;
  if (index < 0 || index >= static_cast<int>(std::size(kConfigs))) return "v08_fa3_warpspec: no configuration " + std::to_string(index);
  const Config& c = kConfigs[index];
  if (c.d != head_dim_class(p.head_dim)) return std::string("config ") + c.name + " is for another head_dim";
  return c.launch(AttnView::of(p), t, p.dtype, Launcher::enqueue(stream));
}
#endif

}  // namespace ioattn::kernels

// kernels/v10_fp8_warpspec.hip: the FP8 (e4m3) forward on v08's warp-specialized loop (TMA producer
// warpgroup, K and V^T rings with mbarriers, two or three wgmma consumer warpgroups in ping-pong),
// NVIDIA sm_90a only.
//
// What changed vs v09_fp8_wgmma: v09 is v06's structure in FP8 (every thread loads with cp.async,
// a __syncthreads per tile keeps its two warpgroups in lock step). v10 takes v08's structure
// instead, with v09's FP8 arithmetic unchanged:
//   warpgroup 0, the producer (setmaxnreg.dec to 24): one thread issues TMA loads (UINT8 tensor
//     maps): Q once, then K_j and V^T_j into two rings of kStages buffers, each buffer with a full
//     mbarrier (expect_tx) and an empty one (one arrival per consumer warp). The barriers, the
//     bounded waits, TMA, named barriers, setmaxnreg, the producer's ring loop (produce_kv) and the
//     ping-pong (PingPong) are kernels/ws_pipeline.hpp: v08's code moved there (the primitives,
//     which v08 now includes) or written there from v08's protocol (RingBarriers, produce_kv,
//     PingPong: v08's kernel body still inlines the same steps; switching it to the calls is left
//     until the persistent-scheduler change of v08's kernel body has landed).
//   warpgroups 1 .. kC, the consumers (Br = 64 kC; setmaxnreg.inc to 240 at kC 2, 160 at kC 3):
//     v08's step (S_n and O += P_{n-1} V_{n-1} issued in one ping-pong slot, the softmax of S_n
//     while P V runs, K_n released after S_n, V^T_{n-1} after P V) with v09's products:
//     S = Q K^T as wgmma e4m3 k32 from shared Q and K (K-major), with v09's promotion of S
//     issued PIPELINED (kernels/fp8_wgmma_common.hpp, compute_s_pipelined: two fresh accumulators
//     in turn, part k + 1 issued before part k is waited for, so the tensor cores run part k + 1
//     while the CUDA cores add part k; v09's compute_s waits for every part with nothing queued
//     behind it). The fp32 additions are v09's, in the same order, each part's k32 products from a
//     fresh accumulator as in v09 (the same S for the same interval, if a wgmma's result does not
//     depend on its N: v10's column parts are 64 / 32 keys at d 128 / 256, v09's 64 / 16);
//     O += P V with P in registers (e4m3, keys renumbered: phys_key) and B = V^T from shared
//     memory (K-major).
// V^T: 8-bit wgmma has no transposed B, and TMA cannot transpose, so V must reach shared memory
// with the keys contiguous. Chosen: v09's SEPARATE PASS (fp8wg::transpose_v_kernel: V -> V^T per
// (batch, K/V head), keys renumbered per 32-key group, Nk padded to 128 with zeros, in the
// workspace), then TMA boxes of V^T. Not chosen: FA3's in-kernel transpose (the producer
// warpgroup reads V tiles with ldmatrix and writes V^T with stmatrix between the TMA and the
// consumers). Why: the pass costs 2 B Hkv Nk d bytes of HBM traffic (a few percent at N >= 4k: the
// main loop reads K and V^T once per query block, Tr = Nq / Br times) and one launch, and keeps the
// producer one thread of TMA issue with 24 registers; the in-kernel transpose needs the producer's
// 128 threads with more registers (taken from the consumers' 240 at d 256), a third barrier per
// stage (transposed-V ready) and its own racecheck story. Revisit if the pass shows in the timing.
// Descales, P's rounding, the output: v09's (S scaled by scale q_descale k_descale in exp2 units;
// P~ = exp(S - m) with the lazily moved running max rounded to e4m3, l from the fp32 P~; O =
// (P~ V) v_descale / l in fp32, then bf16 or fp16; LSE = (scale qd kd) m + log l). The reference's
// same-precision baseline rounds where this kernel does (reference/naive.cpp, "FP8 inputs").
// Rescaling: eager by default where compiled (one configuration per head dim: its default tile,
// promotion 1): a row's running max moves at any growth, so its largest P~ is exactly 1 and takes no
// e4m3 rounding, the fix kernels/dev/fp8_v09_emulate.cpp found for v09's O failures at logits of std
// 100; on the H200 eager passes every seed of fp8_promote.sh there, lazy fails 2-6 of 8 per head dim
// (experiments/results/h200/2026-12-01_4eddfc3_fp8_promote), at about lazy's speed at d 128 and a
// few % slower at d 256 (2026-12-01_4eddfc3_fp8_eager vs _fp8_lazy). IOATTN_V10_RESCALE=lazy selects
// v09's lazy rescaling; other tiles and intervals have only lazy configurations and stay lazy.
// Promotion of S (v09's header explains why): IOATTN_V10_S_PROMOTE as v09's IOATTN_V09_S_PROMOTE
// (unset: a fresh accumulator every k32 instruction, v09's default, so the two compare; "fast": one
// accumulator across d; a number: that interval where kConfigs lists it). P V is not promoted (as
// v09).
//
// Tiling: e4m3 tiles are half the bytes of v08's, so at the same shared-memory budget Bc doubles
// or stages are added. Q (Br, d), K (Bc, d): panels of 128-byte rows (128B swizzle; at d 64 one
// panel of 64-byte rows, 64B swizzle, as v09); V^T (d, Bc): panels of d rows x 128 keys (Bc 64: 64
// bytes, 64B swizzle). Shared memory: Q Br d + kStages (Bc d + d Bc) bytes + barriers. Per consumer
// thread: O d/2 + S Bc/2 fp32 registers + P Bc/8 words + the promotion accumulator kTCols/2.
// kConfigs below lists every configuration; the default per head dim (the first row):
//   d 64:  Br 128, Bc 128, 3 stages (58,472 bytes); with IOATTN_V10_S_PROMOTE=fast also Br 128 x
//          Bc 256 (2 stages) and Br 192 x Bc 128 (three consumers of 160 registers, 2 stages)
//   d 128: Br 128, Bc 128, 3 stages (115,816)
//   d 256: Br 128, Bc 64, 3 stages (132,200; v09's tile)
// Tried and dropped (ptxas spills, and wgmma serialized for want of registers; measured with one
// promotion accumulator, before the pipelined promotion added a second): d 128 Bc 256 (O 64 +
// S 128 + P 32 registers before the promotion accumulator: 344-1,468 bytes of spill stores), d 256
// Bc 128 (O 128 + S 64 + P 16: 20 bytes spilled even unpromoted, 388-412 promoted); d 64 Bc 256 and
// Br 192 spill only when promoted, so they are listed for "fast" only. The doubled Bc of the
// smaller e4m3 tiles is therefore out of reach of the registers, not of shared memory, at d 128/256.
// Registers (ptxas -v, CUDA 13.0, kernels/dev/build.sh's flags with -gencode sm_90a, every row of
// kConfigs, bf16 and fp16 out): 168 per thread at launch for the 384-thread blocks (Br 128; 24 /
// 240 after setmaxnreg), 128 for the 512-thread block (Br 192; 24 / 160); 0 bytes of spills, no
// wgmma serialization warning. Promoted column parts (kTCols): d 64: 128 keys (one part), d 128:
// 64 (two accumulators of 32 registers), d 256: 32 (two of 16).
//
// HBM traffic (simulator strategy `fa2`, e = 1 for Q, K, V, 2 for O): B Hq Nq d (1 + 2) (Q, O) +
// 2 B Hq Tr Nk d (K, V^T once per query block, fewer under a causal mask or window), Tr = ceil(Nq /
// Br), + the V^T pass (2 B Hkv Nk d: the simulator's FP8 design part `vt-pass`); LSE 4 B Hq Nq.
//
// Protocol invariants (read off the code; no GPU has exercised them):
//   (1) every warpgroup of a block sees the same tile range [j_first, j_last) (block-level mask
//       bounds), so the producer loads n_tiles K and V^T tiles and every consumer waits for and
//       releases exactly those; with n_tiles = 0 nothing is loaded, waited for or arrived on.
//   (2) full barrier of buffer s (count 1): tile n = p kStages + s completes its phase p (the
//       producer's arrive.expect_tx of the box bytes, then the TMA bytes); a consumer waits for parity
//       p & 1. The buffer is refilled with tile n + kStages only after its empty barrier (count 4 kC,
//       lane 0 of every consumer warp, after that warp's last wgmma read of tile n completed) has
//       completed phase p, so a full barrier is never two phases ahead of a waiting consumer and the
//       parity cannot alias. The producer waits for the empty phase p - 1 (parity (p & 1) ^ 1) before
//       loading tile n; for p = 0 that is the fresh barrier's "previous phase", which returns at once.
//   (3) K_n is released after S_n completed (compute_s_pipelined returns with every S part waited
//       for), V^T_n after O += P_n V_n completed (wait_all); nothing reads a buffer after its release.
//   (4) ping-pong: per tile each consumer syncs once on its own named barrier (1 + c) and arrives once
//       on the next one's; the last consumer's extra arrival up front on barrier 1 is taken by
//       consumer 0's extra sync after its loop, so every barrier's arrivals balance at exit (v08's).
// Hang guard (v08's): bounded mbarrier waits (2^22 polls of <= 1 us), a thread whose wait gave up
// traps at its end; named barriers are unbounded but balance by (4).
// IOATTN_V10_DISABLE=1 makes supports() refuse every problem, so a suite run of all variants can
// leave v10 out after a fault (a trap ends the process's CUDA context).
//
// Measured: nothing yet (compiled, not run: no GPU was lent after this file was written); the first
// run, with its pass criteria, is kernels/dev/NEXT_GPU_RUN.md's section v10_fp8_warpspec.
// Run: ioattn run --kernel v10_fp8_warpspec --dtype fp8_e4m3 --seqlen 4096 --heads 16 --head-dim 128 --check
//
// Supports: fp8_e4m3 inputs (not e5m2), output bf16 or fp16; descales per tensor or per K/V head
// (heads_kv <= 64 when per head); d in {64, 128, 256}; any Nq, Nk; causal (bottom-right), windows,
// GQA/MQA; LSE out; fully masked rows give O = 0, LSE = -inf. Dense layout only. Tensors must be
// 16-byte aligned (TMA). Needs sm_90a device code (kernels/CMakeLists.txt adds it for this file);
// supports() asks the device once. AMD: refused (no wgmma, no TMA).
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <string>
#include <type_traits>

#include "kernels/attn_view.hpp"
#include "kernels/fp8_wgmma_common.hpp"
#include "kernels/fwd_wgmma_common.hpp"
#include "kernels/launcher.hpp"
#include "kernels/platform/fragment.hpp"
#include "kernels/platform/platform.hpp"
#include "kernels/platform/wgmma.hpp"
#include "kernels/platform/wgmma_fp8.hpp"
#include "kernels/ws_pipeline.hpp"

#if defined(IOATTN_PLATFORM_NVIDIA) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define IOATTN_V10_WS 1
#endif

namespace ioattn::kernels {
namespace {

#if defined(IOATTN_PLATFORM_NVIDIA)
using fp8wg::Fp8Descales;

template <int kD_, int kBr_, int kBc_, int kStages_, int kPromote_, int kTCols_ = kBc_, bool kEager_ = false>
struct V10Tile {
  static constexpr int kD = kD_;
  // Rescaling of the running max (IOATTN_V10_RESCALE): lazy (v09's, the default) or eager.
  static constexpr bool kLazy = !kEager_;
  static constexpr int kBr = kBr_;  // kConsumers consumer warpgroups of 64 rows
  static constexpr int kConsumers = kBr_ / 64;
  static constexpr int kBc = kBc_;
  static constexpr int kStages = kStages_;
  // S = Q K^T takes d/32 k32 instructions; a fresh accumulator every kPromote of them (v09's
  // promotion); chunks after the first in column parts of kTCols keys.
  static constexpr int kPromote = kPromote_;
  static constexpr int kSChunks = kD_ / 32 / kPromote_;
  static constexpr int kTCols = kTCols_;
  static constexpr int kThreads = 128 * (1 + kConsumers);  // producer warpgroup + consumers
  static constexpr int kLaunchRegs = 65536 / kThreads / 8 * 8;
  static constexpr int kProducerRegs = 24, kConsumerRegs = kConsumers == 2 ? 240 : 160;
  static constexpr int kQKRow = kD_ < 128 ? kD_ : 128;  // bytes per panel row of Q and K
  static constexpr int kVRow = kBc_ < 128 ? kBc_ : 128;  // bytes per panel row of V^T (d rows per panel)
  static constexpr int kQBytes = kBr_ * kD_;
  static constexpr int kKBytes = kBc_ * kD_;
  static constexpr int kVBytes = kD_ * kBc_;
  static constexpr int kBarriers = 1 + 4 * kStages_;  // Q full; K full/empty, V full/empty per stage
  static constexpr int kSmemBytes = 1024 /* alignment slack */ + kQBytes + kStages_ * (kKBytes + kVBytes) + 8 * kBarriers;
  static_assert(kD_ == 64 || kD_ == 128 || kD_ == 256, "wgmma N for P V is d: 64, 128 or 256");
  static_assert(kBr_ == 128 || kBr_ == 192, "Br: two or three consumer warpgroups of 64 rows");
  static_assert(kBc_ == 64 || kBc_ == 128 || kBc_ == 256, "Bc: wgmma N of Q K^T, <= 256 (a TMA box has <= 256 rows)");
  static_assert(kStages_ >= 2, "each ring needs at least two buffers");
  static_assert(kPromote_ >= 1 && (kD_ / 32) % kPromote_ == 0, "the promotion interval must divide d/32");
  static_assert(kTCols_ >= 16 && kBc_ % kTCols_ == 0, "S's column parts: N >= 16, dividing Bc");
  static_assert(kSmemBytes <= kMaxSharedBytes, "tiles exceed the platform's shared memory per block");
  static_assert(128 * kProducerRegs + 128 * kConsumers * kConsumerRegs <= kThreads * kLaunchRegs,
                "setmaxnreg targets exceed the block's registers");
};

static_assert(V10Tile<64, 128, 128, 3, 1>::kSmemBytes == 58472 && V10Tile<128, 128, 128, 3, 1>::kSmemBytes == 115816 &&
                  V10Tile<128, 128, 256, 2, 1>::kSmemBytes == 148552 &&
                  V10Tile<256, 128, 64, 3, 1>::kSmemBytes == 132200,
              "the header's shared-memory figures");

struct V10Maps {
  CUtensorMap q, k, vt;
};

#if defined(IOATTN_V10_WS)
using namespace ws;
using fp8wg::compute_s_pipelined;
using fp8wg::issue_pv;
using fp8wg::pack_p;
using fwd_wg::mask_tile;
using fwd_wg::softmax_tile;
#endif

template <class T, class Tl>
__global__ void __launch_bounds__(Tl::kThreads, 1)
    fp8_warpspec_kernel(const __grid_constant__ V10Maps maps, AttnView a, T* __restrict__ g_O_all,
                        float* __restrict__ g_LSE, Fp8Descales ds) {
#if defined(IOATTN_V10_WS)
  constexpr int kD = Tl::kD, kBr = Tl::kBr, kBc = Tl::kBc, kStages = Tl::kStages, kC = Tl::kConsumers;

  extern __shared__ unsigned char smem_raw[];
  const uint32_t raw_addr = frag::smem_addr(smem_raw);
  unsigned char* s_base = smem_raw + ((1024 - raw_addr % 1024) % 1024);  // swizzle atoms: 1024-aligned
  const uint32_t s_Q = frag::smem_addr(s_base);                // (Br, d): d / kQKRow panels of Br rows
  const uint32_t s_K = s_Q + Tl::kQBytes;                      // kStages x (Bc, d), the same layout
  const uint32_t s_V = s_K + kStages * Tl::kKBytes;            // kStages x (d, Bc): Bc / kVRow panels of d rows
  const RingBarriers<kStages> bars{s_V + kStages * Tl::kVBytes};  // kBarriers x 8 bytes
  static_assert(RingBarriers<kStages>::kCount == Tl::kBarriers, "the barriers the tile reserves");
  auto stage = [](int n) { return ring_stage<kStages>(n); };
  auto parity = [](int n) { return ring_parity<kStages>(n); };

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, wg_id = tid / 128;
  const int seqlen_q = static_cast<int>(a.seqlen_q);
  const int b = static_cast<int>(blockIdx.x / a.heads_q), h = static_cast<int>(blockIdx.x % a.heads_q);
  const int hk = static_cast<int>(a.kv_head_of(h));
  const int i0 = static_cast<int>(gridDim.y - 1 - blockIdx.y) * kBr;  // heavy query blocks first
  const int i1 = min(i0 + kBr, seqlen_q);
  const MaskSpec& mask = a.mask;
  const int kb_blk = static_cast<int>(mask.block_key_begin(i0, i1));
  const int ke_blk = static_cast<int>(mask.block_key_end(i0, i1));
  const int j_first = kb_blk / kBc;
  const int j_last = ke_blk > kb_blk ? (ke_blk + kBc - 1) / kBc : j_first;
  const int n_tiles = j_last - j_first;  // the same for every warpgroup of the block

  bool timed_out = false;  // a barrier wait gave up (mbar_wait): trap before exiting
  if (tid == 0) bars.init(4 * kC);  // empty barriers: lane 0 of each consumer warp
  __syncthreads();  // the last block-wide barrier: the roles part here

  if (wg_id == 0) {
    // ---- producer -------------------------------------------------------------------------------
    setmaxnreg_dec<Tl::kProducerRegs>();
    if (warp == 0 && lane == 0 && n_tiles > 0) {  // no tile: nothing is loaded, nothing waited for
      mbar_arrive_expect_tx(bars.q_full(), Tl::kQBytes);
#pragma unroll
      for (int p = 0; p < kD / Tl::kQKRow; ++p)  // HBM read: Q_i, once (rows past seqlen_q: zeros)
        tma_load_4d(s_Q + p * (kBr * Tl::kQKRow), &maps.q, bars.q_full(), Tl::kQKRow * p, h, i0, b);
      const int vt_mat = b * static_cast<int>(a.heads_kv) + hk;  // V^T matrix (batch, K/V head)
      auto load_k = [&](int n, int s, uint32_t full) {
#pragma unroll
        for (int p = 0; p < kD / Tl::kQKRow; ++p)  // HBM read: K_j, once per (query block, j)
          tma_load_4d(s_K + s * Tl::kKBytes + p * (kBc * Tl::kQKRow), &maps.k, full, Tl::kQKRow * p, hk,
                      (j_first + n) * kBc, b);
      };
      auto load_v = [&](int n, int s, uint32_t full) {
#pragma unroll
        for (int p = 0; p < kBc / Tl::kVRow; ++p)  // HBM read: V^T_j (the pass's output), once per (query block, j)
          tma_load_3d(s_V + s * Tl::kVBytes + p * (kD * Tl::kVRow), &maps.vt, full,
                      (j_first + n) * kBc + p * Tl::kVRow, 0, vt_mat);
      };
      produce_kv(bars, n_tiles, Tl::kKBytes, Tl::kVBytes, load_k, load_v, timed_out);
    }
    if (timed_out) gave_up_trap();
    return;  // every load issued is waited for by the consumers, so the block outlives it
  }

  // ---- consumers ----------------------------------------------------------------------------------
  setmaxnreg_inc<Tl::kConsumerRegs>();
  const int c = wg_id - 1;  // consumer warpgroup: query rows 64c .. 64c + 63 of the block
  const int wi0 = i0 + 64 * c + 16 * (warp % 4);  // this warp's 16 rows
  int key_lo[2], key_hi[2];  // visible keys of this thread's rows wi0 + lane/4 + 8s (none past seqlen_q)
#pragma unroll
  for (int s = 0; s < 2; ++s) {
    const int i = wi0 + lane / 4 + 8 * s;
    key_lo[s] = i < seqlen_q ? static_cast<int>(mask.key_begin(i)) : 0;
    key_hi[s] = i < seqlen_q ? static_cast<int>(mask.key_end(i)) : 0;
  }
  const uint32_t q_addr = s_Q + 64 * c * Tl::kQKRow;  // this warpgroup's 64 rows, panel 0
  auto k_addr = [&](int n) { return s_K + stage(n) * Tl::kKBytes; };
  auto v_addr = [&](int n) { return s_V + stage(n) * Tl::kVBytes; };
  const int dsi = ds.per_head ? hk : 0;
  const float s_factor = a.scale * ds.q[dsi] * ds.k[dsi];  // S = (Q K^T) scale qd kd
  const float sl2 = s_factor * 1.4426950408889634f;
  const float v_descale = ds.v[dsi];

  float r_O[kD / 2];  // (64, d) per warpgroup, accumulator layout
  float r_S[kBc / 2];
  float r_T0[Tl::kSChunks > 1 ? Tl::kTCols / 2 : 1];  // S's two fresh accumulators (promoted parts; unused: 1)
  float r_T1[Tl::kSChunks > 1 ? Tl::kTCols / 2 : 1];
  uint32_t r_P[kBc / 32][4];  // P in e4m3 as the A operand of O += P V, 32 keys per MMA
#pragma unroll
  for (int x = 0; x < kD / 2; ++x) r_O[x] = 0.f;
#pragma unroll
  for (int x = 0; x < kBc / 2; ++x) r_S[x] = 0.f;
  float m_i[2] = {-INFINITY, -INFINITY}, l_i[2] = {0.f, 0.f};  // rows lane/4 and lane/4 + 8
  float alpha[2];
  auto rescale_o = [&](const float (&al)[2]) {
#pragma unroll
    for (int x = 0; x < kD / 2; ++x) r_O[x] *= al[(x % 4) / 2];
  };
  const PingPong<kC> slot{c};  // v08's ping-pong of the consumers' issue slots

  if (n_tiles > 0) {
    slot.begin();  // consumer 0 issues first
    mbar_wait(bars.q_full(), 0, timed_out);
    // Tile 0: S_0 alone (O is still 0), masked. The empty group after S makes compute_s's wait<1>
    // wait for S.
    mbar_wait(bars.k_full(0), 0, timed_out);
    slot.wait();
    compute_s_pipelined<Tl>(r_S, r_T0, r_T1, q_addr, k_addr(0), [&] {
      wg::commit();
      slot.pass();
    });
    mbar_arrive_lane0(bars.k_empty(0), lane);  // K_0 read by this warp's share of the wgmma
    mask_tile<kBc>(r_S, key_lo, key_hi, j_first * kBc, lane);
    (void)softmax_tile<kBc, Tl::kLazy>(r_S, m_i, l_i, alpha, sl2);
    pack_p<kBc>(r_S, r_P);
    // Step n: S_n (with its promoted parts) and O += P_{n-1} V_{n-1} issued in one slot, S_n waited
    // for, its softmax while P V runs, then P V waited for and O rescaled.
    auto step = [&](int n, auto masked) {
      mbar_wait(bars.k_full(stage(n)), parity(n), timed_out);
      mbar_wait(bars.v_full(stage(n - 1)), parity(n - 1), timed_out);
      slot.wait();
      compute_s_pipelined<Tl>(r_S, r_T0, r_T1, q_addr, k_addr(n), [&] {
        issue_pv<Tl>(r_O, r_P, v_addr(n - 1));
        wg::commit();
        slot.pass();
      });
      mbar_arrive_lane0(bars.k_empty(stage(n)), lane);
      if constexpr (decltype(masked)::value) mask_tile<kBc>(r_S, key_lo, key_hi, (j_first + n) * kBc, lane);
      const bool rescale = softmax_tile<kBc, Tl::kLazy>(r_S, m_i, l_i, alpha, sl2);  // P_n stays fp32 in r_S
      wg::wait_all();
      wg::fence_regs(r_O);
      mbar_arrive_lane0(bars.v_empty(stage(n - 1)), lane);
      if (rescale) rescale_o(alpha);
      pack_p<kBc>(r_S, r_P);  // only now: the P V just waited for read r_P until it completed
    };
    // Tiles [ju0, ju1) are unmasked for every row of the block (v06's split).
    const int ju0 = max(j_first + 1, (static_cast<int>(mask.key_begin(i1 - 1)) + kBc - 1) / kBc);
    const int ju1 = max(ju0, min(j_last, static_cast<int>(mask.key_end(i0)) / kBc));
    for (int j = j_first + 1; j < ju0 && j < j_last; ++j) step(j - j_first, std::true_type{});
    for (int j = ju0; j < ju1; ++j) step(j - j_first, std::false_type{});
    for (int j = max(ju1, j_first + 1); j < j_last; ++j) step(j - j_first, std::true_type{});
    // The last P V.
    mbar_wait(bars.v_full(stage(n_tiles - 1)), parity(n_tiles - 1), timed_out);
    issue_pv<Tl>(r_O, r_P, v_addr(n_tiles - 1));
    wg::commit();
    wg::wait_all();
    wg::fence_regs(r_O);
    mbar_arrive_lane0(bars.v_empty(stage(n_tiles - 1)), lane);
    slot.end();  // the last consumer's last arrival on consumer 0's barrier: taken
  }

  if (timed_out) gave_up_trap();  // a protocol bug: fail the launch rather than write O
  // Epilogue (v09's): O = (P~ V) v_descale / l in the output dtype; LSE = (scale qd kd) m + log l.
  T* g_O = g_O_all + a.q_offset(b, 0, h);
  const int64_t q_stride = a.q_row_stride();
#pragma unroll
  for (int s = 0; s < 2; ++s) l_i[s] = frag::row_allreduce_sum(l_i[s]);
#pragma unroll
  for (int s = 0; s < 2; ++s) {
    const int i = wi0 + lane / 4 + 8 * s;
    if (i >= seqlen_q) continue;
    const float f = l_i[s] > 0.f ? v_descale / l_i[s] : 0.f;
#pragma unroll
    for (int t = 0; t < kD / 8; ++t)  // HBM write: O_i, once
      *reinterpret_cast<uint32_t*>(g_O + i * q_stride + 8 * t + 2 * (lane % 4)) =
          frag::pack2<T>(r_O[4 * t + 2 * s] * f, r_O[4 * t + 2 * s + 1] * f);
    if (lane % 4 == 0) g_LSE[a.lse_offset(b, h, i)] = l_i[s] > 0.f ? m_i[s] * s_factor + logf(l_i[s]) : -INFINITY;
  }
#else
  (void)maps, (void)a, (void)g_O_all, (void)g_LSE, (void)ds;
#endif
}

// Writes 1 when this binary's device code has TMA and wgmma (an sm_90a build), else 0.
__global__ void fp8_warpspec_probe_kernel(int* out) {
#if defined(IOATTN_V10_WS)
  *out = 1;
#else
  *out = 0;
#endif
}

LaunchStatus warpspec_available() {
  static int cached = -1;
  if (cached < 0) {
    int* d_flag = nullptr;
    IOATTN_CHECK(hipMalloc(&d_flag, sizeof(int)));
    IOATTN_CHECK(hipMemset(d_flag, 0, sizeof(int)));
    fp8_warpspec_probe_kernel<<<1, 1>>>(d_flag);
    IOATTN_CHECK_LAUNCH();
    int h_flag = 0;
    IOATTN_CHECK(hipMemcpy(&h_flag, d_flag, sizeof(int), hipMemcpyDeviceToHost));
    IOATTN_CHECK(hipFree(d_flag));
    cached = h_flag;
  }
  if (cached == 0)
    return "v10_fp8_warpspec: this build has no sm_90a device code (TMA, wgmma, setmaxnreg; configure with -DIOATTN_CUDA_ARCH=90a)";
  return std::nullopt;
}

constexpr const char* kWho = "v10_fp8_warpspec";

template <class Tl>
LaunchStatus launch_tile(const AttnProblem& p, const DeviceTensors& t, void* workspace, const Launcher& L) {
  const AttnView a = AttnView::of(p);
  const int64_t q_blocks = (a.seqlen_q + Tl::kBr - 1) / Tl::kBr;
  if (q_blocks > 65535) return "v10_fp8_warpspec: seqlen_q must be <= " + std::to_string(65535 * Tl::kBr);
  const int64_t nk_pad = fp8wg::padded_keys(p);
  if (nk_pad / 64 > 65535) return "v10_fp8_warpspec: seqlen_k must be <= " + std::to_string(65535 * 64);
  if (!L.describes() && (!t.q || !t.k || !t.v || !t.o || !t.lse || !workspace))
    return "v10_fp8_warpspec: null tensor or workspace pointer";
  auto* vt = static_cast<uint8_t*>(workspace);
  V10Maps maps{};
  const auto swz = [](int row_bytes) { return row_bytes == 128 ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_64B; };
  if (auto e = ws::encode_bshd(maps.q, kWho, "Q", t.q, CU_TENSOR_MAP_DATA_TYPE_UINT8, 1, a.batch, a.seqlen_q,
                               a.heads_q, a.head_dim, Tl::kQKRow, Tl::kBr, swz(Tl::kQKRow)))
    return e;
  if (auto e = ws::encode_bshd(maps.k, kWho, "K", t.k, CU_TENSOR_MAP_DATA_TYPE_UINT8, 1, a.batch, a.seqlen_k,
                               a.heads_kv, a.head_dim, Tl::kQKRow, Tl::kBc, swz(Tl::kQKRow)))
    return e;
  {  // V^T in the workspace: (batch x K/V head) matrices of d rows x nk_pad keys, keys innermost
    const cuuint64_t dims[3] = {static_cast<cuuint64_t>(nk_pad), static_cast<cuuint64_t>(a.head_dim),
                                static_cast<cuuint64_t>(a.batch * a.heads_kv)};
    const cuuint64_t strides[2] = {static_cast<cuuint64_t>(nk_pad), static_cast<cuuint64_t>(a.head_dim * nk_pad)};
    const cuuint32_t box[3] = {static_cast<cuuint32_t>(Tl::kVRow), static_cast<cuuint32_t>(Tl::kD), 1};
    if (auto e = ws::encode_tiled(maps.vt, kWho, "V^T (workspace)", vt, CU_TENSOR_MAP_DATA_TYPE_UINT8, 3, dims,
                                  strides, box, swz(Tl::kVRow)))
      return e;
  }
  // Pass 1: V -> V^T (keys renumbered per 32-key group), the workspace (v09's pass).
  const dim3 tgrid(static_cast<unsigned>(a.batch * a.heads_kv), static_cast<unsigned>(nk_pad / 64),
                   static_cast<unsigned>(a.head_dim / 64));
  if (auto e = L.aux(&fp8wg::transpose_v_kernel, tgrid, 256, 0, a, static_cast<const uint8_t*>(t.v), vt, nk_pad))
    return e;
  const dim3 grid(static_cast<unsigned>(a.batch * a.heads_q), static_cast<unsigned>(q_blocks));
  const MainKernel main{.br = Tl::kBr, .bc = Tl::kBc, .stages = Tl::kStages, .splits = 0,
                        .grid_order = "qblock_major_rev"};
  const Fp8Descales ds = fp8wg::descales_of(p);
  auto go = [&]<class T>() {
    return L.main(main, &fp8_warpspec_kernel<T, Tl>, grid, Tl::kThreads, Tl::kSmemBytes, maps, a,
                  static_cast<T*>(t.o), t.lse, ds);
  };
  return p.fp8.out == DType::fp16 ? go.template operator()<fp16_t>() : go.template operator()<bf16_t>();
}

struct Config {
  int d, br, bc;
  int promote;  // k32 slices per fresh S accumulator (d / 32: none, "fast")
  bool eager;   // eager rescaling (IOATTN_V10_RESCALE=eager)
  const char* name;
  LaunchStatus (*launch)(const AttnProblem&, const DeviceTensors&, void*, const Launcher&);
};
#define V10_CONFIG(d, br, bc, st, pr, tc)                                                     \
  Config{d, br, bc, pr, false, "d" #d "_br" #br "_bc" #bc "_s" #st "_p" #pr, \
         &launch_tile<V10Tile<d, br, bc, st, pr, tc>>}
#define V10_CONFIG_EAGER(d, br, bc, st, pr, tc)                                               \
  Config{d, br, bc, pr, true, "d" #d "_br" #br "_bc" #bc "_s" #st "_p" #pr "_eager", \
         &launch_tile<V10Tile<d, br, bc, st, pr, tc, true>>}
// Per head dim the first row of a (Br, Bc) tile and promotion interval is what --br/--bc and
// IOATTN_V10_S_PROMOTE select; the first row of a head dim with promotion 1 is the default. Not tuned
// (no GPU run yet). Registers: the header.
const Config kConfigs[] = {
    // d 64 (2 k32 slices: promotion 1, or 2 = fast)
    V10_CONFIG(64, 128, 128, 3, 1, 128),
    V10_CONFIG(64, 128, 128, 3, 2, 128),
    V10_CONFIG(64, 128, 256, 2, 2, 256),  // fast only: promoted, S + r_T spill (1,896 bytes)
    V10_CONFIG(64, 192, 128, 2, 2, 128),  // fast only: promoted at 160 registers spills (372 bytes)
    // d 128 (4 k32 slices: 1, 2, or 4 = fast); Bc 256 spills at every interval (344-1,468 bytes)
    V10_CONFIG(128, 128, 128, 3, 1, 64),
    V10_CONFIG(128, 128, 128, 3, 2, 64),
    V10_CONFIG(128, 128, 128, 3, 4, 128),
    // d 256 (8 k32 slices: 1, 4, or 8 = fast); Bc 128 spills at every interval (20-412 bytes)
    V10_CONFIG(256, 128, 64, 3, 1, 32),
    V10_CONFIG(256, 128, 64, 3, 4, 32),
    V10_CONFIG(256, 128, 64, 3, 8, 64),
    // Eager rescaling (the default for these tiles at promotion 1; IOATTN_V10_RESCALE=lazy selects
    // the rows above): the fix for the O failures at logits of std 100 (header).
    V10_CONFIG_EAGER(64, 128, 128, 3, 1, 128),
    V10_CONFIG_EAGER(128, 128, 128, 3, 1, 64),
    V10_CONFIG_EAGER(256, 128, 64, 3, 1, 32),
};
#undef V10_CONFIG
#undef V10_CONFIG_EAGER

int requested_promote(int64_t d) { return fp8wg::requested_promote("IOATTN_V10_S_PROMOTE", d); }
// The configuration for (d, --br, --bc, promotion interval; 0 = the default interval 1; rescaling).
const Config* find_config(int64_t d, int br, int bc, int promote, bool eager) {
  const int want = promote == 0 ? 1 : promote;
  for (const Config& c : kConfigs)
    if (c.d == d && (br == 0 || br == c.br) && (bc == 0 || bc == c.bc) && c.promote == want && c.eager == eager)
      return &c;
  return nullptr;
}
// Eager unless IOATTN_V10_RESCALE=lazy, or unset where (--br x --bc, interval) has no eager
// configuration.
int requested_eager(int64_t d, int br, int bc) {
  const int promote = requested_promote(d);
  return fp8wg::requested_eager("IOATTN_V10_RESCALE", promote >= 0 && find_config(d, br, bc, promote, true) != nullptr);
}
std::string choices(int64_t d) {
  std::string s;
  for (const Config& c : kConfigs)
    if (c.d == d) s += (s.empty() ? "" : ", ") + std::to_string(c.br) + "x" + std::to_string(c.bc) + " promote " +
                       (c.promote == d / 32 ? std::string("fast") : std::to_string(c.promote)) +
                       (c.eager ? " eager" : "");
  return s;
}
#endif  // IOATTN_PLATFORM_NVIDIA

}  // namespace

LaunchStatus v10_fp8_warpspec_supports(const AttnProblem& p, const KernelOptions& opt) {
  if (auto e = p.validate()) return e;
#if defined(IOATTN_PLATFORM_NVIDIA)
  if (const char* off = std::getenv("IOATTN_V10_DISABLE"); off && off[0] != '\0' && off[0] != '0')
    return "v10_fp8_warpspec: disabled by IOATTN_V10_DISABLE (the header's hang guard)";
  if (p.dtype != DType::fp8_e4m3) return "v10_fp8_warpspec: dtype must be fp8_e4m3";
  if (p.head_dim != 64 && p.head_dim != 128 && p.head_dim != 256)
    return "v10_fp8_warpspec: head_dim must be 64, 128 or 256 (wgmma N of O += P V is d)";
  if (opt.splits) return "v10_fp8_warpspec takes no split-KV (--splits)";
  const int eager = requested_eager(p.head_dim, opt.br, opt.bc);
  if (eager < 0)
    return "v10_fp8_warpspec: IOATTN_V10_RESCALE must be lazy or eager (unset = eager where compiled, else lazy)";
  const int promote = requested_promote(p.head_dim);
  if (promote < 0 || !find_config(p.head_dim, opt.br, opt.bc, promote, eager == 1))
    return "v10_fp8_warpspec: for head_dim " + std::to_string(p.head_dim) +
           " (--br x --bc, IOATTN_V10_S_PROMOTE, IOATTN_V10_RESCALE) must be one of " + choices(p.head_dim) +
           " (--br/--bc 0 = any; IOATTN_V10_S_PROMOTE unset = 1; IOATTN_V10_RESCALE unset = eager where compiled)";
  const bool per_head = p.fp8.q_descale.size() > 1 || p.fp8.k_descale.size() > 1 || p.fp8.v_descale.size() > 1;
  if (per_head && p.heads_kv > fp8wg::kMaxDescaleHeads)
    return "v10_fp8_warpspec: per-K/V-head descales need heads_kv <= " + std::to_string(fp8wg::kMaxDescaleHeads);
  if (auto e = warpspec_available()) return e;
  return std::nullopt;
#else
  (void)opt;
  return "v10_fp8_warpspec needs NVIDIA Hopper (TMA, wgmma e4m3); no AMD FP8 path is written";
#endif
}

std::size_t v10_fp8_warpspec_workspace_bytes(const AttnProblem& p, const KernelOptions&) {
#if defined(IOATTN_PLATFORM_NVIDIA)
  if (p.validate() || p.dtype != DType::fp8_e4m3) return 0;
  return static_cast<std::size_t>(p.batch * p.heads_kv * p.head_dim * fp8wg::padded_keys(p));  // V^T, 1 byte each
#else
  (void)p;
  return 0;
#endif
}

namespace {
LaunchStatus run(const AttnProblem& p, const DeviceTensors& t, const KernelOptions& opt, void* workspace,
                 const Launcher& L) {
  if (auto e = v10_fp8_warpspec_supports(p, opt)) return e;
#if defined(IOATTN_PLATFORM_NVIDIA)
  return find_config(p.head_dim, opt.br, opt.bc, requested_promote(p.head_dim), requested_eager(p.head_dim, opt.br, opt.bc) == 1)
      ->launch(p, t, workspace, L);
#else
  (void)t, (void)workspace, (void)L;
  return "v10_fp8_warpspec needs NVIDIA Hopper (TMA, wgmma e4m3)";
#endif
}
}  // namespace

LaunchStatus v10_fp8_warpspec_launch(const AttnProblem& p, const DeviceTensors& t, const KernelOptions& opt,
                                     void* workspace, void* stream) {
  return run(p, t, opt, workspace, Launcher::enqueue(stream));
}

LaunchStatus v10_fp8_warpspec_config(const AttnProblem& p, const KernelOptions& opt, LaunchConfig& out) {
  return describe_launch(out, [&](const Launcher& L) { return run(p, {}, opt, nullptr, L); });
}

}  // namespace ioattn::kernels

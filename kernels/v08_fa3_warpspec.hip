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
// (fwd_wg::issue_qk / issue_pv generalized to S and O as wgmma N = 128 + 64 (+ 48) chunks: Bc 192 and
// 112, d 192);
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
// SM. Shared memory: Q (Br, kDp) x 2 buffers (1 at d 256; "Persistent grid" below) + 2 kStages (Bc,
// kDp) + barriers. Per consumer thread: O kDp/2 + S Bc/2 fp32 registers + P Bc/4. kConfigs below
// lists every configuration; the default per class (the first row): d 64: Br 192, Bc 128, 2 stages
// (115,816 bytes; FA3's d-64 tile: three consumers of 160 registers, O + S + P = 128 of them); d 96:
// Br 128, Bc 128, 2 stages (197,736 bytes); d 128: Br 128, Bc 128, 2 stages, ping-pong off (197,736;
// off was at or above on at 23 of 24 points, 2026-12-02_09e330d_pingpong; --bc 176, FA3's non-causal
// d-128 tile, 214,104 with one Q buffer, O + S + P = 196 of 240 registers, slower at every N); d 192:
// Br 128, Bc 64, 2 stages (197,736) below 8k keys, from 8k keys on Bc 112 (FA3's d-192 tile, 222,296
// with one Q buffer and O stored from registers; with S as one wgmma of N 112 it is ahead at N >= 8k
// and behind at short N, where the second Q buffer and the TMA store of O pay); Bc 128 exceeds shared
// memory); d 256: Br 128, Bc 64, 2 stages, the softmax pinned under P V (kPinSoftmax; 197,720).
// (Until session 12 v08 had one Q buffer: 91,208 / 164,936 / 164,936 / 148,552 / 197,704 bytes.)
// Br 64 (--br 64 at d 64 with Bc 128 and at d 128 with Bc 64; session 14; correct, and slower than the
// defaults at every N 512-4k, 1.04-1.22x their time: 2026-12-02_a6cd4b4_br64): one consumer
// warpgroup of 232 registers, no ping-pong, and two CTAs per SM (256 threads, __launch_bounds__(256,
// 2), at most 228 KiB / 2 - 1 KiB of shared memory each; the persistent grid is two CTAs per SM).
// The idea, FA2's: at short N a tile's fixed work (Q wait, the first key tile's S without overlap,
// the epilogue) runs under the other CTA's loop instead of idling the tensor cores; the price is K/V
// loaded into shared memory once per 64 query rows instead of 128 or 192, which the run says costs
// more than the overlap gains.
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
// Not done: a TMA store of O, P through shared memory (what lets FA3 take Bc 192 at d 64 beside 160
// registers), varlen/paged layouts (refused by the registry).
// Run: ioattn run --kernel v08_fa3_warpspec --seqlen 4096 --heads 16 --head-dim 128 --dtype bf16 --check
//
// Persistent grid (registry variant v08p_fa3_persistent, every configuration of kConfigs). One
// kernel, two grids: fa3_warpspec_kernel below loops over work tiles (b, h, query block) of
// kernels/tile_scheduler.hpp's order and runs the per-tile pipeline above for each; v08 and v08p
// launch the same instance per tile (launch_tile's kPersistent is host code only). v08: one CTA per
// work tile in heavy-first order (each CTA's loop runs once), every consumer over the block's key
// tiles (v08's rule). v08p: as follows. (Until session 12 v08 had a kernel of its own, which this
// one repeated statement for statement; why one instance and not two: kernels/dev/NOTES.md, the
// fold.) What changes with the persistent grid:
//   the grid is one block per SM (fewer when there are fewer work tiles; IOATTN_V08P_CTAS=N caps it,
//   for tests); block c walks the work tiles c, c + grid, ... of kernels/tile_scheduler.hpp's static
//   order: under a causal mask or window, heavy query blocks first (the round robin then gives no
//   block more than one tile's cost above another; the serpentine assignment, the default, reverses
//   every other round, which cancels CTA 0's per-round surplus and keeps the CTAs on neighbouring
//   query blocks, so the heads' K/V stay in L2; IOATTN_V08P_ORDER=rr for the plain round robin), or
//   head major with each head's query blocks heavy first where that balances within 3 % and the
//   tile has 128 rows (short N: heavy first walks every head's K/V between two query blocks of one
//   head; chosen per launch, IOATTN_V08P_ORDER=auto, heavy or head), head major otherwise (a head's query blocks
//   side by side, the query heads of a GQA group consecutive: K_j, V_j read from HBM about once
//   per (b, h_kv) while they stay in L2). Static, not an atomic counter: the header there says why.
//   The mbarriers are initialized once; the K/V rings, and a Q ring of its own, run on across work
//   tiles (ring tile kv0 + n: kv0 counts the block's earlier key tiles; Q load qn), so no phase is
//   reset. Q has a "full" and an "empty" barrier per buffer (the 4 kC consumer warps arrive once
//   every S = Q K^T of the tile has completed) and two buffers where shared memory allows (every
//   configuration but d 256: the next tile's Q loads during this tile's loop; d 256 keeps one: its Q
//   loads once this tile's last S = Q K^T has completed). Q and K/V have their own producer threads
//   (lane 0 of warp 1 issues Q, lane 0 of warp 0 K and V: neither waits behind the other's ring,
//   and each loop fits the producer's 24 registers; one thread for all three spilled at d 256).
//   The producer threads run ahead into the
//   next tile as soon as buffers free, so the next tile's Q, K_0, K_1, V_0 load while the consumers
//   run this tile's last softmax, last P V and epilogue. The epilogue (two Q buffers: V08Tile's
//   kTmaEpilogue) writes O / l into the consumer's 64 rows of its tile's Q buffer, which no S = Q K^T
//   reads any more, and one thread per consumer stores them by TMA; the Q buffer's empty barrier
//   (one arrival per consumer) completes once those stores have read it, so the next-but-one tile's
//   Q cannot overwrite O before it left (why: the register stores before it filled half of each
//   32-byte sector, 2026-12-02_a109f05_ncu_shortn). With one Q buffer (d 256), and for tiles without
//   key tiles (which own no Q buffer), O and LSE go from registers to global memory. The ping-pong's
//   round robin also runs on across tiles (each consumer issues n_tiles times per tile): the last
//   consumer's up-front arrival happens once per block, consumer 0's closing wait once at its end.
//   Per consumer, not per block (v08 computes every key tile of the block for all its rows): each
//   consumer runs S, softmax and P V only over the key tiles its own 64 rows see (key_tiles of its
//   rows, a sub-range of the block's) and passes the others idle: it waits for their buffers to
//   fill, releases them and takes and hands on its issue slot, so the rings and the round robin
//   keep their counts. What it saves: the last query block of a head at Br 192 has a consumer
//   with no rows when N is a multiple of 128 but not of 192 (N 512: 1 of a head's 9 consumer
//   rows of 64; N 1k: 2 of 18), and under a causal mask the diagonal's key tiles past a
//   consumer's last row (Br 192, or Bc 64 at d 192 / 256); its unmasked range is its own rows',
//   so fewer tiles run the mask. HBM traffic is unchanged (the block's K/V tiles still load once).
//   IOATTN_V08P_ROWS=block runs the block's rows for every consumer (v08's rule), for comparison.
//   Invariants (what keeps the protocol sound across tiles): (1) every thread walks the same tiles
//   and computes the same (rows, j_first, n_tiles) for each; tiles with n_tiles = 0 are skipped by
//   the producer threads and the consumers alike (no load, no wait; O = 0, LSE = -inf). (2) ring
//   tile r = kv0 + n is the same number in the K/V thread and every consumer warp (each adds
//   n_tiles per tile); the consumer waits for parity (r / kStages) & 1 of buffer r % kStages's full
//   barrier; the producer refills that buffer only once its empty barrier completed the previous
//   phase (all 4 kC consumer warps released ring tile r - kStages), so no full barrier runs a phase
//   ahead of the slowest consumer and one parity bit names the phase. (3) the Q ring likewise with
//   qn (Q loads of tiles with key tiles), released after the tile's last S = Q K^T (with the TMA
//   epilogue: after its O stores have read the buffer). (4) per tile
//   each consumer issues n_tiles times, in round robin from consumer 0 to consumer kC - 1, whose last
//   pass goes to consumer 0: the slot is at consumer 0 at every tile's start. (5) shared memory is
//   written by TMA into buffers whose empty barrier completed, and by the TMA epilogue into its own
//   rows of its tile's Q buffer, which stays unreleased (no producer writes it) until the stores read it.
//   Shared memory: the figures of "Tiling" above (static_assert below).
//   HBM traffic: the same formula as above (each work tile loads what a block did); what changes is
//   how much of K/V is served by L2 (the order) and the launch/prologue/epilogue gaps between tiles.
//   The simulator models the order (the launch reports persistent_bh_major / persistent_qblock_major_rev
//   / persistent_bh_major_rev, read as bh_major / qblock_major_rev / bh_major: the same waves; the
//   reversal within a head is not modeled), not the overlap across tiles.
//   Registers (ptxas -v, CUDA 13.0, sm_90a, all 29 rows x fp16/bf16): 168 (Br 128) / 128 (Br 192, Br 64)
//   at launch, 24 / 240 or 24 / 160 after setmaxnreg, no wgmma serialization, 0 bytes of spills in
//   every row (at b7896cf the d 256 row without ping-pong, IOATTN_V08_CONFIG-only, spilled 4 bytes of
//   stores, 0 in the listings since c0b3257's; before the TMA epilogue d 64 Br 192 without ping-pong
//   spilled too). (A trap inside the tile loop serialized the wgmma of every Br 128 row; one producer
//   thread for Q, K and V spilled at d 256: hence the trap after the loop and two producer threads;
//   the serpentine map with a division by the grid size per tile walk and 64-bit clipping spilled
//   8-40 bytes in every row: the loops count rounds instead, tile_scheduler.hpp's position(k, c).)
//   Measured on the H200: kernels/README.md (v08p's row) and README.md's fast_headline.
// Run: ioattn run --kernel v08p_fa3_persistent --seqlen 1024 --batch 16 --heads 16 --head-dim 128 --dtype bf16 --check
//
// Supports: fp16, bf16; d a multiple of 8, <= 256; any Nq, Nk; causal (bottom-right), windows,
// GQA/MQA; LSE out; fully masked rows give O = 0, LSE = -inf. Needs sm_90a device code
// (kernels/CMakeLists.txt adds -gencode=arch=compute_90a,code=sm_90a for this file); supports() asks
// the device once (a one-thread probe kernel) and refuses with that message otherwise. Tensors must
// be 16-byte aligned (TMA); cuTensorMapEncodeTiled's refusal is returned as one line. AMD: refused
// (no wgmma, no TMA; v05 is the AMD path).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <map>
#include <mutex>
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
#include "kernels/tile_scheduler.hpp"
#include "kernels/ws_pipeline.hpp"

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

template <int kD_, int kBr_, int kBc_, int kStages_, bool kPingPong_, bool kPinSoftmax_ = false>
struct V08Tile {
  static constexpr int kD = kD_;                  // Q K^T depth (the head-dim class)
  static constexpr int kDp = (kD_ + 63) / 64 * 64;  // shared tile / O width: whole 64-column panels
  static constexpr int kBr = kBr_;                // kConsumers consumer warpgroups of 64 rows
  static constexpr int kConsumers = kBr_ / 64;
  static constexpr int kBc = kBc_;
  static constexpr int kStages = kStages_;
  static constexpr bool kPingPong = kPingPong_;
  // The softmax pinned under P V (the step's arrival on pin_bar): faster at d 256 and Bc 176, slower
  // at d 128 Bc 128 (2026-12-02_5d4f0d2_pin_ab); rows named ..._pin.
  static constexpr bool kPinSoftmax = kPinSoftmax_;
  static constexpr int kThreads = 128 * (1 + kConsumers);  // producer warpgroup + consumers
  // Br 64 (one consumer warpgroup): two CTAs per SM, so that one CTA's prologue, first key tile and
  // epilogue run under the other's loop (the short-N option; compiled, not yet run on a GPU).
  static constexpr int kCtasPerSm = kBr_ == 64 ? 2 : 1;
  // Registers at launch (__launch_bounds__(kThreads, kCtasPerSm)): 65536 / (kThreads kCtasPerSm)
  // rounded down to 8 (384 threads: 168, 512: 128, 256 x 2: 128); setmaxnreg moves them from the
  // producer to the consumers.
  static constexpr int kLaunchRegs = 65536 / (kThreads * kCtasPerSm) / 8 * 8;
  static constexpr int kProducerRegs = 24, kConsumerRegs = kConsumers == 1 ? 232 : kConsumers == 2 ? 240 : 160;
  // Shared memory one CTA may take: the opt-in maximum, or at two CTAs per SM half of the SM's
  // 228 KiB less the 1 KiB the hardware reserves per CTA.
  static constexpr int kSmemBudget = kCtasPerSm == 1 ? kMaxSharedBytes : 228 * 1024 / kCtasPerSm - 1024;
  static constexpr int kQBytes = kBr_ * kDp * 2;
  static constexpr int kKVBytes = kBc_ * kDp * 2;
  static constexpr int kRingBytes = 1024 /* alignment slack */ + 2 * kStages_ * kKVBytes;
  // Barriers with q Q buffers: Q full and Q empty per Q buffer; K full/empty, V full/empty per stage;
  // the softmax pin (below).
  static constexpr int barriers(int q) { return 2 * q + 4 * kStages_ + 1; }
  // Q buffers: 2 where they fit (on v08p's persistent grid the next tile's Q loads during this
  // tile's loop), else 1 (d 256: the next tile's Q loads once this tile's last S = Q K^T has
  // completed). The same for v08, whose CTAs run one tile: one kernel, one instance per tile for both.
  static constexpr int kQStages = kRingBytes + 2 * kQBytes + 8 * barriers(2) <= kSmemBudget ? 2 : 1;
  static constexpr int kBarriers = barriers(kQStages);
  static constexpr int kSmemBytes = kRingBytes + kQStages * kQBytes + 8 * kBarriers;
  // With two Q buffers O leaves through shared memory by TMA stores (the epilogue writes O / l into
  // its tile's Q buffer, whose S = Q K^T are all done, and one thread per consumer stores the
  // 64-row boxes; the buffer is released once the stores have read it). With one Q buffer (d 256)
  // that release would hold the next tile's Q load until this tile's end, so O goes from registers
  // to global memory.
  static constexpr bool kTmaEpilogue = kQStages == 2;
  static_assert(kD_ == 64 || kD_ == 96 || kD_ == 128 || kD_ == 192 || kD_ == 256, "head-dim classes: 64, 96, 128, 192, 256");
  static_assert(kBr_ == 64 || kBr_ == 128 || kBr_ == 192, "Br: one, two or three consumer warpgroups of 64 rows");
  static_assert(!(kPingPong_ && kBr_ == 64), "ping-pong needs two or more consumer warpgroups");
  static_assert(kBc_ == 64 || kBc_ == 112 || kBc_ == 128 || kBc_ == 176 || kBc_ == 192,
                "Bc: S = Q K^T as one wgmma of N = Bc (wg::wgmma_ss); a TMA box has <= 256 rows");
  static_assert(kStages_ >= 2, "each ring needs at least two buffers");
  static_assert(kSmemBytes <= kSmemBudget, "tiles exceed the platform's shared memory per block (per CTA at Br 64)");
  // What the producer gives back must cover what the consumers take (setmaxnreg.inc blocks until
  // the registers are free).
  static_assert(128 * kProducerRegs + 128 * kConsumers * kConsumerRegs <= kThreads * kLaunchRegs,
                "setmaxnreg targets exceed the block's registers");
};

static_assert(V08Tile<128, 128, 128, 2, true>::kSmemBytes == 197736 && V08Tile<96, 128, 128, 2, true>::kSmemBytes == 197736 &&
                  V08Tile<64, 192, 128, 2, true>::kSmemBytes == 115816 &&
                  V08Tile<192, 128, 64, 2, true>::kSmemBytes == 197736 &&
                  V08Tile<128, 128, 176, 2, false>::kQStages == 1 && V08Tile<128, 128, 176, 2, false>::kSmemBytes == 214104 &&
                  V08Tile<192, 128, 112, 2, true>::kQStages == 1 && V08Tile<192, 128, 112, 2, true>::kSmemBytes == 222296 &&
                  V08Tile<256, 128, 64, 2, true>::kQStages == 1 && V08Tile<256, 128, 64, 2, true>::kSmemBytes == 197720,
              "the header's shared-memory figures");

// The three tensor maps, passed as one __grid_constant__ kernel parameter (TMA reads them from the
// parameter space; CUtensorMap is 128-byte aligned).
struct V08Maps {
  CUtensorMap q, k, v;
  CUtensorMap o;  // v08p's TMA store of O (Q's box and swizzle); unset for v08
};

#if defined(IOATTN_V08_WS)
using fwd_wg::mask_tile;
using fwd_wg::pack_p;
using fwd_wg::softmax_tile;

// S = Q K^T for one tile, issued (the caller commits and waits): kD / 16 MMAs of k = 16 (the kk-th
// 16-column slice of a swizzled row starts 32 kk bytes into its 64-column panel), each one wgmma of
// N = Bc (K rows 0 .. Bc - 1 of each K panel; since session 14: Bc 112 / 176 / 192 were N = 64 + 48,
// 128 + 48, 128 + 64 chunks, each chunk re-reading Q's 64 x 16 slice from shared memory).
// fwd_wg::issue_qk's generalization to d 96/192 and Bc > 128.
template <class T, class Tl>
__device__ __forceinline__ void issue_qk_ws(float (&r_S)[Tl::kBc / 2], uint32_t q_addr, uint32_t k_addr) {
  wg::fence_regs(r_S);
  wg::fence();
#pragma unroll
  for (int kk = 0; kk < Tl::kD / 16; ++kk) {
    const uint64_t dq = wg::desc(q_addr + (kk / 4) * (Tl::kBr * 128) + (kk % 4) * 32, 16, 1024);
    const uint32_t k_kk = k_addr + (kk / 4) * (Tl::kBc * 128) + (kk % 4) * 32;
    wg::wgmma_ss<T, Tl::kBc>(r_S, dq, wg::desc(k_kk, 16, 1024), kk > 0);
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

// The mbarrier, TMA, named-barrier and setmaxnreg helpers are shared with v10: kernels/ws_pipeline.hpp.
using namespace ws;
#endif  // IOATTN_V08_WS

// Named barrier ids of the ping-pong (0 is __syncthreads): consumer c waits on kSchedBar + c.
using ws::kSchedBar;

#if defined(IOATTN_V08_WS)
// x, through a register move the compiler cannot see through: what is computed from it is computed
// again rather than kept live from an earlier computation of the same expression.
__device__ __forceinline__ int opaque(int x) {
  int y;
  asm volatile("mov.b32 %0, %1;\n" : "=r"(y) : "r"(x));
  return y;
}
#endif

// The kernel of both variants (header: "One kernel, two grids"): work tiles of the scheduler's
// order, v08's per-tile pipeline inside the loop over them. v08 launches one CTA per work tile
// (its loop runs once), v08p one per SM.
template <class T, class Tl>
__global__ void __launch_bounds__(Tl::kThreads, Tl::kCtasPerSm)
    fa3_warpspec_kernel(const __grid_constant__ V08Maps maps, AttnView a, T* __restrict__ g_O_all,
                        float* __restrict__ g_LSE, uint32_t v_lbo, uint32_t v_sbo, TileScheduler sched, int n_work,
                        int own_rows) {
#if defined(IOATTN_V08_WS)
  constexpr int kDp = Tl::kDp, kBr = Tl::kBr, kBc = Tl::kBc, kStages = Tl::kStages, kC = Tl::kConsumers;
  constexpr int kQStages = Tl::kQStages;

  extern __shared__ unsigned char smem_raw[];
  // The swizzle pattern repeats every 8 rows x 128 bytes (TMA and wgmma agree on it when the tile
  // starts 1024-byte aligned).
  const uint32_t raw_addr = frag::smem_addr(smem_raw);
  unsigned char* s_base = smem_raw + ((1024 - raw_addr % 1024) % 1024);
  const uint32_t s_Q = frag::smem_addr(s_base);            // kQStages x (Br, kDp): kDp/64 panels of Br rows x 128 B
  const uint32_t s_K = s_Q + kQStages * Tl::kQBytes;       // kStages x (Bc, kDp), same layout
  const uint32_t s_V = s_K + kStages * Tl::kKVBytes;       // kStages x (Bc, kDp)
  const uint32_t s_bar = s_V + kStages * Tl::kKVBytes;     // kBarriers x 8 bytes
  auto q_full = [&](int s) { return s_bar + 8 * s; };
  auto k_full = [&](int s) { return s_bar + 8 * (kQStages + s); };
  auto k_empty = [&](int s) { return s_bar + 8 * (kQStages + kStages + s); };
  auto v_full = [&](int s) { return s_bar + 8 * (kQStages + 2 * kStages + s); };
  auto v_empty = [&](int s) { return s_bar + 8 * (kQStages + 3 * kStages + s); };
  auto q_empty = [&](int s) { return s_bar + 8 * (kQStages + 4 * kStages + s); };
  // Nobody waits on it: each step's arrival there depends on the softmax's row sums, which pins the
  // softmax before the P V wait in SASS (step below).
  const uint32_t pin_bar = s_bar + 8 * (2 * kQStages + 4 * kStages);

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, wg_id = tid / 128;
  const int seqlen_q = static_cast<int>(a.seqlen_q);
  const MaskSpec& mask = a.mask;
  // Work tiles (b, h, query block): CTA blockIdx.x takes, in round k = 0, 1, ..., the slot
  // t = blockIdx.x + k * gridDim.x of the scheduler's order (kernels/tile_scheduler.hpp) while
  // t < n_work. Every thread walks the same sequence; nothing about it is shared. The loops count
  // rounds (the serpentine position needs k, and k from t would be a division per walk). The
  // scheduler and n_work = sched.tiles() are kernel parameters (constant memory, not registers: the
  // consumers have none to spare).
  const int t_begin = static_cast<int>(blockIdx.x), t_end = n_work, t_step = static_cast<int>(gridDim.x);
  auto in_range = [&](int k) { return t_begin + k * t_step < t_end; };
  auto work_tile = [&](int k) { return sched.tile(k, t_begin); };
  // The rings run on across work tiles (the barriers are initialized once): K/V tile n of a work
  // tile is ring tile kv0 + n, kv0 the key tiles of the block's earlier work tiles; its Q is the
  // qn-th Q load (work tiles without key tiles load nothing and count in neither). Ring tile r sits
  // in buffer r % kStages, filled for the (r / kStages)-th time: its full barrier completes phase
  // r / kStages, whose parity is waited for.
  int kv0 = 0, qn = 0;
  auto stage = [&](int n) { return (kv0 + n) % kStages; };
  auto parity = [&](int n) { return static_cast<uint32_t>(((kv0 + n) / kStages) & 1); };
  auto q_stage = [&] { return qn % kQStages; };
  auto q_parity = [&] { return static_cast<uint32_t>((qn / kQStages) & 1); };

  bool timed_out = false;  // a barrier wait gave up (mbar_wait): trap before exiting
  if (tid == 0) {
    for (int s = 0; s < kQStages; ++s) mbar_init(q_full(s), 1);
    for (int s = 0; s < kStages; ++s) {
      mbar_init(k_full(s), 1);   // the producer's arrive.expect_tx; the TMA bytes complete it
      mbar_init(v_full(s), 1);
      mbar_init(k_empty(s), 4 * kC);  // lane 0 of each consumer warp
      mbar_init(v_empty(s), 4 * kC);
    }
    // Lane 0 of each consumer warp, after the tile's last S; with the TMA epilogue the storing thread
    // of each consumer, after its stores have read the buffer.
    for (int s = 0; s < kQStages; ++s) mbar_init(q_empty(s), Tl::kTmaEpilogue ? kC : 4 * kC);
    mbar_init(pin_bar, 1);  // every arrival completes a phase
    mbar_init_fence();
  }
  __syncthreads();  // the last block-wide barrier: the roles part here

  if (wg_id == 0) {
    // ---- producer -------------------------------------------------------------------------------
    setmaxnreg_dec<Tl::kProducerRegs>();
    // Lane 0 of warp 0 issues K and V, lane 0 of warp 1 issues Q: neither waits behind the other's
    // barriers (persistent: the next tile's Q waits for its buffer to be released), and each
    // thread's loop state fits the producer's 24 registers (one thread issuing both spilled at d 256).
    const bool kv_thread = warp == 0 && lane == 0;
    const bool q_thread = warp == 1 && lane == 0;
    // The work tile's rows and key tiles (the consumers compute the same).
    auto tile_keys = [&](int k, int& i0, int& j_first) {
      i0 = work_tile(k).q * kBr;
      const KeyTiles kt = key_tiles(mask, i0, min(i0 + kBr, seqlen_q), kBc);
      j_first = static_cast<int>(kt.j_first);
      return static_cast<int>(kt.count());
    };
    if (q_thread) {
      int qn_p = 0;  // this thread's count of Q loads (the consumers' qn)
      for (int k = 0; in_range(k); ++k) {
        int i0, j_first;
        if (tile_keys(k, i0, j_first) == 0) continue;  // no key tile: nothing is loaded, nothing waited for
        const WorkTile w = work_tile(k);
        const int qs = qn_p % kQStages;
        // Q into buffer qs; persistent: once the consumers released its previous tile (the empty
        // barrier's phase ((qn / kQStages) & 1) ^ 1; immediate for the first kQStages loads).
        mbar_wait(q_empty(qs), ((qn_p / kQStages) & 1) ^ 1u, timed_out);
        const uint32_t dst = s_Q + qs * Tl::kQBytes, full = q_full(qs);
        mbar_arrive_expect_tx(full, Tl::kQBytes);
#pragma unroll
        for (int c = 0; c < kC; ++c)  // consumer c's 64 rows, panel p: rows 64c.. of panel p
#pragma unroll
          for (int p = 0; p < kDp / 64; ++p)  // HBM read: Q_i, once
            tma_load_4d(dst + p * (kBr * 128) + c * (64 * 128), &maps.q, full, 64 * p, w.h, i0 + 64 * c, w.b);
        ++qn_p;
      }
    }
    if (kv_thread) {
      for (int k = 0; in_range(k); ++k) {
        int i0, j_first;
        const int n_tiles = tile_keys(k, i0, j_first);
        if (n_tiles == 0) continue;
        const WorkTile w = work_tile(k);
        const int hk = static_cast<int>(a.kv_head_of(w.h));
        // Loads in the order the consumers use them: K_0, then K_{n+1}, V_n for n = 0, 1, ...
        // Before refilling a buffer, wait until the 4 kC consumer warps released its previous tile
        // (ring tile r - kStages: phase parity(n) ^ 1 of the empty barrier; immediate for r < kStages).
        auto load_kv = [&](uint32_t s_ring, uint32_t full, uint32_t empty, const CUtensorMap* map, int n) {
          mbar_wait(empty, parity(n) ^ 1u, timed_out);
          mbar_arrive_expect_tx(full, Tl::kKVBytes);
          const uint32_t dst = s_ring + stage(n) * Tl::kKVBytes;
#pragma unroll
          for (int p = 0; p < kDp / 64; ++p)  // HBM read: K_j / V_j, once per (query block, j)
            tma_load_4d(dst + p * (kBc * 128), map, full, 64 * p, hk, (j_first + n) * kBc, w.b);
        };
        load_kv(s_K, k_full(stage(0)), k_empty(stage(0)), &maps.k, 0);
        for (int n = 0; n < n_tiles; ++n) {
          if (n + 1 < n_tiles) load_kv(s_K, k_full(stage(n + 1)), k_empty(stage(n + 1)), &maps.k, n + 1);
          load_kv(s_V, v_full(stage(n)), v_empty(stage(n)), &maps.v, n);
        }
        kv0 += n_tiles;
      }
    }
    if (timed_out) gave_up_trap();
    return;  // every load issued is waited for by the consumers, so the block outlives it
  }

  // ---- consumers ----------------------------------------------------------------------------------
  setmaxnreg_inc<Tl::kConsumerRegs>();
  const int c = wg_id - 1;  // consumer warpgroup (0 .. kC - 1): query rows 64c .. 64c + 63 of the block
  const int cw = warp % 4;  // warp within it: rows 16 cw .. 16 cw + 15 of those
  auto k_addr = [&](int n) { return s_K + stage(n) * Tl::kKVBytes; };
  auto v_addr = [&](int n) { return s_V + stage(n) * Tl::kKVBytes; };

  float r_O[kDp / 2];  // (64, kDp) per warpgroup: (16, d) per warp in 16x8 atoms, 4 registers each
  float r_S[kBc / 2];
  uint32_t r_P[kBc / 16][4];  // P as the A operand of O += P V, 16 keys per MMA
#pragma unroll
  for (int x = 0; x < kBc / 2; ++x) r_S[x] = 0.f;
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
  // The round robin starts once per block and runs on across work tiles (every consumer issues
  // n_tiles times per work tile, so the slot returns to consumer 0 at each tile's start): the last
  // consumer arrives once up front (consumer 0 goes first), consumer 0 takes its last arrival after
  // the last tile, so both named barriers are idle when the block exits.
  if constexpr (Tl::kPingPong)
    if (c == kC - 1) named_bar_arrive(kSchedBar + 0, 256);

  for (int k = 0; in_range(k); ++k) {
    const int i0 = work_tile(k).q * kBr, i1 = min(i0 + kBr, seqlen_q);
    const KeyTiles kt = key_tiles(mask, i0, i1, kBc);
    const int j_first = static_cast<int>(kt.j_first), n_tiles = static_cast<int>(kt.count());
    const int j_last = j_first + n_tiles;  // the same for every warpgroup of the block
    int key_lo[2], key_hi[2];  // visible keys of this thread's rows i0 + 64c + 16cw + lane/4 + 8s (none past seqlen_q)
#pragma unroll
    for (int s = 0; s < 2; ++s) {
      const int i = i0 + 64 * c + 16 * cw + lane / 4 + 8 * s;
      key_lo[s] = i < seqlen_q ? static_cast<int>(mask.key_begin(i)) : 0;
      key_hi[s] = i < seqlen_q ? static_cast<int>(mask.key_end(i)) : 0;
    }
    const uint32_t q_addr = s_Q + q_stage() * Tl::kQBytes + 64 * c * 128;  // this warpgroup's 64 rows, panel 0
#pragma unroll
    for (int x = 0; x < kDp / 2; ++x) r_O[x] = 0.f;
    float m_i[2] = {-INFINITY, -INFINITY}, l_i[2] = {0.f, 0.f};  // rows lane/4 and lane/4 + 8

    // This consumer's own rows [r0, r1) need only the key tiles [n_lo, n_hi) of the tile's n_tiles
    // (a sub-range: key_begin and key_end grow with the row); it passes the others idle (below).
    // Idle: a consumer whose 64 rows all lie past seqlen_q (the last query block of a head at Br
    // 192: N 512 or 1k), or whose rows see none of a tile's keys (the causal diagonal at Br 192, or
    // at Bc 64 with d 192/256): no S, softmax or P V, where v08 computes them and masks them away.
    // own_rows = 0 (IOATTN_V08P_ROWS=block, for comparison): the block's rows, as v08.
    // c broadcast from lane 0, so that the compiler knows the range is warp-uniform: from c itself
    // (threadIdx) the key-tile range and the loop state left the uniform registers and ptxas spilled
    // 32-36 bytes at d 64 Br 192, 44-76 at d 256; with every c broadcast instead, 4 at d 192/256.
    const int cu = __shfl_sync(0xffffffffu, c, 0);
    const int r0 = own_rows ? min(i0 + 64 * cu, seqlen_q) : i0, r1 = own_rows ? min(i0 + 64 * cu + 64, seqlen_q) : i1;
    int n_lo = 0, n_hi = 0;
    if (r1 > r0) {
      const KeyTiles kc = key_tiles(mask, r0, r1, kBc);
      if (kc.count() > 0) n_lo = static_cast<int>(kc.j_first) - j_first, n_hi = n_lo + static_cast<int>(kc.count());
    }

    if (n_tiles > 0) {
      mbar_wait(q_full(q_stage()), q_parity(), timed_out);
      // An idle pass over key tile n keeps the protocol of a real step: the consumer waits for the
      // tile's buffers to fill (so its release cannot count toward a buffer's previous phase),
      // releases them, and takes and hands on its issue slot (the round robin stays n_tiles turns
      // per consumer and tile).
      auto idle = [&](int n) {
        mbar_wait(k_full(stage(n)), parity(n), timed_out);
        slot_wait();
        slot_pass();
        mbar_arrive_lane0(k_empty(stage(n)), lane);
        mbar_wait(v_full(stage(n)), parity(n), timed_out);
        mbar_arrive_lane0(v_empty(stage(n)), lane);
      };
      for (int n = 0; n < n_lo; ++n) idle(n);
      if (n_hi > n_lo) {
        const int jc_first = j_first + n_lo, jc_last = j_first + n_hi;
        // The first own tile: S alone (O is still 0: nothing to rescale), masked where some row of these
        // does not see all of its keys (its first row's key_end, its last row's key_begin: both grow
        // with the row). A branch, not a second copy: no wgmma is in flight at the mask. (Always masked
        // before: 2 compares and a select per S element of every tile's first key tile.)
        const bool first_masked = jc_first * kBc < static_cast<int>(mask.key_begin(r1 - 1)) ||
                                  (jc_first + 1) * kBc > static_cast<int>(mask.key_end(r0));
        mbar_wait(k_full(stage(n_lo)), parity(n_lo), timed_out);
        slot_wait();
        issue_qk_ws<T, Tl>(r_S, q_addr, k_addr(n_lo));
        wg::commit();
        slot_pass();
        wg::wait_all();
        wg::fence_regs(r_S);
        mbar_arrive_lane0(k_empty(stage(n_lo)), lane);  // K read by this warp's share of the wgmma
        if (first_masked) mask_tile<kBc>(r_S, key_lo, key_hi, jc_first * kBc, lane);
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
          // The softmax under P V: left alone, ptxas sinks most of its exponentials below the wait
          // (Bc 128: 52-59 of 66 MUFU after it; Bc 176: all, no overlap at all; ncu SASS of
          // 2026-12-02_e1d2e20_ncu_spread). An arrival that depends on l_i keeps them above it
          // (kPinSoftmax rows; where it lost, the two consumers' own overlap does better).
          if constexpr (Tl::kPinSoftmax) mbar_arrive_lane0_after(pin_bar, lane, l_i[0], l_i[1]);
          wg::wait_all();
          wg::fence_regs(r_O);
          mbar_arrive_lane0(v_empty(stage(n - 1)), lane);
          if (rescale) rescale_o(alpha);
          pack_p<T, kBc>(r_S, r_P);  // only now: the P V just waited for read r_P until it completed
        };
        // Tiles [ju0, ju1) are unmasked for every row of this consumer (key_begin and key_end grow
        // with i; its own rows, so fewer tiles are masked than for the whole block's).
        const int ju0 = max(jc_first + 1, (static_cast<int>(mask.key_begin(r1 - 1)) + kBc - 1) / kBc);
        const int ju1 = max(ju0, min(jc_last, static_cast<int>(mask.key_end(r0)) / kBc));
        for (int j = jc_first + 1; j < ju0 && j < jc_last; ++j) step(j - j_first, std::true_type{});
        for (int j = ju0; j < ju1; ++j) step(j - j_first, std::false_type{});
        for (int j = max(ju1, jc_first + 1); j < jc_last; ++j) step(j - j_first, std::true_type{});
        // Every S = Q K^T of this consumer has completed: Q's buffer may take the next tile's Q once
        // the other consumers' have too (with the TMA epilogue: once O, written there, has been stored).
        if constexpr (!Tl::kTmaEpilogue) mbar_arrive_lane0(q_empty(q_stage()), lane);
        // The last P V.
        mbar_wait(v_full(stage(n_hi - 1)), parity(n_hi - 1), timed_out);
        issue_pv_ws<T, Tl>(r_O, r_P, v_addr(n_hi - 1), v_lbo, v_sbo);
        wg::commit();
        wg::wait_all();
        wg::fence_regs(r_O);
        mbar_arrive_lane0(v_empty(stage(n_hi - 1)), lane);
      } else if constexpr (!Tl::kTmaEpilogue) {
        mbar_arrive_lane0(q_empty(q_stage()), lane);  // no S of this consumer reads Q
      }
      for (int n = n_hi; n < n_tiles; ++n) idle(n);
    }

    // A protocol bug: fail the launch rather than write O, but only after the last tile (a trap
    // inside the tile loop, which holds the MMA loop, makes ptxas serialize the wgmma); a thread whose
    // wait gave up runs on through the remaining tiles without waiting (so the named barriers still
    // balance) and traps there; the launch fails either way.
    // Epilogue: O / l and LSE = scale m + log l. The tile is decoded again here, from a copy of k the
    // compiler cannot see through, so that b, h and the rows are not held in registers across the MMA
    // loop (persistent: k is the only one).
    const WorkTile we = work_tile(opaque(k));
    const int wi0 = we.q * kBr + 64 * c + 16 * cw;
#pragma unroll
    for (int s = 0; s < 2; ++s) l_i[s] = frag::row_allreduce_sum(l_i[s]);
#pragma unroll
    for (int s = 0; s < 2; ++s) {
      const int i = wi0 + lane / 4 + 8 * s;
      if (i < seqlen_q && lane % 4 == 0)
        g_LSE[a.lse_offset(we.b, we.h, i)] = l_i[s] > 0.f ? m_i[s] * a.scale + logf(l_i[s]) : -INFINITY;
    }
    if (Tl::kTmaEpilogue && n_tiles > 0) {
      // Through shared memory: this consumer's 64 rows of its tile's Q buffer take O / l in Q's own
      // layout (panel p = columns 64p.., row r at 128 r bytes, its 16-byte chunk x at chunk x ^ (r % 8):
      // the 128-byte swizzle of the TMA box), then one thread stores the kDp / 64 boxes through
      // maps.o (Q's box: 64 columns x 64 rows; the unit clips rows past seqlen_q and columns past d).
      // The fragment's 4-byte writes hit 32 distinct banks per instruction (row lane / 4 selects
      // the chunk). Coalescing is the point: the register stores (v08's, and v08p's before) use 16 of
      // each 32-byte sector they write (Nsight Compute, 2026-12-02_a109f05_ncu_shortn); TMA writes
      // whole rows (2026-12-02_b7896cf_ncu_shortn: only the LSE stores are left, 32 of 32 bytes).
      const uint32_t o_rows = s_Q + q_stage() * Tl::kQBytes + 64 * c * 128;
#pragma unroll
      for (int s = 0; s < 2; ++s) {
        const int r = 16 * cw + lane / 4 + 8 * s;  // row within this consumer's 64; r % 8 = lane / 4
        const float inv_l = l_i[s] > 0.f ? 1.f / l_i[s] : 0.f;
#pragma unroll
        for (int tt = 0; tt < kDp / 8; ++tt) {
          const uint32_t addr = o_rows + (tt / 8) * (kBr * 128) + r * 128 + (((tt % 8) ^ (lane / 4)) * 16) + 4 * (lane % 4);
          const uint32_t v = frag::pack2<T>(r_O[4 * tt + 2 * s] * inv_l, r_O[4 * tt + 2 * s + 1] * inv_l);
          asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(addr), "r"(v) : "memory");
        }
      }
      fence_proxy_async();                // the writes above, visible to the TMA unit
      named_bar_sync(kEpiBar + c, 128);   // ... from all 128 threads of this consumer
      if (cw == 0 && lane == 0) {
#pragma unroll
        for (int p = 0; p < kDp / 64; ++p)  // HBM write: O_i, once
          tma_store_4d(&maps.o, o_rows + p * (kBr * 128), 64 * p, we.h, we.q * kBr + 64 * c, we.b);
        bulk_commit();
        bulk_wait_read();                       // the stores have read the buffer:
        mbar_arrive_lane0(q_empty(q_stage()), lane);  // it may take the next tile's Q (lane is 0)
      }
    } else {
      // From the accumulators (v06's 4-byte stores; a tile without key tiles writes zeros this way,
      // it owns no Q buffer). Registers to global memory only: the next tile's loads into shared
      // memory cannot race with it.
      T* const g_O = g_O_all + a.q_offset(we.b, 0, we.h);
      const int64_t q_stride = a.q_row_stride();
      const int d = static_cast<int>(a.head_dim);  // a multiple of 8 (supports()): whole 8-column atoms
#pragma unroll
      for (int s = 0; s < 2; ++s) {
        const int i = wi0 + lane / 4 + 8 * s;
        if (i >= seqlen_q) continue;
        const float inv_l = l_i[s] > 0.f ? 1.f / l_i[s] : 0.f;
#pragma unroll
        for (int tt = 0; tt < kDp / 8; ++tt)  // HBM write: O_i, once; atoms of columns >= d (padding) are not stored
          if (8 * tt < d)
            *reinterpret_cast<uint32_t*>(g_O + i * q_stride + 8 * tt + 2 * (lane % 4)) =
                frag::pack2<T>(r_O[4 * tt + 2 * s] * inv_l, r_O[4 * tt + 2 * s + 1] * inv_l);
      }
    }
    kv0 += n_tiles, qn += n_tiles > 0 ? 1 : 0;
  }
  if constexpr (Tl::kPingPong)
    if (c == 0) named_bar_sync(kSchedBar + 0, 256);
  if (timed_out) gave_up_trap();
#else
  (void)maps, (void)a, (void)g_O_all, (void)g_LSE, (void)v_lbo, (void)v_sbo, (void)sched, (void)n_work, (void)own_rows;
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
// A (batch, seqlen, heads, d) BSHD tensor as a 4-D tensor map (ws::encode_bshd), boxes of 64
// columns (128 bytes: the swizzle span) x 1 head x box_rows rows x 1 sequence, 128-byte swizzle;
// rows past seqlen are zero-filled.
LaunchStatus encode(CUtensorMap& m, const char* variant, const char* what, const void* base, DType dt,
                    int64_t batch, int64_t seqlen, int64_t heads, int64_t d, int box_rows) {
  return ws::encode_bshd(m, variant, what, base,
                         dt == DType::bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2,
                         batch, seqlen, heads, d, 64, box_rows, CU_TENSOR_MAP_SWIZZLE_128B);
}

using LaunchFn = LaunchStatus (*)(const AttnView&, const DeviceTensors&, DType, const Launcher&);
struct Config {
  int d, br, bc;
  const char* name;
  int64_t min_keys;            // a default only from this many keys on (0: any); --bc, a name: any
  LaunchFn launch;             // v08_fa3_warpspec: one block per work tile
  LaunchFn launch_persistent;  // v08p_fa3_persistent: the same tile, a persistent grid
};

// The persistent grid's CTAs: per_sm per SM of the current device (2 at Br 64, else 1);
// IOATTN_V08P_CTAS=N (a test and tuning selector, N >= 1) caps them at N, so that small problems walk
// several tiles per CTA.
LaunchStatus persistent_slots(int64_t& sms, int per_sm) {
  int dev = 0, n = 0;
  IOATTN_CHECK(cudaGetDevice(&dev));
  IOATTN_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev));
  sms = int64_t{n} * per_sm;
  if (const char* cap = std::getenv("IOATTN_V08P_CTAS"); cap && cap[0] != '\0') {
    char* end = nullptr;
    const long v = std::strtol(cap, &end, 10);
    if (*end != '\0' || v < 1) return std::string("IOATTN_V08P_CTAS must be an integer >= 1 (got '") + cap + "')";
    sms = std::min<int64_t>(sms, v);
  }
  return std::nullopt;
}

// A masked problem's tile order and how its rounds go to the CTAs (kernels/tile_scheduler.hpp),
// set once the grid (sched.ctas) is known. IOATTN_V08P_ORDER=
//   auto (or unset: the default)  choose_masked_order: head major with each head's query blocks
//                                 heavy first when its busiest CTA has at most 3 % more work than
//                                 under heavy first, else heavy first (always heavy first at Br
//                                 192: chosen_masked_order says why); serpentine rounds
//   heavy (or serpentine, the old default's name)  heavy first, serpentine rounds
//   head                          head major, each head's query blocks heavy first, serpentine
//   rr                            heavy first, the plain round robin
// Unmasked problems stay head major under every value. Why serpentine: measured on the H200
// (2026-12-01_72352b5_v08p_order, causal d 128, N 16k, one CTA per SM): rr read 2.74 GB from DRAM
// (L2 hit rate 61 %) where serpentine read 1.18 GB (79 %) and v08's grid 1.16 GB (80 %): under rr
// the CTAs with lighter rounds run ahead into later query blocks and the heads' K/V no longer
// share L2; serpentine keeps them together, and its time matched v08's (2.13 vs 2.11 ms under ncu).
// Why head major at short N: heavy first walks every head's K/V between two query blocks of one
// head (causal d 128, N 512, batch 32, 16 heads: 400 MB read against cuDNN's 201 MB, ncu in
// 2026-12-02_a109f05_ncu_shortn); the header there has the model and the rule.
// choose_masked_order, remembered per problem shape: it walks every tile (about 10 us at 2048 tiles,
// 5 ms at 2^20), and a training step or a decode loop launches the same shapes over and over.
TileOrder chosen_masked_order(const TileScheduler& s, const MaskSpec& m, int br, int bc) {
  if (!s.masked()) return TileOrder::head_major;
  // Three consumer warpgroups (Br 192, the d 64 default): heavy first, whatever the balance. Measured
  // on the H200 (causal bf16 d 64, batch x N = 16k, 32 heads, ratios to the same run's cuDNN): head
  // major 0.57 / 0.79 / 0.90 / 0.90 (spread 0.13) at N 512 / 1k / 2k / 4k against heavy first's 0.70 /
  // 0.78 / 0.90 / 0.98 (2026-12-02_a963f30_fwd_v08p and _fwd_v08p_heavy), although head major reads the compulsory
  // DRAM bytes and heavy first 1.8x them at N 512 (2026-12-02_b7896cf_ncu_order); why is not measured.
  // At Br 128 (d 96-256) the choice below stands (head major faster at d 192/256, N 512-2k).
  if (br == 192) return TileOrder::heavy_first;
  using Key = std::array<int64_t, 11>;
  const Key key{s.batch, s.heads_q, s.q_blocks, s.ctas, m.seqlen_q, m.seqlen_k, m.causal, m.window_left,
                m.window_right, br, bc};
  static std::mutex mu;
  static std::map<Key, TileOrder> memo;
  {
    const std::lock_guard<std::mutex> lock(mu);
    if (auto it = memo.find(key); it != memo.end()) return it->second;
  }
  const TileOrder o = choose_masked_order(s, m, br, bc);
  const std::lock_guard<std::mutex> lock(mu);
  if (memo.size() >= 4096) memo.clear();  // bounded: many distinct shapes only cost the walk again
  memo.emplace(key, o);
  return o;
}

LaunchStatus persistent_assignment(TileScheduler& sched, const MaskSpec& m, int br, int bc) {
  const char* v = std::getenv("IOATTN_V08P_ORDER");
  const std::string_view name = v == nullptr ? "" : v;
  sched.serpentine = name != "rr";  // rr keeps heavy first (make_tile_scheduler's masked order)
  if (name.empty() || name == "auto") {
    sched.order = chosen_masked_order(sched, m, br, bc);
  } else if (name == "head") {
    if (sched.masked()) sched.order = TileOrder::head_major_rev;
  } else if (name != "heavy" && name != "serpentine" && name != "rr") {
    return std::string("IOATTN_V08P_ORDER must be auto, heavy (or serpentine), head or rr (got '") + v + "')";
  }
  return std::nullopt;
}

// Which rows decide a consumer's key tiles in the persistent kernel (header: "Per consumer").
// IOATTN_V08P_ROWS=consumer (or unset: the default) its own 64 rows; block: the block's rows, as v08
// (every consumer computes every key tile of the block); a selector for comparing the two.
LaunchStatus consumer_rows(int& own) {
  const char* v = std::getenv("IOATTN_V08P_ROWS");
  const std::string_view name = v == nullptr ? "" : v;
  if (name.empty() || name == "consumer") own = 1;
  else if (name == "block") own = 0;
  else return std::string("IOATTN_V08P_ROWS must be consumer or block (got '") + v + "')";
  return std::nullopt;
}

template <class Tl, bool kPersistent>
LaunchStatus launch_tile(const AttnView& a, const DeviceTensors& t, DType dt, const Launcher& L) {
  const char* variant = kPersistent ? "v08p_fa3_persistent" : "v08_fa3_warpspec";  // refusals name it
  TileScheduler sched = make_tile_scheduler(a.batch, a.heads_q, a.seqlen_q, Tl::kBr, a.mask);
  int64_t ctas = sched.tiles();  // v08: one CTA per work tile
  if constexpr (kPersistent) {
    int64_t sms = 0;
    if (auto e = persistent_slots(sms, Tl::kCtasPerSm)) return e;
    ctas = persistent_ctas(sched.tiles(), sms);
  }
  // The kernel counts work tiles and a CTA's K/V ring tiles in ints.
  if (sched.tiles() + ctas > INT32_MAX || (sched.tiles() + ctas - 1) / ctas * ((a.seqlen_k + Tl::kBc - 1) / Tl::kBc) > INT32_MAX)
    return std::string(variant) + ": batch * heads_q * ceil(seqlen_q / Br) + CTAs and ceil(that / CTAs) * "
           "ceil(seqlen_k / Bc) must be < 2^31 (CTAs: one per work tile for v08, per SM for v08p)";
  sched.ctas = static_cast<int>(ctas);
  int own_rows = 0;  // v08: every consumer runs the block's key tiles (v08's rule)
  const char* order = "qblock_major_rev";
  if constexpr (kPersistent) {
    if (auto e = persistent_assignment(sched, a.mask, Tl::kBr, Tl::kBc)) return e;  // needs sched.ctas
    if (auto e = consumer_rows(own_rows)) return e;
    order = sched.grid_order();
  } else {
    // v08's order: heavy query blocks first (the last query block of every head, then the second
    // last, ...), for every problem: CTA t takes order position t (no serpentine: make_tile_scheduler's
    // default), and the hardware dispatches the CTAs about in that order.
    sched.order = TileOrder::heavy_first;
  }
  const dim3 grid(static_cast<unsigned>(ctas));
  V08Maps maps{};
  if (auto e = encode(maps.q, variant, "Q", t.q, dt, a.batch, a.seqlen_q, a.heads_q, a.head_dim, 64)) return e;
  if (auto e = encode(maps.k, variant, "K", t.k, dt, a.batch, a.seqlen_k, a.heads_kv, a.head_dim, Tl::kBc)) return e;
  if (auto e = encode(maps.v, variant, "V", t.v, dt, a.batch, a.seqlen_k, a.heads_kv, a.head_dim, Tl::kBc)) return e;
  if constexpr (Tl::kTmaEpilogue)  // O has Q's shape and layout: Q's boxes
    if (auto e = encode(maps.o, variant, "O", t.o, dt, a.batch, a.seqlen_q, a.heads_q, a.head_dim, 64)) return e;
  // V's descriptor for the N-major B operand, as v06: LBO = Bc x 128 bytes (one 64-column panel of
  // d to the next), SBO = 1024 bytes (one 8-key group to the next).
  const uint32_t lbo = Tl::kBc * 128, sbo = 1024;
  const MainKernel main{.br = Tl::kBr, .bc = Tl::kBc, .stages = Tl::kStages, .splits = 0, .grid_order = order};
  return dispatch_dtype(dt, [&]<class T>() -> LaunchStatus {
    if constexpr (sizeof(T) != 2) {
      return std::string(variant) + ": dtype must be fp16 or bf16";
    } else {
      return L.main(main, &fa3_warpspec_kernel<T, Tl>, grid, Tl::kThreads, Tl::kSmemBytes, maps, a, static_cast<T*>(t.o),
                    t.lse, lbo, sbo, sched, static_cast<int>(sched.tiles()), own_rows);
    }
  });
}

#define V08_PIN_SUFFIX_0 ""
#define V08_PIN_SUFFIX_1 "_pin"
#define V08_ROW(d, br, bc, st, pp, pin, keys)                                                      \
  Config{d, br, bc, "d" #d "_br" #br "_bc" #bc "_s" #st "_pp" #pp V08_PIN_SUFFIX_##pin, keys,     \
         &launch_tile<V08Tile<d, br, bc, st, pp != 0, pin != 0>, false>,                           \
         &launch_tile<V08Tile<d, br, bc, st, pp != 0, pin != 0>, true>}
#define V08_CONFIG(d, br, bc, st, pp) V08_ROW(d, br, bc, st, pp, 0, 0)
#define V08_CONFIG_PIN(d, br, bc, st, pp) V08_ROW(d, br, bc, st, pp, 1, 0)
#define V08_CONFIG_FROM(d, br, bc, st, pp, keys) V08_ROW(d, br, bc, st, pp, 0, keys)
// Per head-dim class (head_dim_class: d 8..64 -> 64, 72..96 -> 96, 104..128 -> 128, 136..192 -> 192,
// 200..256 -> 256) the first configuration listed is the default (a row with a key count, from that
// many keys on: d 192's Bc 112 from 8k keys), and --br/--bc pick the first one with that tile; the rows marked "env" share a tile with an earlier row (another stage count, or
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
    V08_CONFIG(64, 64, 128, 2, 0),   // two CTAs per SM (--br 64; slower than the default at N 512-4k: 2026-12-02_a6cd4b4_br64)
    // d 96 (shared tiles and O 128 wide, Q K^T 6 MMAs deep)
    V08_CONFIG(96, 128, 128, 2, 1),
    V08_CONFIG(96, 192, 64, 2, 1),
    V08_CONFIG(96, 128, 64, 3, 1),
    V08_CONFIG(96, 128, 128, 3, 1),  // env
    // d 128
    V08_CONFIG(128, 128, 128, 2, 0),
    V08_CONFIG(128, 128, 64, 2, 1),
    V08_CONFIG_PIN(128, 128, 176, 2, 0),  // FA3's non-causal d-128 tile: slower at every N (2026-12-02_adc1397_tiles_d128, pinned: _5d4f0d2_pin_ab)
    V08_CONFIG(128, 128, 128, 3, 1),  // env
    V08_CONFIG(128, 128, 128, 2, 1),  // env
    V08_CONFIG(128, 64, 64, 2, 0),    // two CTAs per SM (--br 64; Bc 128 exceeds half the SM; slower: 2026-12-02_a6cd4b4_br64)
    // Three consumer warpgroups at d 128 (O + S + P = 112 of 160 registers at Bc 64, as d 96's Br 192 row;
    // ptxas 128 at launch, 0 spills): correct, slower than the default at N 512-16k with ping-pong on or
    // off (2026-12-02_112b70e_d128_br192); kept for study
    V08_CONFIG(128, 192, 64, 2, 1),
    V08_CONFIG(128, 192, 64, 2, 0),   // env
    // d 192 (O 96 registers: S and P fit beside it at Bc 64 and at Bc 112, FA3's d-192 tile, which
    // takes one Q buffer and register stores of O: the default from 8k keys on, faster there and
    // slower at short N, 2026-12-02_e1d2e20_tiles_d192; Bc 128 does not fit shared memory)
    V08_CONFIG_FROM(192, 128, 112, 2, 1, 8192),
    V08_CONFIG(192, 128, 64, 2, 1),
    V08_CONFIG(192, 128, 64, 3, 1),  // env
    // d 256
    V08_CONFIG_PIN(256, 128, 64, 2, 1),
    V08_CONFIG_PIN(256, 128, 64, 2, 0),  // env
};
#undef V08_CONFIG
#undef V08_CONFIG_PIN
#undef V08_CONFIG_FROM
#undef V08_ROW
#undef V08_PIN_SUFFIX_0
#undef V08_PIN_SUFFIX_1

// The configuration for (d, --br, --bc) and the problem's keys; IOATTN_V08_CONFIG (if set and not
// empty) must name it.
const char* config_by_name() {
  const char* want = std::getenv("IOATTN_V08_CONFIG");
  return want && want[0] != '\0' ? want : nullptr;
}
const Config* find_config(int64_t d, int br, int bc, int64_t seqlen_k) {
  const char* want = config_by_name();
  for (const Config& c : kConfigs)
    if (c.d == head_dim_class(d) && (br == 0 || br == c.br) && (bc == 0 || bc == c.bc) &&
        (!want || std::string_view(want) == c.name) && (bc != 0 || want || seqlen_k >= c.min_keys))
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

namespace {
// supports() of v08_fa3_warpspec and of v08p_fa3_persistent (the same kernel on a persistent grid:
// the same configurations and constraints; its own name and IOATTN_V08P_DISABLE).
LaunchStatus supports_as(const AttnProblem& p, const KernelOptions& opt, bool persistent) {
  if (auto e = p.validate()) return e;
  const std::string name = persistent ? "v08p_fa3_persistent" : "v08_fa3_warpspec";
#if defined(IOATTN_PLATFORM_NVIDIA)
  const char* disable = persistent ? "IOATTN_V08P_DISABLE" : "IOATTN_V08_DISABLE";
  if (const char* off = std::getenv(disable); off && off[0] != '\0' && off[0] != '0')
    return name + ": disabled by " + disable + " (the header's hang guard)";
  if (auto e = warpspec_available()) return e;
  if (p.dtype == DType::fp32) return name + ": dtype must be fp16 or bf16 (matrix cores take 16-bit inputs)";
  if (p.head_dim % 8 != 0 || p.head_dim > 256)
    return name + ": head_dim must be a multiple of 8 and <= 256 (TMA rows are 16-byte multiples; "
           "d is padded to the next of 64, 96, 128, 192, 256 inside)";
  if (opt.splits) return name + " takes no split-KV (--splits)";
  if (!find_config(p.head_dim, opt.br, opt.bc, p.seqlen_k)) {
    const int cls = head_dim_class(p.head_dim);
    std::string have;
    for (const Config& c : kConfigs) {
      const std::string item = config_by_name() ? std::string(c.name) : std::to_string(c.br) + "x" + std::to_string(c.bc);
      if (c.d == cls && have.find(item) == std::string::npos) have += (have.empty() ? "" : ", ") + item;
    }
    if (const char* want = config_by_name())
      return name + ": IOATTN_V08_CONFIG=" + want + " with --br " + std::to_string(opt.br) +
             " --bc " + std::to_string(opt.bc) + " names no configuration of head_dim " + std::to_string(p.head_dim) +
             " (class " + std::to_string(cls) + "): one of " + have;
    return name + ": for head_dim " + std::to_string(p.head_dim) + " (--br x --bc) must be one of " + have;
  }
  return std::nullopt;
#else
  (void)opt;
  return name + " needs NVIDIA Hopper (TMA, wgmma); on AMD use v05_fa2_fast";
#endif
}

// The launch path of launch() and config().
LaunchStatus run(const AttnProblem& p, const DeviceTensors& t, const KernelOptions& opt, const Launcher& L,
                 bool persistent) {
  if (auto e = supports_as(p, opt, persistent)) return e;
#if defined(IOATTN_PLATFORM_NVIDIA)
  const Config* c = find_config(p.head_dim, opt.br, opt.bc, p.seqlen_k);
  return (persistent ? c->launch_persistent : c->launch)(AttnView::of(p), t, p.dtype, L);
#else
  (void)t, (void)L;
  return std::string(persistent ? "v08p_fa3_persistent" : "v08_fa3_warpspec") + " needs NVIDIA Hopper (TMA, wgmma)";
#endif
}
}  // namespace

LaunchStatus v08_fa3_warpspec_supports(const AttnProblem& p, const KernelOptions& opt) {
  return supports_as(p, opt, false);
}
std::size_t v08_fa3_warpspec_workspace_bytes(const AttnProblem&, const KernelOptions&) { return 0; }
LaunchStatus v08_fa3_warpspec_launch(const AttnProblem& p, const DeviceTensors& t, const KernelOptions& opt,
                                     void* /*workspace*/, void* stream) {
  return run(p, t, opt, Launcher::enqueue(stream), false);
}
LaunchStatus v08_fa3_warpspec_config(const AttnProblem& p, const KernelOptions& opt, LaunchConfig& out) {
  return describe_launch(out, [&](const Launcher& L) { return run(p, {}, opt, L, false); });
}

// v08p_fa3_persistent: the registry's second entry for this file (header: "Persistent grid").
LaunchStatus v08p_fa3_persistent_supports(const AttnProblem& p, const KernelOptions& opt) {
  return supports_as(p, opt, true);
}
std::size_t v08p_fa3_persistent_workspace_bytes(const AttnProblem&, const KernelOptions&) { return 0; }
LaunchStatus v08p_fa3_persistent_launch(const AttnProblem& p, const DeviceTensors& t, const KernelOptions& opt,
                                        void* /*workspace*/, void* stream) {
  return run(p, t, opt, Launcher::enqueue(stream), true);
}
LaunchStatus v08p_fa3_persistent_config(const AttnProblem& p, const KernelOptions& opt, LaunchConfig& out) {
  return describe_launch(out, [&](const Launcher& L) { return run(p, {}, opt, L, true); });
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

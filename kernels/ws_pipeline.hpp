// kernels/ws_pipeline.hpp: the machinery of the warp-specialized Hopper forwards (v08_fa3_warpspec,
// v10_fp8_warpspec): mbarriers with bounded waits (the hang guard), TMA box loads, the named
// barriers of the consumers' ping-pong, setmaxnreg, the ring's stage/parity arithmetic, and on the
// host the tensor-map encoder (cuTensorMapEncodeTiled through the runtime's driver entry point).
// These were v08's functions, moved here unchanged so that v10 shares them (v08's PTX before and
// after the move: identical, kernels/dev/sass_compare.py --ptx).
//
// Ring protocol (both kernels): tile n of a ring of kStages buffers sits in buffer n % kStages,
// filled for the (n / kStages)-th time; its "full" barrier (count 1: the producer's
// arrive.expect_tx, completed by the TMA bytes) completes phase n / kStages, so a consumer waits
// for parity (n / kStages) & 1; its "empty" barrier (one arrival per consumer warp) is waited for
// by the producer with the opposite parity before the refill (immediate for n < kStages: a fresh
// barrier is in phase 0, and waiting for parity 1 returns at once).
// Device code exists only in an sm_90a device pass (__CUDA_ARCH_FEAT_SM90_ALL); the host part only
// on NVIDIA.
#pragma once

#include <cstdint>
#include <string>
#if defined(IOATTN_WS_DIAG)
#include <cstdio>  // gave_up_trap's printf
#endif

#include "kernels/launch.hpp"
#include "kernels/platform/platform.hpp"

#if defined(IOATTN_PLATFORM_NVIDIA)
#include <cuda.h>          // CUtensorMap and its enums
#include <cudaTypedefs.h>  // the encoder's type; the function comes through cudaGetDriverEntryPointByVersion
#endif

#if defined(IOATTN_PLATFORM_NVIDIA)
namespace ioattn::kernels::ws {

// Named barrier ids of the ping-pong (0 is __syncthreads): consumer c waits on kSchedBar + c.
constexpr int kSchedBar = 1;
// Named barrier of consumer c's own 128 threads before its TMA store of O (v08p): kEpiBar + c, after
// the ping-pong's ids (at most three consumers).
constexpr int kEpiBar = kSchedBar + 3;

// The ring's buffer and the parity a full barrier is waited for, for tile n (header).
template <int kStages>
__host__ __device__ constexpr int ring_stage(int n) { return n % kStages; }
template <int kStages>
__host__ __device__ constexpr uint32_t ring_parity(int n) { return static_cast<uint32_t>((n / kStages) & 1); }

#if defined(IOATTN_WS_DIAG)
// The diagnostic build's record of the first wait that gave up (mbar_wait): 1 | barrier << 1 |
// parity << 21 | thread << 22 | block << 32. Declared in every compilation pass (the host stub names it).
static __device__ unsigned long long ws_gave_up = 0;
#endif

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
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
// mbar_arrive_lane0 once `a` and `b` are computed (the guard holds for every value, NaN included): a
// real instruction that depends on them, so ptxas cannot sink their computation below the next
// wgmma wait (an empty asm with them as inputs emits nothing and orders nothing in SASS).
__device__ __forceinline__ void mbar_arrive_lane0_after(uint32_t bar, int lane, float a, float b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.eq.u32 p, %1, 0;\nsetp.equ.and.f32 p, %2, %2, p;\nsetp.equ.and.f32 p, %3, %3, p;\n"
      "@p mbarrier.arrive.shared::cta.b64 _, [%0];\n}\n" ::"r"(bar),
      "r"(lane), "f"(a), "f"(b)
      : "memory");
}
// One poll; a thread may sleep in it up to kPollNs while the phase is incomplete.
constexpr int kPollNs = 1000;
// 2^22 polls: a few seconds at most. A diagnostic build (-DIOATTN_WS_DIAG, e.g. through
// CMAKE_CUDA_FLAGS) may set IOATTN_WS_MAX_POLLS; each thread whose wait gave up prints the launch's
// first such wait before it traps (gave_up_trap).
#if defined(IOATTN_WS_MAX_POLLS)
constexpr uint32_t kMaxPolls = IOATTN_WS_MAX_POLLS;
#else
constexpr uint32_t kMaxPolls = 1u << 22;
#endif
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
  // Rolled: unrolled (nvcc's default, by 32) every wait site is ~2 KB of SASS, a third of v08's
  // kernel, and a wait that succeeds at its first poll branches over the rest into a cold line.
#pragma unroll 1
  for (uint32_t polls = 0; !mbar_try_wait(bar, parity);)
    if (++polls == kMaxPolls) {
      timed_out = true;
#if defined(IOATTN_WS_DIAG)
      // The first wait of the launch that gave up, for gave_up_trap (a store, not a printf: a call
      // here, inside the MMA loop, would serialize the wgmma).
      atomicCAS(&ws_gave_up, 0ull,
                1ull | uint64_t{bar & 0xfffffu} << 1 | uint64_t{parity & 1u} << 21 | uint64_t{threadIdx.x & 0x3ffu} << 22 |
                    uint64_t{blockIdx.x} << 32);
#endif
      return;
    }
}
// A thread whose wait gave up (timed_out) ends here, after its loops: the launch fails. A
// diagnostic build prints the first wait of the launch that gave up first (its printf makes ptxas
// serialize every wgmma of the kernel, warning C7510: the protocol is the same, the timing is not).
__device__ __forceinline__ void gave_up_trap() {
#if defined(IOATTN_WS_DIAG)
  const unsigned long long w = ws_gave_up;
  printf("ws: a barrier wait gave up: block %u thread %u barrier 0x%x parity %u (first of the launch; seen by block %d thread %d)\n",
         static_cast<unsigned>(w >> 32), static_cast<unsigned>((w >> 22) & 0x3ff), static_cast<unsigned>((w >> 1) & 0xfffff),
         static_cast<unsigned>((w >> 21) & 1), static_cast<int>(blockIdx.x), static_cast<int>(threadIdx.x));
#endif
  __trap();
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
// One box of shared memory at `src` to a 4-D tensor map's box (coordinates as tma_load_4d); the
// unit clips the parts of the box outside the tensor (rows past seqlen, columns past d are not
// written). Asynchronous: the writes to shared memory it reads must be made visible to the async
// proxy first (fence_proxy_async, then a barrier of the writing threads), and `src` may be written
// again only after bulk_wait_read. HBM write.
__device__ __forceinline__ void tma_store_4d(const CUtensorMap* map, uint32_t src, int c0, int c1, int c2, int c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.global.shared::cta.bulk_group [%0, {%2, %3, %4, %5}], [%1];\n" ::"l"(
          reinterpret_cast<uint64_t>(map)),
      "r"(src), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
      : "memory");
}
// Close the calling thread's bulk group (the stores issued since the last commit).
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
// Wait until every committed bulk store of the calling thread has read its shared memory.
__device__ __forceinline__ void bulk_wait_read() { asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory"); }
// Make this thread's generic-proxy writes to shared memory visible to the async proxy (TMA, wgmma).
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
// The same for a 3-D tensor map (column, row, matrix). HBM read.
__device__ __forceinline__ void tma_load_3d(uint32_t dst, const CUtensorMap* map, uint32_t bar, int c0, int c1,
                                            int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5}], "
      "[%2];\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(bar), "r"(c0), "r"(c1), "r"(c2)
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

// ---- the pieces of a warp-specialized block (v10 calls these; v08 inlines the same protocol) ---
// The barriers of one block, kBarriers = 1 + 4 kStages mbarriers of 8 bytes from `base`: Q full,
// then per stage K full, K empty, V full, V empty.
template <int kStages>
struct RingBarriers {
  static constexpr int kCount = 1 + 4 * kStages;
  uint32_t base;
  __device__ __forceinline__ uint32_t q_full() const { return base; }
  __device__ __forceinline__ uint32_t k_full(int s) const { return base + 8 * (1 + s); }
  __device__ __forceinline__ uint32_t k_empty(int s) const { return base + 8 * (1 + kStages + s); }
  __device__ __forceinline__ uint32_t v_full(int s) const { return base + 8 * (1 + 2 * kStages + s); }
  __device__ __forceinline__ uint32_t v_empty(int s) const { return base + 8 * (1 + 3 * kStages + s); }
  // One thread: full barriers wait for the producer's one arrive.expect_tx, empty ones for lane 0 of
  // each of `consumer_warps` warps.
  __device__ __forceinline__ void init(uint32_t consumer_warps) const {
    mbar_init(q_full(), 1);
    for (int s = 0; s < kStages; ++s) {
      mbar_init(k_full(s), 1);
      mbar_init(v_full(s), 1);
      mbar_init(k_empty(s), consumer_warps);
      mbar_init(v_empty(s), consumer_warps);
    }
    mbar_init_fence();
  }
};

// The producer's K/V loop (one thread): in the order the consumers use them, K_0, then K_{n+1} and
// V_n for n = 0 .. n_tiles - 1; before refilling a buffer it waits until the consumers released its
// previous tile (the empty barrier's parity(n) ^ 1), then arms the full barrier with the tile's
// bytes and calls load_k(n, dst_stage, full) / load_v(...), which issue the TMA boxes.
template <int kStages, class LoadK, class LoadV>
__device__ __forceinline__ void produce_kv(const RingBarriers<kStages>& r, int n_tiles, uint32_t k_bytes,
                                           uint32_t v_bytes, LoadK&& load_k, LoadV&& load_v, bool& timed_out) {
  auto one = [&](auto& load, bool is_k, uint32_t bytes, int n) {
    const int s = ring_stage<kStages>(n);
    mbar_wait(is_k ? r.k_empty(s) : r.v_empty(s), ring_parity<kStages>(n) ^ 1u, timed_out);
    const uint32_t full = is_k ? r.k_full(s) : r.v_full(s);
    mbar_arrive_expect_tx(full, bytes);
    load(n, s, full);
  };
  if (n_tiles <= 0) return;
  one(load_k, true, k_bytes, 0);
  for (int n = 0; n < n_tiles; ++n) {
    if (n + 1 < n_tiles) one(load_k, true, k_bytes, n + 1);
    one(load_v, false, v_bytes, n);
  }
}

// The consumers' ping-pong (round robin over kC consumer warpgroups): wait() before issuing a
// step's GEMMs, pass() right after; each named barrier joins the waiting warpgroup and the
// arriving one (256 threads). begin(): the last consumer arrives once up front (consumer 0 issues
// first); end(): consumer 0 takes that extra arrival after its loop, so the barriers are idle at exit.
template <int kC>
struct PingPong {
  int c;
  __device__ __forceinline__ void begin() const {
    if (c == kC - 1) named_bar_arrive(kSchedBar + 0, 256);
  }
  __device__ __forceinline__ void wait() const { named_bar_sync(kSchedBar + c, 256); }
  __device__ __forceinline__ void pass() const { named_bar_arrive(kSchedBar + (c + 1) % kC, 256); }
  __device__ __forceinline__ void end() const {
    if (c == 0) named_bar_sync(kSchedBar + 0, 256);
  }
};
#endif  // __CUDA_ARCH_FEAT_SM90_ALL

// ---- host: tensor maps --------------------------------------------------------------------------
using EncodeTiled = PFN_cuTensorMapEncodeTiled_v12000;

// The driver's cuTensorMapEncodeTiled, looked up once through the runtime (no -lcuda needed);
// `who` (the variant) starts the refusal.
inline LaunchStatus encoder(EncodeTiled& fn, const char* who) {
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
  if (!cached) return std::string(who) + ": the driver has no cuTensorMapEncodeTiled (TMA needs CUDA 12 or later)";
  fn = cached;
  return std::nullopt;
}

// A tiled tensor map of `rank` dimensions (innermost first; strides in bytes of dimensions 1 ..
// rank - 1), element strides 1, no interleave, L2 promotion 256 B, out-of-bounds boxes zero-filled.
// `base` null (describe(): the map is never used) encodes a stand-in aligned address, so the
// shape checks run the same in config() as in launch(). A refusal names `who` and `what`.
inline LaunchStatus encode_tiled(CUtensorMap& m, const char* who, const char* what, const void* base,
                                 CUtensorMapDataType type, cuuint32_t rank, const cuuint64_t* dims,
                                 const cuuint64_t* strides, const cuuint32_t* box, CUtensorMapSwizzle swizzle) {
  EncodeTiled fn = nullptr;
  if (auto e = encoder(fn, who)) return e;
  void* addr = base ? const_cast<void*>(base) : reinterpret_cast<void*>(uintptr_t{1} << 20);
  const cuuint32_t elem_strides[5] = {1, 1, 1, 1, 1};
  const CUresult r = fn(&m, type, rank, addr, dims, strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
                        CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    return std::string(who) + ": cuTensorMapEncodeTiled refused the " + what + " tensor (error " +
           std::to_string(static_cast<int>(r)) + "; TMA needs a 16-byte aligned base and 16-byte row strides)";
  return std::nullopt;
}

// A (batch, seqlen, heads, d) BSHD tensor of `elem_bytes`-byte elements as a 4-D tensor map, dims
// innermost first (d, heads, seqlen, batch), boxes of box_cols columns x 1 head x box_rows rows x 1
// sequence; rows past seqlen are zero-filled. A zero-length dimension is not encodable; with
// seqlen 0 no box of that tensor is loaded.
inline LaunchStatus encode_bshd(CUtensorMap& m, const char* who, const char* what, const void* base,
                                CUtensorMapDataType type, int elem_bytes, int64_t batch, int64_t seqlen, int64_t heads,
                                int64_t d, int box_cols, int box_rows, CUtensorMapSwizzle swizzle) {
  const cuuint64_t e = static_cast<cuuint64_t>(elem_bytes);
  const int64_t rows = seqlen > 0 ? seqlen : 1;
  const cuuint64_t dims[4] = {static_cast<cuuint64_t>(d), static_cast<cuuint64_t>(heads),
                              static_cast<cuuint64_t>(rows), static_cast<cuuint64_t>(batch)};
  const cuuint64_t strides[3] = {static_cast<cuuint64_t>(d) * e, static_cast<cuuint64_t>(heads * d) * e,
                                 static_cast<cuuint64_t>(rows * heads * d) * e};
  const cuuint32_t box[4] = {static_cast<cuuint32_t>(box_cols), 1, static_cast<cuuint32_t>(box_rows), 1};
  return encode_tiled(m, who, what, base, type, 4, dims, strides, box, swizzle);
}

}  // namespace ioattn::kernels::ws
#endif  // IOATTN_PLATFORM_NVIDIA

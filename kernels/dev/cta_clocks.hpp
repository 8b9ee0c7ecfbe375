// kernels/dev/cta_clocks.hpp: per-CTA start and end clocks of one kernel launch, for testing the
// simulator's L2 drift hypothesis directly (simulator/README.md, "Three HBM figures": co-resident
// CTAs of one head drift apart by the tiles their SM walked, and lose their shared K/V tiles in L2
// once the spread outgrows the L2's share per head).
//
// OFF by default: everything below is compiled only with -DIOATTN_CTA_CLOCKS (a separate build
// folder), so the normal build's device code is unchanged (checked: v06's cubin byte-identical with
// and without this include). With it on, a kernel that uses the two device macros records, per CTA
// (linear id blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z), up to kCtaClockSlots
// CTAs), thread 0's %globaltimer (ns) at entry and after its epilogue, and its %smid; the launch path
// calls cta_clocks_clear() before and cta_clocks_dump() after the launch, which synchronizes and
// writes the records of the CTAs that ran to $IOATTN_CTA_CLOCKS_OUT (default cta_clocks.csv; the
// last launch of the process wins):
//   kernel,cta,block_x,block_y,block_z,smid,start_ns,end_ns   (times relative to the earliest start)
// The synchronization and the extra stores change timing a little; the order and spread of CTA
// starts per SM is what the probe is for. Used by v06_fa2_wgmma (the only kernel instrumented).
// H200 command (kernels/dev/README.md):
//   cmake -S . -B build-clocks -DCMAKE_BUILD_TYPE=Release -DIOATTN_ENABLE_AMD_CHECK=OFF \
//         -DCMAKE_CUDA_FLAGS=-DIOATTN_CTA_CLOCKS && cmake --build build-clocks --target ioattn -j
//   IOATTN_CTA_CLOCKS_OUT=v06_n32k_clocks.csv build-clocks/apps/ioattn run --kernel v06_fa2_wgmma \
//         --seqlen 32768 --heads 16 --head-dim 128 --dtype bf16
#pragma once

#if defined(IOATTN_CTA_CLOCKS) && defined(__CUDACC__) && !defined(__HIP_PLATFORM_AMD__)
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace ioattn::kernels::dev {

inline constexpr unsigned kCtaClockSlots = 1u << 17;  // 131072 CTAs (v06 at N 64k, 16 heads: 8192)

struct CtaClock {
  unsigned long long start_ns, end_ns;
  unsigned smid, block_x, block_y, block_z;
};

static __device__ CtaClock g_cta_clocks[kCtaClockSlots];  // one copy per translation unit using it

__device__ __forceinline__ unsigned long long cta_clock_now() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ unsigned cta_clock_id() {
  return blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
}

__device__ __forceinline__ void cta_clock_begin() {
  if (threadIdx.x != 0 || cta_clock_id() >= kCtaClockSlots) return;
  unsigned sm;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
  CtaClock& c = g_cta_clocks[cta_clock_id()];
  c.start_ns = cta_clock_now();
  c.smid = sm;
  c.block_x = blockIdx.x;
  c.block_y = blockIdx.y;
  c.block_z = blockIdx.z;
}

__device__ __forceinline__ void cta_clock_end() {
  if (threadIdx.x != 0 || cta_clock_id() >= kCtaClockSlots) return;
  g_cta_clocks[cta_clock_id()].end_ns = cta_clock_now();
}

inline void cta_clocks_clear(void* stream) {
  void* p = nullptr;
  if (cudaGetSymbolAddress(&p, g_cta_clocks) == cudaSuccess)
    (void)cudaMemsetAsync(p, 0, sizeof(g_cta_clocks), static_cast<cudaStream_t>(stream));
}

inline void cta_clocks_dump(void* stream, const char* kernel) {
  std::vector<CtaClock> h(kCtaClockSlots);
  if (cudaStreamSynchronize(static_cast<cudaStream_t>(stream)) != cudaSuccess ||
      cudaMemcpyFromSymbol(h.data(), g_cta_clocks, sizeof(g_cta_clocks)) != cudaSuccess) {
    std::fprintf(stderr, "cta_clocks: could not read the clocks of %s\n", kernel);
    return;
  }
  unsigned long long t0 = ~0ull;
  for (const CtaClock& c : h)
    if (c.start_ns) t0 = std::min(t0, c.start_ns);
  const char* env = std::getenv("IOATTN_CTA_CLOCKS_OUT");
  const char* path = env && *env ? env : "cta_clocks.csv";
  FILE* f = std::fopen(path, "w");
  if (!f) {
    std::fprintf(stderr, "cta_clocks: cannot write %s\n", path);
    return;
  }
  std::fprintf(f, "kernel,cta,block_x,block_y,block_z,smid,start_ns,end_ns\n");
  for (unsigned i = 0; i < kCtaClockSlots; ++i) {
    const CtaClock& c = h[i];
    if (!c.start_ns) continue;
    std::fprintf(f, "%s,%u,%u,%u,%u,%u,%llu,%llu\n", kernel, i, c.block_x, c.block_y, c.block_z, c.smid,
                 c.start_ns - t0, c.end_ns ? c.end_ns - t0 : 0ull);
  }
  std::fclose(f);
}

}  // namespace ioattn::kernels::dev

#define IOATTN_CTA_CLOCK_BEGIN() ::ioattn::kernels::dev::cta_clock_begin()
#define IOATTN_CTA_CLOCK_END() ::ioattn::kernels::dev::cta_clock_end()
#else
#define IOATTN_CTA_CLOCK_BEGIN() ((void)0)
#define IOATTN_CTA_CLOCK_END() ((void)0)
#endif

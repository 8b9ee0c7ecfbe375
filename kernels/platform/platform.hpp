// kernels/platform/platform.hpp: the one include every kernel file starts with.
//
// It hides the three facts that differ between NVIDIA and AMD for our kernels:
//   1. the runtime header: our own HIP->CUDA mapping (hip_on_cuda.hpp) under nvcc, the real HIP
//      headers under hipcc;
//   2. the 16-bit element types and their float conversions (fp16_t, bf16_t, to_float, from_float);
//   3. the warp (NVIDIA, 32 lanes) vs wavefront (AMD CDNA, 64 lanes) width: kWarpSize.
// Matrix-core fragments (mma.sync vs MFMA) live beside this in fragment.hpp.
//
// Host-only code (registry, CLI, tests) never includes this file: it speaks launch.hpp's plain C++.
#pragma once

#include <string>

#include "kernels/launch.hpp"

#if defined(__CUDACC__)
#include "kernels/platform/hip_on_cuda.hpp"
#define IOATTN_PLATFORM_NVIDIA 1
#elif defined(__HIPCC__) || defined(__HIP__)
#include <hip/hip_bfloat16.h>
#include <hip/hip_fp16.h>
#include <hip/hip_runtime.h>
#define IOATTN_PLATFORM_AMD 1
#else
#error "platform.hpp needs nvcc (NVIDIA) or hipcc (AMD); host code includes kernels/launch.hpp only"
#endif

namespace ioattn::kernels {

// Lanes that execute in lock step: a warp on NVIDIA, a wavefront on AMD CDNA (gfx90a, gfx940).
#if defined(IOATTN_PLATFORM_NVIDIA)
inline constexpr int kWarpSize = 32;
#else
inline constexpr int kWarpSize = 64;
#endif

// Butterfly exchange within groups of `width` lanes (a power of two <= kWarpSize): lane l gets
// the value of lane l ^ mask. All lanes of the warp/wavefront must call it together.
__device__ inline float shfl_xor(float v, int mask, int width) {
#if defined(IOATTN_PLATFORM_NVIDIA)
  return __shfl_xor_sync(0xffffffffu, v, mask, width);
#else
  return __shfl_xor(v, mask, width);
#endif
}

// Orders the shared-memory accesses of the lanes of one warp (CUDA's independent thread
// scheduling needs it; an AMD wavefront executes in lock step, so only the compiler and the
// memory model must not reorder across it: wavefront-scope fences around the wave barrier).
__device__ inline void warp_sync() {
#if defined(IOATTN_PLATFORM_NVIDIA)
  __syncwarp();
#else
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "wavefront");
  __builtin_amdgcn_wave_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "wavefront");
#endif
}

// Shared memory (LDS) one block may use, in bytes: 227 KiB opt-in on Hopper (sm_90), 64 KiB LDS
// per workgroup on CDNA2/3. Launchers refuse tiles that do not fit, naming this limit.
#if defined(IOATTN_PLATFORM_NVIDIA)
inline constexpr int kMaxSharedBytes = 227 * 1024;
#else
inline constexpr int kMaxSharedBytes = 64 * 1024;
#endif

// ---- element types ------------------------------------------------------------------------------
// fp32 in, fp16 in, bf16 in; the kernels accumulate in fp32 whatever comes in.
using fp16_t = __half;
#if defined(IOATTN_PLATFORM_NVIDIA)
using bf16_t = __nv_bfloat16;
#else
using bf16_t = hip_bfloat16;  // ROCm 5.2 name; later ROCm also has __hip_bfloat16
#endif

__host__ __device__ inline float to_float(float x) { return x; }
__host__ __device__ inline float to_float(fp16_t x) { return __half2float(x); }
#if defined(IOATTN_PLATFORM_NVIDIA)
__host__ __device__ inline float to_float(bf16_t x) { return __bfloat162float(x); }
#else
__host__ __device__ inline float to_float(bf16_t x) { return static_cast<float>(x); }
#endif

// from_float<T>(f): round-to-nearest-even into T.
template <class T>
__host__ __device__ inline T from_float(float x);
template <>
__host__ __device__ inline float from_float<float>(float x) { return x; }
template <>
__host__ __device__ inline fp16_t from_float<fp16_t>(float x) { return __float2half_rn(x); }
#if defined(IOATTN_PLATFORM_NVIDIA)
template <>
__host__ __device__ inline bf16_t from_float<bf16_t>(float x) { return __float2bfloat16_rn(x); }
#else
template <>
__host__ __device__ inline bf16_t from_float<bf16_t>(float x) { return bf16_t::round_to_bfloat16(x); }
#endif

// Call `f.template operator()<T>()` with T the element type of `dt`: one line in every launcher
// instead of a switch. Example: return dispatch_dtype(p.dtype, [&]<class T>() { ... });
template <class F>
auto dispatch_dtype(DType dt, F&& f) {
  switch (dt) {
    case DType::fp16: return f.template operator()<fp16_t>();
    case DType::bf16: return f.template operator()<bf16_t>();
    case DType::fp32: break;
    // FP8 never reaches a launcher that dispatches here: the registry refuses a dtype outside a
    // variant's list, and the FP8 variants read their bytes through their own types.
    case DType::fp8_e4m3:
    case DType::fp8_e5m2: break;
  }
  return f.template operator()<float>();
}

// ---- errors -------------------------------------------------------------------------------------
// The runtime error of a HIP call as one line, e.g. "hipMalloc(&p, n): out of memory (file:line)".
inline std::string hip_error_line(hipError_t e, const char* call, const char* file, int line) {
  return std::string(call) + ": " + hipGetErrorString(e) + " (" + file + ":" + std::to_string(line) + ")";
}

}  // namespace ioattn::kernels

// IOATTN_CHECK(hipCall): inside a function returning LaunchStatus, return the error as one line.
#define IOATTN_CHECK(call)                                                                       \
  do {                                                                                           \
    const hipError_t ioattn_err_ = (call);                                                       \
    if (ioattn_err_ != hipSuccess)                                                               \
      return ::ioattn::kernels::LaunchStatus(                                                    \
          ::ioattn::kernels::hip_error_line(ioattn_err_, #call, __FILE__, __LINE__));            \
  } while (0)

// IOATTN_CHECK_LAUNCH(): after a <<<...>>> launch, return the launch error (bad configuration,
// too much shared memory) as one line. Execution errors surface at the next synchronizing call.
#define IOATTN_CHECK_LAUNCH() IOATTN_CHECK(hipGetLastError())

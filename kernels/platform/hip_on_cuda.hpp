// kernels/platform/hip_on_cuda.hpp: the HIP runtime names ioattn uses, mapped onto the CUDA runtime.
//
// Why this file exists: ROCm 5.2's own HIP-on-NVIDIA headers (hip/nvidia_detail) do not compile
// with CUDA 13 (they reference texture and device-property APIs CUDA 13 removed; checked with
// ROCm 5.2.3 from Debian 12 and nvcc 13.0). Kernels are written in HIP; under nvcc this header supplies exactly the
// subset they use and nothing more. If a variant needs another runtime call, add it here, one
// line, with the same HIP name, so the AMD build (real HIP headers) sees the same source.
//
// Included only through platform.hpp, and only when compiling with nvcc.
#pragma once

#if !defined(__CUDACC__)
#error "hip_on_cuda.hpp is the NVIDIA mapping: include kernels/platform/platform.hpp instead"
#endif

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>

// ---- errors -------------------------------------------------------------------------------------
using hipError_t = cudaError_t;
inline constexpr hipError_t hipSuccess = cudaSuccess;
inline hipError_t hipGetLastError() { return cudaGetLastError(); }
inline hipError_t hipPeekAtLastError() { return cudaPeekAtLastError(); }
inline const char* hipGetErrorString(hipError_t e) { return cudaGetErrorString(e); }
inline const char* hipGetErrorName(hipError_t e) { return cudaGetErrorName(e); }

// ---- devices ------------------------------------------------------------------------------------
using hipDeviceProp_t = cudaDeviceProp;
inline hipError_t hipGetDeviceCount(int* n) { return cudaGetDeviceCount(n); }
inline hipError_t hipGetDevice(int* d) { return cudaGetDevice(d); }
inline hipError_t hipSetDevice(int d) { return cudaSetDevice(d); }
inline hipError_t hipGetDeviceProperties(hipDeviceProp_t* p, int d) { return cudaGetDeviceProperties(p, d); }
inline hipError_t hipDeviceSynchronize() { return cudaDeviceSynchronize(); }
inline hipError_t hipMemGetInfo(size_t* free_b, size_t* total_b) { return cudaMemGetInfo(free_b, total_b); }

// ---- memory -------------------------------------------------------------------------------------
using hipMemcpyKind = cudaMemcpyKind;
inline constexpr hipMemcpyKind hipMemcpyHostToDevice = cudaMemcpyHostToDevice;
inline constexpr hipMemcpyKind hipMemcpyDeviceToHost = cudaMemcpyDeviceToHost;
inline constexpr hipMemcpyKind hipMemcpyDeviceToDevice = cudaMemcpyDeviceToDevice;
inline constexpr hipMemcpyKind hipMemcpyDefault = cudaMemcpyDefault;
template <class T>
inline hipError_t hipMalloc(T** p, size_t bytes) { return cudaMalloc(reinterpret_cast<void**>(p), bytes); }
inline hipError_t hipFree(void* p) { return cudaFree(p); }
inline hipError_t hipMemcpy(void* dst, const void* src, size_t bytes, hipMemcpyKind k) {
  return cudaMemcpy(dst, src, bytes, k);
}
inline hipError_t hipMemset(void* dst, int value, size_t bytes) { return cudaMemset(dst, value, bytes); }

// ---- streams and events -------------------------------------------------------------------------
using hipStream_t = cudaStream_t;
using hipEvent_t = cudaEvent_t;
inline hipError_t hipStreamCreate(hipStream_t* s) { return cudaStreamCreate(s); }
inline hipError_t hipStreamDestroy(hipStream_t s) { return cudaStreamDestroy(s); }
inline hipError_t hipStreamSynchronize(hipStream_t s) { return cudaStreamSynchronize(s); }
inline hipError_t hipMemcpyAsync(void* dst, const void* src, size_t bytes, hipMemcpyKind k, hipStream_t s) {
  return cudaMemcpyAsync(dst, src, bytes, k, s);
}
inline hipError_t hipMemsetAsync(void* dst, int value, size_t bytes, hipStream_t s) {
  return cudaMemsetAsync(dst, value, bytes, s);
}
inline hipError_t hipEventCreate(hipEvent_t* e) { return cudaEventCreate(e); }
inline hipError_t hipEventDestroy(hipEvent_t e) { return cudaEventDestroy(e); }
inline hipError_t hipEventRecord(hipEvent_t e, hipStream_t s = nullptr) { return cudaEventRecord(e, s); }
inline hipError_t hipEventSynchronize(hipEvent_t e) { return cudaEventSynchronize(e); }
inline hipError_t hipEventElapsedTime(float* ms, hipEvent_t a, hipEvent_t b) { return cudaEventElapsedTime(ms, a, b); }

// ---- profiler range (Nsight Compute's --profile-from-start off) -------------------------------------
inline hipError_t hipProfilerStart() { return cudaProfilerStart(); }
inline hipError_t hipProfilerStop() { return cudaProfilerStop(); }

// ---- kernel attributes --------------------------------------------------------------------------
// Kernels that want more than 48 KiB of dynamic shared memory (LDS) must raise this limit first.
using hipFuncAttribute = cudaFuncAttribute;
inline constexpr hipFuncAttribute hipFuncAttributeMaxDynamicSharedMemorySize =
    cudaFuncAttributeMaxDynamicSharedMemorySize;
inline hipError_t hipFuncSetAttribute(const void* func, hipFuncAttribute attr, int value) {
  return cudaFuncSetAttribute(func, attr, value);
}
// What launcher.hpp reports in LaunchConfig: static shared memory and registers of a kernel, and
// how many of its blocks fit on one SM.
using hipFuncAttributes = cudaFuncAttributes;
inline hipError_t hipFuncGetAttributes(hipFuncAttributes* attr, const void* func) {
  return cudaFuncGetAttributes(attr, func);
}
inline hipError_t hipOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, const void* func, int block_size,
                                                              size_t dyn_shared_bytes) {
  return cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks, func, block_size, dyn_shared_bytes);
}

// ---- element types ------------------------------------------------------------------------------
// HIP spells the 16-bit types __half (same as CUDA) and __hip_bfloat16; CUDA's bf16 is
// __nv_bfloat16. Kernels use ioattn::fp16_t / ioattn::bf16_t from platform.hpp, not these names.
using __hip_bfloat16 = __nv_bfloat16;

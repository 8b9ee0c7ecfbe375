// kernels/launch.hpp: the one launch signature and the registry of kernel variants.
//
// This header is plain C++ (no HIP/CUDA types) so that the CLI, the C ABI and tests can include
// it from any compiler. Every variant file (v01_naive.hip, ...) defines one or more KernelInfo
// entries; registry.cpp collects them. Validation, timing and data generation live in the harness
// (harness.hpp), never in a variant file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "ioattn/problem.hpp"

namespace ioattn::kernels {

// Device pointers in the BSHD layout of problem.hpp. q/k/v/o hold elements of problem.dtype
// (float, __half or __hip_bfloat16); lse is always fp32, (batch, heads_q, seqlen_q).
struct DeviceTensors {
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  void* o = nullptr;
  float* lse = nullptr;
};

// Tuning knobs a variant may accept; 0 means "the variant's default".
struct KernelOptions {
  int br = 0;      // query rows per block (Br)
  int bc = 0;      // key columns per block (Bc)
  int splits = 0;  // split-KV: number of key splits
};

// Result of a launch: nullopt on success, else one line naming the violated constraint or the
// runtime error. A launcher checks problem.validate() and its own constraints before touching
// the device, so an unsupported problem never reaches a kernel.
using LaunchStatus = std::optional<std::string>;

struct KernelInfo {
  std::string_view name;         // registry key, e.g. "v03_fa2_scalar"
  std::string_view idea;         // one line: what this variant adds over the previous one
  std::string_view strategy;     // simulator strategy that models its traffic: standard|fa1|fa2|splitkv
  std::string_view dtypes;       // e.g. "fp32,fp16,bf16"
  std::string_view head_dims;    // e.g. "any<=256" or "64,128"
  bool takes_tile_sizes = false; // honours KernelOptions::br/bc

  // nullopt if the variant can run `p` with `opt`, else the violated constraint.
  LaunchStatus (*supports)(const AttnProblem& p, const KernelOptions& opt) = nullptr;
  // Device scratch the launch needs (naive S, FA1's m and l, split-KV partials), in bytes.
  std::size_t (*workspace_bytes)(const AttnProblem& p, const KernelOptions& opt) = nullptr;
  // Enqueue the kernel(s) on `stream` (a hipStream_t; nullptr = default stream). `workspace`
  // points to workspace_bytes(p, opt) bytes of device memory (may be nullptr when that is 0).
  LaunchStatus (*launch)(const AttnProblem& p, const DeviceTensors& t, const KernelOptions& opt,
                         void* workspace, void* stream) = nullptr;
};

// What a variant file defines: three free functions named after the variant id (the file's stem),
// declared by this macro in the variant file and in registry.cpp, e.g.
//   IOATTN_DECLARE_VARIANT(v01_naive)  ->  v01_naive_supports, v01_naive_workspace_bytes,
//                                          v01_naive_launch
#define IOATTN_DECLARE_VARIANT(id)                                                              \
  ::ioattn::kernels::LaunchStatus id##_supports(const ::ioattn::AttnProblem& p,                  \
                                                const ::ioattn::kernels::KernelOptions& opt);    \
  std::size_t id##_workspace_bytes(const ::ioattn::AttnProblem& p,                               \
                                   const ::ioattn::kernels::KernelOptions& opt);                 \
  ::ioattn::kernels::LaunchStatus id##_launch(                                                   \
      const ::ioattn::AttnProblem& p, const ::ioattn::kernels::DeviceTensors& t,                 \
      const ::ioattn::kernels::KernelOptions& opt, void* workspace, void* stream)

// True when this build has the GPU variants (nvcc found); otherwise the registry holds metadata
// only and every launch answers "built without GPU support".
bool built_with_gpu();

// All variants in ladder order.
std::span<const KernelInfo> registry();
// nullptr when no variant has that name.
const KernelInfo* find_kernel(std::string_view name);

}  // namespace ioattn::kernels

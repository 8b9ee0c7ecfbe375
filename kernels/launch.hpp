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
// The layout's tables (ioattn/layout.hpp), int32 on the device, null when the problem's layout has
// none (always, for a dense problem): cu_seqlens_q / cu_seqlens_k (batch + 1 offsets) of packed
// queries / keys; block_table (batch, max_pages), row-major, and seqused_k (batch) of a paged KV
// cache, whose K and V are then (num_pages, page_size, heads_kv, d). A variant that declares a
// layout (LayoutSupport below) refuses a launch whose problem has that layout but lacks its tables.
struct DeviceTensors {
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  void* o = nullptr;
  float* lse = nullptr;
  const int32_t* cu_seqlens_q = nullptr;
  const int32_t* cu_seqlens_k = nullptr;
  const int32_t* block_table = nullptr;
  const int32_t* seqused_k = nullptr;
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

// The launch configuration a variant REALLY uses for one (problem, options), as its launch path
// resolves it (kernels/launcher.hpp: config() walks the same code as launch() without enqueuing).
// Fields describe the variant's main kernel (v01: pass 1, the scores; v03b: the partial pass; a
// backward variant, backward.hpp: its K/V-outer kernel):
//   br, bc       query rows / key columns per tile after defaults are resolved (0: no tile, v01)
//   stages       depth of the K/V shared-memory pipeline (1: a single buffer, or none)
//   threads      threads per CTA (block)
//   smem_bytes   shared memory (LDS) per CTA: dynamic + static
//   ctas_per_sm  CTAs of this kernel instance resident per SM (CU), from the runtime's occupancy
//                calculator for the current device (so config() needs a GPU); never 0: a kernel of
//                which no CTA fits is refused
//   grid_x/y/z   grid of the main kernel
//   launches     kernel launches per forward (v01: 3, v03b: 2, others 1) or per backward (bwd01: 3)
//   splits       key splits (split-KV; 0 for the others)
//   grid_order   how CTA indices map onto (batch, head, query block; key block in a backward), one of:
//     bh_major          1-D grid, CTA = (b*Hq + h)*Tr + query_block: all query blocks of one head
//                       are dispatched together (v03)
//     bh_major_chunks   1-D grid, CTA = (b*Hq + h)*chunks + chunk, a chunk being kChunk = 8
//                       consecutive query blocks walked by one CTA in FA1 order (v02)
//     bh_major_splits   1-D grid, CTA = ((b*Hq + h)*Tr + query_block)*splits + split: the splits of
//                       one query block together, then bh_major (v03b's partial pass)
//     qblock_major      2-D grid, x = b*Hq + h (fastest), y = query block: all heads of one query
//                       block are dispatched together (v04)
//     qblock_major_rev  as qblock_major, but CTA y computes query block Tr-1-y: the heavy (late,
//                       under a causal mask) query blocks first (v05, v06)
//     persistent_bh_major, persistent_qblock_major_rev
//                       a persistent grid (one CTA per SM, fewer when there are fewer tiles): CTA c
//                       walks the tiles c, c + grid_x, ... of the bh_major / qblock_major_rev order
//                       of (b*Hq + h, query block); the first for unmasked problems, the second
//                       (heavy first) for masked ones (v08p; kernels/tile_scheduler.hpp)
//     persistent_bh_major_rev
//                       the same grid walking bh_major with each head's query blocks reversed
//                       (heavy first within a head): v08p's masked order where its balance
//                       allows (short N); the simulator models it as bh_major (the grouping of
//                       heads, not the reversal within a head)
//     rows_strided      grid-stride loops over elements or rows; a CTA owns no tile (v01)
//     kv_bh_major       1-D grid, CTA = (b*Hkv + h_kv)*Tc + key_block: all key blocks of one K/V
//                       head are dispatched together, each CTA walking every query head of its
//                       GQA group (the K/V-outer kernel of a backward: bwd01, bwd01b)
//     kv_splits_rows    1-D grid, CTA = ((b*Hkv + h_kv)*splits + split)*Tr + row_tile, a row tile
//                       being Br packed rows (query heads of one GQA group x query positions):
//                       the row tiles of one key split together, then the splits, then the K/V
//                       heads (v07's main kernel; Tr = 1 when decoding)
struct LaunchConfig {
  int br = 0;
  int bc = 0;
  int stages = 1;
  int threads = 0;
  std::size_t smem_bytes = 0;
  int ctas_per_sm = 0;
  int64_t grid_x = 0, grid_y = 1, grid_z = 1;
  int launches = 1;
  int splits = 0;
  std::string grid_order;
};

// "br=128<sep>bc=128<sep>stages=3<sep>...<sep>grid_order=qblock_major_rev": every field, in the
// order of the struct. The C ABI (ioattn_kernel_config) uses sep ';', the CLI ' '.
std::string format_config(const LaunchConfig& c, char sep);

// Layouts other than dense BSHD (ioattn/layout.hpp) a variant reads. The registry (registry.cpp,
// bwd_registry.cpp) refuses any other layout before the variant's own supports(), launch() or
// config() runs (registry_precheck below), so a packed or paged problem never runs as dense. A
// variant that reads one declares it in its registry's layout table (registry.cpp).
struct LayoutSupport {
  bool varlen = false;    // packed queries and/or keys (cu_seqlens_q, cu_seqlens_k)
  bool paged_kv = false;  // K and V read through a block table
};

// What every registry entry checks first (forward and backward alike): the problem is valid, and its
// layout is one the variant declares. nullopt if so, else one line starting with the variant's name.
// Whether a registry line's dtype list ("fp16,bf16") names `dtype`.
constexpr bool lists_dtype(std::string_view dtypes, std::string_view dtype) {
  while (!dtypes.empty()) {
    const std::size_t comma = dtypes.find(',');
    if (dtypes.substr(0, comma) == dtype) return true;
    if (comma == std::string_view::npos) break;
    dtypes.remove_prefix(comma + 1);
  }
  return false;
}

// `dtypes` is the registry line's dtype list: an FP8 problem reaches only a variant that declares
// its FP8 dtype there (v09_fp8_wgmma: "fp8_e4m3"); every other variant has no FP8 path and is refused
// here by name, before its own supports() runs. The backward registry passes none (no FP8 backward).
inline std::optional<std::string> registry_precheck(std::string_view variant, const LayoutSupport& s,
                                                    const AttnProblem& p, std::string_view dtypes = {}) {
  if (auto e = p.validate()) return e;
  if (is_fp8(p.dtype) && !lists_dtype(dtypes, dtype_name(p.dtype)))
    return std::string(variant) + ": dtype " + std::string(dtype_name(p.dtype)) + " not supported";
  const bool varlen = p.layout.varlen_q() || p.layout.varlen_k();
  if ((varlen && !s.varlen) || (p.layout.paged() && !s.paged_kv))
    return std::string(variant) + ": paged KV / varlen not supported (the problem is " + p.layout.describe() + ")";
  return std::nullopt;
}

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
  // The configuration launch(p, opt) would use on the current device (LaunchConfig above);
  // refuses exactly what launch refuses (same checks, same code path), and needs a GPU for the
  // occupancy.
  LaunchStatus (*config)(const AttnProblem& p, const KernelOptions& opt, LaunchConfig& out) = nullptr;
  // supports, launch and config above are the registry's wrappers: registry_precheck, then the
  // variant's own function.
  LayoutSupport layouts{};
};

// What a variant file defines: four free functions named after the variant id (the file's stem),
// declared by this macro in the variant file and in registry.cpp, e.g.
//   IOATTN_DECLARE_VARIANT(v01_naive)  ->  v01_naive_supports, v01_naive_workspace_bytes,
//                                          v01_naive_launch, v01_naive_config
// launch and config share one launch path written against kernels/launcher.hpp's Launcher: the
// path resolves tiles and grid and calls Launcher::main (the kernel LaunchConfig describes) and
// Launcher::aux (any other launch); launch() runs it to enqueue, config() to describe. A
// configuration is therefore never typed twice, and config() cannot drift from launch().
#define IOATTN_DECLARE_VARIANT(id)                                                              \
  ::ioattn::kernels::LaunchStatus id##_supports(const ::ioattn::AttnProblem& p,                  \
                                                const ::ioattn::kernels::KernelOptions& opt);    \
  std::size_t id##_workspace_bytes(const ::ioattn::AttnProblem& p,                               \
                                   const ::ioattn::kernels::KernelOptions& opt);                 \
  ::ioattn::kernels::LaunchStatus id##_launch(                                                   \
      const ::ioattn::AttnProblem& p, const ::ioattn::kernels::DeviceTensors& t,                 \
      const ::ioattn::kernels::KernelOptions& opt, void* workspace, void* stream);                \
  ::ioattn::kernels::LaunchStatus id##_config(const ::ioattn::AttnProblem& p,                    \
                                              const ::ioattn::kernels::KernelOptions& opt,      \
                                              ::ioattn::kernels::LaunchConfig& out)

// True when this build has the GPU variants (nvcc found); otherwise the registry holds metadata
// only and every launch answers "built without GPU support".
bool built_with_gpu();

// All variants in ladder order.
std::span<const KernelInfo> registry();
// nullptr when no variant has that name.
const KernelInfo* find_kernel(std::string_view name);

}  // namespace ioattn::kernels

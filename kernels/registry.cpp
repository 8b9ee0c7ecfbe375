// kernels/registry.cpp: the ladder, in order, as one table of name -> (metadata, launcher).
//
// To add a variant: write kernels/vNN_name.hip defining vNN_name_{supports,workspace_bytes,launch,
// config} (see IOATTN_DECLARE_VARIANT in launch.hpp). Write the launch path once against
// kernels/launcher.hpp (Launcher::main for the kernel LaunchConfig describes, Launcher::aux for any
// other launch); launch() runs it with Launcher::enqueue(stream), config() with describe_launch(),
// so the reported tile, grid and occupancy are the launched ones. Then add its file to
// IOATTN_KERNEL_VARIANTS in kernels/CMakeLists.txt and ONE line to IOATTN_LADDER below. Tests,
// CLI, C ABI and the benchmark pick it up from here.
//
// Without nvcc this file is the whole library: the metadata still lists the ladder, and every
// launch answers "built without GPU support".
#include <algorithm>
#include <string>

#include "kernels/launch.hpp"

// X(id, strategy, dtypes, head_dims, takes_tile_sizes, idea)
// The order is the ladder's, except that each newer rung sits below the one it extends (v08 below
// v06, v08p below v08, v10 below v09, v07b below v07): they were listed so while they had not run on
// a GPU, and all of them have since (kernels/README.md). python/ioattn.py's kernel=None tries first
// the rungs the benchmark measured fastest for the nearest measured problem (python/forward_choice.json)
// and then the registry from the highest rung down, so this order only decides unmeasured problems.
// clang-format off
#define IOATTN_LADDER(X) \
  X(v01_naive,      "standard", "fp32,fp16,bf16", "any",      false, "three passes: S = scale*QK^T to HBM, softmax in place, O = P*V") \
  X(v02_fa1,        "fa1",      "fp32,fp16,bf16", "any<=256", true,  "FA1 loop order: K/V blocks outer, query blocks inner; O, m, l re-read from HBM per K/V block") \
  X(v03_fa2_scalar, "fa2",      "fp32,fp16,bf16", "any<=256", true,  "FA2 loop order: query block outer, online softmax in registers, scalar fp32 math (teaching kernel)") \
  X(v03b_splitkv_scalar, "splitkv", "fp32,fp16,bf16", "any<=256", true, "v03 + split-KV (Flash-Decoding): keys cut into splits, partial O/LSE combined by log-sum-exp") \
  X(v07b_decode_wgmma, "splitkv", "fp16,bf16",   "64,128,256", false, "v07 on Hopper wgmma: the packed rows (query heads x queries of a K/V group) as M = 64 per warpgroup, K/V in a cp.async ring of swizzled tiles (page-granular rows), warpgroups split a stage's keys or its rows, v07's split heuristic and combine; sm_90a only") \
  X(v07_decode_splitkv, "splitkv", "fp16,bf16",   "64,128,256", false, "Flash-Decoding on matrix cores: a K/V group's query heads x query rows packed as the MMA's M rows (one K/V load serves them all), keys split across CTAs by a GPU-filling heuristic, log-sum-exp combine") \
  X(v04_fa2_mma,    "fa2",      "fp16,bf16",      "64,128",   false, "FA2 on matrix cores (mma.sync/MFMA fragments): plain loads, one buffer, mask on every tile") \
  X(v05_fa2_fast,   "fa2",      "fp16,bf16",      "32,64,96,128,256", true, "v04 + cp.async pipeline, padded smem, ldmatrix, P in registers, exp2, boundary-only masks") \
  X(v08p_fa3_persistent, "fa2", "fp16,bf16",      "64,96,128,192,256", true,  "v08 on a persistent grid: one CTA per SM walks (batch, head, query block) work tiles in a static order (kernels/tile_scheduler.hpp: head-major for L2, under a mask heavy query blocks first, across heads or within each head, chosen per launch), the next tile's Q and first K/V loaded while the consumers finish the current one, O stored by TMA from shared memory; sm_90a only") \
  X(v08_fa3_warpspec, "fa2",    "fp16,bf16",      "64,96,128,192,256", true,  "v06 warp-specialized (FA3): a producer warp issues TMA loads of K/V into an mbarrier ring, two or three consumer warpgroups (setmaxnreg 24/240 or 24/160) ping-pong their GEMMs via named barriers; other head dims that are multiples of 8 up to 256 padded inside; sm_90a only") \
  X(v06_fa2_wgmma,  "fa2",      "fp16,bf16",      "64,128",   true,  "v05 on Hopper wgmma (warpgroup MMA from swizzled shared tiles); softmax of one tile overlaps P*V of the previous (FA3); sm_90a only") \
  X(v10_fp8_warpspec, "fa2",    "fp8_e4m3",       "64,128,256", true,  "v09's FP8 arithmetic on v08's warp-specialized loop: TMA producer warpgroup, K and V^T rings with mbarriers (V^T from v09's transpose pass), two or three consumer warpgroups in ping-pong, v09's promotion of S; sm_90a only") \
  X(v09_fp8_wgmma,  "fa2",      "fp8_e4m3",       "64,128,256", false, "v06 in FP8: wgmma e4m3 (k32), V transposed per head by a separate pass, P rounded to e4m3 in registers, descales on S and O, bf16/fp16 out; sm_90a only")
// clang-format on

// AMD-only variants (kernels/CMakeLists.txt, IOATTN_KERNEL_VARIANTS_AMD), same columns: listed only
// in a build that compiled them (IOATTN_BUILT_<id>), i.e. a build of the library for AMD (none
// exists today: AMD is compiled, not run); every NVIDIA and CPU-only build has the ladder above.
#if defined(IOATTN_BUILT_v09a_fp8_mfma)
#define IOATTN_LADDER_AMD(X) \
  X(v09a_fp8_mfma,  "fa2",      "fp8_e4m3",       "64,128,256", false, "v09 on CDNA3 FP8 MFMA (16x16x32): transposed products S^T = K Q^T, O^T = V^T P^T keep P in registers; OCP e4m3 inputs reach the FNUZ hardware as the codes of half their value (exact), V^T built in LDS; gfx940/941/942 only")
#else
#define IOATTN_LADDER_AMD(X)
#endif

// The layout table: variants that read packed (varlen) or paged layouts besides dense BSHD
// (LayoutSupport, launch.hpp), one line each, X(id, varlen, paged_kv); every other variant is
// refused such a problem by its registry entry.
//   v07_decode_splitkv  paged KV (K/V through the block table, seqused_k per sequence); dense Q only
//   v07b_decode_wgmma   the same as v07
//   v06_fa2_wgmma       packed Q and/or K (cu_seqlens_q/k), paged KV (any page size)
//   v05_fa2_fast        the same, at the default tile of each head dim
#define IOATTN_LAYOUT_SUPPORT(X) \
  X(v07_decode_splitkv, false, true) \
  X(v07b_decode_wgmma, false, true) \
  X(v06_fa2_wgmma, true, true) \
  X(v05_fa2_fast, true, true)

namespace ioattn::kernels {

namespace {
constexpr LayoutSupport layouts_of(std::string_view id) {
#define IOATTN_LAYOUT(v, varlen, paged) \
  if (id == #v) return LayoutSupport{varlen, paged};
  IOATTN_LAYOUT_SUPPORT(IOATTN_LAYOUT)
#undef IOATTN_LAYOUT
  (void)id;
  return {};
}
}  // namespace

#if defined(IOATTN_KERNELS_GPU)
#define IOATTN_DECLARE(id, ...) IOATTN_DECLARE_VARIANT(id);
IOATTN_LADDER(IOATTN_DECLARE)
IOATTN_LADDER_AMD(IOATTN_DECLARE)
#undef IOATTN_DECLARE
#define IOATTN_IMPL(id, fn) id##_##fn
bool built_with_gpu() { return true; }
#else
namespace {
constexpr const char* kNoGpu = "built without GPU support (nvcc was not found at configure time)";
LaunchStatus no_gpu_supports(const AttnProblem&, const KernelOptions&) { return kNoGpu; }
std::size_t no_gpu_workspace_bytes(const AttnProblem&, const KernelOptions&) { return 0; }
LaunchStatus no_gpu_launch(const AttnProblem&, const DeviceTensors&, const KernelOptions&, void*, void*) {
  return kNoGpu;
}
LaunchStatus no_gpu_config(const AttnProblem&, const KernelOptions&, LaunchConfig&) { return kNoGpu; }
}  // namespace
#define IOATTN_IMPL(id, fn) no_gpu_##fn
bool built_with_gpu() { return false; }
#endif

// The entries' supports, launch and config: registry_precheck (valid problem, declared layout),
// then the variant's own function; every caller reaches a variant through these.
namespace {
#define IOATTN_GUARD(id, strategy, dtypes, ...)                                                        \
  LaunchStatus id##_checked_supports(const AttnProblem& p, const KernelOptions& o) {                   \
    if (auto e = registry_precheck(#id, layouts_of(#id), p, dtypes)) return e;                         \
    return IOATTN_IMPL(id, supports)(p, o);                                                            \
  }                                                                                                    \
  LaunchStatus id##_checked_launch(const AttnProblem& p, const DeviceTensors& t, const KernelOptions& o, \
                                   void* ws, void* stream) {                                           \
    if (auto e = registry_precheck(#id, layouts_of(#id), p, dtypes)) return e;                         \
    return IOATTN_IMPL(id, launch)(p, t, o, ws, stream);                                               \
  }                                                                                                    \
  LaunchStatus id##_checked_config(const AttnProblem& p, const KernelOptions& o, LaunchConfig& out) {  \
    if (auto e = registry_precheck(#id, layouts_of(#id), p, dtypes)) return e;                         \
    return IOATTN_IMPL(id, config)(p, o, out);                                                         \
  }
IOATTN_LADDER(IOATTN_GUARD)
IOATTN_LADDER_AMD(IOATTN_GUARD)
#undef IOATTN_GUARD
}  // namespace
#define IOATTN_OPS(id) \
  &id##_checked_supports, &IOATTN_IMPL(id, workspace_bytes), &id##_checked_launch, &id##_checked_config

namespace {
#define IOATTN_ENTRY(id, strategy, dtypes, head_dims, tiles, idea) \
  KernelInfo{#id, idea, strategy, dtypes, head_dims, tiles, IOATTN_OPS(id), layouts_of(#id)},
const KernelInfo kLadder[] = {IOATTN_LADDER(IOATTN_ENTRY) IOATTN_LADDER_AMD(IOATTN_ENTRY)};
#undef IOATTN_ENTRY
}  // namespace

std::span<const KernelInfo> registry() { return kLadder; }

std::string format_config(const LaunchConfig& c, char sep) {
  std::string s;
  auto add = [&](const char* key, const std::string& value) {
    if (!s.empty()) s += sep;
    s += key;
    s += '=';
    s += value;
  };
  add("br", std::to_string(c.br));
  add("bc", std::to_string(c.bc));
  add("stages", std::to_string(c.stages));
  add("threads", std::to_string(c.threads));
  add("smem_bytes", std::to_string(c.smem_bytes));
  add("ctas_per_sm", std::to_string(c.ctas_per_sm));
  add("grid_x", std::to_string(c.grid_x));
  add("grid_y", std::to_string(c.grid_y));
  add("grid_z", std::to_string(c.grid_z));
  add("launches", std::to_string(c.launches));
  add("splits", std::to_string(c.splits));
  add("grid_order", c.grid_order);
  return s;
}

const KernelInfo* find_kernel(std::string_view name) {
  const auto it = std::find_if(std::begin(kLadder), std::end(kLadder),
                               [&](const KernelInfo& k) { return k.name == name; });
  return it == std::end(kLadder) ? nullptr : &*it;
}

}  // namespace ioattn::kernels

// kernels/bwd_registry.cpp: the backward ladder, in order, as one table of name -> (metadata,
// launcher). The steps to add a variant: kernels/ADDING.md.
//
// Without nvcc this file is the whole backward: the metadata still lists the ladder, and every
// launch answers "built without GPU support".
#include <algorithm>

#include "kernels/backward.hpp"

// X(id, pairs_with, strategy, dq_mode, gqa_reduce, deterministic, dtypes, head_dims, takes_tile_sizes, idea)
// clang-format off
#define IOATTN_BWD_LADDER(X) \
  X(bwd01_fa2_scalar,         "v03_fa2_scalar", "fa2", "atomic",   "in_block", false, "fp32,fp16,bf16", "any<=256", true, \
    "FA2 backward, scalar fp32 math (teaching kernel): one CTA per K/V block, Q_i/dO_i streamed, P and dS recomputed from LSE, dK/dV in registers, dQ by fp32 atomics") \
  X(bwd01b_fa2_scalar_dqpass, "v03_fa2_scalar", "fa2", "separate", "in_block", true,  "fp32,fp16,bf16", "any<=256", true, \
    "bwd01 without atomics: the K/V-outer kernel computes dK/dV only, a Q-outer pass recomputes S, dP and owns dQ_i (deterministic)") \
  X(bwd02_fa2_mma,            "v04_fa2_mma",    "fa2", "atomic",   "in_block", false, "fp16,bf16",      "64,128",   false, \
    "the five products on matrix cores (mma.sync / MFMA via fragment.hpp): each warp owns 16 keys, S^T, dP^T, P^T, dS^T as fragments, dQ by fp32 atomics") \
  X(bwd02b_fa2_mma_dqpass,    "v04_fa2_mma",    "fa2", "separate", "in_block", true,  "fp16,bf16",      "64,128",   false, \
    "bwd02 without atomics: dK/dV only in the K/V-outer kernel, a Q-outer matrix-core pass owns dQ_i (deterministic)") \
  X(bwd03_fa3_wgmma,          "v06_fa2_wgmma",  "fa2", "atomic",   "in_block", false, "fp16,bf16",      "64,128",   false, \
    "the five products on Hopper wgmma (sm_90a) from 128B-swizzled shared tiles: 2 warpgroups x 64 keys per CTA, Q_i/dO_i through a cp.async ring, P^T/dS^T as register A operands, dQ by 8-byte fp32 atomics") \
  X(bwd03b_fa3_wgmma_dqpass,  "v06_fa2_wgmma",  "fa2", "separate", "in_block", true,  "fp16,bf16",      "64,128",   false, \
    "bwd03 without atomics: dK/dV only in the K/V-outer wgmma kernel, a Q-outer wgmma pass owns dQ_i (deterministic)")
// clang-format on

// The layout table (LayoutSupport, launch.hpp): backward variants that read packed (varlen) or
// paged layouts, one line each, X(id, varlen, paged_kv). None does yet.
#define IOATTN_BWD_LAYOUT_SUPPORT(X)

namespace ioattn::kernels {

namespace {
constexpr LayoutSupport layouts_of(std::string_view id) {
#define IOATTN_LAYOUT(v, varlen, paged) \
  if (id == #v) return LayoutSupport{varlen, paged};
  IOATTN_BWD_LAYOUT_SUPPORT(IOATTN_LAYOUT)
#undef IOATTN_LAYOUT
  (void)id;
  return {};
}
}  // namespace

#if defined(IOATTN_KERNELS_GPU)
#define IOATTN_BWD_DECLARE(id, ...) IOATTN_DECLARE_BACKWARD(id);
IOATTN_BWD_LADDER(IOATTN_BWD_DECLARE)
#undef IOATTN_BWD_DECLARE
#define IOATTN_BWD_IMPL(id, fn) id##_##fn
#else
namespace {
constexpr const char* kNoGpu = "built without GPU support (nvcc was not found at configure time)";
LaunchStatus no_gpu_supports(const AttnProblem&, const BackwardOptions&) { return kNoGpu; }
std::size_t no_gpu_workspace_bytes(const AttnProblem&, const BackwardOptions&) { return 0; }
LaunchStatus no_gpu_launch(const AttnProblem&, const BackwardTensors&, const BackwardOptions&, void*, void*) {
  return kNoGpu;
}
LaunchStatus no_gpu_config(const AttnProblem&, const BackwardOptions&, LaunchConfig&) { return kNoGpu; }
}  // namespace
#define IOATTN_BWD_IMPL(id, fn) no_gpu_##fn
#endif

// The entries' supports, launch and config: registry_precheck (launch.hpp), then the variant's own.
namespace {
#define IOATTN_BWD_GUARD(id, ...)                                                                           \
  LaunchStatus id##_checked_supports(const AttnProblem& p, const BackwardOptions& o) {                      \
    if (auto e = registry_precheck(#id, layouts_of(#id), p)) return e;                                      \
    return IOATTN_BWD_IMPL(id, supports)(p, o);                                                             \
  }                                                                                                         \
  LaunchStatus id##_checked_launch(const AttnProblem& p, const BackwardTensors& t, const BackwardOptions& o, \
                                   void* ws, void* stream) {                                                \
    if (auto e = registry_precheck(#id, layouts_of(#id), p)) return e;                                      \
    return IOATTN_BWD_IMPL(id, launch)(p, t, o, ws, stream);                                                \
  }                                                                                                         \
  LaunchStatus id##_checked_config(const AttnProblem& p, const BackwardOptions& o, LaunchConfig& out) {     \
    if (auto e = registry_precheck(#id, layouts_of(#id), p)) return e;                                      \
    return IOATTN_BWD_IMPL(id, config)(p, o, out);                                                          \
  }
IOATTN_BWD_LADDER(IOATTN_BWD_GUARD)
#undef IOATTN_BWD_GUARD
}  // namespace
#define IOATTN_BWD_OPS(id) \
  &id##_checked_supports, &IOATTN_BWD_IMPL(id, workspace_bytes), &id##_checked_launch, &id##_checked_config

namespace {
#define IOATTN_BWD_ENTRY(id, pairs, strategy, dq, gqa, det, dtypes, head_dims, tiles, idea) \
  BackwardInfo{#id, idea, pairs, strategy, dq, gqa, det, dtypes, head_dims, tiles, IOATTN_BWD_OPS(id), layouts_of(#id)},
const BackwardInfo kBackwardLadder[] = {IOATTN_BWD_LADDER(IOATTN_BWD_ENTRY)};
#undef IOATTN_BWD_ENTRY
}  // namespace

std::span<const BackwardInfo> backward_registry() { return kBackwardLadder; }

const BackwardInfo* find_backward(std::string_view name) {
  const auto it = std::find_if(std::begin(kBackwardLadder), std::end(kBackwardLadder),
                               [&](const BackwardInfo& k) { return k.name == name; });
  return it == std::end(kBackwardLadder) ? nullptr : &*it;
}

}  // namespace ioattn::kernels

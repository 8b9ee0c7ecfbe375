// kernels/backward.hpp: the one launch signature and the registry of the BACKWARD kernel variants.
//
// Plain C++ (no HIP/CUDA types), like launch.hpp, so the CLI, the C ABI, the Python module and the
// tests can include it from any compiler. A backward variant file (bwd01_fa2_scalar.hip, ...)
// defines <id>_supports, <id>_workspace_bytes, <id>_launch and <id>_config
// (IOATTN_DECLARE_BACKWARD below); bwd_registry.cpp lists them in ladder order. Validation, poisoning and timing live in the
// backward harness (harness_bwd.hpp), the comparison with reference/ in check_bwd.hpp.
//
// A backward consumes the forward's saved state, O and LSE, so every backward names the forward
// variant it pairs with (`pairs_with`, a name of registry() in launch.hpp): the harness runs that
// forward on the device first and hands its O and LSE to the backward, as a training step does.
//
// What a backward computes (FlashAttention-2, Algorithm 2), for L = sum(dO o O):
//   D_i   = rowsum(dO_i o O_i)                       (B, Hq, Nq) fp32, in the workspace
//   P_ij  = exp(S_ij - LSE_i),  S_ij = scale Q_i K_j^T (masked)
//   dP_ij = dO_i V_j^T,  dS_ij = P_ij o (dP_ij - D_i)
//   dQ_i  = scale sum_j dS_ij K_j,  dK_j = scale sum_i dS_ij^T Q_i,  dV_j = sum_i P_ij^T dO_i
// GQA/MQA: dK and dV of a K/V head sum over the heads_q / heads_kv query heads of its group.
// A fully masked row (LSE = -inf) contributes nothing; its dQ row is exactly 0, never NaN.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "ioattn/problem.hpp"
#include "kernels/launch.hpp"  // LaunchStatus, LaunchConfig

namespace ioattn::kernels {

// Device pointers in the BSHD layout of problem.hpp. q, k, v, o, d_o, dq, dk, dv hold elements of
// problem.dtype; lse is fp32 (batch, heads_q, seqlen_q), natural log, as the forward wrote it.
struct BackwardTensors {
  const void* q = nullptr;    // (B, Nq, Hq, d)
  const void* k = nullptr;    // (B, Nk, Hkv, d)
  const void* v = nullptr;    // (B, Nk, Hkv, d)
  const void* o = nullptr;    // (B, Nq, Hq, d): the paired forward's output
  const float* lse = nullptr; // (B, Hq, Nq): the paired forward's LSE (-inf for a fully masked row)
  const void* d_o = nullptr;  // (B, Nq, Hq, d): dL/dO
  void* dq = nullptr;         // (B, Nq, Hq, d) out
  void* dk = nullptr;         // (B, Nk, Hkv, d) out: summed over the group's query heads
  void* dv = nullptr;         // (B, Nk, Hkv, d) out: idem
};

// Tile sizes a backward may accept; 0 means "the variant's default".
//   bc: key rows of the K/V block one CTA owns (the outer loop of FA2's backward);
//   br: query rows of the Q_i / dO_i tiles streamed past it (and of a Q-outer dQ pass).
struct BackwardOptions {
  int br = 0;
  int bc = 0;
};

struct BackwardInfo {
  std::string_view name;        // registry key, e.g. "bwd01_fa2_scalar"
  std::string_view idea;        // one line: what this variant adds over the previous one
  std::string_view pairs_with;  // the forward variant (launch.hpp registry) whose O and LSE it reads
  // The simulator's model of its traffic: `ioattn simulate --pass bwd --strategy <strategy>
  // --dq <dq_mode>` (simulator/strategies.cpp, flash_bwd). dq_mode is one of
  //   "atomic"    the K/V-outer kernel adds dS_ij K_j into an fp32 dQ accumulator with atomics, a
  //               convert kernel rounds it (simulator kernels bwd_preprocess, bwd_main, dq_convert)
  //   "separate"  the K/V-outer kernel computes only dK, dV; a second, Q-outer kernel recomputes
  //               S and dP and owns dQ_i (bwd_preprocess, bwd_dkdv, bwd_dq): no atomics
  std::string_view strategy;    // "fa2"
  std::string_view dq_mode;     // "atomic" | "separate"
  // How dK, dV are summed over the query heads of a GQA group:
  //   "in_block"  one CTA per (batch, kv head, K/V block) walks every query head of the group in
  //               a fixed order: deterministic, no expanded dK/dV and no reduce kernel (the
  //               simulator's GQA model writes per-query-head dK/dV and reduces them instead)
  std::string_view gqa_reduce;
  bool deterministic = false;   // bit-identical dQ, dK, dV across launches on the same inputs
  std::string_view dtypes;      // e.g. "fp32,fp16,bf16"
  std::string_view head_dims;   // e.g. "any<=256"
  bool takes_tile_sizes = false;  // honours BackwardOptions::br/bc

  // nullopt if the variant can run `p` with `opt`, else the violated constraint (one line). It
  // does not check the paired forward; the harness does (find_kernel(pairs_with)->supports).
  LaunchStatus (*supports)(const AttnProblem& p, const BackwardOptions& opt) = nullptr;
  // Device scratch in bytes: D = rowsum(dO o O) (4 B Hq Nq) and, for dq_mode "atomic", the fp32 dQ
  // accumulator (4 B Nq Hq d). Its content on entry does not matter (the harness NaN-poisons it).
  std::size_t (*workspace_bytes)(const AttnProblem& p, const BackwardOptions& opt) = nullptr;
  // Enqueue the backward's kernels on `stream` (a hipStream_t; nullptr = default stream).
  // `workspace` points to workspace_bytes(p, opt) bytes of device memory. Checks supports() first,
  // so an unsupported problem never reaches a kernel.
  LaunchStatus (*launch)(const AttnProblem& p, const BackwardTensors& t, const BackwardOptions& opt,
                         void* workspace, void* stream) = nullptr;
  // The configuration launch(p, opt) would use on the current device (LaunchConfig, launch.hpp),
  // describing the backward's MAIN kernel, the K/V-outer one (grid_order "kv_bh_major" for bwd01);
  // `launches` counts every launch of the backward (preprocess, main, dQ convert or dQ pass).
  // Refuses exactly what launch refuses (same code path: kernels/launcher.hpp), and needs a GPU
  // for the occupancy.
  LaunchStatus (*config)(const AttnProblem& p, const BackwardOptions& opt, LaunchConfig& out) = nullptr;
  // supports, launch and config above are the registry's wrappers: registry_precheck (launch.hpp),
  // then the variant's own function.
  LayoutSupport layouts{};
};

// What a backward variant file defines: four free functions named after the variant id, declared
// by this macro in the variant file and in bwd_registry.cpp. As for a forward (IOATTN_DECLARE_VARIANT),
// launch and config share one launch path written against kernels/launcher.hpp's Launcher:
// Launcher::main for the K/V-outer kernel, Launcher::aux for every other launch; launch() runs it
// with Launcher::enqueue(stream), config() with describe_launch() (bwd01_fa2_scalar.hip shows it).
#define IOATTN_DECLARE_BACKWARD(id)                                                                \
  ::ioattn::kernels::LaunchStatus id##_supports(const ::ioattn::AttnProblem& p,                    \
                                                const ::ioattn::kernels::BackwardOptions& opt);    \
  std::size_t id##_workspace_bytes(const ::ioattn::AttnProblem& p,                                 \
                                   const ::ioattn::kernels::BackwardOptions& opt);                 \
  ::ioattn::kernels::LaunchStatus id##_launch(                                                     \
      const ::ioattn::AttnProblem& p, const ::ioattn::kernels::BackwardTensors& t,                 \
      const ::ioattn::kernels::BackwardOptions& opt, void* workspace, void* stream);                \
  ::ioattn::kernels::LaunchStatus id##_config(const ::ioattn::AttnProblem& p,                      \
                                              const ::ioattn::kernels::BackwardOptions& opt,       \
                                              ::ioattn::kernels::LaunchConfig& out)

// All backward variants in ladder order (without nvcc: metadata only, every launch answers
// "built without GPU support", as registry() does).
std::span<const BackwardInfo> backward_registry();
// nullptr when no backward has that name.
const BackwardInfo* find_backward(std::string_view name);

}  // namespace ioattn::kernels

// kernels/harness_bwd.hpp: the one harness every backward variant runs under (plain C++, no HIP
// types), beside the forward's harness.hpp.
//
// What a backward run needs and variant files must not repeat: device buffers in the problem's
// dtype (Q, K, V, dO in; O, LSE from the forward; dQ, dK, dV out; the backward's workspace and the
// paired forward's), the PAIRED FORWARD run on the device through the forward registry (the
// backward reads exactly the O and LSE a training step would hand it), NaN-poisoning of dQ, dK, dV
// and the workspace before every backward launch (an element the kernel forgets stays NaN and
// fails the error rule), synchronize + error check, and event timing of the forward, the backward
// or both. The device helpers it shares with the forward's harness are in harness_device.hpp.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernels/backward.hpp"
#include "kernels/harness.hpp"  // gpu_unavailable, device_description, Timing
#include "kernels/launch.hpp"

namespace ioattn::kernels {

struct HostGrads {
  std::vector<float> dq;  // (batch, seqlen_q, heads_q, head_dim), widened from the dtype
  std::vector<float> dk;  // (batch, seqlen_k, heads_kv, head_dim)
  std::vector<float> dv;  // idem
};

// The forward state the backward consumed, downloaded (the error rule's baseline starts from it).
struct HostForwardState {
  std::vector<float> o;    // (batch, seqlen_q, heads_q, head_dim), widened from the dtype
  std::vector<float> lse;  // (batch, heads_q, seqlen_q)
};

enum class TimedPass { forward, backward, forward_backward };

// Device buffers for one (backward variant, problem, options). create, upload, forward(), then
// run() as often as wanted; every run() poisons the backward's outputs and workspace first.
class BackwardRun {
 public:
  // Checks bwd.supports(p, opt), that the forward (`forward`, or when null the paired one,
  // bwd.pairs_with) is registered and supports p with its default options, and that a GPU is
  // there; allocates every buffer. Any forward writes the O and LSE of the one output contract
  // (problem.hpp), so another forward than the paired one is allowed (`ioattn run --backward
  // --kernel`); the check's baseline starts from the state it wrote either way.
  static std::unique_ptr<BackwardRun> create(const BackwardInfo& bwd, const AttnProblem& p,
                                             const BackwardOptions& opt, LaunchStatus& status,
                                             const KernelInfo* forward = nullptr);
  ~BackwardRun();
  BackwardRun(const BackwardRun&) = delete;
  BackwardRun& operator=(const BackwardRun&) = delete;

  // q, k, v, d_o in BSHD, sizes p.q_elems(), p.kv_elems(), p.kv_elems(), p.q_elems(); rounded
  // to the dtype on upload. Invalidates a previous forward().
  LaunchStatus upload(const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v,
                      const std::vector<float>& d_o);
  // The paired forward on the device: O and LSE (NaN-poisoned first), synchronize, check.
  LaunchStatus forward();
  // The backward: poison dQ, dK, dV and the workspace with NaN, launch, synchronize, check.
  // Needs forward() after the last upload().
  LaunchStatus run();
  LaunchStatus download(HostGrads& out) const;
  LaunchStatus download_forward(HostForwardState& out) const;
  // `warmup` untimed launches, then `iters` launches each between two events; median of those.
  // TimedPass::forward times the forward alone; backward the backward's kernels alone (on the O
  // and LSE of forward(), which must have run); forward_backward the forward followed by the
  // backward. Nothing is poisoned between timed launches (the memsets would be timed too).
  LaunchStatus time(TimedPass pass, int warmup, int iters, Timing& out);
  // One backward launch (dQ, dK, dV and the workspace poisoned first) between
  // hipProfilerStart/Stop: what `ncu --profile-from-start off` measures. Needs forward().
  LaunchStatus profile_once();
  // Bytes of device memory this run holds (tensors and both workspaces).
  std::size_t device_bytes() const;
  // The forward this run launches (bwd.pairs_with unless create() was given another).
  const KernelInfo& paired_forward() const;

 private:
  BackwardRun() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ioattn::kernels

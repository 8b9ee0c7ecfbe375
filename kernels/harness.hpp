// kernels/harness.hpp: the one harness every variant runs under (plain C++, no HIP types).
//
// It owns what variant files must not repeat: device buffers in the problem's dtype, uploading
// host inputs (std::vector<float> holding dtype-representable values, as reference/ makes them),
// NaN-poisoning O, LSE and the workspace before every launch (an element the kernel forgets to
// write stays NaN and fails the error rule), synchronizing and checking errors after a launch,
// and CUDA/HIP-event median timing. The CLI (`ioattn run`), the GPU tests and the C ABI use it.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernels/launch.hpp"

namespace ioattn::kernels {

// nullopt when a GPU can run kernels, else why not ("built without GPU support", "no GPU: ...").
std::optional<std::string> gpu_unavailable();
// "NVIDIA H200 (sm_90, 132 SMs)" or the reason there is none.
std::string device_description();

struct HostOutputs {
  std::vector<float> o;    // (batch, seqlen_q, heads_q, head_dim), widened from the dtype
  std::vector<float> lse;  // (batch, heads_q, seqlen_q)
};

struct Timing {
  int iters = 0;
  double median_ms = 0, min_ms = 0, max_ms = 0;
};

// Device buffers for one (kernel, problem, options). Create, upload, then launch as often as
// wanted; every run() poisons the outputs first.
class DeviceRun {
 public:
  // Checks kernel.supports(p, opt), allocates Q, K, V, O, LSE and the workspace, and uploads the
  // layout's tables (DeviceTensors: cu_seqlens, block_table, seqused_k) when it has any.
  static std::unique_ptr<DeviceRun> create(const KernelInfo& kernel, const AttnProblem& p,
                                           const KernelOptions& opt, LaunchStatus& status);
  ~DeviceRun();
  DeviceRun(const DeviceRun&) = delete;
  DeviceRun& operator=(const DeviceRun&) = delete;

  // q, k, v in BSHD (or the layout's packed / paged tensors), sizes p.q_elems(), p.kv_elems(),
  // p.kv_elems(); rounded to the dtype.
  LaunchStatus upload(const std::vector<float>& q, const std::vector<float>& k,
                      const std::vector<float>& v);
  // Poison O, LSE, workspace with NaN, launch, synchronize, check the error.
  LaunchStatus run();
  LaunchStatus download(HostOutputs& out) const;
  // `warmup` untimed launches, then `iters` launches each between two events; median of those.
  // Outputs are not poisoned between timed launches (poisoning would be timed too).
  LaunchStatus time(int warmup, int iters, Timing& out);
  // One launch (outputs poisoned first) between hipProfilerStart/Stop: what `ncu
  // --profile-from-start off` measures, without the poisoning memsets or the timing loop.
  LaunchStatus profile_once();
  // Bytes of device memory this run holds (inputs, outputs, workspace, layout tables).
  std::size_t device_bytes() const;

 private:
  DeviceRun() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ioattn::kernels

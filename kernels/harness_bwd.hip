// kernels/harness_bwd.hip: device side of harness_bwd.hpp (buffers, the paired forward,
// poisoning, launch, events).
#include "kernels/harness_bwd.hpp"

#include "kernels/harness_device.hpp"
#include "kernels/platform/platform.hpp"

namespace ioattn::kernels {

struct BackwardRun::Impl {
  const BackwardInfo* bwd = nullptr;
  const KernelInfo* fwd = nullptr;
  AttnProblem p;
  BackwardOptions opt;
  void *q = nullptr, *k = nullptr, *v = nullptr, *d_o = nullptr, *o = nullptr;
  void *dq = nullptr, *dk = nullptr, *dv = nullptr, *ws = nullptr, *fwd_ws = nullptr;
  float* lse = nullptr;
  std::size_t ws_bytes = 0, fwd_ws_bytes = 0;
  std::size_t elem = 4;
  bool have_forward = false;

  ~Impl() {
    for (void* ptr : {q, k, v, d_o, o, dq, dk, dv, ws, fwd_ws, static_cast<void*>(lse)})
      if (ptr) (void)hipFree(ptr);
  }
  std::size_t q_bytes() const { return static_cast<std::size_t>(p.q_elems()) * elem; }
  std::size_t kv_bytes() const { return static_cast<std::size_t>(p.kv_elems()) * elem; }
  std::size_t lse_bytes() const { return static_cast<std::size_t>(p.lse_elems()) * sizeof(float); }
  BackwardTensors tensors() const { return {q, k, v, o, lse, d_o, dq, dk, dv}; }

  LaunchStatus launch_forward() const {
    return fwd->launch(p, DeviceTensors{q, k, v, o, lse}, KernelOptions{}, fwd_ws, nullptr);
  }
  LaunchStatus launch_backward() const { return bwd->launch(p, tensors(), opt, ws, nullptr); }

  LaunchStatus poison_forward() const {
    if (auto e = device::poison(o, q_bytes())) return e;
    if (auto e = device::poison(lse, lse_bytes())) return e;
    return device::poison(fwd_ws, fwd_ws_bytes);
  }
  LaunchStatus poison_backward() const {
    if (auto e = device::poison(dq, q_bytes())) return e;
    if (auto e = device::poison(dk, kv_bytes())) return e;
    if (auto e = device::poison(dv, kv_bytes())) return e;
    return device::poison(ws, ws_bytes);
  }
};

std::unique_ptr<BackwardRun> BackwardRun::create(const BackwardInfo& bwd, const AttnProblem& p,
                                                 const BackwardOptions& opt, LaunchStatus& status,
                                                 const KernelInfo* forward) {
  if ((status = bwd.supports(p, opt))) return nullptr;
  const KernelInfo* fwd = forward ? forward : find_kernel(bwd.pairs_with);
  if (!fwd) {
    status = std::string(bwd.name) + ": its paired forward " + std::string(bwd.pairs_with) + " is not registered";
    return nullptr;
  }
  if (auto why = fwd->supports(p, KernelOptions{})) {
    status = std::string(bwd.name) + ": its " + (forward ? "" : "paired ") + "forward " + std::string(fwd->name) +
             " refuses the problem: " + *why;
    return nullptr;
  }
  if ((status = gpu_unavailable())) return nullptr;
  std::unique_ptr<BackwardRun> run(new BackwardRun());
  run->impl_ = std::make_unique<Impl>();
  Impl& m = *run->impl_;
  m.bwd = &bwd;
  m.fwd = fwd;
  m.p = p;
  m.opt = opt;
  m.elem = dtype_bytes(p.dtype);
  m.ws_bytes = bwd.workspace_bytes(p, opt);
  m.fwd_ws_bytes = fwd->workspace_bytes(p, KernelOptions{});
  status = [&]() -> LaunchStatus {
    for (void** ptr : {&m.q, &m.d_o, &m.o, &m.dq}) IOATTN_CHECK(hipMalloc(ptr, m.q_bytes()));
    for (void** ptr : {&m.k, &m.v, &m.dk, &m.dv}) IOATTN_CHECK(hipMalloc(ptr, m.kv_bytes()));
    IOATTN_CHECK(hipMalloc(&m.lse, m.lse_bytes()));
    if (m.ws_bytes) IOATTN_CHECK(hipMalloc(&m.ws, m.ws_bytes));
    if (m.fwd_ws_bytes) IOATTN_CHECK(hipMalloc(&m.fwd_ws, m.fwd_ws_bytes));
    return std::nullopt;
  }();
  if (status) return nullptr;
  return run;
}

BackwardRun::~BackwardRun() = default;

LaunchStatus BackwardRun::upload(const std::vector<float>& q, const std::vector<float>& k,
                                 const std::vector<float>& v, const std::vector<float>& d_o) {
  Impl& m = *impl_;
  m.have_forward = false;
  if (q.size() != static_cast<std::size_t>(m.p.q_elems()) || d_o.size() != static_cast<std::size_t>(m.p.q_elems()) ||
      k.size() != static_cast<std::size_t>(m.p.kv_elems()) || v.size() != static_cast<std::size_t>(m.p.kv_elems()))
    return "upload: tensor sizes do not match the problem (Q, dO: batch*seqlen_q*heads_q*d, K/V: batch*seqlen_k*heads_kv*d)";
  return dispatch_dtype(m.p.dtype, [&]<class T>() -> LaunchStatus {
    if (auto e = device::upload_as<T>(m.q, q)) return e;
    if (auto e = device::upload_as<T>(m.k, k)) return e;
    if (auto e = device::upload_as<T>(m.v, v)) return e;
    return device::upload_as<T>(m.d_o, d_o);
  });
}

LaunchStatus BackwardRun::forward() {
  Impl& m = *impl_;
  m.have_forward = false;
  if (auto e = m.poison_forward()) return e;
  if (auto e = m.launch_forward()) return std::string(m.fwd->name) + " (paired forward): " + *e;
  if (auto e = device::synchronize()) return e;
  m.have_forward = true;
  return std::nullopt;
}

LaunchStatus BackwardRun::run() {
  Impl& m = *impl_;
  if (!m.have_forward) return "run: the paired forward has not run on the current inputs (call forward() first)";
  if (auto e = m.poison_backward()) return e;
  if (auto e = m.launch_backward()) return e;
  return device::synchronize();
}

LaunchStatus BackwardRun::download(HostGrads& out) const {
  const Impl& m = *impl_;
  return dispatch_dtype(m.p.dtype, [&]<class T>() -> LaunchStatus {
    if (auto e = device::download_as<T>(out.dq, m.dq, static_cast<std::size_t>(m.p.q_elems()))) return e;
    if (auto e = device::download_as<T>(out.dk, m.dk, static_cast<std::size_t>(m.p.kv_elems()))) return e;
    return device::download_as<T>(out.dv, m.dv, static_cast<std::size_t>(m.p.kv_elems()));
  });
}

LaunchStatus BackwardRun::download_forward(HostForwardState& out) const {
  const Impl& m = *impl_;
  if (!m.have_forward) return "download_forward: the paired forward has not run on the current inputs";
  if (auto e = dispatch_dtype(m.p.dtype, [&]<class T>() {
        return device::download_as<T>(out.o, m.o, static_cast<std::size_t>(m.p.q_elems()));
      }))
    return e;
  return device::download_as<float>(out.lse, m.lse, static_cast<std::size_t>(m.p.lse_elems()));
}

LaunchStatus BackwardRun::time(TimedPass pass, int warmup, int iters, Timing& out) {
  Impl& m = *impl_;
  if (pass == TimedPass::backward && !m.have_forward)
    return "time: the backward alone needs forward() on the current inputs first";
  auto once = [&]() -> LaunchStatus {
    if (pass != TimedPass::backward)
      if (auto e = m.launch_forward()) return e;
    if (pass == TimedPass::forward) return std::nullopt;
    return m.launch_backward();
  };
  if (auto e = m.poison_backward()) return e;
  if (auto e = device::time_launches(warmup, iters, once, out)) return e;
  // forward and forward_backward ran the forward on the current inputs: O and LSE are valid now.
  if (pass != TimedPass::backward) m.have_forward = true;
  return std::nullopt;
}

LaunchStatus BackwardRun::profile_once() {
  Impl& m = *impl_;
  if (!m.have_forward) return "profile_once: the forward has not run on the current inputs (call forward() first)";
  if (auto e = m.poison_backward()) return e;
  return device::profile_launch([&] { return m.launch_backward(); });
}

std::size_t BackwardRun::device_bytes() const {
  const Impl& m = *impl_;
  return 4 * m.q_bytes() + 4 * m.kv_bytes() + m.lse_bytes() + m.ws_bytes + m.fwd_ws_bytes;
}

const KernelInfo& BackwardRun::paired_forward() const { return *impl_->fwd; }

}  // namespace ioattn::kernels

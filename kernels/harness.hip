// kernels/harness.hip: device side of harness.hpp (buffers, poisoning, launch, events).
#include "kernels/harness.hpp"

#include "kernels/harness_device.hpp"
#include "kernels/platform/platform.hpp"

namespace ioattn::kernels {

std::optional<std::string> gpu_unavailable() {
  int n = 0;
  const hipError_t e = hipGetDeviceCount(&n);
  if (e != hipSuccess) return std::string("no GPU: ") + hipGetErrorString(e);
  if (n == 0) return std::string("no GPU: no device found");
  return std::nullopt;
}

std::string device_description() {
  if (auto why = gpu_unavailable()) return *why;
  int dev = 0;
  hipDeviceProp_t prop{};
  if (hipGetDevice(&dev) != hipSuccess || hipGetDeviceProperties(&prop, dev) != hipSuccess)
    return "unknown device";
  return std::string(prop.name) + " (cc " + std::to_string(prop.major) + "." +
         std::to_string(prop.minor) + ", " + std::to_string(prop.multiProcessorCount) + " CUs/SMs)";
}

struct DeviceRun::Impl {
  const KernelInfo* kernel = nullptr;
  AttnProblem p;
  KernelOptions opt;
  void *q = nullptr, *k = nullptr, *v = nullptr, *o = nullptr, *ws = nullptr;
  float* lse = nullptr;
  // The layout's tables (ioattn/layout.hpp), uploaded by create(); null when the layout has none.
  int32_t *cu_q = nullptr, *cu_k = nullptr, *table = nullptr, *seqused = nullptr;
  std::size_t ws_bytes = 0;
  std::size_t elem = 4;      // bytes per element of Q, K, V (the input dtype; FP8: 1)
  std::size_t out_elem = 4;  // bytes per element of O (the output dtype: FP8 problems write bf16/fp16)

  ~Impl() {
    for (void* ptr : {q, k, v, o, ws, static_cast<void*>(lse), static_cast<void*>(cu_q), static_cast<void*>(cu_k),
                      static_cast<void*>(table), static_cast<void*>(seqused)})
      if (ptr) (void)hipFree(ptr);
  }
  DeviceTensors tensors() const { return {q, k, v, o, lse, cu_q, cu_k, table, seqused}; }
  std::size_t table_bytes() const {
    const BatchLayout& l = p.layout;
    return (l.cu_seqlens_q.size() + l.cu_seqlens_k.size() + l.block_table.size() + l.seqused_k.size()) *
           sizeof(int32_t);
  }
  // One table to the device (nothing when it is empty: the pointer stays null).
  static LaunchStatus upload_table(int32_t*& dst, const std::vector<int32_t>& src) {
    if (src.empty()) return std::nullopt;
    IOATTN_CHECK(hipMalloc(reinterpret_cast<void**>(&dst), src.size() * sizeof(int32_t)));
    IOATTN_CHECK(hipMemcpy(dst, src.data(), src.size() * sizeof(int32_t), hipMemcpyHostToDevice));
    return std::nullopt;
  }
  std::size_t q_bytes() const { return static_cast<std::size_t>(p.q_elems()) * elem; }
  std::size_t o_bytes() const { return static_cast<std::size_t>(p.q_elems()) * out_elem; }
  std::size_t kv_bytes() const { return static_cast<std::size_t>(p.kv_elems()) * elem; }
  std::size_t lse_bytes() const { return static_cast<std::size_t>(p.lse_elems()) * sizeof(float); }

  LaunchStatus launch() const { return kernel->launch(p, tensors(), opt, ws, nullptr); }
  LaunchStatus poison() const {
    if (auto e = device::poison(o, o_bytes())) return e;
    if (auto e = device::poison(lse, lse_bytes())) return e;
    return device::poison(ws, ws_bytes);
  }
};

std::unique_ptr<DeviceRun> DeviceRun::create(const KernelInfo& kernel, const AttnProblem& p,
                                             const KernelOptions& opt, LaunchStatus& status) {
  status = kernel.supports(p, opt);
  if (status) return nullptr;
  if ((status = gpu_unavailable())) return nullptr;
  std::unique_ptr<DeviceRun> run(new DeviceRun());
  run->impl_ = std::make_unique<Impl>();
  Impl& m = *run->impl_;
  m.kernel = &kernel;
  m.p = p;
  m.opt = opt;
  m.elem = dtype_bytes(p.dtype);
  m.out_elem = dtype_bytes(p.output_dtype());
  m.ws_bytes = kernel.workspace_bytes(p, opt);
  status = [&]() -> LaunchStatus {
    IOATTN_CHECK(hipMalloc(&m.q, m.q_bytes()));
    IOATTN_CHECK(hipMalloc(&m.k, m.kv_bytes()));
    IOATTN_CHECK(hipMalloc(&m.v, m.kv_bytes()));
    IOATTN_CHECK(hipMalloc(&m.o, m.o_bytes()));
    IOATTN_CHECK(hipMalloc(&m.lse, m.lse_bytes()));
    if (m.ws_bytes) IOATTN_CHECK(hipMalloc(&m.ws, m.ws_bytes));
    const BatchLayout& l = m.p.layout;
    if (auto e = Impl::upload_table(m.cu_q, l.cu_seqlens_q)) return e;
    if (auto e = Impl::upload_table(m.cu_k, l.cu_seqlens_k)) return e;
    if (auto e = Impl::upload_table(m.table, l.block_table)) return e;
    return Impl::upload_table(m.seqused, l.seqused_k);
  }();
  if (status) return nullptr;
  return run;
}

DeviceRun::~DeviceRun() = default;

LaunchStatus DeviceRun::upload(const std::vector<float>& q, const std::vector<float>& k,
                               const std::vector<float>& v) {
  Impl& m = *impl_;
  if (q.size() != static_cast<std::size_t>(m.p.q_elems()) ||
      k.size() != static_cast<std::size_t>(m.p.kv_elems()) ||
      v.size() != static_cast<std::size_t>(m.p.kv_elems()))
    return "upload: tensor sizes do not match the problem (Q: batch*seqlen_q*heads_q*d, K/V: batch*seqlen_k*heads_kv*d)";
  if (auto e = device::upload_inputs(m.p.dtype, m.q, q)) return e;
  if (auto e = device::upload_inputs(m.p.dtype, m.k, k)) return e;
  return device::upload_inputs(m.p.dtype, m.v, v);
}

LaunchStatus DeviceRun::run() {
  Impl& m = *impl_;
  if (auto e = m.poison()) return e;
  if (auto e = m.launch()) return e;
  return device::synchronize();
}

LaunchStatus DeviceRun::profile_once() {
  Impl& m = *impl_;
  if (auto e = m.poison()) return e;
  return device::profile_launch([&] { return m.launch(); });
}

LaunchStatus DeviceRun::download(HostOutputs& out) const {
  const Impl& m = *impl_;
  if (auto e = dispatch_dtype(m.p.output_dtype(), [&]<class T>() {
        return device::download_as<T>(out.o, m.o, static_cast<std::size_t>(m.p.q_elems()));
      }))
    return e;
  return device::download_as<float>(out.lse, m.lse, static_cast<std::size_t>(m.p.lse_elems()));
}

LaunchStatus DeviceRun::time(int warmup, int iters, Timing& out) {
  Impl& m = *impl_;
  if (auto e = m.poison()) return e;
  return device::time_launches(warmup, iters, [&] { return m.launch(); }, out);
}

std::size_t DeviceRun::device_bytes() const {
  const Impl& m = *impl_;
  return m.q_bytes() + m.o_bytes() + 2 * m.kv_bytes() + m.lse_bytes() + m.ws_bytes + m.table_bytes();
}

}  // namespace ioattn::kernels

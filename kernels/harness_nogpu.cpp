// kernels/harness_nogpu.cpp: harness.hpp in a build without nvcc. Nothing can run; every entry
// point says so, so `ioattn run`, the GPU tests and the C ABI fail with that one line.
#include "kernels/harness.hpp"

namespace ioattn::kernels {

namespace {
constexpr const char* kNoGpu = "built without GPU support (nvcc was not found at configure time)";
}

std::optional<std::string> gpu_unavailable() { return std::string(kNoGpu); }
std::string device_description() { return kNoGpu; }

struct DeviceRun::Impl {};

std::unique_ptr<DeviceRun> DeviceRun::create(const KernelInfo&, const AttnProblem&, const KernelOptions&,
                                             LaunchStatus& status) {
  status = kNoGpu;
  return nullptr;
}
DeviceRun::~DeviceRun() = default;
LaunchStatus DeviceRun::upload(const std::vector<float>&, const std::vector<float>&, const std::vector<float>&) {
  return kNoGpu;
}
LaunchStatus DeviceRun::run() { return kNoGpu; }
LaunchStatus DeviceRun::download(HostOutputs&) const { return kNoGpu; }
LaunchStatus DeviceRun::time(int, int, Timing&) { return kNoGpu; }
LaunchStatus DeviceRun::profile_once() { return kNoGpu; }
std::size_t DeviceRun::device_bytes() const { return 0; }

}  // namespace ioattn::kernels

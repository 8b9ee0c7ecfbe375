// kernels/harness_bwd_nogpu.cpp: harness_bwd.hpp in a build without nvcc. Nothing can run; every
// entry point says so, as harness_nogpu.cpp does for the forward.
#include "kernels/harness_bwd.hpp"

namespace ioattn::kernels {

namespace {
constexpr const char* kNoGpu = "built without GPU support (nvcc was not found at configure time)";
}

struct BackwardRun::Impl {
  KernelInfo none;
};

std::unique_ptr<BackwardRun> BackwardRun::create(const BackwardInfo&, const AttnProblem&, const BackwardOptions&,
                                                 LaunchStatus& status, const KernelInfo*) {
  status = kNoGpu;
  return nullptr;
}
BackwardRun::~BackwardRun() = default;
LaunchStatus BackwardRun::upload(const std::vector<float>&, const std::vector<float>&, const std::vector<float>&,
                                 const std::vector<float>&) {
  return kNoGpu;
}
LaunchStatus BackwardRun::forward() { return kNoGpu; }
LaunchStatus BackwardRun::run() { return kNoGpu; }
LaunchStatus BackwardRun::download(HostGrads&) const { return kNoGpu; }
LaunchStatus BackwardRun::download_forward(HostForwardState&) const { return kNoGpu; }
LaunchStatus BackwardRun::time(TimedPass, int, int, Timing&) { return kNoGpu; }
LaunchStatus BackwardRun::profile_once() { return kNoGpu; }
std::size_t BackwardRun::device_bytes() const { return 0; }
const KernelInfo& BackwardRun::paired_forward() const { return impl_->none; }  // unreachable: create() fails

}  // namespace ioattn::kernels

// verify/kernels/suite_start.hpp: how both GPU suites (gpu_kernels, gpu_backward) begin.
//
//   if (auto rc = ioattn::verify::start_gpu_suite()) return *rc;   // 77: no GPU, skipped
#pragma once

#include <cstdio>
#include <optional>

#include "kernels/harness.hpp"

namespace ioattn::verify {

// stdout line-buffered (a run a timeout ends, as the sanitizers' runs may, keeps every line it
// printed); without a GPU "SKIPPED: no GPU (why)" and 77, which ctest reports as skipped; else
// the device's line and nullopt.
inline std::optional<int> start_gpu_suite() {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  if (auto why = kernels::gpu_unavailable()) {
    std::printf("SKIPPED: no GPU (%s)\n", why->c_str());
    return 77;
  }
  std::printf("device: %s\n", kernels::device_description().c_str());
  return std::nullopt;
}

}  // namespace ioattn::verify

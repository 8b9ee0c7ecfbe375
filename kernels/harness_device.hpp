// kernels/harness_device.hpp: the device-side pieces both harnesses share (harness.hip for the
// forward, harness_bwd.hip for the backward); internal, HIP only, never included by plain C++.
//
//   upload_as<T> / download_as<T>  host floats <-> device elements of the dtype T (rounded on upload)
//   upload_inputs                  Q, K or V in the problem's input dtype (FP8: the codes, ioattn/fp8.hpp)
//   poison                         every byte 0xFF: a NaN in fp32, fp16 and bf16 alike
//   synchronize                    wait for the device, surface execution errors (bad address, ...)
//   time_launches                  warm-up, then one event pair per launch; median, min, max
//   profile_launch                 one launch between hipProfilerStart/Stop (ncu --profile-from-start off)
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include "ioattn/fp8.hpp"
#include "kernels/harness.hpp"  // Timing
#include "kernels/launch.hpp"   // LaunchStatus
#include "kernels/platform/platform.hpp"

namespace ioattn::kernels::device {

template <class T>
LaunchStatus upload_as(void* dst, const std::vector<float>& src) {
  std::vector<T> tmp(src.size());
  std::transform(src.begin(), src.end(), tmp.begin(), [](float x) { return from_float<T>(x); });
  IOATTN_CHECK(hipMemcpy(dst, tmp.data(), tmp.size() * sizeof(T), hipMemcpyHostToDevice));
  return std::nullopt;
}

template <class T>
LaunchStatus download_as(std::vector<float>& dst, const void* src, std::size_t n) {
  std::vector<T> tmp(n);
  IOATTN_CHECK(hipMemcpy(tmp.data(), src, n * sizeof(T), hipMemcpyDeviceToHost));
  dst.resize(n);
  std::transform(tmp.begin(), tmp.end(), dst.begin(), [](T x) { return to_float(x); });
  return std::nullopt;
}

// One input tensor in the dtype `dt`: a 16/32-bit dtype through upload_as; an FP8 dtype as its
// codes, one byte each (the host floats are FP8 values already, so encoding is exact; any other
// float is rounded to nearest even, saturating, as the reference's round_to does).
inline LaunchStatus upload_inputs(DType dt, void* dst, const std::vector<float>& src) {
  if (is_fp8(dt)) {
    const Fp8Format f = dt == DType::fp8_e4m3 ? Fp8Format::e4m3 : Fp8Format::e5m2;
    std::vector<uint8_t> codes(src.size());
    std::transform(src.begin(), src.end(), codes.begin(), [&](float x) { return fp8_encode(x, f); });
    IOATTN_CHECK(hipMemcpy(dst, codes.data(), codes.size(), hipMemcpyHostToDevice));
    return std::nullopt;
  }
  return dispatch_dtype(dt, [&]<class T>() { return upload_as<T>(dst, src); });
}

// A null `ptr` (an absent workspace) is skipped.
inline LaunchStatus poison(void* ptr, std::size_t bytes) {
  if (ptr) IOATTN_CHECK(hipMemset(ptr, 0xFF, bytes));
  return std::nullopt;
}

inline LaunchStatus synchronize() {
  IOATTN_CHECK(hipDeviceSynchronize());
  IOATTN_CHECK(hipGetLastError());
  return std::nullopt;
}

// `warmup` untimed calls of once(), then `iters` calls each between two events on the default
// stream; out gets the median, min and max in ms. Events are destroyed on every path.
template <class Once>
LaunchStatus time_launches(int warmup, int iters, Once&& once, Timing& out) {
  if (iters < 1) return "time: --iters must be >= 1";
  for (int w = 0; w < warmup; ++w)
    if (auto e = once()) return e;
  if (auto e = synchronize()) return e;
  std::vector<hipEvent_t> ev(static_cast<std::size_t>(iters) + 1, nullptr);
  LaunchStatus st;
  for (auto& e : ev)
    if (!st && hipEventCreate(&e) != hipSuccess) st = "hipEventCreate failed";
  if (!st && hipEventRecord(ev[0], nullptr) != hipSuccess) st = "hipEventRecord failed";
  for (int it = 0; it < iters && !st; ++it) {
    st = once();
    if (!st && hipEventRecord(ev[static_cast<std::size_t>(it) + 1], nullptr) != hipSuccess) st = "hipEventRecord failed";
  }
  if (!st && hipDeviceSynchronize() != hipSuccess)
    st = std::string("kernel failed: ") + hipGetErrorString(hipGetLastError());
  std::vector<double> ms;
  for (int it = 0; it < iters && !st; ++it) {
    float t = 0;
    if (hipEventElapsedTime(&t, ev[static_cast<std::size_t>(it)], ev[static_cast<std::size_t>(it) + 1]) != hipSuccess)
      st = "hipEventElapsedTime failed";
    ms.push_back(t);
  }
  for (auto& e : ev)
    if (e) (void)hipEventDestroy(e);
  if (st) return st;
  std::sort(ms.begin(), ms.end());
  out.iters = iters;
  out.median_ms = ms[ms.size() / 2];
  out.min_ms = ms.front();
  out.max_ms = ms.back();
  return std::nullopt;
}

// once() alone inside a profiler range: the caller poisons first, the memsets stay outside it.
template <class Once>
LaunchStatus profile_launch(Once&& once) {
  IOATTN_CHECK(hipDeviceSynchronize());
  IOATTN_CHECK(hipProfilerStart());
  const LaunchStatus st = once();
  IOATTN_CHECK(hipDeviceSynchronize());
  IOATTN_CHECK(hipProfilerStop());
  return st;
}

}  // namespace ioattn::kernels::device

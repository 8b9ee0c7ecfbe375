// kernels/launcher.hpp: the one way a variant enqueues its kernels, so that launch() and config()
// walk the same code.
//
// A variant writes its launch path once, as a function of (problem, options, Launcher):
//   resolve the tile and the grid, then
//     L.main(MainKernel{br, bc, stages, splits, "grid_order"}, kernel, grid, threads, smem, args...)
//   for the kernel LaunchConfig describes, and L.aux(kernel, grid, threads, smem, args...) for any
//   other launch of the forward (v01's softmax and P V passes, v03b's combine).
// Launcher::enqueue(stream) launches them; describe_launch(out, path) runs the same path with a
// describing Launcher, which enqueues nothing and records instead what each call would launch:
// the main kernel's tile, grid, threads, shared memory (dynamic + the kernel's static), CTAs per
// SM from the runtime's occupancy calculator for that very kernel instance, and the number of
// launches. Device code needs no change; only host code is shared.
//
// The dynamic shared-memory limit is raised (hipFuncSetAttribute) in both modes before anything
// else: the occupancy calculator counts only what the kernel is allowed to use.
#pragma once

#include <string>
#include <utility>

#include "kernels/platform/platform.hpp"

namespace ioattn::kernels {

// What the launch path knows about its main kernel beyond grid, threads and shared memory
// (LaunchConfig's fields of the same names; grid_order from the vocabulary in launch.hpp).
struct MainKernel {
  int br = 0;
  int bc = 0;
  int stages = 1;
  int splits = 0;
  const char* grid_order = "";
};

class Launcher {
 public:
  static Launcher enqueue(void* stream) { return Launcher(static_cast<hipStream_t>(stream), nullptr); }
  static Launcher describing(LaunchConfig& out) { return Launcher(nullptr, &out); }

  // True when nothing is enqueued (config()): the path may then skip what needs real buffers
  // (a workspace pointer), but must not skip any check that launch() makes.
  bool describes() const { return cfg_ != nullptr; }
  // How often main() was called (describe_launch checks it is once).
  int main_calls() const { return main_calls_; }

  template <class... P, class... A>
  LaunchStatus main(const MainKernel& m, void (*kernel)(P...), dim3 grid, int threads, int dyn_smem,
                    A&&... args) const {
    ++main_calls_;
    if (cfg_) {
      cfg_->br = m.br;
      cfg_->bc = m.bc;
      cfg_->stages = m.stages;
      cfg_->splits = m.splits;
      cfg_->grid_order = m.grid_order;
      cfg_->grid_x = grid.x;
      cfg_->grid_y = grid.y;
      cfg_->grid_z = grid.z;
      cfg_->threads = threads;
    }
    return run(true, kernel, grid, threads, dyn_smem, std::forward<A>(args)...);
  }

  template <class... P, class... A>
  LaunchStatus aux(void (*kernel)(P...), dim3 grid, int threads, int dyn_smem, A&&... args) const {
    return run(false, kernel, grid, threads, dyn_smem, std::forward<A>(args)...);
  }

 private:
  Launcher(hipStream_t s, LaunchConfig* c) : stream_(s), cfg_(c) {}

  template <class... P, class... A>
  LaunchStatus run(bool is_main, void (*kernel)(P...), dim3 grid, int threads, int dyn_smem, A&&... args) const {
    const void* f = reinterpret_cast<const void*>(kernel);
    if (dyn_smem > 0) IOATTN_CHECK(hipFuncSetAttribute(f, hipFuncAttributeMaxDynamicSharedMemorySize, dyn_smem));
    if (!cfg_) {
      kernel<<<grid, threads, static_cast<size_t>(dyn_smem), stream_>>>(std::forward<A>(args)...);
      IOATTN_CHECK_LAUNCH();
      return std::nullopt;
    }
    ++cfg_->launches;
    if (!is_main) return std::nullopt;
    hipFuncAttributes attr{};
    IOATTN_CHECK(hipFuncGetAttributes(&attr, f));
    int ctas = 0;
    IOATTN_CHECK(hipOccupancyMaxActiveBlocksPerMultiprocessor(&ctas, f, threads, static_cast<size_t>(dyn_smem)));
    cfg_->smem_bytes = static_cast<std::size_t>(dyn_smem) + attr.sharedSizeBytes;
    cfg_->ctas_per_sm = ctas;
    if (ctas < 1)
      return "no CTA of the kernel fits on an SM of this device (" + std::to_string(threads) + " threads, " +
             std::to_string(cfg_->smem_bytes) + " bytes of shared memory, " + std::to_string(attr.numRegs) +
             " registers per thread)";
    return std::nullopt;
  }

  hipStream_t stream_ = nullptr;
  LaunchConfig* cfg_ = nullptr;
  mutable int main_calls_ = 0;
};

// config(): run `path(const Launcher&)` describing; `out` is written only on success, and only when
// the path named its main kernel exactly once.
template <class Path>
LaunchStatus describe_launch(LaunchConfig& out, Path&& path) {
  int devices = 0;
  const hipError_t e = hipGetDeviceCount(&devices);
  if (e != hipSuccess || devices == 0) {
    (void)hipGetLastError();  // leave no error behind for the caller's next check
    return std::string("no GPU (CTAs per SM come from the device's occupancy calculator): ") +
           (e != hipSuccess ? hipGetErrorString(e) : "no device found");
  }
  LaunchConfig c;
  c.launches = 0;
  const Launcher L = Launcher::describing(c);
  if (auto why = path(L)) return why;
  if (L.main_calls() != 1)
    return "the launch path named " + std::to_string(L.main_calls()) + " main kernels (Launcher::main), not 1";
  out = std::move(c);
  return std::nullopt;
}

}  // namespace ioattn::kernels

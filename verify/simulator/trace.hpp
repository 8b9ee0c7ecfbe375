// verify/simulator/trace.hpp: a brute-force tile-trace counter, the simulator's independent oracle.
//
// It shares nothing with simulator/nest.cpp but the tensor names: it decides tile visibility by
// testing MaskSpec::allowed on every element, walks every CTA of every kernel in launch order and
// writes down each tile access (tensor, instance, row range). Counting that log gives
//   no_l2       every access,
//   compulsory  distinct rows per tensor instance over the whole kernel,
//   per_wave    distinct rows per tensor instance within each wave of W consecutive CTAs in
//               dispatch order (Tiling::grid_order; what the simulator's wave model must give when
//               every wave fits the cache).
// Small problems only (it stores the log): N up to a few hundred.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ioattn/flops.hpp"
#include "ioattn/problem.hpp"
#include "simulator/simulator.hpp"

namespace ioattn::verify::trace {

struct Access {
  int tensor = 0;          // index into KernelTrace::tensors
  int64_t instance = 0;    // (b, head) of the tensor's own head space, or 0 for a shared tensor
  int64_t row0 = 0, row1 = 0;
  bool write = false;
  int64_t cta = 0;         // dispatch position of the CTA that made it (Tiling::grid_order)
};

struct TensorInfo {
  std::string name;
  int64_t row_bytes = 0;
};

struct KernelTrace {
  std::string name;
  bool tiled = false;      // a tiled kernel (one CTA per tile row/column, or per head)
  int64_t grid = 0;
  std::vector<TensorInfo> tensors;
  std::vector<Access> log;
};

struct Counts {
  sim::Traffic no_l2, compulsory, per_wave;
};

// The kernels of a strategy and pass, traced.
std::vector<KernelTrace> trace(const AttnProblem& p, const sim::Tiling& t, Pass pass);

// Per tensor name, for waves of W CTAs.
std::map<std::string, Counts> count(const KernelTrace& k, int64_t W);

}  // namespace ioattn::verify::trace

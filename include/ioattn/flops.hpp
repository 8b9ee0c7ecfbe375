// ioattn/flops.hpp: the FLOP convention of FlashAttention-2's benchmarks, in one place.
//
//   forward          = 4 * batch * heads_q * seqlen_q * seqlen_k * head_dim  (two matmuls, 2 FLOPs/MAC)
//                      halved when causal; a packed or paged batch (layout.hpp) sums
//                      seqlen_q_of(b) * seqlen_k_of(b) over its sequences instead of batch * Nq * Nk
//   backward         = 2.5 * forward   (five matmuls against the forward's two)
//   forward+backward = 3.5 * forward
//
// The convention counts matrix FLOPs of the square problem and ignores softmax and masks beyond
// the causal halving; throughputs (TFLOP/s) in ioattn always divide these numbers by time, so they
// compare directly with published FlashAttention numbers. The simulator also counts the exact
// FLOPs of visible tiles; that count is a different quantity and is named differently.
#pragma once

#include "ioattn/problem.hpp"

namespace ioattn {

enum class Pass { fwd, bwd, fwdbwd };

inline double conventional_fwd_flops(const AttnProblem& p) {
  double f = 4.0 * static_cast<double>(p.batch) * static_cast<double>(p.heads_q) *
             static_cast<double>(p.seqlen_q) * static_cast<double>(p.seqlen_k) * static_cast<double>(p.head_dim);
  if (!p.is_dense()) {  // packed or paged (layout.hpp): each sequence with its own lengths
    f = 0.0;
    for (int64_t b = 0; b < p.batch; ++b)
      f += 4.0 * static_cast<double>(p.heads_q) * static_cast<double>(p.seqlen_q_of(b)) *
           static_cast<double>(p.seqlen_k_of(b)) * static_cast<double>(p.head_dim);
  }
  return p.causal ? f / 2.0 : f;
}

inline double conventional_flops(const AttnProblem& p, Pass pass) {
  const double f = conventional_fwd_flops(p);
  switch (pass) {
    case Pass::fwd: return f;
    case Pass::bwd: return 2.5 * f;
    case Pass::fwdbwd: return 3.5 * f;
  }
  return f;
}

}  // namespace ioattn

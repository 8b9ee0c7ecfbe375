// reference/reference.hpp: the CPU definition of attention and the tiled teaching algorithms.
//
// Everything in ioattn checks itself against this file's functions:
//
//   forward_f64 / backward_f64      float64 ground truth: materialize S = scale*Q K^T, mask,
//                                   softmax, P V (and the backward from P), Eigen + OpenMP over
//                                   (batch, head).                                   naive.cpp
//   forward_naive / backward_naive  the same algorithm in the input's precision: fp32 math, and for
//                                   fp16/bf16 rounding where a real low-precision implementation
//                                   rounds (inputs, P before P V, dS before dS K, outputs). It is the
//                                   "baseline" of the error rule (ioattn/tolerance.hpp).  naive.cpp
//   forward_fa1                     FlashAttention-1 loop order: K/V blocks outer, Q blocks inner,
//                                   O_i, m_i, l_i re-read and re-written per block.  tiled_fa1.cpp
//   forward_fa2                     FlashAttention-2 loop order: Q blocks outer, online softmax,
//                                   one normalization at the end.                    tiled_fa2.cpp
//   forward_splitkv                 split-KV (Flash-Decoding): partial O and LSE per split of the
//                                   keys, then a log-sum-exp combine.                splitkv.cpp
//   backward_fa2                    FlashAttention-2 backward: K/V blocks outer, P recomputed from
//                                   LSE, D = rowsum(dO o O).                         backward_fa2.cpp
//
// Tensors are host std::vector<float> in the BSHD layout of ioattn/problem.hpp, holding values
// exactly representable in problem.dtype (round.hpp). LSE is (batch, heads_q, seqlen_q).
// FP8 dtypes (forward only): Q, K, V hold the FP8 values (the floats of the codes, unscaled) and
// the descales and output dtype come from problem.fp8; forward_f64 and forward_naive compute them
// (naive.cpp, "FP8 inputs"), every other function refuses them with one line.
// A fully masked row gives O = 0 and LSE = -inf in every function, never NaN; its gradients are 0.
//
// Preconditions (checked first, in every function): problem.validate(); tensor sizes match the
// problem; inputs representable in the dtype; the tiling is valid; the host memory the function
// would need fits (memory_error). A violation throws ReferenceError with one line naming it.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "ioattn/problem.hpp"
#include "fp8_mma_model.hpp"
#include "round.hpp"

namespace ioattn::ref {

// A violated precondition, as one line (the CLI prints it and exits with code 2).
struct ReferenceError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// ---------------------------------------------------------------------------------------------
// Tensors

template <class T>
struct InputTensors {
  std::vector<T> q;    // (batch, seqlen_q, heads_q,  head_dim)
  std::vector<T> k;    // (batch, seqlen_k, heads_kv, head_dim)
  std::vector<T> v;    // (batch, seqlen_k, heads_kv, head_dim)
  std::vector<T> d_o;  // (batch, seqlen_q, heads_q,  head_dim): dL/dO, used by the backward only
};
using Inputs = InputTensors<float>;     // values representable in problem.dtype
using Inputs64 = InputTensors<double>;  // for float64 finite differences (any double values)

Inputs64 widen(const Inputs& in);

template <class T>
struct ForwardResult {
  std::vector<T> o;    // (batch, seqlen_q, heads_q, head_dim); rounded to dtype (float results)
  std::vector<T> lse;  // (batch, heads_q, seqlen_q); natural log-sum-exp of the masked S rows
};
using Forward = ForwardResult<float>;
using Forward64 = ForwardResult<double>;

template <class T>
struct GradResult {
  std::vector<T> dq;  // like Q; rounded to dtype (float results)
  std::vector<T> dk;  // like K; sums over the heads_q / heads_kv query heads of a group (GQA)
  std::vector<T> dv;  // like V; idem
};
using Grads = GradResult<float>;
using Grads64 = GradResult<double>;

// ---------------------------------------------------------------------------------------------
// Inputs

struct InputOptions {
  // Standard deviation of the logits scale * q.k (before masking). Q and K are drawn i.i.d.
  // N(0, a^2) with a = sqrt(logit_std / (scale * sqrt(head_dim))), so that scale * q.k has this
  // standard deviation; the largest |logit| of a row is a few times it. 1e4 stresses the softmax.
  double logit_std = 1.0;
  double v_std = 1.0;   // V ~ N(0, v_std^2)
  double do_std = 1.0;  // dO ~ N(0, do_std^2)
};

// Q, K, V and dO for the problem, deterministic in (problem shape, seed, options), every value
// rounded to problem.dtype. Throws ReferenceError when problem.validate() fails or the tensors
// would not fit in host memory.
Inputs make_inputs(const AttnProblem& p, uint64_t seed, InputOptions opt = {});

// ---------------------------------------------------------------------------------------------
// Packed (varlen) and paged layouts (ioattn/layout.hpp)
//
// forward_f64, forward_naive, backward_f64 and backward_naive take any layout: tensors are then
// shaped as the layout says (p.q_elems(), p.kv_elems(), p.lse_elems(); LSE (heads_q, total_q) for
// packed queries) and every sequence is computed by the dense definition of its own lengths and
// mask, then written back to its rows (by_sequence.hpp). make_inputs fills tensors of those sizes.
// The tiled algorithms take the dense layout only and refuse any other with one line.

// The dense problem of sequence b: batch 1, seqlen_q_of(b) queries, seqlen_k_of(b) keys, the same
// heads, head_dim, scale, mask flags and dtype. Throws ReferenceError when p is invalid, b is out of
// range or the sequence has 0 queries or 0 keys (it has no dense problem).
AttnProblem sequence_problem(const AttnProblem& p, int64_t b);

// ---------------------------------------------------------------------------------------------
// The definition (naive.cpp)

Forward64 forward_f64(const AttnProblem& p, const Inputs& in);
Forward64 forward_f64(const AttnProblem& p, const Inputs64& in);
Forward forward_naive(const AttnProblem& p, const Inputs& in);
// FP8 problems: the same-precision baseline with the chosen accumulation of Q K^T and P V.
// acc.tensor_core = false is forward_naive (exact fp32 accumulation); true accumulates through the
// published bit-accurate model of Hopper's FP8 tensor core (fp8_mma_model.hpp) in v09_fp8_wgmma's
// instruction order, S promoted every acc.s_promote k32 instructions (0: never), O never promoted
// (naive_fp8_mma.cpp). Refuses a non-FP8 problem with one line (when acc.tensor_core).
Forward forward_naive_fp8(const AttnProblem& p, const Inputs& in, const Fp8Accumulation& acc);

// Gradients of L = sum(dO o O) with respect to Q, K, V (in.d_o must be set).
Grads64 backward_f64(const AttnProblem& p, const Inputs& in);
Grads64 backward_f64(const AttnProblem& p, const Inputs64& in);
Grads backward_naive(const AttnProblem& p, const Inputs& in);
// The same-precision baseline of a backward that starts from a given forward state (O, LSE): give
// it the state the backward under test received, so that both see the same inputs and the error
// rule judges the backward algorithm, not the forward's rounding of O and LSE (reference/README.md).
Grads backward_naive(const AttnProblem& p, const Inputs& in, const Forward& fwd);

// ---------------------------------------------------------------------------------------------
// The tiled algorithms (teaching code, one file each)

// Block sizes in the paper's notation: Br query rows and Bc key rows per tile, so Tr = ceil(Nq/Br)
// and Tc = ceil(Nk/Bc). `splits` is the number of key splits of forward_splitkv (it may exceed Tc:
// an empty split contributes LSE = -inf). Any positive values; sizes need not divide.
struct Tiling {
  int64_t br = 64;
  int64_t bc = 64;
  int64_t splits = 1;
  std::optional<std::string> validate() const;
};

Forward forward_fa1(const AttnProblem& p, const Inputs& in, const Tiling& t = {});
Forward forward_fa2(const AttnProblem& p, const Inputs& in, const Tiling& t = {});
Forward forward_splitkv(const AttnProblem& p, const Inputs& in, const Tiling& t = {});
// `fwd` is the forward's output (O and LSE) for the same inputs, as a real backward receives it.
Grads backward_fa2(const AttnProblem& p, const Inputs& in, const Forward& fwd, const Tiling& t = {});

// ---------------------------------------------------------------------------------------------
// Memory guard

enum class Algorithm { naive_forward, naive_backward, tiled_forward, tiled_backward };

// Host bytes a function would allocate: the tensors, plus for the naive algorithms the
// materialized S/P (and dP for the backward) of every thread that runs concurrently.
double host_bytes_needed(const AttnProblem& p, Algorithm a);
// One line when host_bytes_needed exceeds half of the physical memory, else nullopt.
std::optional<std::string> memory_error(const AttnProblem& p, Algorithm a);

}  // namespace ioattn::ref

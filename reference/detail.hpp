// reference/detail.hpp: what the reference files share and nobody else needs: precondition
// checks, Eigen views of one (batch, head) slice of a BSHD tensor, and the row-major matrix types.
//
// In BSHD one head's rows are not contiguous: row s of head h starts at ((b*S + s)*H + h)*d and
// the next row is H*d elements further. A head is therefore a (S, d) row-major matrix with outer
// stride H*d, which Eigen maps without copying (HeadMap).
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <span>
#include <string>

#include <Eigen/Core>

#include "reference.hpp"

namespace ioattn::ref::detail {

template <class T>
using MatR = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using VecX = Eigen::Matrix<T, Eigen::Dynamic, 1>;

template <class T>
using HeadMap = Eigen::Map<MatR<T>, Eigen::Unaligned, Eigen::OuterStride<>>;
template <class T>
using ConstHeadMap = Eigen::Map<const MatR<T>, Eigen::Unaligned, Eigen::OuterStride<>>;

template <class T>
inline constexpr T kNegInf = -std::numeric_limits<T>::infinity();

// (seqlen_q, head_dim) view of query head h of batch b in a Q-shaped tensor (Q, O, dO, dQ).
template <class V>
auto q_head(const AttnProblem& p, V& t, int64_t b, int64_t h) {
  using T = std::remove_pointer_t<decltype(t.data())>;
  using M = std::conditional_t<std::is_const_v<T>, ConstHeadMap<std::remove_const_t<T>>, HeadMap<T>>;
  return M(t.data() + p.q_offset(b, 0, h, 0), p.seqlen_q, p.head_dim,
           Eigen::OuterStride<>(p.heads_q * p.head_dim));
}

// (seqlen_k, head_dim) view of key/value head hk of batch b in a K-shaped tensor (K, V, dK, dV).
template <class V>
auto kv_head(const AttnProblem& p, V& t, int64_t b, int64_t hk) {
  using T = std::remove_pointer_t<decltype(t.data())>;
  using M = std::conditional_t<std::is_const_v<T>, ConstHeadMap<std::remove_const_t<T>>, HeadMap<T>>;
  return M(t.data() + p.kv_offset(b, 0, hk, 0), p.seqlen_k, p.head_dim,
           Eigen::OuterStride<>(p.heads_kv * p.head_dim));
}

// dst(j) = exp(s(j) - c) for the visible columns lo <= j < hi of a row, and exactly 0 for the
// masked ones, which are never exponentiated.
//
// Why not exp(-inf) = 0: Eigen's vectorized exp clamps its argument at about -88 (float) or -709
// (double), so on a SIMD packet exp(-inf) returns ~1e-39 (float) or ~1e-308 (double), not 0 (its
// scalar tail returns 0). A masked key then leaked into P with that weight, and O depended in its
// last bits on keys the row cannot see: the property masked_keys_invisible found it. A row's
// visible keys are one contiguous range (mask.hpp), so the exp runs vectorized on that segment.
// dst may be s itself.
template <class Dst, class Src, class T>
void exp_visible(Dst&& dst, const Src& s, int64_t lo, int64_t hi, T c) {
  if (hi <= lo) {
    dst.setZero();
    return;
  }
  const int64_t n = dst.size();
  dst.segment(lo, hi - lo) = (s.segment(lo, hi - lo).array() - c).exp().matrix();
  dst.head(lo).setZero();
  dst.tail(n - hi).setZero();
}

// The visible key columns of query row i inside the key tile [c0, c0 + cols), tile-relative.
inline std::pair<int64_t, int64_t> visible_cols(const MaskSpec& m, int64_t i, int64_t c0, int64_t cols) {
  const int64_t lo = std::clamp<int64_t>(m.key_begin(i) - c0, 0, cols);
  const int64_t hi = std::clamp<int64_t>(m.key_end(i) - c0, 0, cols);
  return {lo, hi};
}

// Throws ReferenceError naming the first violated precondition.
template <class T>
void check_inputs(const AttnProblem& p, const InputTensors<T>& in, bool need_do, Algorithm a) {
  if (auto e = p.validate()) throw ReferenceError(*e);
  if ((a == Algorithm::tiled_forward || a == Algorithm::tiled_backward) && !p.is_dense())
    throw ReferenceError("the tiled CPU algorithms take the dense layout only (got " + p.layout.describe() +
                         "); forward_f64, forward_naive and the naive backwards compute packed and paged layouts");
  if (is_fp8(p.dtype) && a != Algorithm::naive_forward)
    throw ReferenceError("fp8 inputs: only the forward definition (forward_f64, forward_naive) is defined, "
                         "no tiled algorithm or backward");
  if (auto e = memory_error(p, a)) throw ReferenceError(*e);
  auto size_is = [](const std::vector<T>& v, int64_t n, const char* name) {
    if (static_cast<int64_t>(v.size()) != n)
      throw ReferenceError(std::string(name) + " has " + std::to_string(v.size()) +
                           " elements, the problem needs " + std::to_string(n));
  };
  size_is(in.q, p.q_elems(), "Q");
  size_is(in.k, p.kv_elems(), "K");
  size_is(in.v, p.kv_elems(), "V");
  if (need_do) size_is(in.d_o, p.q_elems(), "dO");
  if constexpr (std::is_same_v<T, float>) {
    auto repr = [&](const std::vector<float>& v, const char* name) {
      if (!representable(p.dtype, v))
        throw ReferenceError(std::string(name) + " holds a non-finite value or one not representable in " +
                             std::string(dtype_name(p.dtype)) + " (round it with round_in_place)");
    };
    repr(in.q, "Q");
    repr(in.k, "K");
    repr(in.v, "V");
    if (need_do) repr(in.d_o, "dO");
  } else {
    auto finite = [](const std::vector<T>& v, const char* name) {
      for (T x : v)
        if (!std::isfinite(x)) throw ReferenceError(std::string(name) + " holds a non-finite value");
    };
    finite(in.q, "Q");
    finite(in.k, "K");
    finite(in.v, "V");
    if (need_do) finite(in.d_o, "dO");
  }
}

// The dense problem of sequence b (lengths seqlen_q_of(b), seqlen_k_of(b), both >= 1), without
// re-validating p (the caller did): sequence_problem() in reference.hpp is the checked form.
inline AttnProblem sequence_problem_of(const AttnProblem& p, int64_t b) {
  AttnProblem s = p;
  s.layout = {};
  s.batch = 1;
  s.seqlen_q = p.seqlen_q_of(b);
  s.seqlen_k = p.seqlen_k_of(b);
  return s;
}

inline void check_tiling(const Tiling& t) {
  if (auto e = t.validate()) throw ReferenceError(*e);
}

}  // namespace ioattn::ref::detail

// reference/detail.hpp: what the reference files share and nobody else needs: precondition
// checks, Eigen views of one (batch, head) slice of a BSHD tensor, and the row-major matrix types.
//
// In BSHD one head's rows are not contiguous: row s of head h starts at ((b*S + s)*H + h)*d and
// the next row is H*d elements further. A head is therefore a (S, d) row-major matrix with outer
// stride H*d, which Eigen maps without copying (HeadMap).
#pragma once

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

// exp(s - c) elementwise, with exp(-inf) = 0 exactly for masked scores.
//
// Eigen's vectorized exp clamps its argument at about -88 (float) or -709 (double), so on a packet
// exp(-inf) returns ~1e-39 (float) or ~1e-308 (double) instead of 0 (its scalar tail returns 0).
// A masked key would then leak into P with that weight and O would depend, in its last bits, on
// keys the row cannot see: the property masked_keys_invisible found it. Masked entries are
// therefore selected to 0, never exponentiated.
template <class Row, class T>
auto exp_shifted(const Row& s, T c) {
  return (s.array() == kNegInf<T>).select(T(0), (s.array() - c).exp());
}

// Throws ReferenceError naming the first violated precondition.
template <class T>
void check_inputs(const AttnProblem& p, const InputTensors<T>& in, bool need_do, Algorithm a) {
  if (auto e = p.validate()) throw ReferenceError(*e);
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
        throw ReferenceError(std::string(name) + " holds a NaN or a value not representable in " +
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

inline void check_tiling(const Tiling& t) {
  if (auto e = t.validate()) throw ReferenceError(*e);
}

}  // namespace ioattn::ref::detail

// reference/naive.cpp: the definition of attention, by materializing S.
//
// For one (batch, head), with Q (Nq, d), K and V (Nk, d):
//
//   S   = scale * Q K^T                         (Nq, Nk)
//   S_ij = -inf where MaskSpec::allowed(i, j) is false
//   m_i = max_j S_ij,  P_ij = exp(S_ij - m_i) / l_i,  l_i = sum_j exp(S_ij - m_i)
//   O   = P V                                   (Nq, d)
//   LSE_i = m_i + log(l_i)
//
// A fully masked row has m_i = -inf; exp(S - m_i) would be exp(-inf + inf) = NaN, so such a row is
// handled first: P_i = 0, O_i = 0, LSE_i = -inf.
//
// Backward, for L = sum(dO o O):
//   dV = P^T dO,   dP = dO V^T,   D_i = sum_j P_ij dP_ij,   dS = P o (dP - D),
//   dQ = scale * dS K,   dK = scale * dS^T Q.
// With GQA the query heads of a group share K and V, so dK and dV sum over the group; the work is
// therefore split over (batch, kv head) and the group's query heads run in one thread.
//
// The computation is templated on the arithmetic type T: double for the ground truth (no rounding
// at all), float for the same-precision baseline, which also rounds to the input dtype where a
// low-precision implementation stores a tensor in it: P before P V, dS before dS K and dS^T Q,
// P before P^T dO, and every output. (fp32: rounding is the identity.)
#include <cmath>

#include "detail.hpp"

namespace ioattn::ref {

namespace {

using detail::kNegInf;
using detail::MatR;
using detail::VecX;

// Rounds a float matrix to the dtype; a no-op for double (the ground truth never rounds).
template <class T>
void round_mat(DType dt, MatR<T>& m) {
  if constexpr (std::is_same_v<T, float>) round_in_place(dt, std::span<float>(m.data(), m.size()));
}

// One head's Q, K or V copied into a dense T matrix (the copy is O(N d), S is O(N^2)).
template <class T, class TI>
MatR<T> q_dense(const AttnProblem& p, const std::vector<TI>& t, int64_t b, int64_t h) {
  return detail::q_head(p, t, b, h).template cast<T>();
}
template <class T, class TI>
MatR<T> kv_dense(const AttnProblem& p, const std::vector<TI>& t, int64_t b, int64_t hk) {
  return detail::kv_head(p, t, b, hk).template cast<T>();
}

// S -> P in place (row softmax of the masked scores); returns LSE per row.
template <class T>
VecX<T> masked_softmax(const AttnProblem& p, MatR<T>& s) {
  const MaskSpec mask = p.mask();
  VecX<T> lse(p.seqlen_q);
  for (int64_t i = 0; i < p.seqlen_q; ++i) {
    auto row = s.row(i);
    for (int64_t j = 0; j < p.seqlen_k; ++j)
      if (!mask.allowed(i, j)) row(j) = kNegInf<T>;
    const T m = row.maxCoeff();
    if (m == kNegInf<T>) {  // fully masked row: P = 0, LSE = -inf
      row.setZero();
      lse(i) = kNegInf<T>;
      continue;
    }
    row = (row.array() - m).exp();  // exp(-inf) = 0 for masked entries
    const T l = row.sum();
    row /= l;
    lse(i) = m + std::log(l);
  }
  return lse;
}

// P for query head h of batch b, and its LSE. P is rounded for the baseline.
template <class T, class TI>
MatR<T> probabilities(const AttnProblem& p, const InputTensors<TI>& in, int64_t b, int64_t h,
                      VecX<T>* lse_out) {
  const MatR<T> q = q_dense<T>(p, in.q, b, h);                   // (Nq, d)
  const MatR<T> k = kv_dense<T>(p, in.k, b, p.kv_head_of(h));    // (Nk, d)
  MatR<T> s = (q * k.transpose()) * static_cast<T>(p.softmax_scale());  // (Nq, Nk)
  VecX<T> lse = masked_softmax(p, s);
  if (lse_out) *lse_out = lse;
  round_mat(p.dtype, s);  // the baseline stores P in the input dtype before P V
  return s;
}

template <class T, class TI>
ForwardResult<T> forward_impl(const AttnProblem& p, const InputTensors<TI>& in) {
  detail::check_inputs(p, in, /*need_do=*/false, Algorithm::naive_forward);
  ForwardResult<T> out;
  out.o.assign(static_cast<size_t>(p.q_elems()), T(0));
  out.lse.assign(static_cast<size_t>(p.lse_elems()), T(0));
#pragma omp parallel for collapse(2) schedule(dynamic)
  for (int64_t b = 0; b < p.batch; ++b) {
    for (int64_t h = 0; h < p.heads_q; ++h) {
      VecX<T> lse;
      const MatR<T> prob = probabilities<T>(p, in, b, h, &lse);           // (Nq, Nk)
      const MatR<T> v = kv_dense<T>(p, in.v, b, p.kv_head_of(h));         // (Nk, d)
      MatR<T> o = prob * v;                                                // (Nq, d)
      round_mat(p.dtype, o);
      detail::q_head(p, out.o, b, h) = o;
      for (int64_t i = 0; i < p.seqlen_q; ++i) out.lse[p.lse_offset(b, h, i)] = lse(i);
    }
  }
  return out;
}

template <class T, class TI>
GradResult<T> backward_impl(const AttnProblem& p, const InputTensors<TI>& in) {
  detail::check_inputs(p, in, /*need_do=*/true, Algorithm::naive_backward);
  GradResult<T> g;
  g.dq.assign(static_cast<size_t>(p.q_elems()), T(0));
  g.dk.assign(static_cast<size_t>(p.kv_elems()), T(0));
  g.dv.assign(static_cast<size_t>(p.kv_elems()), T(0));
  const T scale = static_cast<T>(p.softmax_scale());
#pragma omp parallel for collapse(2) schedule(dynamic)
  for (int64_t b = 0; b < p.batch; ++b) {
    for (int64_t hk = 0; hk < p.heads_kv; ++hk) {
      const MatR<T> k = kv_dense<T>(p, in.k, b, hk);  // (Nk, d)
      const MatR<T> v = kv_dense<T>(p, in.v, b, hk);  // (Nk, d)
      MatR<T> dk = MatR<T>::Zero(p.seqlen_k, p.head_dim);
      MatR<T> dv = MatR<T>::Zero(p.seqlen_k, p.head_dim);
      for (int64_t h = hk * p.group_size(); h < (hk + 1) * p.group_size(); ++h) {
        const MatR<T> prob = probabilities<T>(p, in, b, h, nullptr);  // (Nq, Nk)
        const MatR<T> q = q_dense<T>(p, in.q, b, h);                   // (Nq, d)
        const MatR<T> d_o = q_dense<T>(p, in.d_o, b, h);               // (Nq, d)
        dv.noalias() += prob.transpose() * d_o;                        // (Nk, d)
        const MatR<T> dp = d_o * v.transpose();                        // (Nq, Nk)
        const VecX<T> d_row = prob.cwiseProduct(dp).rowwise().sum();   // (Nq): D_i
        MatR<T> ds = prob.cwiseProduct((dp.colwise() - d_row));        // (Nq, Nk)
        round_mat(p.dtype, ds);  // the baseline stores dS in the input dtype before the matmuls
        MatR<T> dq = (ds * k) * scale;                                 // (Nq, d)
        round_mat(p.dtype, dq);
        detail::q_head(p, g.dq, b, h) = dq;
        dk.noalias() += (ds.transpose() * q) * scale;                  // (Nk, d)
      }
      round_mat(p.dtype, dk);
      round_mat(p.dtype, dv);
      detail::kv_head(p, g.dk, b, hk) = dk;
      detail::kv_head(p, g.dv, b, hk) = dv;
    }
  }
  return g;
}

}  // namespace

Forward64 forward_f64(const AttnProblem& p, const Inputs& in) { return forward_impl<double>(p, in); }
Forward64 forward_f64(const AttnProblem& p, const Inputs64& in) { return forward_impl<double>(p, in); }
Forward forward_naive(const AttnProblem& p, const Inputs& in) { return forward_impl<float>(p, in); }

Grads64 backward_f64(const AttnProblem& p, const Inputs& in) { return backward_impl<double>(p, in); }
Grads64 backward_f64(const AttnProblem& p, const Inputs64& in) { return backward_impl<double>(p, in); }
Grads backward_naive(const AttnProblem& p, const Inputs& in) { return backward_impl<float>(p, in); }

}  // namespace ioattn::ref

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
//   dV = P^T dO,   dP = dO V^T,   D_i = sum_j P_ij dP_ij = sum_x dO_ix O_ix,   dS = P o (dP - D),
//   dQ = scale * dS K,   dK = scale * dS^T Q.
// The backward starts from the forward's saved state, as the output contract defines it: O in the
// dtype and LSE in T (fp32 for the baseline). So P = exp(S - LSE) and D = rowsum(dO o O), the
// formulas of FlashAttention's backward. Both are equal to the textbook softmax backward
// (P = softmax(S), D = rowsum(P o dP)) in exact arithmetic but not in rounding, and the baseline
// must carry the same conditioning as the algorithms the error rule judges:
//  - an fp32 LSE of magnitude |LSE| is known to |LSE| 2^-24, a relative error of every P;
//  - with a saturated softmax (one P_ij ~ 1) dP_ij - D_i cancels to ~0, and its rounding error
//    u |dO| |V|, times scale * K, dominates dQ and dK.
// (With logits of ~1e4 both effects are far above u: see reference/README.md, "Limits".)
// With GQA the query heads of a group share K and V, so dK and dV sum over the group; the work is
// therefore split over (batch, kv head) and the group's query heads run in one thread.
//
// Packed (varlen) and paged layouts (ioattn/layout.hpp) are computed by this same definition, one
// sequence at a time: gather, dense, scatter (by_sequence.hpp).
//
// The computation is templated on the arithmetic type T: double for the ground truth (no rounding
// at all), float for the same-precision baseline, which also rounds to the input dtype where a
// low-precision implementation stores a tensor in it: P before P V, dS before dS K and dS^T Q,
// P before P^T dO, and every output. (fp32: rounding is the identity.)
#include <cmath>

#include "by_sequence.hpp"
#include "detail.hpp"
#include "scores.hpp"

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

// S = scale * Q K^T for query head h of batch b, masked to -inf.                     (Nq, Nk)
template <class T, class TI>
MatR<T> masked_scores(const AttnProblem& p, const InputTensors<TI>& in, int64_t b, int64_t h) {
  const MatR<T> q = q_dense<T>(p, in.q, b, h);                 // (Nq, d)
  const MatR<T> k = kv_dense<T>(p, in.k, b, p.kv_head_of(h));  // (Nk, d)
  MatR<T> s(p.seqlen_q, p.seqlen_k);                           // (Nq, Nk)
  if constexpr (std::is_same_v<T, float>) {  // the shared fp32 S kernel (scores.hpp)
    detail::scores_f32(q.data(), q.outerStride(), k.data(), k.outerStride(), p.seqlen_q, p.seqlen_k,
                       p.head_dim, static_cast<float>(p.softmax_scale()), s.data(), s.outerStride());
  } else {
    s.noalias() = (q * k.transpose()) * static_cast<T>(p.softmax_scale());
  }
  const MaskSpec mask = p.mask();
  for (int64_t i = 0; i < p.seqlen_q; ++i)
    for (int64_t j = 0; j < p.seqlen_k; ++j)
      if (!mask.allowed(i, j)) s(i, j) = kNegInf<T>;
  return s;
}

// S -> P in place (row softmax of the masked scores); returns LSE per row.
template <class T>
VecX<T> softmax_in_place(const AttnProblem& p, MatR<T>& s) {
  const MaskSpec mask = p.mask();
  VecX<T> lse(s.rows());
  for (int64_t i = 0; i < s.rows(); ++i) {
    auto row = s.row(i);
    const T m = row.maxCoeff();
    if (m == kNegInf<T>) {  // fully masked row: P = 0, LSE = -inf
      row.setZero();
      lse(i) = kNegInf<T>;
      continue;
    }
    detail::exp_visible(row, row, mask.key_begin(i), mask.key_end(i), m);  // masked: exactly 0
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
  MatR<T> s = masked_scores<T>(p, in, b, h);
  VecX<T> lse = softmax_in_place(p, s);
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

// `state`: the forward's (O, LSE) to start from; nullptr computes this function's own forward.
template <class T, class TI>
GradResult<T> backward_impl(const AttnProblem& p, const InputTensors<TI>& in,
                            const ForwardResult<T>* state = nullptr) {
  detail::check_inputs(p, in, /*need_do=*/true, Algorithm::naive_backward);
  if (state && (static_cast<int64_t>(state->o.size()) != p.q_elems() ||
                static_cast<int64_t>(state->lse.size()) != p.lse_elems()))
    throw ReferenceError("backward_naive: the forward state (O, LSE) does not match the problem");
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
        // The forward's state: O (rounded to the dtype) and LSE (in T: fp32 for the baseline),
        // given or computed here.
        const MatR<T> s = masked_scores<T>(p, in, b, h);              // (Nq, Nk)
        MatR<T> o;                                                     // (Nq, d)
        VecX<T> lse(p.seqlen_q);                                       // (Nq)
        if (state) {
          o = detail::q_head(p, state->o, b, h);
          for (int64_t i = 0; i < p.seqlen_q; ++i) lse(i) = state->lse[p.lse_offset(b, h, i)];
        } else {
          MatR<T> p_fwd = s;
          lse = softmax_in_place(p, p_fwd);
          round_mat(p.dtype, p_fwd);
          o = p_fwd * v;
          round_mat(p.dtype, o);
        }
        // P recomputed from the saved LSE, as every backward that keeps (O, LSE) does.
        MatR<T> prob(p.seqlen_q, p.seqlen_k);                          // (Nq, Nk)
        for (int64_t i = 0; i < p.seqlen_q; ++i) {
          if (lse(i) == kNegInf<T>) prob.row(i).setZero();
          else detail::exp_visible(prob.row(i), s.row(i), p.mask().key_begin(i), p.mask().key_end(i), lse(i));
        }
        MatR<T> prob_op = prob;  // P as a matmul operand, in the input dtype
        round_mat(p.dtype, prob_op);
        const MatR<T> q = q_dense<T>(p, in.q, b, h);                   // (Nq, d)
        const MatR<T> d_o = q_dense<T>(p, in.d_o, b, h);               // (Nq, d)
        dv.noalias() += prob_op.transpose() * d_o;                     // (Nk, d)
        MatR<T> dp(p.seqlen_q, p.seqlen_k);                            // (Nq, Nk): dO V^T
        if constexpr (std::is_same_v<T, float>) {  // same fixed-order kernel as S (scores.hpp)
          detail::scores_f32(d_o.data(), d_o.outerStride(), v.data(), v.outerStride(), p.seqlen_q,
                             p.seqlen_k, p.head_dim, 1.0f, dp.data(), dp.outerStride());
        } else {
          dp.noalias() = d_o * v.transpose();
        }
        const VecX<T> d_row = d_o.cwiseProduct(o).rowwise().sum();     // (Nq): D_i
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

// FP8 inputs (dtype fp8_e4m3 / fp8_e5m2): Q, K, V hold FP8 values; the problem's inputs are
// them times the descales (problem.hpp). For one (batch, head), qd, kd, vd its descales:
//   T = double, the definition on the dequantized inputs:
//     S = (Q K^T) * (scale qd kd),  P~ = exp(S - m),  l = sum P~,  O = (P~ V) * (vd / l)
//     = softmax(scale (qd Q)(kd K)^T) (vd V), with no rounding anywhere.
//   T = float, the same-precision baseline, rounding where an FP8 kernel (FlashAttention-3's) does:
//     - S: fp32 accumulation of the FP8 products, times one fp32 factor scale * qd * kd;
//     - P~ = exp(S - m) in fp32, rounded to e4m3 for the P V matmul (whatever the input format:
//       P <= 1 needs precision, not range). P~ is not normalized and gets no scale: its row maximum
//       is exactly 1, so it uses the top of e4m3's range; a normalized P (~1/N on a flat row) would
//       fall below e4m3's smallest subnormal (2^-9) for N > 1000. Entries below 2^-10 round to 0;
//     - l = sum of the unrounded fp32 P~ (the kernel's row sum);
//     - O = fp32 accumulation of P~_e4m3 V, times vd / l in fp32, rounded to the output dtype.
// The kernel's online softmax rescales by a running maximum; the baseline takes the row's final
// maximum (the FP8 rounding of P~ then differs by where each tile's maximum was; both are the
// same e4m3 precision). LSE = m + log(l), in T.
template <class T, class TI>
ForwardResult<T> forward_fp8_impl(const AttnProblem& p, const InputTensors<TI>& in) {
  detail::check_inputs(p, in, /*need_do=*/false, Algorithm::naive_forward);
  ForwardResult<T> out;
  out.o.assign(static_cast<size_t>(p.q_elems()), T(0));
  out.lse.assign(static_cast<size_t>(p.lse_elems()), T(0));
  const MaskSpec mask = p.mask();
#pragma omp parallel for collapse(2) schedule(dynamic)
  for (int64_t b = 0; b < p.batch; ++b) {
    for (int64_t h = 0; h < p.heads_q; ++h) {
      const int64_t hk = p.kv_head_of(h);
      const MatR<T> q = q_dense<T>(p, in.q, b, h);   // (Nq, d), FP8 values
      const MatR<T> k = kv_dense<T>(p, in.k, b, hk);  // (Nk, d)
      const MatR<T> v = kv_dense<T>(p, in.v, b, hk);  // (Nk, d)
      MatR<T> s(p.seqlen_q, p.seqlen_k);              // (Nq, Nk): S, then P~
      if constexpr (std::is_same_v<T, float>) {
        const float factor = static_cast<float>(p.softmax_scale()) * p.q_descale_of_head(h) * p.k_descale_of(hk);
        detail::scores_f32(q.data(), q.outerStride(), k.data(), k.outerStride(), p.seqlen_q, p.seqlen_k,
                           p.head_dim, factor, s.data(), s.outerStride());
      } else {
        const double factor = p.softmax_scale() * double{p.q_descale_of_head(h)} * double{p.k_descale_of(hk)};
        s.noalias() = (q * k.transpose()) * factor;
      }
      VecX<T> row_factor(p.seqlen_q);  // vd / l, 0 for a fully masked row
      for (int64_t i = 0; i < p.seqlen_q; ++i) {
        auto row = s.row(i);
        const int64_t lo = mask.key_begin(i), hi = mask.key_end(i);
        const T m = hi > lo ? row.segment(lo, hi - lo).maxCoeff() : kNegInf<T>;
        if (m == kNegInf<T>) {  // fully masked row: O = 0, LSE = -inf
          row.setZero();
          row_factor(i) = T(0);
          out.lse[p.lse_offset(b, h, i)] = kNegInf<T>;
          continue;
        }
        detail::exp_visible(row, row, lo, hi, m);  // P~, masked entries exactly 0
        const T l = row.sum();
        out.lse[p.lse_offset(b, h, i)] = m + std::log(l);
        row_factor(i) = static_cast<T>(p.v_descale_of(hk)) / l;
        if constexpr (std::is_same_v<T, float>)
          for (int64_t j = lo; j < hi; ++j) row(j) = fp8_round(row(j), Fp8Format::e4m3);
      }
      MatR<T> o = s * v;                      // (Nq, d)
      o = row_factor.asDiagonal() * o;        // times vd / l per row
      round_mat(p.output_dtype(), o);
      detail::q_head(p, out.o, b, h) = o;
    }
  }
  return out;
}

// Packed and paged layouts: each sequence gathered into a dense problem, then the same code
// (by_sequence.hpp).
template <class T, class TI>
ForwardResult<T> forward_any(const AttnProblem& p, const InputTensors<TI>& in) {
  if (is_fp8(p.dtype)) {
    if (p.is_dense()) return forward_fp8_impl<T>(p, in);
    return detail::forward_by_sequence<T>(
        p, in, [](const AttnProblem& sp, const InputTensors<TI>& s) { return forward_fp8_impl<T>(sp, s); });
  }
  if (p.is_dense()) return forward_impl<T>(p, in);
  return detail::forward_by_sequence<T>(
      p, in, [](const AttnProblem& sp, const InputTensors<TI>& s) { return forward_impl<T>(sp, s); });
}

template <class T, class TI>
GradResult<T> backward_any(const AttnProblem& p, const InputTensors<TI>& in, const ForwardResult<T>* state = nullptr) {
  if (p.is_dense()) return backward_impl<T>(p, in, state);
  return detail::backward_by_sequence<T>(
      p, in, state, [](const AttnProblem& sp, const InputTensors<TI>& s, const ForwardResult<T>* st) {
        return backward_impl<T>(sp, s, st);
      });
}

}  // namespace

Forward64 forward_f64(const AttnProblem& p, const Inputs& in) { return forward_any<double>(p, in); }
Forward64 forward_f64(const AttnProblem& p, const Inputs64& in) { return forward_any<double>(p, in); }
Forward forward_naive(const AttnProblem& p, const Inputs& in) { return forward_any<float>(p, in); }

Grads64 backward_f64(const AttnProblem& p, const Inputs& in) { return backward_any<double>(p, in); }
Grads64 backward_f64(const AttnProblem& p, const Inputs64& in) { return backward_any<double>(p, in); }
Grads backward_naive(const AttnProblem& p, const Inputs& in) { return backward_any<float>(p, in); }
Grads backward_naive(const AttnProblem& p, const Inputs& in, const Forward& fwd) {
  return backward_any<float>(p, in, &fwd);
}

}  // namespace ioattn::ref

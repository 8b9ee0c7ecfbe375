// reference/online_softmax.hpp: the running (m_i, l_i, O_i) state of one query block, the idea
// FlashAttention-2 and split-KV share (FA2 paper, Algorithm 1, lines 8-10).
//
// For a query block Q_i (Br rows) that has seen key blocks 1..j:
//   m_i  = max of the scores seen so far, per row                                   (Br)
//   l_i  = sum of exp(S - m_i) over the keys seen so far, per row                    (Br)
//   O_i  = sum of exp(S - m_i) V over the keys seen so far (NOT yet divided by l_i)   (Br, d)
// Visiting key block j with scores S_ij (Br, Bc) and values V_j (Bc, d):
//   m_new = max(m_i, rowmax(S_ij))
//   P~    = exp(S_ij - m_new)                                                        (Br, Bc)
//   l_i   = exp(m_i - m_new) l_i + rowsum(P~)
//   O_i   = diag(exp(m_i - m_new)) O_i + P~ V_j
// and at the end O_i / l_i is the softmax output, m_i + log(l_i) the LSE.
//
// Numerics: a row that has seen only masked keys has m_i = -inf; exp(S - m_new) would be
// exp(-inf - (-inf)) = NaN, so such rows keep P~ = 0 and rescale factor 1, and finish as O = 0,
// LSE = -inf. l_i sums the fp32 P~; P~ is rounded to the input dtype only as the operand of P~ V_j
// (a low-precision kernel converts P~ to fp16/bf16 for the tensor-core matmul, not for the sum).
#pragma once

#include <cmath>

#include "detail.hpp"
#include "scores.hpp"

namespace ioattn::ref::detail {

struct OnlineSoftmax {
  MatR<float> r_o;  // (Br, d)  unnormalized O_i accumulator, fp32
  VecX<float> r_m;  // (Br)     running row max m_i
  VecX<float> r_l;  // (Br)     running row sum l_i
  MatR<float> r_p;  // (Br, Bc) scratch for P~

  OnlineSoftmax(int64_t rows, int64_t d)
      : r_o(MatR<float>::Zero(rows, d)),
        r_m(VecX<float>::Constant(rows, kNegInf<float>)),
        r_l(VecX<float>::Zero(rows)) {}

  // Visit one key block: s is S_ij (already scaled and masked to -inf) for query rows from r0 and
  // key rows from c0, v is V_j (Bc, d).
  template <class VBlock>
  void update(const MatR<float>& s, const VBlock& v, DType dtype, const MaskSpec& mask, int64_t r0,
              int64_t c0) {
    const int64_t rows = s.rows();
    const VecX<float> m_new = r_m.cwiseMax(s.rowwise().maxCoeff());  // (Br)
    r_p.resize(rows, s.cols());
    for (int64_t r = 0; r < rows; ++r) {
      if (m_new(r) == kNegInf<float>) {  // nothing visible yet in this row
        r_p.row(r).setZero();
        continue;
      }
      const float alpha = std::exp(r_m(r) - m_new(r));  // exp(-inf) = 0 on the first visible block
      const auto [lo, hi] = visible_cols(mask, r0 + r, c0, s.cols());
      exp_visible(r_p.row(r), s.row(r), lo, hi, m_new(r));  // P~ = exp(S - m_new), masked: 0
      r_l(r) = alpha * r_l(r) + r_p.row(r).sum();
      r_o.row(r) *= alpha;
      r_m(r) = m_new(r);
    }
    round_in_place(dtype, std::span<float>(r_p.data(), r_p.size()));  // P~ as the matmul operand
    r_o.noalias() += r_p * v;  // (Br, Bc) x (Bc, d)
  }

  // O_i = diag(l_i)^-1 O_i (0 for a fully masked row) and LSE_i = m_i + log(l_i) (-inf for it).
  void finish(MatR<float>& o, VecX<float>& lse) const {
    o.resize(r_o.rows(), r_o.cols());
    lse.resize(r_o.rows());
    for (int64_t r = 0; r < r_o.rows(); ++r) {
      if (r_l(r) == 0.0f) {
        o.row(r).setZero();
        lse(r) = kNegInf<float>;
      } else {
        o.row(r) = r_o.row(r) / r_l(r);
        lse(r) = r_m(r) + std::log(r_l(r));
      }
    }
  }
};

// S_ij = scale * Q_i K_j^T for query rows [r0, r1) and key rows [c0, c1) (scores.hpp), masked to
// -inf unless the whole tile is visible (MaskSpec::tile_unmasked skips the per-element predicate).
template <class QBlock, class KBlock>
void scores(const AttnProblem& p, const QBlock& q_i, const KBlock& k_j, int64_t r0, int64_t c0,
            MatR<float>& s) {
  s.resize(q_i.rows(), k_j.rows());  // (Br, Bc)
  scores_f32(q_i.data(), q_i.outerStride(), k_j.data(), k_j.outerStride(), q_i.rows(), k_j.rows(),
             p.head_dim, static_cast<float>(p.softmax_scale()), s.data(), s.outerStride());
  const MaskSpec mask = p.mask();
  const int64_t r1 = r0 + s.rows(), c1 = c0 + s.cols();
  if (mask.tile_unmasked(r0, r1, c0, c1)) return;
  for (int64_t r = r0; r < r1; ++r)
    for (int64_t c = c0; c < c1; ++c)
      if (!mask.allowed(r, c)) s(r - r0, c - c0) = kNegInf<float>;
}

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace ioattn::ref::detail

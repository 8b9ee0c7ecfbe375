// reference/backward_fa2.cpp: FlashAttention-2 backward (FA2 paper, Algorithm 2), K/V blocks
// outer, P recomputed from the forward's LSE instead of being stored.
//
//   D = rowsum(dO o O)                                     // (Nq) per head, from the forward's O
//   for each (batch b, kv head hk), for each query head h of its group:            [parallel]
//     for each key block j = 0..Tc-1:
//       load K_j, V_j; dK_j, dV_j accumulate in fp32        // (Bc, d) each, read/written once per j
//       for each query block i whose rows can see block j:
//         load Q_i, dO_i, LSE_i, D_i                        // read once per (i, j)
//         S_ij  = scale * Q_i K_j^T, masked                 // (Br, Bc)
//         P_ij  = exp(S_ij - LSE_i)                         // recomputed: no (Nq, Nk) P stored
//         dV_j += P_ij^T dO_i                               // (Bc, d)
//         dP_ij = dO_i V_j^T                                // (Br, Bc)
//         dS_ij = P_ij o (dP_ij - D_i)                      // (Br, Bc)
//         dQ_i += scale * dS_ij K_j                         // read-modify-write per (i, j):
//                                                           // atomics on a GPU, fp32
//         dK_j += scale * dS_ij^T Q_i                       // (Bc, d)
//
// GQA: the query heads of a group add into the same dK, dV, so one thread owns a (b, hk) pair.
// A fully masked row has LSE = -inf: its P row is 0 (exp(-inf - (-inf)) would be NaN, so the row
// is skipped) and so are its gradients. Precision: P and dS are rounded to the input dtype as
// matmul operands; D, dQ, dK, dV accumulate in fp32 and are rounded once at the end.
#include <fmt/format.h>

#include "online_softmax.hpp"

namespace ioattn::ref {

Grads backward_fa2(const AttnProblem& p, const Inputs& in, const Forward& fwd, const Tiling& t) {
  detail::check_tiling(t);
  detail::check_inputs(p, in, /*need_do=*/true, Algorithm::tiled_backward);
  if (static_cast<int64_t>(fwd.o.size()) != p.q_elems() ||
      static_cast<int64_t>(fwd.lse.size()) != p.lse_elems())
    throw ReferenceError("backward_fa2 needs the forward's O and LSE of this problem");
  for (float x : fwd.lse)
    if (x != x || x == std::numeric_limits<float>::infinity())
      throw ReferenceError("backward_fa2: the forward's LSE holds NaN or +inf");
  using detail::ceil_div;
  using detail::kNegInf;
  using detail::MatR;
  using detail::VecX;

  const MaskSpec mask = p.mask();
  const int64_t Br = t.br, Bc = t.bc;
  const int64_t Tr = ceil_div(p.seqlen_q, Br), Tc = ceil_div(p.seqlen_k, Bc);
  const float scale = static_cast<float>(p.softmax_scale());

  Grads g;
  g.dq.assign(static_cast<size_t>(p.q_elems()), 0.0f);  // fp32 accumulator, rounded at the end
  g.dk.assign(static_cast<size_t>(p.kv_elems()), 0.0f);
  g.dv.assign(static_cast<size_t>(p.kv_elems()), 0.0f);

#pragma omp parallel for collapse(2) schedule(dynamic)
  for (int64_t b = 0; b < p.batch; ++b) {
    for (int64_t hk = 0; hk < p.heads_kv; ++hk) {
      const auto g_k = detail::kv_head(p, in.k, b, hk);
      const auto g_v = detail::kv_head(p, in.v, b, hk);
      auto g_dk = detail::kv_head(p, g.dk, b, hk);
      auto g_dv = detail::kv_head(p, g.dv, b, hk);
      for (int64_t h = hk * p.group_size(); h < (hk + 1) * p.group_size(); ++h) {
        const auto g_q = detail::q_head(p, in.q, b, h);
        const auto g_do = detail::q_head(p, in.d_o, b, h);
        const auto g_o = detail::q_head(p, fwd.o, b, h);
        auto g_dq = detail::q_head(p, g.dq, b, h);
        const VecX<float> g_d = g_do.cwiseProduct(g_o).rowwise().sum();  // D: (Nq)
        MatR<float> s, dp;
        for (int64_t j = 0; j < Tc; ++j) {
          const int64_t c0 = j * Bc, cols = std::min(Bc, p.seqlen_k - c0);
          const MatR<float> r_k = g_k.middleRows(c0, cols);  // (Bc, d) read once per j
          const MatR<float> r_v = g_v.middleRows(c0, cols);  // (Bc, d)
          MatR<float> r_dk = MatR<float>::Zero(cols, p.head_dim);
          MatR<float> r_dv = MatR<float>::Zero(cols, p.head_dim);
          for (int64_t i = 0; i < Tr; ++i) {
            const int64_t r0 = i * Br, rows = std::min(Br, p.seqlen_q - r0);
            if (c0 >= mask.block_key_end(r0, r0 + rows) || c0 + cols <= mask.block_key_begin(r0, r0 + rows))
              continue;  // no row of Q_i sees K_j
            const MatR<float> r_q = g_q.middleRows(r0, rows);    // (Br, d)
            const MatR<float> r_do = g_do.middleRows(r0, rows);  // (Br, d)
            detail::scores(p, r_q, r_k, r0, c0, s);              // (Br, Bc)
            for (int64_t r = 0; r < rows; ++r) {                 // P = exp(S - LSE) in place
              const float lse = fwd.lse[p.lse_offset(b, h, r0 + r)];
              if (lse == kNegInf<float>) s.row(r).setZero();
              else {
                const auto [lo, hi] = detail::visible_cols(mask, r0 + r, c0, cols);
                detail::exp_visible(s.row(r), s.row(r), lo, hi, lse);
              }
            }
            MatR<float> p_op = s;  // P as a matmul operand, in the input dtype
            round_in_place(p.dtype, std::span<float>(p_op.data(), p_op.size()));
            r_dv.noalias() += p_op.transpose() * r_do;                    // (Bc, d)
            dp.resize(rows, cols);                                        // (Br, Bc): dO_i V_j^T
            detail::scores_f32(r_do.data(), r_do.outerStride(), r_v.data(), r_v.outerStride(), rows,
                               cols, p.head_dim, 1.0f, dp.data(), dp.outerStride());
            MatR<float> ds = s.cwiseProduct(dp.colwise() - g_d.segment(r0, rows));  // (Br, Bc)
            round_in_place(p.dtype, std::span<float>(ds.data(), ds.size()));
            g_dq.middleRows(r0, rows).noalias() += (ds * r_k) * scale;    // dQ_i += ... per (i, j)
            r_dk.noalias() += (ds.transpose() * r_q) * scale;             // (Bc, d)
          }
          g_dk.middleRows(c0, cols) += r_dk;  // written once per (j, query head)
          g_dv.middleRows(c0, cols) += r_dv;
        }
      }
    }
  }
  round_in_place(p.dtype, g.dq);
  round_in_place(p.dtype, g.dk);
  round_in_place(p.dtype, g.dv);
  return g;
}

}  // namespace ioattn::ref

// reference/tiled_fa1.cpp: FlashAttention-1 forward, K/V blocks outer (FA1 paper, Algorithm 1).
//
//   for each (batch b, query head h):                                               [parallel]
//     O = 0, l = 0, m = -inf                         // in "HBM": (Nq, d), (Nq), (Nq)
//     for each key block j = 0..Tc-1:
//       load K_j, V_j                                // read once per j        (Bc, d) each
//       for each query block i = 0..Tr-1 that can see block j:
//         load Q_i, O_i, l_i, m_i                    // read once per (i, j)   (Br, d), (Br), (Br)
//         S_ij = scale * Q_i K_j^T, masked           //                        (Br, Bc)
//         m~_ij = rowmax(S_ij), P~_ij = exp(S_ij - m~_ij), l~_ij = rowsum(P~_ij)
//         m_new = max(m_i, m~_ij)
//         l_new = exp(m_i - m_new) l_i + exp(m~_ij - m_new) l~_ij
//         O_i   = diag(l_new)^-1 (diag(l_i) exp(m_i - m_new) O_i + exp(m~_ij - m_new) P~_ij V_j)
//         write O_i, l_i = l_new, m_i = m_new        // written once per (i, j)
//     LSE = m + log(l)
//
// The difference to FA2 (tiled_fa2.cpp) is the loop order: K_j and V_j are read once, but O_i,
// l_i and m_i make a round trip to HBM for every (i, j), and O_i is renormalized every step. With
// K/V outer, query blocks of one head share O, so only (batch, head) runs in parallel.
//
// Precision: the O, l, m workspaces are fp32 (the paper keeps them in HBM; a kernel storing O_i in
// fp16 between steps would round it Tc times). P~ is rounded to the input dtype before P~ V_j.
// Fully masked so far (m_i = -inf) rows are guarded exactly as in online_softmax.hpp.
#include "online_softmax.hpp"

namespace ioattn::ref {

Forward forward_fa1(const AttnProblem& p, const Inputs& in, const Tiling& t) {
  detail::check_tiling(t);
  detail::check_inputs(p, in, /*need_do=*/false, Algorithm::tiled_forward);
  using detail::ceil_div;
  using detail::kNegInf;
  using detail::MatR;
  using detail::VecX;

  Forward out;
  out.o.assign(static_cast<size_t>(p.q_elems()), 0.0f);
  out.lse.assign(static_cast<size_t>(p.lse_elems()), 0.0f);
  const MaskSpec mask = p.mask();
  const int64_t Br = t.br, Bc = t.bc;
  const int64_t Tr = ceil_div(p.seqlen_q, Br), Tc = ceil_div(p.seqlen_k, Bc);

#pragma omp parallel for collapse(2) schedule(dynamic)
  for (int64_t b = 0; b < p.batch; ++b) {
    for (int64_t h = 0; h < p.heads_q; ++h) {
      const auto g_q = detail::q_head(p, in.q, b, h);
      const auto g_k = detail::kv_head(p, in.k, b, p.kv_head_of(h));
      const auto g_v = detail::kv_head(p, in.v, b, p.kv_head_of(h));
      MatR<float> g_o = MatR<float>::Zero(p.seqlen_q, p.head_dim);         // (Nq, d) workspace
      VecX<float> g_l = VecX<float>::Zero(p.seqlen_q);                      // (Nq)
      VecX<float> g_m = VecX<float>::Constant(p.seqlen_q, kNegInf<float>);  // (Nq)
      MatR<float> s, p_tilde;
      for (int64_t j = 0; j < Tc; ++j) {
        const int64_t c0 = j * Bc, cols = std::min(Bc, p.seqlen_k - c0);
        const MatR<float> r_k = g_k.middleRows(c0, cols);  // (Bc, d) read once per j
        const MatR<float> r_v = g_v.middleRows(c0, cols);  // (Bc, d) read once per j
        for (int64_t i = 0; i < Tr; ++i) {
          const int64_t r0 = i * Br, rows = std::min(Br, p.seqlen_q - r0);
          // Skip the tile when no row of Q_i sees any key of K_j.
          if (c0 >= mask.block_key_end(r0, r0 + rows) || c0 + cols <= mask.block_key_begin(r0, r0 + rows))
            continue;
          detail::scores(p, g_q.middleRows(r0, rows), r_k, r0, c0, s);  // Q_i read per (i, j)
          p_tilde.resize(rows, cols);
          VecX<float> w = VecX<float>::Zero(rows);  // weight beta / l_new of P~ V_j per row
          for (int64_t r = 0; r < rows; ++r) {
            const float m_tile = s.row(r).maxCoeff();  // m~_ij
            float& m_i = g_m(r0 + r);                  // m_i, l_i, O_i: read and written per (i, j)
            float& l_i = g_l(r0 + r);
            if (m_tile == kNegInf<float>) {  // the row sees no key of this tile: unchanged
              p_tilde.row(r).setZero();
              continue;
            }
            const auto [lo, hi] = detail::visible_cols(mask, r0 + r, c0, cols);
            detail::exp_visible(p_tilde.row(r), s.row(r), lo, hi, m_tile);  // P~_ij
            const float l_tile = p_tilde.row(r).sum();            // l~_ij
            const float m_new = std::max(m_i, m_tile);
            const float alpha = std::exp(m_i - m_new);  // 0 when m_i = -inf (first visible tile)
            const float beta = std::exp(m_tile - m_new);
            const float l_new = alpha * l_i + beta * l_tile;
            g_o.row(r0 + r) *= l_i * alpha / l_new;  // diag(l_i) exp(m_i - m_new) O_i / l_new
            w(r) = beta / l_new;
            l_i = l_new;
            m_i = m_new;
          }
          round_in_place(p.dtype, std::span<float>(p_tilde.data(), p_tilde.size()));  // matmul operand
          const MatR<float> pv = p_tilde * r_v;                  // (Br, Bc) x (Bc, d)
          g_o.middleRows(r0, rows) += w.asDiagonal() * pv;       // + exp(m~ - m_new) P~ V_j / l_new
        }
      }
      // LSE = m + log(l); fully masked rows (l = 0) have O = 0 and LSE = -inf.
      for (int64_t i = 0; i < p.seqlen_q; ++i) {
        const bool empty = g_l(i) == 0.0f;
        out.lse[p.lse_offset(b, h, i)] = empty ? kNegInf<float> : g_m(i) + std::log(g_l(i));
        if (empty) g_o.row(i).setZero();
      }
      round_in_place(p.dtype, std::span<float>(g_o.data(), g_o.size()));
      detail::q_head(p, out.o, b, h) = g_o;
    }
  }
  return out;
}

}  // namespace ioattn::ref

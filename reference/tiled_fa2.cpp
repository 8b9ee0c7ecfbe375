// reference/tiled_fa2.cpp: FlashAttention-2 forward, Q blocks outer (FA2 paper, Algorithm 1).
//
//   for each (batch b, query head h), for each query block i = 0..Tr-1 (Br rows):   [parallel]
//     load Q_i                                       // read once per i        (Br, d)
//     m_i = -inf, l_i = 0, O_i = 0                   // stay "on chip" (here: in cache)
//     for each key block j = 0..Tc-1 that the mask lets Q_i see:
//       load K_j, V_j                                // read once per (i, j)   (Bc, d) each
//       S_ij = scale * Q_i K_j^T, masked             //                        (Br, Bc)
//       online-softmax update of (m_i, l_i, O_i)     // online_softmax.hpp
//     O_i = O_i / l_i, LSE_i = m_i + log(l_i)        // written once per i
//
// Traffic against the naive algorithm: Q and O move once, K and V once per query block (Tr times),
// and the (Nq, Nk) matrix S never exists; on a CPU the tiles (Br, Bc, d <= 128 in floats: tens of
// KiB) stay in L1/L2 while the naive S of a 4k x 4k head (64 MiB) streams through DRAM twice.
// Key blocks are skipped when [j*Bc, (j+1)*Bc) misses [block_key_begin, block_key_end) of the
// query block (causal: about half of them).
//
// The outer loop runs in parallel over (batch, head, query block): unlike FA1's order, query blocks
// are independent, which is why FA2 parallelizes over the sequence as well (FA2 paper, Sec. 3.2).
#include "online_softmax.hpp"

namespace ioattn::ref {

Forward forward_fa2(const AttnProblem& p, const Inputs& in, const Tiling& t) {
  detail::check_tiling(t);
  detail::check_inputs(p, in, /*need_do=*/false, Algorithm::tiled_forward);
  using detail::ceil_div;
  using detail::MatR;
  using detail::VecX;

  Forward out;
  out.o.assign(static_cast<size_t>(p.q_elems()), 0.0f);
  out.lse.assign(static_cast<size_t>(p.lse_elems()), 0.0f);
  const MaskSpec mask = p.mask();
  const int64_t Br = t.br, Bc = t.bc;
  const int64_t Tr = ceil_div(p.seqlen_q, Br), Tc = ceil_div(p.seqlen_k, Bc);

#pragma omp parallel for collapse(3) schedule(dynamic)
  for (int64_t b = 0; b < p.batch; ++b) {
    for (int64_t h = 0; h < p.heads_q; ++h) {
      for (int64_t i = 0; i < Tr; ++i) {
        const auto g_q = detail::q_head(p, in.q, b, h);                // (Nq, d) in "HBM"
        const auto g_k = detail::kv_head(p, in.k, b, p.kv_head_of(h)); // (Nk, d)
        const auto g_v = detail::kv_head(p, in.v, b, p.kv_head_of(h)); // (Nk, d)
        const int64_t r0 = i * Br, rows = std::min(Br, p.seqlen_q - r0);
        const MatR<float> r_q = g_q.middleRows(r0, rows);              // (Br, d) read once
        detail::OnlineSoftmax st(rows, p.head_dim);
        MatR<float> s;                                                 // (Br, Bc)
        // Key blocks this query block can see at all; the others are skipped unread.
        const int64_t kb = mask.block_key_begin(r0, r0 + rows), ke = mask.block_key_end(r0, r0 + rows);
        for (int64_t j = kb / Bc; j < Tc && j * Bc < ke; ++j) {
          const int64_t c0 = j * Bc, cols = std::min(Bc, p.seqlen_k - c0);
          detail::scores(p, r_q, g_k.middleRows(c0, cols), r0, c0, s);  // K_j read per (i, j)
          st.update(s, g_v.middleRows(c0, cols), p.dtype, mask, r0, c0);  // V_j read per (i, j)
        }
        MatR<float> o;
        VecX<float> lse;
        st.finish(o, lse);
        round_in_place(p.dtype, std::span<float>(o.data(), o.size()));  // O stored in the dtype
        auto g_o = detail::q_head(p, out.o, b, h);
        g_o.middleRows(r0, rows) = o;                                   // written once per i
        for (int64_t r = 0; r < rows; ++r) out.lse[p.lse_offset(b, h, r0 + r)] = lse(r);
      }
    }
  }
  return out;
}

}  // namespace ioattn::ref

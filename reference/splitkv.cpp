// reference/splitkv.cpp: split-KV forward (Flash-Decoding): split the keys, attend each split
// independently, combine the partial results with their log-sum-exps.
//
//   the Tc key blocks are cut into `splits` contiguous chunks of ceil(Tc / splits) blocks
//   for each (batch b, query head h, query block i):                                [parallel]
//     for each split s:                                      // on a GPU: one CTA each, in parallel
//       (O_i^s, LSE_i^s) = FA2 inner loop over the key blocks of split s (online_softmax.hpp)
//                          O_i^s normalized by its own l; LSE_i^s = -inf when the split is empty
//                          or fully masked for a row       // written: (splits, Br, d) + (splits, Br)
//     combine (per row):                                   // read back: the same
//       LSE_i = M + log(sum_s exp(LSE_i^s - M)),  M = max_s LSE_i^s
//       O_i   = sum_s exp(LSE_i^s - LSE_i) O_i^s
//     a row with M = -inf (no split saw a key) gets O = 0, LSE = -inf.
//
// Why: at decode time seqlen_q is 1-ish, so Q blocks give no parallelism; splitting the keys
// does, at the price of the partial O traffic (splits * Nq * d floats, kept fp32 like the
// kernels' O_accum) and the combine.
#include <fmt/format.h>
#include <omp.h>
#include <unistd.h>

#include "online_softmax.hpp"

namespace ioattn::ref {

Forward forward_splitkv(const AttnProblem& p, const Inputs& in, const Tiling& t) {
  detail::check_tiling(t);
  detail::check_inputs(p, in, /*need_do=*/false, Algorithm::tiled_forward);
  using detail::ceil_div;
  using detail::kNegInf;
  using detail::MatR;
  using detail::VecX;

  const MaskSpec mask = p.mask();
  const int64_t Br = t.br, Bc = t.bc, splits = t.splits;
  const int64_t Tr = ceil_div(p.seqlen_q, Br), Tc = ceil_div(p.seqlen_k, Bc);
  const int64_t blocks_per_split = ceil_div(Tc, splits);
  {  // the partials of one query block, per thread
    const double bytes = double(omp_get_max_threads()) * double(splits) *
                         double(std::min(Br, p.seqlen_q)) * double(p.head_dim + 1) * 4.0;
    const double phys = double(sysconf(_SC_PHYS_PAGES)) * double(sysconf(_SC_PAGE_SIZE));
    if (bytes > 0.25 * phys)
      throw ReferenceError(fmt::format("split-KV partials need {:.1f} GiB (splits x Br x d per "
                                       "thread); use fewer splits or a smaller Br", bytes / 0x1p30));
  }

  Forward out;
  out.o.assign(static_cast<size_t>(p.q_elems()), 0.0f);
  out.lse.assign(static_cast<size_t>(p.lse_elems()), 0.0f);

#pragma omp parallel for collapse(3) schedule(dynamic)
  for (int64_t b = 0; b < p.batch; ++b) {
    for (int64_t h = 0; h < p.heads_q; ++h) {
      for (int64_t i = 0; i < Tr; ++i) {
        const auto g_q = detail::q_head(p, in.q, b, h);
        const auto g_k = detail::kv_head(p, in.k, b, p.kv_head_of(h));
        const auto g_v = detail::kv_head(p, in.v, b, p.kv_head_of(h));
        const int64_t r0 = i * Br, rows = std::min(Br, p.seqlen_q - r0);
        const MatR<float> r_q = g_q.middleRows(r0, rows);  // (Br, d)
        const int64_t kb = mask.block_key_begin(r0, r0 + rows), ke = mask.block_key_end(r0, r0 + rows);

        // Phase 1: one partial (O_i^s, LSE_i^s) per split.
        std::vector<MatR<float>> g_o_part(static_cast<size_t>(splits));  // (Br, d) each
        std::vector<VecX<float>> g_lse_part(static_cast<size_t>(splits)); // (Br) each
        MatR<float> s;
        for (int64_t sp = 0; sp < splits; ++sp) {
          detail::OnlineSoftmax st(rows, p.head_dim);
          const int64_t j_begin = sp * blocks_per_split;
          const int64_t j_end = std::min(Tc, j_begin + blocks_per_split);
          for (int64_t j = std::max(j_begin, kb / Bc); j < j_end && j * Bc < ke; ++j) {
            const int64_t c0 = j * Bc, cols = std::min(Bc, p.seqlen_k - c0);
            detail::scores(p, r_q, g_k.middleRows(c0, cols), r0, c0, s);
            st.update(s, g_v.middleRows(c0, cols), p.dtype);
          }
          st.finish(g_o_part[sp], g_lse_part[sp]);  // empty split: O^s = 0, LSE^s = -inf
        }

        // Phase 2: the log-sum-exp combine, per row.
        auto g_o = detail::q_head(p, out.o, b, h);
        for (int64_t r = 0; r < rows; ++r) {
          float m = kNegInf<float>;
          for (int64_t sp = 0; sp < splits; ++sp) m = std::max(m, g_lse_part[sp](r));
          float lse = kNegInf<float>;
          auto o_row = g_o.row(r0 + r);
          o_row.setZero();
          if (m != kNegInf<float>) {
            float sum = 0.0f;
            for (int64_t sp = 0; sp < splits; ++sp) sum += std::exp(g_lse_part[sp](r) - m);
            lse = m + std::log(sum);
            for (int64_t sp = 0; sp < splits; ++sp) {
              const float w = std::exp(g_lse_part[sp](r) - lse);  // 0 for an empty split
              if (w != 0.0f) o_row += w * g_o_part[sp].row(r);
            }
          }
          for (int64_t x = 0; x < p.head_dim; ++x) o_row(x) = round_to(p.dtype, o_row(x));
          out.lse[p.lse_offset(b, h, r0 + r)] = lse;
        }
      }
    }
  }
  return out;
}

}  // namespace ioattn::ref

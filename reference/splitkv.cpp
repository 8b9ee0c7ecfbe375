// reference/splitkv.cpp: split-KV forward (Flash-Decoding): split the keys, attend each split
// independently, combine the partial results with their log-sum-exps.
//
//   the Tc key blocks are cut into `splits` contiguous chunks of ceil(Tc / splits) blocks
//   for each (batch b, query head h, query block i):                                [parallel]
//     for each split s:                                      // on a GPU: one CTA each, in parallel
//       FA2 inner loop over the key blocks of split s (online_softmax.hpp), giving per row
//         O_i^s (normalized by its own l^s), and LSE_i^s = m^s + log(l^s) kept as the pair
//         (m^s, l^s); an empty or fully masked split has l^s = 0, LSE^s = -inf
//                                                          // written: (splits, Br, d) + 2 (splits, Br)
//     combine (per row):                                   // read back: the same
//       M = max_s m^s,  L = sum_s exp(m^s - M) l^s         // i.e. LSE = log sum_s exp(LSE^s)
//       O_i = sum_s (exp(m^s - M) l^s / L) O_i^s,  LSE_i = M + log(L)
//     a row with L = 0 (no split saw a key) gets O = 0, LSE = -inf.
//
// Why: at decode time seqlen_q is 1-ish, so Q blocks give no parallelism; splitting the keys
// does, at the price of the partial O traffic (splits * Nq * d floats, kept fp32 like the
// kernels' O_accum) and the combine.
//
// Precision lesson (found by the huge-logit properties): Flash-Decoding kernels store one fp32
// LSE^s per split. At logits of ~5000 an fp32 LSE is only known to 2.4e-4 (half an ulp), which
// becomes a relative error of the combine weights exp(LSE^s - LSE) and gave 3x the naive
// baseline's error. Keeping LSE^s as (m^s, l^s), where m^s is an exact score and l^s in [1, Nk],
// keeps the combine as accurate as the single-pass online softmax.
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

        // Phase 1: one partial (O_i^s, m^s, l^s) per split.
        std::vector<MatR<float>> g_o_part(static_cast<size_t>(splits));  // (Br, d) each
        std::vector<VecX<float>> g_m_part(static_cast<size_t>(splits));  // (Br) each
        std::vector<VecX<float>> g_l_part(static_cast<size_t>(splits));  // (Br) each
        MatR<float> s;
        for (int64_t sp = 0; sp < splits; ++sp) {
          detail::OnlineSoftmax st(rows, p.head_dim);
          const int64_t j_begin = sp * blocks_per_split;
          const int64_t j_end = std::min(Tc, j_begin + blocks_per_split);
          for (int64_t j = std::max(j_begin, kb / Bc); j < j_end && j * Bc < ke; ++j) {
            const int64_t c0 = j * Bc, cols = std::min(Bc, p.seqlen_k - c0);
            detail::scores(p, r_q, g_k.middleRows(c0, cols), r0, c0, s);
            st.update(s, g_v.middleRows(c0, cols), p.dtype, mask, r0, c0);
          }
          VecX<float> unused_lse;
          st.finish(g_o_part[sp], unused_lse);  // O^s normalized; 0 for an empty split
          g_m_part[sp] = st.r_m;
          g_l_part[sp] = st.r_l;
        }

        // Phase 2: the log-sum-exp combine, per row.
        auto g_o = detail::q_head(p, out.o, b, h);
        for (int64_t r = 0; r < rows; ++r) {
          float m = kNegInf<float>;  // M
          for (int64_t sp = 0; sp < splits; ++sp)
            if (g_l_part[sp](r) > 0.0f) m = std::max(m, g_m_part[sp](r));
          float lse = kNegInf<float>;
          auto o_row = g_o.row(r0 + r);
          o_row.setZero();
          if (m != kNegInf<float>) {
            float l = 0.0f;  // L
            for (int64_t sp = 0; sp < splits; ++sp)
              if (g_l_part[sp](r) > 0.0f) l += std::exp(g_m_part[sp](r) - m) * g_l_part[sp](r);
            lse = m + std::log(l);
            for (int64_t sp = 0; sp < splits; ++sp) {
              if (g_l_part[sp](r) == 0.0f) continue;  // empty split: weight 0 (its m is -inf)
              const float w = std::exp(g_m_part[sp](r) - m) * g_l_part[sp](r) / l;
              o_row += w * g_o_part[sp].row(r);
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

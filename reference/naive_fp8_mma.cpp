// reference/naive_fp8_mma.cpp: the FP8 same-precision baseline with the tensor core's accumulation
// (forward_naive_fp8 in reference.hpp; the model is fp8_mma_model.hpp).
//
// The steps are forward_naive's FP8 steps (naive.cpp, "FP8 inputs") with the two products
// accumulated as an FP8 wgmma kernel (v09_fp8_wgmma) accumulates them:
//   S_ij  = fp8_mma_dot(q_i, k_j) over d in k32 instructions in order of d, a fresh accumulator every
//           acc.s_promote instructions (0: one accumulator), the chunks added in fp32; then times the
//           one fp32 factor scale * qd * kd;
//   P~    = exp(S - m) in fp32 with the row's final maximum m, rounded to e4m3 (as forward_naive);
//   l     = the sum of the unrounded fp32 P~ (as forward_naive); LSE = m + log l;
//   O_ix  = fp8_mma_dot over the keys of row i of P~_e4m3 and column x of V, one accumulator across
//           all keys (v09 never promotes O), the k32 groups at key indices 32 g .. 32 g + 31 (v09's
//           key tiles start at multiples of Bc, a multiple of 32; masked keys are zero products);
//           then times vd / l in fp32, rounded to the output dtype.
// What the baseline still does not copy from the kernel: the online softmax's running (lazily moved)
// maximum and O's rescaling by exp(m_old - m_new) between key tiles, and exp2 with a log2(e) factor
// in place of exp; they are the algorithm, not the precision.
// Cost: O(Nq Nk d) scalar steps with an exponent and a truncation per product, about 15x slower
// than forward_naive (N 512, d 128, one thread: 1.8 s against 0.13 s); meant for the problems a GPU check compares (N in the hundreds or thousands).
#include <cmath>
#include <vector>

#include "by_sequence.hpp"
#include "detail.hpp"
#include "fp8_mma_model.hpp"
#include "reference.hpp"

namespace ioattn::ref {

namespace {

using detail::kNegInf;
using detail::MatR;
using detail::VecX;

Forward forward_fp8_mma_dense(const AttnProblem& p, const Inputs& in, const Fp8Accumulation& acc) {
  detail::check_inputs(p, in, /*need_do=*/false, Algorithm::naive_forward);
  Forward out;
  out.o.assign(static_cast<size_t>(p.q_elems()), 0.0f);
  out.lse.assign(static_cast<size_t>(p.lse_elems()), 0.0f);
  const MaskSpec mask = p.mask();
  const Fp8Format fin = p.dtype == DType::fp8_e5m2 ? Fp8Format::e5m2 : Fp8Format::e4m3;
  const int64_t d = p.head_dim, nk = p.seqlen_k;
#pragma omp parallel for collapse(2) schedule(dynamic)
  for (int64_t b = 0; b < p.batch; ++b) {
    for (int64_t h = 0; h < p.heads_q; ++h) {
      const int64_t hk = p.kv_head_of(h);
      const MatR<float> q = detail::q_head(p, in.q, b, h);    // (Nq, d), FP8 values
      const MatR<float> k = detail::kv_head(p, in.k, b, hk);  // (Nk, d)
      const MatR<float> vt = detail::kv_head(p, in.v, b, hk).transpose();  // (d, Nk): V^T, keys contiguous
      const float factor = static_cast<float>(p.softmax_scale()) * p.q_descale_of_head(h) * p.k_descale_of(hk);
      const float vd = p.v_descale_of(hk);
      VecX<float> row(nk);   // S, then P~, of one query row
      std::vector<float> pe(static_cast<size_t>(nk));  // P~ rounded to e4m3, 0 outside [lo, hi)
      for (int64_t i = 0; i < p.seqlen_q; ++i) {
        const int64_t lo = mask.key_begin(i), hi = mask.key_end(i);
        float* o = &out.o[static_cast<size_t>(p.q_offset(b, i, h, 0))];
        if (hi <= lo) {  // fully masked row: O = 0, LSE = -inf
          out.lse[static_cast<size_t>(p.lse_offset(b, h, i))] = kNegInf<float>;
          continue;
        }
        const std::span<const float> q_i(q.row(i).data(), static_cast<size_t>(d));
        for (int64_t j = lo; j < hi; ++j)
          row(j) = fp8_mma_dot(q_i, std::span<const float>(k.row(j).data(), static_cast<size_t>(d)), acc.s_promote,
                               fin, fin) *
                   factor;
        const float m = row.segment(lo, hi - lo).maxCoeff();
        detail::exp_visible(row, row, lo, hi, m);  // P~; masked entries exactly 0
        const float l = row.segment(lo, hi - lo).sum();
        out.lse[static_cast<size_t>(p.lse_offset(b, h, i))] = m + std::log(l);
        std::fill(pe.begin(), pe.end(), 0.0f);
        for (int64_t j = lo; j < hi; ++j) pe[static_cast<size_t>(j)] = fp8_round(row(j), Fp8Format::e4m3);
        // The keys of the row in whole k32 groups: [g0, g1) with g0 = 32 floor(lo / 32).
        const int64_t g0 = lo / kFp8MmaGroup * kFp8MmaGroup, g1 = hi;
        const std::span<const float> p_i(pe.data() + g0, static_cast<size_t>(g1 - g0));
        const float f = vd / l;
        for (int64_t x = 0; x < d; ++x) {
          const std::span<const float> v_x(vt.row(x).data() + g0, static_cast<size_t>(g1 - g0));
          o[x] = round_to(p.output_dtype(), fp8_mma_dot(p_i, v_x, /*promote=*/0, Fp8Format::e4m3, fin) * f);
        }
      }
    }
  }
  return out;
}

}  // namespace

Forward forward_naive_fp8(const AttnProblem& p, const Inputs& in, const Fp8Accumulation& acc) {
  if (!acc.tensor_core) return forward_naive(p, in);
  if (auto e = p.validate()) throw ReferenceError(*e);
  if (!is_fp8(p.dtype))
    throw ReferenceError("forward_naive_fp8: the tensor-core accumulation model is defined for FP8 inputs only (dtype " +
                         std::string(dtype_name(p.dtype)) + ")");
  if (acc.s_promote < 0) throw ReferenceError("forward_naive_fp8: s_promote must be >= 0 (0: never promoted)");
  if (p.is_dense()) return forward_fp8_mma_dense(p, in, acc);
  return detail::forward_by_sequence<float>(
      p, in, [&](const AttnProblem& sp, const Inputs& s) { return forward_fp8_mma_dense(sp, s, acc); });
}

}  // namespace ioattn::ref

// kernels/attn_view.hpp: the AttnProblem as a kernel sees it (plain fields, device-callable).
//
// AttnProblem (include/ioattn/problem.hpp) is host code: optional scale, validate(), strings.
// Kernels get this trivially copyable view instead, passed by value as a kernel argument. The
// mask is the spec's MaskSpec itself, so reference, simulator and kernels share one predicate.
//
// Layout reminder (BSHD, element strides):
//   Q, O : (batch, seqlen_q, heads_q,  d)    K, V : (batch, seqlen_k, heads_kv, d)
//   LSE  : (batch, heads_q, seqlen_q) fp32
#pragma once

#include <cstdint>

#include "ioattn/config.hpp"
#include "ioattn/mask.hpp"
#include "ioattn/problem.hpp"

namespace ioattn::kernels {

struct AttnView {
  int64_t batch, heads_q, heads_kv, seqlen_q, seqlen_k, head_dim;
  int64_t group;          // heads_q / heads_kv: query heads per K/V head (GQA)
  float scale;            // softmax scale
  float scale_log2;       // scale * log2(e): exp(scale*s) == exp2(scale_log2*s), exp2 is cheaper
  MaskSpec mask;

  static AttnView of(const AttnProblem& p) {
    const double s = p.softmax_scale();
    return {p.batch, p.heads_q, p.heads_kv, p.seqlen_q, p.seqlen_k, p.head_dim, p.group_size(),
            static_cast<float>(s), static_cast<float>(s * 1.4426950408889634), p.mask()};
  }

  // Element offsets, as in problem.hpp.
  IOATTN_HD int64_t q_offset(int64_t b, int64_t s, int64_t h) const {
    return ((b * seqlen_q + s) * heads_q + h) * head_dim;
  }
  IOATTN_HD int64_t kv_offset(int64_t b, int64_t s, int64_t h_kv) const {
    return ((b * seqlen_k + s) * heads_kv + h_kv) * head_dim;
  }
  IOATTN_HD int64_t lse_offset(int64_t b, int64_t h, int64_t s) const {
    return (b * heads_q + h) * seqlen_q + s;
  }
  // Row strides between consecutive sequence positions of one head.
  IOATTN_HD int64_t q_row_stride() const { return heads_q * head_dim; }
  IOATTN_HD int64_t kv_row_stride() const { return heads_kv * head_dim; }
  IOATTN_HD int64_t kv_head_of(int64_t h) const { return h / group; }
};

}  // namespace ioattn::kernels

// ioattn/problem.hpp: AttnProblem, the one description of an attention problem.
//
// Shapes and layout (BSHD, all tensors contiguous, element strides):
//
//   Q, O, dQ, dO : (batch, seqlen_q, heads_q,  head_dim)  strides (seqlen_q*heads_q*d, heads_q*d, d, 1)
//   K, V, dK, dV : (batch, seqlen_k, heads_kv, head_dim)  strides (seqlen_k*heads_kv*d, heads_kv*d, d, 1)
//   LSE          : (batch, heads_q, seqlen_q)             strides (heads_q*seqlen_q, seqlen_q, 1), fp32
//
// Packed variable-length batches and a paged KV cache are described by `layout` (BatchLayout,
// layout.hpp); its default is the dense layout above, and then nothing below changes. With another
// layout, seqlen_q / seqlen_k are the maximum lengths, the per-sequence lengths and masks come from
// seqlen_q_of / seqlen_k_of / mask_of, tensor rows from q_row / kv_row / lse_index, and the element
// counts follow the layout. q_offset, kv_offset, lse_offset and mask() describe the dense layout only.
//
// Grouped-query attention: query head h reads key/value head h / (heads_q / heads_kv); heads_kv ==
// heads_q is multi-head attention, heads_kv == 1 is multi-query attention.
//
// Output contract (every implementation):
//   S   = scale * Q K^T, masked by MaskSpec (mask.hpp) to -inf
//   LSE = log(sum_j exp(S_ij))  (natural log, fp32), -inf for a row with every key masked
//   O   = softmax(S) V, and O = 0 (never NaN) for a fully masked row
//
// FP8 inputs (dtype fp8_e4m3 / fp8_e5m2, forward only): Q, K, V hold FP8 values and the problem's
// inputs are those times the descale factors of `fp8` (Fp8Scaling below):
//   S = scale * (q_descale Q) (k_descale K)^T,  O = softmax(S) (v_descale V),  O in fp8.out.
// Every other dtype leaves `fp8` at its default (validate() refuses anything else).
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ioattn/config.hpp"
#include "ioattn/dtype.hpp"
#include "ioattn/layout.hpp"
#include "ioattn/mask.hpp"

namespace ioattn {

// The FP8 part of a problem, FlashAttention-3's q_descale, k_descale, v_descale and output dtype.
// A descale vector holds no value (1.0), one value (per tensor) or heads_kv values (one per K/V
// head; query head h uses entry kv_head_of(h), as FA3's (batch, heads_kv) descales do for every
// batch). Descales are fp32, as the kernels use them.
struct Fp8Scaling {
  std::vector<float> q_descale, k_descale, v_descale;
  DType out = DType::bf16;  // dtype of O: bf16 or fp16

  bool is_default() const {
    return q_descale.empty() && k_descale.empty() && v_descale.empty() && out == DType::bf16;
  }
};

struct AttnProblem {
  int64_t batch = 1;
  int64_t heads_q = 1;
  int64_t heads_kv = 1;
  int64_t seqlen_q = 1;
  int64_t seqlen_k = 1;
  int64_t head_dim = 64;
  std::optional<double> scale;  // softmax scale; unset means 1/sqrt(head_dim)
  bool causal = false;
  int64_t window_left = -1;   // -1: unbounded
  int64_t window_right = -1;  // -1: unbounded
  DType dtype = DType::fp32;
  BatchLayout layout;  // default: dense BSHD (layout.hpp)
  Fp8Scaling fp8;      // FP8 dtypes only: descales and output dtype (above)

  // dtype of O: the input dtype, except for FP8 inputs (fp8.out).
  DType output_dtype() const { return is_fp8(dtype) ? fp8.out : dtype; }
  // Descale of query head h / key-value head hk (1 for non-FP8 problems).
  float q_descale_of_head(int64_t h) const { return descale_at(fp8.q_descale, kv_head_of(h)); }
  float k_descale_of(int64_t hk) const { return descale_at(fp8.k_descale, hk); }
  float v_descale_of(int64_t hk) const { return descale_at(fp8.v_descale, hk); }
  static float descale_at(const std::vector<float>& d, int64_t hk) {
    return d.empty() ? 1.0f : d.size() == 1 ? d[0] : d[static_cast<size_t>(hk)];
  }

  double softmax_scale() const {
    return scale ? *scale : 1.0 / std::sqrt(static_cast<double>(head_dim));
  }
  MaskSpec mask() const { return {seqlen_q, seqlen_k, causal, window_left, window_right}; }
  int64_t group_size() const { return heads_q / heads_kv; }  // query heads per K/V head
  int64_t kv_head_of(int64_t h) const { return h / group_size(); }

  // Element counts of the tensors in the layout above (packed or paged: layout.hpp).
  int64_t q_rows() const { return layout.varlen_q() ? layout.total_q : batch * seqlen_q; }
  int64_t kv_rows() const {
    return layout.paged() ? layout.num_pages * layout.page_size : layout.varlen_k() ? layout.total_k : batch * seqlen_k;
  }
  int64_t q_elems() const { return q_rows() * heads_q * head_dim; }
  int64_t kv_elems() const { return kv_rows() * heads_kv * head_dim; }
  int64_t lse_elems() const { return q_rows() * heads_q; }
  // Scores one (batch, head) pair would materialize: the naive algorithm's S and P.
  int64_t score_elems_per_head() const { return seqlen_q * seqlen_k; }

  // Offsets of element (b, s, h, x) in the BSHD tensors and of LSE(b, h, s).
  int64_t q_offset(int64_t b, int64_t s, int64_t h, int64_t x) const {
    return ((b * seqlen_q + s) * heads_q + h) * head_dim + x;
  }
  int64_t kv_offset(int64_t b, int64_t s, int64_t h, int64_t x) const {
    return ((b * seqlen_k + s) * heads_kv + h) * head_dim + x;
  }
  int64_t lse_offset(int64_t b, int64_t h, int64_t s) const { return (b * heads_q + h) * seqlen_q + s; }

  // Any layout (dense, varlen, paged; layout.hpp). Sequence b has seqlen_q_of(b) queries and
  // seqlen_k_of(b) keys (either may be 0) and its own bottom-right aligned mask.
  bool is_dense() const { return layout.dense(); }
  int64_t seqlen_q_of(int64_t b) const {
    return layout.varlen_q() ? int64_t{layout.cu_seqlens_q[b + 1]} - layout.cu_seqlens_q[b] : seqlen_q;
  }
  int64_t seqlen_k_of(int64_t b) const {
    if (layout.paged()) return layout.seqused_k[b];
    return layout.varlen_k() ? int64_t{layout.cu_seqlens_k[b + 1]} - layout.cu_seqlens_k[b] : seqlen_k;
  }
  MaskSpec mask_of(int64_t b) const { return {seqlen_q_of(b), seqlen_k_of(b), causal, window_left, window_right}; }
  // Row (token index) of query i / key j of sequence b in the Q-shaped / K-shaped tensors: element
  // (row, h, x) is at (row * heads + h) * head_dim + x.
  int64_t q_row(int64_t b, int64_t i) const { return layout.varlen_q() ? layout.cu_seqlens_q[b] + i : b * seqlen_q + i; }
  int64_t kv_row(int64_t b, int64_t j) const {
    if (layout.paged())
      return int64_t{layout.block_table[b * layout.max_pages + j / layout.page_size]} * layout.page_size +
             j % layout.page_size;
    return layout.varlen_k() ? layout.cu_seqlens_k[b] + j : b * seqlen_k + j;
  }
  // LSE of query i of sequence b, head h: (batch, heads_q, seqlen_q) dense, (heads_q, total_q) varlen.
  int64_t lse_index(int64_t b, int64_t h, int64_t i) const {
    return layout.varlen_q() ? h * layout.total_q + layout.cu_seqlens_q[b] + i : lse_offset(b, h, i);
  }

  // The first violated constraint as one line, or nullopt for a valid problem. Every entry point
  // (reference, simulator, kernel launchers, CLI) calls this before anything else.
  std::optional<std::string> validate() const;
};

// Caps that keep every size product well inside int64 (and a generated problem reasonable).
inline constexpr int64_t kMaxSeqlen = int64_t{1} << 24;
inline constexpr int64_t kMaxHeadDim = 1024;
inline constexpr int64_t kMaxBatchHeads = int64_t{1} << 20;

inline std::optional<std::string> AttnProblem::validate() const {
  auto positive = [](int64_t v, const char* name) -> std::optional<std::string> {
    if (v <= 0) return std::string(name) + " must be >= 1 (got " + std::to_string(v) + ")";
    return std::nullopt;
  };
  for (auto [v, name] : {std::pair{batch, "batch"}, {heads_q, "heads_q"}, {heads_kv, "heads_kv"},
                         {seqlen_q, "seqlen_q"}, {seqlen_k, "seqlen_k"}, {head_dim, "head_dim"}}) {
    if (auto e = positive(v, name)) return e;
  }
  if (heads_q % heads_kv != 0)
    return "heads_q (" + std::to_string(heads_q) + ") must be divisible by heads_kv (" +
           std::to_string(heads_kv) + ")";
  if (seqlen_q > kMaxSeqlen || seqlen_k > kMaxSeqlen)
    return "seqlen_q and seqlen_k must be <= " + std::to_string(kMaxSeqlen);
  if (head_dim > kMaxHeadDim) return "head_dim must be <= " + std::to_string(kMaxHeadDim);
  if (batch * heads_q > kMaxBatchHeads)
    return "batch * heads_q must be <= " + std::to_string(kMaxBatchHeads);
  if (window_left < -1 || window_right < -1)
    return "window bounds must be -1 (unbounded) or >= 0";
  if (scale && !(std::isfinite(*scale) && *scale > 0.0))
    return "scale must be a finite positive number";
  if (!is_fp8(dtype) && !fp8.is_default())
    return "descale factors and an output dtype apply to fp8 dtypes only (dtype is " +
           std::string(dtype_name(dtype)) + ")";
  if (is_fp8(dtype)) {
    if (fp8.out != DType::bf16 && fp8.out != DType::fp16)
      return "the output dtype of an fp8 problem must be bf16 or fp16 (got " + std::string(dtype_name(fp8.out)) + ")";
    for (auto [d, name] : {std::pair{&fp8.q_descale, "q_descale"}, {&fp8.k_descale, "k_descale"},
                           {&fp8.v_descale, "v_descale"}}) {
      if (d->size() > 1 && static_cast<int64_t>(d->size()) != heads_kv)
        return std::string(name) + " must have 1 value or heads_kv = " + std::to_string(heads_kv) +
               " values (got " + std::to_string(d->size()) + ")";
      for (float x : *d)
        if (!(std::isfinite(x) && x > 0.0f)) return std::string(name) + " must be finite and positive";
    }
  }
  return validate_layout(layout, batch, seqlen_q, seqlen_k);  // empty layout: nothing to check
}

}  // namespace ioattn

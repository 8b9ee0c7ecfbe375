// kernels/layout_rows.hpp: where a sequence's rows live, for the kernels that read packed (varlen)
// or paged layouts (ioattn/layout.hpp): v07_decode_splitkv (paged KV) and v06_fa2_wgmma (varlen
// Q/K, paged KV). The rows agree with AttnProblem::q_row, kv_row and lse_index (problem.hpp).
//
// Paged KV cache: K and V are (num_pages, page_size, Hkv, d); key j of sequence b is cache row
//   block_table[b * max_pages + j / page_size] * page_size + j % page_size,
// any page_size >= 1, and sequence b has seqused_k[b] keys. A page holds whole rows, so a 16-byte
// copy of one row's chunk never straddles a page; the keys of one tile may span several pages, each
// copy mapping its own key. Table entries past a sequence's keys (slots it does not use, possibly
// -1) must never be read: callers map only keys j below the sequence's key count.
// Packed (varlen): sequence b owns rows [cu[b], cu[b + 1]) of the packed tensor; LSE of packed
// queries is (heads_q, total_q).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "kernels/attn_view.hpp"
#include "kernels/launch.hpp"
#include "kernels/platform/platform.hpp"

namespace ioattn::kernels {

// A paged KV cache as a kernel reads it (a kernel argument, trivially copyable). page_size 0:
// dense (or packed) K/V; the pointers are then unused.
struct PagedKv {
  const int32_t* table = nullptr;    // (batch, max_pages), row-major
  const int32_t* seqused = nullptr;  // (batch)
  int page_size = 0;
  int64_t max_pages = 0;
};

// Cache row of key j of the sequence whose block-table row is page_row (j below its key count).
__device__ __forceinline__ int64_t paged_kv_row(const int32_t* page_row, int page_size, int j) {
  return int64_t{page_row[j / page_size]} * page_size + j % page_size;
}

// A batch layout as a kernel reads it (a kernel argument): null tables = dense on that side.
struct SeqLayout {
  const int32_t* cu_q = nullptr;  // (batch + 1): packed queries, else dense (batch, seqlen_q)
  const int32_t* cu_k = nullptr;  // (batch + 1): packed keys, else dense or paged
  int64_t total_q = 0;            // rows of the packed Q, O (LSE is (heads_q, total_q))
  PagedKv pk;                     // page_size > 0: K, V are a paged cache
};

// Sequence b's lengths and first rows (AttnView a: the problem's dense fields, seqlen_q and
// seqlen_k being the max lengths).
struct SeqRows {
  int seqlen_q, seqlen_k;     // this sequence's query and key counts (either may be 0)
  int64_t q_row0;             // row of its query 0 in Q, O
  int64_t k_row0;             // row of its key 0 in K, V (paged: 0, keys mapped by page_row)
  int64_t lse0, lse_h;        // LSE of head h, query i: lse0 + h * lse_h + i
  const int32_t* page_row;    // paged: its block-table row; else null
};

__device__ __forceinline__ SeqRows seq_rows(const SeqLayout& l, const AttnView& a, int64_t b) {
  SeqRows s;
  if (l.cu_q != nullptr) {
    s.q_row0 = l.cu_q[b];
    s.seqlen_q = l.cu_q[b + 1] - l.cu_q[b];
    s.lse0 = s.q_row0, s.lse_h = l.total_q;
  } else {
    s.q_row0 = b * a.seqlen_q;
    s.seqlen_q = static_cast<int>(a.seqlen_q);
    s.lse0 = b * a.heads_q * a.seqlen_q, s.lse_h = a.seqlen_q;
  }
  s.page_row = nullptr;
  if (l.pk.page_size > 0) {
    s.k_row0 = 0;
    s.seqlen_k = l.pk.seqused[b];
    s.page_row = l.pk.table + b * l.pk.max_pages;
  } else if (l.cu_k != nullptr) {
    s.k_row0 = l.cu_k[b];
    s.seqlen_k = l.cu_k[b + 1] - l.cu_k[b];
  } else {
    s.k_row0 = b * a.seqlen_k;
    s.seqlen_k = static_cast<int>(a.seqlen_k);
  }
  return s;
}

// Head h of sequence sr as one block reads it: Q, O, K, V at the sequence's row 0 of that head
// (row i at + i * the tensor's row stride; paged K, V: cache row 0, rows via paged_kv_row) and the
// head's LSE row (query i at lse[i]).
template <class T>
struct SeqHead {
  const T *q, *k, *v;
  T* o;
  float* lse;
};
template <class T>
__device__ __forceinline__ SeqHead<T> seq_head(const SeqRows& sr, const AttnView& a, int64_t h, const T* q,
                                               const T* k, const T* v, T* o, float* lse) {
  const int64_t q0 = (sr.q_row0 * a.heads_q + h) * a.head_dim;
  const int64_t k0 = (sr.k_row0 * a.heads_kv + a.kv_head_of(h)) * a.head_dim;
  return {q + q0, k + k0, v + k0, o + q0, lse + sr.lse0 + h * sr.lse_h};
}

// Host: the SeqLayout of p's layout with t's device tables (a launch), or without them (describe:
// config() has no tensors); a one-line refusal when a launch lacks a table its layout needs.
inline LaunchStatus seq_layout_of(std::string_view variant, const AttnProblem& p, const DeviceTensors& t,
                                  bool describes, SeqLayout& out) {
  const BatchLayout& l = p.layout;
  out = {};
  if (!describes) {
    const char* missing = l.varlen_q() && !t.cu_seqlens_q ? "cu_seqlens_q"
                          : l.varlen_k() && !t.cu_seqlens_k ? "cu_seqlens_k"
                          : l.paged() && !t.block_table    ? "block_table"
                          : l.paged() && !t.seqused_k      ? "seqused_k"
                                                           : nullptr;
    if (missing) return std::string(variant) + ": the " + l.describe() + " layout needs the device " + missing + " (DeviceTensors)";
  }
  out.cu_q = l.varlen_q() ? t.cu_seqlens_q : nullptr;
  out.cu_k = l.varlen_k() ? t.cu_seqlens_k : nullptr;
  out.total_q = l.total_q;
  if (l.paged()) out.pk = {t.block_table, t.seqused_k, static_cast<int>(l.page_size), l.max_pages};
  return std::nullopt;
}

}  // namespace ioattn::kernels

// ioattn/layout.hpp: BatchLayout, how the sequences of a batch sit in memory, beside the dense BSHD
// of problem.hpp. An AttnProblem carries one (AttnProblem::layout); the default, every field empty
// or 0, is today's dense batch, and dense code never looks at it.
//
// Two independent choices, one for the queries and one for the keys/values:
//
//   queries  dense   Q, O, dO, dQ (batch, seqlen_q, heads_q, d); LSE (batch, heads_q, seqlen_q)
//            varlen  cu_seqlens_q set: sequence b owns rows [cu_seqlens_q[b], cu_seqlens_q[b+1]) of
//                    the packed Q, O, dO, dQ (total_q, heads_q, d); LSE (heads_q, total_q)
//   keys     dense   K, V, dK, dV (batch, seqlen_k, heads_kv, d)
//            varlen  cu_seqlens_k set: sequence b owns rows [cu_seqlens_k[b], cu_seqlens_k[b+1]) of
//                    the packed K, V, dK, dV (total_k, heads_kv, d)
//            paged   page_size > 0: K, V, dK, dV are a cache (num_pages, page_size, heads_kv, d);
//                    key j of sequence b is row j % page_size of page block_table[b][j / page_size],
//                    and sequence b has seqused_k[b] keys. block_table is (batch, max_pages),
//                    row-major; -1 marks a slot the sequence does not use.
//
// The packed layouts are the dense layout with batch 1 and seqlen = total (the token index is
// cu_seqlens[b] + i), so a varlen result is read like a dense one of one long sequence.
//
// With either choice not dense, AttnProblem::seqlen_q and seqlen_k are the longest sequence's
// lengths, or any larger value: FlashAttention's max_seqlen_q / max_seqlen_k (kernels size grids
// from them), and the reference's bound on the per-sequence S. Each sequence b then has its own
// lengths (AttnProblem::seqlen_q_of(b), seqlen_k_of(b)), its own bottom-right causal alignment and
// window (AttnProblem::mask_of(b)), and may be empty: a sequence with 0 queries produces nothing; a
// query of a sequence with 0 keys sees no key, so its row is fully masked (O = 0, LSE = -inf).
// Rows of a packed tensor that no sequence owns (cu_seqlens[batch] < total) are not read; the
// reference writes O = 0, LSE = -inf and zero gradients there. Cache rows no sequence reads get
// zero gradients.
//
// The tables are int32, as the kernels read them (FlashAttention's convention); the caps below keep
// every index inside int32 and every element count inside int64.
//
// Decided constraints (validate_layout; each refusal is one line naming it):
//  - a page belongs to at most one sequence, and to it once: a page in two used slots is refused.
//    This keeps dK/dV of the cache well defined (no two sequences write one page) and the backward
//    free of races; read-only prefix sharing between sequences is therefore not expressible yet.
//  - only the slots a sequence uses, ceil(seqused_k[b] / page_size), must hold a page; the others
//    hold -1 or any page index (they are never read).
//  - a paged cache takes its lengths from seqused_k only (cu_seqlens_k must be empty), and
//    seqused_k exists only with a paged cache.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace ioattn {

// Caps of the layout (token rows of a packed tensor or cache; block_table entries).
inline constexpr int64_t kMaxTokens = int64_t{1} << 24;

struct BatchLayout {
  // Packed (varlen) queries: batch + 1 offsets into total_q rows; empty = dense queries.
  std::vector<int32_t> cu_seqlens_q;
  int64_t total_q = 0;  // rows of the packed Q, O, dO, dQ (>= cu_seqlens_q[batch]); 0 when dense
  // Packed (varlen) keys/values: batch + 1 offsets into total_k rows; empty = dense or paged.
  std::vector<int32_t> cu_seqlens_k;
  int64_t total_k = 0;  // rows of the packed K, V, dK, dV (>= cu_seqlens_k[batch]); 0 when dense
  // Paged KV cache: page_size > 0 (any positive integer); 0 = not paged.
  int64_t page_size = 0;
  int64_t num_pages = 0;               // pages in the cache: K, V are (num_pages, page_size, Hkv, d)
  int64_t max_pages = 0;               // columns of block_table: pages one sequence may use
  std::vector<int32_t> block_table;    // (batch, max_pages): page of slot i of sequence b, or -1
  std::vector<int32_t> seqused_k;      // (batch): keys of sequence b (its first seqused_k[b] rows)

  bool varlen_q() const { return !cu_seqlens_q.empty(); }
  bool varlen_k() const { return !cu_seqlens_k.empty(); }
  bool paged() const { return page_size > 0; }
  bool dense() const { return !varlen_q() && !varlen_k() && !paged(); }
  // A short name for messages: "varlen Q", "paged KV", "varlen Q + paged KV", ...; "dense".
  std::string describe() const {
    std::string s;
    auto add = [&](const char* w) { s += s.empty() ? w : std::string(" + ") + w; };
    if (varlen_q()) add("varlen Q");
    if (varlen_k()) add("varlen KV");
    if (paged()) add("paged KV");
    return s.empty() ? "dense" : s;
  }
  // Pages sequence b reads: ceil(seqused_k[b] / page_size) (paged only).
  int64_t pages_used(int64_t b) const { return (seqused_k[b] + page_size - 1) / page_size; }
};

namespace layout_detail {

inline std::optional<std::string> check_cu_seqlens(const std::vector<int32_t>& cu, int64_t total, int64_t batch,
                                                   int64_t max_len, const char* cu_name, const char* total_name,
                                                   const char* max_name, const char* what) {
  const std::string cn = cu_name;
  if (cu.empty()) {
    if (total != 0)
      return std::string(total_name) + " is " + std::to_string(total) + " but " + cn + " is empty (" + what +
             " are dense; " + total_name + " must be 0)";
    return std::nullopt;
  }
  if (static_cast<int64_t>(cu.size()) != batch + 1)
    return cn + " must have batch + 1 = " + std::to_string(batch + 1) + " entries (got " +
           std::to_string(cu.size()) + ")";
  if (total < 0 || total > kMaxTokens)
    return std::string(total_name) + " must be in [0, " + std::to_string(kMaxTokens) + "] (got " +
           std::to_string(total) + ")";
  if (cu[0] != 0) return cn + "[0] must be 0 (got " + std::to_string(cu[0]) + ")";
  for (int64_t b = 0; b < batch; ++b) {
    if (cu[b + 1] < cu[b])
      return cn + " must be non-decreasing: " + cn + "[" + std::to_string(b + 1) + "] = " +
             std::to_string(cu[b + 1]) + " < " + cn + "[" + std::to_string(b) + "] = " + std::to_string(cu[b]);
    if (cu[b + 1] > total)
      return cn + "[" + std::to_string(b + 1) + "] = " + std::to_string(cu[b + 1]) + " exceeds " + total_name +
             " = " + std::to_string(total) + " (the rows of the packed tensor)";
    const int64_t len = int64_t{cu[b + 1]} - cu[b];
    if (len > max_len)
      return "sequence " + std::to_string(b) + " has " + std::to_string(len) + " " + what + ", more than " +
             max_name + " = " + std::to_string(max_len) + " (the longest sequence's length or more)";
  }
  return std::nullopt;
}

inline std::optional<std::string> check_paged(const BatchLayout& l, int64_t batch, int64_t seqlen_k) {
  auto n = [](int64_t v) { return std::to_string(v); };
  if (l.page_size < 0) return "page_size must be >= 0 (0: no paged KV cache; got " + n(l.page_size) + ")";
  if (!l.paged()) {
    if (l.num_pages != 0 || l.max_pages != 0 || !l.block_table.empty() || !l.seqused_k.empty())
      return "num_pages, max_pages, block_table and seqused_k describe a paged KV cache: they need page_size >= 1";
    return std::nullopt;
  }
  if (l.varlen_k())
    return "a paged KV cache takes each sequence's key count from seqused_k: cu_seqlens_k must be empty";
  if (l.page_size > kMaxTokens) return "page_size must be <= " + n(kMaxTokens) + " (got " + n(l.page_size) + ")";
  if (l.num_pages < 1) return "num_pages must be >= 1 with a paged KV cache (got " + n(l.num_pages) + ")";
  if (l.max_pages < 1) return "max_pages (block_table columns) must be >= 1 (got " + n(l.max_pages) + ")";
  if (l.num_pages > kMaxTokens / l.page_size)
    return "num_pages * page_size (cache rows) must be <= " + n(kMaxTokens) + " (got " + n(l.num_pages) + " * " +
           n(l.page_size) + ")";
  if (l.max_pages > kMaxTokens / batch)
    return "batch * max_pages (block_table entries) must be <= " + n(kMaxTokens);
  if (static_cast<int64_t>(l.block_table.size()) != batch * l.max_pages)
    return "block_table must have batch * max_pages = " + n(batch * l.max_pages) + " entries (got " +
           n(static_cast<int64_t>(l.block_table.size())) + ")";
  if (static_cast<int64_t>(l.seqused_k.size()) != batch)
    return "seqused_k must have batch = " + n(batch) + " entries (got " + n(static_cast<int64_t>(l.seqused_k.size())) +
           ")";
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t used = l.seqused_k[b];
    if (used < 0) return "seqused_k[" + n(b) + "] = " + n(used) + " must be >= 0";
    if (used > l.max_pages * l.page_size)
      return "seqused_k[" + n(b) + "] = " + n(used) + " does not fit in max_pages * page_size = " + n(l.max_pages) +
             " * " + n(l.page_size) + " keys";
    if (used > seqlen_k)
      return "seqused_k[" + n(b) + "] = " + n(used) + " exceeds seqlen_k = " + n(seqlen_k) +
             " (max_seqlen_k: the longest sequence's length or more)";
  }
  // Every entry -1 or a page index; every used slot a page; no page in two used slots.
  std::vector<std::pair<int32_t, int64_t>> used_pages;  // (page, b * max_pages + slot)
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t pages = l.pages_used(b);
    for (int64_t i = 0; i < l.max_pages; ++i) {
      const int32_t pg = l.block_table[b * l.max_pages + i];
      const std::string at = "block_table[" + n(b) + "][" + n(i) + "] = " + n(pg);
      if (pg < -1 || pg >= l.num_pages)
        return at + " is not a page index in [0, num_pages = " + n(l.num_pages) + ") (-1 marks an unused slot)";
      if (i < pages) {
        if (pg == -1)
          return at + ", but sequence " + n(b) + " reads its first " + n(pages) + " slots (seqused_k = " +
                 n(l.seqused_k[b]) + ", page_size = " + n(l.page_size) + ")";
        used_pages.emplace_back(pg, b * l.max_pages + i);
      }
    }
  }
  std::sort(used_pages.begin(), used_pages.end());
  for (size_t u = 1; u < used_pages.size(); ++u)
    if (used_pages[u].first == used_pages[u - 1].first) {
      const int64_t a = used_pages[u - 1].second, c = used_pages[u].second;
      return "page " + n(used_pages[u].first) + " is used by sequence " + n(a / l.max_pages) + " (slot " +
             n(a % l.max_pages) + ") and sequence " + n(c / l.max_pages) + " (slot " + n(c % l.max_pages) +
             "): a page belongs to one sequence, once";
    }
  return std::nullopt;
}

}  // namespace layout_detail

// Builders (the CLI, the test generators).
// cu_seqlens of the given lengths: cu[0] = 0, cu[b + 1] = cu[b] + lengths[b].
inline std::vector<int32_t> cu_seqlens_of(const std::vector<int64_t>& lengths) {
  std::vector<int32_t> cu(lengths.size() + 1, 0);
  for (size_t b = 0; b < lengths.size(); ++b) cu[b + 1] = static_cast<int32_t>(cu[b] + lengths[b]);
  return cu;
}

// A paged cache for sequences of seqused[b] keys in pages of page_size: num_pages = the pages they
// need + spare_pages (at least 1), max_pages = the most one sequence needs (at least 1). Sequence b
// takes the next ceil(seqused[b] / page_size) pages of a page order, sequence after sequence: 0, 1,
// 2, ... or, with shuffle_seed, a permutation drawn from it; unused slots hold -1.
inline void set_paged(BatchLayout& l, const std::vector<int64_t>& seqused, int64_t page_size, int64_t spare_pages = 0,
                      std::optional<uint64_t> shuffle_seed = std::nullopt) {
  l.page_size = page_size;
  l.seqused_k.assign(seqused.begin(), seqused.end());
  l.block_table.clear();
  l.num_pages = l.max_pages = 0;
  if (page_size < 1) return;  // validate() names it
  int64_t needed = 0, most = 1;
  for (int64_t s : seqused) {
    const int64_t pages = page_size > 0 ? (s + page_size - 1) / page_size : 0;
    needed += pages;
    most = std::max(most, pages);
  }
  l.num_pages = std::max<int64_t>(1, needed + spare_pages);
  l.max_pages = most;
  std::vector<int32_t> order(static_cast<size_t>(l.num_pages));
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int32_t>(i);
  if (shuffle_seed) {
    std::mt19937_64 rng(*shuffle_seed);
    std::shuffle(order.begin(), order.end(), rng);
  }
  l.block_table.assign(seqused.size() * static_cast<size_t>(l.max_pages), -1);
  size_t next = 0;
  for (size_t b = 0; b < seqused.size(); ++b)
    for (int64_t i = 0; i < l.pages_used(static_cast<int64_t>(b)); ++i)
      l.block_table[b * static_cast<size_t>(l.max_pages) + static_cast<size_t>(i)] = order[next++];
}

// The first violated layout constraint as one line, or nullopt. AttnProblem::validate() calls it
// after the dense checks (batch, seqlen_q, seqlen_k are then known to be valid).
inline std::optional<std::string> validate_layout(const BatchLayout& l, int64_t batch, int64_t seqlen_q,
                                                  int64_t seqlen_k) {
  if (auto e = layout_detail::check_cu_seqlens(l.cu_seqlens_q, l.total_q, batch, seqlen_q, "cu_seqlens_q", "total_q",
                                        "seqlen_q (max_seqlen_q)", "queries"))
    return e;
  if (auto e = layout_detail::check_cu_seqlens(l.cu_seqlens_k, l.total_k, batch, seqlen_k, "cu_seqlens_k", "total_k",
                                        "seqlen_k (max_seqlen_k)", "keys"))
    return e;
  return layout_detail::check_paged(l, batch, seqlen_k);
}

}  // namespace ioattn

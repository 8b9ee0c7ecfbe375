// simulator/layouts.hpp: the traffic of non-dense layouts (ioattn/layout.hpp) and of GQA packing.
//
// The loop nests (strategies.cpp, nest.cpp) describe one dense (batch, heads, N_q, N_k) problem.
// A packed (varlen) batch or a paged KV cache is modeled here on top of them (layouts.cpp):
//
//   per sequence   sequence b is its own dense problem (batch 1, seqlen_q_of(b) x seqlen_k_of(b),
//                  its own bottom-right causal alignment and window); sequences of equal lengths
//                  form one group (a dense problem of batch = their count), and the plan's kernels
//                  are summed over the groups (one launch each: the groups' launch overheads are
//                  counted once). A sequence with no query adds nothing; one with no key writes
//                  its O (zeros) and LSE (-inf) rows and reads nothing.
//   paged KV       K/V rows read as the kernel reads them (LayoutModel::page_reads): `rows` reads
//                  only the seqused_k[b] keys (ioattn's kernels: every 16-byte copy maps one key
//                  through the table, kernels/layout_rows.hpp), `pages` reads every used page whole
//                  (a kernel that loads page-granular tiles): the part of a partly used last page
//                  past the sequence's keys is then read too. The block table: each used entry
//                  once from HBM (the table is shared by every head and split of a sequence and
//                  stays in the L2), and at L2 every CTA requests the entries of the pages its key
//                  range spans; `table_lookups` counts the per-copy lookups of ioattn's kernels.
//   varlen         the cu_seqlens arrays ((batch + 1) int32 per packed side) read once.
//   GQA packing    (LayoutModel::gqa_packed, v07_decode_splitkv): one CTA owns a K/V head and the
//                  rows of its G = heads_q / heads_kv query heads, so K/V is requested once per
//                  (K/V head, row tile) instead of once per query head: each sequence's problem is
//                  modeled with heads_q = heads_kv and G * N_q query rows. Exact for a non-causal
//                  problem without a window; under a causal mask or window the packed rows take the
//                  bottom-right alignment of G * N_q rows (each row of query i really sees query
//                  i's keys), which differs by fewer than G * N_q keys per row tile.
// The padded dense batch (batch x max lengths) is modeled beside it for comparison (what padding
// costs). Assumptions and what is left out: simulator/README.md, "Layouts".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "simulator/simulator.hpp"

namespace ioattn::sim {

// How a kernel reads a paged KV cache.
enum class PageReads { rows, pages };
std::string_view page_reads_name(PageReads r);
std::optional<PageReads> parse_page_reads(std::string_view s);

struct LayoutModel {
  bool gqa_packed = false;             // one CTA per (b, K/V head, row tile) holds the group's query heads
  PageReads page_reads = PageReads::rows;
};

// The layout's terms, beside the Result they are part of (bytes; counts as named).
struct LayoutTerms {
  std::string layout = "dense";        // BatchLayout::describe()
  bool gqa_packed = false;
  std::string page_reads = "rows";
  int64_t sequences = 0;               // sequences with at least one query
  int64_t groups = 0;                  // distinct (N_q, N_k) among them: dense problems simulated
  int64_t kv_rows_used = 0;            // sum of the sequences' key counts
  int64_t kv_rows_read = 0;            // key rows a (b, K/V head) reads: used, or whole pages
  int64_t page_size = 0, pages_used = 0, partial_pages = 0;
  int64_t page_rounding_hbm_bytes = 0; // K/V bytes of partly used last pages past the keys (pages)
  int64_t page_rounding_l2_bytes = 0;
  int64_t block_table_hbm_bytes = 0;   // each used entry once
  int64_t block_table_l2_bytes = 0;    // per CTA: the entries of the pages its key range spans
  int64_t table_lookups = 0;           // per 16-byte K/V copy, one table entry each (ioattn's kernels)
  int64_t cu_seqlens_bytes = 0;
  int64_t empty_rows_write_bytes = 0;  // O and LSE rows of sequences with no key
  int64_t kv_hbm_read_bytes = 0;       // K and V (or V^T) HBM reads of the plan
  int64_t kv_l2_read_bytes = 0;        // K and V requests at L2 (one per CTA and tile)
  int64_t kv_compulsory_bytes = 0;     // K and V rows needed, once each
  int64_t partials_bytes = 0;          // split-KV: partial O and LSE written and read (fp32)
  double combine_time_s = 0.0;         // split-KV: the combine kernel's expected time
  int64_t padded_hbm_read = 0, padded_hbm_write = 0;  // the padded dense batch (batch x max lengths)
  double padded_time_s = 0.0;
};

struct LayoutResult {
  Result result;
  LayoutTerms terms;
};

// True when p has a non-dense layout or lm packs GQA heads (simulate_layout then differs from
// simulate).
bool layout_applies(const AttnProblem& p, const LayoutModel& lm);

// The model of a problem in any layout. Checked like simulate(): the tiling must fit the machine;
// GQA packing is refused for strategies other than the Q-outer forward ones (fa2, splitkv) and for
// the backward. A dense problem without packing gives simulate()'s Result (and dense terms).
LayoutResult simulate_layout(const AttnProblem& p, const Machine& m, const Tiling& t, const Options& o,
                             const LayoutModel& lm = {});
// Same without the fit check (simulate_unchecked's counterpart; simulate_unchecked calls it for a
// non-dense problem).
LayoutResult simulate_layout_unchecked(const AttnProblem& p, const Machine& m, const Tiling& t, const Options& o,
                                       const LayoutModel& lm = {});

}  // namespace ioattn::sim

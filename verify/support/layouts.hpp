// verify/support/layouts.hpp: RapidCheck generators for packed (varlen) and paged problems
// (ioattn/layout.hpp), and the test's own placement of per-sequence data into a layout.
//
// Generated batches are weighted toward where layout code breaks:
//   sequences  1..8; lengths 0 and 1 often, 2..16, 17, 33..113
//   queries    packed (lengths per sequence, 0 included) or dense (1..17 per sequence, decode-like)
//   keys       dense, packed, or a paged cache: page size 1, 2..5, 7, 16, random up to 70 (rarely
//              dividing the lengths), shuffled block tables, spare pages no sequence uses, extra
//              block-table columns, unused slots holding -1 or a page index (never read)
//   packed     trailing rows no sequence owns; seqlen_q / seqlen_k (the max lengths) sometimes
//              above the longest sequence
//   heads      GQA ratios 1, 4, 8 over 1 or 2 K/V heads; causal; windows; fp32, fp16, bf16
//
// The placement (scatter_sequence) computes rows from the tables itself, not through
// AttnProblem::q_row / kv_row, so a property compares the reference's gather with an independent
// reading of the layout.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <rapidcheck.h>

#include "ioattn/problem.hpp"
#include "reference.hpp"

namespace ioattn::verify {

struct LayoutLimits {
  double max_work = 1.5e6;   // cap on sum_b heads_q * Nq_b * Nk_b * head_dim
  bool low_precision = true;  // also fp16 and bf16
};

rc::Gen<AttnProblem> gen_layout_problem(const LayoutLimits& lim = {});

// RC_CLASSIFY the coverage tags of a layout problem (call inside a property).
void classify_layout(const AttnProblem& p);
// One line: the dense fields (describe) plus the layout, lengths and tables.
std::string describe_layout(const AttnProblem& p);

// The rows of sequence b in the layout's tensors, read from the tables directly (see above).
int64_t q_row_of(const AttnProblem& p, int64_t b, int64_t i);
int64_t kv_row_of(const AttnProblem& p, int64_t b, int64_t j);
int64_t lse_index_of(const AttnProblem& p, int64_t b, int64_t h, int64_t i);

// Dense per-sequence problem (batch 1, the sequence's lengths), built field by field.
AttnProblem dense_of(const AttnProblem& p, int64_t b);

// Inputs of the layout: every row first filled with random values (rows no sequence reads keep
// them), then sequence b's rows overwritten with `dense[b]` (the inputs of dense_of(p, b); empty
// vectors for a sequence with 0 queries or 0 keys).
ref::Inputs place_inputs(const AttnProblem& p, const std::vector<ref::Inputs>& dense, uint64_t seed);

}  // namespace ioattn::verify

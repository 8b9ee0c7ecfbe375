// Named cases for the layouts of ioattn/layout.hpp: one per constraint validate() enforces (each
// must fail, naming it in one line), the per-sequence accessors, the builders and the FLOP count.
#include <algorithm>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "ioattn/flops.hpp"
#include "ioattn/problem.hpp"

using namespace ioattn;

namespace {

// 3 sequences: packed queries 5, 0, 17; a paged cache of page size 16 holding 9, 3, 40 keys (pages
// 4 | 0 | 2, 1, 3 in a 3-column table; page 5 spare).
AttnProblem packed_over_pages() {
  AttnProblem p;
  p.batch = 3;
  p.heads_q = 4;
  p.heads_kv = 1;
  p.head_dim = 8;
  p.seqlen_q = 17;
  p.seqlen_k = 40;
  p.causal = true;
  BatchLayout& l = p.layout;
  l.cu_seqlens_q = {0, 5, 5, 22};
  l.total_q = 22;
  l.page_size = 16;
  l.num_pages = 6;
  l.max_pages = 3;
  l.block_table = {4, -1, -1, 0, -1, -1, 2, 1, 3};
  l.seqused_k = {9, 3, 40};
  return p;
}

// Dense queries (2 per sequence) over packed keys 7, 0, 12.
AttnProblem dense_over_packed() {
  AttnProblem p;
  p.batch = 3;
  p.seqlen_q = 2;
  p.seqlen_k = 12;
  p.layout.cu_seqlens_k = {0, 7, 7, 19};
  p.layout.total_k = 19;
  return p;
}

// validate() refuses p with one line containing `piece`.
void expect_refused(const AttnProblem& p, const std::string& piece) {
  const auto why = p.validate();
  ASSERT_TRUE(why) << "accepted; expected a refusal naming '" << piece << "'";
  EXPECT_NE(why->find(piece), std::string::npos) << "message: " << *why;
  EXPECT_EQ(why->find('\n'), std::string::npos) << "not one line: " << *why;
}

}  // namespace

TEST(Layout, ValidLayoutsPass) {
  EXPECT_FALSE(AttnProblem{}.validate());
  EXPECT_TRUE(AttnProblem{}.is_dense());
  const auto a = packed_over_pages().validate();
  EXPECT_FALSE(a) << *a;
  const auto b = dense_over_packed().validate();
  EXPECT_FALSE(b) << *b;
  // Unused slots may hold any page index (never read), even one a sequence uses.
  AttnProblem p = packed_over_pages();
  p.layout.block_table[1] = 3;
  EXPECT_FALSE(p.validate());
  // seqlen_q / seqlen_k are upper bounds (max_seqlen_q, max_seqlen_k).
  p.seqlen_q = 100;
  p.seqlen_k = 1000;
  EXPECT_FALSE(p.validate());
  // Every sequence empty is valid (nothing to compute).
  AttnProblem e = packed_over_pages();
  e.layout.cu_seqlens_q = {0, 0, 0, 0};
  e.layout.total_q = 0;
  EXPECT_FALSE(e.validate());
}

// --- packed queries / keys

TEST(Layout, CuSeqlensQNeedsBatchPlusOneEntries) {
  AttnProblem p = packed_over_pages();
  p.layout.cu_seqlens_q.pop_back();
  expect_refused(p, "cu_seqlens_q must have batch + 1 = 4 entries");
}

TEST(Layout, CuSeqlensQStartsAtZero) {
  AttnProblem p = packed_over_pages();
  p.layout.cu_seqlens_q[0] = 1;
  expect_refused(p, "cu_seqlens_q[0] must be 0");
}

TEST(Layout, CuSeqlensQNonDecreasing) {
  AttnProblem p = packed_over_pages();
  p.layout.cu_seqlens_q[2] = 4;
  expect_refused(p, "cu_seqlens_q must be non-decreasing");
}

TEST(Layout, CuSeqlensQWithinTotalQ) {
  AttnProblem p = packed_over_pages();
  p.layout.total_q = 21;
  expect_refused(p, "cu_seqlens_q[3] = 22 exceeds total_q = 21");
}

TEST(Layout, TotalQRange) {
  AttnProblem p = packed_over_pages();
  p.layout.total_q = -1;
  expect_refused(p, "total_q must be in [0,");
  p.layout.total_q = kMaxTokens + 1;
  expect_refused(p, "total_q must be in [0,");
}

TEST(Layout, TotalQOnlyWithCuSeqlensQ) {
  AttnProblem p;
  p.layout.total_q = 4;
  expect_refused(p, "cu_seqlens_q is empty");
}

TEST(Layout, QueryLengthAtMostSeqlenQ) {
  AttnProblem p = packed_over_pages();
  p.seqlen_q = 16;
  expect_refused(p, "sequence 2 has 17 queries, more than seqlen_q");
}

TEST(Layout, CuSeqlensKWithinTotalK) {
  AttnProblem p = dense_over_packed();
  p.layout.total_k = 18;
  expect_refused(p, "exceeds total_k = 18");
}

TEST(Layout, CuSeqlensKStartsAtZeroAndNonDecreasing) {
  AttnProblem p = dense_over_packed();
  p.layout.cu_seqlens_k[0] = 2;
  expect_refused(p, "cu_seqlens_k[0] must be 0");
  p = dense_over_packed();
  p.layout.cu_seqlens_k[2] = 6;
  expect_refused(p, "cu_seqlens_k must be non-decreasing");
}

TEST(Layout, KeyLengthAtMostSeqlenK) {
  AttnProblem p = dense_over_packed();
  p.seqlen_k = 11;
  expect_refused(p, "sequence 2 has 12 keys, more than seqlen_k");
}

// --- the paged cache

TEST(Layout, PageSizeNotNegative) {
  AttnProblem p = packed_over_pages();
  p.layout.page_size = -16;
  expect_refused(p, "page_size must be >= 0");
}

TEST(Layout, PagedFieldsNeedPageSize) {
  AttnProblem p = packed_over_pages();
  p.layout.page_size = 0;
  expect_refused(p, "need page_size >= 1");
}

TEST(Layout, PagedTakesNoCuSeqlensK) {
  AttnProblem p = packed_over_pages();
  p.layout.cu_seqlens_k = {0, 9, 12, 52};
  p.layout.total_k = 52;
  expect_refused(p, "cu_seqlens_k must be empty");
}

TEST(Layout, NumPagesAndMaxPagesPositive) {
  AttnProblem p = packed_over_pages();
  p.layout.num_pages = 0;
  expect_refused(p, "num_pages must be >= 1");
  p = packed_over_pages();
  p.layout.max_pages = 0;
  expect_refused(p, "max_pages (block_table columns) must be >= 1");
}

TEST(Layout, CacheWithinCaps) {
  AttnProblem p = packed_over_pages();
  p.layout.num_pages = kMaxTokens / 16 + 1;
  expect_refused(p, "num_pages * page_size (cache rows) must be <=");
  p = packed_over_pages();
  p.layout.page_size = kMaxTokens + 1;
  expect_refused(p, "page_size must be <=");
}

TEST(Layout, BlockTableIsBatchByMaxPages) {
  AttnProblem p = packed_over_pages();
  p.layout.block_table.pop_back();
  expect_refused(p, "block_table must have batch * max_pages = 9 entries (got 8)");
}

TEST(Layout, SequsedKOnePerSequence) {
  AttnProblem p = packed_over_pages();
  p.layout.seqused_k.push_back(1);
  expect_refused(p, "seqused_k must have batch = 3 entries (got 4)");
}

TEST(Layout, SequsedKNotNegative) {
  AttnProblem p = packed_over_pages();
  p.layout.seqused_k[1] = -1;
  expect_refused(p, "seqused_k[1] = -1 must be >= 0");
}

TEST(Layout, SequsedKFitsThePages) {
  AttnProblem p = packed_over_pages();
  p.layout.seqused_k[2] = 49;  // 3 pages of 16 hold 48
  p.seqlen_k = 64;
  expect_refused(p, "seqused_k[2] = 49 does not fit in max_pages * page_size = 3 * 16 keys");
}

TEST(Layout, SequsedKAtMostSeqlenK) {
  AttnProblem p = packed_over_pages();
  p.seqlen_k = 39;
  expect_refused(p, "seqused_k[2] = 40 exceeds seqlen_k = 39");
}

TEST(Layout, PageIndexInRange) {
  AttnProblem p = packed_over_pages();
  p.layout.block_table[7] = 6;  // num_pages = 6
  expect_refused(p, "block_table[2][1] = 6 is not a page index in [0, num_pages = 6)");
  p = packed_over_pages();
  p.layout.block_table[2] = 99;  // an unused slot: still a page index or -1
  expect_refused(p, "block_table[0][2] = 99 is not a page index");
}

TEST(Layout, PageIndexNotNegative) {
  AttnProblem p = packed_over_pages();
  p.layout.block_table[0] = -2;
  expect_refused(p, "block_table[0][0] = -2 is not a page index");
}

TEST(Layout, UsedSlotHoldsAPage) {
  AttnProblem p = packed_over_pages();
  p.layout.block_table[8] = -1;  // sequence 2 reads 3 slots
  expect_refused(p, "block_table[2][2] = -1, but sequence 2 reads its first 3 slots");
}

TEST(Layout, PageBelongsToOneSequence) {
  AttnProblem p = packed_over_pages();
  p.layout.block_table[3] = 4;  // sequence 1 takes sequence 0's page
  expect_refused(p, "page 4 is used by sequence 0 (slot 0) and sequence 1 (slot 0)");
}

TEST(Layout, PageUsedOnceWithinASequence) {
  AttnProblem p = packed_over_pages();
  p.layout.block_table[8] = 2;
  expect_refused(p, "page 2 is used by sequence 2 (slot 0) and sequence 2 (slot 2)");
}

// --- accessors, builders, FLOPs

TEST(Layout, PerSequenceLengthsRowsAndMasks) {
  const AttnProblem p = packed_over_pages();
  EXPECT_EQ(p.seqlen_q_of(0), 5);
  EXPECT_EQ(p.seqlen_q_of(1), 0);
  EXPECT_EQ(p.seqlen_q_of(2), 17);
  EXPECT_EQ(p.seqlen_k_of(2), 40);
  EXPECT_EQ(p.q_row(2, 3), 8);
  EXPECT_EQ(p.kv_row(0, 8), 4 * 16 + 8);
  EXPECT_EQ(p.kv_row(2, 17), 1 * 16 + 1);  // key 17: slot 1 (page 1), row 1
  EXPECT_EQ(p.kv_row(2, 39), 3 * 16 + 7);
  EXPECT_EQ(p.lse_index(2, 1, 0), 1 * 22 + 5);
  EXPECT_EQ(p.q_elems(), 22 * 4 * 8);
  EXPECT_EQ(p.kv_elems(), 6 * 16 * 1 * 8);
  EXPECT_EQ(p.lse_elems(), 4 * 22);
  // Bottom-right causal alignment per sequence: sequence 0 (5 queries, 9 keys), its last query
  // sees all 9 keys, its first 5.
  EXPECT_EQ(p.mask_of(0).key_end(4), 9);
  EXPECT_EQ(p.mask_of(0).key_end(0), 5);
  EXPECT_EQ(p.mask_of(2).key_end(0), 24);
  const AttnProblem d = dense_over_packed();
  EXPECT_EQ(d.seqlen_k_of(1), 0);
  EXPECT_EQ(d.kv_row(2, 3), 10);
  EXPECT_EQ(d.q_row(2, 1), 5);
  EXPECT_EQ(d.kv_elems(), 19 * 64);
  EXPECT_EQ(d.layout.describe(), "varlen KV");
  EXPECT_EQ(packed_over_pages().layout.describe(), "varlen Q + paged KV");
}

TEST(Layout, DenseAccessorsMatchTheDenseOffsets) {
  AttnProblem p;
  p.batch = 2;
  p.heads_q = 4;
  p.heads_kv = 2;
  p.seqlen_q = 3;
  p.seqlen_k = 5;
  p.head_dim = 8;
  for (int64_t b = 0; b < 2; ++b) {
    EXPECT_EQ((p.q_row(b, 2) * p.heads_q + 1) * p.head_dim + 3, p.q_offset(b, 2, 1, 3));
    EXPECT_EQ((p.kv_row(b, 4) * p.heads_kv + 1) * p.head_dim + 3, p.kv_offset(b, 4, 1, 3));
    EXPECT_EQ(p.lse_index(b, 3, 2), p.lse_offset(b, 3, 2));
  }
  EXPECT_EQ(p.q_elems(), 2 * 3 * 4 * 8);
  EXPECT_EQ(p.kv_elems(), 2 * 5 * 2 * 8);
  EXPECT_EQ(p.lse_elems(), 2 * 4 * 3);
}

TEST(Layout, SetPagedBuildsAValidShuffledTable) {
  for (int64_t page : {1, 3, 16, 64}) {
    AttnProblem p;
    p.batch = 4;
    p.seqlen_k = 70;
    const std::vector<int64_t> used = {70, 0, 1, 33};
    set_paged(p.layout, used, page, /*spare_pages=*/2, /*shuffle_seed=*/7);
    const auto why = p.validate();
    ASSERT_FALSE(why) << "page " << page << ": " << *why;
    int64_t needed = 0;
    std::set<int32_t> pages;
    for (int64_t b = 0; b < 4; ++b) {
      needed += (used[b] + page - 1) / page;
      for (int64_t i = 0; i < p.layout.pages_used(b); ++i) pages.insert(p.layout.block_table[b * p.layout.max_pages + i]);
    }
    EXPECT_EQ(p.layout.num_pages, needed + 2);
    EXPECT_EQ(static_cast<int64_t>(pages.size()), needed);
  }
  EXPECT_EQ(cu_seqlens_of({5, 0, 17}), (std::vector<int32_t>{0, 5, 5, 22}));
}

TEST(Layout, FlopsSumTheSequences) {
  AttnProblem p = packed_over_pages();
  p.causal = false;
  // 4 * Hq * d * sum_b Nq_b Nk_b = 4 * 4 * 8 * (5*9 + 0*3 + 17*40)
  EXPECT_DOUBLE_EQ(conventional_fwd_flops(p), 4.0 * 4 * 8 * (5 * 9 + 17 * 40));
}

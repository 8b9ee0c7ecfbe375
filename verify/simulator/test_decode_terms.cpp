// verify/simulator/test_decode_terms.cpp: the expected time's CTA chain (simulate.cpp expected_tiled;
// simulator/README.md, "Expected time") as the decode model uses it, against what must hold:
//   - a tile loop's body is max(compute, memory, chain), chain = memory / r + kv_inline_exposed +
//     page_visits, r the CTAs resident per CU (grid / CUs, at most the occupancy), kv_inline_exposed =
//     phi compute / r for a kv=inline design (phi the catalog's calibrated_inline_kv_exposed), 0 otherwise,
//     page_visits = Tiling::page_visits x calibrated_page_visit_s / CUs / r;
//   - with one resident CTA per CU the inline design is slower than the same design without kv=inline
//     by the exposed compute (the chain binds), with two resident CTAs and a short tile compute it is not;
//   - kv=inline-overlapped (the tile compute under the stream) exposes none of its compute, keeps the
//     page visits on the chain;
//   - without the catalog fields (a machine never measured) kv=inline and page visits change nothing;
//   - the paged layout sets the page visits the CTAs' K/V ranges enter (page 16: four per 64-key tile),
//     and a design with table=tile counts one table lookup per key instead of one per 16-byte copy.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "ioattn/layout.hpp"
#include "simulator/layouts.hpp"
#include "simulator/simulator.hpp"
#include "catalog.hpp"

using namespace ioattn;
using namespace ioattn::sim;

namespace {

using test::h200;

// One decode step of v07 as its twin models it: batch b, 32/8 heads GQA-packed (heads 8, G * Nq rows).
AttnProblem packed(int64_t b, int64_t nq, int64_t nk) {
  AttnProblem p;
  p.batch = b;
  p.heads_q = p.heads_kv = 8;
  p.seqlen_q = 4 * nq;
  p.seqlen_k = nk;
  p.head_dim = 128;
  p.dtype = DType::bf16;
  return p;
}

Tiling tiling(int64_t br, int64_t splits, int64_t occ, const char* design) {
  Tiling t;
  t.strategy = Strategy::splitkv;
  t.Br = br;
  t.Bc = 64;
  t.splits = splits;
  t.ctas_per_cu = occ;
  t.design = *parse_design(design);
  return t;
}

double term(const KernelResult& k, const std::string& name) {
  for (const auto& t : k.expected_terms)
    if (t.term == name) return t.seconds;
  throw SimError("no term " + name);
}

double body(const KernelResult& k) { return k.time_s - term(k, "launch") - term(k, "cta_fixed"); }

const KernelResult& main_kernel(const Result& r) { return r.kernels.front(); }

constexpr const char* kInline = "mma_sync/none/fragments/kv=inline/table=tile";
constexpr const char* kPlain = "mma_sync/none/fragments";

}  // namespace

TEST(DecodeTerms, DesignPartsRoundTrip) {
  const auto d = parse_design(kInline);
  ASSERT_TRUE(d.has_value());
  EXPECT_TRUE(d->kv_inline && d->table_per_tile);
  EXPECT_EQ(design_name(*d), std::string(kInline));
  for (const char* bad : {"mma_sync/none/fragments/kv=inline/kv=inline", "mma_sync/none/fragments/kv=tma",
                          "mma_sync/none/fragments/table=tile/table=tile"})
    EXPECT_FALSE(parse_design(bad).has_value()) << bad;
}

TEST(DecodeTerms, ChainIsTheFormula) {
  const Machine& m = h200();
  ASSERT_TRUE(m.calibrated_inline_kv_exposed.has_value());
  const double phi = m.calibrated_inline_kv_exposed->value, cus = m.compute_units.value;
  // Sixteen queries (64 packed rows, one CTA per SM) and one query (16 rows, two per SM), batch 16.
  for (int64_t nq : {1, 16})
    for (int64_t nk : {4096, 65536}) {
      const int64_t br = nq == 16 ? 64 : 16, occ = nq == 16 ? 1 : 2, splits = nq == 16 ? 1 : 2;
      const Result r = simulate(packed(16, nq, nk), m, tiling(br, splits, occ, kInline), {});
      const KernelResult& k = main_kernel(r);
      const double compute = term(k, "matrix_issue") + term(k, "partial_tiles") + term(k, "exp_sfu") +
                             term(k, "fp32_vector");
      const double c = std::max(compute, term(k, "lds")) + term(k, "wave_quantization");
      const double mem = std::max(term(k, "hbm"), term(k, "l2"));
      const double res = std::clamp(static_cast<double>(k.grid) / cus, 1.0, static_cast<double>(k.ctas_per_cu));
      EXPECT_NEAR(term(k, "kv_inline_exposed"), phi * c / res, 1e-12 + 1e-9 * c);
      EXPECT_EQ(term(k, "page_visits"), 0.0);  // dense
      const double chain = mem / res + phi * c / res;
      EXPECT_NEAR(body(k), std::max({c, mem, chain}), 1e-9 * body(k)) << "nq " << nq << " nk " << nk;
      const Result plain = simulate(packed(16, nq, nk), m, tiling(br, splits, occ, kPlain), {});
      const double gap = k.time_s - main_kernel(plain).time_s;
      if (occ == 1) {
        EXPECT_GT(gap, 0.5 * phi * c) << "one CTA per SM: the exposed compute adds";
        EXPECT_EQ(k.expected_bound, "chain");
      } else {
        EXPECT_NEAR(gap, 0.0, 1e-12) << "two CTAs per SM: the second hides it";
      }
    }
}

// kv=inline-overlapped (v07b's design): the tile compute runs under the stream, so no exposed share;
// the chain keeps the memory and the page visits. One CTA per SM, where kv=inline's exposure binds.
TEST(DecodeTerms, OverlappedInlineExposesNoCompute) {
  const Machine& m = h200();
  ASSERT_TRUE(m.calibrated_inline_kv_exposed.has_value() && m.calibrated_inline_kv_exposed->value > 0.0);
  constexpr const char* kOverlapped = "mma_sync/none/fragments/kv=inline-overlapped/table=tile";
  const auto d = parse_design(kOverlapped);
  ASSERT_TRUE(d.has_value());
  EXPECT_TRUE(d->kv_inline && d->kv_compute_overlapped && d->table_per_tile);
  EXPECT_EQ(design_name(*d), std::string(kOverlapped));
  EXPECT_FALSE(parse_design("mma_sync/none/fragments/kv=inline/kv=inline-overlapped").has_value());
  EXPECT_FALSE(parse_design(kInline)->kv_compute_overlapped);
  AttnProblem p = packed(16, 16, 16384);
  const Result inl = simulate(p, m, tiling(64, 1, 1, kInline), {});
  const Result ovl = simulate(p, m, tiling(64, 1, 1, kOverlapped), {});
  const Result plain = simulate(p, m, tiling(64, 1, 1, kPlain), {});
  EXPECT_GT(term(main_kernel(inl), "kv_inline_exposed"), 0.0);
  EXPECT_EQ(term(main_kernel(ovl), "kv_inline_exposed"), 0.0);
  EXPECT_LT(ovl.time_s, inl.time_s);
  EXPECT_DOUBLE_EQ(ovl.time_s, plain.time_s);  // dense: no page visits, so the chain is the memory alone
  // Paged: the page visits stay on the overlapped design's chain.
  AttnProblem pp = p;
  set_paged(pp.layout, std::vector<int64_t>(16, 16384), 16);
  LayoutModel lm;
  lm.gqa_packed = true;
  const LayoutResult paged = simulate_layout(pp, m, tiling(64, 1, 1, kOverlapped), {}, lm);
  EXPECT_GT(term(main_kernel(paged.result), "page_visits"), 0.0);
  EXPECT_EQ(term(main_kernel(paged.result), "kv_inline_exposed"), 0.0);
}

TEST(DecodeTerms, NothingWithoutTheCatalogFields) {
  Machine bare = h200();
  bare.calibrated_inline_kv_exposed.reset();
  bare.calibrated_page_visit_s.reset();
  AttnProblem p = packed(16, 16, 16384);
  const double a = simulate(p, bare, tiling(64, 1, 1, kInline), {}).time_s;
  const double b = simulate(p, bare, tiling(64, 1, 1, kPlain), {}).time_s;
  EXPECT_DOUBLE_EQ(a, b);
}

TEST(DecodeTerms, PagedLayoutSetsVisitsAndLookups) {
  const Machine& m = h200();
  ASSERT_TRUE(m.calibrated_page_visit_s.has_value());
  AttnProblem p;
  p.batch = 16;
  p.heads_q = 32;
  p.heads_kv = 8;
  p.seqlen_q = 16;
  p.seqlen_k = 16384;
  p.head_dim = 128;
  p.dtype = DType::bf16;
  LayoutModel lm;
  lm.gqa_packed = true;
  const LayoutResult dense = simulate_layout(p, m, tiling(64, 1, 1, kInline), {}, lm);
  AttnProblem pp = p;
  set_paged(pp.layout, std::vector<int64_t>(16, 16384), 16);
  const LayoutResult paged = simulate_layout(pp, m, tiling(64, 1, 1, kInline), {}, lm);
  // Every (sequence, K/V head) CTA enters 1024 pages; its tiles span 4 each.
  const double visits = 16.0 * 8 * 1024;
  const double want = visits * m.calibrated_page_visit_s->value / m.compute_units.value;  // one CTA per SM
  EXPECT_NEAR(term(main_kernel(paged.result), "page_visits"), want, 1e-9 * want);
  EXPECT_GT(paged.result.time_s, dense.result.time_s + 0.5 * want);
  EXPECT_EQ(paged.terms.table_lookups, 16 * 8 * 16384);  // table=tile: one per key per CTA
  const LayoutResult per_copy = simulate_layout(pp, m, tiling(64, 1, 1, kPlain), {}, lm);
  EXPECT_EQ(per_copy.terms.table_lookups, int64_t{16} * 8 * 16384 * 16 * 2);  // 16 chunks of K and of V
}

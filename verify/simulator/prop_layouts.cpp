// verify/simulator/prop_layouts.cpp: the simulator's layout model (simulator/layouts.hpp) against
// the dense model it is built on.
//
//   paged_dividing_equals_dense  equal sequences in a paged cache whose page size divides their
//                                length: exactly the dense problem's traffic (HBM, no-L2, L2,
//                                compulsory), FLOPs and memory, plus the block table (one entry per
//                                page from HBM, each CTA's entries at L2), whatever the page order
//                                and whether pages are read as rows or whole
//   page_one_vs_large            ragged lengths: reading rows, K/V traffic is the same for page 1
//                                and large pages and only the table differs (page 1's is larger);
//                                reading whole pages, page 1 equals reading rows and a large page
//                                adds exactly its rounding bytes; paged rows = packed (varlen) keys
//                                with the table in place of cu_seqlens_k
//   varlen_sum_of_dense          a packed batch (queries and keys, lengths including 0 and 1)
//                                equals the sum of its sequences as dense batch-1 problems, each with
//                                its own causal alignment: exactly without the L2 model (and with
//                                it when no two sequences have the same lengths), plus cu_seqlens;
//                                a sequence with no key writes its O and LSE rows only
//   gqa_packing                  one CTA per K/V head: K/V requested once per (K/V head, row tile)
//                                (the compulsory bytes when the group's rows fit one tile), never
//                                more than unpacked; Q, O, LSE and FLOPs unchanged (non-causal)
//   layout_refusals              bad tables and lengths are refused in one line naming the field;
//                                GQA packing outside a Q-outer forward is refused
// Each property prints `property NAME: N cases passed`.
#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <rapidcheck.h>

#include "property.hpp"
#include "simulator/layouts.hpp"
#include "simulator/simulator.hpp"

namespace {

using namespace ioattn;
using sim::Strategy;

const sim::Machine& h200() {
  static const auto c = sim::load_catalog(sim::default_catalog_dir());
  return sim::find_machine(c, "h200");
}

// A small dense problem and a tiling that fits the H200.
AttnProblem gen_base() {
  AttnProblem p;
  p.batch = *rc::gen::inRange<int64_t>(1, 5);
  p.heads_kv = *rc::gen::inRange<int64_t>(1, 3);
  p.heads_q = p.heads_kv * *rc::gen::element<int64_t>(1, 2, 4);
  p.seqlen_q = *rc::gen::inRange<int64_t>(1, 40);
  p.head_dim = *rc::gen::element<int64_t>(8, 64, 128);
  p.dtype = *rc::gen::element(DType::fp32, DType::bf16);
  p.causal = *rc::gen::arbitrary<bool>();
  if (*rc::gen::inRange(0, 4) == 0) p.window_left = *rc::gen::inRange<int64_t>(0, 30);
  return p;
}

sim::Tiling gen_tiling(bool fused_only = false) {
  sim::Tiling t;
  std::vector<Strategy> all;
  for (const auto& s : sim::strategies())
    if (!fused_only || s.loop_order == sim::LoopOrder::q_outer) all.push_back(s.strategy);
  t.strategy = *rc::gen::elementOf(all);
  t.Br = *rc::gen::element<int64_t>(16, 32, 64);
  t.Bc = *rc::gen::element<int64_t>(16, 32, 64);
  if (sim::strategy_info(t.strategy).takes_splits) t.splits = *rc::gen::inRange<int64_t>(1, 5);
  return t;
}

sim::Options gen_options(Strategy s, bool no_l2) {
  sim::Options o;
  std::vector<Pass> passes;
  for (Pass p : {Pass::fwd, Pass::bwd, Pass::fwdbwd})
    if (sim::strategy_info(s).supports(p)) passes.push_back(p);
  o.pass = *rc::gen::elementOf(passes);
  o.no_l2 = no_l2;
  return o;
}

// Lengths including 0 and 1, some repeated (sequences of equal lengths share a group).
std::vector<int64_t> gen_lengths(int64_t n, int64_t lo, int64_t hi) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < n; ++i)
    v.push_back(*rc::gen::oneOf(rc::gen::element<int64_t>(0, 1, lo, hi), rc::gen::inRange<int64_t>(lo, hi + 1)));
  return v;
}

int64_t most(const std::vector<int64_t>& v) { return std::max<int64_t>(1, *std::max_element(v.begin(), v.end())); }

void same_traffic(const sim::Result& a, const sim::Result& b, const char* what) {
  RC_ASSERT(a.hbm.read == b.hbm.read);
  RC_ASSERT(a.hbm.write == b.hbm.write);
  RC_ASSERT(a.hbm_no_l2.read == b.hbm_no_l2.read);
  RC_ASSERT(a.hbm_no_l2.write == b.hbm_no_l2.write);
  RC_ASSERT(a.l2.read == b.l2.read);
  RC_ASSERT(a.hbm_compulsory.read == b.hbm_compulsory.read);
  RC_ASSERT(a.matrix_flops == b.matrix_flops);
  RC_ASSERT(a.conventional_flops == b.conventional_flops);
  RC_TAG(what);
}

// ------------------------------------------------------------------------------------------------

void paged_dividing_equals_dense() {
  AttnProblem dense = gen_base();
  const int64_t ps = *rc::gen::element<int64_t>(1, 2, 7, 16, 64);
  dense.seqlen_k = ps * *rc::gen::inRange<int64_t>(1, std::max<int64_t>(2, 160 / ps + 1));
  const sim::Tiling t = gen_tiling();
  const sim::Options o = gen_options(t.strategy, *rc::gen::arbitrary<bool>());
  sim::LayoutModel lm;
  lm.page_reads = *rc::gen::element(sim::PageReads::rows, sim::PageReads::pages);
  AttnProblem paged = dense;
  set_paged(paged.layout, std::vector<int64_t>(static_cast<size_t>(dense.batch), dense.seqlen_k), ps,
            *rc::gen::inRange<int64_t>(0, 3), *rc::gen::arbitrary<bool>() ? std::optional<uint64_t>(7) : std::nullopt);
  RC_PRE(!paged.validate().has_value());
  const sim::Result d = sim::simulate(dense, h200(), t, o);
  const sim::LayoutResult pr = sim::simulate_layout(paged, h200(), t, o, lm);
  const sim::Result& p = pr.result;
  const int64_t table = dense.batch * (dense.seqlen_k / ps) * 4;
  RC_ASSERT(pr.terms.block_table_hbm_bytes == table);
  RC_ASSERT(pr.terms.page_rounding_hbm_bytes == 0);
  RC_ASSERT(pr.terms.partial_pages == 0);
  RC_ASSERT(p.hbm.read == d.hbm.read + table);
  RC_ASSERT(p.hbm.write == d.hbm.write);
  RC_ASSERT(p.hbm_compulsory.read == d.hbm_compulsory.read + table);
  RC_ASSERT(p.hbm_compulsory.write == d.hbm_compulsory.write);
  RC_ASSERT(p.hbm_no_l2.read == d.hbm_no_l2.read + pr.terms.block_table_l2_bytes);
  RC_ASSERT(p.l2.read == d.l2.read + pr.terms.block_table_l2_bytes);
  RC_ASSERT(pr.terms.block_table_l2_bytes >= table);
  RC_ASSERT(p.matrix_flops == d.matrix_flops);
  RC_ASSERT(p.conventional_flops == d.conventional_flops);
  RC_ASSERT(p.extra_memory_bytes == d.extra_memory_bytes);
  // Time: the dense time plus the table at the bandwidth (one launch per kernel, as dense).
  const double bw = h200().measured_bandwidth ? h200().measured_bandwidth->value : h200().hbm_bandwidth.value;
  RC_ASSERT(std::abs(p.time_s - (d.time_s + static_cast<double>(table) / bw)) <= 1e-9 * d.time_s + 1e-15);
  // The plain entry point (simulate) takes the same path for a paged problem, reading rows.
  if (lm.page_reads == sim::PageReads::rows) same_traffic(sim::simulate(paged, h200(), t, o), p, "simulate");
}

void page_one_vs_large() {
  AttnProblem base = gen_base();
  const std::vector<int64_t> lens = gen_lengths(base.batch, 2, 150);
  base.seqlen_k = most(lens);
  const sim::Tiling t = gen_tiling();
  const sim::Options o = gen_options(t.strategy, *rc::gen::arbitrary<bool>());
  const int64_t big = *rc::gen::element<int64_t>(16, 64, 256);
  auto paged = [&](int64_t ps) {
    AttnProblem p = base;
    set_paged(p.layout, lens, ps, 1, uint64_t{3});
    return p;
  };
  sim::LayoutModel rows, pages;
  pages.page_reads = sim::PageReads::pages;
  const auto r1 = sim::simulate_layout(paged(1), h200(), t, o, rows);
  const auto rb = sim::simulate_layout(paged(big), h200(), t, o, rows);
  const auto p1 = sim::simulate_layout(paged(1), h200(), t, o, pages);
  const auto pb = sim::simulate_layout(paged(big), h200(), t, o, pages);
  // Reading rows: the page size changes only the table.
  RC_ASSERT(r1.terms.kv_hbm_read_bytes == rb.terms.kv_hbm_read_bytes);
  RC_ASSERT(r1.terms.kv_l2_read_bytes == rb.terms.kv_l2_read_bytes);
  RC_ASSERT(r1.result.hbm.read - r1.terms.block_table_hbm_bytes == rb.result.hbm.read - rb.terms.block_table_hbm_bytes);
  RC_ASSERT(r1.result.hbm.write == rb.result.hbm.write);
  RC_ASSERT(r1.terms.block_table_hbm_bytes >= rb.terms.block_table_hbm_bytes);
  RC_ASSERT(r1.terms.block_table_l2_bytes >= rb.terms.block_table_l2_bytes);
  int64_t used = 0;
  for (size_t b = 0; b < lens.size(); ++b) used += base.seqlen_q_of(static_cast<int64_t>(b)) > 0 ? lens[b] : 0;
  RC_ASSERT(r1.terms.block_table_hbm_bytes == 4 * used);
  // Whole pages: page 1 has no rounding; a large page adds exactly its rounding bytes.
  same_traffic(p1.result, r1.result, "page 1: pages = rows");
  RC_ASSERT(p1.terms.page_rounding_hbm_bytes == 0);
  RC_ASSERT(pb.result.hbm.read == rb.result.hbm.read + pb.terms.page_rounding_hbm_bytes);
  RC_ASSERT(pb.result.l2.read == rb.result.l2.read + pb.terms.page_rounding_l2_bytes);
  RC_ASSERT(pb.terms.kv_rows_read >= rb.terms.kv_rows_read);
  RC_ASSERT(pb.terms.partial_pages <= base.batch);
  // Paged rows = packed keys, with the table in place of cu_seqlens_k.
  AttnProblem packed = base;
  packed.layout.cu_seqlens_k = cu_seqlens_of(lens);
  packed.layout.total_k = packed.layout.cu_seqlens_k.back();
  const auto v = sim::simulate_layout(packed, h200(), t, o, rows);
  RC_ASSERT(v.terms.cu_seqlens_bytes == (base.batch + 1) * 4);
  RC_ASSERT(v.result.hbm.read - v.terms.cu_seqlens_bytes == rb.result.hbm.read - rb.terms.block_table_hbm_bytes);
  RC_ASSERT(v.result.matrix_flops == rb.result.matrix_flops);
}

void varlen_sum_of_dense() {
  AttnProblem p = gen_base();
  const std::vector<int64_t> lq = gen_lengths(p.batch, 1, 60), lk = gen_lengths(p.batch, 1, 90);
  const bool no_l2 = *rc::gen::arbitrary<bool>();
  const sim::Tiling t = gen_tiling();
  const sim::Options o = gen_options(t.strategy, no_l2);
  p.seqlen_q = most(lq);
  p.seqlen_k = most(lk);
  p.layout.cu_seqlens_q = cu_seqlens_of(lq);
  p.layout.total_q = p.layout.cu_seqlens_q.back() + *rc::gen::inRange<int64_t>(0, 3);  // unowned rows: not read
  p.layout.cu_seqlens_k = cu_seqlens_of(lk);
  p.layout.total_k = p.layout.cu_seqlens_k.back();
  RC_PRE(!p.validate().has_value());
  const auto v = sim::simulate_layout(p, h200(), t, o);
  sim::Traffic hbm, no_l2_t, comp;
  double mflops = 0.0, conv = 0.0;
  int64_t empty = 0;
  std::set<std::pair<int64_t, int64_t>> seen;
  bool distinct = true;
  const int64_t eo = static_cast<int64_t>(dtype_bytes(p.dtype));
  for (int64_t b = 0; b < p.batch; ++b) {
    if (lq[b] == 0) continue;
    if (lk[b] == 0) {
      empty += lq[b] * p.heads_q * (p.head_dim * eo + 4);
      continue;
    }
    distinct = seen.insert({lq[b], lk[b]}).second && distinct;
    AttnProblem s = p;
    s.layout = BatchLayout{};
    s.batch = 1;
    s.seqlen_q = lq[b];
    s.seqlen_k = lk[b];
    const sim::Result r = sim::simulate_unchecked(s, h200(), t, o);
    hbm += r.hbm;
    no_l2_t += r.hbm_no_l2;
    comp += r.hbm_compulsory;
    mflops += r.matrix_flops;
    conv += r.conventional_flops;
  }
  const int64_t cu = 2 * (p.batch + 1) * 4;
  RC_ASSERT(v.terms.cu_seqlens_bytes == cu);
  RC_ASSERT(v.terms.empty_rows_write_bytes == empty);
  RC_ASSERT(v.result.hbm_no_l2.read == no_l2_t.read + cu);
  RC_ASSERT(v.result.hbm_no_l2.write == no_l2_t.write + empty);
  RC_ASSERT(v.result.hbm_compulsory.read == comp.read + cu);
  RC_ASSERT(v.result.hbm_compulsory.write == comp.write + empty);
  RC_ASSERT(v.result.matrix_flops == mflops);
  RC_ASSERT(std::abs(v.result.conventional_flops - conv) <= 1e-9 * std::max(1.0, conv));
  if (no_l2 || distinct) {
    RC_ASSERT(v.result.hbm.read == hbm.read + cu);
    RC_ASSERT(v.result.hbm.write == hbm.write + empty);
  }
  RC_ASSERT(v.result.hbm.read >= v.result.hbm_compulsory.read);
  RC_ASSERT(v.result.hbm.read <= v.result.hbm_no_l2.read);
  // The merged kernels add up to the totals (one launch per kernel for all sequences).
  sim::Traffic kh, kn, kl;
  double kt = 0.0;
  for (const auto& k : v.result.kernels) {
    kh += k.hbm;
    kn += k.hbm_no_l2;
    kl += k.l2;
    kt += k.time_s;
  }
  RC_ASSERT(kh.read + cu == v.result.hbm.read && kh.write + empty == v.result.hbm.write);
  RC_ASSERT(kn.read + cu == v.result.hbm_no_l2.read && kn.write + empty == v.result.hbm_no_l2.write);
  RC_ASSERT(kl.read + cu == v.result.l2.read);
  const double bw = h200().measured_bandwidth->value;
  RC_ASSERT(std::abs(kt + static_cast<double>(cu + empty) / bw - v.result.time_s) <= 1e-9 * v.result.time_s);
  // The padded batch never moves less than the packed one.
  RC_ASSERT(v.terms.padded_hbm_read + cu >= v.result.hbm_compulsory.read);
  RC_TAG(distinct ? "distinct lengths" : "repeated lengths");
}

void gqa_packing() {
  AttnProblem p = gen_base();
  p.causal = false;
  p.window_left = -1;
  p.seqlen_k = *rc::gen::inRange<int64_t>(1, 300);
  sim::Tiling t = gen_tiling(/*fused_only=*/true);
  sim::Options o;
  o.no_l2 = *rc::gen::arbitrary<bool>();
  sim::LayoutModel packed;
  packed.gqa_packed = true;
  const sim::LayoutResult a = sim::simulate_layout(p, h200(), t, o, packed);
  const sim::LayoutResult u = sim::simulate_layout(p, h200(), t, o);
  RC_ASSERT(a.terms.kv_compulsory_bytes == u.terms.kv_compulsory_bytes);
  RC_ASSERT(a.terms.kv_l2_read_bytes <= u.terms.kv_l2_read_bytes);
  RC_ASSERT(a.terms.kv_hbm_read_bytes <= a.terms.kv_l2_read_bytes);
  const int64_t rows = p.group_size() * p.seqlen_q;
  const int64_t tiles = (rows + t.Br - 1) / t.Br;
  // K/V requested once per (K/V head, row tile): tiles x the compulsory bytes.
  RC_ASSERT(a.terms.kv_l2_read_bytes == tiles * a.terms.kv_compulsory_bytes);
  if (rows <= t.Br) RC_ASSERT(a.terms.kv_hbm_read_bytes == a.terms.kv_compulsory_bytes);
  RC_ASSERT(a.result.hbm_compulsory.read == u.result.hbm_compulsory.read);
  RC_ASSERT(a.result.conventional_flops == u.result.conventional_flops);
  if (t.strategy == Strategy::fa2 || t.splits == 1) RC_ASSERT(a.result.hbm.write == u.result.hbm.write);
  RC_TAG(p.group_size() > 1 ? "GQA" : "MHA");
}

void layout_refusals() {
  const sim::Machine& m = h200();
  sim::Tiling t;
  AttnProblem ok;
  ok.batch = 2;
  ok.heads_q = 8;
  ok.heads_kv = 2;
  ok.seqlen_q = 1;
  ok.seqlen_k = 40;
  ok.head_dim = 64;
  ok.dtype = DType::bf16;
  set_paged(ok.layout, {40, 17}, 16);
  RC_ASSERT(!ok.validate().has_value());
  (void)sim::simulate_layout(ok, m, t, {});
  struct Bad {
    const char* what;
    const char* names;  // a word the refusal must contain
    void (*mutate)(AttnProblem&);
  };
  const Bad bads[] = {
      {"page index past num_pages", "block_table", [](AttnProblem& p) { p.layout.block_table[0] = 999; }},
      {"-1 in a used slot", "block_table", [](AttnProblem& p) { p.layout.block_table[1] = -1; }},
      {"negative page index", "block_table", [](AttnProblem& p) { p.layout.block_table[0] = -5; }},
      {"one page in two sequences", "page", [](AttnProblem& p) {
         p.layout.block_table[static_cast<size_t>(p.layout.max_pages)] = p.layout.block_table[0];
       }},
      {"seqused_k past the table", "seqused_k", [](AttnProblem& p) { p.layout.seqused_k[1] = 49; }},
      {"seqused_k past seqlen_k", "seqused_k", [](AttnProblem& p) {
         p.seqlen_k = 39;
       }},
      {"negative seqused_k", "seqused_k", [](AttnProblem& p) { p.layout.seqused_k[0] = -1; }},
      {"table of the wrong size", "block_table", [](AttnProblem& p) { p.layout.block_table.pop_back(); }},
      {"page size 0 with a table", "page_size", [](AttnProblem& p) { p.layout.page_size = 0; }},
      {"cu_seqlens_k with a paged cache", "cu_seqlens_k", [](AttnProblem& p) { p.layout.cu_seqlens_k = {0, 1, 2}; }},
      {"decreasing cu_seqlens_q", "cu_seqlens_q", [](AttnProblem& p) {
         p.layout.cu_seqlens_q = {0, 1, 0};
         p.layout.total_q = 1;
       }},
  };
  for (const Bad& b : bads) {
    AttnProblem p = ok;
    b.mutate(p);
    for (int entry = 0; entry < 2; ++entry) {
      std::string msg;
      try {
        if (entry == 0) (void)sim::simulate_layout(p, m, t, {});
        else (void)sim::simulate(p, m, t, {});
      } catch (const sim::SimError& e) {
        msg = e.what();
      }
      if (msg.empty() || msg.find('\n') != std::string::npos || msg.find(b.names) == std::string::npos)
        RC_FAIL(fmt::format("{}: got '{}', not a one-line refusal naming {}", b.what, msg, b.names));
    }
  }
  // GQA packing outside a Q-outer forward.
  sim::LayoutModel packed;
  packed.gqa_packed = true;
  for (auto [s, pass] : {std::pair{Strategy::fa1, Pass::fwd}, {Strategy::standard, Pass::fwd}, {Strategy::fa2, Pass::bwd}}) {
    sim::Tiling ts;
    ts.strategy = s;
    sim::Options o;
    o.pass = pass;
    std::string msg;
    try { (void)sim::simulate_layout(ok, m, ts, o, packed); } catch (const sim::SimError& e) { msg = e.what(); }
    if (msg.find("GQA packing") == std::string::npos || msg.find('\n') != std::string::npos)
      RC_FAIL(fmt::format("GQA packing with {} pass {}: got '{}'", sim::strategy_name(s), sim::pass_name(pass), msg));
  }
}

}  // namespace

int main() {
  return ioattn::verify::run_properties({
      {"paged_dividing_equals_dense", 300, paged_dividing_equals_dense},
      {"page_one_vs_large", 300, page_one_vs_large},
      {"varlen_sum_of_dense", 300, varlen_sum_of_dense},
      {"gqa_packing", 300, gqa_packing},
      {"layout_refusals", 1, layout_refusals},
  });
}

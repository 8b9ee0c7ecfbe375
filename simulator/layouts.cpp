// simulator/layouts.cpp: packed (varlen) batches, paged KV caches and GQA packing on top of the
// dense loop nests (layouts.hpp says what is counted; simulator/README.md, "Layouts").
#include "simulator/layouts.hpp"

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include <fmt/format.h>

namespace ioattn::sim {

std::string_view page_reads_name(PageReads r) { return r == PageReads::rows ? "rows" : "pages"; }
std::optional<PageReads> parse_page_reads(std::string_view s) {
  if (s == "rows") return PageReads::rows;
  if (s == "pages") return PageReads::pages;
  return std::nullopt;
}

bool layout_applies(const AttnProblem& p, const LayoutModel& lm) { return !p.is_dense() || lm.gqa_packed; }

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The dense problem of `count` sequences of nq queries and nk keys; GQA-packed: the G = heads_q /
// heads_kv query heads of a K/V head become G * nq rows of one head.
AttnProblem group_problem(const AttnProblem& p, int64_t count, int64_t nq, int64_t nk, bool packed) {
  AttnProblem g = p;
  g.layout = BatchLayout{};
  g.batch = count;
  g.seqlen_q = packed ? nq * p.group_size() : nq;
  g.seqlen_k = nk;
  if (packed) g.heads_q = p.heads_kv;
  return g;
}

void add_terms(std::vector<ExpectedTerm>& into, const std::vector<ExpectedTerm>& from) {
  for (const auto& t : from) {
    auto it = std::find_if(into.begin(), into.end(), [&](const ExpectedTerm& x) { return x.term == t.term; });
    if (it == into.end()) into.push_back(t);
    else it->seconds += t.seconds;
  }
}

void sub_launch(std::vector<ExpectedTerm>& terms, double launch) {
  for (auto& t : terms)
    if (t.term == "launch") t.seconds -= launch;
}

// b's kernel (same plan position, another group) into a: one launch for both.
void merge_kernel(KernelResult& a, const KernelResult& b, double launch, double cus) {
  a.grid += b.grid;
  a.waves += b.waves;
  a.hbm += b.hbm;
  a.hbm_no_l2 += b.hbm_no_l2;
  a.hbm_compulsory += b.hbm_compulsory;
  a.l2 += b.l2;
  a.lds += b.lds;
  a.matrix_flops += b.matrix_flops;
  a.other_flops += b.other_flops;
  a.tiles += b.tiles;
  a.max_cta_tiles = std::max(a.max_cta_tiles, b.max_cta_tiles);
  a.score_elems += b.score_elems;
  a.slice_rows = std::max(a.slice_rows, b.slice_rows);
  a.slice_tiles += b.slice_tiles;
  a.max_cta_slice_tiles = std::max(a.max_cta_slice_tiles, b.max_cta_slice_tiles);
  a.slice_score_elems += b.slice_score_elems;
  a.t_compute_s += b.t_compute_s;
  a.t_memory_s += b.t_memory_s;
  a.ceiling_time_s += b.ceiling_time_s - launch;
  a.time_s += b.time_s - launch;
  if (a.l2_regime != b.l2_regime) a.l2_regime = "mixed";
  add_terms(a.expected_terms, b.expected_terms);
  sub_launch(a.expected_terms, launch);
  for (const auto& t : b.tensors) {
    auto it = std::find_if(a.tensors.begin(), a.tensors.end(), [&](const TensorTraffic& x) { return x.tensor == t.tensor; });
    if (it == a.tensors.end()) {
      a.tensors.push_back(t);
    } else {
      it->hbm += t.hbm;
      it->hbm_no_l2 += t.hbm_no_l2;
      it->hbm_compulsory += t.hbm_compulsory;
    }
  }
  const double slots = static_cast<double>(a.waves) * cus * static_cast<double>(std::max<int64_t>(1, a.ctas_per_cu));
  a.wave_efficiency = slots > 0 ? static_cast<double>(a.grid) / slots : 1.0;
  a.l2_hit_rate = a.l2.read > 0 ? 1.0 - static_cast<double>(a.hbm.read) / static_cast<double>(a.l2.read) : 0.0;
}

bool is_kv(const std::string& n) { return n == "K" || n == "V" || n == "Vt"; }

// The pages key range [lo, hi) spans.
int64_t pages_spanned(int64_t lo, int64_t hi, int64_t ps) { return hi > lo ? ceil_div(hi, ps) - lo / ps : 0; }

struct Seq {
  int64_t nq = 0, nk = 0, pages = 0;
};

// Block-table requests at L2 and per-copy lookups of one sequence (nk keys), for the CTAs that
// read K/V: the Q-outer forward (heads x row tiles x splits, split s over ceil(Tc / S) key blocks)
// and the K/V-outer backward (one CTA per key block and query head).
void table_requests(const AttnProblem& p, const Tiling& t, const Options& o, bool packed, int64_t nq, int64_t nk,
                    LayoutTerms& lt) {
  const int64_t ps = p.layout.page_size;
  const int64_t chunks = ceil_div(p.head_dim * static_cast<int64_t>(dtype_bytes(p.dtype)), 16);
  const int64_t Br = std::max<int64_t>(1, t.Br), Bc = std::max<int64_t>(1, t.Bc);
  // Lookups: one per 16-byte copy of K and of V, or (design table=tile) one per key of a tile, whose
  // cache row the K and V copies then read from shared memory (v07's page-granular rows).
  const int64_t per_key = t.design.table_per_tile ? 1 : chunks * 2;
  auto cta = [&](int64_t lo, int64_t hi, int64_t n) {
    lt.block_table_l2_bytes += n * pages_spanned(lo, hi, ps) * 4;
    lt.table_lookups += n * std::max<int64_t>(0, hi - lo) * per_key;
  };
  if (o.pass != Pass::bwd) {
    const int64_t heads = packed ? p.heads_kv : p.heads_q;
    const int64_t rows = packed ? nq * p.group_size() : nq;
    const int64_t tr = ceil_div(rows, Br);
    const int64_t S = strategy_info(t.strategy).takes_splits ? std::max<int64_t>(1, t.splits) : 1;
    const int64_t per = ceil_div(ceil_div(nk, Bc), S) * Bc;
    for (int64_t s = 0; s < S; ++s) cta(std::min(nk, s * per), std::min(nk, (s + 1) * per), heads * tr);
  }
  if (o.pass != Pass::fwd)
    for (int64_t j = 0; j * Bc < nk; ++j) cta(j * Bc, std::min(nk, (j + 1) * Bc), p.heads_q);
}

// Pages the forward's CTAs enter over one sequence (nq queries, nk keys): its K/V ranges as
// table_requests cuts them (heads x row tiles x splits), each page of a range counted once. The
// expected time's page term (Tiling::page_visits, simulate.cpp) takes the sum over a length group.
int64_t fwd_page_visits(const AttnProblem& p, const Tiling& t, bool packed, int64_t nq, int64_t nk) {
  const int64_t ps = p.layout.page_size;
  const int64_t Br = std::max<int64_t>(1, t.Br), Bc = std::max<int64_t>(1, t.Bc);
  const int64_t heads = packed ? p.heads_kv : p.heads_q;
  const int64_t tr = ceil_div(packed ? nq * p.group_size() : nq, Br);
  const int64_t S = strategy_info(t.strategy).takes_splits ? std::max<int64_t>(1, t.splits) : 1;
  const int64_t per = ceil_div(ceil_div(nk, Bc), S) * Bc;
  int64_t v = 0;
  for (int64_t s = 0; s < S; ++s) v += pages_spanned(std::min(nk, s * per), std::min(nk, (s + 1) * per), ps);
  return heads * tr * v;
}

}  // namespace

LayoutResult simulate_layout_unchecked(const AttnProblem& p, const Machine& m, const Tiling& t, const Options& o,
                                       const LayoutModel& lm) {
  if (auto e = p.validate()) throw SimError(*e);
  if (lm.gqa_packed && (loop_order(t.strategy) != LoopOrder::q_outer || o.pass != Pass::fwd))
    throw SimError(fmt::format("GQA packing models a Q-outer forward (fa2, splitkv; pass fwd); got strategy {} pass {}",
                               strategy_name(t.strategy), pass_name(o.pass)));
  LayoutResult out;
  LayoutTerms& lt = out.terms;
  lt.layout = p.layout.describe();
  lt.gqa_packed = lm.gqa_packed;
  lt.page_reads = page_reads_name(lm.page_reads);
  lt.page_size = p.layout.page_size;
  Result& r = out.result;
  if (!layout_applies(p, lm)) {
    r = simulate_unchecked(p, m, t, o);
  } else {
    const bool packed = lm.gqa_packed;
    const int64_t e = static_cast<int64_t>(dtype_bytes(p.dtype)), eo = static_cast<int64_t>(dtype_bytes(p.output_dtype()));
    const int64_t d = p.head_dim, row_kv = p.heads_kv * d * e;  // bytes of one key's K (or V) row, all K/V heads
    const int kv_passes = o.pass == Pass::fwdbwd ? 2 : 1;
    // The sequences, grouped by their lengths.
    std::map<std::pair<int64_t, int64_t>, int64_t> groups;
    for (int64_t b = 0; b < p.batch; ++b) {
      Seq s{p.seqlen_q_of(b), p.seqlen_k_of(b), p.layout.paged() ? p.layout.pages_used(b) : 0};
      if (s.nq == 0) continue;
      ++lt.sequences;
      lt.kv_rows_used += s.nk;
      if (s.nk == 0) {  // no key: O = 0 and LSE = -inf rows written, nothing read
        lt.empty_rows_write_bytes += s.nq * p.heads_q * (d * eo + 4);
        continue;
      }
      ++groups[{s.nq, s.nk}];
      if (p.layout.paged()) {
        const int64_t ps = p.layout.page_size, rounded = s.pages * ps, extra = rounded - s.nk;
        lt.pages_used += s.pages;
        lt.partial_pages += extra > 0 ? 1 : 0;
        lt.block_table_hbm_bytes += s.pages * 4;
        lt.kv_rows_read += lm.page_reads == PageReads::pages ? rounded : s.nk;
        table_requests(p, t, o, packed, s.nq, s.nk, lt);
        if (lm.page_reads == PageReads::pages && extra > 0) {
          // The last page read whole: from HBM once per K/V head (its readers share it in the L2),
          // at L2 by every CTA whose key range holds the last key (last split of each row tile).
          const int64_t rows = packed ? s.nq * p.group_size() : s.nq;
          const int64_t readers_fwd = (packed ? p.heads_kv : p.heads_q) * ceil_div(rows, std::max<int64_t>(1, t.Br));
          const int64_t readers = (o.pass != Pass::bwd ? readers_fwd : 0) + (o.pass != Pass::fwd ? p.heads_q : 0);
          lt.page_rounding_hbm_bytes += 2 * extra * row_kv * kv_passes;
          lt.page_rounding_l2_bytes += 2 * extra * d * e * readers;
        }
      } else {
        lt.kv_rows_read += s.nk;
      }
    }
    lt.groups = static_cast<int64_t>(groups.size());
    if (p.layout.varlen_q()) lt.cu_seqlens_bytes += (p.batch + 1) * 4;
    if (p.layout.varlen_k()) lt.cu_seqlens_bytes += (p.batch + 1) * 4;
    // One dense problem per group; the plan's kernels summed position by position.
    const double launch = m.launch_overhead_s.value, cus = m.compute_units.value;
    bool first = true;
    for (const auto& [len, count] : groups) {
      Tiling tg = t;  // the group's page visits (forward of a paged cache), for the expected time
      if (p.layout.paged() && o.pass == Pass::fwd) tg.page_visits = count * fwd_page_visits(p, t, packed, len.first, len.second);
      const Result g = simulate_unchecked(group_problem(p, count, len.first, len.second, packed), m, tg, o);
      r.conventional_flops += conventional_flops(group_problem(p, count, len.first, len.second, false), o.pass);
      if (first) {
        const double conv = r.conventional_flops;
        r = g;
        r.conventional_flops = conv;
        first = false;
        continue;
      }
      for (size_t i = 0; i < r.kernels.size() && i < g.kernels.size(); ++i) merge_kernel(r.kernels[i], g.kernels[i], launch, cus);
      r.hbm += g.hbm;
      r.hbm_no_l2 += g.hbm_no_l2;
      r.hbm_compulsory += g.hbm_compulsory;
      r.l2 += g.l2;
      r.lds += g.lds;
      r.matrix_flops += g.matrix_flops;
      r.other_flops += g.other_flops;
      r.extra_memory_bytes += g.extra_memory_bytes;  // every sequence's workspace at once
      const double launches = launch * static_cast<double>(g.kernels.size());
      r.time_s += g.time_s - launches;
      r.ceiling_time_s += g.ceiling_time_s - launches;
      add_terms(r.expected_terms, g.expected_terms);
      sub_launch(r.expected_terms, launches);
      r.ctas_per_cu = std::max(r.ctas_per_cu, g.ctas_per_cu);
    }
    r.problem = p;
    r.machine = m.name;
    r.tiling = t;
    r.options = o;
    // The layout's own reads and writes, at HBM and L2, and their time at the bandwidth.
    const int64_t table_cu = lt.block_table_hbm_bytes + lt.cu_seqlens_bytes;
    r.hbm.read += table_cu + lt.page_rounding_hbm_bytes;
    r.hbm_compulsory.read += table_cu;
    r.hbm_no_l2.read += lt.block_table_l2_bytes + lt.cu_seqlens_bytes + lt.page_rounding_l2_bytes;
    r.l2.read += lt.block_table_l2_bytes + lt.cu_seqlens_bytes + lt.page_rounding_l2_bytes;
    r.hbm.write += lt.empty_rows_write_bytes;
    r.hbm_no_l2.write += lt.empty_rows_write_bytes;
    r.hbm_compulsory.write += lt.empty_rows_write_bytes;
    r.l2.write += lt.empty_rows_write_bytes;
    const bool measured_bw = o.measured_ceilings && m.measured_bandwidth;
    const double bw = measured_bw ? m.measured_bandwidth->value : m.hbm_bandwidth.value;
    const double t_layout =
        static_cast<double>(table_cu + lt.page_rounding_hbm_bytes + lt.empty_rows_write_bytes) / bw;
    r.time_s += t_layout;
    r.ceiling_time_s += t_layout;
    r.expected_terms.push_back({"layout", t_layout, measured_bw ? "measured_bandwidth" : "hbm_bandwidth", bw});
    // Bounds and regime from the merged kernels (the slowest; the main one: tiled first).
    double slowest = -1.0, main_time = -1.0;
    for (const auto& k : r.kernels) {
      if (k.time_s > slowest) { slowest = k.time_s; r.bound = k.bound; r.expected_bound = k.expected_bound; }
      const double weight = k.time_s + (k.matmuls_per_tile > 0 ? 1e9 : 0.0);
      if (weight > main_time) { main_time = weight; r.l2_regime = k.l2_regime; }
    }
    // The padded dense batch beside it.
    const Result pad = simulate_unchecked(group_problem(p, p.batch, p.seqlen_q, p.seqlen_k, packed), m, t, o);
    lt.padded_hbm_read = pad.hbm.read;
    lt.padded_hbm_write = pad.hbm.write;
    lt.padded_time_s = pad.time_s;
  }
  if (p.is_dense()) lt.kv_rows_read = lt.kv_rows_used = p.batch * p.seqlen_k;
  for (const auto& k : r.kernels) {
    for (const auto& tt : k.tensors) {
      if (is_kv(tt.tensor)) {
        lt.kv_hbm_read_bytes += tt.hbm.read;
        lt.kv_l2_read_bytes += tt.hbm_no_l2.read;
        lt.kv_compulsory_bytes += tt.hbm_compulsory.read;
      }
      if (tt.tensor == "O_partial" || tt.tensor == "LSE_partial") lt.partials_bytes += tt.hbm.total();
    }
    if (k.name == "splitkv_combine") lt.combine_time_s += k.time_s;
  }
  return out;
}

LayoutResult simulate_layout(const AttnProblem& p, const Machine& m, const Tiling& t, const Options& o,
                             const LayoutModel& lm) {
  if (auto e = p.validate()) throw SimError(*e);
  if (auto e = check_fits(p, m, t, o.pass)) throw SimError(*e);
  return simulate_layout_unchecked(p, m, t, o, lm);
}

}  // namespace ioattn::sim

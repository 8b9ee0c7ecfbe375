// simulator/nest.cpp: walk a kernel's loop nest and count its traffic at HBM, L2 and LDS.
//
// Cost: O(outer blocks + waves) per kernel, never O(tiles): every (b, h) iteration of the grid has
// the same mask, so the per-CTA quantities are computed once per head ("local CTAs"), and the wave
// model combines them with prefix sums. This is what makes a full sweep run in well under a second
// (bench_sweep.cpp).
#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <map>

#include "simulator/nest.hpp"

namespace ioattn::sim::detail {

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Fully masked rows form a prefix of the query rows (mask.hpp: key_end can only be clipped to 0 at
// the start); the first row that sees a key, found by bisection.
int64_t first_visible_row(const MaskSpec& m) {
  int64_t lo = 0, hi = m.seqlen_q;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (m.row_fully_masked(mid)) lo = mid + 1; else hi = mid;
  }
  return lo;
}

// First row i in [0, N_q] with pred(i) true, for a predicate that is false then true.
template <class Pred>
int64_t first_row(int64_t nq, Pred pred) {
  int64_t lo = 0, hi = nq;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (pred(mid)) hi = mid; else lo = mid + 1;
  }
  return lo;
}

}  // namespace

BlockRange visible_inner_blocks(const MaskSpec& m, bool outer_is_q, int64_t Br, int64_t Bc,
                                int64_t o) {
  if (outer_is_q) {
    // Query block o: rows [i0, i1). Its rows see the contiguous key range
    // [key_begin(first unmasked row), key_end(last row)) because both bounds are non-decreasing.
    const int64_t i0 = o * Br, i1 = std::min(m.seqlen_q, i0 + Br);
    const int64_t first = std::max(i0, first_visible_row(m));
    if (first >= i1) return {0, 0};  // every row of the block is fully masked (a prefix of blocks)
    const int64_t kb = m.key_begin(first), ke = m.key_end(i1 - 1);
    if (ke <= kb) return {kb / Bc, kb / Bc};
    return {kb / Bc, ceil_div(ke, Bc)};
  }
  // Key block o: keys [j0, j1). The rows that see one of them are [i_lo, i_hi): key_end(i) > j0
  // and key_begin(i) < j1 (a row with key_end > j0 >= 0 is not fully masked).
  const int64_t j0 = o * Bc, j1 = std::min(m.seqlen_k, j0 + Bc);
  const int64_t i_lo = first_row(m.seqlen_q, [&](int64_t i) { return m.key_end(i) > j0; });
  const int64_t i_hi = first_row(m.seqlen_q, [&](int64_t i) { return m.key_begin(i) >= j1; });
  if (i_lo >= i_hi) return {i_lo / Br, i_lo / Br};
  return {i_lo / Br, ceil_div(i_hi, Br)};
}

namespace {

// Per-head ("local") view of one access: for every local CTA l = s * T_out + o, the rows it
// touches (count, as every global access, and span, for unions) in the tensor's row coordinate.
struct LocalAccess {
  std::vector<int64_t> cnt_prefix;   // prefix sums of rows touched (no-L2 count), size L + 1
  std::vector<int64_t> b, e;         // span [b, e) of each local CTA, monotone within a split
  std::vector<int64_t> g_prefix;     // prefix sums of new coverage g[l] (within a split), size L + 1
  std::vector<int64_t> anyvis_rows_prefix;  // outer-axis reads shared by splits: rows of block o if
                                            // any split of o is visible, prefix over o
  bool shared_across_splits = false;
  int64_t full_union = 0;            // rows touched by one head's whole grid (compulsory)
  int64_t row_bytes = 0;
};

struct Geometry {
  int64_t B_out, B_in, N_out, N_in, T_out, T_in, S, per_split, L;
};

// Rows of the union over a set of local CTAs given as sorted, disjoint ranges of o inside split s.
int64_t union_in_split(const LocalAccess& a, const Geometry& g, int64_t s,
                       const std::vector<std::pair<int64_t, int64_t>>& o_ranges) {
  int64_t total = 0;
  int64_t prev_e = std::numeric_limits<int64_t>::min();
  for (auto [lo, hi] : o_ranges) {
    if (hi <= lo) continue;
    const int64_t l0 = s * g.T_out + lo, l1 = s * g.T_out + hi;
    total += std::max<int64_t>(0, a.e[l0] - std::max(a.b[l0], prev_e));
    total += a.g_prefix[l1] - a.g_prefix[l0 + 1];
    prev_e = a.e[l1 - 1];
  }
  return total;
}

// Sort and merge index ranges.
void merge_ranges(std::vector<std::pair<int64_t, int64_t>>& r) {
  std::sort(r.begin(), r.end());
  std::vector<std::pair<int64_t, int64_t>> out;
  for (auto x : r) {
    if (x.second <= x.first) continue;
    if (!out.empty() && x.first <= out.back().second) out.back().second = std::max(out.back().second, x.second);
    else out.push_back(x);
  }
  r.swap(out);
}

// Rows of the union over local CTAs given as up to two ranges [l0, l1) of the local index (two
// when a GQA key's segment wraps from one query head into the next).
int64_t union_local(const LocalAccess& a, const Geometry& g,
                    const std::vector<std::pair<int64_t, int64_t>>& l_ranges) {
  if (a.shared_across_splits) {
    // Outer-axis tensor read by every split of a block (Q in split-KV): count each outer block
    // once if any of its splits is visible (exact when the set covers whole splits; see README).
    std::vector<std::pair<int64_t, int64_t>> o_ranges;
    for (auto [l0, l1] : l_ranges)
      for (int64_t s = l0 / g.T_out; s * g.T_out < l1; ++s) {
        const int64_t lo = std::max(l0, s * g.T_out) - s * g.T_out;
        const int64_t hi = std::min(l1, (s + 1) * g.T_out) - s * g.T_out;
        o_ranges.push_back({lo, hi});
      }
    merge_ranges(o_ranges);
    int64_t rows = 0;
    for (auto [lo, hi] : o_ranges) rows += a.anyvis_rows_prefix[hi] - a.anyvis_rows_prefix[lo];
    return rows;
  }
  // Inner-axis and split-private tensors: different splits touch disjoint rows.
  std::map<int64_t, std::vector<std::pair<int64_t, int64_t>>> by_split;
  for (auto [l0, l1] : l_ranges)
    for (int64_t s = l0 / g.T_out; s * g.T_out < l1; ++s) {
      const int64_t lo = std::max(l0, s * g.T_out) - s * g.T_out;
      const int64_t hi = std::min(l1, (s + 1) * g.T_out) - s * g.T_out;
      by_split[s].push_back({lo, hi});
    }
  int64_t rows = 0;
  for (auto& [s, r] : by_split) {
    merge_ranges(r);
    rows += union_in_split(a, g, s, r);
  }
  return rows;
}

void add_tensor(std::vector<TensorTraffic>& v, const std::string& name, int64_t eb, bool write,
                int64_t hbm, int64_t no_l2, int64_t comp) {
  auto it = std::find_if(v.begin(), v.end(), [&](const TensorTraffic& t) { return t.tensor == name; });
  if (it == v.end()) {
    v.push_back({name, eb, {}, {}, {}});
    it = v.end() - 1;
  }
  (write ? it->hbm.write : it->hbm.read) += hbm;
  (write ? it->hbm_no_l2.write : it->hbm_no_l2.read) += no_l2;
  (write ? it->hbm_compulsory.write : it->hbm_compulsory.read) += comp;
}

}  // namespace

KernelResult count_tiled(const AttnProblem& p, const Tiling& t, const TiledKernel& k,
                         int64_t compute_units, int64_t ctas_per_cu, int64_t llc_bytes, bool no_l2) {
  const MaskSpec mask = p.mask();
  Geometry g{};
  g.B_out = k.outer_is_q ? t.Br : t.Bc;
  g.B_in = k.outer_is_q ? t.Bc : t.Br;
  g.N_out = k.outer_is_q ? p.seqlen_q : p.seqlen_k;
  g.N_in = k.outer_is_q ? p.seqlen_k : p.seqlen_q;
  g.T_out = ceil_div(g.N_out, g.B_out);
  g.T_in = ceil_div(g.N_in, g.B_in);
  g.S = k.splits;
  g.per_split = ceil_div(g.T_in, g.S);
  g.L = g.S * g.T_out;  // local (s, o) pairs; a sequential kernel folds them into one CTA
  const int64_t d = p.head_dim;

  // --- The nest, one head: visible inner range of every (s, o). ---
  std::vector<BlockRange> vis(g.T_out);
  for (int64_t o = 0; o < g.T_out; ++o) vis[o] = visible_inner_blocks(mask, k.outer_is_q, t.Br, t.Bc, o);
  auto rows_out = [&](int64_t o) { return std::min(g.N_out, (o + 1) * g.B_out) - o * g.B_out; };
  auto range_of = [&](int64_t s, int64_t o) {
    const int64_t s_lo = std::min(g.T_in, s * g.per_split), s_hi = std::min(g.T_in, (s + 1) * g.per_split);
    const int64_t b = std::max(vis[o].begin, s_lo), e = std::min(vis[o].end, s_hi);
    if (e <= b) {
      const int64_t c = std::clamp(vis[o].begin, s_lo, s_hi);  // keeps spans monotone in o
      return BlockRange{c, c};
    }
    return BlockRange{b, e};
  };
  auto inner_rows = [&](BlockRange r) {
    return r.end > r.begin ? std::min(g.N_in, r.end * g.B_in) - r.begin * g.B_in : 0;
  };

  int64_t score_elems = 0, tile_rows = 0, outer_rows = 0;  // per head
  for (int64_t s = 0; s < g.S; ++s)
    for (int64_t o = 0; o < g.T_out; ++o) {
      const BlockRange r = range_of(s, o);
      score_elems += rows_out(o) * inner_rows(r);
      tile_rows += rows_out(o) * (r.end - r.begin);
      outer_rows += rows_out(o);
    }

  // --- Per access: local counts and spans. ---
  std::vector<LocalAccess> local(k.accesses.size());
  for (size_t ai = 0; ai < k.accesses.size(); ++ai) {
    const TiledAccess& a = k.accesses[ai];
    LocalAccess& la = local[ai];
    la.row_bytes = a.width * a.elem_bytes;
    la.shared_across_splits = a.outer_axis && !a.split_private && g.S > 1;
    la.cnt_prefix.assign(g.L + 1, 0);
    la.b.assign(g.L, 0);
    la.e.assign(g.L, 0);
    la.g_prefix.assign(g.L + 1, 0);
    for (int64_t s = 0; s < g.S; ++s)
      for (int64_t o = 0; o < g.T_out; ++o) {
        const int64_t l = s * g.T_out + o;
        const BlockRange r = range_of(s, o);
        const bool visible = r.end > r.begin;
        int64_t cnt = 0, b = 0, e = 0;
        if (a.outer_axis) {
          // Outer tile o: read when the CTA has work, written always (outputs of empty blocks too).
          const int64_t base = (a.split_private ? s * g.N_out : 0) + o * g.B_out;
          const bool touched = a.write || visible;
          cnt = touched ? rows_out(o) : 0;
          b = base;
          e = touched ? base + rows_out(o) : base;
        } else {
          // Inner tiles: every visible one, once per outer block.
          const int64_t base = (a.split_private ? s * g.N_in : 0) + r.begin * g.B_in;
          cnt = inner_rows(r);
          b = base;
          e = base + cnt;
        }
        la.cnt_prefix[l + 1] = la.cnt_prefix[l] + cnt;
        la.b[l] = b;
        la.e[l] = e;
        const bool first_in_split = (o == 0);
        const int64_t gl = first_in_split ? std::max<int64_t>(0, e - b)
                                          : std::max<int64_t>(0, e - std::max(b, la.e[l - 1]));
        la.g_prefix[l + 1] = la.g_prefix[l] + gl;
      }
    if (la.shared_across_splits) {
      la.anyvis_rows_prefix.assign(g.T_out + 1, 0);
      for (int64_t o = 0; o < g.T_out; ++o) {
        bool any = a.write;
        for (int64_t s = 0; s < g.S && !any; ++s) any = range_of(s, o).end > range_of(s, o).begin;
        la.anyvis_rows_prefix[o + 1] = la.anyvis_rows_prefix[o] + (any ? rows_out(o) : 0);
      }
      la.full_union = la.anyvis_rows_prefix[g.T_out];
    } else {
      la.full_union = union_local(la, g, {{0, g.L}});
    }
  }

  // --- Grid and waves. A sequential kernel (FA1) is one CTA per (b, h). ---
  const int64_t bh = p.batch * p.heads_q;
  const int64_t L_cta = k.sequential_outer ? 1 : g.L;
  const int64_t grid = bh * L_cta;
  const int64_t W = std::max<int64_t>(1, compute_units * ctas_per_cu);
  const int64_t waves = ceil_div(grid, W);

  KernelResult res;
  res.name = k.name;
  res.grid = grid;
  res.ctas_per_cu = ctas_per_cu;
  res.waves = waves;
  res.wave_efficiency = static_cast<double>(grid) / static_cast<double>(waves * W);

  const int64_t group = p.group_size();
  // Per access totals over all heads.
  std::vector<double> hbm_l2(k.accesses.size(), 0.0);
  std::vector<int64_t> nol2(k.accesses.size(), 0), comp(k.accesses.size(), 0);
  for (size_t ai = 0; ai < k.accesses.size(); ++ai) {
    const LocalAccess& la = local[ai];
    const int64_t instances = k.accesses[ai].heads == Heads::kv ? p.batch * p.heads_kv : bh;
    nol2[ai] = bh * la.cnt_prefix[g.L];
    comp[ai] = instances * la.full_union;
  }

  // The wave model. Wave w runs CTAs [w*W, (w+1)*W) in launch order (b, h, s, o). Per access, the
  // wave's rows split into
  //     union   distinct rows per tensor instance            (compulsory for the wave)
  //     shared  re-reads of rows another CTA of the wave read (union_cta - union)
  //     self    re-reads by the same CTA later in its loop   (count - union_cta; FA1's O, Q, m, l)
  // When the wave's working set WS (sum of unions) fits the cache C, every re-read hits. When it
  // does not, a self re-read comes back after the whole working set streamed by: it misses with
  // probability 1 - C/WS. Shared re-reads of CTAs that run the same number of tiles happen in
  // near lockstep (the same tile at about the same time), so they hit regardless of WS; with
  // unequal work (causal, windows) the CTAs drift apart and they miss like self re-reads:
  //     hbm = union + (self + (lockstep ? 0 : shared)) * (1 - min(1, C / WS)).
  // Checked against DRAM counters of FlashAttention-2 on the H200 (simulator/README.md).
  int fits_waves = 0, lockstep_waves = 0, exceed_waves = 0;
  // Lockstep: every CTA that has work runs the same number of tiles (FA1's one CTA per head does).
  bool lockstep = true;
  {
    int64_t tiles = -1;
    for (int64_t s = 0; s < g.S && !k.sequential_outer; ++s)
      for (int64_t o = 0; o < g.T_out; ++o) {
        const BlockRange r = range_of(s, o);
        const int64_t n = r.end - r.begin;
        if (n == 0) continue;
        if (tiles >= 0 && n != tiles) lockstep = false;
        tiles = n;
      }
  }
  if (!no_l2) {
    // A sequential CTA covers all local CTAs of its head.
    auto cta_to_local = [&](int64_t c) { return k.sequential_outer ? c * g.L : c; };
    // Whether a write access's tensor is also read in this kernel (counted once in the working set).
    std::vector<bool> skip_ws(k.accesses.size(), false);
    for (size_t ai = 0; ai < k.accesses.size(); ++ai)
      if (k.accesses[ai].write)
        for (const auto& other : k.accesses)
          if (!other.write && other.tensor == k.accesses[ai].tensor) skip_ws[ai] = true;
    std::vector<int64_t> uni(k.accesses.size()), cnt(k.accesses.size()), uni_cta(k.accesses.size());
    for (int64_t w = 0; w < waves; ++w) {
      const int64_t c0 = cta_to_local(w * W), c1 = cta_to_local(std::min(grid, (w + 1) * W));
      double ws = 0.0;
      for (size_t ai = 0; ai < k.accesses.size(); ++ai) {
        const LocalAccess& la = local[ai];
        const int64_t key_ctas = (k.accesses[ai].heads == Heads::kv ? group : 1) * g.L;
        auto cum = [&](int64_t c) { return (c / g.L) * la.cnt_prefix[g.L] + la.cnt_prefix[c % g.L]; };
        cnt[ai] = cum(c1) - cum(c0);
        // Union over the keys (tensor instances) the wave touches.
        auto segment_union = [&](int64_t u0, int64_t u1) -> int64_t {  // local offsets in one key
          if (u1 - u0 >= g.L) return la.full_union;
          const int64_t l0 = u0 % g.L, l1 = l0 + (u1 - u0);
          if (l1 <= g.L) return union_local(la, g, {{l0, l1}});
          return union_local(la, g, {{l0, g.L}, {0, l1 - g.L}});
        };
        const int64_t k_first = c0 / key_ctas, k_last = (c1 - 1) / key_ctas;
        int64_t u = 0;
        if (k_first == k_last) {
          u = segment_union(c0 - k_first * key_ctas, c1 - k_first * key_ctas);
        } else {
          u += segment_union(c0 - k_first * key_ctas, key_ctas);
          u += (k_last - k_first - 1) * la.full_union;
          u += segment_union(0, c1 - k_last * key_ctas);
        }
        uni[ai] = u;
        // Distinct rows per CTA, summed: a non-sequential CTA touches each row once; a sequential
        // CTA (FA1) touches its head's whole union.
        const int64_t ctas = std::min(grid, (w + 1) * W) - w * W;
        uni_cta[ai] = k.sequential_outer ? ctas * la.full_union : cnt[ai];
        if (!skip_ws[ai]) ws += static_cast<double>(u * la.row_bytes);
      }
      const double cap = static_cast<double>(llc_bytes);
      const double miss = ws <= cap ? 0.0 : 1.0 - cap / ws;
      bool charged = false;
      for (size_t ai = 0; ai < k.accesses.size(); ++ai) {
        const double rb = static_cast<double>(local[ai].row_bytes);
        const auto self = static_cast<double>(cnt[ai] - uni_cta[ai]);
        const auto shared = static_cast<double>(uni_cta[ai] - uni[ai]);
        const double missed = (self + (lockstep ? 0.0 : shared)) * miss;
        charged = charged || missed > 0.0;
        hbm_l2[ai] += rb * (static_cast<double>(uni[ai]) + missed);
      }
      (ws <= cap ? fits_waves : (charged ? exceed_waves : lockstep_waves))++;
    }
    const int kinds = (fits_waves > 0) + (lockstep_waves > 0) + (exceed_waves > 0);
    res.l2_regime = kinds > 1 ? "mixed" : (exceed_waves ? "exceeds" : (lockstep_waves ? "lockstep" : "fits"));
  } else {
    res.l2_regime = "no-l2";
  }

  for (size_t ai = 0; ai < k.accesses.size(); ++ai) {
    const TiledAccess& a = k.accesses[ai];
    const int64_t rb = local[ai].row_bytes;
    const int64_t nb = nol2[ai] * rb, cb = comp[ai] * rb;
    const int64_t hb = no_l2 ? nb : static_cast<int64_t>(std::llround(hbm_l2[ai]));
    add_tensor(res.tensors, a.tensor, a.elem_bytes, a.write, hb, nb, cb);
    (a.write ? res.hbm_no_l2.write : res.hbm_no_l2.read) += nb;
    (a.write ? res.hbm_compulsory.write : res.hbm_compulsory.read) += cb;
    (a.write ? res.hbm.write : res.hbm.read) += hb;
    // LDS: a staged tile is written once per global load and read lds_uses times per visible tile.
    if (!a.write && a.lds_uses > 0) {
      res.lds.write += nb;
      const int64_t per_tile_rows = a.outer_axis ? tile_rows : nol2[ai] / bh;
      res.lds.read += bh * per_tile_rows * rb * a.lds_uses;
    }
  }
  res.l2 = res.hbm_no_l2;  // every global access is an L2 request
  for (const auto& im : k.lds_intermediates) {
    res.lds.write += bh * score_elems * im.elem_bytes;
    res.lds.read += bh * score_elems * im.elem_bytes * im.reads_per_tile;
  }
  const double dbh = static_cast<double>(bh), dd = static_cast<double>(d);
  res.matrix_flops = dbh * 2.0 * k.matmuls_per_tile * dd * static_cast<double>(score_elems);
  res.other_flops = dbh * (k.other_per_score * static_cast<double>(score_elems) +
                           k.other_per_row_d_tile * static_cast<double>(tile_rows) * dd +
                           k.other_per_row_d_outer * static_cast<double>(outer_rows) * dd);
  res.l2_hit_rate = res.l2.read > 0 ? 1.0 - static_cast<double>(res.hbm.read) / static_cast<double>(res.l2.read) : 0.0;
  return res;
}

KernelResult count_stream(const AttnProblem& p, const StreamKernel& k, int64_t compute_units,
                          int64_t llc_bytes, bool no_l2) {
  KernelResult res;
  res.name = k.name;
  const int64_t bh = p.batch * p.heads_q;
  res.grid = k.ctas_per_head * bh;
  res.ctas_per_cu = 1;
  res.waves = ceil_div(res.grid, compute_units);
  res.wave_efficiency = static_cast<double>(res.grid) / static_cast<double>(res.waves * compute_units);
  bool broadcast = false, exceeded = false;
  for (const auto& a : k.accesses) {
    const int64_t inst_bytes = a.rows * a.width * a.elem_bytes;
    const int64_t instances = a.heads == Heads::q ? bh : (a.heads == Heads::kv ? p.batch * p.heads_kv : 1);
    // A write lands once per instance; a read happens once per (b, query head) iteration, so a
    // K/V head (GQA) or a broadcast mask is re-read by every query head that uses it.
    const int64_t nb = a.write ? instances * inst_bytes : bh * inst_bytes;
    const int64_t cb = instances * inst_bytes;
    int64_t hb = nb;
    if (!no_l2 && !a.write && instances < bh) {
      broadcast = true;
      // The re-reads hit the cache when one instance fits it (consecutive heads share it).
      if (inst_bytes <= llc_bytes) hb = cb; else exceeded = true;
    }
    add_tensor(res.tensors, a.tensor, a.elem_bytes, a.write, hb, nb, cb);
    (a.write ? res.hbm.write : res.hbm.read) += hb;
    (a.write ? res.hbm_no_l2.write : res.hbm_no_l2.read) += nb;
    (a.write ? res.hbm_compulsory.write : res.hbm_compulsory.read) += cb;
  }
  res.l2 = res.hbm_no_l2;
  res.lds.read = res.lds.write = bh * k.lds_bytes_per_head;
  res.matrix_flops = static_cast<double>(bh) * k.matrix_flops_per_head;
  res.other_flops = static_cast<double>(bh) * k.other_flops_per_head;
  res.l2_regime = no_l2 ? "no-l2" : (!broadcast ? "streaming" : (exceeded ? "exceeds" : "fits"));
  res.l2_hit_rate = res.l2.read > 0 ? 1.0 - static_cast<double>(res.hbm.read) / static_cast<double>(res.l2.read) : 0.0;
  return res;
}

}  // namespace ioattn::sim::detail

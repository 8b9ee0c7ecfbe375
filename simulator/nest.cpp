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
#include <string>

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

BlockRange visible_key_blocks(const MaskSpec& m, int64_t Bc, int64_t i0, int64_t i1) {
  // Rows [i0, i1) see the contiguous key range [key_begin(first unmasked row), key_end(last row))
  // because both bounds are non-decreasing.
  i1 = std::min(m.seqlen_q, i1);
  const int64_t first = std::max(i0, first_visible_row(m));
  if (first >= i1) return {0, 0};  // every row is fully masked (a prefix of the rows) or past seqlen_q
  const int64_t kb = m.key_begin(first), ke = m.key_end(i1 - 1);
  if (ke <= kb) return {kb / Bc, kb / Bc};
  return {kb / Bc, ceil_div(ke, Bc)};
}

BlockRange visible_inner_blocks(const MaskSpec& m, bool outer_is_q, int64_t Br, int64_t Bc,
                                int64_t o) {
  if (outer_is_q) return visible_key_blocks(m, Bc, o * Br, o * Br + Br);  // query block o
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
  // Outer-axis tensors read by every split of a block (Q in split-KV): rows of blocks [0, o)
  // (prefix over o) and, per split, the ranges of o whose CTA (s, o) touches the tensor.
  std::vector<int64_t> rows_prefix;
  std::vector<std::vector<std::pair<int64_t, int64_t>>> touched;
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
    // Outer-axis tensor read by every split of a block (Q in split-KV): block o counts once if
    // any CTA (s, o) of the set touches it.
    std::vector<std::pair<int64_t, int64_t>> o_ranges;
    for (auto [l0, l1] : l_ranges)
      for (int64_t s = l0 / g.T_out; s * g.T_out < l1; ++s) {
        const int64_t lo = std::max(l0, s * g.T_out) - s * g.T_out;
        const int64_t hi = std::min(l1, (s + 1) * g.T_out) - s * g.T_out;
        for (auto [t0, t1] : a.touched[s])
          if (std::max(lo, t0) < std::min(hi, t1)) o_ranges.push_back({std::max(lo, t0), std::min(hi, t1)});
      }
    merge_ranges(o_ranges);
    int64_t rows = 0;
    for (auto [lo, hi] : o_ranges) rows += a.rows_prefix[hi] - a.rows_prefix[lo];
    return rows;
  }
  // Inner-axis and split-private tensors: different splits touch disjoint rows.
  if (l_ranges.size() == 1) {  // the common case: one range; whole splits and a partial one each end
    const auto [l0, l1] = l_ranges[0];
    if (l1 <= l0) return 0;
    const int64_t s0 = l0 / g.T_out, s1 = (l1 - 1) / g.T_out;
    if (s0 == s1) return union_in_split(a, g, s0, {{l0 - s0 * g.T_out, l1 - s0 * g.T_out}});
  }
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

// The CTAs of one wave, as pieces: every head in [h0, h1) runs the local CTAs l = s * T_out + o
// of `ranges` (half-open ranges of l; they may overlap between pieces, never within one).
struct Piece {
  int64_t h0 = 0, h1 = 0;
  std::vector<std::pair<int64_t, int64_t>> ranges;
};

// A contiguous range [y0, y1) of the per-head dispatch coordinate y of `order` as ranges of the
// local index l = s * T_out + o. bh_major and qblock_major number l itself; bh_major_splits numbers
// y = o * S + s; qblock_major_rev numbers y = s * T_out + (T_out - 1 - o).
std::vector<std::pair<int64_t, int64_t>> local_ranges(GridOrder order, const Geometry& g, int64_t y0, int64_t y1) {
  std::vector<std::pair<int64_t, int64_t>> r;
  if (y1 <= y0) return r;
  switch (order) {
    case GridOrder::bh_major:
    case GridOrder::qblock_major:
      r.push_back({y0, y1});
      break;
    case GridOrder::bh_major_splits:
      // y = o * S + s lies in [y0, y1) iff ceil((y0 - s) / S) <= o < ceil((y1 - s) / S).
      for (int64_t s = 0; s < g.S; ++s) {
        const int64_t lo = y0 <= s ? 0 : (y0 - s + g.S - 1) / g.S;
        const int64_t hi = y1 <= s ? 0 : (y1 - s + g.S - 1) / g.S;
        if (hi > lo) r.push_back({s * g.T_out + lo, s * g.T_out + hi});
      }
      break;
    case GridOrder::qblock_major_rev:
      for (int64_t s = y0 / g.T_out; s * g.T_out < y1; ++s) {
        const int64_t a = std::max(y0, s * g.T_out) - s * g.T_out, b = std::min(y1, (s + 1) * g.T_out) - s * g.T_out;
        if (b > a) r.push_back({s * g.T_out + g.T_out - b, s * g.T_out + g.T_out - a});
      }
      break;
  }
  return r;
}

// The pieces of the CTAs [c0, c1) of the dispatch order, for a grid of `heads` heads with
// `per_head` CTAs each (1 for a sequential kernel, whose one CTA covers every local index).
std::vector<Piece> wave_pieces(GridOrder order, const Geometry& g, int64_t heads, bool sequential, int64_t c0,
                               int64_t c1) {
  std::vector<Piece> out;
  if (c1 <= c0) return out;
  if (sequential) {
    out.push_back({c0, c1, {{0, g.L}}});
    return out;
  }
  const int64_t L = g.L;
  if (order == GridOrder::bh_major || order == GridOrder::bh_major_splits) {
    // Head major: CTA c is head c / L, per-head coordinate c % L.
    const int64_t hf = c0 / L, y0 = c0 % L, hl = (c1 - 1) / L, y1 = (c1 - 1) % L + 1;
    if (hf == hl) {
      out.push_back({hf, hf + 1, local_ranges(order, g, y0, y1)});
    } else {
      out.push_back({hf, hf + 1, local_ranges(order, g, y0, L)});
      if (hl > hf + 1) out.push_back({hf + 1, hl, local_ranges(order, g, 0, L)});
      out.push_back({hl, hl + 1, local_ranges(order, g, 0, y1)});
    }
    return out;
  }
  // Block major (2-D grid, head fastest): CTA c is head c % heads at coordinate y = c / heads, so
  // head h runs y in [y0 + (h < r0), y1 + (h < r1)); the heads split into at most three pieces.
  const int64_t y0 = c0 / heads, r0 = c0 % heads, y1 = c1 / heads, r1 = c1 % heads;
  std::vector<int64_t> cuts{0, r0, r1, heads};
  std::sort(cuts.begin(), cuts.end());
  for (size_t i = 0; i + 1 < cuts.size(); ++i) {
    const int64_t a = cuts[i], b = cuts[i + 1];
    if (b <= a) continue;
    const int64_t lo = y0 + (a < r0 ? 1 : 0), hi = y1 + (a < r1 ? 1 : 0);
    if (hi > lo) out.push_back({a, b, local_ranges(order, g, lo, hi)});
  }
  return out;
}

// Distinct rows of one access over a wave's pieces, summed over tensor instances; an instance
// serves `group` consecutive heads (GQA's K and V), 1 otherwise.
int64_t piece_union(const LocalAccess& la, const Geometry& g, const std::vector<std::pair<int64_t, int64_t>>& r) {
  if (r.size() == 1 && r[0].first == 0 && r[0].second == g.L) return la.full_union;  // a whole head
  return union_local(la, g, r);
}

int64_t wave_union(const LocalAccess& la, const Geometry& g, const std::vector<Piece>& pieces, int64_t group) {
  int64_t u = 0;
  if (group == 1) {
    for (const Piece& pc : pieces) u += (pc.h1 - pc.h0) * piece_union(la, g, pc.ranges);
    return u;
  }
  std::vector<int64_t> edge;  // instances with heads in more than one piece, or partly in the wave
  for (const Piece& pc : pieces) {
    const int64_t first = (pc.h0 + group - 1) / group, last = pc.h1 / group;  // instances inside pc
    if (last > first) u += (last - first) * piece_union(la, g, pc.ranges);
    if (pc.h0 % group != 0) edge.push_back(pc.h0 / group);
    if (pc.h1 % group != 0) edge.push_back((pc.h1 - 1) / group);
  }
  std::sort(edge.begin(), edge.end());
  edge.erase(std::unique(edge.begin(), edge.end()), edge.end());
  for (int64_t inst : edge) {
    std::vector<std::pair<int64_t, int64_t>> r;
    for (const Piece& pc : pieces)
      if (pc.h0 < (inst + 1) * group && pc.h1 > inst * group) r.insert(r.end(), pc.ranges.begin(), pc.ranges.end());
    u += union_local(la, g, r);
  }
  return u;
}

// Tensor instances a wave's pieces touch (an instance of a K/V access serves `group` consecutive
// query heads; a shared tensor is one instance).
int64_t wave_instances(const std::vector<Piece>& pieces, Heads heads, int64_t group) {
  std::vector<std::pair<int64_t, int64_t>> r;
  const int64_t per = heads == Heads::kv ? group : 1;
  for (const Piece& pc : pieces)
    if (!pc.ranges.empty() && pc.h1 > pc.h0) r.push_back({pc.h0 / per, (pc.h1 - 1) / per + 1});
  if (heads == Heads::shared) return r.empty() ? 0 : 1;
  merge_ranges(r);
  int64_t n = 0;
  for (auto [lo, hi] : r) n += hi - lo;
  return n;
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
                         int64_t compute_units, int64_t ctas_per_cu, int64_t llc_bytes, bool no_l2,
                         int64_t sharing_ctas_per_cu, double drift_tiles_per_tile) {
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
  // A visible range cut to split s's inner blocks.
  auto clip_to_split = [&](int64_t s, BlockRange v) {
    const int64_t s_lo = std::min(g.T_in, s * g.per_split), s_hi = std::min(g.T_in, (s + 1) * g.per_split);
    const int64_t b = std::max(v.begin, s_lo), e = std::min(v.end, s_hi);
    if (e <= b) {
      const int64_t c = std::clamp(v.begin, s_lo, s_hi);  // keeps spans monotone in o
      return BlockRange{c, c};
    }
    return BlockRange{b, e};
  };
  auto range_of = [&](int64_t s, int64_t o) { return clip_to_split(s, vis[o]); };
  auto inner_rows = [&](BlockRange r) {
    return r.end > r.begin ? std::min(g.N_in, r.end * g.B_in) - r.begin * g.B_in : 0;
  };

  int64_t score_elems = 0, tile_rows = 0, outer_rows = 0, head_tiles = 0, max_tiles = 0;  // per head
  for (int64_t s = 0; s < g.S; ++s)
    for (int64_t o = 0; o < g.T_out; ++o) {
      const BlockRange r = range_of(s, o);
      score_elems += rows_out(o) * inner_rows(r);
      tile_rows += rows_out(o) * (r.end - r.begin);
      outer_rows += rows_out(o);
      head_tiles += r.end - r.begin;
      max_tiles = std::max(max_tiles, r.end - r.begin);
    }

  // Design rows=R (a forward Q-outer kernel whose consumers each own R rows of the query tile):
  // the compute visits of the row slices, slice q of block o rows [o Br + q h, o Br + (q + 1) h)
  // (h = min(R, Br)), each over the key blocks of split s that its own rows see; the slices of the
  // last block that lie past seqlen_q are not walked (visible_key_blocks clips at seqlen_q). Per
  // head, as above; the loads (the accesses below) keep the block's range.
  const int64_t slice_h = k.outer_is_q && !k.backward && t.design.consumer_rows > 0
                              ? std::min(t.design.consumer_rows, t.Br)
                              : 0;
  // (validate_tiling refuses a Br above R that is not a multiple of it.)
  int64_t slice_tiles = 0, slice_score = 0, max_slice_tiles = 0;  // per head
  if (slice_h > 0)
    for (int64_t s = 0; s < g.S; ++s)
      for (int64_t o = 0; o < g.T_out; ++o) {
        int64_t cta = 0;
        for (int64_t i0 = o * t.Br; i0 < std::min(p.seqlen_q, (o + 1) * t.Br); i0 += slice_h) {
          const BlockRange r = clip_to_split(s, visible_key_blocks(mask, t.Bc, i0, i0 + slice_h));
          cta += r.end - r.begin;
          slice_score += (std::min(p.seqlen_q, i0 + slice_h) - i0) * inner_rows(r);
        }
        slice_tiles += cta;
        max_slice_tiles = std::max(max_slice_tiles, cta);
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
      la.rows_prefix.assign(g.T_out + 1, 0);
      for (int64_t o = 0; o < g.T_out; ++o) la.rows_prefix[o + 1] = la.rows_prefix[o] + rows_out(o);
      la.touched.assign(g.S, {});
      for (int64_t s = 0; s < g.S; ++s)
        for (int64_t o = 0; o < g.T_out; ++o) {
          const int64_t l = s * g.T_out + o;
          if (la.e[l] <= la.b[l]) continue;
          auto& r = la.touched[s];
          if (!r.empty() && r.back().second == o) r.back().second = o + 1; else r.push_back({o, o + 1});
        }
    }
    la.full_union = union_local(la, g, {{0, g.L}});
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
  res.tiles = bh * head_tiles;
  res.max_cta_tiles = k.sequential_outer ? head_tiles : max_tiles;
  res.score_elems = static_cast<double>(bh) * static_cast<double>(score_elems);
  res.slice_rows = slice_h;
  res.slice_tiles = bh * slice_tiles;
  res.max_cta_slice_tiles = k.sequential_outer ? slice_tiles : max_slice_tiles;
  res.slice_score_elems = static_cast<double>(bh) * static_cast<double>(slice_score);
  res.exp_per_score = k.exp_per_score;
  res.matmuls_per_tile = k.matmuls_per_tile;
  res.backward = k.backward;
  res.atomic_width = k.atomic_width;

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

  // The wave model. Wave w runs CTAs [w*W, (w+1)*W) in dispatch order (t.grid_order; bh_major:
  // (b, h, s, o)). Per access, the
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
  // Nothing is carried from one wave to the next. Under a block-major order the CTAs of a wave
  // belong to different heads, so K and V are shared only when a wave holds more CTAs than there
  // are heads.
  // Checked against DRAM counters of FlashAttention-2 on the H200 (simulator/README.md).
  int fits_waves = 0, lockstep_waves = 0, exceed_waves = 0, drift_waves = 0;
  // Lockstep: the CTAs that share K_j, V_j read them at about the same time. Unspecified walk: every
  // CTA that has work runs the same number of tiles (FA1's one CTA per head does). A walk from the
  // first visible block up (Design::walk, up) reads block j at step j - first, so CTAs of one split
  // that start at the same block are in step whatever their length (causal: all start at block 0);
  // a walk down from the last visible block (FlashAttention-2's forward) needs the same last block.
  bool lockstep = true;
  {
    // The walk describes a Q-outer forward's key loop; other kernels keep the length rule.
    const KvWalk walk = k.sequential_outer || !k.outer_is_q ? KvWalk::unspecified : t.design.walk;
    int64_t key = -1;  // the length rule compares across splits; a walk rule within each split
    for (int64_t s = 0; s < g.S && !k.sequential_outer; ++s) {
      if (walk != KvWalk::unspecified) key = -1;
      for (int64_t o = 0; o < g.T_out; ++o) {
        const BlockRange r = range_of(s, o);
        const int64_t n = r.end - r.begin;
        if (n == 0) continue;
        const int64_t v = walk == KvWalk::up ? r.begin : (walk == KvWalk::down ? r.end : n);
        if (key >= 0 && v != key) lockstep = false;
        key = v;
      }
    }
  }
  if (!no_l2) {
    // Whether a write access's tensor is also read in this kernel (counted once in the working set).
    std::vector<bool> skip_ws(k.accesses.size(), false);
    for (size_t ai = 0; ai < k.accesses.size(); ++ai)
      if (k.accesses[ai].write)
        for (const auto& other : k.accesses)
          if (!other.write && other.tensor == k.accesses[ai].tensor) skip_ws[ai] = true;
    std::vector<int64_t> uni(k.accesses.size()), cnt(k.accesses.size()), uni_cta(k.accesses.size());
    // The wave model's group: the CTAs that progress together (all co-resident ones, or one per CU
    // when co-resident CTAs are staggered).
    const int64_t sharing = sharing_ctas_per_cu > 0 ? std::min(sharing_ctas_per_cu, ctas_per_cu) : ctas_per_cu;
    const int64_t Ws = std::max<int64_t>(1, compute_units * sharing), l2_waves = ceil_div(grid, Ws);
    // Drift (drift_tiles_per_tile > 0, the catalog's calibrated_cta_drift_tiles_per_tile): lockstep
    // is kept by the hits themselves (a CTA that falls behind reads the tiles its group left in the
    // cache), so it holds only while the group's spread fits the cache. The co-resident CTAs of one
    // K/V stream (a tensor instance, per split) spread apart by drift_tiles_per_tile inner tiles per
    // tile their slot walked in the waves before this one (s_w = drift x tiles walked; an SM that ran
    // slow keeps its lag, and its next CTA starts late; wave 0 starts together), so the cache must
    // hold a live span of s_w inner tiles per stream, not one tile:
    //     WS_drift = sum over inner accesses of min(union, streams x s_w x B_in) rows
    // (outer tiles, Q and O, are touched once per CTA and are not live). When WS_drift > C the share
    // of the live span the cache cannot hold is re-read, as the cyclic rule charges self re-reads:
    //     shared x (1 - C / WS_drift)   (<= shared x (1 - C / WS), the rule of unequal CTAs).
    // WS_drift <= WS, so nothing changes where the wave fits C, in the first wave (s_0 = 0), where
    // no row is shared (one CTA per stream in the wave), or in a wave not in lockstep anyway.
    std::vector<int64_t> tiles_prefix(g.L + 1, 0);
    for (int64_t s = 0; s < g.S; ++s)
      for (int64_t o = 0; o < g.T_out; ++o) {
        const BlockRange r = range_of(s, o);
        tiles_prefix[s * g.T_out + o + 1] = tiles_prefix[s * g.T_out + o] + (r.end - r.begin);
      }
    const bool drift_on = drift_tiles_per_tile > 0.0 && lockstep && !k.sequential_outer;
    double walked = 0.0;  // tiles a slot walked in the waves before this one (their mean CTA)
    for (int64_t w = 0; w < l2_waves; ++w) {
      const int64_t c0 = w * Ws, c1 = std::min(grid, (w + 1) * Ws);
      const std::vector<Piece> pieces = wave_pieces(t.grid_order, g, bh, k.sequential_outer, c0, c1);
      double ws = 0.0;
      for (size_t ai = 0; ai < k.accesses.size(); ++ai) {
        const LocalAccess& la = local[ai];
        int64_t c = 0;
        for (const Piece& pc : pieces)
          for (auto [l0, l1] : pc.ranges) c += (pc.h1 - pc.h0) * (la.cnt_prefix[l1] - la.cnt_prefix[l0]);
        cnt[ai] = c;
        // Union over the keys (tensor instances) the wave touches.
        const int64_t u = wave_union(la, g, pieces, k.accesses[ai].heads == Heads::kv ? group : 1);
        uni[ai] = u;
        // Distinct rows per CTA, summed: a non-sequential CTA touches each row once; a sequential
        // CTA (FA1) touches its head's whole union.
        const int64_t ctas = c1 - c0;
        uni_cta[ai] = k.sequential_outer ? ctas * la.full_union : cnt[ai];
        if (!skip_ws[ai]) ws += static_cast<double>(u * la.row_bytes);
      }
      const double cap = static_cast<double>(llc_bytes);
      const double miss = ws <= cap ? 0.0 : 1.0 - cap / ws;
      bool drifted = false;
      double drift_miss = 0.0;
      if (drift_on) {
        int64_t tiles = 0;
        for (const Piece& pc : pieces)
          for (auto [l0, l1] : pc.ranges) tiles += (pc.h1 - pc.h0) * (tiles_prefix[l1] - tiles_prefix[l0]);
        const double mean_tiles = static_cast<double>(tiles) / static_cast<double>(std::max<int64_t>(1, c1 - c0));
        const double spread_rows = drift_tiles_per_tile * walked * static_cast<double>(g.B_in);
        walked += mean_tiles;
        if (ws > cap) {
          double ws_drift = 0.0;
          for (size_t ai = 0; ai < k.accesses.size(); ++ai) {
            const TiledAccess& a = k.accesses[ai];
            if (skip_ws[ai] || a.outer_axis) continue;  // outer tiles: touched once per CTA, not live
            const double streams = static_cast<double>(wave_instances(pieces, a.heads, group) * g.S);
            ws_drift += std::min(static_cast<double>(uni[ai]), streams * spread_rows) *
                        static_cast<double>(local[ai].row_bytes);
          }
          drifted = ws_drift > cap;
          drift_miss = drifted ? 1.0 - cap / ws_drift : 0.0;
        }
      }
      bool charged = false;
      for (size_t ai = 0; ai < k.accesses.size(); ++ai) {
        const double rb = static_cast<double>(local[ai].row_bytes);
        const auto self = static_cast<double>(cnt[ai] - uni_cta[ai]);
        const auto shared = static_cast<double>(uni_cta[ai] - uni[ai]);
        const double missed = self * miss + (!lockstep ? shared * miss : (drifted ? shared * drift_miss : 0.0));
        charged = charged || missed > 0.0;
        hbm_l2[ai] += rb * (static_cast<double>(uni[ai]) + missed);
      }
      (ws <= cap ? fits_waves : (drifted ? drift_waves : (charged ? exceed_waves : lockstep_waves)))++;
    }
    const int kinds = (fits_waves > 0) + (lockstep_waves > 0) + (exceed_waves > 0) + (drift_waves > 0);
    res.l2_regime = kinds > 1 ? "mixed"
                              : (exceed_waves ? "exceeds" : (drift_waves ? "drift" : (lockstep_waves ? "lockstep" : "fits")));
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
  const int64_t bh = p.batch * (k.over_kv_heads ? p.heads_kv : p.heads_q);  // iterations (heads of the grid)
  res.grid = k.ctas_per_head * bh;
  res.ctas_per_cu = 1;
  res.waves = ceil_div(res.grid, compute_units);
  res.wave_efficiency = static_cast<double>(res.grid) / static_cast<double>(res.waves * compute_units);
  bool broadcast = false, exceeded = false;
  for (const auto& a : k.accesses) {
    const int64_t inst_bytes = a.rows * a.width * a.elem_bytes;
    const int64_t instances = a.heads == Heads::q ? bh : (a.heads == Heads::kv ? p.batch * p.heads_kv : 1);
    // A write lands once per instance; a read happens once per iteration ((b, query head) unless
    // over_kv_heads), so a K/V head (GQA) or a broadcast mask is re-read by every query head that uses it.
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

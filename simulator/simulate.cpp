// simulator/simulate.cpp: problem x machine x tiling -> Result.
//
//   1. build the strategy's kernels as loop nests (strategies.cpp)
//   2. check every tiled kernel fits the machine (LDS per CTA, registers), derive its occupancy
//   3. count each kernel (nest.cpp): HBM (no-L2, L2-aware wave model, compulsory), L2, LDS, FLOPs
//   4. roofline per kernel: max(FLOPs / rate, bytes / bandwidth) / wave efficiency + launch
//   5. peak extra memory from the buffers' live ranges over the kernel sequence
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "simulator/layouts.hpp"
#include "simulator/nest.hpp"
#include "simulator/simulator.hpp"

namespace ioattn::sim {

namespace {
#define IOATTN_STRATEGY_ROW(id, order, fwd, bwd, tiles, splits, dq, unfused, sweep, text) \
  StrategyInfo{Strategy::id, #id, LoopOrder::order, fwd, bwd, tiles, splits, dq, unfused, sweep, text},
constexpr StrategyInfo kStrategies[] = {IOATTN_STRATEGIES(IOATTN_STRATEGY_ROW)};
#undef IOATTN_STRATEGY_ROW
constexpr bool table_in_enum_order() {
  for (size_t i = 0; i < std::size(kStrategies); ++i)
    if (static_cast<size_t>(kStrategies[i].strategy) != i) return false;
  return true;
}
static_assert(table_in_enum_order(), "kStrategies is indexed by Strategy");
}  // namespace

std::span<const StrategyInfo> strategies() { return kStrategies; }
const StrategyInfo& strategy_info(Strategy s) { return kStrategies[static_cast<size_t>(s)]; }
std::string strategy_names(std::string_view sep, bool (*pred)(const StrategyInfo&)) {
  std::string out;
  for (const auto& s : kStrategies) {
    if (pred && !pred(s)) continue;
    if (!out.empty()) out += sep;
    out += s.name;
  }
  return out;
}
std::vector<Strategy> default_sweep_strategies() {
  std::vector<Strategy> out;
  for (const auto& s : kStrategies)
    if (s.in_sweep) out.push_back(s.strategy);
  return out;
}
std::string_view strategy_name(Strategy s) { return strategy_info(s).name; }
std::optional<Strategy> parse_strategy(std::string_view s) {
  for (const auto& v : kStrategies)
    if (s == v.name) return v.strategy;
  return std::nullopt;
}
LoopOrder loop_order(Strategy s) { return strategy_info(s).loop_order; }
std::string_view loop_order_name(LoopOrder o) {
  switch (o) {
    case LoopOrder::unfused: return "unfused";
    case LoopOrder::kv_outer: return "kv-outer";
    case LoopOrder::q_outer: return "q-outer";
  }
  return "?";
}
std::string_view pass_name(Pass p) {
  switch (p) {
    case Pass::fwd: return "fwd";
    case Pass::bwd: return "bwd";
    case Pass::fwdbwd: return "fwdbwd";
  }
  return "?";
}
std::optional<Pass> parse_pass(std::string_view s) {
  for (auto v : {Pass::fwd, Pass::bwd, Pass::fwdbwd})
    if (s == pass_name(v)) return v;
  return std::nullopt;
}
std::string_view dq_mode_name(DqMode m) { return m == DqMode::atomic ? "atomic" : "separate"; }
std::string_view grid_order_name(GridOrder g) {
  switch (g) {
    case GridOrder::bh_major: return "bh_major";
    case GridOrder::bh_major_splits: return "bh_major_splits";
    case GridOrder::qblock_major: return "qblock_major";
    case GridOrder::qblock_major_rev: return "qblock_major_rev";
  }
  return "?";
}
std::optional<GridOrder> parse_grid_order(std::string_view s) {
  // A persistent grid walking its tiles in an order (kernels/tile_scheduler.hpp) runs the same waves
  // as the non-persistent grid dispatched in that order: the same GridOrder.
  if (s.starts_with("persistent_")) {
    s.remove_prefix(std::string_view("persistent_").size());
    // Head major with each head's query blocks heavy first: the heads of bh_major's waves (the
    // reversal within a head is not modeled).
    if (s == "bh_major_rev") return GridOrder::bh_major;
  }
  for (auto v : {GridOrder::bh_major, GridOrder::bh_major_splits, GridOrder::qblock_major, GridOrder::qblock_major_rev})
    if (s == grid_order_name(v)) return v;
  return std::nullopt;
}

std::string_view matrix_instr_name(MatrixInstr i) {
  switch (i) {
    case MatrixInstr::native: return "native";
    case MatrixInstr::fma: return "fma";
    case MatrixInstr::mma_sync: return "mma_sync";
    case MatrixInstr::wgmma: return "wgmma";
    case MatrixInstr::mfma: return "mfma";
  }
  return "?";
}
std::string_view overlap_name(Overlap o) {
  switch (o) {
    case Overlap::none: return "none";
    case Overlap::intra_warpgroup: return "intra-warpgroup";
    case Overlap::ping_pong: return "ping-pong";
    case Overlap::warp_specialized: return "warp-specialized";
  }
  return "?";
}
std::string_view lds_read_name(LdsRead l) { return l == LdsRead::fragments ? "fragments" : "scalar"; }
std::string design_name(const Design& d) {
  std::string s = fmt::format("{}/{}/{}", matrix_instr_name(d.instr), overlap_name(d.overlap), lds_read_name(d.lds));
  const DqPass& q = d.dq_pass;
  if (q.Br > 0) {
    auto tile = [](int64_t br, int64_t bc, int64_t ctas) {
      return ctas > 0 ? fmt::format("{}x{}@{}", br, bc, ctas) : fmt::format("{}x{}", br, bc);
    };
    s += fmt::format("/dq={},{}", grid_order_name(q.grid_order), tile(q.Br, q.Bc, q.ctas_per_cu));
    if (q.small_d > 0) s += fmt::format(",d<={}:{}", q.small_d, tile(q.small_Br, q.small_Bc, q.small_ctas_per_cu));
  }
  if (d.v_transpose_pass) s += "/vt-pass";
  if (d.walk != KvWalk::unspecified) s += d.walk == KvWalk::up ? "/walk=up" : "/walk=down";
  if (d.kv_inline) s += d.kv_compute_overlapped ? "/kv=inline-overlapped" : "/kv=inline";
  if (d.table_per_tile) s += "/table=tile";
  if (d.consumer_rows > 0) s += fmt::format("/rows={}", d.consumer_rows);
  return s;
}

namespace {
// "BRxBC" with both in [1, 4096]; false otherwise.
bool parse_tile(std::string_view s, int64_t& br, int64_t& bc) {
  const size_t x = s.find('x');
  if (x == std::string_view::npos) return false;
  auto num = [](std::string_view v, int64_t& out) {
    if (v.empty() || v.size() > 4) return false;
    out = 0;
    for (char ch : v) {
      if (ch < '0' || ch > '9') return false;
      out = out * 10 + (ch - '0');
    }
    return out >= 1 && out <= 4096;
  };
  return num(s.substr(0, x), br) && num(s.substr(x + 1), bc);
}

// The fourth design part, "dq=ORDER,BRxBC[@N][,d<=D:BRxBC[@N]]" (@N: resident CTAs per CU).
bool parse_dq_tile(std::string_view s, int64_t& br, int64_t& bc, int64_t& ctas) {
  const size_t at = s.find('@');
  int64_t unused = 0;
  if (at != std::string_view::npos && !parse_tile(std::string(s.substr(at + 1)) + "x1", ctas, unused)) return false;
  return parse_tile(s.substr(0, at), br, bc);
}
std::optional<DqPass> parse_dq_pass(std::string_view s) {
  if (s.substr(0, 3) != "dq=") return std::nullopt;
  s.remove_prefix(3);
  std::vector<std::string_view> items;
  for (size_t start = 0;;) {
    const size_t comma = s.find(',', start);
    items.push_back(s.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  if (items.size() < 2 || items.size() > 3) return std::nullopt;
  DqPass q;
  const auto order = parse_grid_order(items[0]);
  if (!order || !parse_dq_tile(items[1], q.Br, q.Bc, q.ctas_per_cu)) return std::nullopt;
  q.grid_order = *order;
  if (items.size() == 3) {
    const std::string_view it = items[2];
    const size_t colon = it.find(':');
    int64_t unused = 0;
    if (it.substr(0, 3) != "d<=" || colon == std::string_view::npos ||
        !parse_tile(std::string(it.substr(3, colon - 3)) + "x1", q.small_d, unused) ||
        !parse_dq_tile(it.substr(colon + 1), q.small_Br, q.small_Bc, q.small_ctas_per_cu))
      return std::nullopt;
  }
  return q;
}
}  // namespace
std::optional<Design> parse_design(std::string_view s, std::string* why) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    const size_t slash = s.find('/', start);
    parts.push_back(s.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start));
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  auto fail = [&](std::string msg) -> std::optional<Design> {
    if (why) *why = std::move(msg);
    return std::nullopt;
  };
  if (parts.size() > 9)
    return fail(fmt::format("design '{}' has more than 9 parts "
                            "(instr/overlap/lds[/dq=...][/vt-pass][/walk=...][/kv=inline[-overlapped]][/table=tile]"
                            "[/rows=R])", s));
  Design d;
  bool ok = false;
  for (auto v : {MatrixInstr::native, MatrixInstr::fma, MatrixInstr::mma_sync, MatrixInstr::wgmma, MatrixInstr::mfma})
    if (parts[0] == matrix_instr_name(v)) { d.instr = v; ok = true; }
  if (!ok) return fail(fmt::format("design '{}': instruction must be native, fma, mma_sync, wgmma or mfma", s));
  if (parts.size() > 1) {
    ok = false;
    for (auto v : {Overlap::none, Overlap::intra_warpgroup, Overlap::ping_pong, Overlap::warp_specialized})
      if (parts[1] == overlap_name(v)) { d.overlap = v; ok = true; }
    if (!ok)
      return fail(fmt::format("design '{}': overlap must be none, intra-warpgroup, ping-pong or warp-specialized", s));
  }
  if (parts.size() > 2) {
    if (parts[2] == "fragments") d.lds = LdsRead::fragments;
    else if (parts[2] == "scalar") d.lds = LdsRead::scalar;
    else return fail(fmt::format("design '{}': LDS reads must be fragments or scalar", s));
  }
  bool seen_dq = false;
  for (size_t i = 3; i < parts.size(); ++i) {
    if (parts[i] == "vt-pass" && !d.v_transpose_pass) {
      d.v_transpose_pass = true;
    } else if ((parts[i] == "walk=up" || parts[i] == "walk=down") && d.walk == KvWalk::unspecified) {
      d.walk = parts[i] == "walk=up" ? KvWalk::up : KvWalk::down;
    } else if ((parts[i] == "kv=inline" || parts[i] == "kv=inline-overlapped") && !d.kv_inline) {
      d.kv_inline = true;
      d.kv_compute_overlapped = parts[i] == "kv=inline-overlapped";
    } else if (parts[i] == "table=tile" && !d.table_per_tile) {
      d.table_per_tile = true;
    } else if (parts[i].substr(0, 5) == "rows=" && d.consumer_rows == 0) {
      int64_t rows = 0, unused = 0;
      if (!parse_tile(std::string(parts[i].substr(5)) + "x1", rows, unused))
        return fail(fmt::format("design '{}': the rows part must be rows=R (R in [1, 4096])", s));
      d.consumer_rows = rows;
    } else if (parts[i].substr(0, 3) == "dq=" && !seen_dq) {
      seen_dq = true;
      if (auto q = parse_dq_pass(parts[i])) d.dq_pass = *q;
      else return fail(fmt::format("design '{}': the dq part must be dq=ORDER,BRxBC[@N][,d<=D:BRxBC[@N]] "
                                   "(ORDER a grid order, numbers in [1, 4096])", s));
    } else {
      return fail(fmt::format("design '{}': part '{}' must be dq=..., vt-pass, walk=up, walk=down, kv=inline, "
                              "kv=inline-overlapped, table=tile or rows=R (each at most once)", s, parts[i]));
    }
  }
  return d;
}
MatrixInstr resolve_instr(MatrixInstr i, const Machine& m) {
  if (i != MatrixInstr::native) return i;
  if (m.vendor == "amd") return MatrixInstr::mfma;
  return m.arch == "sm_90" ? MatrixInstr::wgmma : MatrixInstr::mma_sync;
}

namespace {

constexpr int64_t kMaxTile = 4096;

void validate_tiling(const Tiling& t) {
  if (t.Br < 1 || t.Bc < 1 || t.Br > kMaxTile || t.Bc > kMaxTile)
    throw SimError(fmt::format("tile sizes must be in [1, {}] (got Br={}, Bc={})", kMaxTile, t.Br, t.Bc));
  if (t.splits < 1) throw SimError(fmt::format("--splits must be >= 1 (got {})", t.splits));
  if (t.splits > 1 && !strategy_info(t.strategy).takes_splits)
    throw SimError(fmt::format("--splits applies to --strategy {} only (got {} with {})",
                               strategy_names(" or ", [](const StrategyInfo& i) { return i.takes_splits; }),
                               t.splits, strategy_name(t.strategy)));
  if (t.ctas_per_cu < 0) throw SimError(fmt::format("--ctas-per-cu must be >= 0 (got {})", t.ctas_per_cu));
  if (t.stages < 0) throw SimError(fmt::format("--stages must be >= 0 (got {})", t.stages));
  const int64_t rows = t.design.consumer_rows;
  if (rows > 0 && t.Br > rows && t.Br % rows != 0)
    throw SimError(fmt::format("design part rows={} needs Br <= {} or a multiple of it (got Br={})", rows, rows, t.Br));
}

void validate_options(const Options& o) {
  if (!(o.dropout >= 0.0 && o.dropout < 1.0))
    throw SimError(fmt::format("--dropout must be in [0, 1) (got {})", o.dropout));
}

// Resident CTAs per CU for one footprint: 0 when one CTA does not fit.
int64_t occupancy_of(const Footprint& f, const Machine& m, int64_t requested, std::string* why) {
  const auto lds_cu = static_cast<int64_t>(m.lds_bytes_per_cu.value);
  const auto lds_cta = static_cast<int64_t>(m.lds_bytes_per_cta.value);
  const auto regs = static_cast<int64_t>(m.register_bytes_per_cu.value);
  const auto max_ctas = static_cast<int64_t>(m.max_ctas_per_cu.value);
  if (f.lds_bytes > lds_cta) {
    if (why) *why = fmt::format("needs {} bytes of LDS per CTA, {} allows {} (lds_bytes_per_cta)", f.lds_bytes, m.name, lds_cta);
    return 0;
  }
  if (f.register_bytes > regs) {
    if (why) *why = fmt::format("needs {} bytes of registers per CTA, {} has {} per CU", f.register_bytes, m.name, regs);
    return 0;
  }
  int64_t occ = max_ctas;
  if (f.lds_bytes > 0) occ = std::min(occ, lds_cu / f.lds_bytes);
  if (f.register_bytes > 0) occ = std::min(occ, regs / f.register_bytes);
  if (requested > 0) {
    if (requested > occ) {
      if (why) *why = fmt::format("--ctas-per-cu {} but only {} CTAs fit per CU on {} (LDS {} B, registers {} B per CTA)",
                                  requested, occ, m.name, f.lds_bytes, f.register_bytes);
      return 0;
    }
    return requested;
  }
  return occ;
}

// Rows that see at least one key, and keys seen by at least one row (both contiguous ranges).
std::pair<int64_t, int64_t> needed_rows(const MaskSpec& m) {
  int64_t lo = 0, hi = m.seqlen_q;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (m.row_fully_masked(mid)) lo = mid + 1; else hi = mid;
  }
  if (lo >= m.seqlen_q) return {0, 0};
  return {m.seqlen_q - lo, m.key_end(m.seqlen_q - 1) - m.key_begin(lo)};
}

// Compulsory HBM traffic of the problem (independent of strategy): every needed input row once,
// every output once (O in its output dtype: bf16/fp16 for FP8 inputs); a forward+backward writes
// O and LSE and reads them back.
Traffic problem_compulsory(const AttnProblem& p, Pass pass, bool writes_lse) {
  const auto [q_rows, k_rows] = needed_rows(p.mask());
  const int64_t e = static_cast<int64_t>(dtype_bytes(p.dtype)), d = p.head_dim;
  const int64_t eo = static_cast<int64_t>(dtype_bytes(p.output_dtype()));
  const int64_t bq = p.batch * p.heads_q, bk = p.batch * p.heads_kv;
  Traffic c;
  if (pass != Pass::bwd) {
    c.read += bq * q_rows * d * e + 2 * bk * k_rows * d * e;
    c.write += bq * p.seqlen_q * d * eo + (writes_lse ? bq * p.seqlen_q * 4 : 0);
  }
  if (pass != Pass::fwd) {
    // Q, K, V, O, dO (needed rows) and LSE in; dQ, dK, dV out (every row: zeros where masked).
    c.read += bq * q_rows * (3 * d * e + (writes_lse ? 4 : 0)) + 2 * bk * k_rows * d * e;
    c.write += bq * p.seqlen_q * d * e + 2 * bk * p.seqlen_k * d * e;
  }
  return c;
}

bool is_user_tensor(const std::string& n) {
  static const std::set<std::string> user{"Q", "K", "V", "O", "dO", "dQ", "dK", "dV"};
  return user.count(n) > 0;
}

// Peak extra device memory from live ranges. A buffer read by its first kernel existed before the
// plan (e.g. LSE or P saved by a forward); a buffer written by its last kernel is an output kept.
int64_t peak_extra_memory(const AttnProblem& p, const Tiling& t, const detail::Plan& plan) {
  struct Info { int64_t bytes = 0; int first = -1, last = -1; bool first_read = false, last_write = false; };
  std::map<std::string, Info> bufs;
  const int64_t bq = p.batch * p.heads_q, bk = p.batch * p.heads_kv;
  auto inst = [&](detail::Heads h) { return h == detail::Heads::q ? bq : (h == detail::Heads::kv ? bk : 1); };
  const int nk = static_cast<int>(plan.kernels.size());
  for (int ki = 0; ki < nk; ++ki) {
    const auto& k = plan.kernels[ki];
    std::map<std::string, std::pair<bool, bool>> touched;  // name -> (read, write)
    std::map<std::string, int64_t> size;
    if (k.tiled) {
      for (const auto& a : k.t.accesses) {
        const bool q_axis = a.outer_axis == k.t.outer_is_q;
        const int64_t rows = (q_axis ? p.seqlen_q : p.seqlen_k) * (a.split_private ? k.t.splits : 1);
        size[a.tensor] = std::max(size[a.tensor], inst(a.heads) * rows * a.width * a.elem_bytes);
        (a.write ? touched[a.tensor].second : touched[a.tensor].first) = true;
      }
    } else {
      for (const auto& a : k.s.accesses) {
        size[a.tensor] = std::max(size[a.tensor], inst(a.heads) * a.rows * a.width * a.elem_bytes);
        (a.write ? touched[a.tensor].second : touched[a.tensor].first) = true;
      }
    }
    for (const auto& [name, rw] : touched) {
      if (is_user_tensor(name)) continue;
      Info& b = bufs[name];
      b.bytes = std::max(b.bytes, size[name]);
      if (b.first < 0) { b.first = ki; b.first_read = rw.first; }
      b.last = ki;
      b.last_write = rw.second;
    }
  }
  (void)t;
  int64_t peak = 0;
  for (int ki = 0; ki < nk; ++ki) {
    int64_t live = 0;
    for (const auto& [name, b] : bufs) {
      const int start = b.first_read ? 0 : b.first;
      const int end = b.last_write ? nk - 1 : b.last;
      if (start <= ki && ki <= end) live += b.bytes;
    }
    peak = std::max(peak, live);
  }
  return peak;
}

// The dense matrix rate of the dtype (measured where the machine has it and `measured` is set).
// FP8 needs matrix_fp8: check_fp8 refuses an FP8 problem on a machine without it before this runs.
double matrix_rate(const Machine& m, DType dt, bool measured) {
  switch (dt) {
    case DType::fp16: return measured && m.measured_matrix_fp16 ? m.measured_matrix_fp16->value : m.matrix_fp16.value;
    case DType::bf16: return measured && m.measured_matrix_bf16 ? m.measured_matrix_bf16->value : m.matrix_bf16.value;
    case DType::fp32: return measured && m.measured_vector_fp32 ? m.measured_vector_fp32->value : m.matrix_fp32.value;
    case DType::fp8_e4m3: case DType::fp8_e5m2:
      if (measured && m.measured_matrix_fp8) return m.measured_matrix_fp8->value;
      if (m.matrix_fp8) return m.matrix_fp8->value;
      break;
  }
  return m.matrix_fp32.value;
}

// The FP8 rate the expected time prices a tile loop at: its instruction efficiencies were fitted against
// the datasheet 16-bit rates, so with measured ceilings (and both measured GEMM rates) FP8 runs at the
// datasheet bf16 rate times the measured FP8 / bf16 GEMM ratio (measured_matrix_fp8 / measured_matrix_bf16,
// a hardware ceiling, nothing fitted); otherwise, and for every other dtype, matrix_rate's datasheet value.
double expected_matrix_rate(const Machine& m, DType dt, bool measured) {
  const bool fp8 = dt == DType::fp8_e4m3 || dt == DType::fp8_e5m2;
  if (fp8 && measured && m.measured_matrix_fp8 && m.measured_matrix_bf16 && m.measured_matrix_bf16->value > 0.0)
    return m.matrix_bf16.value * m.measured_matrix_fp8->value / m.measured_matrix_bf16->value;
  return matrix_rate(m, dt, false);
}

void roofline(KernelResult& k, const Machine& m, DType dt, bool measured) {
  const double bw = measured && m.measured_bandwidth ? m.measured_bandwidth->value : m.hbm_bandwidth.value;
  const double eff = k.wave_efficiency > 0.0 ? k.wave_efficiency : 1.0;
  k.t_compute_s = (k.matrix_flops / matrix_rate(m, dt, measured) + k.other_flops / m.vector_fp32.value) / eff;
  k.t_memory_s = static_cast<double>(k.hbm.total()) / bw;
  const double launch = m.launch_overhead_s.value;
  const double busy = std::max(k.t_compute_s, k.t_memory_s);
  k.ceiling_time_s = busy + launch;
  k.time_s = k.ceiling_time_s;
  k.bound = launch > busy ? "launch" : (k.t_compute_s >= k.t_memory_s ? "compute" : "memory");
}

int64_t pad_to(int64_t x, int64_t g) { return (x + g - 1) / g * g; }

// The instruction's (M, N, K) granularity: a tile dimension is padded up to it. 8-bit inputs take
// twice the K per instruction (wgmma m64nNk32 e4m3/e5m2, mma.sync m16n8k32, v_mfma_f32_16x16x32_fp8).
struct Shape { int64_t m, n, k; };
Shape instr_shape(MatrixInstr i, DType dt) {
  const int64_t k8 = is_fp8(dt) ? 2 : 1;
  switch (i) {
    case MatrixInstr::wgmma: return {64, 8, 16 * k8};     // wgmma.mma_async m64nNk16 (k32), N a multiple of 8
    case MatrixInstr::mma_sync: return {16, 8, 16 * k8};  // mma.sync m16n8k16 (k32)
    case MatrixInstr::mfma: return {16, 16, 16 * k8};     // v_mfma_f32_16x16x16 bf16/fp16 (x32 fp8)
    default: return {1, 1, 1};                            // scalar FMAs
  }
}

// FP8 problems: forward only, on a machine with FP8 matrix units (a catalog matrix_fp8 rate).
void check_fp8(const AttnProblem& p, const Machine& m, const Options& o) {
  if (!is_fp8(p.dtype)) return;
  if (o.pass != Pass::fwd)
    throw SimError(fmt::format("dtype {} is forward only (got pass {})", dtype_name(p.dtype), pass_name(o.pass)));
  if (!m.matrix_fp8)
    throw SimError(fmt::format("machine {} ({}) has no FP8 matrix units (no matrix_fp8 in its machine file): dtype {} "
                               "is refused there", m.name, m.display_name, dtype_name(p.dtype)));
}

// The share of the dense matrix rate an instruction's attention loop reaches: calibrated where the
// machine was measured (the catalog's calibrated_* entries), else 1 (the mechanism alone).
// A backward tile loop (dK/dV kernel, dQ pass) takes the machine's calibrated_bwd_* entry of its
// instruction where there is one (its loop holds dK, dV or dQ accumulators beside S and dP and
// feeds transposed operands), else the forward loop's.
// A forward wgmma loop of the warp-specialized design (a TMA producer warp feeding consumer
// warpgroups that hold no load instructions and, under setmaxnreg, no spills: FlashAttention-3's
// structure, v08) takes the machine's calibrated_ws_wgmma_efficiency where there is one: its issue
// rate is not the intra-warpgroup loop's (v06, whose calibrated_wgmma_efficiency it would take).
// That efficiency is the one at head dim 128; with calibrated_ws_wgmma_head_dim_exponent g it scales
// as (d / 128)^g (at most 1): a tile's MMA work per score element is 2 d MACs (S = Q K^T runs d / 16
// k-steps, P V is d wide), so a larger d amortizes the consumer's per-tile issue and wait bubbles
// (the softmax handoff, the barrier waits) over more matrix work.
std::pair<double, const char*> instr_efficiency(MatrixInstr i, const Machine& m, bool backward, Overlap overlap,
                                                int64_t head_dim) {
  if (!backward && i == MatrixInstr::wgmma && overlap == Overlap::warp_specialized && m.calibrated_ws_wgmma_efficiency) {
    const double g = m.calibrated_ws_wgmma_head_dim_exponent ? m.calibrated_ws_wgmma_head_dim_exponent->value : 0.0;
    return {std::min(1.0, m.calibrated_ws_wgmma_efficiency->value * std::pow(static_cast<double>(head_dim) / 128.0, g)),
            "calibrated_ws_wgmma_efficiency"};
  }
  if (backward && i == MatrixInstr::wgmma && m.calibrated_bwd_wgmma_efficiency)
    return {m.calibrated_bwd_wgmma_efficiency->value, "calibrated_bwd_wgmma_efficiency"};
  if (backward && i == MatrixInstr::mma_sync && m.calibrated_bwd_mma_sync_efficiency)
    return {m.calibrated_bwd_mma_sync_efficiency->value, "calibrated_bwd_mma_sync_efficiency"};
  if (i == MatrixInstr::wgmma && m.calibrated_wgmma_efficiency)
    return {m.calibrated_wgmma_efficiency->value, "calibrated_wgmma_efficiency"};
  if (i == MatrixInstr::mma_sync && m.calibrated_mma_sync_efficiency)
    return {m.calibrated_mma_sync_efficiency->value, "calibrated_mma_sync_efficiency"};
  if (i == MatrixInstr::mfma && m.calibrated_mfma_efficiency)
    return {m.calibrated_mfma_efficiency->value, "calibrated_mfma_efficiency"};
  return {1.0, "none (uncalibrated: 1)"};
}

// Expected time of a tiled kernel, from named mechanisms (README "Expected time"). All work terms
// are in SM-seconds (the seconds one SM/CU is busy); the kernel's compute path is their per-tile
// combination for the design, spread over the CUs by the wave model:
//   per tile  c_mma  = 2 * matmuls * pad(Bo, M) pad(Bi, N) pad(d, K) / (rate / CUs * eta_instr)
//             c_soft = exp_per_score * Bo Bi / (sfu * clock) + fp32 ops / (vector_fp32 / 2 / CUs)
//             none: c_mma + c_soft; intra-warpgroup: c_mma / matmuls + max(c_mma (matmuls-1)/matmuls,
//             c_soft); ping-pong, warp-specialized: max(c_mma, c_soft); then max with LDS reads
//   compute   max(tiles * c_tile / CUs / wave_efficiency, occupancy * max_cta_tiles * c_tile)
//   (design rows=R: tiles, max_cta_tiles and Bo are the row slices' visits, slice_rows; README)
//   chain     (memory + phi * compute + page_visits * t_visit / CUs) / CTAs per CU: one CTA's serial
//             path, its bytes at the CU's bandwidth plus what of its own compute and page visits its
//             stream does not run under (phi: calibrated_inline_kv_exposed for a kv=inline design, else
//             0, also 0 for kv=inline-overlapped, whose tile compute runs under its stream; t_visit:
//             calibrated_page_visit_s); co-resident CTAs overlap their chains
//   kernel    launch + waves * cta_fixed + max(compute, memory, chain), memory = max(HBM bytes / bandwidth,
//             L2 bytes / L2 bandwidth)
void expected_tiled(KernelResult& k, const Machine& m, const AttnProblem& p, const Tiling& t, bool outer_is_q,
                    bool measured) {
  const double cus = m.compute_units.value, clock = m.clock_hz.value;
  const MatrixInstr instr = resolve_instr(t.design.instr, m);
  const Shape g = instr_shape(instr, p.dtype);
  // Design rows=R (KernelResult::slice_rows > 0): the tile work is that of the (row slice, key block)
  // visits of slice_rows x Bc, exact FLOPs the slices' score elements; `tiles` (the block's visits)
  // still counts the K/V ring's loads and the dQ atomics.
  const bool sliced = outer_is_q && k.slice_rows > 0;
  const int64_t bo = outer_is_q ? (sliced ? k.slice_rows : t.Br) : t.Bc, bi = outer_is_q ? t.Bc : t.Br, d = p.head_dim;
  const double tiles = static_cast<double>(k.tiles);
  const double work_tiles = sliced ? static_cast<double>(k.slice_tiles) : tiles;
  const double max_work_tiles = static_cast<double>(sliced ? k.max_cta_slice_tiles : k.max_cta_tiles);
  const double exact_flops = sliced && k.score_elems > 0 ? k.matrix_flops * k.slice_score_elems / k.score_elems
                                                         : k.matrix_flops;
  const int mm = std::max(1, k.matmuls_per_tile);
  // Matrix work per tile as the instruction computes it: the full Bo x Bi tile, each dimension
  // padded to the instruction's shape (S = Q K^T is Bo x Bi x d; P V is Bo x d x Bi).
  const double padded_macs = 0.5 * static_cast<double>(pad_to(bo, g.m) * pad_to(bi, g.n) * pad_to(d, g.k) +
                                                        pad_to(bo, g.m) * pad_to(d, g.n) * pad_to(bi, g.k));
  const double full_flops = work_tiles * 2.0 * mm * padded_macs;
  const bool fma = instr == MatrixInstr::fma;
  const auto [eta, eta_name] = fma ? std::pair<double, const char*>{1.0, "none"} : instr_efficiency(instr, m, k.backward, t.design.overlap, d);
  const double rate_cu = (fma ? m.vector_fp32.value : expected_matrix_rate(m, p.dtype, measured)) / cus * eta;
  const double t_matrix = exact_flops / rate_cu;           // SM-seconds, exact tile FLOPs
  const double t_partial = std::max(0.0, full_flops - exact_flops) / rate_cu;
  const double full_elems = work_tiles * static_cast<double>(bo * bi);
  const double exps = k.exp_per_score * full_elems;
  const double t_exp = exps / (m.sfu_per_cu_per_clock.value * clock);
  const double fill = k.score_elems > 0 ? full_elems / k.score_elems : 1.0;
  const double fp32_ops = std::max(0.0, k.other_flops * fill - exps);
  const double t_fp32 = fp32_ops / (m.vector_fp32.value / 2.0 / cus);  // an FMA is 2 of the datasheet's FLOPs
  const double lds_eff = t.design.lds == LdsRead::scalar
                             ? (m.calibrated_lds_scalar_efficiency ? m.calibrated_lds_scalar_efficiency->value : 1.0)
                             : 1.0;
  const double t_lds = static_cast<double>(k.lds.total()) / (m.lds_bytes_per_cu_per_clock.value * clock * lds_eff);
  const double c_mma = t_matrix + t_partial, c_soft = t_exp + t_fp32;
  double c_pipe = 0.0;
  switch (t.design.overlap) {
    case Overlap::none: c_pipe = c_mma + c_soft; break;
    case Overlap::intra_warpgroup: c_pipe = c_mma / mm + std::max(c_mma * (mm - 1) / mm, c_soft); break;
    case Overlap::ping_pong:
    case Overlap::warp_specialized: c_pipe = std::max(c_mma, c_soft); break;
  }
  // dQ by fp32 atomics (the K/V-outer backward): Bi x d atomic adds per visible tile, issued by the
  // warps that run the tile loop and completed by the L2 at the calibrated rate; on the compute
  // path (no design of the catalog hides them). 0 on a machine without the calibrated rate.
  const double atomic_adds = tiles * static_cast<double>(bi * k.atomic_width);
  const double atomic_rate = m.calibrated_atomic_adds_per_cu_per_clock ? m.calibrated_atomic_adds_per_cu_per_clock->value : 0.0;
  const double t_atomic = atomic_rate > 0.0 ? atomic_adds / (atomic_rate * clock) : 0.0;
  c_pipe += t_atomic;
  // The K/V ring of the warp-specialized design (its depth the launch's stages, Tiling::stages): a
  // stage is held from its load's issue to its consumers' release, the stage latency L beyond the
  // tile's compute c, so by Little's law one CTA's ring completes at most S tiles per L + occ c
  // and a CU's occ CTAs need at least (L / occ + c) / S per tile. A shallow ring (S = 2) whose tile
  // computes in less than L waits on it; a deep one hides it. Only where the launch's stages are
  // given and the machine has a calibrated stage latency.
  double t_ring = 0.0;
  if (t.design.overlap == Overlap::warp_specialized && t.stages > 0 && m.calibrated_ring_stage_latency_s &&
      tiles > 0) {
    const double occ = static_cast<double>(std::max<int64_t>(1, k.ctas_per_cu));
    const double ring = (tiles * m.calibrated_ring_stage_latency_s->value / occ + c_pipe) / static_cast<double>(t.stages);
    t_ring = std::max(0.0, ring - c_pipe);
  }
  c_pipe += t_ring;
  const double c_total = std::max(c_pipe, t_lds);  // SM-seconds of the whole kernel
  const double eff = k.wave_efficiency > 0.0 ? k.wave_efficiency : 1.0;
  const double spread = c_total / cus / eff;
  const double longest = work_tiles > 0 ? static_cast<double>(k.ctas_per_cu) * max_work_tiles * c_total / work_tiles
                                        : 0.0;
  const double t_compute = std::max(spread, longest);
  const double fixed = m.calibrated_cta_fixed_s ? m.calibrated_cta_fixed_s->value : 0.0;
  const double t_fixed = static_cast<double>(k.waves) * fixed;
  const double bw = measured && m.measured_bandwidth ? m.measured_bandwidth->value : m.hbm_bandwidth.value;
  const double t_hbm = static_cast<double>(k.hbm.total()) / bw;
  const double t_l2 = static_cast<double>(k.l2.total()) / m.l2_bandwidth.value;
  const double launch = m.launch_overhead_s.value;
  const double t_mem = std::max(t_hbm, t_l2);
  // The CTA's serial chain (kv=inline, page visits): resident CTAs per CU as the grid fills them (a
  // grid of fewer CTAs than slots leaves fewer per CU to overlap their chains).
  const double phi = t.design.kv_inline && !t.design.kv_compute_overlapped && m.calibrated_inline_kv_exposed
                         ? m.calibrated_inline_kv_exposed->value
                         : 0.0;
  const double t_visit = m.calibrated_page_visit_s ? m.calibrated_page_visit_s->value : 0.0;
  const double resident = std::clamp(static_cast<double>(k.grid) / cus, 1.0,
                                     static_cast<double>(std::max<int64_t>(1, k.ctas_per_cu)));
  const double t_exposed = phi * t_compute / resident;
  const double t_pages = static_cast<double>(t.page_visits) * t_visit / cus / resident;
  const double t_chain = t_mem / resident + t_exposed + t_pages;
  const double t_body = std::max({t_compute, t_mem, t_chain});
  k.time_s = launch + t_fixed + t_body;
  k.expected_bound = t_chain > std::max(t_compute, t_mem) ? "chain" : t_compute >= t_mem ? "compute" : "memory";
  if (launch + t_fixed > t_body) k.expected_bound = "launch";
  const double per_cu = 1.0 / cus;
  k.expected_terms = {
      {"matrix_issue", t_matrix * per_cu, eta_name, eta},
      {"partial_tiles", t_partial * per_cu, std::string("instruction shape ") + std::string(matrix_instr_name(instr)),
       static_cast<double>(g.m)},
      {"exp_sfu", t_exp * per_cu, "sfu_per_cu_per_clock", m.sfu_per_cu_per_clock.value},
      {"fp32_vector", t_fp32 * per_cu, "vector_fp32", m.vector_fp32.value},
      {"dq_atomics", t_atomic * per_cu, "calibrated_atomic_adds_per_cu_per_clock", atomic_rate},
      {"ring_latency", t_ring * per_cu, "calibrated_ring_stage_latency_s",
       m.calibrated_ring_stage_latency_s ? m.calibrated_ring_stage_latency_s->value : 0.0},
      {"overlap_hidden", (c_pipe - t_ring - t_atomic - c_mma - c_soft) * per_cu, std::string("overlap ") + std::string(overlap_name(t.design.overlap)), 0.0},
      {"lds", t_lds * per_cu, "lds_bytes_per_cu_per_clock", m.lds_bytes_per_cu_per_clock.value * lds_eff},
      {"wave_quantization", t_compute - c_total * per_cu, "compute_units", cus},
      {"cta_fixed", t_fixed, "calibrated_cta_fixed_s", fixed},
      {"kv_inline_exposed", t_exposed, "calibrated_inline_kv_exposed", phi},
      {"page_visits", t_pages, "calibrated_page_visit_s", t_visit},
      {"hbm", t_hbm, measured && m.measured_bandwidth ? "measured_bandwidth" : "hbm_bandwidth", bw},
      {"l2", t_l2, "l2_bandwidth", m.l2_bandwidth.value},
      {"launch", launch, "launch_overhead_s", launch},
  };
}

// A streaming kernel's expected time is its roofline (no tile loop to model).
void expected_stream(KernelResult& k, const Machine& m) {
  k.time_s = k.ceiling_time_s;
  k.expected_bound = k.bound;
  k.expected_terms = {{"stream_compute", k.t_compute_s, "matrix and vector rates", 0.0},
                      {"hbm", k.t_memory_s, "hbm bandwidth", 0.0},
                      {"launch", m.launch_overhead_s.value, "launch_overhead_s", m.launch_overhead_s.value}};
}

}  // namespace

Footprint footprint(const AttnProblem& p, const Tiling& t, Pass pass) {
  Options o;
  o.pass = pass;
  Footprint f;
  for (const auto& k : detail::build_plan(p, t, o).kernels)
    if (k.tiled) {
      f.lds_bytes = std::max(f.lds_bytes, k.t.footprint.lds_bytes);
      f.register_bytes = std::max(f.register_bytes, k.t.footprint.register_bytes);
    }
  return f;
}

int64_t occupancy(const AttnProblem& p, const Machine& m, const Tiling& t, Pass pass, std::string* why) {
  return occupancy_of(footprint(p, t, pass), m, t.ctas_per_cu, why);
}

std::optional<std::string> check_fits(const AttnProblem& p, const Machine& m, const Tiling& t, Pass pass) {
  Options o;
  o.pass = pass;
  for (const auto& k : detail::build_plan(p, t, o).kernels) {
    if (!k.tiled) continue;
    std::string why;
    const Tiling kt = detail::kernel_tiling(t, k.t);
    if (occupancy_of(k.t.footprint, m, kt.ctas_per_cu, &why) == 0)
      return fmt::format("tiling Br={} Bc={} does not fit: kernel {} {}", kt.Br, kt.Bc, k.t.name, why);
  }
  return std::nullopt;
}

BlockChoice paper_block_sizes(const AttnProblem& p, const Machine& m, Strategy s, Pass pass) {
  BlockChoice b;
  const int64_t e = static_cast<int64_t>(dtype_bytes(p.dtype)), d = p.head_dim;
  b.M_elems = static_cast<int64_t>(m.lds_bytes_per_cu.value) / e;
  const int64_t bc = (b.M_elems + 4 * d - 1) / (4 * d);
  b.Bc = std::max<int64_t>(1, bc);
  b.Br = std::max<int64_t>(1, std::min(bc, d));
  Tiling t;
  t.strategy = s;
  t.Br = b.Br;
  t.Bc = b.Bc;
  b.fits = !check_fits(p, m, t, pass).has_value();
  b.rule = fmt::format("FlashAttention rule: M = {} elements of LDS per CU, Bc = ceil(M/4d) = {}, "
                       "Br = min(ceil(M/4d), d) = {}", b.M_elems, b.Bc, b.Br);
  return b;
}

BlockChoice search_block_sizes(const AttnProblem& p, const Machine& m, const Tiling& base, const Options& o) {
  BlockChoice best;
  double best_time = 0.0;
  int64_t best_hbm = 0;
  for (int64_t br : {16, 32, 64, 128, 256})
    for (int64_t bc : {16, 32, 64, 128, 256}) {
      Tiling t = base;
      t.Br = br;
      t.Bc = bc;
      if (check_fits(p, m, t, o.pass)) continue;
      const Result r = simulate_unchecked(p, m, t, o);
      const int64_t hbm = r.hbm.total();
      const bool better = best.Br == 0 || r.time_s < best_time * (1 - 1e-12) ||
                          (r.time_s <= best_time * (1 + 1e-12) &&
                           (hbm < best_hbm || (hbm == best_hbm && br * bc > best.Br * best.Bc)));
      if (better) {
        best.Br = br;
        best.Bc = bc;
        best_time = r.time_s;
        best_hbm = hbm;
      }
    }
  best.fits = best.Br > 0;
  best.rule = best.fits ? fmt::format("search over Br, Bc in {{16..256}}: least expected time {:.3g} s of the design "
                                      "(ties: least HBM traffic)", best_time)
                        : "search: no tile in {16..256}^2 fits";
  return best;
}

Result simulate_unchecked(const AttnProblem& p, const Machine& m, const Tiling& t, const Options& o) {
  if (auto e = p.validate()) throw SimError(*e);
  check_fp8(p, m, o);
  validate_tiling(t);
  validate_options(o);
  // Packed (varlen) batches and paged KV caches: per-sequence problems plus the layout's reads (layouts.cpp).
  if (!p.is_dense()) return simulate_layout_unchecked(p, m, t, o).result;
  const detail::Plan plan = detail::build_plan(p, t, o);
  Result r;
  r.problem = p;
  r.machine = m.name;
  r.tiling = t;
  r.options = o;
  const auto cus = static_cast<int64_t>(m.compute_units.value);
  const int64_t llc = m.llc_bytes();
  double main_time = -1.0, slowest = -1.0;
  for (const auto& pk : plan.kernels) {
    KernelResult k;
    if (pk.tiled) {
      // A requested occupancy is taken as given (e.g. one measured on the GPU, where the model's
      // footprint may disagree); simulate() refuses one that does not fit.
      const Tiling kt = detail::kernel_tiling(t, pk.t);  // a dQ pass of its own: its tile and grid
      const int64_t occ = kt.ctas_per_cu > 0 ? kt.ctas_per_cu
                                             : std::max<int64_t>(1, occupancy_of(pk.t.footprint, m, 0, nullptr));
      // Staggered co-resident CTAs: a design whose tile loop is bound by bank-conflicted LDS reads
      // (LdsRead::scalar) saturates the LDS pipe, and the co-resident CTAs of a CU then do not
      // progress together (the warp schedulers favour the older CTA's warps), so only CTAs in the
      // same slot of different CUs read K_j, V_j at about the same time: the L2 wave model's group
      // is one CTA per CU. A hypothesis fitted to no parameter; the evidence is v04's DRAM reads
      // (simulator/README.md, "The L2 model where it is weak").
      const bool staggered = occ > 1 && kt.design.lds == LdsRead::scalar;
      const double drift = m.calibrated_cta_drift_tiles_per_tile ? m.calibrated_cta_drift_tiles_per_tile->value : 0.0;
      k = detail::count_tiled(p, kt, pk.t, cus, occ, llc, o.no_l2, staggered ? 1 : 0, drift);
      if (pk.t.own_Br <= 0) r.ctas_per_cu = std::max(r.ctas_per_cu, occ);  // the main kernels' occupancy
    } else {
      k = detail::count_stream(p, pk.s, cus, llc, o.no_l2);
    }
    roofline(k, m, p.dtype, o.measured_ceilings);
    if (pk.tiled) expected_tiled(k, m, p, detail::kernel_tiling(t, pk.t), pk.t.outer_is_q, o.measured_ceilings);
    else expected_stream(k, m);
    // The ceiling is what no kernel beats: where the mechanisms alone say faster (an overlapped
    // design on a machine without calibrated efficiencies), the expected time is the ceiling, and
    // the term says by how much it was raised.
    const double raise = std::max(0.0, k.ceiling_time_s - k.time_s);
    k.expected_terms.push_back({"ceiling_floor", raise, "ceiling_time_s", k.ceiling_time_s});
    if (raise > 0.0) {
      k.time_s = k.ceiling_time_s;
      k.expected_bound = k.bound;
    }
    r.ceiling_time_s += k.ceiling_time_s;
    for (const auto& term : k.expected_terms) {
      auto it = std::find_if(r.expected_terms.begin(), r.expected_terms.end(),
                             [&](const ExpectedTerm& x) { return x.term == term.term; });
      if (it == r.expected_terms.end()) r.expected_terms.push_back(term);
      else it->seconds += term.seconds;
    }
    r.hbm += k.hbm;
    r.hbm_no_l2 += k.hbm_no_l2;
    r.l2 += k.l2;
    r.lds += k.lds;
    r.matrix_flops += k.matrix_flops;
    r.other_flops += k.other_flops;
    r.time_s += k.time_s;
    if (k.time_s > slowest) { slowest = k.time_s; r.bound = k.bound; r.expected_bound = k.expected_bound; }
    const double weight = k.time_s + (pk.tiled ? 1e9 : 0.0);  // the main kernel: tiled first, then slowest
    if (weight > main_time) { main_time = weight; r.l2_regime = k.l2_regime; }
    r.kernels.push_back(std::move(k));
  }
  // Every fused loop order writes the LSE; the unfused kernels keep P instead.
  r.hbm_compulsory = problem_compulsory(p, o.pass, loop_order(t.strategy) != LoopOrder::unfused);
  r.conventional_flops = conventional_flops(p, o.pass);
  r.extra_memory_bytes = peak_extra_memory(p, t, plan);
  return r;
}

Result simulate(const AttnProblem& p, const Machine& m, const Tiling& t, const Options& o) {
  if (auto e = p.validate()) throw SimError(*e);
  check_fp8(p, m, o);
  validate_tiling(t);
  validate_options(o);
  if (auto e = check_fits(p, m, t, o.pass)) throw SimError(*e);
  return simulate_unchecked(p, m, t, o);
}

}  // namespace ioattn::sim

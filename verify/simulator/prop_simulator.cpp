// verify/simulator/prop_simulator.cpp: the IO-cost simulator against its oracles.
//
//   trace_equals_model     the brute-force tile trace (trace.cpp) and the loop-nest model agree
//                          exactly, per kernel and tensor: every access (no-L2), distinct bytes
//                          (compulsory) and, for waves that fit the cache, the wave model's HBM
//                          count; odd sizes, causal, windows, GQA, split-KV, all passes, every
//                          grid order
//   closed_forms_no_l2     --no-l2 counts on tile-divisible sizes equal the closed forms derived in
//                          simulator/README.md (standard, fa1, fa2, split-KV, each backward)
//   never_below_compulsory HBM >= compulsory (problem level and per kernel); L2-aware <= no-L2
//   expected_time          expected >= ceiling, >= launch + per-CTA cost + memory per kernel; terms
//                          signed as documented; more overlap never slower
//   hbm_monotone           more LDS (paper-rule tiles) or more cache never increases HBM traffic
//   grid_orders            every dispatch order stays within [compulsory, no-L2] and changes no
//                          count but the L2-aware one; on unmasked MHA fa2 problems a block-major
//                          order (qblock_major, qblock_major_rev) never predicts less HBM traffic
//                          than bh_major for the same tiling
//   flops_convention       matrix FLOPs of a non-causal problem equal flops.hpp's convention
//                          (x2.5 backward, x3.5 forward+backward; standard's backward x2.0)
//   fitted_exponents       (unit) log-log slopes: standard ~ N^2, FlashAttention ~ N^2 d^2 / M
//   fp8                    an FP8 forward reads exactly half the bf16 problem's Q, K, V bytes (every
//                          strategy, no-L2 and compulsory) and writes the same bf16 O; its ceiling
//                          uses the machine's matrix_fp8 rate; a machine without one and an FP8
//                          backward are refused; the V transpose pass (design vt-pass) adds exactly
//                          2 B Hkv Nk d e bytes and one launch
//   consumer_rows          design rows=R (Design::consumer_rows): the row slices' compute visits
//                          equal a brute-force count over MaskSpec::allowed, their work never
//                          exceeds the block's and equals it unmasked with Nq a multiple of Br;
//                          traffic, block visits and FLOPs are unchanged
//   consumer_rows_cases    (unit) rows=R parses and round-trips; v08p's line has rows=64 and v08's
//                          none; hand-counted slice visits (causal and not, Br 192) and their times
// Each property prints `property NAME: N cases passed`.
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <rapidcheck.h>

#include "kernels/design.hpp"
#include "property.hpp"
#include "simulator/simulator.hpp"
#include "trace.hpp"

namespace {

using namespace ioattn;
using sim::Strategy;

// ------------------------------------------------------------------------------------------------
// Generators
// ------------------------------------------------------------------------------------------------

rc::Gen<AttnProblem> gen_small_problem(int64_t max_n) {
  return rc::gen::exec([max_n] {
    AttnProblem p;
    p.batch = *rc::gen::inRange<int64_t>(1, 3);
    p.heads_kv = *rc::gen::inRange<int64_t>(1, 3);
    p.heads_q = p.heads_kv * *rc::gen::element<int64_t>(1, 1, 2, 3);
    auto len = [max_n] {
      return *rc::gen::oneOf(rc::gen::element<int64_t>(1, 17, 64, 113),
                             rc::gen::inRange<int64_t>(1, max_n + 1));
    };
    p.seqlen_q = len();
    p.seqlen_k = *rc::gen::weightedOneOf<int64_t>({{2, rc::gen::just(p.seqlen_q)}, {1, rc::gen::just(len())}});
    p.head_dim = *rc::gen::element<int64_t>(1, 8, 59, 64, 128);
    p.dtype = *rc::gen::element(DType::fp32, DType::fp16, DType::bf16);
    p.causal = *rc::gen::arbitrary<bool>();
    auto bound = [] {
      return *rc::gen::weightedOneOf<int64_t>({{2, rc::gen::just<int64_t>(-1)}, {1, rc::gen::inRange<int64_t>(0, 41)}});
    };
    p.window_left = bound();
    p.window_right = bound();
    return p;
  });
}

// Every strategy of the table (IOATTN_STRATEGIES in simulator.hpp): a new row is generated here
// at once. The oracles (the closed forms below, trace.cpp's loops) are written per strategy.
sim::Strategy gen_strategy() {
  std::vector<Strategy> all;
  for (const auto& s : sim::strategies()) all.push_back(s.strategy);
  return *rc::gen::elementOf(all);
}
bool takes_splits(Strategy s) { return sim::strategy_info(s).takes_splits; }
Pass gen_pass() { return *rc::gen::element(Pass::fwd, Pass::bwd, Pass::fwdbwd); }
// Br and Bc among the sizes kernels use, and a split count where t.strategy takes one (drawn in
// that order).
void gen_tile(sim::Tiling& t) {
  t.Br = *rc::gen::element<int64_t>(16, 32, 64, 128);
  t.Bc = *rc::gen::element<int64_t>(16, 32, 64, 128);
  t.splits = takes_splits(t.strategy) ? *rc::gen::inRange<int64_t>(1, 9) : 1;
}

sim::GridOrder gen_grid_order() {
  return *rc::gen::element(sim::GridOrder::bh_major, sim::GridOrder::bh_major_splits, sim::GridOrder::qblock_major,
                           sim::GridOrder::qblock_major_rev);
}

// A machine made for the wave model: W CTAs in flight (one per CU), LDS and registers that fit any
// tile, and a cache of the given size.
sim::Machine test_machine(int64_t ctas_in_flight, double cache_bytes, double lds = 1e9) {
  auto s = [](double v) { return sim::Sourced{v, "test"}; };
  sim::Machine m;
  m.name = "test";
  m.display_name = "test machine";
  m.vendor = "none";
  m.arch = "none";
  m.compute_units = s(static_cast<double>(ctas_in_flight));
  m.wave_size = s(32);
  m.clock_hz = s(1e9);
  m.lds_bytes_per_cu = s(lds);
  m.lds_bytes_per_cta = s(lds);
  m.register_bytes_per_cu = s(1e12);
  m.max_ctas_per_cu = s(1);
  m.l2_bytes = s(cache_bytes);
  m.hbm_capacity_bytes = s(1e12);
  m.hbm_bandwidth = s(1e12);
  m.matrix_fp16 = m.matrix_bf16 = m.matrix_fp32 = m.vector_fp32 = s(1e14);
  m.launch_overhead_s = s(1e-6);
  return m;
}

const std::vector<sim::Machine>& catalog() {
  static const auto c = sim::load_catalog(sim::default_catalog_dir());
  return c;
}

std::string show(const AttnProblem& p, const sim::Tiling& t, Pass pass) {
  return fmt::format("B={} Hq={} Hkv={} Nq={} Nk={} d={} {} causal={} window=({},{}) {} Br={} Bc={} splits={} dq={} "
                     "order={} ctas_per_cu={} pass={}",
                     p.batch, p.heads_q, p.heads_kv, p.seqlen_q, p.seqlen_k, p.head_dim, dtype_name(p.dtype),
                     p.causal, p.window_left, p.window_right, sim::strategy_name(t.strategy), t.Br, t.Bc,
                     t.splits, sim::dq_mode_name(t.dq), sim::grid_order_name(t.grid_order), t.ctas_per_cu,
                     sim::pass_name(pass));
}

// ------------------------------------------------------------------------------------------------
// trace == model
// ------------------------------------------------------------------------------------------------

void trace_equals_model() {
  const AttnProblem p = *gen_small_problem(130);
  sim::Tiling t;
  t.strategy = gen_strategy();
  t.Br = *rc::gen::oneOf(rc::gen::inRange<int64_t>(1, 49), rc::gen::element<int64_t>(16, 32, 64, 128));
  t.Bc = *rc::gen::oneOf(rc::gen::inRange<int64_t>(1, 49), rc::gen::element<int64_t>(16, 32, 64, 128));
  t.splits = takes_splits(t.strategy) ? *rc::gen::inRange<int64_t>(1, 6) : 1;
  t.dq = *rc::gen::element(sim::DqMode::atomic, sim::DqMode::separate);
  t.grid_order = gen_grid_order();
  const Pass pass = gen_pass();
  const int64_t W = *rc::gen::inRange<int64_t>(1, 40);
  RC_TAG(sim::grid_order_name(t.grid_order));
  RC_CLASSIFY(p.causal, "causal");
  RC_CLASSIFY(p.window_left >= 0 || p.window_right >= 0, "window");
  RC_CLASSIFY(p.heads_q != p.heads_kv, "gqa");
  RC_CLASSIFY(p.seqlen_q != p.seqlen_k, "Nq!=Nk");

  sim::Options o;
  o.pass = pass;
  const sim::Machine m = test_machine(W, 1e15);
  const sim::Result model = sim::simulate_unchecked(p, m, t, o);
  o.no_l2 = true;
  const sim::Result model_nol2 = sim::simulate_unchecked(p, m, t, o);
  const auto traced = verify::trace::trace(p, t, pass);
  const std::string where = show(p, t, pass) + fmt::format(" W={}", W);

  if (traced.size() != model.kernels.size()) RC_FAIL("kernel count differs: " + where);
  for (size_t ki = 0; ki < traced.size(); ++ki) {
    const auto& tk = traced[ki];
    const auto& mk = model.kernels[ki];
    const auto& mk0 = model_nol2.kernels[ki];
    if (tk.name != mk.name) RC_FAIL(fmt::format("kernel {}: trace {} vs model {} ({})", ki, tk.name, mk.name, where));
    const auto counts = verify::trace::count(tk, W);
    if (counts.size() != mk.tensors.size())
      RC_FAIL(fmt::format("kernel {}: {} traced tensors vs {} modeled ({})", mk.name, counts.size(), mk.tensors.size(), where));
    for (const auto& mt : mk.tensors) {
      auto it = counts.find(mt.tensor);
      if (it == counts.end()) RC_FAIL(fmt::format("kernel {}: tensor {} not traced ({})", mk.name, mt.tensor, where));
      const auto& c = it->second;
      auto eq = [&](const char* what, const sim::Traffic& a, const sim::Traffic& b) {
        if (a.read != b.read || a.write != b.write)
          RC_FAIL(fmt::format("kernel {} tensor {} {}: trace {}/{} vs model {}/{} ({})", mk.name, mt.tensor, what,
                              a.read, a.write, b.read, b.write, where));
      };
      eq("no-l2", c.no_l2, mt.hbm_no_l2);
      eq("compulsory", c.compulsory, mt.hbm_compulsory);
      const auto* mt0 = &mk0.tensors[&mt - &mk.tensors[0]];
      eq("--no-l2 hbm", c.no_l2, mt0->hbm);
      // The wave model (cache large enough: every wave fits) against distinct rows per wave.
      if (tk.tiled) eq("wave model", c.per_wave, mt.hbm);
    }
  }
}

// ------------------------------------------------------------------------------------------------
// Closed forms (--no-l2, tile-divisible, MHA, no mask), per (batch, head), in bytes.
// ------------------------------------------------------------------------------------------------

void closed_forms_no_l2() {
  const int64_t Br = *rc::gen::element<int64_t>(16, 32, 64), Bc = *rc::gen::element<int64_t>(16, 32, 64);
  const int64_t N = 64 * *rc::gen::inRange<int64_t>(1, 9);
  AttnProblem p;
  p.batch = *rc::gen::inRange<int64_t>(1, 3);
  p.heads_q = p.heads_kv = *rc::gen::inRange<int64_t>(1, 4);
  p.seqlen_q = p.seqlen_k = N;
  p.head_dim = *rc::gen::element<int64_t>(16, 32, 64, 128);
  p.dtype = *rc::gen::element(DType::fp32, DType::fp16, DType::bf16);
  sim::Tiling t;
  t.strategy = gen_strategy();
  t.Br = Br;
  t.Bc = Bc;
  t.splits = takes_splits(t.strategy) ? *rc::gen::element<int64_t>(1, 2, 4) : 1;
  t.dq = *rc::gen::element(sim::DqMode::atomic, sim::DqMode::separate);
  sim::Options o;
  o.pass = gen_pass();
  o.no_l2 = true;
  if (sim::strategy_info(t.strategy).takes_unfused_passes) {
    o.mask_tensor = *rc::gen::arbitrary<bool>();
    o.dropout = *rc::gen::element(0.0, 0.1);
  }
  RC_TAG(sim::strategy_name(t.strategy), sim::pass_name(o.pass));
  const sim::Result r = sim::simulate_unchecked(p, catalog()[0], t, o);

  const int64_t n = N, d = p.head_dim, e = static_cast<int64_t>(dtype_bytes(p.dtype));
  const int64_t Tr = n / Br, Tc = n / Bc, S = t.splits, Nd = n * d, NN = n * n;
  const bool fwd = o.pass != Pass::bwd, bwd = o.pass != Pass::fwd;
  int64_t per_head = 0;  // bytes
  switch (t.strategy) {
    case Strategy::standard: {
      const int64_t passes = (o.mask_tensor ? 1 : 0) + (o.dropout > 0 ? 1 : 0);
      // forward 4Nd + 4N^2 + 2N^2 per extra pass (+ N^2 of mask tensor); backward 8Nd + 7N^2 (+2N^2 dropout)
      if (fwd) per_head += e * (4 * Nd + 4 * NN + 2 * NN * passes + (o.mask_tensor ? NN : 0));
      if (bwd) per_head += e * (8 * Nd + 7 * NN + (o.dropout > 0 ? 2 * NN : 0));
      break;
    }
    case Strategy::fa1:
      // forward: init (O Nd, m, l 2N) + K, V 2Nd + Tc (Q, O in, O out 3Nd; m, l in and out 4N)
      if (fwd) per_head += e * (Nd + 2 * Nd + Tc * 3 * Nd) + 4 * (2 * n + Tc * 4 * n);
      // backward: init dQ_accum (4Nd) + K, V, dK, dV (4Nd e) + Tc (Q, dO, O 3Nd e; m, l 2N; dQ_accum
      // in and out 2 Nd fp32) + convert (Nd fp32 in, Nd e out)
      if (bwd) per_head += e * (4 * Nd + Tc * 3 * Nd + Nd) + 4 * (Nd + Tc * (2 * n + 2 * Nd) + Nd);
      break;
    case Strategy::fa2:
    case Strategy::splitkv: {
      if (fwd && t.strategy == Strategy::fa2) per_head += e * (Nd + 2 * Tr * Nd + Nd) + 4 * n;
      if (fwd && t.strategy == Strategy::splitkv) {
        // Q once per non-empty split, K, V 2 Tr Nd, partial O and LSE (fp32) per split, combine.
        const int64_t per = (Tc + S - 1) / S, used = (Tc + per - 1) / per;
        per_head += e * (used * Nd + 2 * Tr * Nd) + 4 * S * (Nd + n)   // split kernel
                    + 4 * S * (Nd + n) + e * Nd + 4 * n;               // combine
      }
      if (bwd) {
        if (t.dq == sim::DqMode::atomic)
          // preprocess (dO, O in; D, dQ_accum out) + main (K, V, dK, dV; Tc (Q, dO, LSE, D, dQ_accum
          // in and out)) + convert
          per_head += e * (2 * Nd) + 4 * (n + Nd) + e * (4 * Nd + Tc * 2 * Nd) + 4 * Tc * (2 * n + 2 * Nd) +
                      4 * Nd + e * Nd;
        else
          // preprocess + dK/dV kernel (K, V, dK, dV; Tc (Q, dO, LSE, D)) + dQ kernel (Q, dO, LSE, D;
          // Tr (K, V); dQ)
          per_head += e * 2 * Nd + 4 * n + e * (4 * Nd + Tc * 2 * Nd) + 4 * Tc * 2 * n +
                      e * (2 * Nd + Tr * 2 * Nd + Nd) + 4 * 2 * n;
      }
      break;
    }
  }
  const int64_t expect = per_head * p.batch * p.heads_q;
  if (r.hbm_no_l2.total() != expect || r.hbm.total() != expect)
    RC_FAIL(fmt::format("{}: model {} (hbm {}) vs closed form {} bytes (mask={} dropout={})", show(p, t, o.pass),
                        r.hbm_no_l2.total(), r.hbm.total(), expect, o.mask_tensor, o.dropout));
}

// ------------------------------------------------------------------------------------------------
// Never below compulsory; the cache only removes traffic.
// ------------------------------------------------------------------------------------------------

void never_below_compulsory() {
  const AttnProblem p = *gen_small_problem(600);
  const auto& cat = catalog();
  const sim::Machine& m = cat[*rc::gen::inRange<size_t>(0, cat.size())];
  sim::Tiling t;
  t.strategy = gen_strategy();
  gen_tile(t);
  t.dq = *rc::gen::element(sim::DqMode::atomic, sim::DqMode::separate);
  t.grid_order = gen_grid_order();
  sim::Options o;
  o.pass = gen_pass();
  RC_TAG(sim::strategy_name(t.strategy));
  for (bool no_l2 : {false, true}) {
    o.no_l2 = no_l2;
    const sim::Result r = sim::simulate_unchecked(p, m, t, o);
    const std::string where = show(p, t, o.pass) + " on " + m.name + (no_l2 ? " no-l2" : "");
    if (r.hbm.read < r.hbm_compulsory.read || r.hbm.write < r.hbm_compulsory.write)
      RC_FAIL(fmt::format("below compulsory: {}/{} < {}/{} ({})", r.hbm.read, r.hbm.write,
                          r.hbm_compulsory.read, r.hbm_compulsory.write, where));
    for (const auto& k : r.kernels) {
      if (k.hbm.read < k.hbm_compulsory.read || k.hbm.write < k.hbm_compulsory.write ||
          k.hbm.read > k.hbm_no_l2.read || k.hbm.write > k.hbm_no_l2.write)
        RC_FAIL(fmt::format("kernel {}: hbm {}/{} outside [compulsory {}/{}, no-l2 {}/{}] ({})", k.name, k.hbm.read,
                            k.hbm.write, k.hbm_compulsory.read, k.hbm_compulsory.write, k.hbm_no_l2.read,
                            k.hbm_no_l2.write, where));
    }
  }
}

// ------------------------------------------------------------------------------------------------
// The expected time: never below the ceiling; a tiled kernel never faster than its HBM or L2 term
// plus launch and per-CTA cost; every term but overlap_hidden non-negative (that one <= 0); dQ
// atomics charged exactly on the atomic backward's main kernel of a calibrated machine; and
// for one problem and tile, more overlap is never slower (none >= intra-warpgroup >= ping-pong).
// ------------------------------------------------------------------------------------------------

void expected_time() {
  const AttnProblem p = *gen_small_problem(1500);
  const auto& cat = catalog();
  const sim::Machine& m = cat[*rc::gen::inRange<size_t>(0, cat.size())];
  sim::Tiling t;
  t.strategy = gen_strategy();
  gen_tile(t);
  t.dq = *rc::gen::element(sim::DqMode::atomic, sim::DqMode::separate);
  t.design.instr = *rc::gen::element(sim::MatrixInstr::native, sim::MatrixInstr::fma, sim::MatrixInstr::mma_sync,
                                     sim::MatrixInstr::wgmma, sim::MatrixInstr::mfma);
  t.design.lds = *rc::gen::element(sim::LdsRead::fragments, sim::LdsRead::scalar);
  sim::Options o;
  o.pass = gen_pass();
  RC_TAG(sim::strategy_name(t.strategy));
  double prev = 0.0;
  for (auto ov : {sim::Overlap::none, sim::Overlap::intra_warpgroup, sim::Overlap::ping_pong}) {
    t.design.overlap = ov;
    const sim::Result r = sim::simulate_unchecked(p, m, t, o);
    const std::string where = show(p, t, o.pass) + " on " + m.name + " design " + sim::design_name(t.design);
    if (!(r.time_s >= r.ceiling_time_s * (1 - 1e-12)))
      RC_FAIL(fmt::format("expected {} below the ceiling {} ({})", r.time_s, r.ceiling_time_s, where));
    for (const auto& k : r.kernels) {
      double hbm = 0, l2 = 0, fixed = 0, launch = 0;
      // dQ atomics are charged only where the nest has them (the K/V-outer backward with --dq atomic,
      // FA2's nest: FA1's read-modify-write is plain traffic) and the machine has the calibrated rate.
      const bool atomics = k.name == "bwd_main" && m.calibrated_atomic_adds_per_cu_per_clock;
      for (const auto& e : k.expected_terms) {
        if (e.term == "overlap_hidden" ? e.seconds > 1e-15 : e.seconds < -1e-15)
          RC_FAIL(fmt::format("kernel {} term {} = {} ({})", k.name, e.term, e.seconds, where));
        if (e.term == "dq_atomics" && (e.seconds > 0.0) != (atomics && k.tiles > 0))
          RC_FAIL(fmt::format("kernel {}: dq_atomics = {} s ({})", k.name, e.seconds, where));
        if (e.term == "hbm") hbm = e.seconds;
        if (e.term == "l2") l2 = e.seconds;
        if (e.term == "cta_fixed") fixed = e.seconds;
        if (e.term == "launch") launch = e.seconds;
      }
      if (k.time_s < (launch + fixed + std::max(hbm, l2)) * (1 - 1e-12))
        RC_FAIL(fmt::format("kernel {}: {} s below launch + fixed + memory ({})", k.name, k.time_s, where));
    }
    if (ov != sim::Overlap::none && r.time_s > prev * (1 + 1e-12))
      RC_FAIL(fmt::format("more overlap is slower: {} > {} ({})", r.time_s, prev, where));
    prev = r.time_s;
  }
}

// ------------------------------------------------------------------------------------------------
// HBM never grows when LDS (paper-rule tiles, no-L2) or the cache (same tiles) grows.
// ------------------------------------------------------------------------------------------------

void hbm_monotone() {
  // Unmasked: with a mask, a larger tile can cover more masked keys (tile rounding) and split-KV
  // can read Q once more per extra non-empty split; both are real effects (README).
  AttnProblem p = *gen_small_problem(2000);
  p.causal = false;
  p.window_left = p.window_right = -1;
  p.head_dim = *rc::gen::element<int64_t>(16, 32, 64, 128, 256);
  const Strategy s = *rc::gen::element(Strategy::fa1, Strategy::fa2);
  sim::Options o;
  o.pass = gen_pass();
  const double lds1 = static_cast<double>(*rc::gen::inRange<int64_t>(8, 257)) * 1024.0;
  const double lds2 = lds1 + static_cast<double>(*rc::gen::inRange<int64_t>(1, 129)) * 1024.0;
  auto paper_hbm = [&](double lds) {
    const sim::Machine m = test_machine(100, 1e7, lds);
    const sim::BlockChoice b = sim::paper_block_sizes(p, m, s, o.pass);
    sim::Tiling t;
    t.strategy = s;
    t.Br = b.Br;
    t.Bc = b.Bc;
    t.splits = takes_splits(s) ? 2 : 1;
    sim::Options x = o;
    x.no_l2 = true;
    return sim::simulate_unchecked(p, m, t, x).hbm.total();
  };
  const int64_t h1 = paper_hbm(lds1), h2 = paper_hbm(lds2);
  if (h2 > h1) RC_FAIL(fmt::format("more LDS ({} -> {} B), more HBM: {} -> {} ({} {})", lds1, lds2, h1, h2, sim::strategy_name(s), show(p, sim::Tiling{}, o.pass)));
  // Cache size, same tiles and occupancy.
  sim::Tiling t;
  t.strategy = s;
  t.Br = *rc::gen::element<int64_t>(16, 64);
  t.Bc = *rc::gen::element<int64_t>(16, 64);
  t.splits = takes_splits(s) ? 3 : 1;
  t.grid_order = gen_grid_order();
  const double c1 = static_cast<double>(*rc::gen::inRange<int64_t>(1, 1 << 20)) * 16.0;
  const double c2 = c1 * (1.0 + static_cast<double>(*rc::gen::inRange<int64_t>(1, 100)) / 10.0);
  const int64_t W = *rc::gen::inRange<int64_t>(1, 64);
  const auto a = sim::simulate_unchecked(p, test_machine(W, c1), t, o).hbm;
  const auto b = sim::simulate_unchecked(p, test_machine(W, c2), t, o).hbm;
  if (b.read > a.read || b.write > a.write)
    RC_FAIL(fmt::format("bigger cache ({} -> {}), more HBM: {}/{} -> {}/{} ({})", c1, c2, a.read, a.write, b.read,
                        b.write, show(p, t, o.pass)));
}

// ------------------------------------------------------------------------------------------------
// Grid orders: dispatching one block of every head together (2-D grid, head fastest) puts CTAs of
// different heads into a wave, which share no K/V rows; unmasked and without GQA it never reads
// less than bh_major. Otherwise it can, and the model shows it: qblock_major_rev packs the
// non-empty blocks of a causal problem into fewer waves than bh_major (B=1 Hq=2 Hkv=1 Nq=129 Nk=17
// causal, Br=64 Bc=128, 4 CTAs per wave), and with GQA the query heads of one group land in one
// wave and share their K/V head (B=1 Hq=3 Hkv=1, backward: K_j, V_j read once for three heads);
// with split-KV the order also moves Q's re-reads by the splits of one block into or out of a
// wave, either way. The comparison is therefore checked on unmasked MHA fa2 problems only.
// ------------------------------------------------------------------------------------------------

void grid_orders() {
  AttnProblem p = *gen_small_problem(3000);
  const bool compared = *rc::gen::arbitrary<bool>();  // unmasked MHA fa2: the orders are compared
  if (compared) {
    p.causal = false;
    p.window_left = p.window_right = -1;
    p.heads_q = p.heads_kv = *rc::gen::inRange<int64_t>(1, 40);
  }
  const bool test_cache = *rc::gen::arbitrary<bool>();
  const auto& cat = catalog();
  const sim::Machine m = test_cache ? test_machine(*rc::gen::inRange<int64_t>(1, 200),
                                                   static_cast<double>(*rc::gen::inRange<int64_t>(1, 1 << 22)) * 16.0)
                                    : cat[*rc::gen::inRange<size_t>(0, cat.size())];
  sim::Tiling t;
  t.strategy = compared ? Strategy::fa2 : *rc::gen::element(Strategy::fa2, Strategy::splitkv);
  gen_tile(t);
  t.ctas_per_cu = *rc::gen::inRange<int64_t>(0, 3);
  sim::Options o;
  o.pass = gen_pass();
  RC_CLASSIFY(compared, "unmasked MHA fa2 (orders compared)");
  RC_CLASSIFY(test_cache, "small test cache");
  const sim::Tiling base = t;
  const sim::Result bh = sim::simulate_unchecked(p, m, base, o);
  for (auto order : {sim::GridOrder::bh_major_splits, sim::GridOrder::qblock_major, sim::GridOrder::qblock_major_rev}) {
    t.grid_order = order;
    const sim::Result r = sim::simulate_unchecked(p, m, t, o);
    const std::string where = show(p, t, o.pass) + " on " + m.name;
    if (r.hbm_no_l2.total() != bh.hbm_no_l2.total() || r.hbm_compulsory.total() != bh.hbm_compulsory.total() ||
        r.matrix_flops != bh.matrix_flops || r.lds.total() != bh.lds.total())
      RC_FAIL("the grid order changed a count other than the L2-aware one: " + where);
    if (r.hbm.read < r.hbm_compulsory.read || r.hbm.write < r.hbm_compulsory.write || r.hbm.read > r.hbm_no_l2.read ||
        r.hbm.write > r.hbm_no_l2.write)
      RC_FAIL(fmt::format("hbm {}/{} outside [compulsory {}/{}, no-l2 {}/{}] ({})", r.hbm.read, r.hbm.write,
                          r.hbm_compulsory.read, r.hbm_compulsory.write, r.hbm_no_l2.read, r.hbm_no_l2.write, where));
    if (compared && order != sim::GridOrder::bh_major_splits && r.hbm.total() < bh.hbm.total())
      RC_FAIL(fmt::format("{} predicts less HBM traffic than bh_major: {} < {} ({})", sim::grid_order_name(order),
                          r.hbm.total(), bh.hbm.total(), where));
  }
}

// ------------------------------------------------------------------------------------------------
// FLOPs: the convention (flops.hpp) for non-causal problems.
// ------------------------------------------------------------------------------------------------

void flops_convention() {
  AttnProblem p = *gen_small_problem(3000);
  p.causal = false;
  p.window_left = p.window_right = -1;
  sim::Tiling t;
  t.strategy = gen_strategy();
  t.Br = *rc::gen::inRange<int64_t>(1, 200);
  t.Bc = *rc::gen::inRange<int64_t>(1, 200);
  t.splits = takes_splits(t.strategy) ? *rc::gen::inRange<int64_t>(1, 9) : 1;
  t.dq = sim::DqMode::atomic;
  sim::Options o;
  o.pass = gen_pass();
  const sim::Result r = sim::simulate_unchecked(p, catalog()[0], t, o);
  const double fwd = conventional_fwd_flops(p);
  double expect = conventional_flops(p, o.pass);
  if (t.strategy == Strategy::standard)  // four backward GEMMs: no recomputation of S
    expect = (o.pass == Pass::fwd ? 1.0 : o.pass == Pass::bwd ? 2.0 : 3.0) * fwd;
  if (std::fabs(r.matrix_flops - expect) > 1e-12 * expect)
    RC_FAIL(fmt::format("matrix FLOPs {} vs convention {} ({})", r.matrix_flops, expect, show(p, t, o.pass)));
  if (r.conventional_flops != conventional_flops(p, o.pass)) RC_FAIL("conventional_flops is not flops.hpp's");
}

// ------------------------------------------------------------------------------------------------
// Fitted exponents (one deterministic case each).
// ------------------------------------------------------------------------------------------------

double slope(const std::vector<double>& x, const std::vector<double>& y) {
  double mx = 0, my = 0;
  for (size_t i = 0; i < x.size(); ++i) { mx += std::log(x[i]); my += std::log(y[i]); }
  mx /= static_cast<double>(x.size());
  my /= static_cast<double>(x.size());
  double sxy = 0, sxx = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double dx = std::log(x[i]) - mx;
    sxy += dx * (std::log(y[i]) - my);
    sxx += dx * dx;
  }
  return sxy / sxx;
}

void fitted_exponents() {
  AttnProblem base;
  base.dtype = DType::bf16;
  sim::Options o;
  o.no_l2 = true;
  auto hbm = [&](const AttnProblem& p, Strategy s, double lds_bytes) {
    const sim::Machine m = test_machine(132, 5e7, lds_bytes);
    const auto b = sim::paper_block_sizes(p, m, s, Pass::fwd);
    sim::Tiling t;
    t.strategy = s;
    t.Br = b.Br;
    t.Bc = b.Bc;
    return static_cast<double>(sim::simulate_unchecked(p, m, t, o).hbm.total());
  };
  auto check = [](const char* what, double got, double want, double tol) {
    fmt::print("fitted exponent {}: {:.3f} (expected {} +- {})\n", what, got, want, tol);
    RC_ASSERT(std::fabs(got - want) <= tol);
  };
  // In N: standard (d = 64) and FlashAttention at N = 2k .. 32k.
  std::vector<double> ns, st, f2, f1;
  for (int64_t n = 2048; n <= 32768; n *= 2) {
    AttnProblem p = base;
    p.seqlen_q = p.seqlen_k = n;
    p.head_dim = 64;
    ns.push_back(static_cast<double>(n));
    st.push_back(hbm(p, Strategy::standard, 32768));
    p.head_dim = 256;
    f2.push_back(hbm(p, Strategy::fa2, 32768));
    f1.push_back(hbm(p, Strategy::fa1, 32768));
  }
  check("standard vs N", slope(ns, st), 2.0, 0.05);
  check("fa2 vs N (M < 4 d^2)", slope(ns, f2), 2.0, 0.05);
  check("fa1 vs N (M < 4 d^2)", slope(ns, f1), 2.0, 0.05);
  // In d and M, where the paper rule gives Br = M / 4d < d: traffic ~ N^2 d^2 / M.
  std::vector<double> ds, f2d, ms, f2m, f1m;
  for (int64_t d : {128, 256, 512}) {
    AttnProblem p = base;
    p.seqlen_q = p.seqlen_k = 8192;
    p.head_dim = d;
    ds.push_back(static_cast<double>(d));
    f2d.push_back(hbm(p, Strategy::fa2, 32768));
  }
  check("fa2 vs d", slope(ds, f2d), 2.0, 0.1);
  for (double lds : {16384.0, 32768.0, 65536.0, 131072.0}) {
    AttnProblem p = base;
    p.seqlen_q = p.seqlen_k = 8192;
    p.head_dim = 256;
    ms.push_back(lds / 2.0);
    f2m.push_back(hbm(p, Strategy::fa2, lds));
    f1m.push_back(hbm(p, Strategy::fa1, lds));
  }
  check("fa2 vs M", slope(ms, f2m), -1.0, 0.1);
  check("fa1 vs M", slope(ms, f1m), -1.0, 0.1);
}

// ------------------------------------------------------------------------------------------------
// Named edge cases.
// ------------------------------------------------------------------------------------------------

void edge_cases() {
  const auto& cat = catalog();
  RC_ASSERT(cat.size() == 7u);
  // The strategy table: names are unique and parse back, every row describes itself, and an
  // option a row does not take is rejected by simulate().
  for (const auto& s : sim::strategies()) {
    RC_ASSERT(sim::parse_strategy(s.name) == std::optional<Strategy>(s.strategy));
    RC_ASSERT(sim::strategy_name(s.strategy) == s.name);
    RC_ASSERT(!s.description.empty());
    AttnProblem small;
    small.seqlen_q = small.seqlen_k = 64;
    small.head_dim = 32;
    sim::Tiling t;
    t.strategy = s.strategy;
    t.splits = 2;
    bool threw = false;
    try {
      (void)sim::simulate(small, cat[0], t, {});
    } catch (const sim::SimError&) {
      threw = true;
    }
    RC_ASSERT(threw == !s.takes_splits);
    sim::Options mask;
    mask.mask_tensor = true;
    t.splits = 1;
    threw = false;
    try {
      (void)sim::simulate_unchecked(small, cat[0], t, mask);
    } catch (const sim::SimError&) {
      threw = true;
    }
    RC_ASSERT(threw == !s.takes_unfused_passes);
  }
  const sim::Machine& h200 = sim::find_machine(cat, "H200");
  // The measured GEMM ceilings exist, and every measured ceiling present cites the committed
  // measurement (values are checked against that file by ctest machines_h200_ceilings, not typed
  // in here). The bandwidth may be absent (then the datasheet's is used) until a committed run
  // has measured it with an SM copy.
  for (const auto* c : {&h200.measured_matrix_bf16, &h200.measured_matrix_fp16, &h200.measured_vector_fp32})
    RC_ASSERT(c->has_value());
  for (const auto* c : {&h200.measured_bandwidth, &h200.measured_matrix_bf16, &h200.measured_matrix_fp16,
                        &h200.measured_vector_fp32}) {
    if (!c->has_value()) continue;
    RC_ASSERT((*c)->value > 0.0);
    RC_ASSERT((*c)->source.find("experiments/results/h200/") != std::string::npos);
  }
  RC_ASSERT(sim::find_machine(cat, "mi300x").llc_name() == std::string("Infinity Cache"));
  bool threw = false;
  try { (void)sim::find_machine(cat, "no-such-gpu"); } catch (const sim::SimError&) { threw = true; }
  RC_ASSERT(threw);
  // Paper rule on the H200, bf16, d = 64: M = 233472 / 2 = 116736, Bc = ceil(M / 256) = 456, Br = 64.
  AttnProblem p;
  p.dtype = DType::bf16;
  p.head_dim = 64;
  p.seqlen_q = p.seqlen_k = 4096;
  const auto b = sim::paper_block_sizes(p, h200, Strategy::fa2, Pass::fwd);
  RC_ASSERT(b.M_elems == 116736);
  RC_ASSERT(b.Bc == 456);
  RC_ASSERT(b.Br == 64);
  // A tile that does not fit the MI210's 64 KiB LDS is rejected with a message naming LDS.
  sim::Tiling big;
  big.Br = 256;
  big.Bc = 256;
  p.head_dim = 128;
  threw = false;
  try {
    (void)sim::simulate(p, sim::find_machine(cat, "mi210"), big);
  } catch (const sim::SimError& e) {
    threw = std::string(e.what()).find("LDS") != std::string::npos;
  }
  RC_ASSERT(threw);
  // N = 1 decode-like problem with split-KV: one query row, splits larger than the key blocks.
  AttnProblem dec;
  dec.seqlen_q = 1;
  dec.seqlen_k = 1013;
  dec.head_dim = 128;
  sim::Tiling sk;
  sk.strategy = Strategy::splitkv;
  sk.splits = 64;
  const auto r = sim::simulate_unchecked(dec, h200, sk, {});
  RC_ASSERT(r.hbm.read >= r.hbm_compulsory.read);
  // seqlen_q > seqlen_k causal: the leading rows see no key; Q of those rows is never read.
  AttnProblem masked;
  masked.seqlen_q = 200;
  masked.seqlen_k = 50;
  masked.causal = true;
  masked.head_dim = 8;
  sim::Options nl;
  nl.no_l2 = true;
  sim::Tiling t1;
  t1.Br = 50;
  t1.Bc = 50;
  const auto rm = sim::simulate_unchecked(masked, h200, t1, nl);
  RC_ASSERT(rm.kernels[0].tensors[0].tensor == std::string("Q"));
  RC_ASSERT(rm.kernels[0].tensors[0].hbm_no_l2.read == 50 * 8 * 4);  // only the last 50 rows
  // The wave model's two kinds of re-reads, on a cache far smaller than the working set:
  // FA1's self re-reads (O_i, Q_i again for every K/V block) miss; FA2's shared K/V re-reads of an
  // unmasked problem (equal work per CTA: lockstep) hit; causal FA2 drifts and misses again.
  {
    AttnProblem longp;
    longp.seqlen_q = longp.seqlen_k = 4096;
    longp.head_dim = 64;
    longp.heads_q = longp.heads_kv = 4;
    const sim::Machine tiny = test_machine(8, 64 * 1024);
    const sim::Machine huge = test_machine(8, 1e12);
    sim::Tiling fa1;
    fa1.strategy = Strategy::fa1;
    sim::Tiling fa2;
    const auto k1 = sim::simulate_unchecked(longp, tiny, fa1, {}).kernels[1];
    RC_ASSERT(k1.l2_regime == std::string("exceeds"));
    RC_ASSERT(k1.hbm.read > sim::simulate_unchecked(longp, huge, fa1, {}).kernels[1].hbm.read);
    const auto k2 = sim::simulate_unchecked(longp, tiny, fa2, {}).kernels[0];
    RC_ASSERT(k2.l2_regime == std::string("lockstep"));
    RC_ASSERT(k2.hbm.read == sim::simulate_unchecked(longp, huge, fa2, {}).kernels[0].hbm.read);
    longp.causal = true;
    const auto k3 = sim::simulate_unchecked(longp, tiny, fa2, {}).kernels[0];
    RC_ASSERT(k3.hbm.read > sim::simulate_unchecked(longp, huge, fa2, {}).kernels[0].hbm.read);
  }
  // Grid order on the H200: 256 heads of N = 1024 (more heads than the 132 CTAs of a wave at one
  // CTA per SM). bh_major's waves hold whole heads and read each head's K and V about once;
  // qblock_major's waves hold one query block of 132 different heads, so every CTA reads its
  // head's K and V from HBM.
  {
    AttnProblem pq;
    pq.batch = 16;
    pq.heads_q = pq.heads_kv = 16;
    pq.seqlen_q = pq.seqlen_k = 1024;
    pq.head_dim = 128;
    pq.dtype = DType::bf16;
    sim::Tiling tq;
    tq.Br = tq.Bc = 128;
    tq.ctas_per_cu = 1;
    const auto bhm = sim::simulate(pq, h200, tq, {});
    tq.grid_order = sim::GridOrder::qblock_major;
    const auto qbm = sim::simulate(pq, h200, tq, {});
    const int64_t kv_once = 2 * pq.batch * pq.heads_kv * pq.seqlen_k * pq.head_dim * 2;
    fmt::print("grid order on the H200 (B=16 H=16 N=1024 d=128 bf16, 128x128, 1 CTA/SM): HBM read "
               "bh_major {} B, qblock_major {} B, no-L2 {} B, K+V once {} B\n",
               bhm.hbm.read, qbm.hbm.read, qbm.hbm_no_l2.read, kv_once);
    RC_ASSERT(qbm.hbm.read == qbm.hbm_no_l2.read);          // no K/V row shared inside a wave
    RC_ASSERT(bhm.hbm.read < bhm.hbm_compulsory.read + kv_once / 2);  // about once per head
  }
  // Malformed catalog files: a number without a source, bad JSON.
  const auto dir = std::filesystem::temp_directory_path() / "ioattn_bad_catalog";
  std::filesystem::create_directories(dir);
  {
    std::FILE* f = std::fopen((dir / "bad.json").string().c_str(), "w");
    std::fputs("{\"name\": \"bad\", \"compute_units\": 3}", f);
    std::fclose(f);
  }
  threw = false;
  try { (void)sim::load_catalog(dir); } catch (const sim::SimError&) { threw = true; }
  RC_ASSERT(threw);
  {
    std::FILE* f = std::fopen((dir / "bad.json").string().c_str(), "w");
    std::fputs("{ not json", f);
    std::fclose(f);
  }
  threw = false;
  try { (void)sim::load_catalog(dir); } catch (const sim::SimError&) { threw = true; }
  RC_ASSERT(threw);
  std::filesystem::remove_all(dir);
}


// ------------------------------------------------------------------------------------------------
// FP8 problems: element size 1 for Q, K, V (and standard's P), O in the output dtype (bf16 here),
// the matrix_fp8 rate, refusals, and the V transpose pass.
// ------------------------------------------------------------------------------------------------

// Bytes of tensor `name` summed over the kernels of `r` (reads or writes; no-L2 or compulsory).
int64_t tensor_bytes(const sim::Result& r, const std::string& name, bool write, bool compulsory) {
  int64_t b = 0;
  for (const auto& k : r.kernels)
    for (const auto& tt : k.tensors)
      if (tt.tensor == name) {
        const sim::Traffic& x = compulsory ? tt.hbm_compulsory : tt.hbm_no_l2;
        b += write ? x.write : x.read;
      }
  return b;
}

void fp8() {
  AttnProblem bf = *gen_small_problem(600);
  bf.dtype = DType::bf16;
  AttnProblem f8 = bf;
  f8.dtype = *rc::gen::element(DType::fp8_e4m3, DType::fp8_e5m2);  // fp8.out stays bf16
  const auto& cat = catalog();
  const sim::Machine& m = sim::find_machine(cat, *rc::gen::element<std::string>("h100", "h200", "mi300x"));
  sim::Tiling t;
  t.strategy = gen_strategy();
  gen_tile(t);
  t.grid_order = gen_grid_order();
  t.design.v_transpose_pass = sim::loop_order(t.strategy) == sim::LoopOrder::q_outer && *rc::gen::arbitrary<bool>();
  sim::Options o;  // forward
  o.no_l2 = *rc::gen::arbitrary<bool>();
  RC_TAG(sim::strategy_name(t.strategy));
  const sim::Result rb = sim::simulate_unchecked(bf, m, t, o);
  const sim::Result r8 = sim::simulate_unchecked(f8, m, t, o);
  const std::string where = show(f8, t, o.pass) + " on " + m.name + (t.design.v_transpose_pass ? " vt-pass" : "");
  for (const char* name : {"Q", "K", "V", "Vt"})
    for (bool comp : {false, true}) {
      const int64_t b16 = tensor_bytes(rb, name, false, comp), b8 = tensor_bytes(r8, name, false, comp);
      if (2 * b8 != b16) RC_FAIL(fmt::format("{} read ({}): fp8 {} B, bf16 {} B: not half ({})", name,
                                             comp ? "compulsory" : "no-L2", b8, b16, where));
    }
  if (tensor_bytes(r8, "O", true, false) != tensor_bytes(rb, "O", true, false))
    RC_FAIL(fmt::format("O written in bf16 by both: fp8 {} B, bf16 {} B ({})", tensor_bytes(r8, "O", true, false),
                        tensor_bytes(rb, "O", true, false), where));
  // Problem level: the compulsory inputs halve, the outputs (O, LSE) stay.
  RC_ASSERT(2 * r8.hbm_compulsory.read == rb.hbm_compulsory.read);
  RC_ASSERT(r8.hbm_compulsory.write == rb.hbm_compulsory.write);
  RC_ASSERT(r8.matrix_flops == rb.matrix_flops);
  // The ceiling: every kernel's compute time is its matrix FLOPs at the FP8 rate (measured_matrix_fp8
  // with measured ceilings where the machine has it, else matrix_fp8) and its other FLOPs at
  // vector_fp32, over the wave efficiency.
  RC_ASSERT(m.matrix_fp8.has_value());
  const double fp8_rate =
      o.measured_ceilings && m.measured_matrix_fp8 ? m.measured_matrix_fp8->value : m.matrix_fp8->value;
  for (const auto& k : r8.kernels) {
    const double want = (k.matrix_flops / fp8_rate + k.other_flops / m.vector_fp32.value) /
                        (k.wave_efficiency > 0.0 ? k.wave_efficiency : 1.0);
    if (std::abs(k.t_compute_s - want) > 1e-12 * want + 1e-18)
      RC_FAIL(fmt::format("kernel {}: ceiling compute {} s, the FP8 rate gives {} s ({})", k.name, k.t_compute_s, want,
                          where));
  }
  // The V transpose pass: 2 B Hkv Nk d e bytes (e = 1) more than without it, at every level, and
  // one more kernel (its launch).
  if (t.design.v_transpose_pass) {
    sim::Tiling nt = t;
    nt.design.v_transpose_pass = false;
    const sim::Result rn = sim::simulate_unchecked(f8, m, nt, o);
    const int64_t extra = 2 * f8.batch * f8.heads_kv * f8.seqlen_k * f8.head_dim;
    RC_ASSERT(r8.kernels.size() == rn.kernels.size() + 1);
    RC_ASSERT(r8.kernels.front().name == std::string("v_transpose"));
    if (r8.hbm_no_l2.total() != rn.hbm_no_l2.total() + extra || r8.hbm.total() != rn.hbm.total() + extra ||
        r8.hbm_compulsory.total() != rn.hbm_compulsory.total())
      RC_FAIL(fmt::format("vt-pass: HBM {} (no-L2 {}) vs {} ({}) without it, expected +{} ({})", r8.hbm.total(),
                          r8.hbm_no_l2.total(), rn.hbm.total(), rn.hbm_no_l2.total(), extra, where));
    RC_ASSERT(r8.time_s >= rn.time_s + m.launch_overhead_s.value * (1 - 1e-12));
    // V^T (B Hkv Nk d bytes) is live from the pass to the main kernel: the peak grows by at most it.
    RC_ASSERT(r8.extra_memory_bytes >= std::max(rn.extra_memory_bytes, extra / 2));
    RC_ASSERT(r8.extra_memory_bytes <= rn.extra_memory_bytes + extra / 2);
  }
}

// The unit part: a GPU without FP8 matrix units refuses, naming itself; an FP8 backward is
// refused; vt-pass parses, prints back and is refused outside the Q-outer strategies; the FP8
// ceiling on a compute-bound problem is about bf16's over matrix_fp8 / matrix_bf16.
void fp8_refusals() {
  const auto& cat = catalog();
  AttnProblem p;
  p.dtype = DType::fp8_e4m3;
  p.seqlen_q = p.seqlen_k = 1024;
  p.head_dim = 128;
  sim::Tiling t;
  for (const char* name : {"a100-80gb", "rtx3090", "mi210", "mi250x"}) {
    const sim::Machine& m = sim::find_machine(cat, name);
    RC_ASSERT(!m.matrix_fp8.has_value());
    std::string msg;
    try {
      (void)sim::simulate(p, m, t, {});
    } catch (const sim::SimError& e) {
      msg = e.what();
    }
    if (msg.find(name) == std::string::npos || msg.find("FP8") == std::string::npos || msg.find('\n') != std::string::npos)
      RC_FAIL(fmt::format("{}: an FP8 problem gave '{}', not a one-line refusal naming the machine", name, msg));
  }
  for (const char* name : {"h100", "h200", "mi300x"}) RC_ASSERT(sim::find_machine(cat, name).matrix_fp8.has_value());
  const sim::Machine& h100 = sim::find_machine(cat, "h100");
  for (Pass pass : {Pass::bwd, Pass::fwdbwd}) {
    sim::Options o;
    o.pass = pass;
    bool threw = false;
    try { (void)sim::simulate(p, h100, t, o); } catch (const sim::SimError&) { threw = true; }
    RC_ASSERT(threw);
  }
  const auto d = sim::parse_design("wgmma/intra-warpgroup/fragments/vt-pass");
  RC_ASSERT(d.has_value() && d->v_transpose_pass && d->dq_pass.Br == 0);
  RC_ASSERT(sim::design_name(*d) == std::string("wgmma/intra-warpgroup/fragments/vt-pass"));
  const auto d2 = sim::parse_design("mma_sync/none/fragments/dq=qblock_major_rev,64x32/vt-pass");
  RC_ASSERT(d2.has_value() && d2->v_transpose_pass && d2->dq_pass.Br == 64);
  RC_ASSERT(sim::parse_design(sim::design_name(*d2)).has_value());
  for (const char* bad : {"wgmma/none/fragments/vt-pass/vt-pass", "wgmma/none/fragments/vt", "wgmma/none/vt-pass"})
    RC_ASSERT(!sim::parse_design(bad).has_value());
  sim::Tiling tv;
  tv.design = *d;
  for (Strategy s : {Strategy::standard, Strategy::fa1}) {
    tv.strategy = s;
    bool threw = false;
    try { (void)sim::simulate_unchecked(p, h100, tv, {}); } catch (const sim::SimError&) { threw = true; }
    RC_ASSERT(threw);
  }
  // Compute-bound (N = 16k, d = 128, 16 heads, 128 x 128), datasheet rates: the main kernel's
  // matrix part of the ceiling (compute time less the softmax's fp32 part, which FP8 leaves as it
  // is) is bf16's over matrix_fp8 / matrix_bf16 (2x on the H100), and the kernel is compute bound.
  p.seqlen_q = p.seqlen_k = 16384;
  p.heads_q = p.heads_kv = 16;
  sim::Tiling big;
  big.Br = big.Bc = 128;
  sim::Options ds;
  ds.measured_ceilings = false;
  AttnProblem pb = p;
  pb.dtype = DType::bf16;
  const sim::Result r8 = sim::simulate(p, h100, big, ds), r16 = sim::simulate(pb, h100, big, ds);
  auto matrix_part = [&](const sim::KernelResult& k) {
    return k.t_compute_s * k.wave_efficiency - k.other_flops / h100.vector_fp32.value;
  };
  const sim::KernelResult &k8 = r8.kernels.at(0), &k16 = r16.kernels.at(0);
  const double want = h100.matrix_fp8->value / h100.matrix_bf16.value, got = matrix_part(k16) / matrix_part(k8);
  fmt::print("fp8 on the H100 (N=16k d=128 H=16, 128x128, datasheet): ceiling fp8 {:.1f} us, bf16 {:.1f} us "
             "(x{:.3f}); matrix part x{:.4f} (matrix_fp8 / matrix_bf16 = {:.4f})\n", r8.ceiling_time_s * 1e6,
             r16.ceiling_time_s * 1e6, r16.ceiling_time_s / r8.ceiling_time_s, got, want);
  RC_ASSERT(k8.bound == std::string("compute") && k16.bound == std::string("compute"));
  RC_ASSERT(std::abs(got - want) < 1e-9 * want);
  RC_ASSERT(r8.ceiling_time_s < r16.ceiling_time_s && r8.time_s < r16.time_s);
  // The expected time's matrix_issue (exact FLOPs over the rate times the instruction's efficiency,
  // the same for both dtypes): on the H200 with measured ceilings FP8 runs at matrix_bf16 times the
  // measured FP8 / bf16 GEMM ratio (the efficiencies are fitted against the datasheet 16-bit rates),
  // with --datasheet at matrix_fp8; a machine without measured GEMM rates (the H100) keeps matrix_fp8.
  const sim::Machine& h200 = sim::find_machine(cat, "h200");
  sim::Tiling wg = big;
  wg.strategy = Strategy::fa2;
  wg.design = *sim::parse_design("wgmma/intra-warpgroup/fragments");
  auto issue = [&](const sim::Machine& mm, const AttnProblem& q, const sim::Options& oo) {
    double sum = 0.0;
    for (const auto& k : sim::simulate(q, mm, wg, oo).kernels)
      for (const auto& tm : k.expected_terms)
        if (tm.term == "matrix_issue") sum += tm.seconds;
    if (!(sum > 0.0)) throw sim::SimError("no matrix_issue term");
    return sum;
  };
  const sim::Options measured;
  for (const auto& [mm, oo, ratio] :
       {std::tuple<const sim::Machine*, sim::Options, double>{
            &h200, measured,
            h200.measured_matrix_fp8 && h200.measured_matrix_bf16
                ? h200.measured_matrix_fp8->value / h200.measured_matrix_bf16->value
                : h200.matrix_fp8->value / h200.matrix_bf16.value},
        {&h200, ds, h200.matrix_fp8->value / h200.matrix_bf16.value},
        {&h100, measured, h100.matrix_fp8->value / h100.matrix_bf16.value}}) {
    const double g = issue(*mm, pb, oo) / issue(*mm, p, oo);
    if (std::abs(g - ratio) > 1e-9 * ratio)
      RC_FAIL(fmt::format("{}: matrix_issue bf16 / fp8 = {} where the rates give {}", mm->name, g, ratio));
  }
}

}  // namespace

// ------------------------------------------------------------------------------------------------
// The key walk (Design::walk) only decides lockstep: unmasked one-split problems give the same
// traffic under every walk (split-KV: never more); a causal problem without a window walked up (every CTA starts at its split's first
// block) never reads more than under the equal-length rule; names round-trip; repeats are refused.
// ------------------------------------------------------------------------------------------------

void kv_walk() {
  AttnProblem p = *gen_small_problem(3000);
  const auto& cat = catalog();
  const bool test_cache = *rc::gen::arbitrary<bool>();
  const sim::Machine m = test_cache ? test_machine(*rc::gen::inRange<int64_t>(1, 200),
                                                   static_cast<double>(*rc::gen::inRange<int64_t>(1, 1 << 22)) * 16.0)
                                    : cat[*rc::gen::inRange<size_t>(0, cat.size())];
  sim::Tiling t;
  t.strategy = *rc::gen::element(Strategy::fa2, Strategy::splitkv);
  gen_tile(t);
  t.ctas_per_cu = *rc::gen::inRange<int64_t>(0, 3);
  t.grid_order = *rc::gen::element(sim::GridOrder::bh_major, sim::GridOrder::qblock_major_rev);
  sim::Options o;
  o.pass = Pass::fwd;
  const bool masked = p.causal || p.window_left >= 0 || p.window_right >= 0;
  double hbm[3];
  int i = 0;
  for (auto w : {sim::KvWalk::unspecified, sim::KvWalk::up, sim::KvWalk::down}) {
    t.design.walk = w;
    hbm[i++] = static_cast<double>(sim::simulate_unchecked(p, m, t, o).hbm.read);
  }
  const std::string where = show(p, t, o.pass) + " on " + m.name;
  // (split-KV: a walk rule compares the CTAs of one split, the length rule all of them, so a shorter
  // last split can only make the walk rules read less)
  if (!masked && t.strategy == Strategy::fa2 && (hbm[1] != hbm[0] || hbm[2] != hbm[0]))
    RC_FAIL(fmt::format("unmasked: walk changed HBM reads {} / {} / {} ({})", hbm[0], hbm[1], hbm[2], where));
  if (!masked && (hbm[1] > hbm[0] * (1 + 1e-12) || hbm[2] > hbm[0] * (1 + 1e-12)))
    RC_FAIL(fmt::format("unmasked split-KV: a walk read more {} / {} / {} ({})", hbm[0], hbm[1], hbm[2], where));
  if (p.causal && p.window_left < 0 && p.window_right < 0 && hbm[1] > hbm[0] * (1 + 1e-12))
    RC_FAIL(fmt::format("causal walk=up reads {} > equal-length rule {} ({})", hbm[1], hbm[0], where));
  for (const char* name : {"wgmma/warp-specialized/fragments/walk=up", "mma_sync/none/fragments/walk=down",
                           "wgmma/intra-warpgroup/fragments/vt-pass/walk=up"}) {
    const auto d = sim::parse_design(name);
    RC_ASSERT(d.has_value() && d->walk != sim::KvWalk::unspecified);
    RC_ASSERT(sim::design_name(*d) == std::string(name));
  }
  for (const char* bad : {"wgmma/none/fragments/walk=up/walk=down", "wgmma/none/fragments/walk=sideways"})
    RC_ASSERT(!sim::parse_design(bad).has_value());
}

// ------------------------------------------------------------------------------------------------
// Design rows=R: each R-row slice of a query tile computes only the key blocks its own rows see
// (v08p's consumers, kernels/v08_fa3_warpspec.hip "Per consumer, not per block"). The expected
// time's tile work counts (slice, key block) visits; nothing else of the model moves.
// ------------------------------------------------------------------------------------------------

namespace {

// The slice visits by brute force, per (b, h): slice q of query block o (rows [o Br + q h, ...),
// h = min(R, Br), rows past Nq left out) visits key tile J of split s when one of its rows is
// allowed one of J's keys (MaskSpec::allowed), as trace.cpp decides a block's tiles. Returns
// (visits, the most of one CTA (s, o), score elements: real rows x keys of the visited tiles).
struct SliceCount {
  int64_t visits = 0, max_cta = 0, score = 0;
};
SliceCount brute_slices(const AttnProblem& p, int64_t Br, int64_t Bc, int64_t splits, int64_t R) {
  const MaskSpec m = p.mask();
  const int64_t h = std::min(R, Br), Tr = (p.seqlen_q + Br - 1) / Br, Tc = (p.seqlen_k + Bc - 1) / Bc;
  const int64_t per = (Tc + splits - 1) / splits;
  SliceCount c;
  for (int64_t s = 0; s < splits; ++s)
    for (int64_t o = 0; o < Tr; ++o) {
      int64_t cta = 0;
      for (int64_t i0 = o * Br; i0 < std::min(p.seqlen_q, (o + 1) * Br); i0 += h) {
        const int64_t i1 = std::min(p.seqlen_q, i0 + h);
        for (int64_t J = s * per; J < std::min(Tc, (s + 1) * per); ++J) {
          const int64_t j0 = J * Bc, j1 = std::min(p.seqlen_k, j0 + Bc);
          bool seen = false;
          for (int64_t i = i0; i < i1 && !seen; ++i)
            for (int64_t j = j0; j < j1 && !seen; ++j) seen = m.allowed(i, j);
          if (!seen) continue;
          ++cta;
          c.score += (i1 - i0) * (j1 - j0);
        }
      }
      c.visits += cta;
      c.max_cta = std::max(c.max_cta, cta);
    }
  return c;
}

const sim::KernelResult& fwd_kernel(const sim::Result& r) {
  for (const auto& k : r.kernels)
    if (k.tiles > 0) return k;
  throw sim::SimError("no tiled kernel");
}

double term_s(const sim::KernelResult& k, const std::string& name) {
  for (const auto& t : k.expected_terms)
    if (t.term == name) return t.seconds;
  throw sim::SimError("no term " + name);
}

}  // namespace

void consumer_rows() {
  AttnProblem p = *gen_small_problem(300);
  sim::Tiling t;
  t.strategy = *rc::gen::element(Strategy::fa2, Strategy::splitkv);
  t.Br = *rc::gen::element<int64_t>(32, 64, 128, 192, 256);
  t.Bc = *rc::gen::element<int64_t>(16, 32, 64, 128);
  t.splits = t.strategy == Strategy::splitkv ? *rc::gen::inRange<int64_t>(1, 5) : 1;
  t.stages = *rc::gen::element<int64_t>(0, 2);
  t.grid_order = *rc::gen::element(sim::GridOrder::bh_major, sim::GridOrder::qblock_major_rev);
  t.design = *sim::parse_design("wgmma/warp-specialized/fragments/walk=up");
  const int64_t R = *rc::gen::element<int64_t>(16, 32, 64);
  if (*rc::gen::inRange(0, 3) == 0) p.seqlen_q = t.Br * *rc::gen::inRange<int64_t>(1, 3);  // Nq a multiple of Br
  const bool h200 = *rc::gen::arbitrary<bool>();
  const sim::Machine m = h200 ? sim::find_machine(catalog(), "h200") : test_machine(*rc::gen::inRange<int64_t>(1, 40), 1e7);
  const bool masked = p.causal || p.window_left >= 0 || p.window_right >= 0;
  RC_CLASSIFY(masked, "masked");
  RC_CLASSIFY(p.seqlen_q % t.Br != 0, "Nq % Br != 0");
  RC_CLASSIFY(t.Br <= R, "Br <= R");
  RC_CLASSIFY(!masked && p.seqlen_q % t.Br == 0 && t.Br > R, "equal work");
  sim::Options o;
  o.pass = Pass::fwd;
  sim::Tiling ts = t;
  ts.design.consumer_rows = R;
  const sim::Result rb = sim::simulate_unchecked(p, m, t, o), rs = sim::simulate_unchecked(p, m, ts, o);
  const sim::KernelResult &kb = fwd_kernel(rb), &ks = fwd_kernel(rs);
  const std::string where = show(p, t, o.pass) + fmt::format(" rows={} on {}", R, m.name);
  const int64_t h = std::min(R, t.Br), bh = p.batch * p.heads_q;
  // The design changes no count but the slices'.
  if (rs.hbm.total() != rb.hbm.total() || rs.l2.total() != rb.l2.total() || rs.lds.total() != rb.lds.total() ||
      rs.hbm_no_l2.total() != rb.hbm_no_l2.total() || ks.tiles != kb.tiles || ks.max_cta_tiles != kb.max_cta_tiles ||
      rs.matrix_flops != rb.matrix_flops || rs.other_flops != rb.other_flops || rs.ceiling_time_s != rb.ceiling_time_s)
    RC_FAIL("rows=R moved traffic, block visits, FLOPs or the ceiling: " + where);
  if (kb.slice_rows != 0 || kb.slice_tiles != 0 || ks.slice_rows != h)
    RC_FAIL(fmt::format("slice_rows {} / {} (want 0 / {}): {}", kb.slice_rows, ks.slice_rows, h, where));
  // The nest's slice visits against the brute-force count.
  const SliceCount c = brute_slices(p, t.Br, t.Bc, t.strategy == Strategy::splitkv ? t.splits : 1, R);
  if (ks.slice_tiles != bh * c.visits || ks.max_cta_slice_tiles != c.max_cta ||
      ks.slice_score_elems != static_cast<double>(bh * c.score))
    RC_FAIL(fmt::format("slice visits {} / max {} / score {} vs brute force {} / {} / {} ({})", ks.slice_tiles,
                        ks.max_cta_slice_tiles, ks.slice_score_elems, bh * c.visits, c.max_cta, bh * c.score, where));
  // Work: slice visits x h rows never exceed block visits x Br rows; equal unmasked with Nq % Br == 0
  // (and whenever the slice is the tile, Br <= R).
  const int64_t slice_work = ks.slice_tiles * h, block_work = kb.tiles * t.Br;
  if (slice_work > block_work || ks.slice_score_elems > kb.score_elems)
    RC_FAIL(fmt::format("slice work {} > block work {} (or score {} > {}): {}", slice_work, block_work,
                        ks.slice_score_elems, kb.score_elems, where));
  const bool same = (!masked && p.seqlen_q % t.Br == 0) || t.Br <= R;
  if (same && (slice_work != block_work || ks.slice_score_elems != kb.score_elems))
    RC_FAIL(fmt::format("slice work {} != block work {} where they must agree: {}", slice_work, block_work, where));
  // The softmax work follows the visits (exp_sfu is linear in them); the matrix work too where the
  // slice is a multiple of the wgmma's 64 rows (a thinner slice pads up to 64 rows).
  const double e_b = term_s(kb, "exp_sfu"), e_s = term_s(ks, "exp_sfu");
  if (e_s > e_b * (1 + 1e-12)) RC_FAIL(fmt::format("exp_sfu {} > {}: {}", e_s, e_b, where));
  const double c_b = term_s(kb, "matrix_issue") + term_s(kb, "partial_tiles"),
               c_s = term_s(ks, "matrix_issue") + term_s(ks, "partial_tiles");
  if (h % 64 == 0 && c_s > c_b * (1 + 1e-12)) RC_FAIL(fmt::format("matrix work {} > {}: {}", c_s, c_b, where));
  if (same && (h % 64 == 0 || t.Br <= R) && std::abs(rs.time_s - rb.time_s) > 1e-12 * rb.time_s)
    RC_FAIL(fmt::format("expected time {} != {} where the work agrees: {}", rs.time_s, rb.time_s, where));
}

void consumer_rows_cases() {
  // Parse and round trip, the part with every other optional part (9 parts), refusals.
  for (const char* name : {"wgmma/warp-specialized/fragments/walk=up/rows=64",
                           "mma_sync/none/fragments/dq=qblock_major_rev,64x32/vt-pass/walk=up/kv=inline/table=tile/rows=128"}) {
    const auto d = sim::parse_design(name);
    RC_ASSERT(d.has_value() && d->consumer_rows > 0);
    RC_ASSERT(sim::design_name(*d) == std::string(name));
  }
  RC_ASSERT(sim::parse_design("wgmma/none/fragments/rows=64")->consumer_rows == 64);
  RC_ASSERT(sim::parse_design("wgmma/none/fragments")->consumer_rows == 0);
  for (const char* bad : {"wgmma/none/fragments/rows=0", "wgmma/none/fragments/rows=", "wgmma/none/fragments/rows=6x",
                          "wgmma/none/fragments/rows=5000", "wgmma/none/fragments/rows=64/rows=64"})
    RC_ASSERT(!sim::parse_design(bad).has_value());
  // The registry's lines: v08p computes per consumer (64 rows), v08 per block.
  const auto v08p = sim::parse_design(kernels::design("v08p_fa3_persistent"));
  const auto v08 = sim::parse_design(kernels::design("v08_fa3_warpspec"));
  RC_ASSERT(v08p.has_value() && v08p->consumer_rows == 64);
  RC_ASSERT(v08.has_value() && v08->consumer_rows == 0);

  const sim::Machine& m = sim::find_machine(catalog(), "h200");
  AttnProblem p;  // v08p's d 64 bench shape at N 512 (batch 32, 32 heads): counts per head below
  p.batch = p.heads_q = p.heads_kv = 32;
  p.head_dim = 64;
  p.dtype = DType::bf16;
  const int64_t bh = p.batch * p.heads_q;
  sim::Tiling t;
  t.strategy = Strategy::fa2;
  t.Br = 192;
  t.Bc = 128;
  t.stages = 2;
  t.design = *v08;
  sim::Tiling ts = t;
  ts.design = *v08p;
  sim::Options o;
  o.pass = Pass::fwd;
  struct Case {
    int64_t n;
    bool causal;
    int64_t tiles, max_tiles, slices, max_slices;
  };
  // Br 192, Bc 128, Nq = Nk = n, one head (slice s: rows [64 s, 64 s + 64), h = 64):
  //   causal n 512: block o sees key tiles [0, ceil(min(192 o + 192, 512) / 128)): 2 + 3 + 4 = 9
  //     block visits (9 x 192 x 128 = 221184 elements); slice s sees [0, ceil((64 s + 64) / 128)):
  //     s 0..7 see 1, 1, 2, 2, 3, 3, 4, 4 tiles, slice 8 (rows 512-575) lies past Nq: 20 visits
  //     (20 x 64 x 128 = 163840 elements); per CTA 1+1+2 = 4, 2+3+3 = 8, 4+4+0 = 8: the most 8.
  //   non-causal n 512: 3 blocks x 4 tiles = 12 (147456 elements of 192-row tiles); 8 real slices x
  //     4 = 32 (131072): the last block's third slice computes nothing.
  //   non-causal n 1024: 6 blocks x 8 = 48 (x 192 = 9216 rows of work); 16 of the 18 slices are
  //     real (v08p's header: "N 1k: 2 of 18"): 128 visits (x 64 = 8192).
  //   non-causal n 384 (a multiple of Br): 2 x 3 = 6 block visits, 6 slices x 3 = 18 = 6 x 192 / 64.
  for (const Case& c : {Case{512, true, 9, 4, 20, 8}, Case{512, false, 12, 4, 32, 12}, Case{1024, false, 48, 8, 128, 24},
                        Case{384, false, 6, 3, 18, 9}}) {
    p.seqlen_q = p.seqlen_k = c.n;
    p.causal = c.causal;
    const sim::Result rb = sim::simulate(p, m, t, o), rs = sim::simulate(p, m, ts, o);
    const sim::KernelResult &kb = fwd_kernel(rb), &ks = fwd_kernel(rs);
    const std::string where = fmt::format("n {} causal {}", c.n, c.causal);
    if (kb.tiles != bh * c.tiles || kb.max_cta_tiles != c.max_tiles || ks.tiles != bh * c.tiles ||
        ks.slice_tiles != bh * c.slices || ks.max_cta_slice_tiles != c.max_slices || ks.slice_rows != 64 ||
        kb.slice_tiles != 0)
      RC_FAIL(fmt::format("{}: tiles {} (max {}), slices {} (max {}, rows {}); want per head {} ({}), {} ({}, 64)",
                          where, ks.tiles, kb.max_cta_tiles, ks.slice_tiles, ks.max_cta_slice_tiles, ks.slice_rows,
                          c.tiles, c.max_tiles, c.slices, c.max_slices));
    if (c.n == 512 && c.causal && (ks.slice_tiles / bh * 64 * 128 != 163840 || kb.tiles / bh * 192 * 128 != 221184))
      RC_FAIL(where + ": elements");
    const bool fewer = c.slices * 64 < c.tiles * 192;
    const double e_b = term_s(kb, "exp_sfu"), e_s = term_s(ks, "exp_sfu");
    const bool equal = std::abs(e_s - e_b) <= 1e-12 * e_b && std::abs(rs.time_s - rb.time_s) <= 1e-12 * rb.time_s;
    if (fewer ? !(e_s < e_b && rs.time_s < rb.time_s) : !equal)
      RC_FAIL(fmt::format("{}: exp_sfu {} vs {}, time {} vs {} (fewer slices: {})", where, e_s, e_b, rs.time_s,
                          rb.time_s, fewer));
    fmt::print("rows=64 at Br 192 Bc 128, {}: per head {} block visits x 192 rows, {} slice visits x 64; expected "
               "{:.2f} us -> {:.2f} us\n", where, ks.tiles / bh, ks.slice_tiles / bh, rb.time_s * 1e6, rs.time_s * 1e6);
  }
  // Br must be a multiple of R where it exceeds it.
  sim::Tiling bad = ts;
  bad.Br = 96;
  bool threw = false;
  try { (void)sim::simulate_unchecked(p, m, bad, o); } catch (const sim::SimError&) { threw = true; }
  RC_ASSERT(threw);
}

int main() {
  return ioattn::verify::run_properties({
      {"trace_equals_model", 600, trace_equals_model},
      {"closed_forms_no_l2", 800, closed_forms_no_l2},
      {"never_below_compulsory", 800, never_below_compulsory},
      {"expected_time", 500, expected_time},
      {"hbm_monotone", 500, hbm_monotone},
      {"grid_orders", 800, grid_orders},
      {"flops_convention", 500, flops_convention},
      {"fitted_exponents", 1, fitted_exponents},
      {"edge_cases", 1, edge_cases},
      {"fp8", 300, fp8},
      {"fp8_refusals", 1, fp8_refusals},
      {"kv_walk", 300, kv_walk},
      {"consumer_rows", 300, consumer_rows},
      {"consumer_rows_cases", 1, consumer_rows_cases},
  });
}

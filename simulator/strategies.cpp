// simulator/strategies.cpp: each strategy as a list of kernels, each kernel as a loop nest.
//
// Notation (FlashAttention papers): N_q, N_k rows, d head dim, Br x Bc tiles, Tr = ceil(N_q/Br),
// Tc = ceil(N_k/Bc). Element sizes: e = dtype bytes for Q, K, V, O, dO, dQ, dK, dV, S, P, dS, dP;
// 4 bytes (fp32) for LSE, m, l, D, partial O / LSE of split-KV and the dQ accumulator. FP8
// problems (forward only): e = 1 for Q, K, V and P, eo = 2 for O (its bf16/fp16 output dtype) and
// for standard's S (an FP8 GEMM writes its fp32 accumulator as 16-bit); eo = e for every other dtype.
//
// The comments give the traffic the nest produces with --no-l2 for an unmasked MHA head; these are
// the closed forms verify/simulator checks, derived in simulator/README.md.
#include <fmt/format.h>

#include "simulator/nest.hpp"

namespace ioattn::sim::detail {

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Builders for accesses (read/write, axis, heads).
TiledAccess outer_read(std::string n, Heads h, int64_t w, int64_t eb, int lds = 0) {
  return {std::move(n), h, true, false, false, w, eb, lds};
}
TiledAccess inner_read(std::string n, Heads h, int64_t w, int64_t eb, int lds = 0) {
  return {std::move(n), h, false, false, false, w, eb, lds};
}
TiledAccess outer_write(std::string n, int64_t w, int64_t eb, bool split_private = false) {
  return {std::move(n), Heads::q, true, true, split_private, w, eb, 0};
}
TiledAccess inner_write(std::string n, int64_t w, int64_t eb) {
  return {std::move(n), Heads::q, false, true, false, w, eb, 0};
}
StreamAccess sread(std::string n, Heads h, int64_t rows, int64_t w, int64_t eb) {
  return {std::move(n), h, false, rows, w, eb};
}
StreamAccess swrite(std::string n, Heads h, int64_t rows, int64_t w, int64_t eb) {
  return {std::move(n), h, true, rows, w, eb};
}

PlannedKernel tiled(TiledKernel k) { PlannedKernel p; p.tiled = true; p.t = std::move(k); return p; }
PlannedKernel stream(StreamKernel k) { PlannedKernel p; p.tiled = false; p.s = std::move(k); return p; }

// The unfused GEMMs use the GEMM library's own output tile (not Br x Bc), for wave quantization.
constexpr int64_t kGemmTile = 128;

struct Ctx {
  const AttnProblem& p;
  const Tiling& t;
  const Options& o;
  int64_t Nq, Nk, d, e;
  int64_t eo;  // bytes of O (and standard's S): the output dtype's
  bool gqa;
  Plan plan;
};

// ---------------------------------------------------------------------------------------------
// standard: the FlashAttention paper's Algorithm 0 as a framework runs it. Per head, --no-l2:
//   qk_gemm  Q, K -> S        2Nd + N^2         softmax  S -> P           2N^2
//   [mask    S, Mask -> S     2N^2 + N^2 mask]  [dropout P -> P_drop      2N^2]
//   pv_gemm  P, V -> O        N^2 + 2Nd         total 4Nd + 4N^2 (+ 2N^2 per extra pass)
// ---------------------------------------------------------------------------------------------
void standard_fwd(Ctx& c) {
  const int64_t Nq = c.Nq, Nk = c.Nk, d = c.d, e = c.e, eo = c.eo;
  const double nn = static_cast<double>(Nq) * static_cast<double>(Nk);
  const int64_t gemm_grid = ceil_div(Nq, kGemmTile) * ceil_div(Nk, kGemmTile);
  StreamKernel qk{"qk_gemm", gemm_grid, 2.0 * nn * static_cast<double>(d), nn /* scale */,
                  (Nq + Nk) * d * e,
                  {sread("Q", Heads::q, Nq, d, e), sread("K", Heads::kv, Nk, d, e),
                   swrite("S", Heads::q, Nq, Nk, eo)}};
  c.plan.kernels.push_back(stream(qk));
  if (c.o.mask_tensor) {
    StreamKernel mk{"mask_add", Nq, 0.0, nn, 0,
                    {sread("S", Heads::q, Nq, Nk, eo), sread("Mask", Heads::shared, Nq, Nk, eo),
                     swrite("S", Heads::q, Nq, Nk, eo)}};
    c.plan.kernels.push_back(stream(mk));
  }
  // Softmax: row max, subtract, exp, row sum, divide (the causal/window mask is fused here).
  StreamKernel sm{"softmax", Nq, 0.0, 5.0 * nn, 0,
                  {sread("S", Heads::q, Nq, Nk, eo), swrite("P", Heads::q, Nq, Nk, e)}};
  c.plan.kernels.push_back(stream(sm));
  std::string p_name = "P";
  if (c.o.dropout > 0.0) {
    // Dropout: keep-test and scale; the random mask is regenerated in the backward (Philox), not stored.
    StreamKernel dk{"dropout", Nq, 0.0, 2.0 * nn, 0,
                    {sread("P", Heads::q, Nq, Nk, e), swrite("P_drop", Heads::q, Nq, Nk, e)}};
    c.plan.kernels.push_back(stream(dk));
    p_name = "P_drop";
  }
  StreamKernel pv{"pv_gemm", ceil_div(Nq, kGemmTile) * ceil_div(d, kGemmTile), 2.0 * nn * static_cast<double>(d),
                  0.0, (Nq * Nk + Nk * d) * e,
                  {sread(p_name, Heads::q, Nq, Nk, e), sread("V", Heads::kv, Nk, d, e),
                   swrite("O", Heads::q, Nq, d, eo)}};
  c.plan.kernels.push_back(stream(pv));
}

// standard backward, from the saved P (and P_drop). Per head, --no-l2, MHA:
//   dv_gemm  P^T dO -> dV      N^2 + 2Nd       dp_gemm  dO V^T -> dP      2Nd + N^2
//   [dropout_bwd dP -> dP      2N^2]           softmax_bwd P, dP -> dS    3N^2
//   dq_gemm  dS K -> dQ        N^2 + 2Nd       dk_gemm  dS^T Q -> dK      N^2 + 2Nd
//   total 8Nd + 7N^2 (+ 2N^2 with dropout)
void standard_bwd(Ctx& c) {
  const int64_t Nq = c.Nq, Nk = c.Nk, d = c.d, e = c.e;
  const double nn = static_cast<double>(Nq) * static_cast<double>(Nk);
  const double mm = 2.0 * nn * static_cast<double>(d);
  const std::string dK = c.gqa ? "dK_exp" : "dK", dV = c.gqa ? "dV_exp" : "dV";
  const std::string p_used = c.o.dropout > 0.0 ? "P_drop" : "P";
  const std::string dp_out = c.o.dropout > 0.0 ? "dP_drop" : "dP";
  c.plan.kernels.push_back(stream(StreamKernel{
      "dv_gemm", ceil_div(Nk, kGemmTile) * ceil_div(d, kGemmTile), mm, 0.0, (Nq * Nk + Nq * d) * e,
      {sread(p_used, Heads::q, Nq, Nk, e), sread("dO", Heads::q, Nq, d, e), swrite(dV, Heads::q, Nk, d, e)}}));
  c.plan.kernels.push_back(stream(StreamKernel{
      "dp_gemm", ceil_div(Nq, kGemmTile) * ceil_div(Nk, kGemmTile), mm, 0.0, (Nq + Nk) * d * e,
      {sread("dO", Heads::q, Nq, d, e), sread("V", Heads::kv, Nk, d, e), swrite(dp_out, Heads::q, Nq, Nk, e)}}));
  if (c.o.dropout > 0.0)
    c.plan.kernels.push_back(stream(StreamKernel{
        "dropout_bwd", Nq, 0.0, 2.0 * nn, 0,
        {sread("dP_drop", Heads::q, Nq, Nk, e), swrite("dP", Heads::q, Nq, Nk, e)}}));
  // dS = P o (dP - rowsum(dP o P)) * scale
  c.plan.kernels.push_back(stream(StreamKernel{
      "softmax_bwd", Nq, 0.0, 5.0 * nn, 0,
      {sread("P", Heads::q, Nq, Nk, e), sread("dP", Heads::q, Nq, Nk, e), swrite("dS", Heads::q, Nq, Nk, e)}}));
  c.plan.kernels.push_back(stream(StreamKernel{
      "dq_gemm", ceil_div(Nq, kGemmTile) * ceil_div(d, kGemmTile), mm, 0.0, (Nq * Nk + Nk * d) * e,
      {sread("dS", Heads::q, Nq, Nk, e), sread("K", Heads::kv, Nk, d, e), swrite("dQ", Heads::q, Nq, d, e)}}));
  c.plan.kernels.push_back(stream(StreamKernel{
      "dk_gemm", ceil_div(Nk, kGemmTile) * ceil_div(d, kGemmTile), mm, 0.0, (Nq * Nk + Nq * d) * e,
      {sread("dS", Heads::q, Nq, Nk, e), sread("Q", Heads::q, Nq, d, e), swrite(dK, Heads::q, Nk, d, e)}}));
}

// GQA backward: the query heads of a group each produce a dK, dV copy; one pass sums them.
void gqa_reduce(Ctx& c) {
  if (!c.gqa) return;
  const int64_t Nk = c.Nk, d = c.d, e = c.e;
  StreamKernel r{"dkv_reduce", ceil_div(Nk, 64), 0.0, 2.0 * static_cast<double>(Nk * d), 0,
                 {sread("dK_exp", Heads::q, Nk, d, e), sread("dV_exp", Heads::q, Nk, d, e),
                  swrite("dK", Heads::kv, Nk, d, e), swrite("dV", Heads::kv, Nk, d, e)}};
  c.plan.kernels.push_back(stream(r));
}

// ---------------------------------------------------------------------------------------------
// The V transpose pass (Design::v_transpose_pass): one streaming kernel over the (b, K/V head)
// pairs reads V and writes V^T (keys contiguous; the 8-bit wgmma's K-major B of P V) before the
// forward's main kernel, which then reads "Vt" where it would read "V". Per K/V head, --no-l2:
// Nk d e read + Nk d e written (2 B Hkv Nk d e in all), one more launch; a 64 x 64 tile per CTA
// through shared memory (v09_fp8_wgmma's transpose_v_kernel). Returns the name the main kernel reads.
// ---------------------------------------------------------------------------------------------
std::string v_transpose_pass(Ctx& c) {
  if (!c.t.design.v_transpose_pass) return "V";
  const int64_t Nk = c.Nk, d = c.d, e = c.e;
  StreamKernel k{"v_transpose", ceil_div(Nk, 64) * ceil_div(d, 64), 0.0, 0.0, Nk * d * e,
                 {sread("V", Heads::kv, Nk, d, e), swrite("Vt", Heads::kv, Nk, d, e)},
                 /*over_kv_heads=*/true};
  c.plan.kernels.push_back(stream(k));
  return "Vt";
}

// ---------------------------------------------------------------------------------------------
// fa2: Q blocks outer, one CTA each; K_j, V_j streamed through LDS; O_i, m_i, l_i in registers.
// Per head, --no-l2: Q Nd + K, V 2 Tr Nd + O Nd (elements) + LSE N (fp32).
// ---------------------------------------------------------------------------------------------
TiledKernel fa2_fwd_kernel(const Ctx& c, std::string name, int64_t splits, bool partial,
                           const std::string& v_name = "V") {
  const int64_t d = c.d, e = c.e, Br = c.t.Br, Bc = c.t.Bc;
  TiledKernel k;
  k.name = std::move(name);
  k.outer_is_q = true;
  k.splits = splits;
  k.matmuls_per_tile = 2;          // S = Q_i K_j^T, O_i += P V_j
  k.other_per_score = 5.0;         // scale, running max, subtract, exp, row sum
  k.other_per_row_d_tile = 1.0;    // O_i *= exp(m_old - m_new)
  k.other_per_row_d_outer = 1.0;   // O_i /= l_i
  k.accesses = {outer_read("Q", Heads::q, d, e, c.t.q_in_registers ? 0 : 1),  // HBM read: Q_i once per CTA
                inner_read("K", Heads::kv, d, e, 1),                           // HBM read: K_j per (i, j)
                inner_read(v_name, Heads::kv, d, e, 1)};                       // HBM read: V_j (or V^T_j) per (i, j)
  if (!partial) {
    k.accesses.push_back(outer_write("O", d, c.eo));      // HBM write: O_i once (output dtype)
    k.accesses.push_back(outer_write("LSE", 1, 4));       // HBM write: LSE_i once (fp32)
  } else {
    k.accesses.push_back(outer_write("O_partial", d, 4, true));   // per split, fp32
    k.accesses.push_back(outer_write("LSE_partial", 1, 4, true));
  }
  if (c.t.p_through_lds) k.lds_intermediates.push_back({"P", e, 1});
  k.footprint.lds_bytes = (c.t.q_in_registers ? 0 : Br * d * e) + 2 * Bc * d * e +
                          (c.t.p_through_lds ? Br * Bc * e : 0);
  k.footprint.register_bytes = Br * d * 4 + Br * Bc * 4 + 2 * Br * 4 +
                               (c.t.q_in_registers ? Br * d * e : 0);
  return k;
}

// ---------------------------------------------------------------------------------------------
// fa1: K/V blocks outer, Q blocks inner, one CTA per (b, h) running both loops (Algorithm 1).
// Per head, --no-l2: init O, m, l (Nd e + 2N fp32), then K, V 2Nd + Tc (Q Nd + O read Nd +
// O write Nd) elements + Tc (m, l read 2N + write 2N) fp32.
// ---------------------------------------------------------------------------------------------
void fa1_fwd(Ctx& c) {
  const int64_t Nq = c.Nq, d = c.d, e = c.e, eo = c.eo, Br = c.t.Br, Bc = c.t.Bc;
  c.plan.kernels.push_back(stream(StreamKernel{
      "fa1_init", ceil_div(Nq, Br), 0.0, 0.0, 0,
      {swrite("O", Heads::q, Nq, d, eo), swrite("m", Heads::q, Nq, 1, 4), swrite("l", Heads::q, Nq, 1, 4)}}));
  TiledKernel k;
  k.name = "fa1_fwd";
  k.outer_is_q = false;
  k.sequential_outer = true;
  k.matmuls_per_tile = 2;
  k.other_per_score = 5.0;
  k.other_per_row_d_tile = 2.0;  // O_i = diag(l_new)^-1 (diag(l) e^(m - m_new) O_i + e^(m~ - m_new) P V_j)
  k.accesses = {outer_read("K", Heads::kv, d, e, 1),   // HBM read: K_j once per j
                outer_read("V", Heads::kv, d, e, 1),   // HBM read: V_j once per j
                inner_read("Q", Heads::q, d, e, 1),    // HBM read: Q_i per (j, i)
                inner_read("O", Heads::q, d, eo),      // HBM read: O_i per (j, i)
                inner_read("m", Heads::q, 1, 4),
                inner_read("l", Heads::q, 1, 4),
                inner_write("O", d, eo),               // HBM write: O_i per (j, i)
                inner_write("m", 1, 4),
                inner_write("l", 1, 4)};
  if (c.t.p_through_lds) k.lds_intermediates.push_back({"P", e, 1});
  k.footprint.lds_bytes = 2 * Bc * d * e + Br * d * e + (c.t.p_through_lds ? Br * Bc * e : 0);
  k.footprint.register_bytes = Br * d * 4 + Br * Bc * 4 + 2 * Br * 4;
  c.plan.kernels.push_back(tiled(k));
}

// ---------------------------------------------------------------------------------------------
// split-KV (Flash-Decoding): fa2 with the K/V blocks cut into S ranges, partial O and LSE in fp32,
// then a combine kernel. Per head, --no-l2: Q S Nd... see README (Q is read once per split).
// ---------------------------------------------------------------------------------------------
void splitkv_fwd(Ctx& c) {
  const int64_t Nq = c.Nq, d = c.d, S = c.t.splits;
  const std::string v_name = v_transpose_pass(c);
  c.plan.kernels.push_back(tiled(fa2_fwd_kernel(c, "splitkv_fwd", S, true, v_name)));
  const double rows = static_cast<double>(Nq);
  c.plan.kernels.push_back(stream(StreamKernel{
      "splitkv_combine", ceil_div(Nq, c.t.Br), 0.0,
      rows * static_cast<double>(S) * (2.0 * static_cast<double>(d) + 3.0), 0,
      {sread("O_partial", Heads::q, S * Nq, d, 4), sread("LSE_partial", Heads::q, S * Nq, 1, 4),
       swrite("O", Heads::q, Nq, d, c.eo), swrite("LSE", Heads::q, Nq, 1, 4)}}));
}

// ---------------------------------------------------------------------------------------------
// Flash backward (FlashAttention-2, Algorithm 2): K/V blocks outer, one CTA each; Q_i, dO_i,
// LSE_i, D_i streamed. dQ either by fp32 atomics into dQ_accum (read + write per (j, i)) or by a
// second, Q-outer kernel that recomputes S and dP.
// ---------------------------------------------------------------------------------------------
void flash_bwd(Ctx& c, bool fa1) {
  const int64_t Nq = c.Nq, d = c.d, e = c.e, Br = c.t.Br, Bc = c.t.Bc;
  const std::string dK = c.gqa ? "dK_exp" : "dK", dV = c.gqa ? "dV_exp" : "dV";
  const bool atomic = fa1 || c.t.dq == DqMode::atomic;
  // Preprocess: D_i = rowsum(dO_i o O_i) (FA2; FA1 computes it inside from O_i), zero dQ_accum.
  {
    StreamKernel pre;
    pre.name = fa1 ? "bwd_init" : "bwd_preprocess";
    pre.ctas_per_head = ceil_div(Nq, Br);
    if (!fa1) {
      pre.other_flops_per_head = 2.0 * static_cast<double>(Nq * d);
      pre.accesses = {sread("dO", Heads::q, Nq, d, e), sread("O", Heads::q, Nq, d, e),
                      swrite("D", Heads::q, Nq, 1, 4)};
    }
    if (atomic) pre.accesses.push_back(swrite("dQ_accum", Heads::q, Nq, d, 4));
    c.plan.kernels.push_back(stream(pre));
  }
  TiledKernel k;
  k.name = fa1 ? "fa1_bwd" : (atomic ? "bwd_main" : "bwd_dkdv");
  k.outer_is_q = false;
  k.sequential_outer = fa1;
  k.matmuls_per_tile = atomic ? 5 : 4;  // S, dP, dV += P^T dO, dK += dS^T Q, [dQ += dS K_j]
  k.backward = true;
  k.atomic_width = atomic && !fa1 ? d : 0;  // dQ_i += dS K_j: d fp32 atomic adds per Q row per tile
  k.other_per_score = 5.0;              // scale, subtract LSE, exp, dP - D, multiply by P
  k.other_per_row_d_tile = fa1 ? 2.0 : 0.0;  // FA1: D_i = rowsum(dO_i o O_i) per tile
  k.accesses = {outer_read("K", Heads::kv, d, e, atomic ? 2 : 1),  // HBM read: K_j once per CTA
                outer_read("V", Heads::kv, d, e, 1),
                inner_read("Q", Heads::q, d, e, 2),                 // HBM read: Q_i per (j, i)
                inner_read("dO", Heads::q, d, e, 2)};               // HBM read: dO_i per (j, i)
  if (fa1) {
    k.accesses.push_back(inner_read("O", Heads::q, d, e));
    k.accesses.push_back(inner_read("m", Heads::q, 1, 4));
    k.accesses.push_back(inner_read("l", Heads::q, 1, 4));
  } else {
    k.accesses.push_back(inner_read("LSE", Heads::q, 1, 4));
    k.accesses.push_back(inner_read("D", Heads::q, 1, 4));
  }
  if (atomic) {
    k.accesses.push_back(inner_read("dQ_accum", Heads::q, d, 4));   // atomicAdd: read ...
    k.accesses.push_back(inner_write("dQ_accum", d, 4));            // ... and write per (j, i)
  }
  k.accesses.push_back(outer_write(dK, d, e));
  k.accesses.push_back(outer_write(dV, d, e));
  k.lds_intermediates = {{"P", e, 1}, {"dS", e, atomic ? 2 : 1}};
  k.footprint.lds_bytes = 2 * Bc * d * e + 2 * Br * d * e + 2 * Br * Bc * e;
  k.footprint.register_bytes = 2 * Bc * d * 4 + 2 * Br * Bc * 4;
  c.plan.kernels.push_back(tiled(k));
  if (atomic) {
    c.plan.kernels.push_back(stream(StreamKernel{
        "dq_convert", ceil_div(Nq, Br), 0.0, 0.0, 0,
        {sread("dQ_accum", Heads::q, Nq, d, 4), swrite("dQ", Heads::q, Nq, d, e)}}));
  } else {
    TiledKernel q;
    q.name = "bwd_dq";
    q.outer_is_q = true;
    // The variant's own dQ pass (Design::dq_pass): its tile and grid, not the main kernel's.
    const DqPass& own = c.t.design.dq_pass;
    int64_t qBr = Br, qBc = Bc;
    if (own.Br > 0) {
      const bool small = own.small_d > 0 && d <= own.small_d;
      qBr = q.own_Br = small ? own.small_Br : own.Br;
      qBc = q.own_Bc = small ? own.small_Bc : own.Bc;
      q.own_grid_order = own.grid_order;
      q.own_ctas_per_cu = small ? own.small_ctas_per_cu : own.ctas_per_cu;
    }
    q.matmuls_per_tile = 3;  // S, dP, dQ_i += dS K_j
    q.backward = true;
    q.other_per_score = 5.0;
    q.accesses = {outer_read("Q", Heads::q, d, e, 1),    outer_read("dO", Heads::q, d, e, 1),
                  outer_read("LSE", Heads::q, 1, 4),     outer_read("D", Heads::q, 1, 4),
                  inner_read("K", Heads::kv, d, e, 2),   inner_read("V", Heads::kv, d, e, 1),
                  outer_write("dQ", d, e)};
    q.lds_intermediates = {{"dS", e, 1}};
    q.footprint.lds_bytes = 2 * qBr * d * e + 2 * qBc * d * e + qBr * qBc * e;
    q.footprint.register_bytes = qBr * d * 4 + 2 * qBr * qBc * 4;
    c.plan.kernels.push_back(tiled(q));
  }
  gqa_reduce(c);
}

// One builder per row of IOATTN_STRATEGIES (simulator.hpp): the strategy's kernels, in launch order.
void build_standard(Ctx& c, bool fwd, bool bwd) {
  if (fwd) standard_fwd(c);
  if (bwd) { standard_bwd(c); gqa_reduce(c); }
}
void build_fa1(Ctx& c, bool fwd, bool bwd) {
  if (fwd) fa1_fwd(c);
  if (bwd) flash_bwd(c, /*fa1=*/true);
}
void build_fa2(Ctx& c, bool fwd, bool bwd) {
  if (fwd) {
    const std::string v_name = v_transpose_pass(c);
    c.plan.kernels.push_back(tiled(fa2_fwd_kernel(c, "fa2_fwd", 1, false, v_name)));
  }
  if (bwd) flash_bwd(c, false);
}
void build_splitkv(Ctx& c, bool fwd, bool bwd) {
  if (fwd) splitkv_fwd(c);
  if (bwd) flash_bwd(c, false);
}

using Builder = void (*)(Ctx&, bool, bool);
#define IOATTN_STRATEGY_BUILDER(id, ...) &build_##id,
constexpr Builder kBuilders[] = {IOATTN_STRATEGIES(IOATTN_STRATEGY_BUILDER)};  // indexed by Strategy
#undef IOATTN_STRATEGY_BUILDER

}  // namespace

Tiling kernel_tiling(const Tiling& t, const TiledKernel& k) {
  if (k.own_Br <= 0) return t;
  Tiling kt = t;
  kt.Br = k.own_Br;
  kt.Bc = k.own_Bc;
  kt.grid_order = k.own_grid_order;
  kt.ctas_per_cu = k.own_ctas_per_cu;
  return kt;
}

Plan build_plan(const AttnProblem& p, const Tiling& t, const Options& o) {
  Ctx c{p, t, o, p.seqlen_q, p.seqlen_k, p.head_dim, static_cast<int64_t>(dtype_bytes(p.dtype)),
        static_cast<int64_t>(dtype_bytes(p.output_dtype())), p.heads_q != p.heads_kv, {}};
  const StrategyInfo& info = strategy_info(t.strategy);
  if (!info.takes_unfused_passes && (o.mask_tensor || o.dropout > 0.0))
    throw SimError(fmt::format("--mask and --dropout model the unfused passes of the {} "
                               "strategy; {} fuses them (use --strategy {})",
                               strategy_names(" or ", [](const StrategyInfo& i) { return i.takes_unfused_passes; }),
                               info.name,
                               strategy_names(" or ", [](const StrategyInfo& i) { return i.takes_unfused_passes; })));
  if (!info.supports(o.pass))
    throw SimError(fmt::format("strategy {} does not model pass {}", info.name, pass_name(o.pass)));
  if (t.design.v_transpose_pass && info.loop_order != LoopOrder::q_outer)
    throw SimError(fmt::format("design part vt-pass (a V transpose pass before a Q-outer forward) applies to the "
                               "Q-outer strategies only (got strategy {})", info.name));
  kBuilders[static_cast<size_t>(t.strategy)](c, o.pass != Pass::bwd, o.pass != Pass::fwd);
  return std::move(c.plan);
}

}  // namespace ioattn::sim::detail

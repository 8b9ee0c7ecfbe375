// simulator/simulator.hpp: the IO-cost simulator's public API.
//
// Three inputs kept apart, as in Timeloop:
//   AttnProblem (include/ioattn/problem.hpp)  what is computed
//   Machine     (machines/*.json)             what it runs on; every number carries its source
//   Tiling      (this file)                   how it is blocked: strategy (hence loop order),
//                                             Br, Bc, splits, residency, CTAs per CU, and the
//                                             order in which the grid's CTAs are dispatched
// and one output, Result: per kernel and per memory level (HBM, L2, LDS) the bytes read and
// written, matrix and other FLOPs, peak extra device memory, roofline time and the bound that won.
//
// Strategies are loop nests over tiles (strategies.cpp builds them, nest.cpp counts them); the
// closed forms of the FlashAttention papers live only in verify/simulator as oracles. See
// simulator/README.md for the model, every assumption and what it leaves out.
//
// Units: bytes, FLOP, FLOP/s, bytes/s, seconds. Traffic counts are exact integers (int64).
#pragma once

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "ioattn/flops.hpp"
#include "ioattn/problem.hpp"

namespace ioattn::sim {

// Bad input to the simulator (unknown machine or strategy, tiling that does not fit, malformed
// catalog). The CLI turns it into a one-line error and exit code 2.
struct SimError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// ---------------------------------------------------------------------------------------------
// Machine
// ---------------------------------------------------------------------------------------------

// A number and where it came from (datasheet URL or document name, or "measured: ...").
struct Sourced {
  double value = 0.0;
  std::string source;
};

struct Machine {
  std::string name;          // catalog key: "h200", "mi300x", ...
  std::string display_name;  // "NVIDIA H200 SXM 141GB"
  std::string vendor;        // "nvidia" | "amd"
  std::string arch;          // "sm_90", "gfx90a", ...
  std::string notes;         // e.g. "one GCD of the MI250X package counts as one device"

  Sourced compute_units;           // SMs (NVIDIA) or CUs (AMD)
  Sourced wave_size;               // threads per warp / wavefront
  Sourced clock_hz;                // boost clock
  Sourced lds_bytes_per_cu;        // shared memory / LDS per SM or CU
  Sourced lds_bytes_per_cta;       // the most one CTA (workgroup) may allocate
  Sourced register_bytes_per_cu;   // register file per SM / CU (AMD: VGPRs + AGPRs)
  Sourced max_ctas_per_cu;         // resident CTAs per SM / workgroups per CU
  Sourced l2_bytes;                // L2 capacity
  std::optional<Sourced> infinity_cache_bytes;  // MI300X: the MALL between L2 and HBM
  Sourced hbm_capacity_bytes;
  Sourced hbm_bandwidth;           // bytes/s, datasheet peak
  Sourced matrix_fp16;             // dense FLOP/s of the matrix units (no sparsity)
  Sourced matrix_bf16;
  std::optional<Sourced> matrix_fp8;  // absent where the hardware has none (A100, RTX 3090, MI210, MI250X):
                                      // the simulator refuses FP8 problems there
  Sourced matrix_fp32;             // fp32 inputs: matrix units where they take fp32 (CDNA), else vector
  Sourced vector_fp32;             // non-matrix fp32 FLOP/s (softmax, scaling, ...)
  Sourced launch_overhead_s;       // per kernel launch

  // Parameters of the expected-time model (simulate.cpp, README "Expected time"). Datasheet or
  // ISA-guide numbers, each with its source in the machine file:
  Sourced sfu_per_cu_per_clock;    // transcendental (exp2) results per SM/CU per clock (NVIDIA MUFU)
  Sourced lds_bytes_per_cu_per_clock;  // shared memory / LDS bandwidth per SM/CU per clock
  Sourced l2_bandwidth;            // bytes/s the L2 delivers to the CUs
  // Calibrated on a named training set of the machine's own measurements (simulator/validate/
  // calibrate_time.py writes them; absent on machines never measured, where the model uses 1 for
  // the efficiencies and 0 for the per-CTA cost, i.e. the mechanisms alone):
  std::optional<Sourced> calibrated_mma_sync_efficiency;  // share of the dense rate mma.sync loops reach
  std::optional<Sourced> calibrated_wgmma_efficiency;     // same for wgmma loops
  std::optional<Sourced> calibrated_mfma_efficiency;      // same for MFMA loops (no AMD machine measured yet)
  std::optional<Sourced> calibrated_lds_scalar_efficiency;  // element-wise fragment reads from unpadded rows
  std::optional<Sourced> calibrated_cta_fixed_s;          // per CTA: first tiles' latency, O/LSE store
  // The warp-specialized design (TMA producer warp, consumer warpgroups in ping-pong): its wgmma
  // efficiency, and the time a ring stage is held beyond its tile's compute (load issue to data
  // arrival and release: the Little's-law term of a ring of Tiling::stages stages).
  std::optional<Sourced> calibrated_ws_wgmma_efficiency;
  std::optional<Sourced> calibrated_ws_wgmma_head_dim_exponent;  // (d/128)^g scaling of the above
  std::optional<Sourced> calibrated_ring_stage_latency_s;
  // A K/V stream issued inline (Design::kv_inline: the warps that compute issue the next stages'
  // copies between tiles, behind one CTA barrier per tile; v07): the share of a CTA's tile compute
  // during which its own stream does not advance, and the seconds each page of a paged cache that a
  // CTA's K/V range enters adds to that CTA's critical path (the table lookup and the page's address
  // translation). Both on the CTA's serial chain of the expected time (simulate.cpp).
  std::optional<Sourced> calibrated_inline_kv_exposed;
  std::optional<Sourced> calibrated_page_visit_s;
  // Backward tile loops (K/V-outer dK/dV kernels and Q-outer dQ passes): the share of the dense rate
  // their five/four/three matmuls per tile reach, and the fp32 atomic adds of dQ the L2 completes.
  std::optional<Sourced> calibrated_bwd_mma_sync_efficiency;
  std::optional<Sourced> calibrated_bwd_wgmma_efficiency;
  std::optional<Sourced> calibrated_atomic_adds_per_cu_per_clock;
  // The L2 wave model's drift (simulator/README.md, "Three HBM figures"): the progress spread, in key
  // tiles, that co-resident CTAs of one K/V stream gather per tile their slot walked in the waves
  // before; a lockstep wave re-reads the share of the spread's live set the cache cannot hold.
  std::optional<Sourced> calibrated_cta_drift_tiles_per_tile;

  // Measured ceilings beside the datasheet (H200: experiments/gpu/ceilings.py, committed under
  // experiments/results/h200/; the machine file's "source" names the file). Used for time when
  // Options::measured_ceilings is set and the number exists.
  std::optional<Sourced> measured_bandwidth;    // copy (read + write) bytes/s
  std::optional<Sourced> measured_matrix_bf16;  // GEMM FLOP/s
  std::optional<Sourced> measured_matrix_fp16;
  std::optional<Sourced> measured_matrix_fp8;   // FP8 GEMM FLOP/s (the expected time: its ratio to measured_matrix_bf16)
  std::optional<Sourced> measured_vector_fp32;  // fp32 GEMM without TF32

  // The cache the L2 wave model holds working sets against: the Infinity Cache where there is
  // one (it is the last level before HBM), else L2.
  int64_t llc_bytes() const;
  std::string llc_name() const;  // "L2" or "Infinity Cache"
};

// Reads one machine file / every *.json of a folder. Throws SimError naming the file and field.
Machine load_machine(const std::filesystem::path& file);
std::vector<Machine> load_catalog(const std::filesystem::path& dir);
// The folder of the built-in catalog: $IOATTN_MACHINES if set, else simulator/machines of the
// source tree (compiled in).
std::filesystem::path default_catalog_dir();
// The catalog entry called `name` (case-insensitive); SimError listing the known names otherwise.
const Machine& find_machine(const std::vector<Machine>& catalog, std::string_view name);

// ---------------------------------------------------------------------------------------------
// Tiling
// ---------------------------------------------------------------------------------------------

// The strategies, as ONE table. Every place that names, parses, lists, validates or generates a
// strategy reads it: strategy_name / parse_strategy / loop_order below, the CLI's help, defaults
// and error messages (apps/cmd_simulate.cpp), the sweep's defaults and per-row tiling
// (sweep.cpp), option checks (simulate.cpp, strategies.cpp) and the property tests' generators
// (verify/simulator/prop_simulator.cpp). The figure drivers in experiments/ still choose the
// strategies their figure compares. The brute-force trace (verify/simulator/trace.cpp) takes
// nothing from the table but the names and builds its own loops: it stays an independent oracle.
//
// X(id, loop_order, fwd, bwd, tiles, splits, dq, unfused_passes, in_sweep, description)
//   loop_order      unfused | kv_outer | q_outer (LoopOrder below)
//   fwd, bwd        the passes it models (fwdbwd needs both; build_plan rejects the others)
//   tiles           takes Br, Bc (its main kernels are tiled loop nests that must fit the machine)
//   splits          takes Tiling::splits > 1 (--splits)
//   dq              its backward follows Tiling::dq (--dq); the others ignore it (fa1 always
//                   read-modify-writes dQ_i)
//   unfused_passes  takes Options::mask_tensor and Options::dropout (--mask, --dropout)
//   in_sweep        in SweepSpec's and `ioattn sweep`'s default strategy list
//   description     one line, shown by `ioattn simulate --help`
//
// To add a strategy: add ONE line here, then write its loop nest as build_<id>(Ctx&, fwd, bwd) in
// strategies.cpp (the dispatch table there is generated from this list, so a missing builder is
// a compile error). Then give it a closed form in verify/simulator/prop_simulator.cpp
// (closed_forms_no_l2 switches over every strategy) and its own brute-force loops in
// verify/simulator/trace.cpp; the names, CLI, sweep and generators pick it up from here.
// clang-format off
#define IOATTN_STRATEGIES(X) \
  X(standard, unfused,  true, true, false, false, false, true,  true, \
    "unfused kernels, S and P materialized in HBM (FlashAttention paper, Algorithm 0)") \
  X(fa1,      kv_outer, true, true, true,  false, false, false, true, \
    "K/V blocks outer, Q blocks inner: O, m, l re-read and re-written per K/V block (FlashAttention, " \
    "Algorithm 1; one CTA per (batch, head) runs both loops)") \
  X(fa2,      q_outer,  true, true, true,  false, true,  false, true, \
    "Q blocks outer (one CTA each), K/V blocks inner: O stays on chip (FlashAttention-2)") \
  X(splitkv,  q_outer,  true, true, true,  true,  true,  false, true, \
    "fa2 with the K/V loop cut into `splits` ranges, each a CTA writing partial O and LSE (fp32) to " \
    "HBM, then a combine kernel (Flash-Decoding)")
// clang-format on

#define IOATTN_STRATEGY_ID(id, ...) id,
enum class Strategy { IOATTN_STRATEGIES(IOATTN_STRATEGY_ID) };
#undef IOATTN_STRATEGY_ID
enum class LoopOrder { unfused, kv_outer, q_outer };
// How the flash backward produces dQ: accumulated with fp32 atomics into a dQ_accum buffer by
// the K/V-outer kernel (then converted), or by a second, Q-outer kernel that recomputes S and dP.
// fa1 always uses its paper's read-modify-write of dQ_i (the same traffic as atomics).
enum class DqMode { atomic, separate };

// One row of IOATTN_STRATEGIES.
struct StrategyInfo {
  Strategy strategy;
  std::string_view name;
  LoopOrder loop_order;
  bool fwd, bwd;
  bool takes_tiles;
  bool takes_splits;
  bool takes_dq;
  bool takes_unfused_passes;  // --mask, --dropout
  bool in_sweep;
  std::string_view description;
  bool supports(Pass p) const { return (p == Pass::bwd || fwd) && (p == Pass::fwd || bwd); }
};
// Every strategy, in table order.
std::span<const StrategyInfo> strategies();
const StrategyInfo& strategy_info(Strategy s);
// The strategies whose row has `pred` true (every one when pred is null), names joined by `sep`:
// "standard, fa1, fa2, splitkv", "standard|fa1|fa2|splitkv".
std::string strategy_names(std::string_view sep, bool (*pred)(const StrategyInfo&) = nullptr);
// SweepSpec's default: the rows with in_sweep, in table order.
std::vector<Strategy> default_sweep_strategies();

std::string_view strategy_name(Strategy s);
std::optional<Strategy> parse_strategy(std::string_view s);
LoopOrder loop_order(Strategy s);
std::string_view loop_order_name(LoopOrder o);
std::string_view pass_name(Pass p);
std::optional<Pass> parse_pass(std::string_view s);
std::string_view dq_mode_name(DqMode m);

// The order in which a tiled kernel's CTAs are dispatched, which decides the CTAs that share a
// wave of the L2 model (a streaming kernel has no tiles and no order). A tiled kernel's CTAs are
// (head, s, o): head = b * heads_q + h, s the split (0 unless split-KV), o the outer block (query
// block; key block in the K/V-outer backward), T_out outer blocks per split:
//   bh_major          1-D grid (head, s, o), o fastest: every outer block of one head together
//                     (flash-attention's grids, ioattn v03)
//   bh_major_splits   1-D grid (head, o, s), s fastest: the splits of one block together (v03b)
//   qblock_major      2-D grid, x = head (fastest), y = s * T_out + o: one outer block of every
//                     head together, so co-resident CTAs belong to different heads and do not
//                     share K and V (v04)
//   qblock_major_rev  as qblock_major with y = s * T_out + (T_out - 1 - o): last blocks (the heavy
//                     ones under a causal mask) first (v05, v06)
// A kernel with one CTA per head (FA1's sequential outer loop) is the same under every order.
// persistent_<order> (parse_grid_order): a persistent grid of one CTA per SM whose CTA c walks tiles
// c, c + G, ... of <order> (v08p; kernels/tile_scheduler.hpp); wave k is then tiles [kG, (k+1)G) as
// for the non-persistent grid, so it is modeled as <order> (the persistent grid's overlap of one
// tile's epilogue with the next tile's loads is not modeled). v08p's serpentine assignment (odd
// rounds reversed) keeps each wave's tiles, so it is the same order here; the plain round robin's
// drift (CTAs of lighter rounds running ahead, which measured 2.3x the DRAM reads at causal d 128,
// N 16k: experiments/results/h200/2026-12-01_72352b5_v08p_order) is not modeled.
// persistent_bh_major_rev (v08p's head-major order for masked problems: each head's query blocks
// heavy first) is modeled as bh_major: the same heads per wave; the reversal within a head is not.
enum class GridOrder { bh_major, bh_major_splits, qblock_major, qblock_major_rev };
std::string_view grid_order_name(GridOrder g);
std::optional<GridOrder> parse_grid_order(std::string_view s);

// The kernel's pipeline design, which the expected time (not the traffic, except DqPass, the V
// transpose pass and the scalar LDS design's staggered co-resident CTAs) depends on. The registry's variants have it as
// one string per name in kernels/design.hpp ("instr/overlap/lds[/dq=...]", parse_design); the
// registry lines (IOATTN_LADDER, bwd_registry.cpp) carry no design column.
//   MatrixInstr  the matrix instruction: its shape sets the tile padding and its loop the issue
//                efficiency (native: wgmma on sm_90, MFMA on AMD, mma.sync elsewhere; fma: scalar
//                fp32 FMAs on the vector units, the teaching kernels)
//   Overlap      how much softmax work hides under the matrix units:
//                none              serial: matmuls, then the softmax, per tile (FlashAttention-2)
//                intra_warpgroup   the softmax of tile j runs while P_{j-1} V_{j-1} is in flight;
//                                  S_j = Q K_j^T stays exposed (FlashAttention-3's 2-stage pipeline)
//                ping_pong         two warpgroups alternate: one's softmax under the other's matmuls
//                warp_specialized  a producer warp(group) loads, consumers ping-pong (FA3 in full)
//   LdsRead      fragments: conflict-free (ldmatrix, padded or swizzled rows, wgmma descriptors);
//                scalar: element-wise fragment reads from unpadded rows (bank conflicts)
enum class MatrixInstr { native, fma, mma_sync, wgmma, mfma };
enum class Overlap { none, intra_warpgroup, ping_pong, warp_specialized };
enum class LdsRead { fragments, scalar };
// DqPass: the backward's separate dQ pass (--dq separate) as the variant launches it, when that is
// its own kernel with its own tile and grid (bwd02b, bwd03b: a Q-outer kernel on a (b*Hq + h,
// query block) grid, not the K/V-outer main kernel's tile and order). Br = 0: the main kernel's
// tile and grid order (the default, and every strategy's nest without a variant behind it).
// small_d: head dims up to it take the second tile (a variant whose key tile depends on d).
// ctas_per_cu (per tile): its resident CTAs per CU where the variant's own shared memory fixes
// them (0: from the model's single-buffered footprint of the tile).
struct DqPass {
  int64_t Br = 0, Bc = 0, ctas_per_cu = 0;
  GridOrder grid_order = GridOrder::bh_major;
  int64_t small_d = 0, small_Br = 0, small_Bc = 0, small_ctas_per_cu = 0;
};
// v_transpose_pass: the forward writes V^T (keys contiguous) in a separate streaming pass before
// its main kernel, which then reads V^T where it would read V: 8-bit wgmma takes its B operand
// K-major only, so an FP8 P V on Hopper needs V transposed (v09_fp8_wgmma chose a pass over an
// in-kernel transpose). Cost: V read and V^T written once (2 B Hkv Nk d e bytes), one more
// launch, and the V^T workspace (B Hkv Nk d e bytes; the kernel's key padding is not counted).
// Forward of the Q-outer strategies (fa2, splitkv) only.
// The order a Q-outer CTA walks its visible key blocks (design part "walk=up|down"), which decides
// whether CTAs of unequal length read a shared K_j, V_j at about the same time (the L2 wave model's
// lockstep): up (first visible block to last: ioattn's forwards) keeps every CTA that starts at the
// same block in step, down (from the diagonal: FlashAttention-2's forward) every CTA that ends at the
// same block; unspecified: in step only when every CTA runs the same number of tiles.
enum class KvWalk { unspecified, up, down };
// kv_inline ("kv=inline"): the K/V copies of the next stages are issued by the warps that run the tile
// loop, between tiles, behind one CTA barrier per tile (v07: cp.async, no producer warp or TMA). Its
// own stream then advances only while none of its compute is exposed: the expected time adds the CTA's
// serial chain (its bytes at the CU's bandwidth plus the exposed share of its compute, machine
// calibrated_inline_kv_exposed), which co-resident CTAs hide and a single resident CTA does not.
// Default (false): the stream runs under the compute (a producer warp, TMA, or the model's overlap).
// kv_compute_overlapped ("kv=inline-overlapped"): the copies are issued inline as with kv=inline, but the
// tile compute runs under the CTA's own stream (none of it exposed: no kv_inline_exposed term; the page
// visits stay on the chain). A property of the variant's pipeline, written in kernels/design.hpp (v07b).
// table_per_tile ("table=tile"): a paged cache's block table is read once per key of a tile into a
// shared row table that the K and V copies of that key read (v07's page-granular rows); default: one
// lookup per 16-byte copy of K and of V (layout_rows.hpp in v05/v06). Counts (`table_lookups`) only.
// consumer_rows ("rows=R", forward Q-outer kernels): each R-row slice of a query tile (a consumer
// warpgroup's rows: v08p's 64) computes S, the softmax and P V only over the key blocks its own rows
// see, and a slice whose rows all lie past seqlen_q computes nothing; the block still loads every key
// block its rows see. The expected time's tile work then counts (slice, key block) visits of
// min(R, Br) x Bc (KernelResult::slice_tiles); traffic (HBM, L2, LDS), the ring term and the roofline
// ceiling keep the block's visits. Needs Br <= R or Br a multiple of R. 0: the whole tile (every
// other design).
struct Design {
  MatrixInstr instr = MatrixInstr::native;
  Overlap overlap = Overlap::none;
  LdsRead lds = LdsRead::fragments;
  DqPass dq_pass{};
  bool v_transpose_pass = false;
  KvWalk walk = KvWalk::unspecified;
  bool kv_inline = false;
  bool kv_compute_overlapped = false;  // only with kv_inline
  bool table_per_tile = false;
  int64_t consumer_rows = 0;
};
std::string_view matrix_instr_name(MatrixInstr i);
std::string_view overlap_name(Overlap o);
std::string_view lds_read_name(LdsRead l);
// "wgmma/intra-warpgroup/fragments" (the last two parts may be left out: none, fragments), then
// optional parts, each at most once: a separate dQ pass of its own, "dq=ORDER,BRxBC[@N][,d<=D:BRxBC[@N]]"
// (@N: CTAs per CU; e.g. "mma_sync/none/fragments/dq=qblock_major_rev,64x32,d<=64:64x64"), and
// "vt-pass" (Design::v_transpose_pass; e.g. "wgmma/intra-warpgroup/fragments/vt-pass"), and
// "walk=up" or "walk=down" (Design::walk), "kv=inline" (Design::kv_inline) or "kv=inline-overlapped"
// (kv_inline and Design::kv_compute_overlapped), "table=tile"
// (Design::table_per_tile), "rows=R" (Design::consumer_rows; R in [1, 4096]);
// nullopt with `why` naming the bad part otherwise.
std::optional<Design> parse_design(std::string_view s, std::string* why = nullptr);
std::string design_name(const Design& d);
// The instruction a design runs on the machine (native resolved).
MatrixInstr resolve_instr(MatrixInstr i, const Machine& m);

struct Tiling {
  Strategy strategy = Strategy::fa2;
  int64_t Br = 64;               // query rows per tile
  int64_t Bc = 64;               // key/value rows per tile
  int64_t splits = 1;            // K/V ranges per query block (> 1 only where the strategy takes splits)
  int64_t ctas_per_cu = 0;       // 0: as many as LDS, registers and the machine allow
  int64_t stages = 0;            // K/V ring depth of the launch (0: not given; the ring term needs it)
  int64_t page_visits = 0;       // paged KV: pages the CTAs' K/V ranges enter, summed over the CTAs of the
                                 // forward's tiled kernel (layouts.cpp sets it per length group; 0: dense)
  bool q_in_registers = false;   // Q_i held in registers (else staged in LDS) over the inner loop
  bool p_through_lds = false;    // P staged in LDS between S = QK^T and PV (else in registers)
  DqMode dq = DqMode::atomic;    // flash backward, where the strategy takes dq (fa2, splitkv)
  GridOrder grid_order = GridOrder::bh_major;  // dispatch order of the tiled kernels' CTAs
  Design design = Design{};      // pipeline design: the expected time's mechanisms (not traffic)
};

// On-chip footprint of one CTA of the strategy's main kernel (the largest of the pass).
struct Footprint {
  int64_t lds_bytes = 0;       // tiles staged in LDS
  int64_t register_bytes = 0;  // accumulators and register-resident tiles (fp32 where accumulated)
};
Footprint footprint(const AttnProblem& p, const Tiling& t, Pass pass);

// Resident CTAs per CU the tiling gets on the machine (t.ctas_per_cu if set), or 0 when one CTA
// does not fit; `why` names the binding constraint.
int64_t occupancy(const AttnProblem& p, const Machine& m, const Tiling& t, Pass pass,
                  std::string* why = nullptr);
// nullopt when the tiling runs on the machine, else one line naming the constraint.
std::optional<std::string> check_fits(const AttnProblem& p, const Machine& m, const Tiling& t,
                                      Pass pass);

// Block sizes: the FlashAttention paper's rule and a search over feasible tiles.
struct BlockChoice {
  int64_t Br = 0, Bc = 0;
  int64_t M_elems = 0;     // on-chip memory in elements the rule used (paper rule)
  bool fits = false;       // passes check_fits as a Tiling of the strategy
  std::string rule;        // how it was chosen, one line
};
// Bc = ceil(M / 4d), Br = min(ceil(M / 4d), d), M = LDS per CU in elements of the dtype.
BlockChoice paper_block_sizes(const AttnProblem& p, const Machine& m, Strategy s = Strategy::fa2,
                              Pass pass = Pass::fwd);
// Every (Br, Bc) in {16, 32, 64, 128, 256}^2 that fits LDS and registers; the one with the least
// expected time for base's design (ties: least HBM traffic, then larger tiles). Empty Br = 0 when none fits.
struct Options;
BlockChoice search_block_sizes(const AttnProblem& p, const Machine& m, const Tiling& base,
                               const Options& o);

// ---------------------------------------------------------------------------------------------
// Simulation
// ---------------------------------------------------------------------------------------------

struct Options {
  Pass pass = Pass::fwd;
  bool no_l2 = false;            // HBM = LDS reuse only (every global access reaches HBM)
  bool mask_tensor = false;      // standard: an explicit (N_q, N_k) additive mask in its own pass
  double dropout = 0.0;          // standard: > 0 adds a dropout pass (forward and backward)
  bool measured_ceilings = true; // time from measured ceilings where the machine has them
};

struct Traffic {
  int64_t read = 0;
  int64_t write = 0;
  int64_t total() const { return read + write; }
  Traffic& operator+=(const Traffic& o) {
    read += o.read;
    write += o.write;
    return *this;
  }
};

// One tensor's traffic inside one kernel (all levels), for teaching and for the trace tests.
struct TensorTraffic {
  std::string tensor;       // "Q", "K", "V", "O", "LSE", "m", "l", "S", "P", "dQ_accum", ...
  int64_t elem_bytes = 0;   // bytes per element as stored
  Traffic hbm;              // as modeled (L2-aware unless --no-l2)
  Traffic hbm_no_l2;        // every global access
  Traffic hbm_compulsory;   // distinct bytes the kernel must touch
};

// One named term of the expected time: seconds it stands for on its own (terms on parallel paths
// overlap; README "Expected time" gives the formula), and the machine parameter behind it.
struct ExpectedTerm {
  std::string term;       // "matrix_issue", "partial_tiles", "exp_sfu", "fp32_vector", ...
  double seconds = 0.0;
  std::string parameter;  // catalog field (or design field) it uses, e.g. "sfu_per_cu_per_clock"
  double value = 0.0;     // that parameter's value
};

struct KernelResult {
  std::string name;             // "fa2_fwd", "qk_gemm", "softmax", "combine", ...
  int64_t grid = 0;             // CTAs launched
  int64_t ctas_per_cu = 0;      // occupancy used by the wave model and the roofline
  int64_t waves = 0;            // ceil(grid / (CUs * ctas_per_cu))
  double wave_efficiency = 1.0; // grid / (waves * CUs * ctas_per_cu)
  Traffic hbm, hbm_no_l2, hbm_compulsory;
  Traffic l2;                   // bytes requested from L2 by the CUs (= every global access)
  Traffic lds;
  double matrix_flops = 0.0;    // exact FLOPs of the tiles computed (2 per MAC)
  double other_flops = 0.0;     // softmax, scaling, rescaling, masking, dropout (see README)
  std::string l2_regime;        // "no-l2", "streaming", "fits", "exceeds", "mixed"
  double l2_hit_rate = 0.0;     // 1 - hbm.read / l2.read
  // Tiled kernels: visible tiles (all heads and splits), the most any one CTA runs, and the
  // elements of their score tiles (exact rows; the full Br x Bc is what a kernel computes).
  int64_t tiles = 0, max_cta_tiles = 0;
  double score_elems = 0.0;
  // Design rows=R (Design::consumer_rows; forward Q-outer kernels, else slice_rows = 0 and these
  // are 0): the tile loop's compute visits, (row slice, key block) pairs of slice_rows = min(R, Br)
  // rows, each over the key blocks the slice's own rows see (nest.cpp; slices past seqlen_q none),
  // the most any one CTA runs, and their score elements (exact rows). `tiles` stays the block's
  // visits (its K/V loads).
  int64_t slice_rows = 0, slice_tiles = 0, max_cta_slice_tiles = 0;
  double slice_score_elems = 0.0;
  double exp_per_score = 0.0;   // exponentials per score element (softmax, or P recomputed)
  int matmuls_per_tile = 0;
  bool backward = false;        // a backward tile loop (the calibrated_bwd_* efficiencies apply)
  int64_t atomic_width = 0;     // fp32 atomic adds per inner row per visible tile (dQ += dS K_j: d)
  double t_compute_s = 0.0, t_memory_s = 0.0;
  double ceiling_time_s = 0.0;  // roofline: max(FLOPs / rate, bytes / bandwidth) / wave efficiency + launch
  double time_s = 0.0;          // expected: the mechanisms below (= ceiling_time_s for streaming kernels)
  std::string bound;            // of the ceiling: "compute", "memory" or "launch"
  std::string expected_bound;   // the path that sets the expected time: "compute", "memory", "launch"
  std::vector<ExpectedTerm> expected_terms;
  std::vector<TensorTraffic> tensors;
};

struct Result {
  AttnProblem problem;
  std::string machine;
  Tiling tiling;
  Options options;
  int64_t ctas_per_cu = 0;
  std::vector<KernelResult> kernels;
  // Totals over kernels.
  Traffic hbm, hbm_no_l2, hbm_compulsory, l2, lds;
  double matrix_flops = 0.0, other_flops = 0.0;
  double flops() const { return matrix_flops + other_flops; }
  double conventional_flops = 0.0;  // flops.hpp convention, for TFLOP/s comparable to papers
  int64_t extra_memory_bytes = 0;   // peak device memory beyond Q, K, V, O (and dO, dQ, dK, dV)
  double time_s = 0.0;              // expected (sum over kernels)
  double ceiling_time_s = 0.0;      // roofline ceiling (sum over kernels): no kernel beats it
  std::string bound;                // ceiling bound of the kernel that takes the most time
  std::string expected_bound;       // expected-time path of the kernel that takes the most time
  std::vector<ExpectedTerm> expected_terms;  // summed over kernels, by term
  std::string l2_regime;            // of the main kernel
};

// The model. Throws SimError for an invalid problem, a tiling that does not fit the machine,
// options the strategy does not support, or an FP8 problem (dtype fp8_e4m3 / fp8_e5m2: Q, K, V of
// 1 byte, O in its output dtype, the machine's matrix_fp8 rate) that is not a forward or runs on a
// machine without FP8 matrix units.
Result simulate(const AttnProblem& p, const Machine& m, const Tiling& t, const Options& o = {});

// Same, without the fit check (the sweep and the search also report tilings that do not fit);
// a requested Tiling::ctas_per_cu is used as given even where the modeled footprint would not
// fit it (a measured occupancy), else the occupancy is the footprint's (at least 1).
Result simulate_unchecked(const AttnProblem& p, const Machine& m, const Tiling& t, const Options& o);

// ---------------------------------------------------------------------------------------------
// Sweep: tidy rows, one per machine x strategy x N x tiling x pass (columns in README.md).
// ---------------------------------------------------------------------------------------------

struct TilingPreset {
  std::string name;  // "64x64", "128x64", "128x128", "search"
  int64_t Br = 0, Bc = 0;  // 0, 0: search_block_sizes per row
};
std::vector<TilingPreset> default_tiling_presets();

struct SweepSpec {
  std::vector<std::string> machines;     // catalog names; empty: all
  std::vector<Strategy> strategies = default_sweep_strategies();
  std::vector<int64_t> seqlens;          // N (seqlen_q = seqlen_k = N); empty: 128 .. 65536
  std::vector<TilingPreset> tilings;     // empty: default_tiling_presets()
  std::vector<Pass> passes{Pass::fwd};
  AttnProblem base;                      // batch, heads, head_dim, dtype, mask of every row
  int64_t tokens = 0;                    // > 0: batch = max(1, tokens / N) per row
  int64_t splits = 4;                    // for the strategies that take splits
  Options options;                       // no_l2, mask_tensor, dropout, ceilings (pass is per row)
};

struct SweepRow {
  std::string machine, strategy, tiling, pass;
  AttnProblem problem;
  int64_t Br = 0, Bc = 0, splits = 1, ctas_per_cu = 0;
  bool fits = false;
  Result result;
};

std::vector<SweepRow> sweep(const SweepSpec& spec, const std::vector<Machine>& catalog);
// The CSV header and rows (RFC 4180, '.' decimal point, no quoting needed: no commas in fields).
std::vector<std::string> sweep_csv_columns();
void write_sweep_csv(std::ostream& out, const std::vector<SweepRow>& rows);

}  // namespace ioattn::sim

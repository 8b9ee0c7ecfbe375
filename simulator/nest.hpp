// simulator/nest.hpp: the loop-nest description of a kernel, and the counter that walks it.
//
// A strategy (strategies.cpp) is a list of kernels. A kernel is one of two shapes:
//
//   TiledKernel      for (b, h) in batch x heads_q:            // grid; dispatch order: Tiling::grid_order
//                      for s in splits:                        // split-KV ranges (1 otherwise)
//                        for o in outer blocks:                // one CTA each, or all in one CTA
//                          [outer accesses: tile o of a tensor along the outer axis]
//                          for inner blocks t visible to o (and inside split s):
//                            [inner accesses: tile t of a tensor along the inner axis]
//                            matmuls on the (rows(o), rows(t)) score tile
//
//   StreamKernel     every listed tensor read or written once per (b, h) (unfused GEMMs and
//                    elementwise passes; the unfused GEMMs are counted as the FlashAttention paper's
//                    Algorithm 0 counts them: operands once).
//
// Nothing here knows FlashAttention: traffic, FLOPs, LDS traffic and the L2 wave model all follow
// from the loop bounds, the mask (ioattn::MaskSpec) and the accesses' placement in the nest.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ioattn/problem.hpp"
#include "simulator/simulator.hpp"

namespace ioattn::sim::detail {

// Which instance of a tensor a (b, h) iteration touches.
enum class Heads {
  q,       // one per (b, query head): Q, O, LSE, dO, dQ, partial O, ...
  kv,      // one per (b, key/value head): K, V; shared by the heads_q / heads_kv query heads of a group
  shared,  // one for the whole problem: an explicit (N_q, N_k) mask tensor broadcast over b and h
};

// One tensor access of a tiled kernel.
struct TiledAccess {
  std::string tensor;
  Heads heads = Heads::q;
  bool outer_axis = false;    // tile rows follow the outer loop (else the inner loop)
  bool write = false;         // else read
  bool split_private = false; // each split writes its own copy (partial O / LSE): no sharing
  int64_t width = 0;          // elements per row: d for matrices, 1 for LSE, m, l, D
  int64_t elem_bytes = 0;
  int lds_uses = 0;           // staged in LDS and read this many times per visible tile (0: not staged)
};

// A tile-sized intermediate that lives in LDS (P or dS between two matmuls).
struct LdsIntermediate {
  std::string name;
  int64_t elem_bytes = 0;
  int reads_per_tile = 1;
};

struct TiledKernel {
  std::string name;
  bool outer_is_q = true;        // outer blocks are query blocks of Br rows (else key blocks of Bc)
  bool sequential_outer = false; // one CTA per (b, h) walks every outer block (FlashAttention-1)
  int64_t splits = 1;            // inner range cut into this many CTAs per outer block
  int matmuls_per_tile = 0;      // (rows x cols x d) matmuls per visible tile, 2 FLOPs per MAC
  bool backward = false;         // a backward tile loop (dK/dV or dQ)
  int64_t atomic_width = 0;      // fp32 atomic adds per inner row per visible tile (dQ by atomics: d)
  double other_per_score = 0.0;  // non-matmul FLOPs per score element of a visible tile
  double exp_per_score = 1.0;    // of those, exponentials (the special-function unit's work)
  double other_per_row_d_tile = 0.0;   // per (row x d) element per visible tile (O rescaling)
  double other_per_row_d_outer = 0.0;  // per (row x d) element per outer block (final 1/l)
  std::vector<TiledAccess> accesses;
  std::vector<LdsIntermediate> lds_intermediates;
  Footprint footprint;           // one CTA's LDS and registers
  // A kernel with a tile and grid of its own (a variant's separate dQ pass, Design::dq_pass):
  // Br > 0 replaces the Tiling's Br, Bc and grid order for this kernel, and its occupancy comes
  // own_ctas_per_cu where given, else from its footprint (the Tiling's ctas_per_cu describes the
  // main kernel).
  int64_t own_Br = 0, own_Bc = 0, own_ctas_per_cu = 0;
  GridOrder own_grid_order = GridOrder::bh_major;
};

// The Tiling one kernel of the plan runs with: `t`, or its own tile and grid order (above).
Tiling kernel_tiling(const Tiling& t, const TiledKernel& k);

struct StreamAccess {
  std::string tensor;
  Heads heads = Heads::q;
  bool write = false;
  int64_t rows = 0;   // per instance
  int64_t width = 0;  // elements per row
  int64_t elem_bytes = 0;
};

struct StreamKernel {
  std::string name;
  int64_t ctas_per_head = 1;     // for wave quantization only
  double matrix_flops_per_head = 0.0;
  double other_flops_per_head = 0.0;
  int64_t lds_bytes_per_head = 0;  // staged through LDS (GEMM operand tiles): written once, read once
  std::vector<StreamAccess> accesses;
  // The kernel iterates (b, query head) (the default) or (b, K/V head) (a pass over K or V alone,
  // e.g. the V transpose: each K/V head is read once, not once per query head of its group).
  bool over_kv_heads = false;
};

struct PlannedKernel {
  bool tiled = false;
  TiledKernel t;
  StreamKernel s;
  const std::string& name() const { return tiled ? t.name : s.name; }
};

// A device buffer beyond the user tensors, for the peak-memory count: live from the first to the
// last kernel (index into the plan) that touches it.
struct Buffer {
  std::string name;
  int64_t bytes = 0;
  int first = 0, last = 0;
};

struct Plan {
  std::vector<PlannedKernel> kernels;
  std::vector<Buffer> buffers;  // extra device memory
};

// Builds the kernels of one strategy and pass (strategies.cpp). Throws SimError for unsupported
// combinations (e.g. an explicit mask tensor with a fused strategy).
Plan build_plan(const AttnProblem& p, const Tiling& t, const Options& o);

// Counts one kernel (nest.cpp). `ctas_per_cu` is the occupancy, `llc_bytes` the cache the wave
// model holds working sets against (ignored when no_l2). `sharing_ctas_per_cu` (0: the occupancy)
// is how many co-resident CTAs per CU progress together, i.e. the L2 wave model's group is
// compute_units x it CTAs of the dispatch order (1: staggered co-resident CTAs, simulate.cpp).
// `drift_tiles_per_tile` (0: none; the catalog's calibrated_cta_drift_tiles_per_tile) is the progress
// spread, in inner tiles, that a group gathers per tile its slot has walked (nest.cpp's wave model).
KernelResult count_tiled(const AttnProblem& p, const Tiling& t, const TiledKernel& k,
                         int64_t compute_units, int64_t ctas_per_cu, int64_t llc_bytes, bool no_l2,
                         int64_t sharing_ctas_per_cu = 0, double drift_tiles_per_tile = 0.0);
KernelResult count_stream(const AttnProblem& p, const StreamKernel& k, int64_t compute_units,
                          int64_t llc_bytes, bool no_l2);

// The visible inner-block range [begin, end) of outer block o (empty: begin == end), from the
// mask alone. Exposed for tests.
struct BlockRange {
  int64_t begin = 0, end = 0;
};
BlockRange visible_inner_blocks(const MaskSpec& mask, bool outer_is_q, int64_t Br, int64_t Bc,
                                int64_t o);
// The key blocks (of Bc keys) that query rows [i0, i1) see, rows past seqlen_q left out (empty when
// none of them sees a key): a query block's range above, and a row slice's (Design::consumer_rows).
BlockRange visible_key_blocks(const MaskSpec& mask, int64_t Bc, int64_t i0, int64_t i1);

}  // namespace ioattn::sim::detail

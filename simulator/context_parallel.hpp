// simulator/context_parallel.hpp: a model of context-parallel (ring) attention over P GPUs.
//
// The sequence is cut into P rank chunks (python/ring_attention.py's layouts): contiguous, or
// zigzag (2P chunks, rank r holding chunks r and 2P - 1 - r). Step t of the ring: rank r runs the
// block (its queries, the K/V chunk of rank r - t) while the next K/V chunk travels to it over the
// link, then merges the block's (O, LSE) into its accumulators. Per step and rank:
//
//   compute_r(t) = expected time of the block on one GPU (simulate(), the single-GPU model, with
//                  the block's Nq, Nk and mask: unmasked, causal on the diagonal, or skipped)
//                  + merge (fwd: read/write the fp32 O accumulator, read the block's O and LSE;
//                  bwd: accumulate dQ, dK, dV in fp32) at the HBM bandwidth
//   transfer(t)  = bytes of the chunk that arrives next / link bandwidth + link latency
//                  (fwd: K and V; bwd: K, V and the travelling fp32 dK, dV buffers)
//   step(t)      = max(max_r compute_r(t), transfer(t))        transfer hidden under compute
//   T_P          = sum_t step(t) (+ bwd: the last dK, dV hop, not overlapped)
//
// The lockstep sum is what the slowest rank sets: a rank cannot start step t + 1 before the chunk
// of step t arrived, and under a causal mask with contiguous chunks the last rank computes a full
// block on every step while the first skips all but the diagonal (imbalance); zigzag gives every
// rank the same work per step. Scaling efficiency = T_1 / (P T_P), T_1 the single-GPU expected
// time of the whole problem (simulate()).
//
// What it leaves out (a model, not a measurement): NCCL's own costs beyond one latency per step,
// contention of the copy engines / SMs the transfers use with the kernel, the kernel's slowdown
// when it shares HBM with incoming transfers, tail effects of small blocks beyond what simulate()
// models, the all-to-all (Ulysses) variant, and multi-node links.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "simulator/simulator.hpp"

namespace ioattn::sim {

enum class CpLayout { contiguous, zigzag };
std::optional<CpLayout> parse_cp_layout(std::string_view s);
std::string_view cp_layout_name(CpLayout l);

// A GPU-to-GPU link as the ring uses it: bytes/s per direction to the ring neighbour, and a
// per-transfer latency; each number with its source.
struct CpLink {
  std::string name;  // "peer" (NVLink / Infinity Fabric) or "pcie"
  Sourced bandwidth;
  Sourced latency_s;
};
// Reads the link fields of machine m from its catalog file (the *.json in `catalog_dir` whose
// "name" is m.name): link_peer_bandwidth or link_pcie_bandwidth, and link_latency_s. which:
// "peer" (aliases: "nvlink" on NVIDIA, "xgmi" on AMD) or "pcie". SimError naming the missing field
// or the bad name.
CpLink load_cp_link(const std::filesystem::path& catalog_dir, const Machine& m, std::string_view which);

// Rank chunks of a sequence of n rows: per rank, its (start, length) ranges (lengths within one,
// as python/ring_attention.py's chunk_ranges). SimError when n < the chunk count.
std::vector<std::vector<std::pair<int64_t, int64_t>>> cp_chunks(int64_t n, int64_t ranks, CpLayout layout);

// The block rank `rank` computes against the K/V chunk of rank `src` (one kernel call): Nq, Nk and
// whether it is causal; nq = 0 when the pair is skipped (every key after every query).
struct CpBlock {
  int64_t nq = 0, nk = 0;
  bool causal = false;
};
CpBlock cp_block(const std::vector<std::vector<std::pair<int64_t, int64_t>>>& chunks, int64_t rank, int64_t src,
                 bool causal);

struct CpStep {
  int64_t step = 0;
  double compute_max_s = 0.0;   // the slowest rank's block + merge
  double compute_min_s = 0.0;   // the fastest rank's
  double transfer_s = 0.0;      // the chunk arriving for the next step (0 on the last forward step)
  int64_t transfer_bytes = 0;
  double time_s = 0.0;          // max(compute_max_s, transfer_s)
};

struct CpResult {
  int64_t ranks = 1;
  CpLayout layout = CpLayout::contiguous;
  Pass pass = Pass::fwd;
  std::string link;
  double link_bandwidth = 0.0;
  double single_gpu_s = 0.0;     // T_1: simulate() of the whole problem
  double time_s = 0.0;           // T_P
  double compute_bound_s = 0.0;  // sum_t max_r compute_r(t): T_P with an infinitely fast link
  double exposed_transfer_s = 0.0;  // time_s - compute_bound_s
  double efficiency = 0.0;       // T_1 / (P T_P)
  double imbalance = 1.0;        // max_r sum_t compute_r(t) / mean_r sum_t compute_r(t)
  int64_t score_pairs = 0;       // (query, key) pairs visible over all blocks (= the whole problem's)
  std::vector<CpStep> steps;
};

// The model above. p: the whole problem (seqlen_q = seqlen_k = N, no window); t, o: the single-GPU
// tiling and options (o.pass fwd or bwd) every block is modeled with. SimError for a window, for
// seqlen_q != seqlen_k, ranks < 1, fwdbwd, or a block the tiling does not fit.
CpResult simulate_cp(const AttnProblem& p, const Machine& m, const Tiling& t, const Options& o, int64_t ranks,
                     CpLayout layout, const CpLink& link);

}  // namespace ioattn::sim

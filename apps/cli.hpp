// apps/cli.hpp: what every `ioattn` subcommand shares: the problem flags, the usage error and the
// way a subcommand registers itself.
//
// A subcommand lives in its own file (cmd_reference.cpp, cmd_simulate.cpp, cmd_kernels.cpp) and
// exposes one `add_*_commands` function that main() calls. Any bad input ends in a UsageError:
// main prints it as one line and exits with code 2.
#pragma once

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "ioattn/problem.hpp"

namespace ioattn::cli {

inline constexpr int kUsageExit = 2;

// Bad input: printed as "ioattn: error: <what>" and exit code 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The problem flags shared by all subcommands: --batch, --heads | --heads-q/--heads-kv,
// --seqlen | --seqlen-q/--seqlen-k, --head-dim, --dtype, --causal, --window L,R, --scale, --seed,
// and for FP8 dtypes --q-descale, --k-descale, --v-descale, --out-dtype.
struct ProblemFlags {
  int64_t batch = 1;
  int64_t heads = 0, heads_q = 0, heads_kv = 0;
  int64_t seqlen = 0, seqlen_q = 0, seqlen_k = 0;
  int64_t head_dim = 64;
  std::string dtype = "fp32";
  bool causal = false;
  std::string window;  // "L,R"
  double scale = 0.0;  // 0: not given
  uint64_t seed = 0;
  // FP8 dtypes only (problem.hpp, Fp8Scaling): descales as "x" (per tensor) or "x0,x1,..." (one per
  // K/V head), and the output dtype bf16|fp16 (empty: bf16).
  std::string q_descale, k_descale, v_descale, out_dtype;

  // Defaults a subcommand wants when the user gives no size (e.g. a tiny demo problem).
  int64_t default_heads = 1;
  int64_t default_seqlen = 128;

  // Layout flags (ioattn/layout.hpp), registered only when a subcommand sets layout_flags before
  // add_to: --seqlens-q 5,0,17 (packed queries), --seqlens-k 9,3,17 (packed keys, or with
  // --page-size each sequence's keys in the cache), --page-size N (paged KV cache), --shuffle-pages
  // (block table a permutation drawn from --seed), --spare-pages N (pages no sequence uses).
  bool layout_flags = false;
  std::string seqlens_q, seqlens_k;
  int64_t page_size = 0;
  bool shuffle_pages = false;
  int64_t spare_pages = 0;

  void add_to(CLI::App& app);
  // The AttnProblem the flags describe, validated; throws UsageError naming the constraint.
  AttnProblem problem() const;
  void apply_layout(AttnProblem& p) const;  // the layout flags onto p (problem() calls it)
};

// " q_descale=... k_descale=... v_descale=... out=..." for an FP8 problem (a missing descale is 1),
// "" for every other: the FP8 part of a problem's one-line description (reference, run).
std::string fp8_description(const AttnProblem& p);

// A registered subcommand: its CLI11 node and what to run when it was chosen.
struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};
using Commands = std::vector<Command>;

// Each subcommand file defines one of these; main() calls them in this order.
void add_reference_commands(CLI::App& root, Commands& out);  // reference
void add_simulator_commands(CLI::App& root, Commands& out);  // simulate, sweep, machines
void add_kernel_commands(CLI::App& root, Commands& out);     // run, kernels
void add_cp_commands(CLI::App& root, Commands& out);         // cp (cmd_cp.cpp)

}  // namespace ioattn::cli

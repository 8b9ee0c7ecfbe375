// apps/cmd_kernels.cpp: `ioattn run` (one GPU kernel variant on one problem) and `ioattn kernels`
// (the ladder, with what each variant supports).
//
//   ioattn kernels [--config [problem flags] [--br --bc --splits]]
//   ioattn run --kernel v03_fa2_scalar --seqlen 1024 --heads 16 --head-dim 128 --dtype bf16 --check
//
// `kernels` lists the ladder (one line per variant: scripts read the first word of each line);
// with --config it adds the launch configuration every variant would use for one problem on this GPU (tile, stages, threads, shared memory, CTAs per SM, grid, grid order; the
// registry's config(), the same code path as the launch) or why it refuses it. `run` prints that
// line for the problem it runs.
// `run` generates inputs with the reference's generator (reference/reference.hpp, --seed), runs
// the kernel once on NaN-poisoned outputs, times --iters launches (CUDA/HIP events, median) and
// reports TFLOP/s by the FlashAttention-2 convention (include/ioattn/flops.hpp). --check compares
// O and LSE with the float64 reference under the error rule and exits 1 when it fails.
// Unsupported problems are refused with the violated constraint and exit code 2.
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli.hpp"
#include "ioattn/flops.hpp"
#include "kernels/check.hpp"
#include "kernels/harness.hpp"
#include "kernels/launch.hpp"
#include "reference.hpp"

namespace ioattn::cli {
namespace {

struct RunFlags {
  ProblemFlags problem;
  std::string kernel;
  bool check = false;
  int iters = 20;
  int warmup = 3;
  kernels::KernelOptions opt;
  bool json = false;
  bool profile = false;
};

std::string kernel_names() {
  std::string names;
  for (const auto& k : kernels::registry()) names += (names.empty() ? "" : ", ") + std::string(k.name);
  return names;
}

std::string shape_of(const AttnProblem& p) {
  return fmt::format(
      "batch={} heads_q={} heads_kv={} seqlen_q={} seqlen_k={} head_dim={} dtype={} causal={} window={},{}",
      p.batch, p.heads_q, p.heads_kv, p.seqlen_q, p.seqlen_k, p.head_dim, dtype_name(p.dtype), p.causal ? 1 : 0,
      p.window_left, p.window_right);
}

void check_options(const kernels::KernelOptions& opt) {
  if (opt.br < 0 || opt.bc < 0 || opt.splits < 0) throw UsageError("--br, --bc, --splits must be >= 0");
}

struct ListFlags {
  ProblemFlags problem;
  kernels::KernelOptions opt;
  bool config = false;
};

int list_kernels(const ListFlags& f) {
  const AttnProblem p = f.problem.problem();
  check_options(f.opt);
  fmt::print("{:<18} {:<9} {:<15} {:<10} {:<6} {}\n", "variant", "strategy", "dtypes", "head_dim",
             "tiles", "idea");
  for (const auto& k : kernels::registry())
    fmt::print("{:<18} {:<9} {:<15} {:<10} {:<6} {}\n", k.name, k.strategy, k.dtypes, k.head_dims,
               k.takes_tile_sizes ? "br,bc" : "-", k.idea);
  if (!kernels::built_with_gpu()) {
    fmt::print("\n(this build has no GPU support: nvcc was not found, `ioattn run` is disabled)\n");
    return 0;
  }
  if (!f.config) return 0;
  fmt::print("\nlaunch configuration for {}\n", shape_of(p));
  if (auto why = kernels::gpu_unavailable()) {
    fmt::print("(not available: {}; the CTAs per SM come from the device)\n", *why);
    return 0;
  }
  fmt::print("on {}:\n", kernels::device_description());
  for (const auto& k : kernels::registry()) {
    kernels::LaunchConfig c;
    if (auto e = k.config(p, f.opt, c))
      fmt::print("{:<20} refused: {}\n", k.name, *e);
    else
      fmt::print("{:<20} {}\n", k.name, kernels::format_config(c, ' '));
  }
  return 0;
}

int run_kernel(const RunFlags& f) {
  if (!kernels::built_with_gpu())
    throw UsageError("built without GPU support (nvcc was not found at configure time)");
  const kernels::KernelInfo* k = kernels::find_kernel(f.kernel);
  if (!k) throw UsageError(fmt::format("unknown kernel '{}' (known: {})", f.kernel, kernel_names()));
  const AttnProblem p = f.problem.problem();
  if (f.iters < 1) throw UsageError("--iters must be >= 1");
  check_options(f.opt);
  if (auto e = k->supports(p, f.opt)) throw UsageError(*e);  // names the variant and the constraint
  if (auto e = kernels::gpu_unavailable()) throw UsageError(*e);
  kernels::LaunchConfig cfg;  // what the launch below uses (same code path)
  if (auto e = k->config(p, f.opt, cfg)) throw UsageError(fmt::format("{}: {}", k->name, *e));
  if (f.check)
    if (auto e = ref::memory_error(p, ref::Algorithm::naive_forward))
      throw UsageError(fmt::format("--check: {}", *e));

  kernels::LaunchStatus st;
  auto dev = kernels::DeviceRun::create(*k, p, f.opt, st);
  if (!dev) throw UsageError(fmt::format("{}: {}", k->name, st.value_or("allocation failed")));
  const ref::Inputs in = ref::make_inputs(p, f.problem.seed);
  if ((st = dev->upload(in.q, in.k, in.v))) throw UsageError(*st);
  if ((st = dev->run())) throw UsageError(fmt::format("{}: {}", k->name, *st));
  kernels::HostOutputs out;
  if ((st = dev->download(out))) throw UsageError(*st);
  if (f.profile) {  // one launch inside a profiler range, no timing loop (for ncu)
    if ((st = dev->profile_once())) throw UsageError(fmt::format("{}: {}", k->name, *st));
    fmt::print("profiled one launch of {} ({})\n", k->name, kernels::device_description());
    return 0;
  }
  kernels::Timing t;
  if ((st = dev->time(f.warmup, f.iters, t))) throw UsageError(fmt::format("{}: {}", k->name, *st));
  const double tflops = conventional_fwd_flops(p) / (t.median_ms * 1e-3) / 1e12;

  std::optional<kernels::CheckResult> chk;
  if (f.check) chk = kernels::check_outputs(p, kernels::expected_outputs(p, in), out);

  const std::string shape = shape_of(p);
  if (f.json) {
    nlohmann::json j = {{"kernel", k->name},       {"device", kernels::device_description()},
                        {"problem", shape},        {"iters", t.iters},
                        {"median_ms", t.median_ms}, {"min_ms", t.min_ms},
                        {"max_ms", t.max_ms},      {"tflops", tflops},
                        {"device_bytes", dev->device_bytes()}, {"seed", f.problem.seed},
                        {"config", kernels::format_config(cfg, ';')}};
    if (chk) {
      j["check_pass"] = chk->pass();
      j["o_max_err"] = chk->o.out.max_err;
      j["o_bound"] = chk->o.bound;
      j["lse_max_err"] = chk->lse.out.max_err;
      j["lse_bound"] = chk->lse.bound;
    }
    fmt::print("{}\n", j.dump());
  } else {
    fmt::print("kernel  {}\ndevice  {}\nproblem {}\n", k->name, kernels::device_description(), shape);
    fmt::print("config  {}\n", kernels::format_config(cfg, ' '));
    fmt::print("time    median {:.4f} ms (min {:.4f}, max {:.4f}, {} iters)  {:.2f} TFLOP/s (FA2 convention)\n",
               t.median_ms, t.min_ms, t.max_ms, t.iters, tflops);
    fmt::print("memory  {:.1f} MiB on the device (inputs, outputs, workspace)\n",
               static_cast<double>(dev->device_bytes()) / (1 << 20));
    if (chk) fmt::print("{}\n", chk->describe(fmt::format("check {}", k->name), f.problem.seed));
  }
  return chk && !chk->pass() ? 1 : 0;
}

}  // namespace

void add_kernel_commands(CLI::App& root, Commands& out) {
  auto lflags = std::make_shared<ListFlags>();
  auto* list = root.add_subcommand(
      "kernels", "List the GPU kernel variants (the ladder), what each supports, and the launch configuration "
                 "each would use for one problem");
  lflags->problem.default_heads = 16;
  lflags->problem.default_seqlen = 4096;
  lflags->problem.head_dim = 128;
  lflags->problem.dtype = "bf16";
  lflags->problem.add_to(*list);
  list->add_flag("--config", lflags->config,
                 "also print the launch configuration each variant would use for the problem (needs a GPU)");
  list->add_option("--br", lflags->opt.br, "query rows per block Br (0 = each variant's default)");
  list->add_option("--bc", lflags->opt.bc, "key rows per block Bc (0 = each variant's default)");
  list->add_option("--splits", lflags->opt.splits, "key splits (split-KV variants; 0 = default)");
  out.push_back({list, [lflags] { return list_kernels(*lflags); }});

  auto flags = std::make_shared<RunFlags>();
  auto* run = root.add_subcommand("run", "Run one GPU kernel variant on one problem (time it; --check it)");
  flags->problem.default_heads = 4;
  flags->problem.default_seqlen = 256;
  flags->problem.add_to(*run);
  run->add_option("--kernel", flags->kernel, "variant name (see `ioattn kernels`)")->required();
  run->add_flag("--check", flags->check, "compare O and LSE with the float64 reference (error rule)");
  run->add_option("--iters", flags->iters, "timed launches (median reported)")->capture_default_str();
  run->add_option("--warmup", flags->warmup, "untimed launches first")->capture_default_str();
  run->add_option("--br", flags->opt.br, "query rows per block Br (variants with tiles; 0 = default)");
  run->add_option("--bc", flags->opt.bc, "key rows per block Bc (variants with tiles; 0 = default)");
  run->add_option("--splits", flags->opt.splits, "key splits (split-KV variants; 0 = default)");
  run->add_flag("--json", flags->json, "print one JSON object instead of text");
  run->add_flag("--profile", flags->profile,
                "one launch between cudaProfilerStart/Stop and nothing else (ncu --profile-from-start off)");
  out.push_back({run, [flags] { return run_kernel(*flags); }});
}

}  // namespace ioattn::cli

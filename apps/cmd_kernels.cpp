// apps/cmd_kernels.cpp: `ioattn run` (one GPU kernel variant on one problem; with --backward a
// forward and a backward) and `ioattn kernels` (both ladders, with what each variant supports).
//
//   ioattn kernels [--config [problem flags] [--br --bc --splits]]
//   ioattn run --kernel v03_fa2_scalar --seqlen 1024 --heads 16 --head-dim 128 --dtype bf16 --check
//   ioattn run --backward [--bwd-kernel bwd01_fa2_scalar] [--kernel FORWARD] --seqlen 1024 --check
//
// `kernels` lists the forward ladder (one line per variant: scripts read the first word of each
// line), then the backward ladder in a second section; with --config it adds the launch
// configuration every variant would use for one problem on this GPU (tile, stages, threads, shared
// memory, CTAs per SM, grid, grid order; the registry's config(), the same code path as the
// launch; a backward's is its K/V-outer kernel's) or why it refuses it. `run` prints that line for
// the problem it runs.
// `run` generates inputs with the reference's generator (reference/reference.hpp, --seed), runs
// the kernel once on NaN-poisoned outputs, times --iters launches (CUDA/HIP events, median) and
// reports TFLOP/s by the FlashAttention-2 convention (include/ioattn/flops.hpp). --check compares
// O and LSE with the float64 reference under the error rule and exits 1 when it fails.
// `run --backward` runs the forward (--kernel, default the backward's pairs_with) and then the
// backward (--bwd-kernel, default the first backward that pairs with --kernel, else the first of
// the ladder) on the forward's O and LSE, with dQ, dK, dV NaN-poisoned first (harness_bwd.hpp);
// --br/--bc are the backward's tiles, the forward runs with its defaults. It times the forward,
// the backward and both (conventions 1x, 2.5x, 3.5x), and --check compares dQ, dK, dV with the
// float64 reference under the gradient rule (factor 3, check_bwd.hpp), exit 1 when it fails.
// Unsupported problems are refused with the violated constraint and exit code 2.
#include <cmath>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli.hpp"
#include "ioattn/flops.hpp"
#include "kernels/backward.hpp"
#include "kernels/check.hpp"
#include "kernels/check_bwd.hpp"
#include "kernels/harness.hpp"
#include "kernels/harness_bwd.hpp"
#include "kernels/launch.hpp"
#include "reference.hpp"

namespace ioattn::cli {
namespace {

struct RunFlags {
  ProblemFlags problem;
  std::string kernel;
  bool backward = false;
  std::string bwd_kernel;
  bool check = false;
  int iters = 20;
  int warmup = 3;
  kernels::KernelOptions opt;
  bool json = false;
  bool profile = false;
  double logit_std = 1.0;  // of the generated inputs (reference make_inputs), forward runs
  std::string fp8_baseline = "fp32";  // FP8 --check: the baseline's accumulation (ref::Fp8Accumulation)
};

template <class Ladder>
std::string names_of(const Ladder& ladder) {
  std::string names;
  for (const auto& k : ladder) names += (names.empty() ? "" : ", ") + std::string(k.name);
  return names;
}

std::string shape_of(const AttnProblem& p) {
  return fmt::format(
      "batch={} heads_q={} heads_kv={} seqlen_q={} seqlen_k={} head_dim={} dtype={} causal={} window={},{}",
      p.batch, p.heads_q, p.heads_kv, p.seqlen_q, p.seqlen_k, p.head_dim, dtype_name(p.dtype), p.causal ? 1 : 0,
      p.window_left, p.window_right) +
         fp8_description(p);
}

void check_options(const kernels::KernelOptions& opt) {
  if (opt.br < 0 || opt.bc < 0 || opt.splits < 0) throw UsageError("--br, --bc, --splits must be >= 0");
}

struct ListFlags {
  ProblemFlags problem;
  kernels::KernelOptions opt;
  bool config = false;
};

// One line per variant of `ladder`: its config for p, or why it refuses p.
template <class Ladder, class Options>
void print_configs(const Ladder& ladder, const AttnProblem& p, const Options& opt) {
  for (const auto& k : ladder) {
    kernels::LaunchConfig c;
    if (auto e = k.config(p, opt, c))
      fmt::print("{:<25} refused: {}\n", k.name, *e);
    else
      fmt::print("{:<25} {}\n", k.name, kernels::format_config(c, ' '));
  }
}

int list_kernels(const ListFlags& f) {
  const AttnProblem p = f.problem.problem();
  check_options(f.opt);
  fmt::print("{:<18} {:<9} {:<15} {:<10} {:<6} {}\n", "variant", "strategy", "dtypes", "head_dim",
             "tiles", "idea");
  for (const auto& k : kernels::registry())
    fmt::print("{:<18} {:<9} {:<15} {:<10} {:<6} {}\n", k.name, k.strategy, k.dtypes, k.head_dims,
               k.takes_tile_sizes ? "br,bc" : "-", k.idea);
  fmt::print("\nbackward variants (each reads the O and LSE of the forward it pairs with):\n");
  fmt::print("{:<25} {:<15} {:<9} {:<8} {:<6} {:<15} {:<10} {:<6} {}\n", "backward", "pairs_with", "strategy",
             "dq_mode", "determ", "dtypes", "head_dim", "tiles", "idea");
  for (const auto& k : kernels::backward_registry())
    fmt::print("{:<25} {:<15} {:<9} {:<8} {:<6} {:<15} {:<10} {:<6} {}\n", k.name, k.pairs_with, k.strategy, k.dq_mode,
               k.deterministic ? "yes" : "no", k.dtypes, k.head_dims, k.takes_tile_sizes ? "br,bc" : "-", k.idea);
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
  print_configs(kernels::registry(), p, f.opt);
  fmt::print("backward (the K/V-outer kernel; --br/--bc as given, --splits not used):\n");
  print_configs(kernels::backward_registry(), p, kernels::BackwardOptions{f.opt.br, f.opt.bc});
  return 0;
}

const kernels::KernelInfo& forward_named(const std::string& name) {
  const kernels::KernelInfo* k = kernels::find_kernel(name);
  if (!k) throw UsageError(fmt::format("unknown kernel '{}' (known: {})", name, names_of(kernels::registry())));
  return *k;
}

// --bwd-kernel, or the first backward that pairs with --kernel, else the first of the ladder.
const kernels::BackwardInfo& backward_named(const RunFlags& f) {
  const auto ladder = kernels::backward_registry();
  if (f.bwd_kernel.empty()) {
    for (const auto& b : ladder)
      if (b.pairs_with == f.kernel) return b;
    if (ladder.empty()) throw UsageError("no backward variant is registered");
    return ladder.front();
  }
  const kernels::BackwardInfo* b = kernels::find_backward(f.bwd_kernel);
  if (!b) throw UsageError(fmt::format("unknown backward kernel '{}' (known: {})", f.bwd_kernel, names_of(ladder)));
  return *b;
}

// Timing's TFLOP/s for `flops`.
double tflops_of(double flops, const kernels::Timing& t) { return flops / (t.median_ms * 1e-3) / 1e12; }

// The keys "<prefix>median_ms", ..., "<prefix>tflops" of a --json object.
void put_timing(nlohmann::json& j, const std::string& prefix, const kernels::Timing& t, double flops) {
  j[prefix + "median_ms"] = t.median_ms;
  j[prefix + "min_ms"] = t.min_ms;
  j[prefix + "max_ms"] = t.max_ms;
  j[prefix + "tflops"] = tflops_of(flops, t);
}

std::string timing_line(const std::string& what, const kernels::Timing& t, double flops) {
  return fmt::format("{} median {:.4f} ms (min {:.4f}, max {:.4f}, {} iters)  {:.2f} TFLOP/s (FA2 convention)", what,
                     t.median_ms, t.min_ms, t.max_ms, t.iters, tflops_of(flops, t));
}

// What both `run` modes check before touching the device.
void check_run_flags(const RunFlags& f) {
  if (!kernels::built_with_gpu())
    throw UsageError("built without GPU support (nvcc was not found at configure time)");
  if (f.iters < 1) throw UsageError("--iters must be >= 1");
  if (!(f.logit_std > 0.0 && std::isfinite(f.logit_std)))
    throw UsageError(fmt::format("--logit-std must be a finite positive number (got {})", f.logit_std));
  if (f.backward && f.logit_std != 1.0) throw UsageError("--logit-std is taken by forward runs only");
  if (!ref::Fp8Accumulation::parse(f.fp8_baseline))
    throw UsageError(fmt::format("--fp8-baseline must be fp32, mma, mma:fast or mma:N with N >= 1 (got {})", f.fp8_baseline));
  if (f.fp8_baseline != "fp32" && (f.backward || !f.check))
    throw UsageError("--fp8-baseline is taken by forward runs with --check only");
  check_options(f.opt);
}

int run_backward(const RunFlags& f) {
  check_run_flags(f);
  const kernels::BackwardInfo& b = backward_named(f);
  const kernels::KernelInfo& k = forward_named(f.kernel.empty() ? std::string(b.pairs_with) : f.kernel);
  const AttnProblem p = f.problem.problem();
  if (f.opt.splits)
    throw UsageError("--splits is not taken with --backward (the forward runs with its defaults; --br/--bc are the "
                     "backward's tiles)");
  const kernels::BackwardOptions bopt{f.opt.br, f.opt.bc};
  if (auto e = b.supports(p, bopt)) throw UsageError(*e);                // names the variant and the constraint
  if (auto e = k.supports(p, kernels::KernelOptions{})) throw UsageError(*e);
  if (auto e = kernels::gpu_unavailable()) throw UsageError(*e);
  kernels::LaunchConfig fcfg, bcfg;  // what the launches below use (same code paths)
  if (auto e = k.config(p, {}, fcfg)) throw UsageError(fmt::format("{}: {}", k.name, *e));
  if (auto e = b.config(p, bopt, bcfg)) throw UsageError(fmt::format("{}: {}", b.name, *e));
  if (f.check)
    if (auto e = ref::memory_error(p, ref::Algorithm::naive_backward))
      throw UsageError(fmt::format("--check: {}", *e));

  kernels::LaunchStatus st;
  auto dev = kernels::BackwardRun::create(b, p, bopt, st, &k);
  if (!dev) throw UsageError(fmt::format("{}: {}", b.name, st.value_or("allocation failed")));
  const ref::Inputs in = ref::make_inputs(p, f.problem.seed);
  if ((st = dev->upload(in.q, in.k, in.v, in.d_o))) throw UsageError(*st);
  if ((st = dev->forward())) throw UsageError(*st);
  if ((st = dev->run())) throw UsageError(fmt::format("{}: {}", b.name, *st));
  kernels::HostGrads grads;
  kernels::HostForwardState state;
  if ((st = dev->download(grads)) || (st = dev->download_forward(state))) throw UsageError(*st);
  if (f.profile) {  // one backward inside a profiler range, no timing loop (for ncu)
    if ((st = dev->profile_once())) throw UsageError(fmt::format("{}: {}", b.name, *st));
    fmt::print("profiled one launch of {} after {} ({})\n", b.name, k.name, kernels::device_description());
    return 0;
  }
  kernels::Timing t_fwd, t_bwd, t_both;
  for (auto [pass, t] : {std::pair{kernels::TimedPass::forward, &t_fwd}, {kernels::TimedPass::backward, &t_bwd},
                         {kernels::TimedPass::forward_backward, &t_both}})
    if ((st = dev->time(pass, f.warmup, f.iters, *t))) throw UsageError(fmt::format("{}: {}", b.name, *st));
  const double fl_fwd = conventional_flops(p, Pass::fwd), fl_bwd = conventional_flops(p, Pass::bwd),
               fl_both = conventional_flops(p, Pass::fwdbwd);

  std::optional<kernels::GradCheckResult> chk;
  if (f.check)
    chk = kernels::check_grads(p, kernels::expected_grads_f64(p, in), kernels::baseline_grads(p, in, state), grads);

  const std::string shape = shape_of(p);
  if (f.json) {
    nlohmann::json j = {{"kernel", k.name},
                        {"backward", b.name},
                        {"device", kernels::device_description()},
                        {"problem", shape},
                        {"iters", f.iters},
                        {"device_bytes", dev->device_bytes()},
                        {"seed", f.problem.seed},
                        {"config", kernels::format_config(fcfg, ';')},
                        {"backward_config", kernels::format_config(bcfg, ';')}};
    put_timing(j, "", t_fwd, fl_fwd);
    put_timing(j, "bwd_", t_bwd, fl_bwd);
    put_timing(j, "fwdbwd_", t_both, fl_both);
    if (chk) {
      j["check_pass"] = chk->pass();
      for (auto [name, r] : {std::pair{"dq", &chk->dq}, {"dk", &chk->dk}, {"dv", &chk->dv}}) {
        j[std::string(name) + "_max_err"] = r->out.max_err;
        j[std::string(name) + "_bound"] = r->bound;
      }
    }
    fmt::print("{}\n", j.dump());
  } else {
    fmt::print("kernel   {} (forward), {} (backward)\ndevice   {}\nproblem  {}\n", k.name, b.name,
               kernels::device_description(), shape);
    fmt::print("config   forward  {}\n", kernels::format_config(fcfg, ' '));
    fmt::print("config   backward {}\n", kernels::format_config(bcfg, ' '));
    fmt::print("{}\n", timing_line("time     forward ", t_fwd, fl_fwd));
    fmt::print("{}\n", timing_line("time     backward", t_bwd, fl_bwd));
    fmt::print("{}\n", timing_line("time     fwd+bwd ", t_both, fl_both));
    fmt::print("memory   {:.1f} MiB on the device (inputs, O, LSE, gradients, both workspaces)\n",
               static_cast<double>(dev->device_bytes()) / (1 << 20));
    if (chk) fmt::print("{}\n", chk->describe(fmt::format("check {}", b.name), f.problem.seed));
  }
  return chk && !chk->pass() ? 1 : 0;
}

int run_kernel(const RunFlags& f) {
  if (f.backward) return run_backward(f);
  if (!f.bwd_kernel.empty()) throw UsageError("--bwd-kernel needs --backward");
  check_run_flags(f);
  if (f.kernel.empty()) throw UsageError(fmt::format("--kernel is required (known: {})", names_of(kernels::registry())));
  const kernels::KernelInfo* k = &forward_named(f.kernel);
  const AttnProblem p = f.problem.problem();
  if (auto e = k->supports(p, f.opt)) throw UsageError(*e);  // names the variant and the constraint
  const ref::Fp8Accumulation acc = *ref::Fp8Accumulation::parse(f.fp8_baseline);  // check_run_flags parsed it
  if (acc.tensor_core && !is_fp8(p.dtype))
    throw UsageError(fmt::format("--fp8-baseline {}: the problem is not FP8 (dtype {})", f.fp8_baseline, dtype_name(p.dtype)));
  if (auto e = kernels::gpu_unavailable()) throw UsageError(*e);
  kernels::LaunchConfig cfg;  // what the launch below uses (same code path)
  if (auto e = k->config(p, f.opt, cfg)) throw UsageError(fmt::format("{}: {}", k->name, *e));
  if (f.check)
    if (auto e = ref::memory_error(p, ref::Algorithm::naive_forward))
      throw UsageError(fmt::format("--check: {}", *e));

  kernels::LaunchStatus st;
  auto dev = kernels::DeviceRun::create(*k, p, f.opt, st);
  if (!dev) throw UsageError(fmt::format("{}: {}", k->name, st.value_or("allocation failed")));
  const ref::Inputs in = ref::make_inputs(p, f.problem.seed, {.logit_std = f.logit_std});
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
  const double flops = conventional_flops(p, Pass::fwd);

  // FP8 with --fp8-baseline mma...: the rule's baseline accumulates as the FP8 tensor core does
  // (reference/fp8_mma_model.hpp); the fp32-accumulated baseline's verdict is reported beside it.
  std::optional<kernels::CheckResult> chk, chk_fp32;
  if (f.check) chk = kernels::check_outputs(p, kernels::expected_outputs(p, in, acc), out);
  if (f.check && acc.tensor_core) chk_fp32 = kernels::check_outputs(p, kernels::expected_outputs(p, in), out);

  const std::string shape = shape_of(p);
  if (f.json) {
    nlohmann::json j = {{"kernel", k->name},
                        {"device", kernels::device_description()},
                        {"problem", shape},
                        {"iters", t.iters},
                        {"device_bytes", dev->device_bytes()},
                        {"seed", f.problem.seed},
                        {"config", kernels::format_config(cfg, ';')}};
    put_timing(j, "", t, flops);
    if (chk) {
      j["check_pass"] = chk->pass();
      j["o_max_err"] = chk->o.out.max_err;
      j["o_bound"] = chk->o.bound;
      j["lse_max_err"] = chk->lse.out.max_err;
      j["lse_bound"] = chk->lse.bound;
      j["fp8_baseline"] = acc.name();
    }
    if (chk_fp32) {
      j["fp32_check_pass"] = chk_fp32->pass();
      j["fp32_o_bound"] = chk_fp32->o.bound;
      j["fp32_lse_bound"] = chk_fp32->lse.bound;
    }
    fmt::print("{}\n", j.dump());
  } else {
    fmt::print("kernel  {}\ndevice  {}\nproblem {}\n", k->name, kernels::device_description(), shape);
    fmt::print("config  {}\n", kernels::format_config(cfg, ' '));
    fmt::print("{}\n", timing_line("time   ", t, flops));
    fmt::print("memory  {:.1f} MiB on the device (inputs, outputs, workspace)\n",
               static_cast<double>(dev->device_bytes()) / (1 << 20));
    if (chk)
      fmt::print("{}\n", chk->describe(fmt::format("check {}{}", k->name, acc.tensor_core ? " [baseline " + acc.name() + "]" : ""),
                                       f.problem.seed));
    if (chk_fp32) fmt::print("{}\n", chk_fp32->describe(fmt::format("check {} [baseline fp32]", k->name), f.problem.seed));
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
  lflags->problem.layout_flags = true;  // packed / paged problems: each variant says whether it takes them
  lflags->problem.add_to(*list);
  list->add_flag("--config", lflags->config,
                 "also print the launch configuration each variant would use for the problem (needs a GPU)");
  list->add_option("--br", lflags->opt.br, "query rows per block Br (0 = each variant's default)");
  list->add_option("--bc", lflags->opt.bc, "key rows per block Bc (0 = each variant's default)");
  list->add_option("--splits", lflags->opt.splits, "key splits (split-KV variants; 0 = default)");
  out.push_back({list, [lflags] { return list_kernels(*lflags); }});

  auto flags = std::make_shared<RunFlags>();
  auto* run = root.add_subcommand(
      "run", "Run one GPU kernel variant on one problem, or a forward and a backward (time them; --check them)");
  flags->problem.default_heads = 4;
  flags->problem.default_seqlen = 256;
  flags->problem.layout_flags = true;  // packed / paged problems: refused by the registry unless declared
  flags->problem.add_to(*run);
  run->add_option("--kernel", flags->kernel,
                  "forward variant (see `ioattn kernels`); required without --backward, with it the forward "
                  "whose O and LSE the backward reads (default: the backward's pairs_with)");
  run->add_flag("--backward", flags->backward,
                "run the forward, then a backward variant on its O and LSE (time both; --check the gradients)");
  run->add_option("--bwd-kernel", flags->bwd_kernel,
                  "backward variant for --backward (default: the first that pairs with --kernel, else the first)");
  run->add_flag("--check", flags->check,
                "compare O and LSE (with --backward: dQ, dK, dV) with the float64 reference (error rule)");
  run->add_option("--iters", flags->iters, "timed launches (median reported)")->capture_default_str();
  run->add_option("--warmup", flags->warmup, "untimed launches first")->capture_default_str();
  run->add_option("--br", flags->opt.br,
                  "query rows per block Br (variants with tiles; with --backward the backward's; 0 = default)");
  run->add_option("--bc", flags->opt.bc,
                  "key rows per block Bc (variants with tiles; with --backward the backward's; 0 = default)");
  run->add_option("--splits", flags->opt.splits, "key splits (split-KV forward variants; 0 = default)");
  run->add_option("--logit-std", flags->logit_std,
                  "standard deviation of the generated logits (forward runs; FP8: larger codes)")
      ->capture_default_str();
  run->add_option("--fp8-baseline", flags->fp8_baseline,
                  "FP8 --check: the baseline's accumulation: fp32 (exact fp32), or Hopper's FP8 tensor-core model "
                  "mma (S promoted per k32 instruction, v09's default), mma:fast (never), mma:N (every N); "
                  "not a model of AMD's FP8 MFMA")
      ->capture_default_str();
  run->add_flag("--json", flags->json, "print one JSON object instead of text");
  run->add_flag("--profile", flags->profile,
                "one launch between cudaProfilerStart/Stop and nothing else (ncu --profile-from-start off); "
                "with --backward one backward");
  out.push_back({run, [flags] { return run_kernel(*flags); }});
}

}  // namespace ioattn::cli

// experiments/exp_cpu_reference.cpp: time and heap memory of the naive vs the tiled CPU reference
// on this machine, measured fresh on every run.
//
// The naive reference materializes S and P (N^2 per head per thread); the tiled algorithms keep
// only Br x Bc tiles and per-row statistics. Memory is measured, not modeled: heap_counter.cpp
// counts every malloc of the process, and a row's peak_heap_bytes is the most bytes live at once
// during the call beyond those live before it. extra_bytes subtracts the outputs (O for a
// forward; dQ, dK, dV for a backward) so it compares with the simulator's "extra memory" (LSE and
// everything else count as extra). Time is wall-clock, best of `reps` after one warm-up call.
//
// Config: fp32, batch 1, heads = the OpenMP thread count (every thread gets one head), d = 64,
// non-causal, Br = Bc = 64.
//
//   exp_cpu_reference [--preset tiny|figure] [--out DIR] [--check]
//
// Writes cpu/cpu_reference/cpu_reference.csv.
#include <algorithm>
#include <chrono>
#include <functional>
#include <span>

#include <omp.h>

#include "driver.hpp"
#include "heap_counter.hpp"
#include "ioattn/flops.hpp"
#include "ioattn/tolerance.hpp"
#include "reference.hpp"

using namespace ioattn;

namespace {

struct Measure {
  double ms_min = 0, ms_median = 0;
  int64_t peak = 0;
};

// Runs `fn` once to warm up (and to measure the heap peak of one call), then `reps` timed times.
Measure measure(int reps, const std::function<void()>& fn) {
  Measure m;
  {
    exp::HeapPeak scope;
    fn();
    m.peak = scope.peak_delta();
  }
  std::vector<double> ms;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  m.ms_min = ms.front();
  m.ms_median = ms[ms.size() / 2];
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Time and heap memory of the naive vs tiled CPU reference (measured)", "exp_cpu_reference"};
  exp::DriverArgs a;
  exp::add_common_flags(app, a, "cpu_reference");
  int64_t d = 64;
  int reps = 0;
  app.add_option("--head-dim", d, "head dimension d")->capture_default_str();
  app.add_option("--reps", reps, "timed repetitions (default: 1 tiny, 3 figure)");
  if (auto rc = exp::parse_args(app, argc, argv)) return *rc;

  return exp::run_driver("exp_cpu_reference", [&] {
    exp::Checker check(a.check);
    if (!exp::heap_counter_active())
      throw std::runtime_error("the malloc counter is not active (the executable must export malloc)");
    const auto dir = exp::results_dir(a, "cpu");
    const int threads = omp_get_max_threads();
    std::string host_cpu = exp::cpu_model();
    std::replace(host_cpu.begin(), host_cpu.end(), ',', ';');
    if (reps <= 0) reps = a.figure() ? 3 : 1;
    const std::vector<int64_t> ns = a.figure() ? std::vector<int64_t>{128, 256, 512, 1024, 2048, 4096}
                                               : std::vector<int64_t>{64, 128, 256};
    const ref::Tiling tiling{.br = 64, .bc = 64, .splits = 4};

    exp::Csv csv(dir / "cpu_reference.csv",
                 {"kind", "machine", "host_cpu", "threads", "impl", "pass", "dtype", "head_dim", "causal", "batch", "heads",
                  "seqlen", "br", "bc", "reps", "ms_min", "ms_median", "gflops", "peak_heap_bytes", "extra_bytes",
                  "output_bytes"});
    struct Row {
      std::string impl, pass;
      int64_t n, extra;
    };
    std::vector<Row> rows;
    for (int64_t n : ns) {
      AttnProblem p;
      p.heads_q = p.heads_kv = threads;
      p.seqlen_q = p.seqlen_k = n;
      p.head_dim = d;
      p.dtype = DType::fp32;
      if (auto e = p.validate()) throw std::invalid_argument(*e);
      if (auto e = ref::memory_error(p, ref::Algorithm::naive_backward)) throw std::invalid_argument(*e);
      const auto in = ref::make_inputs(p, a.seed);
      const auto fwd = ref::forward_fa2(p, in, tiling);
      const int64_t o_bytes = p.q_elems() * int64_t(sizeof(float));
      const int64_t grad_bytes = (p.q_elems() + 2 * p.kv_elems()) * int64_t(sizeof(float));

      auto emit = [&](std::string impl, Pass pass, const Measure& m) {
        const int64_t out_bytes = pass == Pass::fwd ? o_bytes : grad_bytes;
        const double gflops = conventional_flops(p, pass) / (m.ms_min * 1e-3) / 1e9;
        csv.row({"measured", "cpu", host_cpu, exp::cell(threads), impl, pass == Pass::fwd ? "fwd" : "bwd", "fp32",
                 exp::cell(d), "0", exp::cell(p.batch), exp::cell(p.heads_q), exp::cell(n), exp::cell(tiling.br),
                 exp::cell(tiling.bc), exp::cell(reps), exp::cell(m.ms_min), exp::cell(m.ms_median),
                 exp::cell(gflops), exp::cell(m.peak), exp::cell(m.peak - out_bytes), exp::cell(out_bytes)});
        rows.push_back({impl, pass == Pass::fwd ? "fwd" : "bwd", n, m.peak - out_bytes});
      };
      ref::Forward keep;
      emit("naive", Pass::fwd, measure(reps, [&] { keep = ref::forward_naive(p, in); }));
      emit("fa1", Pass::fwd, measure(reps, [&] { keep = ref::forward_fa1(p, in, tiling); }));
      emit("fa2", Pass::fwd, measure(reps, [&] { keep = ref::forward_fa2(p, in, tiling); }));
      emit("splitkv", Pass::fwd, measure(reps, [&] { keep = ref::forward_splitkv(p, in, tiling); }));
      ref::Grads g;
      emit("naive", Pass::bwd, measure(reps, [&] { g = ref::backward_naive(p, in); }));
      emit("fa2", Pass::bwd, measure(reps, [&] { g = ref::backward_fa2(p, in, fwd, tiling); }));

      if (n == ns.front() && check.enabled()) {
        // The timed code computes attention: FA2's output passes the error rule against float64.
        const auto ref64 = ref::forward_f64(p, in);
        const auto base = ref::forward_naive(p, in);
        const auto out = ref::forward_fa2(p, in, tiling);
        const auto r = check_error_rule(std::span<const float>(out.o), std::span<const double>(ref64.o),
                                        std::span<const float>(base.o), p.dtype, kForwardFactor);
        check.expect(r.pass, r.describe("tiled FA2 forward vs float64"));
      }
    }
    auto extra = [&](const std::string& impl, const std::string& pass, int64_t n) {
      for (const auto& r : rows)
        if (r.impl == impl && r.pass == pass && r.n == n) return r.extra;
      return int64_t{-1};
    };
    const int64_t n_max = ns.back();
    // The naive forward holds at least one N x N fp32 score matrix per thread.
    check.expect(extra("naive", "fwd", n_max) >= n_max * n_max * int64_t(sizeof(float)),
                 fmt::format("naive forward allocates at least N^2 floats at N = {} ({} bytes)", n_max,
                             extra("naive", "fwd", n_max)));
    check.expect(extra("fa2", "fwd", n_max) < extra("naive", "fwd", n_max),
                 fmt::format("tiled FA2 forward allocates less than naive at N = {} ({} vs {} bytes)", n_max,
                             extra("fa2", "fwd", n_max), extra("naive", "fwd", n_max)));
    check.expect(extra("fa2", "bwd", n_max) < extra("naive", "bwd", n_max),
                 fmt::format("FA2 backward allocates less than naive at N = {}", n_max));
    exp::write_context(dir, "cpu", a, {{"threads", threads}, {"reps", reps}, {"head_dim", d},
                                       {"memory", "peak live heap bytes during one call (malloc counter)"}});
    return check.failures();
  });
}

// reference/bench_reference.cpp: the naive reference against the tiled FA2 on the CPU.
//
//   ./build/reference/bench_reference                      (all: N in 512..4096, d in 64, 128)
//   ./build/reference/bench_reference --benchmark_filter=fa2
//
// fp32, batch 1, heads = number of OpenMP threads (one head per core, so both algorithms use all
// cores the same way), non-causal. GFLOP/s counts FLOPs by the FlashAttention-2 convention
// (ioattn/flops.hpp: 4 * B * H * N^2 * d), shown as the rate counter "GFLOP=x/s", so the two
// compare directly: the algorithm that moves
// fewer bytes through the caches wins at equal FLOPs.
#include <benchmark/benchmark.h>
#include <omp.h>

#include "ioattn/flops.hpp"
#include "reference.hpp"

namespace {

using namespace ioattn;

AttnProblem bench_problem(const benchmark::State& state) {
  AttnProblem p;
  p.heads_q = p.heads_kv = std::max(1, omp_get_max_threads());
  p.seqlen_q = p.seqlen_k = state.range(0);
  p.head_dim = state.range(1);
  return p;
}

void report(benchmark::State& state, const AttnProblem& p) {
  state.counters["GFLOP"] = benchmark::Counter(conventional_fwd_flops(p) * 1e-9,
                                                 benchmark::Counter::kIsIterationInvariantRate);
}

void BM_naive(benchmark::State& state) {
  const AttnProblem p = bench_problem(state);
  const ref::Inputs in = ref::make_inputs(p, 1);
  for (auto _ : state) benchmark::DoNotOptimize(ref::forward_naive(p, in).o.data());
  report(state, p);
}

void BM_fa2(benchmark::State& state) {
  const AttnProblem p = bench_problem(state);
  const ref::Inputs in = ref::make_inputs(p, 1);
  const ref::Tiling t{state.range(2), state.range(3), 1};
  for (auto _ : state) benchmark::DoNotOptimize(ref::forward_fa2(p, in, t).o.data());
  report(state, p);
}

void sizes(benchmark::internal::Benchmark* b, bool tiled) {
  for (int64_t d : {64, 128})
    for (int64_t n : {512, 1024, 2048, 4096}) {
      if (tiled) b->Args({n, d, 64, 256});
      else b->Args({n, d});
    }
  b->ArgNames(tiled ? std::vector<std::string>{"N", "d", "Br", "Bc"} : std::vector<std::string>{"N", "d"});
  b->Unit(benchmark::kMillisecond)->UseRealTime();
}

BENCHMARK(BM_naive)->Apply([](auto* b) { sizes(b, false); });
BENCHMARK(BM_fa2)->Apply([](auto* b) { sizes(b, true); });

}  // namespace

BENCHMARK_MAIN();

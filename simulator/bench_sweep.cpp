// simulator/bench_sweep.cpp: how long the full default sweep takes on one core.
//
//   every catalog machine x the default strategies (in_sweep in IOATTN_STRATEGIES: standard, fa1,
//   fa2, splitkv) x N in 128..65536 (powers of two)
//   x 4 tilings (64x64, 128x64, 128x128, the paper's rule), forward, bf16, d = 128,
//   batch * N = 16384 tokens, 16 heads (the configuration of the H200 anchors in simulator/validate/)
//
// Run: build-*/simulator/bench_simulator_sweep   (single-threaded; the library uses no threads)
#include <benchmark/benchmark.h>

#include "simulator/simulator.hpp"

namespace {

ioattn::sim::SweepSpec full_spec() {
  ioattn::sim::SweepSpec spec;
  spec.base.heads_q = spec.base.heads_kv = 16;
  spec.base.head_dim = 128;
  spec.base.dtype = ioattn::DType::bf16;
  spec.tokens = 16384;
  return spec;
}

// Argument 0: forward only; 1: forward, backward and forward+backward.
void BM_FullSweep(benchmark::State& state) {
  const auto catalog = ioattn::sim::load_catalog(ioattn::sim::default_catalog_dir());
  auto spec = full_spec();
  if (state.range(0) == 1) spec.passes = {ioattn::Pass::fwd, ioattn::Pass::bwd, ioattn::Pass::fwdbwd};
  size_t rows = 0;
  for (auto _ : state) {
    auto r = ioattn::sim::sweep(spec, catalog);
    rows = r.size();
    benchmark::DoNotOptimize(r.data());
  }
  state.counters["rows"] = static_cast<double>(rows);
}
BENCHMARK(BM_FullSweep)->ArgName("fwdbwd")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->MinTime(2.0);

}  // namespace

BENCHMARK_MAIN();

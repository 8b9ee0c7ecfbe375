// kernels/dev/check_fast.cpp: the fast-kernel engineer's own check-and-time driver (not a test).
//
// One binary, one device call: correctness of v04, v05 and v06 (registry defaults and every
// compiled tile configuration, through the variants' tuning hooks) against the CPU reference on
// odd shapes, then event timing at the benchmark shapes (batch * seqlen = 16384, hidden 2048).
// Prints a table; writes timings as CSV (argv[1]) for kernels/dev/sdpa_peers.py, which times torch
// SDPA flash/cuDNN in the same call and prints ratios.
//
// Everything it measures goes through the project's harness (kernels/harness.hpp: buffers in the
// problem's dtype, NaN-poisoned outputs before every launch, error checks, event timing) and is
// judged by the project's error rule (ioattn/tolerance.hpp through kernels/check.hpp, the same
// check as `ioattn run --check` and the GPU suite): O and LSE against the float64 reference with
// the same-precision naive computation as the baseline. Inputs from reference's make_inputs.
// Beyond the rule: the launch repeated gives bit-identical O and LSE.
//
// Build (here, no GPU needed):  kernels/dev/build.sh     Run (H200):  build-fast/kernels/check_fast out.csv
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "ioattn/flops.hpp"
#include "ioattn/problem.hpp"
#include "kernels/check.hpp"
#include "kernels/harness.hpp"
#include "kernels/launch.hpp"
#include "reference.hpp"

namespace ioattn::kernels {
// The tuning hooks of v05 and v06 (kernels/fwd_common.hpp): every compiled configuration by index.
const char* v05_fa2_fast_config_name(int index);
LaunchStatus v05_fa2_fast_launch_config(int index, const AttnProblem& p, const DeviceTensors& t, void* stream);
const char* v06_fa2_wgmma_config_name(int index);
LaunchStatus v06_fa2_wgmma_launch_config(int index, const AttnProblem& p, const DeviceTensors& t, void* stream);
void v06_fa2_wgmma_set_v_desc(int swapped);
}  // namespace ioattn::kernels

using namespace ioattn;
using namespace ioattn::kernels;

namespace {

// A configuration reached through a tuning hook runs under the harness as a KernelInfo whose
// launch calls the hook with g_config (set before every create/run/time: one at a time).
int g_config = -1;
LaunchStatus launch_v05_config(const AttnProblem& p, const DeviceTensors& t, const KernelOptions&, void*, void* stream) {
  return v05_fa2_fast_launch_config(g_config, p, t, stream);
}
LaunchStatus launch_v06_config(const AttnProblem& p, const DeviceTensors& t, const KernelOptions&, void*, void* stream) {
  return v06_fa2_wgmma_launch_config(g_config, p, t, stream);
}

struct Variant {
  std::string name;
  const KernelInfo* kernel;  // the registry's entry, or a copy with a tuning hook as its launch
  int config = -1;           // >= 0: the tuning configuration launched
  int64_t head_dim = 0;      // > 0: the configuration's head dim (configurations are per d)
  bool wgmma = false;        // v06 (enabled only after its probe, V06_OK=1)
  bool fits(const AttnProblem& p) const { return head_dim == 0 || head_dim == p.head_dim; }
};

std::deque<KernelInfo> g_hooked;  // stable addresses: DeviceRun keeps a pointer to its KernelInfo

const KernelInfo& registry_entry(const char* name) {
  const KernelInfo* k = find_kernel(name);
  if (!k) {
    std::fprintf(stderr, "check_fast: %s is not in this build's registry\n", name);
    std::exit(2);
  }
  return *k;
}

std::vector<Variant> tuning_variants(const char* registry_name, const char* prefix, const char* (*name_of)(int),
                                     decltype(KernelInfo::launch) hook, bool wgmma) {
  std::vector<Variant> out;
  g_hooked.push_back(registry_entry(registry_name));
  g_hooked.back().launch = hook;
  for (int i = 0; name_of(i); ++i)  // names start with "d<head_dim>_"
    out.push_back({std::string(prefix) + name_of(i), &g_hooked.back(), i, std::atoi(name_of(i) + 1), wgmma});
  return out;
}

int g_failures = 0;

std::string shape_of(const AttnProblem& p) {
  char buf[200];
  std::snprintf(buf, sizeof buf, "%s d=%-3ld b=%ld hq=%ld hkv=%ld nq=%-5ld nk=%-5ld causal=%d win=(%ld,%ld)",
                dtype_name(p.dtype).data(), (long)p.head_dim, (long)p.batch, (long)p.heads_q, (long)p.heads_kv,
                (long)p.seqlen_q, (long)p.seqlen_k, p.causal, (long)p.window_left, (long)p.window_right);
  return buf;
}

// One (variant, problem): launch on poisoned outputs, judge O and LSE by the error rule, launch
// again and require the same bits.
void check_case(const Variant& var, const AttnProblem& p, const ref::Inputs& in, const Expected& want, double logit_std) {
  g_config = var.config;
  LaunchStatus st;
  auto dev = DeviceRun::create(*var.kernel, p, {}, st);
  HostOutputs got, again;
  if (dev && !(st = dev->upload(in.q, in.k, in.v)) && !(st = dev->run()) && !(st = dev->download(got)) &&
      !(st = dev->run()))
    st = dev->download(again);
  if (st) {
    std::printf("REFUSED %-26s %s: %s\n", var.name.c_str(), shape_of(p).c_str(), st->c_str());
    ++g_failures;
    return;
  }
  const CheckResult r = check_outputs(p, want, got);
  const bool same = got.o.size() == again.o.size() && got.lse.size() == again.lse.size() &&
                    std::memcmp(got.o.data(), again.o.data(), got.o.size() * sizeof(float)) == 0 &&
                    std::memcmp(got.lse.data(), again.lse.data(), got.lse.size() * sizeof(float)) == 0;
  const bool ok = r.pass() && same;
  if (!ok) ++g_failures;
  std::printf("%s %-26s %s logit_std=%g  O max=%.2e (bound %.2e)  LSE max=%.2e (bound %.2e)  det=%d\n",
              ok ? "PASS" : "FAIL", var.name.c_str(), shape_of(p).c_str(), logit_std, r.o.out.max_err, r.o.bound,
              r.lse.out.max_err, r.lse.bound, same);
  if (!r.pass()) std::printf("  %s\n", r.describe(var.name).c_str());
}

}  // namespace

int main(int argc, char** argv) {
  const char* csv_path = argc > 1 ? argv[1] : "timings.csv";
  // Modes: "all" (default: every configuration, then timing), "check" (correctness only, every
  // configuration), "quick" (correctness of the registry defaults on small shapes: for sanitizers),
  // "v06" (v06 and its configurations, then timed beside v05's default), "v06probe" (v06 alone on
  // a few shapes, in its own process: a wrong wgmma descriptor can kill the context).
  const std::string mode = argc > 2 ? argv[2] : "all";
  const bool quick = mode == "quick";
  const bool v06_only = mode == "v06";
  if (auto e = gpu_unavailable()) {
    std::fprintf(stderr, "check_fast: %s\n", e->c_str());
    return 2;
  }
  std::printf("device: %s\n", device_description().c_str());

  std::vector<Variant> variants = {
      {"v04", &registry_entry("v04_fa2_mma")},
      {"v05", &registry_entry("v05_fa2_fast")},
      {"v06", &registry_entry("v06_fa2_wgmma"), -1, 0, true},
  };
  // Every compiled configuration (tuning hooks), named like "d128_w4_mt1_bc64_s2_qr1" (v05) and
  // "wgmma_d128_wg2_bc128_s3_mb1_ov1" (v06).
  std::vector<Variant> tiles = tuning_variants("v05_fa2_fast", "", v05_fa2_fast_config_name, launch_v05_config, false);
  for (Variant& v : tuning_variants("v06_fa2_wgmma", "wgmma_", v06_fa2_wgmma_config_name, launch_v06_config, true))
    tiles.push_back(v);

  // v06 runs only when a separate "v06probe" process passed: V06_OK=1; V06_DESC=1 selects the
  // swapped V descriptor.
  const char* v06_desc = std::getenv("V06_DESC");
  v06_fa2_wgmma_set_v_desc(v06_desc && std::string(v06_desc) == "1");
  const bool v06_ok = mode == "v06probe" || (std::getenv("V06_OK") && std::string(std::getenv("V06_OK")) == "1");
  auto drop = [](std::vector<Variant>& vs, auto pred) { vs.erase(std::remove_if(vs.begin(), vs.end(), pred), vs.end()); };
  if (!v06_ok) {
    drop(variants, [](const Variant& v) { return v.wgmma; });
    drop(tiles, [](const Variant& v) { return v.wgmma; });
    std::printf("v06 not run (V06_OK != 1)\n");
  }
  if (v06_only) {
    drop(tiles, [](const Variant& v) { return !v.wgmma; });
    drop(variants, [](const Variant& v) { return v.name == "v04"; });
  }

  struct Shape {
    int64_t b, hq, hkv, nq, nk, d;
    bool causal;
    int64_t wl, wr;
    double logit_std;
  };
  auto problem = [](const Shape& s, DType dt) {
    AttnProblem p;
    p.batch = s.b, p.heads_q = s.hq, p.heads_kv = s.hkv, p.seqlen_q = s.nq, p.seqlen_k = s.nk;
    p.head_dim = s.d, p.causal = s.causal, p.window_left = s.wl, p.window_right = s.wr, p.dtype = dt;
    return p;
  };
  auto run_checks = [&](const Shape& s, DType dt, const std::vector<Variant>& vs, uint64_t seed) {
    const AttnProblem p = problem(s, dt);
    const ref::Inputs in = ref::make_inputs(p, seed, {.logit_std = s.logit_std});
    const Expected want = expected_outputs(p, in);
    for (const Variant& v : vs)
      if (v.fits(p) && (!v.wgmma || p.head_dim == 64 || p.head_dim == 128) &&
          (v.name != "v04" || p.head_dim == 64 || p.head_dim == 128))
        check_case(v, p, in, want, s.logit_std);
  };

  if (mode == "v06probe") {
    const std::vector<Variant> v06 = {{"v06", &registry_entry("v06_fa2_wgmma"), -1, 0, true}};
    for (const Shape& s : {Shape{2, 4, 2, 130, 200, 64, false, -1, -1, 1}, Shape{2, 4, 2, 130, 200, 128, false, -1, -1, 1},
                           Shape{2, 4, 2, 257, 129, 128, true, -1, -1, 1}, Shape{2, 4, 2, 1000, 1000, 64, true, -1, -1, 1},
                           Shape{2, 4, 2, 333, 517, 128, false, 40, -1, 1}, Shape{2, 4, 2, 64, 64, 128, false, -1, -1, 1}})
      for (DType dt : {DType::bf16, DType::fp16}) run_checks(s, dt, v06, 1000 + s.nq + s.d);
    std::printf("v06probe: %d failure(s)\n", g_failures);
    return g_failures ? 1 : 0;
  }

  // ---- correctness ----
  const Shape shapes[] = {
      {1, 1, 1, 1, 1, 64, false, -1, -1, 1},       {2, 3, 3, 17, 17, 64, false, -1, -1, 1},
      {1, 2, 2, 113, 203, 128, false, -1, -1, 1},  {1, 2, 2, 203, 113, 128, true, -1, -1, 1},
      {1, 2, 2, 113, 203, 64, true, -1, -1, 1},    {2, 4, 1, 1023, 1024, 128, true, -1, -1, 1},
      {1, 8, 2, 1024, 1023, 64, false, -1, -1, 1}, {1, 2, 2, 300, 517, 128, false, 37, 5, 1},
      {1, 2, 1, 517, 300, 64, true, 64, -1, 1},    {1, 2, 2, 200, 200, 64, false, 0, 0, 1},
      {1, 2, 2, 129, 1000, 128, false, -1, -1, 8}, {1, 1, 1, 77, 77, 32, true, -1, -1, 1},
      {1, 1, 1, 77, 150, 96, true, -1, -1, 1},     {1, 1, 1, 150, 77, 256, true, -1, -1, 1},
      {1, 2, 2, 1, 333, 128, true, -1, -1, 1},     {1, 2, 2, 333, 1, 64, true, -1, -1, 1},
  };
  uint64_t seed = 1;
  for (const Shape& s : shapes)
    for (DType dt : {DType::fp16, DType::bf16}) {
      ++seed;
      if (quick && s.nq * s.nk > 300000) continue;
      std::vector<Variant> vs = variants;
      if (!quick) vs.insert(vs.end(), tiles.begin(), tiles.end());
      run_checks(s, dt, vs, seed);
    }
  std::printf("correctness: %d failure(s)\n", g_failures);
  if (mode != "all" && !v06_only) return g_failures ? 1 : 0;

  // ---- timing (the harness's event timing: median of `iters` launches after 3 warm-ups) ----
  FILE* csv = std::fopen(csv_path, "w");
  if (!csv) {
    std::fprintf(stderr, "check_fast: cannot write %s\n", csv_path);
    return 2;
  }
  std::fprintf(csv, "impl,dtype,head_dim,causal,seqlen,batch,heads,ms,tflops\n");
  std::printf("\n%-14s %-5s %4s %6s %6s %9s %8s\n", "impl", "dtype", "d", "causal", "N", "ms", "TFLOP/s");
  const std::vector<int64_t> Ns = v06_only ? std::vector<int64_t>{1024, 2048, 4096, 16384}
                                           : std::vector<int64_t>{1024, 4096, 16384};
  for (int64_t d : {64, 128})
    for (DType dt : {DType::bf16, DType::fp16})
      for (int64_t n : Ns) {
        if (quick && dt == DType::fp16) continue;
        const AttnProblem p0 = problem(Shape{16384 / n, 2048 / d, 2048 / d, n, n, d, false, -1, -1, 1}, dt);
        const ref::Inputs in = ref::make_inputs(p0, 7);  // the same tensors with and without the mask
        for (bool causal : {false, true}) {
          AttnProblem p = p0;
          p.causal = causal;
          std::vector<Variant> vs = variants;
          vs.insert(vs.end(), tiles.begin(), tiles.end());
          for (const Variant& v : vs) {
            if (!v.fits(p) || (v.name == "v04" && n > 4096)) continue;
            if (dt == DType::fp16 && v.config >= 0 && !v06_only) continue;  // the v05 sweep is bf16 only
            g_config = v.config;
            LaunchStatus st;
            auto dev = DeviceRun::create(*v.kernel, p, {}, st);
            Timing t;
            if (!dev || (st = dev->upload(in.q, in.k, in.v)) || (st = dev->time(3, n >= 16384 ? 8 : 15, t))) continue;
            const double tf = conventional_fwd_flops(p) / (t.median_ms * 1e-3) / 1e12;
            std::printf("%-14s %-5s %4ld %6d %6ld %9.3f %8.1f\n", v.name.c_str(), dtype_name(dt).data(), (long)d,
                        causal, (long)n, t.median_ms, tf);
            std::fprintf(csv, "ioattn:%s,%s,%ld,%d,%ld,%ld,%ld,%.5f,%.2f\n", v.name.c_str(), dtype_name(dt).data(),
                         (long)d, causal, (long)n, (long)p.batch, (long)p.heads_q, t.median_ms, tf);
          }
        }
      }
  std::fclose(csv);
  return g_failures ? 1 : 0;
}

// kernels/dev/fp8_accum_model.cpp: a CPU model of Hopper's FP8 tensor-core accumulation, to test
// whether it explains v09_fp8_wgmma's failing property case, and how much promotion helps.
// SUPERSEDED: its prediction (promotion passes every seed) was refuted on the H200; the published
// model is reference/fp8_mma_model.hpp, and kernels/dev/fp8_v09_emulate.cpp emulates v09 with it
// (reproducing the H200's errors). Kept as the record of the refuted model (kernels/dev/NOTES.md).
//
// The hypothesis (issue 14): wgmma .f32.e4m3.e4m3 does not accumulate in fp32. The DeepSeek-V3
// report (section 3.3) measured about 14 bits on H800; published bit-level models of H100's FP8
// matrix unit describe it as a multi-term adder: the products (exact: 4 x 4 bit significands) and
// the accumulator input C are aligned to the largest exponent among them, every term keeps only
// F bits below that leading position (the rest is truncated, toward zero), the aligned terms are
// summed exactly and the sum is written back. F = 13 is the value those models and the "FP32
// output keeps 13 mantissa bits" observation give; the block of products one adder step takes
// (16 or 32 of the k32 instruction) is a second parameter. Both are parameters here, not facts:
// the GPU numbers decide (compare this program's table with the diagnosis run).
//
// What it computes, for generated problems like the property's (reference make_inputs, so the
// same distributions: Q, K ~ N(0, a^2) quantized to e4m3 with the descales, logits of std L):
//   S_model = the raw products Q K^T accumulated by the model, k = 32 per instruction, as v09 issues
//             them: "fast" = one accumulator across all d/32 instructions (v09 before promotion);
//             "promote c" = a fresh accumulator (first instruction without C) every c instructions,
//             the partial sums added in fp32 (v09's S promotion with interval c k32 slices);
//   then the baseline's pipeline (fp32 factor, final row max, P~ rounded to e4m3, l from fp32 P~,
//   O = (P~ V) vd / l, rounded to the output dtype); optionally P V through the model too (one
//   accumulator across all keys, as v09's O).
// Each variant's O and LSE go through the error rule (ioattn/tolerance.hpp) against the float64
// definition and the fp32 baseline (reference forward_f64 / forward_naive), as the GPU suite does.
// Printed per (d, logit std, variant): failures out of the seeds, the largest O error / bound,
// the largest |LSE - LSE64| in logits (compare with the GPU's LSE error: the diagnosis prints it).
//
// Build (host only; the reference library from a CPU configure, e.g. build-X/cpu):
//   cmake --build build-X/cpu --target ioattn_reference
//   g++ -std=c++20 -O2 -fopenmp -Iinclude -Ireference -I/usr/include/eigen3 kernels/dev/fp8_accum_model.cpp
//       build-X/cpu/reference/libioattn_reference.a -lfmt -o build-X/fp8_accum_model   (one line)
// Run: build-X/fp8_accum_model [seeds=200] [frac_bits=13] [block=16] [d=all] [logit_std=all] [pv=0]
// (pv=1 adds the rows with P V through the model as well), or
//      build-X/fp8_accum_model seeds d n logit_std seed0 count [frac_bits] [block]
// for per-seed predictions of one `ioattn run` problem (per_seed below).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>
#include <vector>

#include "ioattn/fp8.hpp"
#include "ioattn/problem.hpp"
#include "ioattn/tolerance.hpp"
#include "reference.hpp"
#include "round.hpp"

namespace {

using namespace ioattn;

struct TcModel {
  int frac_bits = 13;  // bits kept below the leading bit of the largest aligned term
  int block = 16;      // products per adder step (a k32 instruction is 32 / block steps)
};

// x truncated (toward zero) to a multiple of q (q a power of two).
double trunc_to(double x, double q) { return std::trunc(x / q) * q; }

// One adder step: c + sum(p), the terms aligned to the largest exponent, frac_bits kept, truncated.
// Products of two e4m3 values are exact in double; the aligned sum is exact in double (|terms| <
// 2^(e+1), multiples of 2^(e - F), at most 33 of them: well inside 53 bits).
double adder_step(double c, std::span<const double> p, const TcModel& m) {
  double big = std::fabs(c);
  for (double x : p) big = std::max(big, std::fabs(x));
  if (big == 0.0) return 0.0;
  int e;
  std::frexp(big, &e);  // big = f 2^e, f in [0.5, 1): leading bit 2^(e - 1)
  const double q = std::ldexp(1.0, e - 1 - m.frac_bits);
  double s = trunc_to(c, q);
  for (double x : p) s += trunc_to(x, q);
  return static_cast<float>(s);  // written back as fp32 (exact here: <= F + 6 significant bits)
}

// Dot product of a[0..n) and b[0..n) (n a multiple of 32) as v09 issues it: k32 instructions,
// a fresh accumulator every `promote` instructions (promote >= n / 32: one accumulator, "fast"),
// the partial sums added in fp32. promote = 0: plain fp32 sequential accumulation (the baseline's).
float dot_model(const float* a, const float* b, int n, int promote, const TcModel& m) {
  if (promote == 0) {
    float s = 0.f;
    for (int x = 0; x < n; ++x) s = std::fma(a[x], b[x], s);
    return s;
  }
  float total = 0.f;
  double acc = 0.0;
  std::vector<double> p(static_cast<size_t>(m.block));
  for (int k0 = 0, instr = 0; k0 < n; k0 += 32, ++instr) {
    if (instr % promote == 0) acc = 0.0;  // fresh accumulator: no C input
    for (int b0 = k0; b0 < k0 + 32; b0 += m.block) {
      for (int x = 0; x < m.block; ++x) p[static_cast<size_t>(x)] = double{a[b0 + x]} * double{b[b0 + x]};
      acc = adder_step(acc, p, m);
    }
    if (instr % promote == promote - 1 || k0 + 32 >= n) total += static_cast<float>(acc);  // promotion: fp32 add
  }
  return total;
}

// Constructed vectors: the model does what the header says (checked at start-up).
bool model_self_check() {
  const TcModel m13{13, 16};
  const double one[1] = {1.0}, three[1] = {3.0}, neg[1] = {-3.0};
  bool ok = adder_step(16384.0, one, m13) == 16384.0;         // 1 < 2^(14-13): truncated away
  ok = ok && adder_step(16384.0, three, m13) == 16386.0;      // 3 -> 2 (toward zero)
  ok = ok && adder_step(16384.0, neg, m13) == 16382.0;        // -3 -> -2 (toward zero, not floor)
  ok = ok && adder_step(0.0, three, m13) == 3.0;              // alone, a product is exact
  const double mixed[2] = {8192.0, 0.75};                     // largest term 2^13: quantum 1
  ok = ok && adder_step(0.0, mixed, m13) == 8192.0;
  std::vector<float> a(64), b(64);
  for (int x = 0; x < 64; ++x) a[static_cast<size_t>(x)] = 1.f + x % 7, b[static_cast<size_t>(x)] = (x % 3) - 1.f;
  const TcModel wide{40, 16};                                 // 40 bits: exact for these sums
  ok = ok && dot_model(a.data(), b.data(), 64, 2, wide) == dot_model(a.data(), b.data(), 64, 0, wide);
  return ok;
}

struct Variant {
  std::string name;
  int promote;   // 0: fp32 accumulation of S (the baseline's; a sanity row)
  bool pv_model; // P V through the model too (one accumulator across all keys, as v09's O)
};

// The baseline's pipeline with S from dot_model: O and LSE in the layouts of reference.hpp.
ref::Forward forward_model(const AttnProblem& p, const ref::Inputs& in, const Variant& v, const TcModel& m) {
  ref::Forward out;
  out.o.assign(static_cast<size_t>(p.q_elems()), 0.f);
  out.lse.assign(static_cast<size_t>(p.lse_elems()), 0.f);
  const MaskSpec mask = p.mask();
  const int d = static_cast<int>(p.head_dim);
  const int64_t nq = p.seqlen_q, nk = p.seqlen_k;
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t h = 0; h < p.heads_q; ++h) {
      const int64_t hk = p.kv_head_of(h);
      const float factor = static_cast<float>(p.softmax_scale()) * p.q_descale_of_head(h) * p.k_descale_of(hk);
      const float vd = p.v_descale_of(hk);
      auto qrow = [&](int64_t i) { return &in.q[static_cast<size_t>(((b * nq + i) * p.heads_q + h) * d)]; };
      auto krow = [&](int64_t j) { return &in.k[static_cast<size_t>(((b * nk + j) * p.heads_kv + hk) * d)]; };
      auto vrow = [&](int64_t j) { return &in.v[static_cast<size_t>(((b * nk + j) * p.heads_kv + hk) * d)]; };
      for (int64_t i = 0; i < nq; ++i) {
        const int64_t lo = mask.key_begin(i), hi = mask.key_end(i);
        float* o = &out.o[static_cast<size_t>(((b * nq + i) * p.heads_q + h) * d)];
        if (hi <= lo) {
          out.lse[static_cast<size_t>(p.lse_offset(b, h, i))] = -INFINITY;
          continue;
        }
        std::vector<float> s(static_cast<size_t>(hi - lo));
        for (int64_t j = lo; j < hi; ++j) s[static_cast<size_t>(j - lo)] = dot_model(qrow(i), krow(j), d, v.promote, m) * factor;
        const float mx = *std::max_element(s.begin(), s.end());
        float l = 0.f;
        for (float& x : s) {
          x = std::exp(x - mx);
          l += x;
        }
        out.lse[static_cast<size_t>(p.lse_offset(b, h, i))] = mx + std::log(l);
        for (float& x : s) x = fp8_round(x, Fp8Format::e4m3);
        // O = P~ V: per output column, over the keys (k32 instructions across all key tiles).
        const int64_t nkeys = hi - lo, padded = (nkeys + 31) / 32 * 32;
        std::vector<float> pa(static_cast<size_t>(padded), 0.f), vb(static_cast<size_t>(padded), 0.f);
        std::copy(s.begin(), s.end(), pa.begin());
        for (int x = 0; x < d; ++x) {
          for (int64_t j = lo; j < hi; ++j) vb[static_cast<size_t>(j - lo)] = vrow(j)[x];
          float acc;
          if (v.pv_model) {
            acc = dot_model(pa.data(), vb.data(), static_cast<int>(padded), static_cast<int>(padded / 32), m);
          } else {
            acc = 0.f;
            for (int64_t j = 0; j < nkeys; ++j) acc = std::fma(pa[static_cast<size_t>(j)], vb[static_cast<size_t>(j)], acc);
          }
          o[x] = ref::round_to(p.output_dtype(), acc * (vd / l));
        }
      }
    }
  return out;
}

struct Row {
  int fails = 0;
  double worst_ratio = 0.0;  // max over seeds of O max_err / bound
  double worst_lse_abs = 0.0;  // max |LSE - LSE64| in logits (LSE is in logit units)
  double worst_o_err = 0.0, bound_at_worst = 0.0;
};

}  // namespace

// Per-seed predictions for one CLI problem, to set beside `ioattn run ... --logit-std L --seed S
// --check` on the GPU (the CLI generates the same inputs: make_inputs(problem, seed, logit_std)):
//   B 1, H 2/2, Nq = Nk = n, d, causal, scale 0.1, q/k descale 0.1, fp16 out.
int per_seed(int64_t d, int64_t n, double L, uint64_t seed0, int count, const TcModel& m) {
  AttnProblem p;
  p.batch = 1, p.heads_q = p.heads_kv = 2, p.seqlen_q = p.seqlen_k = n;
  p.head_dim = d, p.scale = 0.1, p.causal = true, p.dtype = DType::fp8_e4m3;
  p.fp8.q_descale = {0.1f};
  p.fp8.k_descale = {0.1f};
  p.fp8.out = DType::fp16;
  std::vector<Variant> vars = {{"fp32", 0, false}, {"fast", static_cast<int>(d / 32), false}};
  for (int c : {4, 2, 1})
    if (c < d / 32) vars.push_back({"promote" + std::to_string(c), c, false});
  std::printf("# ioattn run --kernel v09_fp8_wgmma --dtype fp8_e4m3 --batch 1 --heads 2 --seqlen %lld --head-dim %lld"
              " --causal --scale 0.1 --q-descale 0.1 --k-descale 0.1 --out-dtype fp16 --logit-std %g --seed S --check\n",
              static_cast<long long>(n), static_cast<long long>(d), L);
  std::printf("# per variant: O max_err / bound (> 1: FAIL), and max |LSE - LSE64|\n# seed");
  for (const Variant& v : vars) std::printf("  %18s", v.name.c_str());
  std::printf("\n");
  for (int k = 0; k < count; ++k) {
    const uint64_t seed = seed0 + static_cast<uint64_t>(k);
    const ref::Inputs in = ref::make_inputs(p, seed, {.logit_std = L});
    const ref::Forward64 r64 = ref::forward_f64(p, in);
    const ref::Forward base = ref::forward_naive(p, in);
    std::printf("%6llu", static_cast<unsigned long long>(seed));
    for (const Variant& v : vars) {
      const ref::Forward out = forward_model(p, in, v, m);
      const RuleResult ro = check_error_rule<float, float>(out.o, r64.o, base.o, p.output_dtype(), kForwardFactor);
      double lse = 0.0;
      for (size_t e = 0; e < out.lse.size(); ++e)
        if (std::isfinite(r64.lse[e])) lse = std::max(lse, std::fabs(out.lse[e] - r64.lse[e]));
      std::printf("  %7.3f %s %.1e", ro.out.max_err / ro.bound, ro.pass ? " " : "F", lse);
    }
    std::printf("\n");
    std::fflush(stdout);
  }
  return 0;
}

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "seeds") {  // seeds d n logit_std seed0 count [frac_bits] [block]
    if (argc < 7) {
      std::fprintf(stderr, "usage: fp8_accum_model seeds d n logit_std seed0 count [frac_bits] [block]\n");
      return 2;
    }
    TcModel m;
    if (argc > 7) m.frac_bits = std::atoi(argv[7]);
    if (argc > 8) m.block = std::atoi(argv[8]);
    if (!model_self_check()) return 1;
    return per_seed(std::atoll(argv[2]), std::atoll(argv[3]), std::atof(argv[4]),
                    static_cast<uint64_t>(std::atoll(argv[5])), std::atoi(argv[6]), m);
  }
  const int seeds = argc > 1 ? std::atoi(argv[1]) : 200;
  TcModel m;
  if (argc > 2) m.frac_bits = std::atoi(argv[2]);
  if (argc > 3) m.block = std::atoi(argv[3]);
  const int64_t only_d = argc > 4 ? std::atoll(argv[4]) : 0;
  const double only_l = argc > 5 ? std::atof(argv[5]) : 0.0;
  const bool with_pv = argc > 6 && std::atoi(argv[6]) != 0;
  if (seeds < 1 || m.frac_bits < 1 || m.frac_bits > 40 || (m.block != 8 && m.block != 16 && m.block != 32)) {
    std::fprintf(stderr, "usage: fp8_accum_model [seeds >= 1] [frac_bits 1..40] [block 8|16|32]\n");
    return 2;
  }
  if (!model_self_check()) {
    std::fprintf(stderr, "fp8_accum_model: the adder model fails its constructed vectors\n");
    return 1;
  }
  std::printf("model: frac_bits %d, block %d products per adder step, truncation toward zero; %d seeds\n",
              m.frac_bits, m.block, seeds);
  struct Shape {
    const char* name;
    int64_t batch, heads, nq, nk;
  };
  // The property's shrunk case (B 2, H 3/3, Nq = Nk = 2, causal, scale 0.1, q/k descale 0.1, fp16 out)
  // and a longer one (one full key tile and a ragged one).
  const Shape shapes[] = {{"B2 H3 N2", 2, 3, 2, 2}, {"B1 H2 N200", 1, 2, 200, 200}};
  for (const Shape& sh : shapes) {
    for (int64_t d : {64, 128, 256}) {
      if (only_d && d != only_d) continue;
      std::vector<Variant> vars = {{"fp32 S (sanity)", 0, false}, {"fast (no promotion)", static_cast<int>(d / 32), false}};
      for (int c : {4, 2, 1})
        if (c < d / 32) vars.push_back({"promote every " + std::to_string(c) + " k32", c, false});
      if (with_pv) {
        vars.push_back({"fast + P V model", static_cast<int>(d / 32), true});
        vars.push_back({"promote 1 + P V model", 1, true});
      }
      for (double L : {0.1, 1.0, 10.0, 100.0}) {
        if (only_l > 0.0 && L != only_l) continue;
        AttnProblem p;
        p.batch = sh.batch, p.heads_q = p.heads_kv = sh.heads, p.seqlen_q = sh.nq, p.seqlen_k = sh.nk;
        p.head_dim = d, p.scale = 0.1, p.causal = true, p.dtype = DType::fp8_e4m3;
        p.fp8.q_descale = {0.1f};
        p.fp8.k_descale = {0.1f};
        p.fp8.out = DType::fp16;
        std::vector<Row> rows(vars.size());
        for (int sd = 0; sd < seeds; ++sd) {
          const ref::Inputs in = ref::make_inputs(p, 1000 + static_cast<uint64_t>(sd), {.logit_std = L});
          const ref::Forward64 r64 = ref::forward_f64(p, in);
          const ref::Forward base = ref::forward_naive(p, in);
          for (size_t vi = 0; vi < vars.size(); ++vi) {
            const ref::Forward out = forward_model(p, in, vars[vi], m);
            const RuleResult ro = check_error_rule<float, float>(out.o, r64.o, base.o, p.output_dtype(), kForwardFactor);
            const RuleResult rl = check_error_rule<float, float>(out.lse, r64.lse, base.lse, p.output_dtype(), kForwardFactor);
            Row& row = rows[vi];
            row.fails += (ro.pass && rl.pass) ? 0 : 1;
            const double ratio = ro.out.max_err / ro.bound;
            if (ratio > row.worst_ratio) {
              row.worst_ratio = ratio;
              row.worst_o_err = ro.out.max_err;
              row.bound_at_worst = ro.bound;
            }
            for (size_t e = 0; e < out.lse.size(); ++e)
              if (std::isfinite(r64.lse[e])) row.worst_lse_abs = std::max(row.worst_lse_abs, std::fabs(out.lse[e] - r64.lse[e]));
          }
        }
        for (size_t vi = 0; vi < vars.size(); ++vi)
          std::printf("%-11s d %3lld  logit std %5.1f  %-24s fails %3d/%d  max O err/bound %7.3f (err %.2e, bound %.2e)  max |LSE err| %.1e\n",
                      sh.name, static_cast<long long>(d), L, vars[vi].name.c_str(), rows[vi].fails, seeds,
                      rows[vi].worst_ratio, rows[vi].worst_o_err, rows[vi].bound_at_worst, rows[vi].worst_lse_abs);
      }
    }
  }
  return 0;
}

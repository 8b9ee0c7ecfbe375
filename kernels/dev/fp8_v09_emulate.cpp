// kernels/dev/fp8_v09_emulate.cpp: v09_fp8_wgmma's forward emulated on the CPU with the FP8
// tensor-core model (reference/fp8_mma_model.hpp), per seed, to set beside the H200's numbers
// (kernels/dev/fp8_promote.sh) and to try a kernel change before writing it.
//
// What it emulates, per query row (v09 at the time of writing; the row is independent of its block):
//   key tiles of Bc keys (128 at d 64/128, 64 at d 256) from key 0 (causal bottom-right, Nq = Nk);
//   S of a tile: fp8_mma_dot(q_i, k_j) in v09's S mode (promote = 0: one accumulator across d,
//   "fast"; n: a fresh accumulator every n k32 instructions, fp32 adds), masked keys -inf;
//   the online softmax of fwd_wgmma_common.hpp / fwd_common.hpp: tile max, the lazy rule (the row's
//   max m moves only when the tile max exceeds it by more than 2^8 in exp2 units; --eager: on any
//   growth), alpha = exp2((m_old - m_new) sl2) on l and O, P~ = exp2(fma(S, sl2, -m sl2)), l += P~;
//   P~ rounded to e4m3 and O = P~ V through the model, one accumulator (C = O, rescaled in fp32);
//   O = O v_descale / l rounded to the output dtype, LSE = m (scale qd kd) + log l.
// Not emulated: ex2.approx's last-bit error (std::exp2 here), l's per-thread partial sums and their
// final 4-lane reduction (here one sequential sum), the key renumbering inside a 32-key group (it
// does not change a k32 step: one alignment, an exact sum). Both can move a P~ across an e4m3
// rounding boundary in rare cases.
// Printed per seed: the O error, its verdict under the rule against the fp32 baseline (forward_naive)
// and against the tensor-core baseline of the same S mode (forward_naive_fp8), and the LSE error.
//
// Build (host only; the reference library of a CPU configure, e.g. build-X):
//   cmake --build build-X --target ioattn_reference
//   g++ -std=c++20 -O2 -fopenmp -Iinclude -Ireference -I/usr/include/eigen3 kernels/dev/fp8_v09_emulate.cpp
//       build-X/reference/libioattn_reference.a -lfmt -o build-X/fp8_v09_emulate        (one line)
// Run: build-X/fp8_v09_emulate D PROMOTE [seeds=12] [--eager] [--l-rounded]     (PROMOTE: fast or n)
//   --eager: the max moves on any growth; --l-rounded: O divided by the sum of the rounded P~ (two
//   candidate fixes of the O failures; kernels/dev/NOTES.md).
// The problem is fp8_promote.sh's: B 1, H 2, N 200, causal, scale 0.1, q/k descale 0.1, fp16 out,
// logits of std 100, seeds 1..seeds.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>
#include <vector>

#include "ioattn/fp8.hpp"
#include "ioattn/tolerance.hpp"
#include "reference.hpp"

namespace {

using namespace ioattn;
using namespace ioattn::ref;

constexpr float kLazyLog2 = 8.0f;  // kernels/fwd_common.hpp

// eager: the max moves on any growth. l_rounded: O is normalized by the sum of the e4m3-rounded P~
// (the LSE keeps the unrounded l): an alternative fix that keeps lazy rescaling.
Forward emulate_v09(const AttnProblem& p, const Inputs& in, int promote, bool eager, bool l_rounded) {
  Forward out;
  out.o.assign(static_cast<size_t>(p.q_elems()), 0.0f);
  out.lse.assign(static_cast<size_t>(p.lse_elems()), 0.0f);
  const MaskSpec mask = p.mask();
  const int d = static_cast<int>(p.head_dim), bc = d == 256 ? 64 : 128;
  for (int64_t h = 0; h < p.heads_q; ++h) {
    const int64_t hk = p.kv_head_of(h);
    const float s_factor = static_cast<float>(p.softmax_scale()) * p.q_descale_of_head(h) * p.k_descale_of(hk);
    const float sl2 = s_factor * 1.4426950408889634f;
    const float vd = p.v_descale_of(hk);
#pragma omp parallel for schedule(dynamic)
    for (int64_t i = 0; i < p.seqlen_q; ++i) {
      const std::span<const float> q(&in.q[static_cast<size_t>(p.q_offset(0, i, h, 0))], static_cast<size_t>(d));
      const int64_t lo = mask.key_begin(i), hi = mask.key_end(i);
      float m = -INFINITY, l = 0.0f, l_r = 0.0f;
      std::vector<float> o(static_cast<size_t>(d), 0.0f), s(static_cast<size_t>(bc)), pe(static_cast<size_t>(bc)),
          v(kFp8MmaGroup);
      for (int64_t j0 = lo / bc * bc; j0 < hi; j0 += bc) {
        float m_tile = -INFINITY;
        for (int c = 0; c < bc; ++c) {
          const int64_t key = j0 + c;
          s[c] = -INFINITY;
          if (key < lo || key >= hi) continue;
          s[c] = fp8_mma_dot(q, std::span<const float>(&in.k[static_cast<size_t>(p.kv_offset(0, key, hk, 0))], q.size()),
                             promote);
          m_tile = std::max(m_tile, s[c]);
        }
        const bool grow = eager ? m_tile > m : (m_tile - m) * sl2 > kLazyLog2;
        float alpha = 1.0f;
        if (grow) {
          alpha = std::exp2((m - m_tile) * sl2);
          m = m_tile;
          l *= alpha;
          l_r *= alpha;
          for (float& x : o) x *= alpha;  // O rescaled in fp32 before the tile's P V
        }
        const float offset = m == -INFINITY ? 0.0f : m * sl2;
        for (int c = 0; c < bc; ++c) {
          const float pv = std::exp2(std::fma(s[c], sl2, -offset));
          l += pv;
          pe[c] = fp8_round(pv, Fp8Format::e4m3);
          l_r += pe[c];
        }
        for (int x = 0; x < d; ++x)
          for (int g = 0; g < bc; g += kFp8MmaGroup) {
            for (int c = 0; c < kFp8MmaGroup; ++c) {
              const int64_t key = j0 + g + c;
              v[c] = key < p.seqlen_k ? in.v[static_cast<size_t>(p.kv_offset(0, key, hk, x))] : 0.0f;
            }
            o[x] = fp8_mma_step(std::span<const float>(&pe[g], kFp8MmaGroup), v, o[x]);
          }
      }
      const float l_o = l_rounded ? l_r : l;
      const float f = l_o > 0.0f ? vd / l_o : 0.0f;
      for (int x = 0; x < d; ++x) out.o[static_cast<size_t>(p.q_offset(0, i, h, x))] = round_to(p.output_dtype(), o[x] * f);
      out.lse[static_cast<size_t>(p.lse_offset(0, h, i))] = l > 0.0f ? m * s_factor + std::log(l) : -INFINITY;
    }
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: fp8_v09_emulate D fast|N [seeds=12] [--eager] [--l-rounded]\n");
    return 2;
  }
  const int d = std::atoi(argv[1]);
  const std::string mode = argv[2];
  const int promote = mode == "fast" ? 0 : std::atoi(mode.c_str());
  const int seeds = argc > 3 && argv[3][0] != '-' ? std::atoi(argv[3]) : 12;
  bool eager = false, l_rounded = false;
  for (int a = 3; a < argc; ++a) {
    eager = eager || std::string(argv[a]) == "--eager";
    l_rounded = l_rounded || std::string(argv[a]) == "--l-rounded";
  }
  const char* variant = eager && l_rounded ? " eager l-rounded" : eager ? " eager" : l_rounded ? " l-rounded" : "";
  if ((d != 64 && d != 128 && d != 256) || (mode != "fast" && (promote < 1 || (d / 32) % promote != 0)) || seeds < 1) {
    std::fprintf(stderr, "fp8_v09_emulate: D must be 64, 128 or 256, the interval fast or a divisor of D/32, seeds >= 1\n");
    return 2;
  }
  AttnProblem p;
  p.batch = 1, p.heads_q = p.heads_kv = 2, p.seqlen_q = p.seqlen_k = 200;
  p.head_dim = d, p.scale = 0.1, p.causal = true, p.dtype = DType::fp8_e4m3;
  p.fp8.q_descale = {0.1f};
  p.fp8.k_descale = {0.1f};
  p.fp8.out = DType::fp16;
  const Fp8Accumulation acc{true, promote};
  int fails32 = 0, failsmm = 0;
  for (int seed = 1; seed <= seeds; ++seed) {
    const Inputs in = make_inputs(p, static_cast<uint64_t>(seed), {.logit_std = 100});
    const Forward64 r64 = forward_f64(p, in);
    const Forward emu = emulate_v09(p, in, promote, eager, l_rounded);
    const Forward b32 = forward_naive(p, in), bmm = forward_naive_fp8(p, in, acc);
    auto rule = [&](const std::vector<float>& out, const std::vector<double>& ref, const std::vector<float>& base) {
      return check_error_rule(std::span<const float>(out), std::span<const double>(ref), std::span<const float>(base),
                              p.output_dtype(), kForwardFactor);
    };
    const RuleResult o32 = rule(emu.o, r64.o, b32.o), omm = rule(emu.o, r64.o, bmm.o);
    const RuleResult l32 = rule(emu.lse, r64.lse, b32.lse), lmm = rule(emu.lse, r64.lse, bmm.lse);
    const bool p32 = o32.pass && l32.pass, pmm = omm.pass && lmm.pass;
    fails32 += !p32, failsmm += !pmm;
    std::printf("d %d promote %-4s%s seed %3d | O err %.3e | fp32 baseline %s bound %.3e | %s baseline %s bound %.3e | LSE err %.2e\n",
                d, mode.c_str(), variant, seed, o32.out.max_err, p32 ? "PASS" : "FAIL", o32.bound,
                acc.name().c_str(), pmm ? "PASS" : "FAIL", omm.bound, l32.out.max_err);
    std::fflush(stdout);
  }
  std::printf("== summary d %d promote %s%s: %d seeds, fails vs fp32 baseline %d, vs %s baseline %d\n", d, mode.c_str(),
              variant, seeds, fails32, acc.name().c_str(), failsmm);
  return 0;
}

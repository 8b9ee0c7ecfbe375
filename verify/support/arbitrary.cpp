// verify/support/arbitrary.cpp: the weighted problem generator (see arbitrary.hpp).
#include "arbitrary.hpp"

#include <algorithm>
#include <cstdlib>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace ioattn::verify {

namespace {

rc::Gen<int64_t> gen_seqlen(int64_t max) {
  auto capped = [max](int64_t n) { return std::min(n, max); };
  return rc::gen::map(
      rc::gen::weightedOneOf<int64_t>({
          {4, rc::gen::just<int64_t>(1)},
          {5, rc::gen::element<int64_t>(17, 113)},
          {1, rc::gen::just<int64_t>(1013)},
          {6, rc::gen::inRange<int64_t>(2, 65)},
          {2, rc::gen::inRange<int64_t>(65, 300)},
      }),
      capped);
}

rc::Gen<int64_t> gen_bound() {
  return rc::gen::weightedOneOf<int64_t>({
      {2, rc::gen::just<int64_t>(-1)},
      {1, rc::gen::just<int64_t>(0)},
      {3, rc::gen::inRange<int64_t>(1, 41)},
  });
}

rc::Gen<int64_t> gen_head_dim(int64_t max) {
  auto capped = [max](int64_t d) { return std::min(d, max); };
  return rc::gen::map(rc::gen::weightedOneOf<int64_t>({
                          {6, rc::gen::element<int64_t>(59, 80, 96)},
                          {3, rc::gen::element<int64_t>(1, 8, 64, 128)},
                          {2, rc::gen::inRange<int64_t>(1, 161)},
                      }),
                      capped);
}

double work(const AttnProblem& p) {
  return double(p.batch) * double(p.heads_q) * double(p.seqlen_q) * double(p.seqlen_k) *
         double(p.head_dim);
}

}  // namespace

rc::Gen<AttnProblem> gen_problem(const ProblemLimits& lim) {
  return rc::gen::exec([lim] {
    AttnProblem p;
    p.seqlen_q = *gen_seqlen(lim.max_seqlen);
    // Equal lengths half the time; otherwise independent, so seqlen_q > seqlen_k comes often.
    p.seqlen_k = *rc::gen::weightedOneOf<int64_t>(
        {{1, rc::gen::just(p.seqlen_q)}, {1, gen_seqlen(lim.max_seqlen)}});
    p.heads_kv = *rc::gen::element<int64_t>(1, 1, 2, 3);
    p.heads_q = p.heads_kv * *rc::gen::element<int64_t>(1, 1, 2, 4);  // MHA, GQA, MQA
    p.batch = *rc::gen::element<int64_t>(1, 1, 2);
    p.head_dim = *gen_head_dim(lim.max_head_dim);
    if (lim.masks) {
      p.causal = *rc::gen::weightedOneOf<bool>({{2, rc::gen::just(true)}, {3, rc::gen::just(false)}});
      if (*rc::gen::weightedOneOf<bool>({{1, rc::gen::just(true)}, {2, rc::gen::just(false)}})) {
        p.window_left = *gen_bound();
        p.window_right = *gen_bound();
      }
    }
    if (lim.low_precision)
      p.dtype = *rc::gen::element(DType::fp32, DType::fp32, DType::fp16, DType::bf16);
    if (*rc::gen::weightedOneOf<bool>({{1, rc::gen::just(true)}, {4, rc::gen::just(false)}}))
      p.scale = *rc::gen::element(0.01, 0.1, 0.5, 1.0);
    // Respect the work cap by shedding batch, then heads, then head_dim, then the longer sequence.
    while (work(p) > lim.max_work) {
      if (p.batch > 1) p.batch = 1;
      else if (p.heads_q > 1) p.heads_q = p.heads_kv = 1;
      else if (p.head_dim > 59) p.head_dim = 59;
      else if (p.seqlen_q >= p.seqlen_k && p.seqlen_q > 1) p.seqlen_q = std::max<int64_t>(1, p.seqlen_q / 2 + 1);
      else if (p.seqlen_k > 1) p.seqlen_k = std::max<int64_t>(1, p.seqlen_k / 2 + 1);
      else break;
    }
    return p;
  });
}

rc::Gen<ref::Tiling> gen_tiling(const AttnProblem& p) {
  auto block = [](int64_t n) {
    return rc::gen::weightedOneOf<int64_t>({
        {1, rc::gen::just<int64_t>(1)},
        {3, rc::gen::element<int64_t>(16, 32, 64, 128)},
        {4, rc::gen::inRange<int64_t>(1, n + 8)},  // ragged; may exceed the sequence
    });
  };
  return rc::gen::exec([=] {
    ref::Tiling t;
    t.br = *block(p.seqlen_q);
    t.bc = *block(p.seqlen_k);
    t.splits = *rc::gen::weightedOneOf<int64_t>(
        {{2, rc::gen::just<int64_t>(1)}, {5, rc::gen::inRange<int64_t>(2, 9)}, {1, rc::gen::inRange<int64_t>(9, 40)}});
    // At most kMaxBlocks blocks along each axis. Tiled algorithms accumulate across blocks
    // sequentially in fp32 (FA1's O, FA2 backward's dK, dV over Tr query blocks): with Br = 1 on
    // 1013 rows that is a 1013-term running sum, sqrt(Tr) u off, while the naive GEMM sums in
    // blocks; the rule would then judge the summation length rather than the algorithm (seen:
    // dV 1.8e-4 vs bound 1.0e-4 at Nq = 1013, Br = 1). Real kernels use Tr, Tc <= N / 16.
    constexpr int64_t kMaxBlocks = 64;
    t.br = std::max(t.br, (p.seqlen_q + kMaxBlocks - 1) / kMaxBlocks);
    t.bc = std::max(t.bc, (p.seqlen_k + kMaxBlocks - 1) / kMaxBlocks);
    return t;
  });
}

rc::Gen<double> gen_logit_std() {
  return rc::gen::weightedOneOf<double>({
      {6, rc::gen::just(1.0)},
      {2, rc::gen::element(0.1, 3.0, 10.0)},
      {2, rc::gen::element(100.0, 1000.0, 3000.0)},
  });
}

void classify(const AttnProblem& p) {
  const MaskSpec m = p.mask();
  const bool masked_rows = m.row_fully_masked(0);  // masked rows lead (key ranges are monotone)
  RC_CLASSIFY(p.seqlen_q == 1, "seqlen_q=1");
  RC_CLASSIFY(p.seqlen_q == 17 || p.seqlen_q == 113 || p.seqlen_q == 1013 || p.seqlen_k == 17 ||
                  p.seqlen_k == 113 || p.seqlen_k == 1013,
              "seqlen 17/113/1013");
  RC_CLASSIFY(p.seqlen_q > p.seqlen_k, "seqlen_q>seqlen_k");
  RC_CLASSIFY(p.seqlen_q < p.seqlen_k, "seqlen_q<seqlen_k");
  RC_CLASSIFY(p.causal, "causal");
  RC_CLASSIFY(p.window_left >= 0 || p.window_right >= 0, "window");
  RC_CLASSIFY(masked_rows, "fully masked rows");
  RC_CLASSIFY(p.heads_kv == 1 && p.heads_q > 1, "MQA");
  RC_CLASSIFY(p.heads_kv > 1 && p.heads_q > p.heads_kv, "GQA");
  RC_CLASSIFY(p.head_dim == 59 || p.head_dim == 80 || p.head_dim == 96, "head_dim 59/80/96");
  RC_CLASSIFY(p.dtype == DType::fp16, "fp16");
  RC_CLASSIFY(p.dtype == DType::bf16, "bf16");
}

std::string describe(const AttnProblem& p) {
  return fmt::format("B={} Hq={} Hkv={} Nq={} Nk={} d={} {}{}{} scale={}", p.batch, p.heads_q,
                     p.heads_kv, p.seqlen_q, p.seqlen_k, p.head_dim, dtype_name(p.dtype),
                     p.causal ? " causal" : "",
                     (p.window_left >= 0 || p.window_right >= 0)
                         ? fmt::format(" window=({},{})", p.window_left, p.window_right)
                         : std::string{},
                     p.scale ? fmt::format("{}", *p.scale) : std::string("default")) +
         (is_fp8(p.dtype) ? fmt::format(" q_descale={} k_descale={} v_descale={} out={}", fmt::join(p.fp8.q_descale, ","),
                                        fmt::join(p.fp8.k_descale, ","), fmt::join(p.fp8.v_descale, ","),
                                        dtype_name(p.fp8.out))
                          : std::string{});
}

std::vector<int64_t> head_dims_to_check(std::string_view listed) {
  std::vector<int64_t> dims;
  if (listed.starts_with("any")) {
    int64_t max_d = 320;
    if (listed.starts_with("any<=")) max_d = std::strtoll(std::string(listed.substr(5)).c_str(), nullptr, 10);
    for (int64_t d : {59, 64, 96, 128, 256, 320})
      if (d <= max_d) dims.push_back(d);
    return dims;
  }
  std::size_t pos = 0;
  while (pos < listed.size()) {
    const std::size_t comma = std::min(listed.find(',', pos), listed.size());
    const std::string item(listed.substr(pos, comma - pos));
    char* end = nullptr;
    const int64_t d = std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || d <= 0) return {};
    dims.push_back(d);
    pos = comma + 1;
  }
  return dims;
}

}  // namespace ioattn::verify

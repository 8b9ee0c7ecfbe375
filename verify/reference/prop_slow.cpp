// verify/reference/prop_slow.cpp (ctest label `slow`): the same rule on long sequences, where the
// main properties cannot afford many cases: seqlen 257..2048, several heads, all three tiled
// forwards and the FA2 backward. OpenMP uses every core here.
#include <fmt/format.h>

#include "arbitrary.hpp"
#include "compare.hpp"
#include "property.hpp"

namespace {

using namespace ioattn;
using namespace ioattn::verify;

AttnProblem gen_long_problem(double max_work) {
  ProblemLimits lim;
  lim.max_work = 1e18;  // sizes are set below
  AttnProblem p = *gen_problem(lim);
  p.seqlen_q = *rc::gen::element<int64_t>(257, 512, 1013, 2048);
  p.seqlen_k = *rc::gen::weightedOneOf<int64_t>(
      {{1, rc::gen::just(p.seqlen_q)}, {1, rc::gen::element<int64_t>(300, 1013, 2048)}});
  while (double(p.batch * p.heads_q) * double(p.seqlen_q * p.seqlen_k) * double(p.head_dim) > max_work) {
    if (p.batch > 1) p.batch = 1;
    else if (p.heads_q > 1) p.heads_q = p.heads_kv = 1;
    else if (p.head_dim > 64) p.head_dim = 64;
    else break;
  }
  return p;
}

void long_forward_equals_reference() {
  const AttnProblem p = gen_long_problem(2e8);
  const ref::Tiling t = *gen_tiling(p);
  const double logit_std = *gen_logit_std();
  classify(p);
  const Case c = make_case(p, *rc::gen::arbitrary<uint64_t>(), {.logit_std = logit_std});
  const std::string tag = fmt::format("[{}; Br={} Bc={} splits={} logit_std={}]", describe(p), t.br, t.bc,
                                      t.splits, logit_std);
  require(check_forward(ref::forward_fa1(p, c.in, t), c.ref64, c.baseline, p.dtype), "FA1 " + tag);
  require(check_forward(ref::forward_fa2(p, c.in, t), c.ref64, c.baseline, p.dtype), "FA2 " + tag);
  require(check_forward(ref::forward_splitkv(p, c.in, t), c.ref64, c.baseline, p.dtype), "split-KV " + tag);
}

void long_backward_equals_reference() {
  const AttnProblem p = gen_long_problem(6e7);
  const ref::Tiling t = *gen_tiling(p);
  const double logit_std = *gen_logit_std();
  classify(p);
  const ref::Inputs in = ref::make_inputs(p, *rc::gen::arbitrary<uint64_t>(), {.logit_std = logit_std});
  const ref::Forward fwd = ref::forward_fa2(p, in, t);
  require(check_grads(ref::backward_fa2(p, in, fwd, t), ref::backward_f64(p, in), ref::backward_naive(p, in, fwd),
                      p.dtype),
          fmt::format("FA2 backward [{}; Br={} Bc={} logit_std={}]", describe(p), t.br, t.bc, logit_std));
}

}  // namespace

int main() {
  return run_properties({
      {"long_forward_equals_reference", 40, long_forward_equals_reference},
      {"long_backward_equals_reference", 15, long_backward_equals_reference},
  });
}

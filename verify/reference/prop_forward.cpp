// verify/reference/prop_forward.cpp: the tiled forward algorithms (FA1, FA2, split-KV) equal the
// float64 definition under the error rule, for any tiling; their LSE matches; fully masked rows
// give exactly O = 0 and LSE = -inf.
//
//   ./build/verify/reference/reference_prop_forward            (RC_SEED=random for a fresh seed)
#include <fmt/format.h>

#include "arbitrary.hpp"
#include "compare.hpp"
#include "property.hpp"

namespace {

using namespace ioattn;
using namespace ioattn::verify;

using ForwardFn = ref::Forward (*)(const AttnProblem&, const ref::Inputs&, const ref::Tiling&);

// O = 0 and LSE = -inf, bit for bit, on every fully masked row.
void require_masked_rows_empty(const AttnProblem& p, const ref::Forward& out) {
  const MaskSpec mask = p.mask();
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t h = 0; h < p.heads_q; ++h)
      for (int64_t i = 0; i < p.seqlen_q && mask.row_fully_masked(i); ++i) {
        RC_ASSERT(out.lse[p.lse_offset(b, h, i)] == -std::numeric_limits<float>::infinity());
        for (int64_t x = 0; x < p.head_dim; ++x) RC_ASSERT(out.o[p.q_offset(b, i, h, x)] == 0.0f);
      }
}

std::function<void()> equals_reference(const char* name, ForwardFn fn) {
  return [name, fn] {
    const AttnProblem p = *rc::gen::arbitrary<AttnProblem>();
    const ref::Tiling t = *gen_tiling(p);
    const double logit_std = *gen_logit_std();
    const auto seed = *rc::gen::arbitrary<uint64_t>();
    classify(p);
    RC_CLASSIFY(logit_std >= 100, "logit_std>=100");
    RC_CLASSIFY(t.br == 1 || t.bc == 1, "Br or Bc = 1");
    RC_CLASSIFY(p.seqlen_q % t.br != 0 || p.seqlen_k % t.bc != 0, "ragged tiles");
    const Case c = make_case(p, seed, {.logit_std = logit_std});
    const ref::Forward out = fn(p, c.in, t);
    require(check_forward(out, c.ref64, c.baseline, p.dtype),
            fmt::format("{} [{}; Br={} Bc={} splits={} logit_std={}]", name, describe(p), t.br, t.bc,
                        t.splits, logit_std));
    require_masked_rows_empty(p, out);
  };
}

}  // namespace

int main() {
  return run_properties({
      {"fa1_equals_reference", 2000, equals_reference("FA1", &ref::forward_fa1)},
      {"fa2_equals_reference", 3000, equals_reference("FA2", &ref::forward_fa2)},
      {"splitkv_equals_reference", 2000, equals_reference("split-KV", &ref::forward_splitkv)},
  });
}

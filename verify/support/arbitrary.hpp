// verify/support/arbitrary.hpp: RapidCheck generators for attention problems, weighted toward
// the shapes where attention code breaks (flash-attention-minimal PR #2, flash-attention #1778):
//
//   seqlen   1; 17, 113, 1013 (not a multiple of any block size); small random; a few hundred
//   seqlen_q != seqlen_k, causal included, seqlen_q > seqlen_k (leading rows fully masked)
//   windows  left/right bounds 0..40 or unbounded, causal or not
//   heads    MHA, GQA (2, 4 query heads per kv head), MQA (1 kv head)
//   head_dim 59, 80, 96 (not powers of two) beside 1, 8, 64, 128 and random 1..160
//   dtype    fp32, fp16, bf16;  scale default or explicit;  logits up to ~1e4 (gen_logit_std)
//
// Problems are sized by a work cap (batch * heads_q * seqlen_q * seqlen_k * head_dim): a property
// that runs thousands of cases keeps the cap small, the `slow` tests raise it.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include <rapidcheck.h>

#include "ioattn/problem.hpp"
#include "reference.hpp"

namespace ioattn::verify {

struct ProblemLimits {
  int64_t max_seqlen = 1013;        // largest seqlen_q or seqlen_k
  double max_work = 4e6;            // cap on batch * heads_q * seqlen_q * seqlen_k * head_dim
  int64_t max_head_dim = 160;
  bool low_precision = true;        // also fp16 and bf16
  bool masks = true;                // causal and windows
};

rc::Gen<AttnProblem> gen_problem(const ProblemLimits& lim = {});
// Block sizes Br, Bc (1, ragged, powers of two, larger than the sequence) and a split count
// (1..8, sometimes more splits than key blocks) for a problem. Tr and Tc stay <= 64 (why: the
// comment in arbitrary.cpp); below 64 rows every block size down to 1 is generated.
rc::Gen<ref::Tiling> gen_tiling(const AttnProblem& p);
// Standard deviation of the logits (ref::InputOptions::logit_std): mostly 1, up to 3000, whose
// largest logits reach ~1e4 in magnitude.
rc::Gen<double> gen_logit_std();

// RC_CLASSIFY the coverage tags of a problem (call inside a property).
void classify(const AttnProblem& p);
// One line: "B=2 Hq=4 Hkv=2 Nq=113 Nk=17 d=59 fp16 causal window=(16,0) scale=default".
std::string describe(const AttnProblem& p);

// Head dims a GPU suite runs a kernel variant at, from its registry entry's head_dims: every one it
// lists ("64,128"), or for "any" / "any<=N" a representative few up to N (59: odd, not a multiple
// of 8; 320: beyond the tiled variants' 256, for an unbounded "any"). Empty when unreadable.
std::vector<int64_t> head_dims_to_check(std::string_view listed);

}  // namespace ioattn::verify

namespace ioattn {
// RapidCheck prints counterexamples with this (found by argument-dependent lookup).
inline void showValue(const AttnProblem& p, std::ostream& os) { os << verify::describe(p); }
namespace ref {
inline void showValue(const Tiling& t, std::ostream& os) {
  os << "Br=" << t.br << " Bc=" << t.bc << " splits=" << t.splits;
}
}  // namespace ref
}  // namespace ioattn

namespace rc {
template <>
struct Arbitrary<ioattn::AttnProblem> {
  static Gen<ioattn::AttnProblem> arbitrary() { return ioattn::verify::gen_problem(); }
};
template <>
struct Arbitrary<ioattn::ref::Tiling> {
  static Gen<ioattn::ref::Tiling> arbitrary() {
    return gen::construct<ioattn::ref::Tiling>(gen::inRange<int64_t>(1, 130), gen::inRange<int64_t>(1, 130),
                                                gen::inRange<int64_t>(1, 9));
  }
};
}  // namespace rc

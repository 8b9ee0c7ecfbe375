// verify/reference/prop_layouts.cpp: packed (varlen) batches and paged KV caches (ioattn/layout.hpp)
// give exactly the dense result of the same data.
//
// Each case generates a layout problem (verify/support/layouts.hpp: ragged lengths with 0 and 1,
// page sizes 1 and sizes that do not divide the lengths, shuffled block tables, spare pages, GQA
// 1/4/8, causal, windows, fp32/fp16/bf16), the dense inputs of every sequence, and places them in
// the layout by the test's own reading of the tables; every row no sequence reads holds random
// values. Then, for forward_f64, forward_naive, backward_f64 and backward_naive:
//   the layout's result == the dense result of each sequence, placed the same way, bit for bit
//   (float64 and the same-precision baseline alike), 0 / -inf wherever no sequence writes, no NaN;
// the low-precision forward also passes the error rule against the dense float64 result. A batch of
// equal lengths is also compared with the batched dense problem itself (one reference call, no
// per-sequence split). Generated tables are valid, and each kind of broken table is refused with
// the constraint named (the named cases: verify/spec/test_layout.cpp).
//
//   ./build/verify/reference/reference_prop_layouts            (RC_SEED=random for a fresh seed)
#include <cmath>
#include <limits>
#include <random>

#include <fmt/format.h>

#include "arbitrary.hpp"
#include "compare.hpp"
#include "layouts.hpp"
#include "property.hpp"

namespace {

using namespace ioattn;
using namespace ioattn::verify;

struct LayoutCase {
  AttnProblem p;
  uint64_t seed = 0;
  std::vector<ref::Inputs> dense_in;  // per sequence; empty when it has 0 queries or 0 keys
  ref::Inputs in;                     // the layout's tensors
  bool has_data(int64_t b) const { return !dense_in[static_cast<size_t>(b)].q.empty(); }
};

LayoutCase make_layout_case(const AttnProblem& p, uint64_t seed) {
  LayoutCase c{p, seed, {}, {}};
  for (int64_t b = 0; b < p.batch; ++b) {
    const AttnProblem d = dense_of(p, b);
    const bool data = d.seqlen_q >= 1 && d.seqlen_k >= 1;
    c.dense_in.push_back(data ? ref::make_inputs(d, seed + 1 + static_cast<uint64_t>(b)) : ref::Inputs{});
  }
  c.in = place_inputs(p, c.dense_in, seed);
  return c;
}

// The layout's expected forward: each sequence's dense result in its rows, O = 0 and LSE = -inf
// everywhere else.
template <class T>
ref::ForwardResult<T> expected_forward(const LayoutCase& c, const std::vector<ref::ForwardResult<T>>& dense) {
  const AttnProblem& p = c.p;
  ref::ForwardResult<T> e;
  e.o.assign(static_cast<size_t>(p.q_elems()), T(0));
  e.lse.assign(static_cast<size_t>(p.lse_elems()), -std::numeric_limits<T>::infinity());
  for (int64_t b = 0; b < p.batch; ++b) {
    if (!c.has_data(b)) continue;
    const AttnProblem s = dense_of(p, b);
    for (int64_t i = 0; i < s.seqlen_q; ++i)
      for (int64_t h = 0; h < p.heads_q; ++h) {
        e.lse[lse_index_of(p, b, h, i)] = dense[b].lse[s.lse_offset(0, h, i)];
        for (int64_t x = 0; x < p.head_dim; ++x)
          e.o[(q_row_of(p, b, i) * p.heads_q + h) * p.head_dim + x] = dense[b].o[s.q_offset(0, i, h, x)];
      }
  }
  return e;
}

// The layout's expected gradients: each sequence's dense dQ, dK, dV in its rows, 0 elsewhere.
template <class T>
ref::GradResult<T> expected_grads(const LayoutCase& c, const std::vector<ref::GradResult<T>>& dense) {
  const AttnProblem& p = c.p;
  ref::GradResult<T> e;
  e.dq.assign(static_cast<size_t>(p.q_elems()), T(0));
  e.dk.assign(static_cast<size_t>(p.kv_elems()), T(0));
  e.dv.assign(static_cast<size_t>(p.kv_elems()), T(0));
  for (int64_t b = 0; b < p.batch; ++b) {
    if (!c.has_data(b)) continue;
    const AttnProblem s = dense_of(p, b);
    for (int64_t i = 0; i < s.seqlen_q; ++i)
      for (int64_t h = 0; h < p.heads_q; ++h)
        for (int64_t x = 0; x < p.head_dim; ++x)
          e.dq[(q_row_of(p, b, i) * p.heads_q + h) * p.head_dim + x] = dense[b].dq[s.q_offset(0, i, h, x)];
    for (int64_t j = 0; j < s.seqlen_k; ++j)
      for (int64_t h = 0; h < p.heads_kv; ++h)
        for (int64_t x = 0; x < p.head_dim; ++x) {
          const int64_t to = (kv_row_of(p, b, j) * p.heads_kv + h) * p.head_dim + x;
          e.dk[to] = dense[b].dk[s.kv_offset(0, j, h, x)];
          e.dv[to] = dense[b].dv[s.kv_offset(0, j, h, x)];
        }
  }
  return e;
}

// Bit-identical (== on every element; -inf equals -inf) and no NaN, else RC_FAIL naming the first
// differing element.
template <class T>
void require_identical(const std::vector<T>& got, const std::vector<T>& want, std::string_view tensor,
                       std::string_view what, const LayoutCase& c) {
  if (got.size() != want.size())
    RC_FAIL(fmt::format("{} {}: {} elements, expected {} [{}]", what, tensor, got.size(), want.size(),
                        describe_layout(c.p)));
  for (size_t k = 0; k < got.size(); ++k)
    if (std::isnan(got[k]) || !(got[k] == want[k]))
      RC_FAIL(fmt::format("{} {}: element {} is {:.17g}, the dense result {:.17g} [{}; seed {}]", what, tensor, k,
                          double(got[k]), double(want[k]), describe_layout(c.p), c.seed));
}

template <class T>
void require_identical(const ref::ForwardResult<T>& got, const ref::ForwardResult<T>& want, std::string_view what,
                       const LayoutCase& c) {
  require_identical(got.o, want.o, "O", what, c);
  require_identical(got.lse, want.lse, "LSE", what, c);
}

template <class T>
void require_identical(const ref::GradResult<T>& got, const ref::GradResult<T>& want, std::string_view what,
                       const LayoutCase& c) {
  require_identical(got.dq, want.dq, "dQ", what, c);
  require_identical(got.dk, want.dk, "dK", what, c);
  require_identical(got.dv, want.dv, "dV", what, c);
}

LayoutCase generated_case() {
  const AttnProblem p = *gen_layout_problem();
  const auto seed = *rc::gen::arbitrary<uint64_t>();
  if (auto e = p.validate()) RC_FAIL("generated layout problem is invalid: " + *e + " [" + describe_layout(p) + "]");
  classify_layout(p);
  return make_layout_case(p, seed);
}

template <class T, class F>
std::vector<T> per_sequence(const LayoutCase& c, F&& dense_fn) {
  std::vector<T> out;
  for (int64_t b = 0; b < c.p.batch; ++b)
    out.push_back(c.has_data(b) ? dense_fn(dense_of(c.p, b), c.dense_in[static_cast<size_t>(b)]) : T{});
  return out;
}

void forward_f64_equals_dense() {
  const LayoutCase c = generated_case();
  const auto dense = per_sequence<ref::Forward64>(
      c, [](const AttnProblem& d, const ref::Inputs& in) { return ref::forward_f64(d, in); });
  require_identical(ref::forward_f64(c.p, c.in), expected_forward(c, dense), "forward_f64", c);
}

void forward_naive_equals_dense() {
  const LayoutCase c = generated_case();
  RC_CLASSIFY(c.p.dtype != DType::fp32, "error rule in fp16/bf16");
  const auto dense = per_sequence<ref::Forward>(
      c, [](const AttnProblem& d, const ref::Inputs& in) { return ref::forward_naive(d, in); });
  const auto dense64 = per_sequence<ref::Forward64>(
      c, [](const AttnProblem& d, const ref::Inputs& in) { return ref::forward_f64(d, in); });
  const ref::Forward out = ref::forward_naive(c.p, c.in);
  require_identical(out, expected_forward(c, dense), "forward_naive", c);
  // The error rule against the dense float64 result, with the dense baseline.
  require(check_forward(out, expected_forward(c, dense64), expected_forward(c, dense), c.p.dtype),
          fmt::format("forward_naive vs dense float64 [{}]", describe_layout(c.p)));
}

void backward_equals_dense() {
  const LayoutCase c = generated_case();
  const auto dense64 = per_sequence<ref::Grads64>(
      c, [](const AttnProblem& d, const ref::Inputs& in) { return ref::backward_f64(d, in); });
  require_identical(ref::backward_f64(c.p, c.in), expected_grads(c, dense64), "backward_f64", c);
  const auto dense = per_sequence<ref::Grads>(
      c, [](const AttnProblem& d, const ref::Inputs& in) { return ref::backward_naive(d, in); });
  require_identical(ref::backward_naive(c.p, c.in), expected_grads(c, dense), "backward_naive", c);
  // From a given forward state (O, LSE), as a real backward receives it.
  const auto dense_state = per_sequence<ref::Grads>(c, [](const AttnProblem& d, const ref::Inputs& in) {
    return ref::backward_naive(d, in, ref::forward_naive(d, in));
  });
  require_identical(ref::backward_naive(c.p, c.in, ref::forward_naive(c.p, c.in)), expected_grads(c, dense_state),
                    "backward_naive(state)", c);
}

// A batch of equal lengths against the batched dense problem: no per-sequence split on the dense
// side. Packed Q (and packed K) hold the dense tensors unchanged; a paged K/V is the dense K/V
// scattered into shuffled pages.
void uniform_batch_equals_batched_dense() {
  ProblemLimits lim;
  lim.max_seqlen = 113;
  lim.max_work = 1e6;
  AttnProblem d = *gen_problem(lim);
  d.batch = *rc::gen::inRange<int64_t>(1, 5);
  const auto seed = *rc::gen::arbitrary<uint64_t>();
  const bool paged = *rc::gen::arbitrary<bool>();
  AttnProblem p = d;
  const std::vector<int64_t> lq(static_cast<size_t>(d.batch), d.seqlen_q), lk(static_cast<size_t>(d.batch), d.seqlen_k);
  p.layout.cu_seqlens_q = cu_seqlens_of(lq);
  p.layout.total_q = d.batch * d.seqlen_q;
  const int64_t page = *rc::gen::element<int64_t>(1, 3, 16, 64);
  if (paged) set_paged(p.layout, lk, page, *rc::gen::inRange<int64_t>(0, 3), *rc::gen::arbitrary<uint64_t>());
  else {
    p.layout.cu_seqlens_k = cu_seqlens_of(lk);
    p.layout.total_k = d.batch * d.seqlen_k;
  }
  RC_CLASSIFY(paged, "paged KV");
  RC_CLASSIFY(!paged, "varlen KV");
  classify(d);
  if (auto e = p.validate()) RC_FAIL("invalid uniform layout: " + *e);
  const ref::Inputs dense_in = ref::make_inputs(d, seed);
  ref::Inputs in = dense_in;
  if (paged) {
    in.k = in.v = std::vector<float>(static_cast<size_t>(p.kv_elems()), 0.5f);  // unread rows: any value
    const int64_t w = d.heads_kv * d.head_dim;
    for (int64_t b = 0; b < d.batch; ++b)
      for (int64_t j = 0; j < d.seqlen_k; ++j) {
        const int64_t row = int64_t{p.layout.block_table[b * p.layout.max_pages + j / page]} * page + j % page;
        for (int64_t x = 0; x < w; ++x) {
          in.k[row * w + x] = dense_in.k[(b * d.seqlen_k + j) * w + x];
          in.v[row * w + x] = dense_in.v[(b * d.seqlen_k + j) * w + x];
        }
      }
  }
  const ref::Forward64 want = ref::forward_f64(d, dense_in);
  const ref::Forward64 got = ref::forward_f64(p, in);
  const LayoutCase c{p, seed, {}, {}};
  require_identical(got.o, want.o, "O", "uniform batch", c);
  for (int64_t b = 0; b < d.batch; ++b)
    for (int64_t h = 0; h < d.heads_q; ++h)
      for (int64_t i = 0; i < d.seqlen_q; ++i) {
        const double g = got.lse[h * p.layout.total_q + b * d.seqlen_q + i], w = want.lse[d.lse_offset(b, h, i)];
        if (!(g == w)) RC_FAIL(fmt::format("uniform batch LSE (b {}, h {}, i {}): {} vs {} [{}]", b, h, i, g, w, describe_layout(p)));
      }
}

// One broken table per case, of a kind the generated problem has; validate() must name it.
void broken_table_refused() {
  AttnProblem p = *gen_layout_problem({.max_work = 1e5, .low_precision = false});
  RC_ASSERT(!p.validate());
  BatchLayout& l = p.layout;
  struct Break {
    const char* name;
    const char* expect;  // a piece of the message
    bool applies;
  };
  int64_t used_total = 0;
  for (int64_t b = 0; l.paged() && b < p.batch; ++b) used_total += l.pages_used(b);
  auto first_used = [&]() -> std::pair<int64_t, int64_t> {
    for (int64_t b = 0; b < p.batch; ++b)
      if (l.pages_used(b) > 0) return {b, 0};
    return {-1, -1};
  };
  const int64_t cu_last = l.varlen_q() ? l.cu_seqlens_q.back() : 0;
  int64_t longest_q = 0;
  for (int64_t b = 0; b < p.batch; ++b) longest_q = std::max(longest_q, p.seqlen_q_of(b));
  const Break kinds[] = {
      {"cu_seqlens_q[0] != 0", "cu_seqlens_q[0] must be 0", l.varlen_q()},
      {"cu_seqlens_q decreasing", "non-decreasing", l.varlen_q() && p.batch >= 2 && l.cu_seqlens_q[1] >= 1},
      {"cu_seqlens_q past total_q", "exceeds total_q", l.varlen_q() && cu_last >= 1},
      {"cu_seqlens_q wrong size", "batch + 1", l.varlen_q()},
      {"query length above seqlen_q", "more than seqlen_q", l.varlen_q() && longest_q >= 2},
      {"cu_seqlens_k past total_k", "exceeds total_k", l.varlen_k() && l.cu_seqlens_k.back() >= 1},
      {"page index out of range", "not a page index", used_total >= 1},
      {"negative page index", "not a page index", used_total >= 1},
      {"-1 in a used slot", "reads its first", used_total >= 1},
      {"seqused_k beyond the pages", "does not fit", l.paged()},
      {"negative seqused_k", "must be >= 0", l.paged()},
      {"a page used twice", "belongs to one sequence", used_total >= 2},
      {"block_table wrong size", "block_table must have", l.paged()},
  };
  std::vector<const Break*> usable;
  for (const Break& k : kinds)
    if (k.applies) usable.push_back(&k);
  RC_PRE(!usable.empty());
  // An index, not the pointer: RapidCheck prints a counterexample's values after the case returns.
  const Break& k = *usable[*rc::gen::inRange<size_t>(0, usable.size())];
  RC_CLASSIFY(true, k.name);
  const std::string name = k.name;
  if (name == "cu_seqlens_q[0] != 0") l.cu_seqlens_q[0] = 1;
  else if (name == "cu_seqlens_q decreasing") l.cu_seqlens_q[2] = l.cu_seqlens_q[1] - 1;
  else if (name == "cu_seqlens_q past total_q") l.total_q = cu_last - 1;
  else if (name == "cu_seqlens_q wrong size") l.cu_seqlens_q.pop_back();
  else if (name == "query length above seqlen_q") p.seqlen_q = longest_q - 1; else if (name == "cu_seqlens_k past total_k") l.total_k = l.cu_seqlens_k.back() - 1;
  else if (name == "page index out of range") {
    const auto [b, i] = first_used();
    l.block_table[b * l.max_pages + i] = static_cast<int32_t>(l.num_pages);
  } else if (name == "negative page index") {
    const auto [b, i] = first_used();
    l.block_table[b * l.max_pages + i] = -2;
  } else if (name == "-1 in a used slot") {
    const auto [b, i] = first_used();
    l.block_table[b * l.max_pages + i] = -1;
  } else if (name == "seqused_k beyond the pages") {
    l.seqused_k[0] = static_cast<int32_t>(l.max_pages * l.page_size + 1);
    p.seqlen_k = std::max<int64_t>(p.seqlen_k, l.seqused_k[0]);
  } else if (name == "negative seqused_k") l.seqused_k[0] = -1;
  else if (name == "a page used twice") {
    std::vector<std::pair<int64_t, int64_t>> slots;  // used (b, i)
    for (int64_t b = 0; b < p.batch; ++b)
      for (int64_t i = 0; i < l.pages_used(b); ++i) slots.emplace_back(b, i);
    const size_t u = *rc::gen::inRange<size_t>(0, slots.size());
    size_t v = *rc::gen::inRange<size_t>(0, slots.size() - 1);
    if (v >= u) ++v;
    l.block_table[slots[v].first * l.max_pages + slots[v].second] =
        l.block_table[slots[u].first * l.max_pages + slots[u].second];
  } else if (name == "block_table wrong size") l.block_table.push_back(-1);
  const auto why = p.validate();
  if (!why) RC_FAIL(fmt::format("{}: validate() accepted [{}]", k.name, describe_layout(p)));
  if (why->find(k.expect) == std::string::npos)
    RC_FAIL(fmt::format("{}: validate() said '{}', expected it to name '{}'", k.name, *why, k.expect));
  RC_ASSERT(why->find('\n') == std::string::npos);  // one line
}

}  // namespace

int main() {
  return run_properties({
      {"layout_forward_f64_equals_dense", 1000, forward_f64_equals_dense},
      {"layout_forward_naive_equals_dense", 1000, forward_naive_equals_dense},
      {"layout_backward_equals_dense", 500, backward_equals_dense},
      {"layout_uniform_batch_equals_batched_dense", 500, uniform_batch_equals_batched_dense},
      {"layout_broken_table_refused", 1000, broken_table_refused},
  });
}

// verify/support/layouts.cpp: the packed / paged problem generator and the test's own data
// placement (see layouts.hpp).
#include "layouts.hpp"

#include <algorithm>
#include <random>

#include <fmt/format.h>

#include "arbitrary.hpp"

namespace ioattn::verify {

namespace {

rc::Gen<int64_t> gen_length() {
  return rc::gen::weightedOneOf<int64_t>({
      {2, rc::gen::just<int64_t>(0)},
      {3, rc::gen::just<int64_t>(1)},
      {4, rc::gen::inRange<int64_t>(2, 17)},
      {1, rc::gen::just<int64_t>(17)},
      {2, rc::gen::inRange<int64_t>(33, 114)},
  });
}

rc::Gen<int64_t> gen_bound() {
  return rc::gen::weightedOneOf<int64_t>(
      {{2, rc::gen::just<int64_t>(-1)}, {1, rc::gen::just<int64_t>(0)}, {3, rc::gen::inRange<int64_t>(1, 41)}});
}

enum class Kv { dense, varlen, paged };

double work(const AttnProblem& p, const std::vector<int64_t>& lq, const std::vector<int64_t>& lk) {
  double w = 0;
  for (size_t b = 0; b < lq.size(); ++b) w += double(lq[b]) * double(lk[b]);
  return w * double(p.heads_q) * double(p.head_dim);
}

int64_t sum(const std::vector<int64_t>& v) {
  int64_t s = 0;
  for (int64_t x : v) s += x;
  return s;
}

int64_t longest(const std::vector<int64_t>& v) { return std::max<int64_t>(1, *std::max_element(v.begin(), v.end())); }

}  // namespace

rc::Gen<AttnProblem> gen_layout_problem(const LayoutLimits& lim) {
  return rc::gen::exec([lim] {
    AttnProblem p;
    p.batch = *rc::gen::weightedOneOf<int64_t>({{2, rc::gen::just<int64_t>(1)},
                                                {4, rc::gen::inRange<int64_t>(2, 5)},
                                                {2, rc::gen::inRange<int64_t>(5, 9)}});
    const bool varlen_q = *rc::gen::arbitrary<bool>();
    Kv kv = *rc::gen::element(Kv::dense, Kv::varlen, Kv::paged, Kv::paged);
    if (!varlen_q && kv == Kv::dense) kv = *rc::gen::element(Kv::varlen, Kv::paged);
    p.heads_kv = *rc::gen::element<int64_t>(1, 1, 2);
    p.heads_q = p.heads_kv * *rc::gen::element<int64_t>(1, 4, 8);  // GQA ratios 1, 4, 8
    p.head_dim = *rc::gen::weightedOneOf<int64_t>(
        {{3, rc::gen::element<int64_t>(1, 8, 59, 64)}, {1, rc::gen::inRange<int64_t>(2, 97)}});
    p.causal = *rc::gen::weightedOneOf<bool>({{2, rc::gen::just(true)}, {3, rc::gen::just(false)}});
    if (*rc::gen::weightedOneOf<bool>({{1, rc::gen::just(true)}, {2, rc::gen::just(false)}})) {
      p.window_left = *gen_bound();
      p.window_right = *gen_bound();
    }
    if (lim.low_precision) p.dtype = *rc::gen::element(DType::fp32, DType::fp32, DType::fp16, DType::bf16);
    if (*rc::gen::weightedOneOf<bool>({{1, rc::gen::just(true)}, {4, rc::gen::just(false)}}))
      p.scale = *rc::gen::element(0.01, 0.1, 0.5, 1.0);

    const size_t n = static_cast<size_t>(p.batch);
    std::vector<int64_t> lq(n), lk(n);
    // Dense queries: the same count for every sequence, >= 1 (decode-like); dense keys likewise.
    const int64_t nq = *rc::gen::weightedOneOf<int64_t>(
        {{3, rc::gen::just<int64_t>(1)}, {2, rc::gen::inRange<int64_t>(2, 9)}, {1, rc::gen::just<int64_t>(17)}});
    const int64_t nk = std::max<int64_t>(1, *gen_length());
    for (size_t b = 0; b < n; ++b) {
      lq[b] = varlen_q ? *gen_length() : nq;
      lk[b] = kv == Kv::dense ? nk : *gen_length();
    }
    // The work cap: shed head_dim, then halve the longest lengths (dense ones stay >= 1).
    while (work(p, lq, lk) > lim.max_work) {
      if (p.head_dim > 8) {
        p.head_dim = 8;
        continue;
      }
      for (auto* v : {&lq, &lk}) {
        const bool dense = (v == &lq) ? !varlen_q : kv == Kv::dense;
        for (int64_t& x : *v) x = dense ? std::max<int64_t>(1, x / 2) : x / 2;
        if (dense) std::fill(v->begin(), v->end(), (*v)[0]);
      }
    }
    auto slack = [] {
      return *rc::gen::weightedOneOf<int64_t>({{3, rc::gen::just<int64_t>(0)}, {1, rc::gen::inRange<int64_t>(1, 4)}});
    };
    p.seqlen_q = varlen_q ? longest(lq) + slack() : lq[0];
    p.seqlen_k = kv == Kv::dense ? lk[0] : longest(lk) + slack();
    if (varlen_q) {
      p.layout.cu_seqlens_q = cu_seqlens_of(lq);
      p.layout.total_q = sum(lq) + slack();  // trailing rows no sequence owns
    }
    if (kv == Kv::varlen) {
      p.layout.cu_seqlens_k = cu_seqlens_of(lk);
      p.layout.total_k = sum(lk) + slack();
    }
    if (kv == Kv::paged) {
      const int64_t page = *rc::gen::weightedOneOf<int64_t>({{2, rc::gen::just<int64_t>(1)},
                                                             {2, rc::gen::inRange<int64_t>(2, 6)},
                                                             {1, rc::gen::just<int64_t>(7)},
                                                             {2, rc::gen::just<int64_t>(16)},
                                                             {1, rc::gen::inRange<int64_t>(1, 71)}});
      const int64_t spare = *rc::gen::inRange<int64_t>(0, 4);
      const bool shuffle = *rc::gen::weightedOneOf<bool>({{4, rc::gen::just(true)}, {1, rc::gen::just(false)}});
      const auto shuffle_seed = *rc::gen::arbitrary<uint64_t>();
      set_paged(p.layout, lk, page, spare, shuffle ? std::optional<uint64_t>(shuffle_seed) : std::nullopt);
      // Extra block-table columns, and unused slots holding a page index instead of -1: neither is read.
      BatchLayout& l = p.layout;
      const int64_t extra = *rc::gen::element<int64_t>(0, 0, 1, 3);
      const bool fill_unused = *rc::gen::weightedOneOf<bool>({{1, rc::gen::just(true)}, {2, rc::gen::just(false)}});
      std::vector<int32_t> table(static_cast<size_t>(p.batch * (l.max_pages + extra)), -1);
      std::mt19937_64 rng(shuffle_seed);
      for (int64_t b = 0; b < p.batch; ++b)
        for (int64_t i = 0; i < l.max_pages + extra; ++i) {
          int32_t pg = i < l.max_pages ? l.block_table[b * l.max_pages + i] : -1;
          if (pg == -1 && fill_unused) pg = static_cast<int32_t>(rng() % static_cast<uint64_t>(l.num_pages));
          table[b * (l.max_pages + extra) + i] = pg;
        }
      l.max_pages += extra;
      l.block_table = std::move(table);
    }
    return p;
  });
}

void classify_layout(const AttnProblem& p) {
  const BatchLayout& l = p.layout;
  bool zero_q = false, zero_k = false, one = false, ragged_pages = false;
  for (int64_t b = 0; b < p.batch; ++b) {
    zero_q |= p.seqlen_q_of(b) == 0;
    zero_k |= p.seqlen_k_of(b) == 0 && p.seqlen_q_of(b) > 0;
    one |= p.seqlen_q_of(b) == 1 || p.seqlen_k_of(b) == 1;
    ragged_pages |= l.paged() && p.seqlen_k_of(b) % l.page_size != 0;
  }
  RC_CLASSIFY(l.varlen_q(), "varlen Q");
  RC_CLASSIFY(l.varlen_k(), "varlen KV");
  RC_CLASSIFY(l.paged(), "paged KV");
  RC_CLASSIFY(l.paged() && l.page_size == 1, "page_size=1");
  RC_CLASSIFY(ragged_pages, "a length not a multiple of page_size");
  RC_CLASSIFY(zero_q, "a sequence with 0 queries");
  RC_CLASSIFY(zero_k, "a sequence with 0 keys");
  RC_CLASSIFY(one, "a length of 1");
  RC_CLASSIFY(p.group_size() == 4, "GQA 4");
  RC_CLASSIFY(p.group_size() == 8, "GQA 8");
  RC_CLASSIFY(p.causal, "causal");
  RC_CLASSIFY(p.window_left >= 0 || p.window_right >= 0, "window");
  RC_CLASSIFY(p.dtype != DType::fp32, "fp16/bf16");
}

std::string describe_layout(const AttnProblem& p) {
  std::string s = describe(p) + " layout=[" + p.layout.describe() + "] seqlens_q=";
  for (int64_t b = 0; b < p.batch; ++b) s += fmt::format("{}{}", b ? "," : "", p.seqlen_q_of(b));
  s += " seqlens_k=";
  for (int64_t b = 0; b < p.batch; ++b) s += fmt::format("{}{}", b ? "," : "", p.seqlen_k_of(b));
  const BatchLayout& l = p.layout;
  if (l.varlen_q()) s += fmt::format(" total_q={}", l.total_q);
  if (l.varlen_k()) s += fmt::format(" total_k={}", l.total_k);
  if (l.paged()) {
    s += fmt::format(" page_size={} num_pages={} block_table=", l.page_size, l.num_pages);
    for (int64_t b = 0; b < p.batch; ++b) {
      s += b ? "|" : "";
      for (int64_t i = 0; i < l.max_pages; ++i) s += fmt::format("{}{}", i ? "," : "", l.block_table[b * l.max_pages + i]);
    }
  }
  return s;
}

int64_t q_row_of(const AttnProblem& p, int64_t b, int64_t i) {
  if (p.layout.cu_seqlens_q.empty()) return b * p.seqlen_q + i;
  return p.layout.cu_seqlens_q[static_cast<size_t>(b)] + i;
}

int64_t kv_row_of(const AttnProblem& p, int64_t b, int64_t j) {
  const BatchLayout& l = p.layout;
  if (l.page_size > 0) {
    const int32_t page = l.block_table.at(static_cast<size_t>(b * l.max_pages + j / l.page_size));
    return int64_t{page} * l.page_size + j % l.page_size;
  }
  if (!l.cu_seqlens_k.empty()) return l.cu_seqlens_k[static_cast<size_t>(b)] + j;
  return b * p.seqlen_k + j;
}

int64_t lse_index_of(const AttnProblem& p, int64_t b, int64_t h, int64_t i) {
  if (p.layout.cu_seqlens_q.empty()) return (b * p.heads_q + h) * p.seqlen_q + i;
  return h * p.layout.total_q + p.layout.cu_seqlens_q[static_cast<size_t>(b)] + i;
}

AttnProblem dense_of(const AttnProblem& p, int64_t b) {
  AttnProblem d;
  d.batch = 1;
  d.heads_q = p.heads_q;
  d.heads_kv = p.heads_kv;
  d.seqlen_q = p.layout.cu_seqlens_q.empty() ? p.seqlen_q
                                             : p.layout.cu_seqlens_q[b + 1] - p.layout.cu_seqlens_q[b];
  d.seqlen_k = p.layout.page_size > 0         ? p.layout.seqused_k[b]
               : p.layout.cu_seqlens_k.empty() ? p.seqlen_k
                                               : p.layout.cu_seqlens_k[b + 1] - p.layout.cu_seqlens_k[b];
  d.head_dim = p.head_dim;
  d.scale = p.scale;
  d.causal = p.causal;
  d.window_left = p.window_left;
  d.window_right = p.window_right;
  d.dtype = p.dtype;
  return d;
}

ref::Inputs place_inputs(const AttnProblem& p, const std::vector<ref::Inputs>& dense, uint64_t seed) {
  ref::Inputs in = ref::make_inputs(p, seed);  // every row random: what no sequence reads keeps it
  const int64_t d = p.head_dim;
  for (int64_t b = 0; b < p.batch; ++b) {
    const AttnProblem s = dense_of(p, b);
    const ref::Inputs& src = dense[static_cast<size_t>(b)];
    if (src.q.empty()) continue;
    for (int64_t i = 0; i < s.seqlen_q; ++i)
      for (int64_t h = 0; h < p.heads_q; ++h)
        for (int64_t x = 0; x < d; ++x) {
          const int64_t to = (q_row_of(p, b, i) * p.heads_q + h) * d + x;
          in.q[to] = src.q[s.q_offset(0, i, h, x)];
          in.d_o[to] = src.d_o[s.q_offset(0, i, h, x)];
        }
    for (int64_t j = 0; j < s.seqlen_k; ++j)
      for (int64_t h = 0; h < p.heads_kv; ++h)
        for (int64_t x = 0; x < d; ++x) {
          const int64_t to = (kv_row_of(p, b, j) * p.heads_kv + h) * d + x;
          in.k[to] = src.k[s.kv_offset(0, j, h, x)];
          in.v[to] = src.v[s.kv_offset(0, j, h, x)];
        }
  }
  return in;
}

}  // namespace ioattn::verify

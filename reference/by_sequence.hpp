// reference/by_sequence.hpp: packed (varlen) and paged layouts (ioattn/layout.hpp) by definition:
// gather each sequence into a dense problem of its own lengths, run the dense function on it,
// scatter the result back into the layout's tensors.
//
//   for each sequence b with Nq_b = seqlen_q_of(b) >= 1 queries and Nk_b = seqlen_k_of(b) >= 1 keys:
//     Q_b, dO_b  = rows q_row(b, 0..Nq_b) of Q, dO             (1, Nq_b, Hq,  d)
//     K_b, V_b   = rows kv_row(b, 0..Nk_b) of K, V               (1, Nk_b, Hkv, d)  (varlen rows or pages)
//     (O_b, LSE_b) or (dQ_b, dK_b, dV_b) = the dense function of (1, Hq, Hkv, Nq_b, Nk_b, d, mask)
//     written back to the same rows
//
// A sequence with Nq_b = 0 writes nothing; with Nk_b = 0 its queries see no key: O = 0, LSE = -inf,
// dQ = 0 (the output contract of a fully masked row). Rows no sequence owns keep O = 0, LSE = -inf
// and zero gradients. Every row of the output is written by at most one sequence (validate() refuses
// a page used twice), so the scatter is a plain copy: the layout's result is bit for bit the dense
// result of each sequence's data.
#pragma once

#include <limits>
#include <utility>

#include "detail.hpp"

namespace ioattn::ref::detail {

// Rows of the per-sequence dense tensors, copied from / to the layout's rows.
template <class Dst, class Src, class DstRow, class SrcRow>
void copy_rows(Dst& dst, const Src& src, int64_t rows, int64_t width, DstRow&& dst_row, SrcRow&& src_row) {
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t d0 = dst_row(r) * width, s0 = src_row(r) * width;
    for (int64_t x = 0; x < width; ++x) dst[static_cast<size_t>(d0 + x)] = src[static_cast<size_t>(s0 + x)];
  }
}

// Q, K, V (and dO) of sequence b as the dense inputs of sequence_problem(p, b).
template <class TI>
InputTensors<TI> gather_sequence(const AttnProblem& p, const AttnProblem& sp, const InputTensors<TI>& in,
                                 int64_t b, bool with_do) {
  const int64_t qw = p.heads_q * p.head_dim, kw = p.heads_kv * p.head_dim;
  auto same = [](int64_t r) { return r; };
  auto q_of = [&](int64_t i) { return p.q_row(b, i); };
  auto k_of = [&](int64_t j) { return p.kv_row(b, j); };
  InputTensors<TI> s;
  s.q.resize(static_cast<size_t>(sp.q_elems()));
  s.k.resize(static_cast<size_t>(sp.kv_elems()));
  s.v.resize(static_cast<size_t>(sp.kv_elems()));
  copy_rows(s.q, in.q, sp.seqlen_q, qw, same, q_of);
  copy_rows(s.k, in.k, sp.seqlen_k, kw, same, k_of);
  copy_rows(s.v, in.v, sp.seqlen_k, kw, same, k_of);
  if (with_do) {
    s.d_o.resize(static_cast<size_t>(sp.q_elems()));
    copy_rows(s.d_o, in.d_o, sp.seqlen_q, qw, same, q_of);
  }
  return s;
}

template <class T, class TI, class Dense>
ForwardResult<T> forward_by_sequence(const AttnProblem& p, const InputTensors<TI>& in, Dense&& dense) {
  check_inputs(p, in, /*need_do=*/false, Algorithm::naive_forward);
  ForwardResult<T> out;
  out.o.assign(static_cast<size_t>(p.q_elems()), T(0));
  out.lse.assign(static_cast<size_t>(p.lse_elems()), -std::numeric_limits<T>::infinity());
  const int64_t qw = p.heads_q * p.head_dim;
  for (int64_t b = 0; b < p.batch; ++b) {
    if (p.seqlen_q_of(b) == 0 || p.seqlen_k_of(b) == 0) continue;  // nothing, or O = 0 and LSE = -inf
    const AttnProblem sp = sequence_problem_of(p, b);
    const ForwardResult<T> r = dense(sp, gather_sequence(p, sp, in, b, false));
    copy_rows(out.o, r.o, sp.seqlen_q, qw, [&](int64_t i) { return p.q_row(b, i); }, [](int64_t i) { return i; });
    for (int64_t h = 0; h < p.heads_q; ++h)
      for (int64_t i = 0; i < sp.seqlen_q; ++i)
        out.lse[static_cast<size_t>(p.lse_index(b, h, i))] = r.lse[static_cast<size_t>(sp.lse_offset(0, h, i))];
  }
  return out;
}

// `state`: the forward's (O, LSE) in the layout, gathered per sequence like the inputs; nullptr lets
// the dense function compute its own.
template <class T, class TI, class Dense>
GradResult<T> backward_by_sequence(const AttnProblem& p, const InputTensors<TI>& in, const ForwardResult<T>* state,
                                   Dense&& dense) {
  check_inputs(p, in, /*need_do=*/true, Algorithm::naive_backward);
  if (state && (static_cast<int64_t>(state->o.size()) != p.q_elems() ||
                static_cast<int64_t>(state->lse.size()) != p.lse_elems()))
    throw ReferenceError("backward_naive: the forward state (O, LSE) does not match the problem");
  GradResult<T> g;
  g.dq.assign(static_cast<size_t>(p.q_elems()), T(0));
  g.dk.assign(static_cast<size_t>(p.kv_elems()), T(0));
  g.dv.assign(static_cast<size_t>(p.kv_elems()), T(0));
  const int64_t qw = p.heads_q * p.head_dim, kw = p.heads_kv * p.head_dim;
  auto same = [](int64_t r) { return r; };
  for (int64_t b = 0; b < p.batch; ++b) {
    if (p.seqlen_q_of(b) == 0 || p.seqlen_k_of(b) == 0) continue;  // no query, or no key: zero gradients
    const AttnProblem sp = sequence_problem_of(p, b);
    auto q_of = [&](int64_t i) { return p.q_row(b, i); };
    auto k_of = [&](int64_t j) { return p.kv_row(b, j); };
    ForwardResult<T> s_state;
    if (state) {
      s_state.o.resize(static_cast<size_t>(sp.q_elems()));
      copy_rows(s_state.o, state->o, sp.seqlen_q, qw, same, q_of);
      s_state.lse.resize(static_cast<size_t>(sp.lse_elems()));
      for (int64_t h = 0; h < p.heads_q; ++h)
        for (int64_t i = 0; i < sp.seqlen_q; ++i)
          s_state.lse[static_cast<size_t>(sp.lse_offset(0, h, i))] = state->lse[static_cast<size_t>(p.lse_index(b, h, i))];
    }
    const GradResult<T> r = dense(sp, gather_sequence(p, sp, in, b, true), state ? &s_state : nullptr);
    copy_rows(g.dq, r.dq, sp.seqlen_q, qw, q_of, same);
    copy_rows(g.dk, r.dk, sp.seqlen_k, kw, k_of, same);
    copy_rows(g.dv, r.dv, sp.seqlen_k, kw, k_of, same);
  }
  return g;
}

}  // namespace ioattn::ref::detail

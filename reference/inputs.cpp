// reference/inputs.cpp: deterministic random inputs Q, K, V, dO for a problem.
#include <cmath>
#include <random>

#include "detail.hpp"

namespace ioattn::ref {

namespace {

// Fills v with N(0, std^2) samples rounded to the dtype. One generator per tensor, seeded from
// (seed, tensor id), so that Q does not change when, say, the options of dO do.
std::vector<float> normal_tensor(int64_t n, double stddev, uint64_t seed, uint64_t tensor_id,
                                 DType dtype) {
  std::seed_seq seq{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32),
                    static_cast<uint32_t>(tensor_id)};
  std::mt19937_64 rng(seq);
  std::normal_distribution<double> dist(0.0, stddev);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = round_to(dtype, static_cast<float>(dist(rng)));
  return v;
}

}  // namespace

Inputs make_inputs(const AttnProblem& p, uint64_t seed, InputOptions opt) {
  if (auto e = p.validate()) throw ReferenceError(*e);
  if (auto e = memory_error(p, Algorithm::tiled_backward)) throw ReferenceError(*e);
  if (!(opt.logit_std > 0.0 && std::isfinite(opt.logit_std)))
    throw ReferenceError("logit_std must be a finite positive number");
  // scale * q.k is a sum of d products of two N(0, a^2) variables: its std is scale * sqrt(d) * a^2.
  const double a = std::sqrt(opt.logit_std / (p.softmax_scale() * std::sqrt(double(p.head_dim))));
  Inputs in;
  if (is_fp8(p.dtype)) {  // the real inputs X ~ N(0, a^2) quantized: code = fp8(X / descale)
    auto quantize = [&](std::vector<float> x, int64_t heads, auto descale_of) {
      for (size_t e = 0; e < x.size(); ++e) {
        const auto h = static_cast<int64_t>(e / static_cast<size_t>(p.head_dim)) % heads;
        x[e] = round_to(p.dtype, x[e] / descale_of(h));
      }
      return x;
    };
    in.q = quantize(normal_tensor(p.q_elems(), a, seed, 1, DType::fp32), p.heads_q,
                    [&](int64_t h) { return p.q_descale_of_head(h); });
    in.k = quantize(normal_tensor(p.kv_elems(), a, seed, 2, DType::fp32), p.heads_kv,
                    [&](int64_t h) { return p.k_descale_of(h); });
    in.v = quantize(normal_tensor(p.kv_elems(), opt.v_std, seed, 3, DType::fp32), p.heads_kv,
                    [&](int64_t h) { return p.v_descale_of(h); });
    in.d_o = normal_tensor(p.q_elems(), opt.do_std, seed, 4, p.output_dtype());  // no FP8 backward
    return in;
  }
  in.q = normal_tensor(p.q_elems(), a, seed, 1, p.dtype);
  in.k = normal_tensor(p.kv_elems(), a, seed, 2, p.dtype);
  in.v = normal_tensor(p.kv_elems(), opt.v_std, seed, 3, p.dtype);
  in.d_o = normal_tensor(p.q_elems(), opt.do_std, seed, 4, p.dtype);
  return in;
}

AttnProblem sequence_problem(const AttnProblem& p, int64_t b) {
  if (auto e = p.validate()) throw ReferenceError(*e);
  if (b < 0 || b >= p.batch)
    throw ReferenceError("sequence " + std::to_string(b) + " is not in [0, batch = " + std::to_string(p.batch) + ")");
  if (p.seqlen_q_of(b) < 1 || p.seqlen_k_of(b) < 1)
    throw ReferenceError("sequence " + std::to_string(b) + " has " + std::to_string(p.seqlen_q_of(b)) +
                         " queries and " + std::to_string(p.seqlen_k_of(b)) +
                         " keys: a dense problem needs at least one of each");
  return detail::sequence_problem_of(p, b);
}

Inputs64 widen(const Inputs& in) {
  auto w = [](const std::vector<float>& v) { return std::vector<double>(v.begin(), v.end()); };
  return {w(in.q), w(in.k), w(in.v), w(in.d_o)};
}

}  // namespace ioattn::ref

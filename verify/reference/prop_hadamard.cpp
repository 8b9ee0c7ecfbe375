// verify/reference/prop_hadamard.cpp: the incoherent-processing rotation R = H_d D_s
// (reference/hadamard.hpp) is the orthogonal map it claims to be.
//
//   rotation_is_orthogonal   ||R x|| = ||x|| per row and R^T R x = x, to rounding (float64 and fp32),
//                            rows with outlier columns of 1e3 and all-zero rows included
//   qk_preserved             (R Q)(R K)^T = Q K^T in float64 to rounding, with Q and K rotated by
//                            the same seed (and NOT with different seeds: the test would pass for a
//                            map that is not a rotation of the pair otherwise)
//   equals_dense_hadamard    the fast transform equals the dense product with
//                            H_d[i][j] = (-1)^popcount(i & j) / sqrt(d) times diag(signs), and a
//                            one-hot row becomes d entries of magnitude 1/sqrt(d) (the outlier is
//                            spread over every column, which an identity or a permutation would not)
//   bad_shape_refused        head_dim outside {64, 128, 256} and a tensor of partial rows throw
//                            ReferenceError with one line naming the constraint
#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "hadamard.hpp"
#include "property.hpp"
#include "reference.hpp"

namespace {

using namespace ioattn;
using namespace ioattn::verify;

rc::Gen<int64_t> gen_d() { return rc::gen::element(int64_t{64}, int64_t{128}, int64_t{256}); }

// (rows, d) values: N(0, 1)-like magnitudes with some columns scaled by up to 1e3 (outlier
// features), and now and then an all-zero row.
template <class T>
std::vector<T> gen_rows(int64_t rows, int64_t d) {
  std::vector<T> x(static_cast<size_t>(rows * d));
  const auto outliers = *rc::gen::container<std::vector<int64_t>>(
      static_cast<size_t>(*rc::gen::inRange(0, 5)), rc::gen::inRange<int64_t>(0, d));
  const double mag = *rc::gen::element(1.0, 10.0, 100.0, 1000.0);
  for (int64_t r = 0; r < rows; ++r) {
    if (*rc::gen::weightedElement<bool>({{1, true}, {15, false}})) continue;  // zero row
    for (int64_t c = 0; c < d; ++c)
      x[static_cast<size_t>(r * d + c)] = static_cast<T>(*rc::gen::inRange(-1000, 1001) / 250.0);
    for (int64_t c : outliers) x[static_cast<size_t>(r * d + c)] *= static_cast<T>(mag);
  }
  return x;
}

template <class T>
double row_norm(const std::vector<T>& x, int64_t r, int64_t d) {
  double s = 0;
  for (int64_t c = 0; c < d; ++c) s += double(x[static_cast<size_t>(r * d + c)]) * double(x[static_cast<size_t>(r * d + c)]);
  return std::sqrt(s);
}

// Relative tolerance of d log2(d)-term sums in T: a few u_T times log2(d) per element, generous.
template <class T>
double tol(int64_t d) {
  return 4.0 * std::numeric_limits<T>::epsilon() * std::log2(double(d));
}

template <class T>
void orthogonal_in(const char* type) {
  const int64_t d = *gen_d();
  const int64_t rows = *rc::gen::inRange<int64_t>(1, 33);
  const auto seed = *rc::gen::arbitrary<uint64_t>();
  RC_CLASSIFY(true, fmt::format("{} d {}", type, d));
  const std::vector<T> x = gen_rows<T>(rows, d);
  std::vector<T> y = x;
  ref::hadamard_rotate(std::span<T>(y), d, seed);
  std::vector<T> back = y;
  ref::hadamard_unrotate(std::span<T>(back), d, seed);
  for (int64_t r = 0; r < rows; ++r) {
    const double nx = row_norm(x, r, d), ny = row_norm(y, r, d);
    if (std::fabs(ny - nx) > tol<T>(d) * nx)
      RC_FAIL(fmt::format("{}: row {} of d {}: |R x| = {:.17g}, |x| = {:.17g} seed={} rc seed={}", type, r, d, ny, nx,
                          seed, run_seed()));
    for (int64_t c = 0; c < d; ++c) {
      const size_t e = static_cast<size_t>(r * d + c);
      if (std::fabs(double(back[e]) - double(x[e])) > tol<T>(d) * nx)
        RC_FAIL(fmt::format("{}: R^T R x != x at row {} column {} of d {}: {:.17g} vs {:.17g} seed={} rc seed={}",
                            type, r, c, d, double(back[e]), double(x[e]), seed, run_seed()));
    }
  }
}

void rotation_is_orthogonal() {
  orthogonal_in<double>("float64");
  orthogonal_in<float>("fp32");
}

void qk_preserved() {
  const int64_t d = *gen_d();
  const int64_t nq = *rc::gen::inRange<int64_t>(1, 17), nk = *rc::gen::inRange<int64_t>(1, 17);
  const auto seed = *rc::gen::arbitrary<uint64_t>();
  const std::vector<double> q = gen_rows<double>(nq, d), k = gen_rows<double>(nk, d);
  std::vector<double> rq = q, rk = k, rk_other = k;
  ref::hadamard_rotate(std::span<double>(rq), d, seed);
  ref::hadamard_rotate(std::span<double>(rk), d, seed);
  ref::hadamard_rotate(std::span<double>(rk_other), d, seed + 1);
  bool other_differs = false, any_pair = false;
  for (int64_t i = 0; i < nq; ++i)
    for (int64_t j = 0; j < nk; ++j) {
      double s = 0, sr = 0, so = 0;
      for (int64_t c = 0; c < d; ++c) {
        const size_t a = static_cast<size_t>(i * d + c), b = static_cast<size_t>(j * d + c);
        s += q[a] * k[b];
        sr += rq[a] * rk[b];
        so += rq[a] * rk_other[b];
      }
      const double scale = row_norm(q, i, d) * row_norm(k, j, d);
      if (std::fabs(sr - s) > 8 * tol<double>(d) * scale)
        RC_FAIL(fmt::format("(R q_{}).(R k_{}) = {:.17g} but q.k = {:.17g} (|q||k| = {:.3e}, d {}) seed={} rc seed={}",
                            i, j, sr, s, scale, d, seed, run_seed()));
      if (scale > 0) any_pair = true;
      if (std::fabs(so - s) > 1e-6 * scale) other_differs = true;
    }
  // Rotating K with another seed breaks the products wherever Q and K are not zero or degenerate.
  RC_CLASSIFY(!any_pair, "Q or K all zero");
  if (any_pair && !other_differs)
    RC_FAIL(fmt::format("K rotated with seed {} + 1 kept every q.k of Q rotated with seed {}: not a rotation of "
                        "the pair (d {}) rc seed={}", seed, seed, d, run_seed()));
}

void equals_dense_hadamard() {
  const int64_t d = *gen_d();
  const auto seed = *rc::gen::arbitrary<uint64_t>();
  const std::vector<int8_t> s = ref::hadamard_signs(d, seed);
  RC_ASSERT(s == ref::hadamard_signs(d, seed));  // deterministic
  int plus = 0;
  for (int8_t v : s) {
    RC_ASSERT(v == 1 || v == -1);
    plus += v == 1;
  }
  RC_CLASSIFY(plus > 0 && plus < d, "both signs present");
  const std::vector<double> x = gen_rows<double>(1, d);
  std::vector<double> y = x;
  ref::hadamard_rotate(std::span<double>(y), d, seed);
  const double norm = 1.0 / std::sqrt(double(d));
  const double nx = row_norm(x, 0, d);
  for (int64_t i = 0; i < d; ++i) {
    double dense = 0;
    for (int64_t j = 0; j < d; ++j) {
      const double h = std::popcount(static_cast<uint64_t>(i & j)) % 2 ? -norm : norm;
      dense += h * s[static_cast<size_t>(j)] * x[static_cast<size_t>(j)];
    }
    // Tolerance d u |x|: the dense sum's own rounding; a wrong sign or index is off by ~|x|/sqrt(d).
    if (std::fabs(dense - y[static_cast<size_t>(i)]) > double(d) * std::numeric_limits<double>::epsilon() * nx)
      RC_FAIL(fmt::format("fast transform {:.17g} vs dense H_d D_s x {:.17g} at {} of d {} seed={} rc seed={}",
                          y[static_cast<size_t>(i)], dense, i, d, seed, run_seed()));
  }
  // A one-hot row (a lone outlier feature of size 1000) is spread evenly over all d columns.
  const int64_t c = *rc::gen::inRange<int64_t>(0, d);
  std::vector<double> e(static_cast<size_t>(d), 0.0);
  e[static_cast<size_t>(c)] = 1000.0;
  ref::hadamard_rotate(std::span<double>(e), d, seed);
  for (double v : e) RC_ASSERT(std::fabs(std::fabs(v) - 1000.0 * norm) <= 1e-12 * 1000.0);
}

void bad_shape_refused() {
  const int64_t d = *rc::gen::elementOf(std::vector<int64_t>{-64, 0, 1, 2, 32, 63, 65, 96, 100, 127, 192, 255, 512, 1024});
  std::vector<double> x(static_cast<size_t>(std::max<int64_t>(d, 1) * 3), 1.0);
  auto expect_refusal = [](auto&& call, const std::string& needle, const std::string& what) {
    try {
      call();
    } catch (const ref::ReferenceError& err) {
      const std::string m = err.what();
      if (m.find(needle) == std::string::npos || m.find('\n') != std::string::npos)
        RC_FAIL(fmt::format("{}: refusal does not name the constraint in one line: '{}'", what, m));
      return;
    }
    RC_FAIL(what + ": accepted");
  };
  const std::string dims = "64, 128 or 256";
  expect_refusal([&] { ref::hadamard_rotate(std::span<double>(x), d, 1); }, dims, fmt::format("rotate d {}", d));
  expect_refusal([&] { ref::hadamard_unrotate(std::span<double>(x), d, 1); }, dims, fmt::format("unrotate d {}", d));
  expect_refusal([&] { ref::hadamard_signs(d, 1); }, dims, fmt::format("signs d {}", d));
  // A valid d with a tensor that is not whole rows.
  const int64_t good = *gen_d();
  const int64_t extra = *rc::gen::inRange<int64_t>(1, good);
  std::vector<float> partial(static_cast<size_t>(good * *rc::gen::inRange<int64_t>(0, 4) + extra), 1.0f);
  expect_refusal([&] { ref::hadamard_rotate(std::span<float>(partial), good, 1); }, "whole rows",
                 fmt::format("{} elements with d {}", partial.size(), good));
}

}  // namespace

int main() {
  return run_properties({
      {"rotation_is_orthogonal", 300, rotation_is_orthogonal},
      {"qk_preserved", 300, qk_preserved},
      {"equals_dense_hadamard", 200, equals_dense_hadamard},
      {"bad_shape_refused", 100, bad_shape_refused},
  });
}

// reference/hadamard.cpp: the random-sign Walsh-Hadamard rotation of hadamard.hpp.
#include "hadamard.hpp"

#include <cmath>
#include <random>
#include <string>

#include "reference.hpp"

namespace ioattn::ref {

namespace {

void check_shape(size_t elems, int64_t d) {
  if (d != 64 && d != 128 && d != 256)
    throw ReferenceError("hadamard rotation: head_dim must be 64, 128 or 256 (a power of two for the fast "
                         "Walsh-Hadamard transform), got " + std::to_string(d));
  if (elems % static_cast<size_t>(d) != 0)
    throw ReferenceError("hadamard rotation: the tensor's " + std::to_string(elems) +
                         " elements are not whole rows of head_dim = " + std::to_string(d));
}

// H_d y in place, unnormalized (Sylvester's order): log2(d) butterfly passes over the row.
template <class T>
void fwht(T* y, int64_t d) {
  for (int64_t len = 1; len < d; len <<= 1)
    for (int64_t i = 0; i < d; i += 2 * len)
      for (int64_t j = i; j < i + len; ++j) {
        const T a = y[j], b = y[j + len];
        y[j] = a + b;
        y[j + len] = a - b;
      }
}

}  // namespace

std::vector<int8_t> hadamard_signs(int64_t d, uint64_t seed) {
  check_shape(0, d);
  std::seed_seq seq{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32), 0x48414441u /* "HADA" */};
  std::mt19937_64 rng(seq);
  std::vector<int8_t> s(static_cast<size_t>(d));
  uint64_t bits = 0;
  for (int64_t i = 0; i < d; ++i) {
    if (i % 64 == 0) bits = rng();
    s[static_cast<size_t>(i)] = (bits >> (i % 64)) & 1u ? int8_t{-1} : int8_t{1};
  }
  return s;
}

template <class T>
void hadamard_rotate(std::span<T> x, int64_t d, uint64_t seed) {
  check_shape(x.size(), d);
  const std::vector<int8_t> s = hadamard_signs(d, seed);
  const T norm = static_cast<T>(1.0 / std::sqrt(static_cast<double>(d)));
  for (size_t r = 0; r < x.size(); r += static_cast<size_t>(d)) {
    T* row = x.data() + r;  // (d,)
    for (int64_t c = 0; c < d; ++c) row[c] *= static_cast<T>(s[static_cast<size_t>(c)]);  // D_s x
    fwht(row, d);                                                                           // H_d (unnormalized)
    for (int64_t c = 0; c < d; ++c) row[c] *= norm;
  }
}

template <class T>
void hadamard_unrotate(std::span<T> x, int64_t d, uint64_t seed) {
  check_shape(x.size(), d);
  const std::vector<int8_t> s = hadamard_signs(d, seed);
  const T norm = static_cast<T>(1.0 / std::sqrt(static_cast<double>(d)));
  for (size_t r = 0; r < x.size(); r += static_cast<size_t>(d)) {
    T* row = x.data() + r;  // (d,)
    fwht(row, d);           // H_d is its own inverse up to 1/d
    for (int64_t c = 0; c < d; ++c) row[c] *= norm * static_cast<T>(s[static_cast<size_t>(c)]);
  }
}

template void hadamard_rotate<float>(std::span<float>, int64_t, uint64_t);
template void hadamard_rotate<double>(std::span<double>, int64_t, uint64_t);
template void hadamard_unrotate<float>(std::span<float>, int64_t, uint64_t);
template void hadamard_unrotate<double>(std::span<double>, int64_t, uint64_t);

}  // namespace ioattn::ref

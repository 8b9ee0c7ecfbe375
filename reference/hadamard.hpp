// reference/hadamard.hpp: FlashAttention-3's incoherent processing, the random orthogonal rotation
// of Q and K along the head dimension before FP8 quantization.
//
//   y = R x,  R = H_d D_s,  for every row x (length d) of a (rows, d) tensor
//
//   H_d  the Walsh-Hadamard matrix of order d in Sylvester's order (H_1 = [1],
//        H_2n = [[H_n, H_n], [H_n, -H_n]], so H_d[i][j] = (-1)^popcount(i & j)), times 1/sqrt(d):
//        symmetric and orthogonal
//   D_s  diag(s), s = d random signs +-1, deterministic from the seed (hadamard_signs)
//
// R^T R = D_s H_d H_d D_s = I, so (R q).(R k) = q.k for every pair of rows: S = scale Q K^T is
// unchanged in exact arithmetic when Q and K are rotated with the same seed. What changes is the
// spread of the values: a column (feature) of Q or K far larger than the others is mixed into all
// d columns with weight 1/sqrt(d) each, so the amax that sets a per-tensor FP8 scale drops and the
// rounding error of the outlier products is shared out (reference/README.md, "FP8", incoherent
// processing, for what this does to attention's error). V is not rotated: P V has no product to
// preserve.
//
// Cost: the fast Walsh-Hadamard transform, d log2(d) additions and subtractions plus 2 d
// multiplications per row, in place; no d x d matrix is formed. The arithmetic is in T (float or
// double): rounding makes the result orthogonal up to about log2(d) u_T relative.
//
// Preconditions (checked first, one line each as ReferenceError): d is 64, 128 or 256 (the head
// dims of the FP8 kernels; the transform needs a power of two), and x holds whole rows.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace ioattn::ref {

// The d signs of D_s: +1 or -1, from std::mt19937_64 (its output is fixed by the standard, so the
// same seed gives the same signs everywhere), one bit per sign. Throws ReferenceError for a bad d.
std::vector<int8_t> hadamard_signs(int64_t d, uint64_t seed);

// x (rows, d), row-major (a BSHD tensor is (batch * seqlen * heads, head_dim)): every row x_r
// becomes R x_r, in place.
template <class T>
void hadamard_rotate(std::span<T> x, int64_t d, uint64_t seed);

// The inverse, R^T y = D_s H_d y: undoes hadamard_rotate with the same seed (up to rounding).
template <class T>
void hadamard_unrotate(std::span<T> x, int64_t d, uint64_t seed);

}  // namespace ioattn::ref

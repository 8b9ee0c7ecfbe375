// reference/scores.hpp: the one fp32 kernel for S = scale * Q K^T, shared by the naive baseline
// and every tiled algorithm.
//
// Why not Eigen's product: Eigen picks a different summation order for each shape (coefficient-
// based for tiny products, GEMV when a side is 1, a depth-vectorized path for the tail rows of
// GEMM), so S_ij would differ in its last bits between the naive (Nq, Nk) product and a (Br, Bc)
// tile. With logits of 1e3..1e4 a last-bit change of S moves P visibly (dP = P (1 - P) dS), and
// the error rule would compare summation orders instead of algorithms. Here every S_ij is
//
//     S_ij = scale * (((q_i0 k_j0 + q_i1 k_j1) + q_i2 k_j2) + ... + q_i(d-1) k_j(d-1))
//
// in fp32, in this order, whatever the tiling: the naive baseline and the tiled algorithms see
// bit-identical scores, and their differences are the algorithms' own (online softmax, rescaling,
// the P V accumulation, the split combine). The order is that of a plain fp32 dot product, so the
// baseline's error stays that of a real fp32 implementation. (ISO C++ mode compiles without FMA
// contraction, so a*b+c is two roundings everywhere.)
//
// The backward's dP = dO V^T is the same kind of product and goes through the same kernel (scale
// 1): with a saturated softmax, dP_ij - D_i cancels, and the error rule would otherwise compare
// the rounding noise of two summation orders.
//
// Speed: K_j is transposed once into a (d, Bc) buffer; each query row then accumulates 32 scores
// at a time as axpy's over k (vectorized across j, sequential in k), the buffer staying in L1/L2.
#pragma once

#include <cstdint>
#include <vector>

namespace ioattn::ref::detail {

// s(r, c) = scale * sum_x q(r, x) k(c, x) for r < rows, c < cols; rows of q, k, s are `*_stride`
// floats apart.
inline void scores_f32(const float* q, int64_t q_stride, const float* k, int64_t k_stride,
                       int64_t rows, int64_t cols, int64_t d, float scale, float* s,
                       int64_t s_stride) {
  constexpr int64_t kJ = 32;  // scores per accumulator block (8 SSE registers)
  thread_local std::vector<float> kt;  // K^T block, (d, cols)
  kt.resize(static_cast<size_t>(d * cols));
  for (int64_t c = 0; c < cols; ++c)
    for (int64_t x = 0; x < d; ++x) kt[static_cast<size_t>(x * cols + c)] = k[c * k_stride + x];
  for (int64_t j0 = 0; j0 < cols; j0 += kJ) {
    const int64_t w = cols - j0 < kJ ? cols - j0 : kJ;
    for (int64_t r = 0; r < rows; ++r) {
      const float* q_r = q + r * q_stride;
      float acc[kJ] = {};
      if (w == kJ) {
        for (int64_t x = 0; x < d; ++x) {
          const float qx = q_r[x];
          const float* kt_x = kt.data() + x * cols + j0;
          for (int64_t jj = 0; jj < kJ; ++jj) acc[jj] += qx * kt_x[jj];
        }
      } else {
        for (int64_t x = 0; x < d; ++x) {
          const float qx = q_r[x];
          const float* kt_x = kt.data() + x * cols + j0;
          for (int64_t jj = 0; jj < w; ++jj) acc[jj] += qx * kt_x[jj];
        }
      }
      float* s_r = s + r * s_stride + j0;
      for (int64_t jj = 0; jj < w; ++jj) s_r[jj] = acc[jj] * scale;
    }
  }
}

}  // namespace ioattn::ref::detail

// ioattn/mask.hpp: the one mask predicate of ioattn, shared by reference, simulator and kernels.
//
// Query row i (0 <= i < seqlen_q) may attend key j (0 <= j < seqlen_k) when
//
//     j >= i + shift - window_left    (if window_left  >= 0)
//     j <= i + shift + right          (if right        >= 0)
//
// where shift = seqlen_k - seqlen_q aligns the last query with the last key ("bottom-right"
// alignment, as flash-attention defines causal masking for seqlen_q != seqlen_k), and
// right = window_right, tightened to 0 when causal. A bound of -1 means unbounded. Causal is
// therefore the window (-1, 0). When seqlen_q > seqlen_k the first seqlen_q - seqlen_k causal rows
// see no key at all: such a fully masked row has O = 0 and LSE = -inf (problem.hpp).
//
// Every row sees a contiguous key range [key_begin(i), key_end(i)); kernels and the simulator use
// it to skip whole tiles, the reference uses allowed() per element; tests check the two agree.
#pragma once

#include <algorithm>
#include <cstdint>

#include "ioattn/config.hpp"

namespace ioattn {

struct MaskSpec {
  int64_t seqlen_q = 1;
  int64_t seqlen_k = 1;
  bool causal = false;
  int64_t window_left = -1;   // keys allowed to the left of the aligned diagonal; -1 = unbounded
  int64_t window_right = -1;  // keys allowed to the right; -1 = unbounded

  IOATTN_HD constexpr int64_t shift() const { return seqlen_k - seqlen_q; }

  // The right bound after folding in causality: -1 (unbounded) or >= 0.
  IOATTN_HD constexpr int64_t right() const {
    return causal ? 0 : window_right;  // causal tightens any right window to the diagonal
  }

  IOATTN_HD constexpr bool is_masked() const { return causal || window_left >= 0 || window_right >= 0; }

  // The predicate itself.
  IOATTN_HD constexpr bool allowed(int64_t i, int64_t j) const {
    const int64_t diag = i + shift();
    if (window_left >= 0 && j < diag - window_left) return false;
    const int64_t r = right();
    if (r >= 0 && j > diag + r) return false;
    return true;
  }

  // First visible key of row i (clamped to [0, seqlen_k]).
  IOATTN_HD constexpr int64_t key_begin(int64_t i) const {
    if (window_left < 0) return 0;
    const int64_t b = i + shift() - window_left;
    return b < 0 ? 0 : (b > seqlen_k ? seqlen_k : b);
  }

  // One past the last visible key of row i (clamped to [0, seqlen_k]); <= key_begin(i) when the
  // row is fully masked.
  IOATTN_HD constexpr int64_t key_end(int64_t i) const {
    const int64_t r = right();
    if (r < 0) return seqlen_k;
    const int64_t e = i + shift() + r + 1;
    return e < 0 ? 0 : (e > seqlen_k ? seqlen_k : e);
  }

  IOATTN_HD constexpr bool row_fully_masked(int64_t i) const { return key_end(i) <= key_begin(i); }

  // Keys visible to any row of the query block [i0, i1): a tile (i0..i1, j0..j1) can be skipped
  // when [j0, j1) does not meet [block_key_begin, block_key_end). The range is exact because
  // key_begin and key_end are both non-decreasing in i.
  IOATTN_HD constexpr int64_t block_key_begin(int64_t i0, int64_t /*i1*/) const { return key_begin(i0); }
  IOATTN_HD constexpr int64_t block_key_end(int64_t /*i0*/, int64_t i1) const { return key_end(i1 - 1); }

  // True when every (i, j) of the tile is allowed, so a kernel may skip the per-element mask.
  IOATTN_HD constexpr bool tile_unmasked(int64_t i0, int64_t i1, int64_t j0, int64_t j1) const {
    // The binding rows are the last one for the left bound and the first one for the right bound.
    return j0 < j1 && key_begin(i1 - 1) <= j0 && j1 <= key_end(i0);
  }
};

}  // namespace ioattn

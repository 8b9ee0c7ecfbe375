// The key ranges MaskSpec hands to kernels and the simulator (key_begin/key_end, the block range,
// tile_unmasked) must agree exactly with its element predicate allowed(), for every shape.
#include <algorithm>
#include <cstdint>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <rapidcheck.h>

#include "ioattn/mask.hpp"

namespace {

using ioattn::MaskSpec;

// A window side: unbounded half of the time, else 0..11 keys.
rc::Gen<int64_t> gen_bound() {
  return rc::gen::oneOf(rc::gen::just<int64_t>(-1), rc::gen::inRange<int64_t>(0, 12));
}

rc::Gen<MaskSpec> gen_mask() {
  return rc::gen::apply(
      [](int64_t sq, int64_t sk, bool causal, int64_t wl, int64_t wr) {
        return MaskSpec{sq, sk, causal, wl, wr};
      },
      rc::gen::inRange<int64_t>(1, 40), rc::gen::inRange<int64_t>(1, 40), rc::gen::arbitrary<bool>(),
      gen_bound(), gen_bound());
}

int g_cases = 0;

TEST(MaskSpec, KeyRangeEqualsPredicate) {
  g_cases = 0;
  const bool ok = rc::check("key range equals predicate", [] {
    const MaskSpec m = *gen_mask();
    RC_CLASSIFY(m.causal, "causal");
    RC_CLASSIFY(m.window_left >= 0 || m.window_right >= 0, "window");
    RC_CLASSIFY(m.seqlen_q > m.seqlen_k, "seqlen_q > seqlen_k");
    for (int64_t i = 0; i < m.seqlen_q; ++i) {
      const int64_t b = m.key_begin(i), e = m.key_end(i);
      RC_ASSERT(0 <= b);
      RC_ASSERT(e <= m.seqlen_k);
      for (int64_t j = 0; j < m.seqlen_k; ++j) RC_ASSERT(m.allowed(i, j) == (b <= j && j < e));
      RC_ASSERT(m.row_fully_masked(i) == (e <= b));
    }
    ++g_cases;
  });
  fmt::print("property key_range_equals_predicate: {} cases passed\n", g_cases);
  EXPECT_TRUE(ok);
}

TEST(MaskSpec, TileRangesAreExact) {
  g_cases = 0;
  const bool ok = rc::check("tile skip and tile_unmasked are exact", [] {
    const MaskSpec m = *gen_mask();
    const int64_t i0 = *rc::gen::inRange<int64_t>(0, m.seqlen_q);
    const int64_t i1 = *rc::gen::inRange<int64_t>(i0 + 1, m.seqlen_q + 1);
    const int64_t j0 = *rc::gen::inRange<int64_t>(0, m.seqlen_k);
    const int64_t j1 = *rc::gen::inRange<int64_t>(j0 + 1, m.seqlen_k + 1);
    bool any = false, all = true;
    for (int64_t i = i0; i < i1; ++i)
      for (int64_t j = j0; j < j1; ++j) {
        any = any || m.allowed(i, j);
        all = all && m.allowed(i, j);
      }
    const int64_t kb = m.block_key_begin(i0, i1), ke = m.block_key_end(i0, i1);
    // The block range may be empty or wider than one row's, but a tile meets it iff it holds
    // at least one allowed element.
    RC_CLASSIFY(any, "tile visible");
    RC_CLASSIFY(all, "tile fully visible");
    RC_ASSERT(any == (std::max(kb, j0) < std::min(ke, j1)));
    RC_ASSERT(all == m.tile_unmasked(i0, i1, j0, j1));
    ++g_cases;
  });
  fmt::print("property tile_ranges_are_exact: {} cases passed\n", g_cases);
  EXPECT_TRUE(ok);
}

}  // namespace

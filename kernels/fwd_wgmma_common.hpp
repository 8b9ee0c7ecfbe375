// kernels/fwd_wgmma_common.hpp: the device pieces the Hopper wgmma forwards share (v06_fa2_wgmma,
// v08_fa3_warpspec): the two products of a tile issued as wgmma, the boundary mask, the online
// softmax with lazy rescaling, and P packed into the A operand of O += P V. These were v06's
// functions (issue_pv also takes d = 256 here, for v08); v06 now uses them and has no copy (its
// SASS before and after the move: kernels/dev/sass_compare.py, kernels/dev/NOTES.md). The per-row
// softmax and epilogue rules they use are those of every fast rung: kernels/fwd_common.hpp.
//
// A tile description Tl provides kD (head dim), kBr (query rows of the block's shared Q tile) and
// kBc (keys per tile). Shared tiles are 128-byte swizzled: a tile of R rows x d columns is d/64
// panels of R rows x 128 bytes, 16-byte chunk c of row r at chunk c ^ (r % 8), 1024-byte aligned.
// Accumulators are laid out as wgmma's m64nN D (platform/wgmma.hpp): each warp owns 16 rows, a
// thread rows lane/4 and lane/4 + 8 of its warp's 16.
// The instructions exist only in an sm_90a device pass (__CUDA_ARCH_FEAT_SM90_ALL).
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/fwd_common.hpp"
#include "kernels/platform/fragment.hpp"
#include "kernels/platform/platform.hpp"
#include "kernels/platform/wgmma.hpp"

#if defined(IOATTN_PLATFORM_NVIDIA) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
namespace ioattn::kernels::fwd_wg {

// S = Q K^T for one tile, issued (the caller commits and waits): d/16 MMAs of
// k = 16; the kk-th 16-column slice of a swizzled row starts 32 kk bytes into its 64-column panel.
template <class T, class Tl>
__device__ __forceinline__ void issue_qk(float (&r_S)[Tl::kBc / 2], uint32_t q_addr, uint32_t k_addr) {
  wg::fence_regs(r_S);
  wg::fence();
#pragma unroll
  for (int kk = 0; kk < Tl::kD / 16; ++kk) {
    const uint64_t dq = wg::desc(q_addr + (kk / 4) * (Tl::kBr * 128) + (kk % 4) * 32, 16, 1024);
    const uint64_t dk = wg::desc(k_addr + (kk / 4) * (Tl::kBc * 128) + (kk % 4) * 32, 16, 1024);
    if constexpr (Tl::kBc == 64) wg::wgmma_ss_n64<T>(r_S, dq, dk, kk > 0);
    else wg::wgmma_ss_n128<T>(r_S, dq, dk, kk > 0);
  }
}

// O += P V for one tile, issued (the caller commits and waits): Bc/16 MMAs of k = 16 keys; the
// g-th 16-key slice of V starts 16 rows x 128 bytes in. r_P must stay untouched until it completes.
template <class T, class Tl>
__device__ __forceinline__ void issue_pv(float (&r_O)[Tl::kD / 2], const uint32_t (&r_P)[Tl::kBc / 16][4],
                                         uint32_t v_addr, uint32_t v_lbo, uint32_t v_sbo) {
  wg::fence_regs(r_O);
  wg::fence();
#pragma unroll
  for (int g = 0; g < Tl::kBc / 16; ++g) {
    const uint64_t dv = wg::desc(v_addr + g * 16 * 128, v_lbo, v_sbo);
    if constexpr (Tl::kD == 64) {
      wg::wgmma_rs_n64<T>(r_O, r_P[g], dv, 1);
    } else if constexpr (Tl::kD == 128) {
      wg::wgmma_rs_n128<T>(r_O, r_P[g], dv, 1);
    } else {
      // d = 256 (v08 only; v06's copy has no such branch): two m64n128 MMAs, one per half of O's
      // columns (accumulator registers 64 h .. 64 h + 63); half h starts at V's 64-column panel
      // 2h, i.e. 2 LBO bytes in.
      static_assert(Tl::kD == 256, "P V: d must be 64, 128 or 256");
      wg::wgmma_rs_n128<T>(*reinterpret_cast<float(*)[64]>(&r_O[0]), r_P[g], dv, 1);
      wg::wgmma_rs_n128<T>(*reinterpret_cast<float(*)[64]>(&r_O[64]), r_P[g],
                           wg::desc(v_addr + g * 16 * 128 + 2 * v_lbo, v_lbo, v_sbo), 1);
    }
  }
}

// Boundary tiles: -inf outside each row's visible keys [key_lo[s], key_hi[s]) (this thread's
// rows lane/4 + 8s of its warp). Atom t holds r_S[4t .. 4t+3], columns j0 + 8t + c_col. Selects,
// no branch, so it may run while a wgmma is in flight.
template <int kBc>
__device__ __forceinline__ void mask_tile(float (&r_S)[kBc / 2], const int (&key_lo)[2], const int (&key_hi)[2],
                                          int j0, int lane) {
#pragma unroll
  for (int t = 0; t < kBc / 8; ++t)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int s = e / 2, col = j0 + 8 * t + frag::c_col(lane, e);
      r_S[4 * t + e] = col >= key_lo[s] && col < key_hi[s] ? r_S[4 * t + e] : -INFINITY;
    }
}

// Online softmax of one S tile with lazy rescaling (fwd::max_moves): the running max m_i moves only
// when a row max grows by more than 2^kLazyLog2, so P <= 2^8 (safe in fp16/bf16). Overwrites S with
// P = exp2(S scale log2 e - m) in place (fp32), updates m_i and l_i and returns whether this warp
// must multiply its O rows by alpha (warp-uniform). kLazy false: eager rescaling (m_i moves at any
// growth; v10's IOATTN_V10_RESCALE=eager), so each row's largest P is exactly 1.
template <int kBc, bool kLazy = true>
__device__ __forceinline__ bool softmax_tile(float (&r_S)[kBc / 2], float (&m_i)[2], float (&l_i)[2],
                                             float (&alpha)[2], float sl2) {
  float m_tile[2] = {-INFINITY, -INFINITY};
#pragma unroll
  for (int x = 0; x < kBc / 2; ++x) m_tile[(x % 4) / 2] = fmaxf(m_tile[(x % 4) / 2], r_S[x]);
  bool grow[2], any_grow = false;
#pragma unroll
  for (int s = 0; s < 2; ++s) {
    m_tile[s] = frag::row_allreduce_max(m_tile[s]);
    grow[s] = fwd::max_moves<kLazy>(m_tile[s], m_i[s], sl2);
    any_grow |= grow[s];
  }
  const bool rescale = frag::warp_any(any_grow);
#pragma unroll
  for (int s = 0; s < 2; ++s) {  // selects, not branches (see mask_tile)
    const bool move = rescale && grow[s];
    const float m_new = move ? m_tile[s] : m_i[s];
    alpha[s] = move ? fwd::rescale_factor(m_i[s], m_new, sl2) : 1.f;
    m_i[s] = m_new;
    l_i[s] *= alpha[s];
  }
  float m_scaled[2];
#pragma unroll
  for (int s = 0; s < 2; ++s) m_scaled[s] = fwd::exp2_offset(m_i[s], sl2);
#pragma unroll
  for (int x = 0; x < kBc / 2; ++x) {
    r_S[x] = fwd::p_of(r_S[x], sl2, m_scaled[(x % 4) / 2]);
    l_i[(x % 4) / 2] += r_S[x];
  }
  return rescale;
}

// P (fp32, in the S accumulator layout) -> the A fragments of O += P V, 16 keys per MMA: the
// accumulator layout of a 16x16 slice is mma.sync's A layout, so packing pairs is all it takes.
template <class T, int kBc>
__device__ __forceinline__ void pack_p(const float (&r_S)[kBc / 2], uint32_t (&r_P)[kBc / 16][4]) {
#pragma unroll
  for (int x = 0; x < kBc / 2; x += 2) r_P[x / 8][(x % 8) / 2] = frag::pack2<T>(r_S[x], r_S[x + 1]);
}

}  // namespace ioattn::kernels::fwd_wg
#endif  // IOATTN_PLATFORM_NVIDIA && __CUDA_ARCH_FEAT_SM90_ALL

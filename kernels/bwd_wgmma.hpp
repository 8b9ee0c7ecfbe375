// kernels/bwd_wgmma.hpp: the building blocks of the Hopper (wgmma, sm_90a) FA2/FA3 backward (bwd03,
// bwd03b). NVIDIA only: on AMD this header declares nothing but the shared check, and both
// variants refuse (no wgmma; bwd02 is the AMD path).
//
// What the two variants share: the tile shapes of the K/V-outer CTA, the one problem check, the
// 128-byte-swizzled shared tiles wgmma reads (the layout v06_fa2_wgmma uses, restated here for
// tiles of any row count), 16- and 4-byte async copies into them, the accumulator -> A-fragment
// packing, the one wgmma form platform/wgmma.hpp lacks (both operands transposed, for dQ = dS K
// with dS^T in shared memory), the run-time probe for sm_90a device code, and bwd03's K/V-outer
// launch path (bwd03b reuses it with the dQ step off). The element-wise kernels (preprocess, dQ
// convert), the LSE staging and the per-element P/dS are bwd_mma.hpp's; the query rows a key block
// is seen by and the workspace layout are bwd_scalar.hpp's.
//
// Swizzled tile (as v06): a tile of R rows x d columns (16-bit) is d/64 panels of R rows x 128
// bytes; the 16-byte chunk c (columns 8c..8c+7 of the panel) of row r sits at chunk c ^ (r % 8).
// Every tile starts 1024-byte aligned (the swizzle repeats every 8 rows x 128 bytes).
// Descriptors of such a tile (the forms v06 runs on the H200):
//   K-major operand (the contraction runs along the 128-byte rows, e.g. A = K for S^T = K Q^T):
//     start + (kk / 4) * (R * 128) + (kk % 4) * 32 for the kk-th 16-column slice, LBO 16 (unused),
//     SBO 1024 (8 rows x 128 bytes).
//   MN-major operand (the contraction runs down the rows, e.g. B = dO for dV += P^T dO):
//     start + g * 16 * 128 for the g-th 16-row slice, LBO = R * 128 (one 64-column panel to the
//     next), SBO 1024 (one 8-row group to the next).
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>

#include "kernels/attn_view.hpp"
#include "kernels/bwd_mma.hpp"  // preprocess, dq_convert, staged_lse_log2, prob_and_dscore, with_mask, store_rows
#include "kernels/bwd_scalar.hpp"
#include "kernels/launcher.hpp"
#include "kernels/platform/fragment.hpp"
#include "kernels/platform/platform.hpp"
#include "kernels/platform/wgmma.hpp"

// The wgmma instructions exist only in the sm_90a device pass; elsewhere the kernel bodies are
// empty and the probe (wgmma_available) tells the launch path so at run time.
#if defined(IOATTN_PLATFORM_NVIDIA) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define IOATTN_BWD03_WGMMA 1
#endif

namespace ioattn::kernels::wgmma_bwd {

using scalar_bwd::Workspace;

// ---- the K/V-outer CTA --------------------------------------------------------------------------
// Two consumer warpgroups (256 threads); warpgroup w owns keys [64 w, 64 w + 64) of a Bc = 128 key
// block: its rows of S^T, dP^T (64 keys x Br queries) and of dK_j, dV_j (64 keys x d, fp32) in
// registers. Br is chosen so that each thread holds 192 fp32 accumulators at the peak
// (S^T + dP^T: Br/2 each, dK + dV: d/2 each): Br = 128 at d = 64, Br = 64 at d = 128 (FA3's tiles
// for those head dims). The dQ_i product (Br x d) is cut into two 64 x 64 pieces, one per
// warpgroup: at d = 64 by query rows, at d = 128 by columns, so each is one m64n64 wgmma chain over
// the block's 128 keys, and each accumulator piece starts at a 64-column panel boundary.
// Shared memory (1024-aligned tiles, 128B swizzle): K_j, V_j (Bc x d) for the CTA's life; kStages
// ring slots of Q_i, dO_i (Br x d) and of LSE_i, D_i (Br fp32 each); dS^T (Bc x Br, keys as rows,
// only with the dQ step).
template <int kD_, int kStages_, bool kDq_>
struct KvTile {
  static constexpr int kD = kD_;
  static constexpr int kStages = kStages_;
  static constexpr bool kDq = kDq_;
  static constexpr int kWG = 2;
  static constexpr int kThreads = 128 * kWG;
  static constexpr int kBc = 64 * kWG;              // 128 keys per CTA, 64 per warpgroup
  static constexpr int kBr = kD_ == 64 ? 128 : 64;  // query rows per streamed tile
  static constexpr int kKVBytes = kBc * kD_ * 2;    // K_j (and V_j)
  static constexpr int kQBytes = kBr * kD_ * 2;     // one ring slot of Q_i (and of dO_i)
  static constexpr int kDSBytes = kDq_ ? kBc * kBr * 2 : 0;
  static constexpr int kStatBytes = kBr * 4;        // one ring slot of LSE_i (and of D_i)
  static constexpr int kSmemBytes =
      1024 /* alignment slack */ + 2 * kKVBytes + 2 * kStages_ * kQBytes + kDSBytes + 2 * kStages_ * kStatBytes;
  static_assert(kD_ == 64 || kD_ == 128, "wgmma N of dK, dV += (.)^T Q/dO is d: 64 or 128 here");
  static_assert(kStages_ >= 2, "the Q/dO pipeline needs at least two ring slots");
  static_assert(kSmemBytes <= kMaxSharedBytes, "the K/V-outer CTA exceeds the shared memory of a block");
};

// The tiles of bwd03/bwd03b's K/V-outer kernel, in the words of the messages.
inline constexpr int kBcKv = 128;

// The one problem check both variants make; `who` names the variant in the message.
inline LaunchStatus check_common(const std::string& who, const AttnProblem& p, const BackwardOptions& opt) {
  if (auto e = p.validate()) return e;
#if !defined(IOATTN_PLATFORM_NVIDIA)
  (void)opt;
  return who + " needs NVIDIA Hopper (wgmma, sm_90a); on AMD use bwd02_fa2_mma";
#else
  if (p.dtype == DType::fp32) return who + ": dtype must be fp16 or bf16 (matrix cores take 16-bit inputs)";
  if (p.head_dim != 64 && p.head_dim != 128) return who + ": head_dim must be 64 or 128";
  if (opt.br || opt.bc)
    return who + " has fixed tiles (Bc = 128 keys per K/V-outer CTA; Br = 128 query rows at d = 64, 64 at d = 128)";
  if (p.batch * p.heads_kv * ((p.seqlen_k + kBcKv - 1) / kBcKv) > 0x7fffffff)
    return who + ": batch*heads_kv*ceil(seqlen_k/128) must be < 2^31 blocks";
  if (p.seqlen_q > 0x7fffffff - 256 || p.seqlen_k > 0x7fffffff - 256)
    return who + ": seqlen_q and seqlen_k must be < 2^31 - 256";
  return std::nullopt;
#endif
}

#if defined(IOATTN_PLATFORM_NVIDIA)

// Whether the device code of this build has wgmma (an sm_90a build on a device that loads it):
// asked once, by a one-thread probe kernel; the message names `who`. Defined in bwd03_fa3_wgmma.hip.
LaunchStatus wgmma_available(const std::string& who);

// ---- shared tiles ---------------------------------------------------------------------------------
// Byte offset of 16-byte chunk c8 (along d) of row r in a 128B-swizzled tile of kRows rows.
template <int kRows>
__device__ __forceinline__ uint32_t swizzled(int r, int c8) {
  return static_cast<uint32_t>((c8 / 8) * (kRows * 128) + r * 128 + (((c8 % 8) ^ (r % 8)) * 16));
}

// Rows [r0, r0 + kRows) of a strided global (rows_end, kD) tile into a swizzled shared tile, 16 bytes
// per cp.async; rows >= rows_end are zero-filled, never read. The caller commits, waits, fences the
// async proxy and synchronizes.
template <int kRows, int kD, int kThreads, class T>
__device__ __forceinline__ void load_swizzled(uint8_t* s, const T* g, int64_t row_stride, int64_t r0,
                                              int64_t rows_end, int tid) {
  constexpr int kChunks = kD / 8, kTotal = kRows * kChunks;
#pragma unroll
  for (int it = 0; it < (kTotal + kThreads - 1) / kThreads; ++it) {
    const int c = tid + it * kThreads;
    if (kTotal % kThreads != 0 && c >= kTotal) break;
    const int r = c / kChunks, c8 = c % kChunks;
    const bool valid = r0 + r < rows_end;
    frag::async_copy_16(s + swizzled<kRows>(r, c8), g + (valid ? r0 + r : 0) * row_stride + c8 * 8, valid);  // HBM read
  }
}

// 4 bytes global -> shared by cp.async (completes at the next async_wait); 4 zero bytes when !valid.
__device__ __forceinline__ void async_copy_4(void* dst, const void* src, bool valid) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(frag::smem_addr(dst)), "l"(src),
               "r"(valid ? 4 : 0));
}

// An fp32 accumulator of an m64nN wgmma (kN/2 registers: atom t = columns 8t..8t+7 in r[4t..4t+3],
// frag::c_row / c_col) -> the A operands of the next wgmma that contracts over those N columns,
// 16 per MMA: the accumulator of a 16 x 16 slice is mma.sync's A layout (as v06's P -> P V), so
// packing pairs is all it takes; a[g] holds columns 16g..16g+15, rounded to the dtype once.
template <class T, int kN>
__device__ __forceinline__ void pack_a(const float (&r)[kN / 2], uint32_t (&a)[kN / 16][4]) {
#pragma unroll
  for (int x = 0; x < kN / 2; x += 2) a[x / 8][(x % 8) / 2] = frag::pack2<T>(r[x], r[x + 1]);
}

// An accumulator (kN/2 registers) as the frag::FragC atoms bwd_mma.hpp's store_rows takes (the
// same 16x8 atom layout per warp).
template <int kN>
__device__ __forceinline__ const frag::FragC (&as_atoms(const float (&r)[kN / 2]))[kN / 8] {
  return *reinterpret_cast<const frag::FragC(*)[kN / 8]>(&r);
}

#if defined(IOATTN_BWD03_WGMMA)
// D (64 x 64) (+)= A (64 x 16) * B (16 x 64), both from shared memory and both MN-major
// (imm-trans-a = imm-trans-b = 1): A is stored K-rows x M (dS^T: keys as rows, queries along the
// 128-byte rows), B K-rows x N (K_j: keys as rows, d along them). Descriptors as "MN-major" above.
template <class T>
__device__ __forceinline__ void wgmma_ss_tt_n64(float (&d)[32], uint64_t desc_a, uint64_t desc_b, int accumulate) {
#define IOATTN_WGMMA_SS_TT(TY)                                                                     \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"                                        \
               "wgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY                             \
               " {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}," \
               " %32, %33, p, 1, 1, 1, 1;\n}\n"                                                    \
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
                 "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]),       \
                 "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]),     \
                 "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]),     \
                 "+f"(d[29]), "+f"(d[30]), "+f"(d[31])                                                          \
               : "l"(desc_a), "l"(desc_b), "r"(accumulate))
  if constexpr (std::is_same_v<T, fp16_t>) IOATTN_WGMMA_SS_TT("f16");
  else IOATTN_WGMMA_SS_TT("bf16");
#undef IOATTN_WGMMA_SS_TT
}

// *p += a, p[1] += b: one 8-byte fp32 reduction in global memory (red: no value comes back; sm_90).
__device__ __forceinline__ void red_add_f32x2(float* p, float a, float b) {
  asm volatile("red.global.add.v2.f32 [%0], {%1, %2};\n" ::"l"(p), "f"(a), "f"(b) : "memory");
}

// D (64 x N) (+)= A (64 x 16, shared, K-major) * B (16 x N, shared, K-major), N = 64 or 128.
template <class T, int kN>
__device__ __forceinline__ void wgmma_ss(float (&d)[kN / 2], uint64_t desc_a, uint64_t desc_b, int accumulate) {
  if constexpr (kN == 64) wg::wgmma_ss_n64<T>(d, desc_a, desc_b, accumulate);
  else wg::wgmma_ss_n128<T>(d, desc_a, desc_b, accumulate);
}
// D (64 x N) (+)= A (64 x 16, registers) * B (16 x N, shared, MN-major), N = 64 or 128.
template <class T, int kN>
__device__ __forceinline__ void wgmma_rs(float (&d)[kN / 2], const uint32_t (&a)[4], uint64_t desc_b,
                                         int accumulate) {
  if constexpr (kN == 64) wg::wgmma_rs_n64<T>(d, a, desc_b, accumulate);
  else wg::wgmma_rs_n128<T>(d, a, desc_b, accumulate);
}
#endif  // IOATTN_BWD03_WGMMA

// ---- bwd03's launch, shared with bwd03b ---------------------------------------------------------
// Through `L` (kernels/launcher.hpp): the preprocess (D_i; with dq_atomic also dQ_accum = 0), the
// K/V-outer wgmma kernel, the main one (dK, dV; with dq_atomic also dQ_accum += dS K by fp32
// atomics), then with dq_atomic the convert kernel. Defined in bwd03_fa3_wgmma.hip; the caller has
// checked the problem (check_common, wgmma_available) and, when enqueuing, the pointers.
LaunchStatus launch_kv_outer(const AttnProblem& p, const BackwardTensors& t, const Workspace& ws, bool dq_atomic,
                             const Launcher& L);

#endif  // IOATTN_PLATFORM_NVIDIA

}  // namespace ioattn::kernels::wgmma_bwd

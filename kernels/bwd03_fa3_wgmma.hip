// kernels/bwd03_fa3_wgmma.hip: the FlashAttention backward on Hopper's warpgroup MMA (wgmma),
// NVIDIA sm_90a only. Pairs with v06_fa2_wgmma (it reads that forward's O and LSE).
//
// What changed against bwd02_fa2_mma: the five products run as wgmma.mma_async, issued by a whole
// warpgroup (4 warps) and reading their shared operands through descriptors from 128-byte-swizzled
// tiles (v06's layout, kernels/bwd_wgmma.hpp) instead of ldmatrix + mma.sync; the CTA owns 128
// keys instead of 64, and the Q_i, dO_i tiles stream through a kStages-deep cp.async ring, so the
// next tile loads while this one is computed (bwd02 loaded, waited, computed). The loops are still
// FA2's Algorithm 2 (FA3's K/V-outer order): a CTA owns K_j, V_j for its whole life, streams the
// query tiles of every query head of its group past it, keeps dK_j, dV_j in registers and adds
// dQ_i into an fp32 accumulator by atomics (dq_mode "atomic"), so no K/V block waits for another.
// Per streamed tile, warpgroup w (keys 64w..64w+63 of the block; each warp 16 of them) computes
//   S^T  = K_w Q_i^T    wgmma m64n{Br}k16, A = K_w (shared, K-major), B = Q_i (shared, K-major)
//   dP^T = V_w dO_i^T   wgmma m64n{Br}k16, A = V_w, B = dO_i, as above (both issued, one wait)
//   P^T = exp(scale S^T - LSE_i) (LSE per column), dS^T = P^T o (dP^T - D_i), both rounded to the
//   dtype into A fragments (bwd_wgmma.hpp pack_a: the accumulator layout is the register A layout)
//   dV_w += P^T dO_i    wgmma m64n{d}k16, A = P^T (registers), B = dO_i (shared, MN-major)
//   dK_w += dS^T Q_i    wgmma m64n{d}k16, A = dS^T (registers), B = Q_i (shared, MN-major)
//   dS^T also goes to shared memory, keys as rows (4-byte stores, conflict-free in the swizzle);
//   after a barrier both warpgroups see all 128 keys of it:
//   dQ_i += dS K_j      wgmma m64n64k16, A = dS (shared, MN-major: the dS^T tile), B = K_j (shared,
//                       MN-major); warpgroup w owns a 64 x 64 piece of the (Br, d) product (d = 64:
//                       query rows 64w.., d = 128: columns 64w..), summed over the block's 128 keys,
//   then one 8-byte fp32 reduction (red.global.add.v2.f32, sm_90) per adjacent pair of its accumulator.
// dV/dK and dQ are issued back to back and waited for together. dS_ij is rounded to the dtype once:
// the same bits feed dK and dQ (bwd_mma.hpp's numerics).
//   1. preprocess   D_i = rowsum(dO_i o O_i), dQ_accum = 0                   (bwd_mma.hpp)
//   2. K/V outer    per (b, kv head, key block j of 128); dK_j = scale dK_j, dV_j written once
//   3. dq_convert   dQ = scale dQ_accum, in the dtype                        (bwd_mma.hpp)
// GQA/MQA: the CTA of a K/V head walks the query heads of its group in a fixed order (the ring
// runs across head boundaries), so dK_j and dV_j sum over the group in registers (bit-identical
// across launches; dQ is not, the order of the atomics varies: bwd03b_fa3_wgmma_dqpass removes them).
// Masks: only the query rows that can see block j are streamed (bwd_scalar.hpp query_rows_seeing,
// from mask.hpp's per-row key ranges); only a warpgroup whose 64 keys cross a boundary for the
// tile (diagonal, window edge, seqlen_k) evaluates the mask (MaskSpec::tile_unmasked). A fully
// masked row (LSE = -inf) and the padding rows of the last tile (zero-filled Q, dO; LSE, D zero
// bytes) are staged with LSE = +inf (bwd_mma.hpp staged_lse_log2): P = 0, dS = 0, no dQ contribution;
// padding rows are never added to dQ_accum, padding keys (zero rows of K_j, V_j) are masked.
//
// HBM traffic (simulator: `ioattn simulate --pass bwd --strategy fa2 --dq atomic`), e = 2 bytes,
// per query head, Nq x Nk unmasked, Tc = ceil(Nk / 128):
//   preprocess : dO, O read (2 e Nq d), D written (4 Nq), dQ_accum zeroed (4 Nq d)
//   K/V outer  : K_j, V_j read and dK_j, dV_j written once per K/V head (4 e Nk d); per (j, i):
//                Q_i, dO_i (2 e Tc Nq d), LSE_i, D_i (8 Tc Nq), dQ_accum read + written by the
//                atomics (8 Tc Nq d)
//   dq_convert : dQ_accum read (4 Nq d), dQ written (e Nq d)
// (bwd02's formula with Tc halved: twice the keys per CTA halve the Q/dO re-reads and the atomics.)
//
// Supports: fp16, bf16 (fp32 accumulation); d in {64, 128} (v06's); any Nq, Nk; causal
// (bottom-right), windows, GQA/MQA; fully masked rows (dQ = 0). NVIDIA sm_90a only: the file gets
// sm_90a device code (kernels/backward.cmake); supports() asks the device once (a one-thread probe)
// and refuses otherwise, as v06 does. AMD: refused (no wgmma; bwd02_fa2_mma is the AMD path).
// Tiles (fixed): Bc = 128 keys per CTA (2 consumer warpgroups x 64 keys, 256 threads),
// Br = 128 query rows per streamed tile at d = 64, 64 at d = 128 (192 fp32 accumulators per thread
// at the peak: S^T, dP^T Br/2 each + dK, dV d/2 each; bwd_wgmma.hpp KvTile), kStages = 2.
// Shared memory: 1024 (alignment) + 2 Bc d e (K_j, V_j) + 2 kStages Br d e (Q, dO ring) + Bc Br e
// (dS^T) + 2 kStages 4 Br (LSE, D ring) bytes: 131 KiB at d = 64, 146 KiB at d = 128; one CTA per SM.
// Workspace: D (4 B Hq Nq, padded to 256 bytes) + dQ_accum (4 B Nq Hq d).
// Launches: 3 (preprocess, K/V outer, dq_convert), written once in run() below against the
// Launcher (launcher.hpp), so config() reports the launched K/V-outer kernel: grid
// B*Hkv*ceil(Nk/128) in "kv_bh_major" order (launch.hpp), 256 threads, the shared memory above.
// Not done (FA3 has them): a TMA producer warp with setmaxnreg, dQ through shared memory and one
// bulk reduce per tile (cp.reduce.async.bulk) instead of per-element atomics, overlapping the
// atomics and the softmax with the next tile's S^T/dP^T wgmmas.
// ptxas (nvcc 13.0, sm_90a, -O3 -Xptxas -v): K/V-outer kernel, registers per thread, fp16 = bf16:
// d = 64: 255, d = 128: 255 (the instances without the dQ step, bwd03b's: 255, 245); no spill, no
// wgmma serialization reported. Since the first measured run (ncu: ~180 branch instructions per
// warp and tile, 1.8x FA2's instruction count; experiments/results/h200/2026-12-01_0404dc1_ncudetail)
// the element loop has one instance per mask case (mma_bwd::with_mask: no per-element mask
// arithmetic on unmasked tiles), P is 2^(S scale log2 e - LSE log2 e) by one FMA and ex2 (was
// expf), and the tile index is split by a 32-bit division: not yet measured.
// Measured: passes the GPU suite and memcheck on the H200 (2026-12-01); its times are in
// kernels/README.md's generated backward tables (the run CANONICAL names as `bwd`).
// Run: build-gpu/verify/kernels/gpu_backward (the GPU property tests of every backward variant), or
//   build-gpu/apps/ioattn run --backward --bwd-kernel bwd03_fa3_wgmma --seqlen 4096 --heads 16 --head-dim 128 --dtype bf16 --check
#include <cmath>
#include <cstdint>
#include <string>

#include "kernels/bwd_wgmma.hpp"

namespace ioattn::kernels {

#if defined(IOATTN_PLATFORM_NVIDIA)
namespace wgmma_bwd {
namespace {

// The shared memory the header states.
static_assert(KvTile<64, 2, true>::kSmemBytes == 131 * 1024 && KvTile<128, 2, true>::kSmemBytes == 146 * 1024);

// The K/V-outer kernel. blockIdx.x = (b * Hkv + h_kv) * Tc + j_block; warpgroup wg owns keys
// [64 wg, 64 wg + 64) of the block, warp wq of it the 16 keys [16 wq, 16 wq + 16) of those.
// Accumulator layout (every m64nN wgmma, platform/wgmma.hpp): warp wq holds rows 16 wq + lane/4 +
// 8 (e/2) and columns 8 t + 2 (lane%4) + e%2 in r[4t + e]; for S^T, dP^T, dK, dV the rows are the
// warpgroup's keys, for dQ the piece's query rows.
template <class T, class Tl>
__global__ void __launch_bounds__(Tl::kThreads, 1)
kv_outer_wgmma_kernel(AttnView a, const T* __restrict__ g_Q_all, const T* __restrict__ g_K_all,
                      const T* __restrict__ g_V_all, const T* __restrict__ g_dO_all, const float* __restrict__ g_LSE,
                      const float* __restrict__ g_D, float* __restrict__ g_dQaccum, T* __restrict__ g_dK_all,
                      T* __restrict__ g_dV_all) {
#if defined(IOATTN_BWD03_WGMMA)
  constexpr int kD = Tl::kD, kBr = Tl::kBr, kBc = Tl::kBc, kStages = Tl::kStages, kThreads = Tl::kThreads;

  extern __shared__ unsigned char smem_raw[];
  const uint32_t raw_addr = frag::smem_addr(smem_raw);
  uint8_t* s_K = smem_raw + ((1024 - raw_addr % 1024) % 1024);  // (Bc, d) swizzled, the CTA's life
  uint8_t* s_V = s_K + Tl::kKVBytes;                            // (Bc, d) swizzled, idem
  uint8_t* s_Q = s_V + Tl::kKVBytes;                            // kStages x (Br, d) swizzled
  uint8_t* s_dO = s_Q + kStages * Tl::kQBytes;                  // kStages x (Br, d) swizzled
  uint8_t* s_dSt = s_dO + kStages * Tl::kQBytes;                // (Bc, Br) swizzled: dS^T, keys as rows
  float* s_lse = reinterpret_cast<float*>(s_dSt + Tl::kDSBytes);  // kStages x (Br): raw LSE_i (0: padding)
  float* s_D = s_lse + kStages * kBr;                             // kStages x (Br): D_i

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int wg = warp / 4, wq = warp % 4;
  const int64_t Tc = (a.seqlen_k + kBc - 1) / kBc;
  const int64_t j_block = blockIdx.x % Tc;
  const int64_t h_kv = (blockIdx.x / Tc) % a.heads_kv;
  const int64_t b = blockIdx.x / (Tc * a.heads_kv);
  const int64_t j0 = j_block * kBc, j1 = j0 + kBc < a.seqlen_k ? j0 + kBc : a.seqlen_k;
  const int64_t jw0 = j0 + 64 * wg;  // this warpgroup's keys [jw0, jw0 + 64) (those >= j1 are padding)
  const int64_t q_stride = a.q_row_stride(), kv_stride = a.kv_row_stride();
  const MaskSpec& mask = a.mask;

  load_swizzled<kBc, kD, kThreads>(s_K, g_K_all + a.kv_offset(b, 0, h_kv), kv_stride, j0, a.seqlen_k,
                                   tid);  // HBM read: K_j, once per CTA
  load_swizzled<kBc, kD, kThreads>(s_V, g_V_all + a.kv_offset(b, 0, h_kv), kv_stride, j0, a.seqlen_k,
                                   tid);  // HBM read: V_j, once per CTA
  frag::async_commit();

  // The streamed tiles: n_i query tiles of Br rows per query head of the group, flattened to
  // t = (h - h_kv group) n_i + tile, so the ring runs across head boundaries.
  const scalar_bwd::RowRange seen = scalar_bwd::query_rows_seeing(mask, j0, j1);
  const int64_t n_i = seen.last > seen.first ? (seen.last - seen.first + kBr - 1) / kBr : 0;
  const int64_t total = a.group * n_i;
  struct TileRows {
    int64_t h, i0, i1;  // query head, rows [i0, i1) (rows i1 .. i0 + Br - 1 are padding)
  };
  // 32-bit division (t < group * n_i < 2^31 for any problem a device can hold): a 64-bit one is a
  // ~70-instruction call, twice per tile.
  auto tile_rows = [&](int64_t t) {
    const uint32_t head = static_cast<uint32_t>(t) / static_cast<uint32_t>(n_i);
    const int64_t i0 = seen.first + (static_cast<int64_t>(t) - int64_t{head} * n_i) * kBr;
    return TileRows{h_kv * a.group + head, i0, i0 + kBr < seen.last ? i0 + kBr : seen.last};
  };
  // Copy group of tile t into ring slot t % kStages: Q_i, dO_i, LSE_i, D_i; one commit, always.
  auto load_tile = [&](int64_t t) {
    if (t < total) {
      const TileRows r = tile_rows(t);
      const int slot = static_cast<int>(t % kStages);
      load_swizzled<kBr, kD, kThreads>(s_Q + slot * Tl::kQBytes, g_Q_all + a.q_offset(b, 0, r.h), q_stride, r.i0,
                                       r.i1, tid);  // HBM read: Q_i, per (j, i)
      load_swizzled<kBr, kD, kThreads>(s_dO + slot * Tl::kQBytes, g_dO_all + a.q_offset(b, 0, r.h), q_stride, r.i0,
                                       r.i1, tid);  // HBM read: dO_i, per (j, i)
      for (int x = tid; x < 2 * kBr; x += kThreads) {
        const int n = x % kBr;
        const bool valid = r.i0 + n < r.i1;
        const int64_t off = a.lse_offset(b, r.h, valid ? r.i0 + n : 0);
        if (x < kBr) async_copy_4(s_lse + slot * kBr + n, g_LSE + off, valid);  // HBM read: LSE_i, per (j, i)
        else async_copy_4(s_D + slot * kBr + n, g_D + off, valid);              // HBM read: D_i, per (j, i)
      }
    }
    frag::async_commit();
  };
#pragma unroll
  for (int st = 0; st < kStages - 1; ++st) load_tile(st);

  float r_dK[kD / 2], r_dV[kD / 2];  // (64 keys, d) per warpgroup: summed over the group's heads
  float r_S[kBr / 2], r_dP[kBr / 2];  // S^T -> P^T and dP^T -> dS^T: (64 keys, Br queries)
#pragma unroll
  for (int x = 0; x < kD / 2; ++x) r_dK[x] = 0.f, r_dV[x] = 0.f;
#pragma unroll
  for (int x = 0; x < kBr / 2; ++x) r_S[x] = 0.f, r_dP[x] = 0.f;
  const uint32_t k_addr = frag::smem_addr(s_K), v_addr = frag::smem_addr(s_V);
  const uint32_t dst_addr = frag::smem_addr(s_dSt);

  for (int64_t t = 0; t < total; ++t) {
    // Tile t's copy group has landed and is visible to the tensor cores; every thread is done with
    // tile t - 1 (its wgmmas were waited for), so its ring slot takes tile t + kStages - 1.
    frag::async_wait<kStages - 2>();
    wg::fence_proxy_async();
    __syncthreads();
    load_tile(t + kStages - 1);

    const TileRows tr = tile_rows(t);
    const int slot = static_cast<int>(t % kStages);
    const uint32_t q_addr = frag::smem_addr(s_Q + slot * Tl::kQBytes);
    const uint32_t do_addr = frag::smem_addr(s_dO + slot * Tl::kQBytes);
    const float* lse = s_lse + slot * kBr;
    const float* Dv = s_D + slot * kBr;

    // S^T = K_w Q_i^T and dP^T = V_w dO_i^T: d/16 k-steps of 16 columns each, issued together.
    wg::fence_regs(r_S);
    wg::fence_regs(r_dP);
    wg::fence();
#pragma unroll
    for (int kk = 0; kk < kD / 16; ++kk) {
      const uint32_t kv_off = (kk / 4) * (kBc * 128) + 64 * wg * 128 + (kk % 4) * 32;
      const uint32_t q_off = (kk / 4) * (kBr * 128) + (kk % 4) * 32;
      wgmma_ss<T, kBr>(r_S, wg::desc(k_addr + kv_off, 16, 1024), wg::desc(q_addr + q_off, 16, 1024), kk > 0);
      wgmma_ss<T, kBr>(r_dP, wg::desc(v_addr + kv_off, 16, 1024), wg::desc(do_addr + q_off, 16, 1024), kk > 0);
    }
    wg::commit();
    wg::wait_all();
    wg::fence_regs(r_S);
    wg::fence_regs(r_dP);

    // P^T and dS^T in place: element r[4 t8 + e] is key jw0 + 16 wq + lane/4 + 8 (e/2), query
    // column n = 8 t8 + 2 (lane%4) + e%2 of the tile. Only a warpgroup whose keys cross a mask
    // boundary for the tile tests (i, j); keys past seqlen_k (zero rows of K_j) are such a boundary.
    const int rows = static_cast<int>(tr.i1 - tr.i0);
    mma_bwd::with_mask(mask.tile_unmasked(tr.i0, tr.i1, jw0, jw0 + 64), [&](auto masked) {
#pragma unroll
      for (int t8 = 0; t8 < kBr / 8; ++t8)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int n = 8 * t8 + frag::c_col(lane, e);
          const int64_t i = tr.i0 + n, j = jw0 + 16 * wq + frag::c_row(lane, e);
          const bool visible = !masked || (j >= mask.key_begin(i) && j < mask.key_end(i));
          mma_bwd::prob_and_dscore(r_S[4 * t8 + e], r_dP[4 * t8 + e], visible, a.scale_log2,
                                   mma_bwd::staged_lse_log2(n < rows, lse[n]), Dv[n]);
        }
    });
    uint32_t r_Pa[kBr / 16][4], r_dSa[kBr / 16][4];  // P^T, dS^T as A operands, 16 queries each
    pack_a<T, kBr>(r_S, r_Pa);
    pack_a<T, kBr>(r_dP, r_dSa);

    if constexpr (Tl::kDq) {
      // dS^T to shared memory, keys as rows: packed pair r_dSa[t8/2][2 (t8%2) + e/2] (e = 0, 2) is
      // key row 64 wg + 16 wq + lane/4 + 8 (e/2), query columns 8 t8 + 2 (lane%4) + {0, 1}; one
      // 4-byte store. The 8 rows of a store land in 8 different 16-byte chunks (the swizzle), the
      // 4 lanes of a row in one chunk: 32 different banks.
#pragma unroll
      for (int t8 = 0; t8 < kBr / 8; ++t8)
#pragma unroll
        for (int e = 0; e < 4; e += 2) {
          const int r = 64 * wg + 16 * wq + frag::c_row(lane, e);
          const uint32_t off = swizzled<kBc>(r, t8) + 4 * (lane % 4);  // chunk t8 of the (Bc, Br) tile
          *reinterpret_cast<uint32_t*>(s_dSt + off) = r_dSa[t8 / 2][2 * (t8 % 2) + e / 2];  // LDS write: dS^T
        }
    }

    // dV_w += P^T dO_i and dK_w += dS^T Q_i: Br/16 MMAs of 16 queries each (scale at the end).
    wg::fence_regs(r_dV);
    wg::fence_regs(r_dK);
    wg::fence();
#pragma unroll
    for (int g = 0; g < kBr / 16; ++g)
      wgmma_rs<T, kD>(r_dV, r_Pa[g], wg::desc(do_addr + g * 16 * 128, kBr * 128, 1024), 1);
#pragma unroll
    for (int g = 0; g < kBr / 16; ++g)
      wgmma_rs<T, kD>(r_dK, r_dSa[g], wg::desc(q_addr + g * 16 * 128, kBr * 128, 1024), 1);
    wg::commit();

    if constexpr (Tl::kDq) {
      // Both warpgroups' dS^T rows written and visible to the tensor cores.
      wg::fence_proxy_async();
      __syncthreads();
      // dQ_i piece (64 x 64) += dS (rows 64 mq.., all 128 keys) K_j (keys, columns 64 nq..):
      // 8 MMAs of 16 keys. A: the dS^T tile read MN-major (its panel mq holds queries 64 mq..);
      // B: K_j read MN-major (its panel nq holds columns 64 nq..). Unscaled: dq_convert scales.
      constexpr bool kByRows = kD == 64;  // d = 64: Br = 128 split by rows; d = 128: Br = 64 by columns
      const int mq = kByRows ? wg : 0, nq = kByRows ? 0 : wg;
      float r_dQ[32];
#pragma unroll
      for (int x = 0; x < 32; ++x) r_dQ[x] = 0.f;
      wg::fence_regs(r_dQ);
      wg::fence();
#pragma unroll
      for (int g = 0; g < kBc / 16; ++g)
        wgmma_ss_tt_n64<T>(r_dQ, wg::desc(dst_addr + mq * (kBc * 128) + g * 16 * 128, kBc * 128, 1024),
                           wg::desc(k_addr + nq * (kBc * 128) + g * 16 * 128, kBc * 128, 1024), g > 0);
      wg::commit();
      wg::wait_all();  // dV, dK and dQ
      wg::fence_regs(r_dQ);
      wg::fence_regs(r_dV);
      wg::fence_regs(r_dK);
      // One 8-byte reduction per adjacent column pair: query row 64 mq + 16 wq + lane/4 + 8 (e/2) of
      // the tile, columns 64 nq + 8 t8 + 2 (lane%4) + {0, 1}; padding rows (>= rows) are skipped.
      float* g_dQ = g_dQaccum + a.q_offset(b, tr.i0, tr.h);
#pragma unroll
      for (int t8 = 0; t8 < 8; ++t8)
#pragma unroll
        for (int e = 0; e < 4; e += 2) {
          const int r = 64 * mq + 16 * wq + frag::c_row(lane, e);
          if (r < rows)  // HBM read + write: dQ_accum_i, per (j, i)
            red_add_f32x2(g_dQ + r * q_stride + 64 * nq + 8 * t8 + frag::c_col(lane, e), r_dQ[4 * t8 + e],
                          r_dQ[4 * t8 + e + 1]);
        }
    } else {
      wg::wait_all();  // dV, dK
      wg::fence_regs(r_dV);
      wg::fence_regs(r_dK);
    }
  }
  frag::async_wait<0>();  // K_j, V_j landed even when no tile was streamed (nothing left in flight)

  // dK_j = scale dK_j, dV_j: this warp's keys jw0 + 16 wq + r < seqlen_k.
  const int keys = static_cast<int>(j1 - (jw0 + 16 * wq));
  mma_bwd::store_rows(g_dK_all + a.kv_offset(b, jw0 + 16 * wq, h_kv), kv_stride, keys, as_atoms<kD>(r_dK), a.scale,
                      lane);  // HBM write: dK_j, once
  mma_bwd::store_rows(g_dV_all + a.kv_offset(b, jw0 + 16 * wq, h_kv), kv_stride, keys, as_atoms<kD>(r_dV), 1.f,
                      lane);  // HBM write: dV_j, once
#else
  (void)a, (void)g_Q_all, (void)g_K_all, (void)g_V_all, (void)g_dO_all, (void)g_LSE, (void)g_D, (void)g_dQaccum,
      (void)g_dK_all, (void)g_dV_all;
#endif
}

// Writes 1 when this binary's device code has wgmma (an sm_90a build), else 0.
__global__ void wgmma_probe_kernel(int* out) {
#if defined(IOATTN_BWD03_WGMMA)
  *out = 1;
#else
  *out = 0;
#endif
}

template <int kD, bool kDqAtomic>
LaunchStatus launch_d(const AttnView& a, const BackwardTensors& t, const Workspace& ws, DType dt, const Launcher& L) {
  using Tl = KvTile<kD, 2, kDqAtomic>;
  const int64_t blocks = a.batch * a.heads_kv * ((a.seqlen_k + Tl::kBc - 1) / Tl::kBc);
  const MainKernel main{.br = Tl::kBr, .bc = Tl::kBc, .stages = Tl::kStages, .splits = 0, .grid_order = "kv_bh_major"};
  return dispatch_dtype(dt, [&]<class T>() -> LaunchStatus {
    if constexpr (sizeof(T) != 2) {
      return "bwd03_fa3_wgmma: dtype must be fp16 or bf16";
    } else {
      const T* d_o = static_cast<const T*>(t.d_o);
      if (auto e = L.aux(&mma_bwd::preprocess_kernel<T>,
                         dim3(mma_bwd::stream_blocks(a.batch * a.heads_q * a.seqlen_q * 8)), mma_bwd::kStreamThreads,
                         0, a, static_cast<const T*>(t.o), d_o, ws.D, ws.dq_accum))
        return e;
      if (auto e = L.main(main, &kv_outer_wgmma_kernel<T, Tl>, dim3(static_cast<unsigned>(blocks)), Tl::kThreads,
                          Tl::kSmemBytes, a, static_cast<const T*>(t.q), static_cast<const T*>(t.k),
                          static_cast<const T*>(t.v), d_o, t.lse, static_cast<const float*>(ws.D), ws.dq_accum,
                          static_cast<T*>(t.dk), static_cast<T*>(t.dv)))
        return e;
      if (!kDqAtomic) return std::nullopt;
      const int64_t n = a.batch * a.seqlen_q * a.heads_q * a.head_dim;
      return L.aux(&mma_bwd::dq_convert_kernel<T>, dim3(mma_bwd::stream_blocks(n / 4)), mma_bwd::kStreamThreads, 0,
                   n, a.scale, static_cast<const float*>(ws.dq_accum), static_cast<T*>(t.dq));
    }
  });
}

}  // namespace

LaunchStatus wgmma_available(const std::string& who) {
  static int cached = -1;
  if (cached < 0) {
    int* d_flag = nullptr;
    IOATTN_CHECK(hipMalloc(&d_flag, sizeof(int)));
    IOATTN_CHECK(hipMemset(d_flag, 0, sizeof(int)));
    wgmma_probe_kernel<<<1, 1>>>(d_flag);
    IOATTN_CHECK_LAUNCH();
    int h_flag = 0;
    IOATTN_CHECK(hipMemcpy(&h_flag, d_flag, sizeof(int), hipMemcpyDeviceToHost));
    IOATTN_CHECK(hipFree(d_flag));
    cached = h_flag;
  }
  if (cached == 0) return who + ": this build has no sm_90a device code (configure with -DIOATTN_CUDA_ARCH=90a)";
  return std::nullopt;
}

LaunchStatus launch_kv_outer(const AttnProblem& p, const BackwardTensors& t, const Workspace& ws, bool dq_atomic,
                             const Launcher& L) {
  const AttnView a = AttnView::of(p);
  if (p.head_dim == 64) return dq_atomic ? launch_d<64, true>(a, t, ws, p.dtype, L) : launch_d<64, false>(a, t, ws, p.dtype, L);
  return dq_atomic ? launch_d<128, true>(a, t, ws, p.dtype, L) : launch_d<128, false>(a, t, ws, p.dtype, L);
}

}  // namespace wgmma_bwd
#endif  // IOATTN_PLATFORM_NVIDIA

LaunchStatus bwd03_fa3_wgmma_supports(const AttnProblem& p, const BackwardOptions& opt) {
  if (auto e = wgmma_bwd::check_common("bwd03_fa3_wgmma", p, opt)) return e;
#if defined(IOATTN_PLATFORM_NVIDIA)
  return wgmma_bwd::wgmma_available("bwd03_fa3_wgmma");
#else
  return std::nullopt;
#endif
}

std::size_t bwd03_fa3_wgmma_workspace_bytes(const AttnProblem& p, const BackwardOptions&) {
  return scalar_bwd::workspace_bytes(p, /*with_dq_accum=*/true);
}

namespace {
// The launch path (written once against a Launcher: kernels/launcher.hpp).
LaunchStatus run(const AttnProblem& p, const BackwardTensors& t, const BackwardOptions& opt, void* workspace,
                 const Launcher& L) {
  if (auto e = bwd03_fa3_wgmma_supports(p, opt)) return e;
#if defined(IOATTN_PLATFORM_NVIDIA)
  if (!L.describes())
    if (auto e = scalar_bwd::check_pointers("bwd03_fa3_wgmma", t, workspace)) return e;
  const scalar_bwd::Workspace ws = workspace ? scalar_bwd::Workspace::carve(workspace, p, true) : scalar_bwd::Workspace{};
  return wgmma_bwd::launch_kv_outer(p, t, ws, /*dq_atomic=*/true, L);
#else
  (void)t, (void)workspace, (void)L;
  return "bwd03_fa3_wgmma needs NVIDIA Hopper (wgmma)";
#endif
}
}  // namespace

LaunchStatus bwd03_fa3_wgmma_launch(const AttnProblem& p, const BackwardTensors& t, const BackwardOptions& opt,
                                    void* workspace, void* stream) {
  return run(p, t, opt, workspace, Launcher::enqueue(stream));
}

LaunchStatus bwd03_fa3_wgmma_config(const AttnProblem& p, const BackwardOptions& opt, LaunchConfig& out) {
  return describe_launch(out, [&](const Launcher& L) { return run(p, {}, opt, nullptr, L); });
}

}  // namespace ioattn::kernels

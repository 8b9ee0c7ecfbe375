// kernels/v09a_fp8_mfma.hip: the FP8 (e4m3) forward on AMD CDNA3's FP8 matrix cores (MFMA),
// gfx940/941/942 (MI300) only. AMD is compiled, not run: nothing in this file has executed.
//
// What changed vs v05_fa2_fast's AMD path (same FA2 loop: a block owns Br query rows of one head,
// online softmax by the per-row rules of fwd_common.hpp, here EAGER: 5. below) and vs v09_fp8_wgmma
// (same FP8 contract: e4m3 codes with fp32 descales, P rounded to e4m3 unnormalized, bf16/fp16 O):
//   1. both products are v_mfma_f32_16x16x32_fp8_fp8 (__builtin_amdgcn_mfma_f32_16x16x32_fp8_fp8:
//      A, B one 64-bit register of 8 codes per lane, C 4 fp32; clang's BuiltinsAMDGPU.def,
//      feature fp8-insts). Operand map (platform/mfma_fp8_lanes.hpp): lane l, byte e:
//      A(row l%16, k 8(l/16) + e), B(k 8(l/16) + e, col l%16); C element e: (row 4(l/16) + e,
//      col l%16), as the 16x16x16 f16 atom of platform/fragment.hpp.
//   2. the transposed products, so that P never leaves registers: S^T = K Q^T (A = K from LDS,
//      B = Q^T: Q lives in registers for the whole key loop) and O^T = V^T P^T (A = V^T from LDS,
//      B = P^T packed from S^T's accumulator). A lane then holds ONE query (column l%16) of S^T
//      and O^T: the row max and row sum reduce over 4 lanes (xor 16, 32) instead of 16, and the
//      accumulator of S^T gives the lane keys 4(l/16) + e of each 16-key atom, while B of P^T
//      wants keys 8(l/16) .. +7 of each 32: the keys are renumbered within every 32-key group
//      (P V sums over keys, so one permutation of P's columns and V's rows leaves O unchanged):
//        K index kpos = 8g + j of the P V product holds key phys(kpos) = 4g + j%4 + 16 (j/4)
//      (bytes 0-3 from atom 2G, 4-7 from atom 2G+1), and V^T is written to LDS in that order.
//      These placements are index functions in platform/mfma_fp8_lanes.hpp; ctest amd_fp8_fnuz
//      emulates the instruction on the host and checks that they compose to S = Q K^T, O = P V.
//   3. FNUZ: these targets implement e4m3 FNUZ (bias 8, max 240, NaN 0x80), not the OCP e4m3fn
//      ioattn's inputs are. Every Q, K, V byte keeps its bits (kernels/platform/fp8_fnuz.hpp:
//      exactly half the OCP value for every finite code, no saturation; -0 -> +0, NaN -> NaN),
//      4 codes per register on the way from HBM to LDS/registers; the factors absorb the halving:
//        S = acc(S^T) * (scale qd kd * 4),   P~ = 2^(sl2 (S - m)) <= 1 (eager rescaling, 5.),
//        P fed to the MFMA = FNUZ(P~ / 2) = OCP-e4m3(P~) / 2 exactly (fp8_fnuz.hpp's test),
//        O = acc(O^T) * (vd * 4) / l,  l = sum of the unrounded fp32 P~,  LSE = (scale qd kd) m + log l
//      i.e. the reference's FP8 baseline (reference/naive.cpp, "FP8 inputs") rounding for rounding,
//      up to the order of the fp32 sums and the running max the rounding of P~ is relative to (the
//      same difference v09 has). NOT verified on hardware: the accumulation inside the MFMA
//      (assumed fp32 without intermediate truncation, unlike Hopper's), v_cvt_pk_fp8_f32's byte
//      order (src0 -> byte 0) and rounding (nearest-even, the default mode).
//   4. no async copies on CDNA: tile j+1 of K and V is loaded into registers before tile j is
//      computed and written (converted; V transposed byte by byte) to the other of two LDS
//      buffers after it: one __syncthreads per tile.
//   5. eager rescaling (fwd::max_moves<false>: m moves whenever a row's max grows), not the lazy
//      rescaling of v05/v09: the entry at the running max is P~ = 1 exactly, as the reference's
//      (it takes the final row max), instead of a dominant P~ in (1, 256] carrying e4m3's rounding,
//      which is what makes v09's O fail the error rule at logits of std 100 (v09's header, from its
//      CPU emulation). Costs an O^T rescale per tile where a row's max grows (not measured).
//
// Tiling: 4 wavefronts of 64 lanes, each owning kNQ x 16 query rows (Br = 64 kNQ); Bc keys per
// tile. LDS: 2 x [K (Bc, d + 16) + V^T (d, Bc + 16)] bytes (rows padded by 16 bytes).
// Configurations: d 64: Br 128, Bc 64 (20 KiB LDS); d 128: Br 128, Bc 64 (38 KiB); d 256: Br 64,
// Bc 32 (41 KiB; O^T alone is 64 fp32 registers per lane). Not tuned (no AMD GPU to tune on).
// Per lane: O^T d/16 x kNQ x 4 fp32, S^T Bc/16 x kNQ x 4 fp32, Q d/32 x kNQ x 8 bytes, the
// prefetch 2 x Bc d / 256 bytes. hipcc -O3 for gfx940 (the project's ROCm 5.2 with clang 15):
// 168 / 276 / 268 VGPRs (accumulators in AGPRs, counted) at d 64 / 128 / 256, 0 spills, for bf16
// and fp16 alike. gfx942 (MI300X's production id) is unknown to this clang: only gfx940 is built.
//
// HBM traffic (simulator strategy `fa2`, e = 1 byte for Q, K, V, 2 for O): Q once, O once, K and V
// once per query block, LSE once; no workspace and no transpose pass (V^T is built in LDS, per
// query block).
//
// Supports: fp8_e4m3 inputs (OCP, as everywhere in ioattn), output bf16 or fp16; descales per
// tensor or per K/V head (heads_kv <= 64 when per head: kernel arguments); d in {64, 128, 256};
// any Nq, Nk; causal (bottom-right), windows, GQA/MQA; LSE out; fully masked rows give O = 0,
// LSE = -inf. Dense layout only; no --br/--bc, no split-KV. Refused: on gfx90a (CDNA2 has no FP8
// MFMA: the device's code object says so, probed once), on any other AMD target without the FNUZ
// path (gfx950's FP8 is OCP: it would take the inputs as they are, with descales unchanged, and
// is not written), and on NVIDIA (v09_fp8_wgmma is the Hopper FP8 forward).
// Built: only by the AMD compile check (kernels/CMakeLists.txt, IOATTN_KERNEL_VARIANTS_AMD), for
// gfx90a (the kernel body compiles away; supports() refuses) and gfx940; not part of the NVIDIA
// build, whose GPU suite fails any registered variant that runs no case. Registered only in a
// build of the library for AMD (registry.cpp, IOATTN_BUILT_v09a_fp8_mfma); none exists today.
// Measured: nothing (compiled, not run).
// Run (on an MI300, in a build for AMD): ioattn run --kernel v09a_fp8_mfma --dtype fp8_e4m3 --seqlen 4096 --heads 16 --head-dim 128 --check
#include <cmath>
#include <cstdint>
#include <string>

#include "kernels/attn_view.hpp"
#include "kernels/fwd_common.hpp"
#include "kernels/launcher.hpp"
#include "kernels/platform/fp8_fnuz.hpp"
#include "kernels/platform/fragment.hpp"
#include "kernels/platform/mfma_fp8_lanes.hpp"
#include "kernels/platform/platform.hpp"

// Device passes that have CDNA3's FNUZ FP8 MFMA (gfx950, OCP FP8, deliberately not listed).
#if defined(IOATTN_PLATFORM_AMD) && (defined(__gfx940__) || defined(__gfx941__) || defined(__gfx942__))
#define IOATTN_V09A_MFMA 1
#endif

namespace ioattn::kernels {
namespace {

constexpr int kMaxDescaleHeads = 64;  // per-K/V-head factors travel in the kernel arguments

// The two factors of each K/V head's products, the FNUZ halving folded in (header, 3): S = acc * s,
// O = acc * o / l. n = 1 (per-tensor descales, or none) or heads_kv entries.
struct Fp8Factors {
  float s[kMaxDescaleHeads];  // scale qd kd * 4
  float o[kMaxDescaleHeads];  // vd * 4
  int per_head;               // 1: entry kv_head_of(h); 0: entry 0
};

// The lane maps of the instruction and the key renumbering (header, 2): platform/mfma_fp8_lanes.hpp.
using mfma8::acc_row;
using mfma8::lane_k0;
using mfma8::lane_row;

template <int kD_, int kBc_, int kNQ_>
struct V09aTile {
  static constexpr int kD = kD_;
  static constexpr int kBc = kBc_;
  static constexpr int kNQ = kNQ_;                    // 16-query atoms per wavefront
  static constexpr int kWaves = 4;
  static constexpr int kThreads = kWaves * kWarpSize;  // 256
  static constexpr int kBr = 16 * kNQ_ * kWaves;
  static constexpr int kLdK = kD_ + 16;                // bytes per K row in LDS
  static constexpr int kLdV = kBc_ + 16;               // bytes per V^T row in LDS
  static constexpr int kKBytes = kBc_ * kLdK;          // (Bc, d) codes
  static constexpr int kVBytes = kD_ * kLdV;           // (d, Bc) codes: V^T, keys renumbered
  static constexpr int kSmemBytes = 2 * (kKBytes + kVBytes);
  static constexpr int kChunks = kD_ / 16;             // 16-byte chunks per K/V row
  static constexpr int kLoads = kBc_ * kChunks / kThreads;  // chunks of K (and of V) per thread per tile
  static_assert(kD_ % 32 == 0, "S^T = K Q^T takes 32 of d per MFMA");
  static_assert(kBc_ % 32 == 0, "O^T = V^T P^T takes 32 keys per MFMA (one renumbered group)");
  static_assert(kBc_ * kChunks % kThreads == 0, "a tile's 16-byte chunks must spread evenly over the block");
  static_assert(kSmemBytes <= kMaxSharedBytes, "tiles exceed the platform's shared memory (LDS) per block");
};

#if defined(IOATTN_V09A_MFMA)
typedef float f32x4 __attribute__((ext_vector_type(4)));

__device__ inline f32x4 mfma_fp8(long a, long b, f32x4 c) {
  return __builtin_amdgcn_mfma_f32_16x16x32_fp8_fp8(a, b, c, 0, 0, 0);
}
// 8 OCP codes (two words) -> 8 FNUZ codes of half their values, as one MFMA operand.
__device__ inline long fnuz_operand(uint32_t lo, uint32_t hi) {
  return static_cast<long>((uint64_t{fnuz::from_ocp_halved_x4(hi)} << 32) | fnuz::from_ocp_halved_x4(lo));
}
// Four fp32 P~ -> four FNUZ codes of P~ / 2 in one word (byte i = x_i; round to nearest even).
__device__ inline uint32_t pack_p_halved(float x0, float x1, float x2, float x3) {
  int w = __builtin_amdgcn_cvt_pk_fp8_f32(0.5f * x0, 0.5f * x1, 0, false);
  w = __builtin_amdgcn_cvt_pk_fp8_f32(0.5f * x2, 0.5f * x3, w, true);
  return static_cast<uint32_t>(w);
}
#endif

template <class T, class Tl>
__global__ void __launch_bounds__(Tl::kThreads, 1)
    fp8_mfma_kernel(AttnView a, const uint8_t* __restrict__ g_Q_all, const uint8_t* __restrict__ g_K_all,
                    const uint8_t* __restrict__ g_V_all, T* __restrict__ g_O_all, float* __restrict__ g_LSE,
                    Fp8Factors fs) {
#if defined(IOATTN_V09A_MFMA)
  constexpr int kD = Tl::kD, kBc = Tl::kBc, kNQ = Tl::kNQ, kBr = Tl::kBr;
  constexpr int kNS = kBc / 16;  // S^T atoms (16 keys each) per tile
  constexpr int kNO = kD / 16;   // O^T atoms (16 of d each)

  extern __shared__ __align__(16) unsigned char smem_raw[];
  uint8_t* s_K = smem_raw;                    // 2 x (Bc, kLdK)
  uint8_t* s_Vt = smem_raw + 2 * Tl::kKBytes;  // 2 x (d, kLdV)

  const int tid = threadIdx.x, wave = tid / kWarpSize, lane = tid % kWarpSize;
  const int n = lane_row(lane), k0 = lane_k0(lane);  // the lane's query (C column), its 8 K indices
  const int seqlen_q = static_cast<int>(a.seqlen_q), seqlen_k = static_cast<int>(a.seqlen_k);
  const int64_t b = blockIdx.x / a.heads_q, h = blockIdx.x % a.heads_q, hk = a.kv_head_of(h);
  const int i0 = static_cast<int>(gridDim.y - 1 - blockIdx.y) * kBr;  // heavy query blocks first
  const int i1 = min(i0 + kBr, seqlen_q);
  const uint8_t* g_Q = g_Q_all + a.q_offset(b, 0, h);
  const uint8_t* g_K = g_K_all + a.kv_offset(b, 0, hk);
  const uint8_t* g_V = g_V_all + a.kv_offset(b, 0, hk);
  T* g_O = g_O_all + a.q_offset(b, 0, h);
  const int64_t q_stride = a.q_row_stride(), kv_stride = a.kv_row_stride();
  const MaskSpec& mask = a.mask;
  const int fi = fs.per_head ? static_cast<int>(hk) : 0;
  const float s_factor = fs.s[fi], o_factor = fs.o[fi];
  const float sl2 = s_factor * 1.4426950408889634f;  // exp2 units
  const fwd::KeyTiles tiles = fwd::block_key_tiles(mask, i0, i1, kBc);

  // K_j, V_j: HBM -> registers (raw OCP codes; zero past seqlen_k) ...
  uint4 r_k[Tl::kLoads], r_v[Tl::kLoads];
  auto fetch = [&](int j) {
#pragma unroll
    for (int it = 0; it < Tl::kLoads; ++it) {
      const int c = tid + it * Tl::kThreads, r = c / Tl::kChunks, ch = c % Tl::kChunks;
      const int key = j * kBc + r;
      const bool valid = key < seqlen_k;
      const int64_t off = valid ? key * kv_stride + ch * 16 : 0;
      r_k[it] = valid ? *reinterpret_cast<const uint4*>(g_K + off) : uint4{0, 0, 0, 0};  // HBM read: K_j
      r_v[it] = valid ? *reinterpret_cast<const uint4*>(g_V + off) : uint4{0, 0, 0, 0};  // HBM read: V_j
    }
  };
  // ... -> FNUZ (halved) -> LDS buffer `buf`: K row-major, V transposed with its keys renumbered.
  auto stash = [&](int buf) {
    uint8_t* s_Kb = s_K + buf * Tl::kKBytes;
    uint8_t* s_Vb = s_Vt + buf * Tl::kVBytes;
#pragma unroll
    for (int it = 0; it < Tl::kLoads; ++it) {
      const int c = tid + it * Tl::kThreads, r = c / Tl::kChunks, ch = c % Tl::kChunks;
      const uint4 k = r_k[it], v = r_v[it];
      *reinterpret_cast<uint4*>(s_Kb + r * Tl::kLdK + ch * 16) =
          uint4{fnuz::from_ocp_halved_x4(k.x), fnuz::from_ocp_halved_x4(k.y), fnuz::from_ocp_halved_x4(k.z),
                fnuz::from_ocp_halved_x4(k.w)};
      const uint32_t vw[4] = {fnuz::from_ocp_halved_x4(v.x), fnuz::from_ocp_halved_x4(v.y),
                              fnuz::from_ocp_halved_x4(v.z), fnuz::from_ocp_halved_x4(v.w)};
      const int col = mfma8::vt_col(r);  // where key r goes in every V^T row (renumbered)
#pragma unroll
      for (int x = 0; x < 16; ++x)  // d index 16 ch + x
        s_Vb[(16 * ch + x) * Tl::kLdV + col] = static_cast<uint8_t>(vw[x / 4] >> (8 * (x % 4)));
    }
  };

  // This wavefront's queries [wq0, wq1); the lane's query of atom q is wq0 + 16 q + n.
  const int wq0 = i0 + wave * 16 * kNQ;
  const int wq1 = min(wq0 + 16 * kNQ, seqlen_q);
  const int wkb = wq0 < wq1 ? static_cast<int>(mask.key_begin(wq0)) : 0;
  const int wke = wq0 < wq1 ? static_cast<int>(mask.key_end(wq1 - 1)) : 0;
  int key_lo[kNQ], key_hi[kNQ];
  long r_Q[kNQ][kD / 32];  // B of S^T = K Q^T: query n, d 32 kk + k0 .. + 7 (FNUZ, halved)
#pragma unroll
  for (int q = 0; q < kNQ; ++q) {
    const int i = wq0 + 16 * q + n;
    key_lo[q] = i < seqlen_q ? static_cast<int>(mask.key_begin(i)) : 0;
    key_hi[q] = i < seqlen_q ? static_cast<int>(mask.key_end(i)) : 0;
#pragma unroll
    for (int kk = 0; kk < kD / 32; ++kk) {
      uint2 w = {0, 0};
      if (i < seqlen_q) w = *reinterpret_cast<const uint2*>(g_Q + i * q_stride + 32 * kk + k0);  // HBM read: Q_i, once
      r_Q[q][kk] = fnuz_operand(w.x, w.y);
    }
  }

  f32x4 r_O[kNQ][kNO];  // O^T (d, queries), unnormalized, in units of O / (4 vd)
#pragma unroll
  for (int q = 0; q < kNQ; ++q)
#pragma unroll
    for (int t = 0; t < kNO; ++t) r_O[q][t] = f32x4{0.f, 0.f, 0.f, 0.f};
  float m_i[kNQ], l_i[kNQ];  // running max (accumulator units), this lane's partial row sum
#pragma unroll
  for (int q = 0; q < kNQ; ++q) {
    m_i[q] = -INFINITY;
    l_i[q] = 0.f;
  }

  if (tiles.first < tiles.last) {
    fetch(tiles.first);
    stash(0);
  }
  __syncthreads();
  for (int j = tiles.first; j < tiles.last; ++j) {
    const int buf = (j - tiles.first) % 2;
    if (j + 1 < tiles.last) fetch(j + 1);  // in flight during this tile's MFMAs
    const int j0 = j * kBc;
    if (j0 < wke && j0 + kBc > wkb) {  // some row of this wavefront sees the tile
      const uint8_t* s_Kj = s_K + buf * Tl::kKBytes;
      const uint8_t* s_Vj = s_Vt + buf * Tl::kVBytes;

      // S^T = K_j Q_i^T: atom t holds keys j0 + 16 t + acc_row(lane, e) of query n.
      f32x4 r_S[kNQ][kNS];
#pragma unroll
      for (int q = 0; q < kNQ; ++q)
#pragma unroll
        for (int t = 0; t < kNS; ++t) r_S[q][t] = f32x4{0.f, 0.f, 0.f, 0.f};
#pragma unroll
      for (int kk = 0; kk < kD / 32; ++kk)
#pragma unroll
        for (int t = 0; t < kNS; ++t) {
          const long k_op = *reinterpret_cast<const long*>(s_Kj + (16 * t + n) * Tl::kLdK + 32 * kk + k0);
#pragma unroll
          for (int q = 0; q < kNQ; ++q) r_S[q][t] = mfma_fp8(k_op, r_Q[q][kk], r_S[q][t]);
        }

      const bool masked = !mask.tile_unmasked(wq0, wq1, j0, j0 + kBc);
      long r_P[kNQ][kBc / 32];  // B of O^T = V^T P^T: FNUZ(P~ / 2), keys renumbered
#pragma unroll
      for (int q = 0; q < kNQ; ++q) {
        if (masked) {
#pragma unroll
          for (int t = 0; t < kNS; ++t)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
              const int key = j0 + 16 * t + acc_row(lane, e);
              if (key < key_lo[q] || key >= key_hi[q]) r_S[q][t][e] = -INFINITY;
            }
        }
        // Online softmax of query n (the per-row rules: fwd_common.hpp); its keys are spread over
        // the 4 lanes n, n + 16, n + 32, n + 48.
        float m_tile = -INFINITY;
#pragma unroll
        for (int t = 0; t < kNS; ++t)
#pragma unroll
          for (int e = 0; e < 4; ++e) m_tile = fmaxf(m_tile, r_S[q][t][e]);
        m_tile = fmaxf(m_tile, frag::shfl_xor(m_tile, 16));
        m_tile = fmaxf(m_tile, frag::shfl_xor(m_tile, 32));
        const bool grow = fwd::max_moves<false>(m_tile, m_i[q], sl2);  // eager (header, 5.)
        if (frag::warp_any(grow)) {  // wavefront-uniform: rescale O^T and l of the queries that moved
          const float alpha = grow ? fwd::rescale_factor(m_i[q], m_tile, sl2) : 1.f;  // m_i = -inf -> 0
          if (grow) m_i[q] = m_tile;
          l_i[q] *= alpha;
#pragma unroll
          for (int t = 0; t < kNO; ++t) r_O[q][t] *= alpha;
        }
        const float offset = fwd::exp2_offset(m_i[q], sl2);  // 0 for a query that saw only masked keys
#pragma unroll
        for (int t = 0; t < kNS; ++t)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const float p = fwd::p_of(r_S[q][t][e], sl2, offset);
            r_S[q][t][e] = p;
            l_i[q] += p;  // the unrounded P~, as the reference's l
          }
        // Group G: byte j from atom p_atom(G, j), element p_elem(j) (bytes 0-3: atom 2G, 4-7: 2G + 1).
#pragma unroll
        for (int G = 0; G < kBc / 32; ++G) {
          float x[8];
#pragma unroll
          for (int jb = 0; jb < 8; ++jb) x[jb] = r_S[q][mfma8::p_atom(G, jb)][mfma8::p_elem(jb)];
          r_P[q][G] = static_cast<long>((uint64_t{pack_p_halved(x[4], x[5], x[6], x[7])} << 32) |
                                        pack_p_halved(x[0], x[1], x[2], x[3]));
        }
      }

      // O^T += V_j^T P^T: atom t holds d = 16 t + acc_row(lane, e) of query n.
#pragma unroll
      for (int t = 0; t < kNO; ++t)
#pragma unroll
        for (int G = 0; G < kBc / 32; ++G) {
          const long v_op = *reinterpret_cast<const long*>(s_Vj + (16 * t + n) * Tl::kLdV + 32 * G + k0);
#pragma unroll
          for (int q = 0; q < kNQ; ++q) r_O[q][t] = mfma_fp8(v_op, r_P[q][G], r_O[q][t]);
        }
    }
    if (j + 1 < tiles.last) stash(1 - buf);  // the buffer tile j - 1 used: every wave left it at the last barrier
    __syncthreads();
  }

  // Epilogue: O = acc (4 vd) / l in the output dtype, LSE = (scale qd kd) m + log l (fwd_common.hpp).
#pragma unroll
  for (int q = 0; q < kNQ; ++q) {
    float l = l_i[q];
    l += frag::shfl_xor(l, 16);
    l += frag::shfl_xor(l, 32);
    const int i = wq0 + 16 * q + n;
    if (i >= seqlen_q) continue;
    const float f = o_factor * fwd::inv_row_sum(l);
#pragma unroll
    for (int t = 0; t < kNO; ++t) {  // HBM write: O_i, once (4 consecutive d per lane and atom)
      const f32x4 o = r_O[q][t];
      *reinterpret_cast<uint2*>(g_O + i * q_stride + 16 * t + acc_row(lane, 0)) =
          uint2{frag::pack2<T>(o[0] * f, o[1] * f), frag::pack2<T>(o[2] * f, o[3] * f)};
    }
    if (lane < 16) fwd::store_lse<false>(nullptr, g_LSE, a, b, h, i, fwd::row_lse(m_i[q], l, s_factor));
  }
#else
  (void)a, (void)g_Q_all, (void)g_K_all, (void)g_V_all, (void)g_O_all, (void)g_LSE, (void)fs;
#endif
}

#if defined(IOATTN_PLATFORM_AMD)
// Whether the device's code object has the FNUZ FP8 MFMA path (gfx940/941/942): 1, else 0.
__global__ void fp8_mfma_probe_kernel(int* out) {
#if defined(IOATTN_V09A_MFMA)
  *out = 1;
#else
  *out = 0;
#endif
}

LaunchStatus fp8_mfma_available() {
  // Asked once per device (a process may see a gfx90a and a gfx940 side by side).
  static int cached_of[64] = {};  // 0: not asked, 1: no FP8 MFMA, 2: FP8 MFMA
  int device = 0;
  IOATTN_CHECK(hipGetDevice(&device));
  if (device < 0 || device >= 64)
    return "v09a_fp8_mfma: device index " + std::to_string(device) + " out of range (< 64)";
  int& cached = cached_of[device];
  if (cached == 0) {
    int* d_flag = nullptr;
    IOATTN_CHECK(hipMalloc(&d_flag, sizeof(int)));
    IOATTN_CHECK(hipMemset(d_flag, 0, sizeof(int)));
    fp8_mfma_probe_kernel<<<1, 1>>>(d_flag);
    IOATTN_CHECK_LAUNCH();
    int h_flag = 0;
    IOATTN_CHECK(hipMemcpy(&h_flag, d_flag, sizeof(int), hipMemcpyDeviceToHost));
    IOATTN_CHECK(hipFree(d_flag));
    cached = h_flag == 1 ? 2 : 1;
  }
  if (cached == 1)
    return "v09a_fp8_mfma: this device has no FNUZ FP8 MFMA (gfx90a/CDNA2 has no FP8 matrix cores; the path is "
           "built for gfx940/941/942)";
  return std::nullopt;
}
#endif

bool per_head_descales(const AttnProblem& p) {
  return p.fp8.q_descale.size() > 1 || p.fp8.k_descale.size() > 1 || p.fp8.v_descale.size() > 1;
}

Fp8Factors factors_of(const AttnProblem& p) {
  Fp8Factors fs{};
  fs.per_head = per_head_descales(p) ? 1 : 0;
  const int64_t n = fs.per_head ? p.heads_kv : 1;
  for (int64_t hk = 0; hk < n; ++hk) {
    // The reference's fp32 factor scale * qd * kd (reference/naive.cpp), then x4 (exact).
    const float s = static_cast<float>(p.softmax_scale()) * AttnProblem::descale_at(p.fp8.q_descale, hk) *
                    p.k_descale_of(hk);
    fs.s[hk] = 4.f * s;
    fs.o[hk] = 4.f * p.v_descale_of(hk);
  }
  return fs;
}

template <class Tl>
LaunchStatus launch_tile(const AttnProblem& p, const DeviceTensors& t, const Launcher& L) {
  const AttnView a = AttnView::of(p);
  dim3 grid;
  if (auto e = fwd::query_grid("v09a_fp8_mfma", a, Tl::kBr, grid)) return e;
  if (!L.describes() && (!t.q || !t.k || !t.v || !t.o || !t.lse)) return "v09a_fp8_mfma: null tensor pointer";
  const MainKernel main{.br = Tl::kBr, .bc = Tl::kBc, .stages = 2, .splits = 0, .grid_order = "qblock_major_rev"};
  const Fp8Factors fs = factors_of(p);
  auto go = [&]<class T>() {
    return L.main(main, &fp8_mfma_kernel<T, Tl>, grid, Tl::kThreads, Tl::kSmemBytes, a,
                  static_cast<const uint8_t*>(t.q), static_cast<const uint8_t*>(t.k),
                  static_cast<const uint8_t*>(t.v), static_cast<T*>(t.o), t.lse, fs);
  };
  return p.fp8.out == DType::fp16 ? go.template operator()<fp16_t>() : go.template operator()<bf16_t>();
}

struct Config {
  int d;
  LaunchStatus (*launch)(const AttnProblem&, const DeviceTensors&, const Launcher&);
};
// One tile per head dim (header); not tuned.
const Config kConfigs[] = {
    {64, &launch_tile<V09aTile<64, 64, 2>>},
    {128, &launch_tile<V09aTile<128, 64, 2>>},
    {256, &launch_tile<V09aTile<256, 32, 1>>},
};
const Config* find_config(int64_t d) {
  for (const Config& c : kConfigs)
    if (c.d == d) return &c;
  return nullptr;
}

}  // namespace

LaunchStatus v09a_fp8_mfma_supports(const AttnProblem& p, const KernelOptions& opt) {
  if (auto e = p.validate()) return e;
#if defined(IOATTN_PLATFORM_AMD)
  if (p.dtype != DType::fp8_e4m3) return "v09a_fp8_mfma: dtype must be fp8_e4m3";
  if (!p.is_dense()) return "v09a_fp8_mfma: dense layout only (the problem is " + p.layout.describe() + ")";
  if (!find_config(p.head_dim)) return "v09a_fp8_mfma: head_dim must be 64, 128 or 256";
  if (opt.br || opt.bc) return "v09a_fp8_mfma takes no --br/--bc (one tile per head dim)";
  if (opt.splits) return "v09a_fp8_mfma takes no split-KV (--splits)";
  if (per_head_descales(p) && p.heads_kv > kMaxDescaleHeads)
    return "v09a_fp8_mfma: per-K/V-head descales need heads_kv <= " + std::to_string(kMaxDescaleHeads);
  if (auto e = fp8_mfma_available()) return e;
  return std::nullopt;
#else
  (void)opt;
  return "v09a_fp8_mfma needs AMD CDNA3 (gfx940/941/942 FP8 MFMA); on NVIDIA the FP8 forward is v09_fp8_wgmma";
#endif
}

std::size_t v09a_fp8_mfma_workspace_bytes(const AttnProblem&, const KernelOptions&) { return 0; }

namespace {
LaunchStatus run(const AttnProblem& p, const DeviceTensors& t, const KernelOptions& opt, const Launcher& L) {
  if (auto e = v09a_fp8_mfma_supports(p, opt)) return e;
  return find_config(p.head_dim)->launch(p, t, L);
}
}  // namespace

LaunchStatus v09a_fp8_mfma_launch(const AttnProblem& p, const DeviceTensors& t, const KernelOptions& opt,
                                  void* /*workspace*/, void* stream) {
  return run(p, t, opt, Launcher::enqueue(stream));
}

LaunchStatus v09a_fp8_mfma_config(const AttnProblem& p, const KernelOptions& opt, LaunchConfig& out) {
  return describe_launch(out, [&](const Launcher& L) { return run(p, {}, opt, L); });
}

}  // namespace ioattn::kernels

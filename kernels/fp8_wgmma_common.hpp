// kernels/fp8_wgmma_common.hpp: the FP8 (e4m3) pieces the Hopper FP8 forwards share
// (v09_fp8_wgmma, v10_fp8_warpspec): the descales as a kernel argument, the key renumbering that
// lets P stay in its registers (phys_key; v09's header derives it), the V -> V^T transpose pass,
// S = Q K^T with promotion (compute_s; v10's compute_s_pipelined), O += P V from V^T (issue_pv)
// and P's packing to e4m3. These were v09's functions, moved here unchanged (issue_pv also takes
// V^T tiles of several panels, for v10's Bc 256); v09's PTX before and after the move is the same
// but for the names, which now carry the namespace fp8wg (kernels/dev/sass_compare.py --ptx
// reports those lines; with every _Z... symbol renamed in order of appearance the files match).
//
// A tile description Tl provides kD (head dim), kBr (query rows of the block's shared Q tile), kBc
// (keys per tile), kQKRow (bytes per panel row of the Q and K tiles: 64 at d 64 with the 64-byte
// swizzle, else 128 with the 128-byte swizzle; Q is d / kQKRow panels of kBr rows, K of kBc rows),
// kVRow (bytes per panel row of a V^T tile: d rows per panel), and for the promotion kPromote,
// kSChunks = d / 32 / kPromote, kTCols (the keys of one promoted column part).
// Device code exists only in an sm_90a device pass; the host part only on NVIDIA.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <string>
#include <utility>

#include "kernels/attn_view.hpp"
#include "kernels/launch.hpp"
#include "kernels/platform/fragment.hpp"
#include "kernels/platform/platform.hpp"
#include "kernels/platform/wgmma.hpp"
#include "kernels/platform/wgmma_fp8.hpp"

#if defined(IOATTN_PLATFORM_NVIDIA)
namespace ioattn::kernels::fp8wg {

constexpr int kMaxDescaleHeads = 64;  // per-K/V-head descales travel in the kernel arguments
constexpr int kKeyPad = 128;          // V^T rows: Nk rounded up to this (every Bc divides it)

// The descales as the kernel sees them: n = 1 (per tensor, or none: 1.0) or heads_kv values.
struct Fp8Descales {
  float q[kMaxDescaleHeads], k[kMaxDescaleHeads], v[kMaxDescaleHeads];
  int per_head;  // 1: entry kv_head_of(h); 0: entry 0
};

// Key renumbering within a 32-key group (header): K index kpos of the P V product reads key phys(kpos).
__host__ __device__ constexpr int phys_key(int kpos) {
  return 16 * (kpos / 16) + 8 * ((kpos % 4) / 2) + 2 * ((kpos % 16) / 4) + kpos % 2;
}
static_assert([] {
  bool seen[32] = {};
  for (int k = 0; k < 32; ++k) {
    if (phys_key(k) < 0 || phys_key(k) >= 32 || seen[phys_key(k)]) return false;
    seen[phys_key(k)] = true;
  }
  // The thread t = 1, register 2 (K index 16 + 4 + b) holds accumulator keys 18, 19, 26, 27.
  return phys_key(20) == 18 && phys_key(21) == 19 && phys_key(22) == 26 && phys_key(23) == 27;
}(), "phys_key must be a permutation of 0..31 matching the accumulator layout");

// The pass is internal to each file that includes this header (one copy per translation unit, as a
// kernel defined in the file itself would be).
namespace {
// Pass 1: V (batch, Nk, Hkv, d) e4m3 -> V^T (batch, Hkv, d, Nk_pad), keys renumbered within each
// 32-key group (phys_key), zero past Nk. One CTA per (b*Hkv + hk, 64 keys, 64 of d): a 64 x 64 byte
// tile through shared memory, 16-byte loads and stores.
__global__ void __launch_bounds__(256) transpose_v_kernel(AttnView a, const uint8_t* __restrict__ g_V,
                                                          uint8_t* __restrict__ g_Vt, int64_t nk_pad) {
  __shared__ alignas(16) uint8_t s_t[64][64 + 16];  // (keys, d) of the tile; rows padded (16-byte stores)
  const int64_t bh = blockIdx.x, b = bh / a.heads_kv, hk = bh % a.heads_kv;
  const int key0 = static_cast<int>(blockIdx.y) * 64, x0 = static_cast<int>(blockIdx.z) * 64;
  const int tid = threadIdx.x, r = tid / 4, c = (tid % 4) * 16;  // 64 rows x 4 chunks of 16 bytes
  const int key = key0 + r;
  uint4 v = {0, 0, 0, 0};
  if (key < a.seqlen_k)
    v = *reinterpret_cast<const uint4*>(g_V + a.kv_offset(b, key, hk) + x0 + c);  // HBM read: V, once
  *reinterpret_cast<uint4*>(&s_t[r][c]) = v;
  __syncthreads();
  // Output row x0 + r (one d index), keys key0 + c .. + 15 in K order: byte i reads key phys(...).
  alignas(16) uint8_t out[16];
#pragma unroll
  for (int i = 0; i < 16; ++i) {
    const int kpos = (c + i) % 32, group = (c + i) / 32;
    out[i] = s_t[32 * group + phys_key(kpos)][r];
  }
  uint8_t* dst = g_Vt + ((b * a.heads_kv + hk) * a.head_dim + x0 + r) * nk_pad + key0 + c;
  *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(out);  // HBM write: V^T, once
}
}  // namespace

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
template <int kN>
__device__ __forceinline__ void wgmma_ss(float (&d)[kN / 2], uint64_t da, uint64_t db, int acc) {
  if constexpr (kN == 16) wg8::wgmma_ss_n16(d, da, db, acc);
  else if constexpr (kN == 32) wg8::wgmma_ss_n32(d, da, db, acc);
  else if constexpr (kN == 64) wg8::wgmma_ss_n64(d, da, db, acc);
  else if constexpr (kN == 128) wg8::wgmma_ss_n128(d, da, db, acc);
  else wg8::wgmma_ss_n256(d, da, db, acc);
}
template <int kN>
__device__ __forceinline__ void wgmma_rs(float (&d)[kN / 2], const uint32_t (&a)[4], uint64_t db, int acc) {
  if constexpr (kN == 64) wg8::wgmma_rs_n64(d, a, db, acc);
  else if constexpr (kN == 128) wg8::wgmma_rs_n128(d, a, db, acc);
  else wg8::wgmma_rs_n256(d, a, db, acc);
}

// k32 slices [kk0, kk1) of S = Q K^T for kN keys of one tile (starting at k_addr: key row 0, or
// row n kN of the tile, a whole number of 8-row swizzle atoms), issued into acc, a fresh
// accumulator at kk0 (its first MMA reads no C); slice kk starts 32 kk bytes along d, i.e. in
// panel 32 kk / kQKRow (panels of Bc rows) at byte (32 kk) % kQKRow of the row.
template <class Tl, int kN = Tl::kBc>
__device__ __forceinline__ void issue_qk(float (&acc)[kN / 2], uint32_t q_addr, uint32_t k_addr, int kk0, int kk1) {
  wg::fence_regs(acc);
  wg::fence();
#pragma unroll
  for (int kk = kk0; kk < kk1; ++kk) {
    const int panel = 32 * kk / Tl::kQKRow, within = 32 * kk % Tl::kQKRow;
    const uint64_t dq = wg8::desc<Tl::kQKRow>(q_addr + panel * (Tl::kBr * Tl::kQKRow) + within);
    const uint64_t dk = wg8::desc<Tl::kQKRow>(k_addr + panel * (Tl::kBc * Tl::kQKRow) + within);
    wgmma_ss<kN>(acc, dq, dk, kk > kk0);
  }
}

// S = Q K^T for one tile into r_S, completed (in registers) on return, with promotion: chunk 0
// (kPromote slices, all Bc keys) into r_S; every further chunk, one column part of kTCols keys at a
// time, into the fresh accumulator r_T, waited for and added to its columns of r_S in fp32 on the
// CUDA cores (accumulator layout: the kTCols keys of part n are registers [n kTCols/2, (n+1)
// kTCols/2) of r_S). issue_after() (O += P V of the previous tile; it commits its own group) is
// issued after the last part and left running (wait<1>): the softmax overlaps it as in v06. With
// kSChunks = 1 (no promotion) this is v06's issue / wait<1> exactly; every further part costs one
// wait (the tensor cores idle while kTCols/2 adds run).
template <class Tl, int kT, class F>
__device__ __forceinline__ void compute_s(float (&r_S)[Tl::kBc / 2], float (&r_T)[kT], uint32_t q_addr,
                                          uint32_t k_addr, F&& issue_after) {
  constexpr int kP = Tl::kPromote, kChunks = Tl::kSChunks;
  issue_qk<Tl>(r_S, q_addr, k_addr, 0, kP);
  wg::commit();
  if constexpr (kChunks == 1) {
    issue_after();
    wg::wait<1>();
    wg::fence_regs(r_S);
  } else {
    constexpr int kW = Tl::kTCols, kParts = Tl::kBc / kW;
    static_assert(kT == kW / 2, "r_T holds one column part of S");
#pragma unroll
    for (int c = 1; c < kChunks; ++c)
#pragma unroll
      for (int n = 0; n < kParts; ++n) {
        issue_qk<Tl, kW>(r_T, q_addr, k_addr + n * kW * Tl::kQKRow, c * kP, (c + 1) * kP);
        wg::commit();
        if (c == kChunks - 1 && n == kParts - 1) {
          issue_after();
          wg::wait<1>();  // every S part done; P V may still run
        } else {
          wg::wait_all();
        }
        wg::fence_regs(r_S);
        wg::fence_regs(r_T);
#pragma unroll
        for (int x = 0; x < kW / 2; ++x) r_S[n * kW / 2 + x] += r_T[x];  // promotion: fp32 add
      }
  }
}

// S = Q K^T with promotion, PIPELINED (v10): as compute_s (chunk 0 into r_S, every further
// chunk in column parts of kTCols keys into a fresh accumulator, added to r_S in fp32), but with two
// fresh accumulators in turn: part k + 1 is issued before part k is waited for (wait<1>), so the
// tensor cores run part k + 1 while the CUDA cores add part k, instead of idling through every
// wait as compute_s does. issue_after() (O += P V of the previous tile, which commits its own
// group) is issued after the last part and left running.
template <class Tl, int kT, class F>
__device__ __forceinline__ void compute_s_pipelined(float (&r_S)[Tl::kBc / 2], float (&r_T0)[kT], float (&r_T1)[kT],
                                                    uint32_t q_addr, uint32_t k_addr, F&& issue_after) {
  constexpr int kP = Tl::kPromote, kChunks = Tl::kSChunks;
  issue_qk<Tl>(r_S, q_addr, k_addr, 0, kP);
  wg::commit();
  if constexpr (kChunks == 1) {
    issue_after();
    wg::wait<1>();
    wg::fence_regs(r_S);
  } else {
    constexpr int kW = Tl::kTCols, kParts = Tl::kBc / kW, kK = (kChunks - 1) * kParts;
    static_assert(kT == kW / 2, "r_T0 and r_T1 hold one column part of S each");
    auto issue_part = [&]<int k>(float (&r_T)[kT]) {
      constexpr int c = 1 + k / kParts, n = k % kParts;
      issue_qk<Tl, kW>(r_T, q_addr, k_addr + n * kW * Tl::kQKRow, c * kP, (c + 1) * kP);
      wg::commit();
    };
    auto add_part = [&]<int k>(float (&r_T)[kT]) {
      constexpr int n = k % kParts;
      wg::fence_regs(r_S);
      wg::fence_regs(r_T);
#pragma unroll
      for (int x = 0; x < kW / 2; ++x) r_S[n * kW / 2 + x] += r_T[x];  // promotion: fp32 add
    };
    auto step = [&]<int k>() {  // k >= 1: issue part k, wait for part k - 1, add it
      if constexpr (k % 2) issue_part.template operator()<k>(r_T1);
      else issue_part.template operator()<k>(r_T0);
      wg::wait<1>();
      if constexpr (k % 2) add_part.template operator()<k - 1>(r_T0);
      else add_part.template operator()<k - 1>(r_T1);
    };
    issue_part.template operator()<0>(r_T0);
    [&]<int... k>(std::integer_sequence<int, k...>) { (step.template operator()<k + 1>(), ...); }(
        std::make_integer_sequence<int, kK - 1>{});
    issue_after();
    wg::wait<1>();  // every S part done; P V may still run
    if constexpr ((kK - 1) % 2) add_part.template operator()<kK - 1>(r_T1);
    else add_part.template operator()<kK - 1>(r_T0);
  }
}

// O += P V for one tile, issued: Bc/32 MMAs of k = 32 keys; slice g starts 32 g bytes into each
// V^T row, in panel 32 g / kVRow of a tile stored as panels of d rows x kVRow bytes (kVRow < Bc:
// v10's Bc 256 as two panels of 128 keys). r_P must stay untouched until it completes.
template <class Tl>
__device__ __forceinline__ void issue_pv(float (&r_O)[Tl::kD / 2], const uint32_t (&r_P)[Tl::kBc / 32][4],
                                         uint32_t vt_addr) {
  wg::fence_regs(r_O);
  wg::fence();
#pragma unroll
  for (int g = 0; g < Tl::kBc / 32; ++g) {
    const int panel = 32 * g / Tl::kVRow, within = 32 * g % Tl::kVRow;  // panel 0 when Bc <= kVRow
    wgmma_rs<Tl::kD>(r_O, r_P[g], wg8::desc<Tl::kVRow>(vt_addr + panel * (Tl::kD * Tl::kVRow) + within), 1);
  }
}

// P (fp32, accumulator layout) -> e4m3 A fragments, 32 keys per MMA, in registers (header: register
// r of slice s takes atoms 4s + 2(r/2) and 4s + 2(r/2) + 1, elements 0, 1 for row g or 2, 3 for g + 8).
template <int kBc>
__device__ __forceinline__ void pack_p(const float (&r_S)[kBc / 2], uint32_t (&r_P)[kBc / 32][4]) {
#pragma unroll
  for (int s = 0; s < kBc / 32; ++s)
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int a0 = 4 * (4 * s + 2 * (r / 2)), a1 = a0 + 4, e = 2 * (r % 2);
      r_P[s][r] = wg8::pack_e4m3x4(r_S[a0 + e], r_S[a0 + e + 1], r_S[a1 + e], r_S[a1 + e + 1]);
    }
}
#endif  // __CUDA_ARCH_FEAT_SM90_ALL

inline int64_t padded_keys(const AttnProblem& p) { return (p.seqlen_k + kKeyPad - 1) / kKeyPad * kKeyPad; }

inline Fp8Descales descales_of(const AttnProblem& p) {
  Fp8Descales ds{};
  const bool per_head = p.fp8.q_descale.size() > 1 || p.fp8.k_descale.size() > 1 || p.fp8.v_descale.size() > 1;
  ds.per_head = per_head ? 1 : 0;
  const int64_t n = per_head ? p.heads_kv : 1;
  for (int64_t hk = 0; hk < n; ++hk) {
    ds.q[hk] = AttnProblem::descale_at(p.fp8.q_descale, hk);  // query head h: entry kv_head_of(h)
    ds.k[hk] = p.k_descale_of(hk);
    ds.v[hk] = p.v_descale_of(hk);
  }
  return ds;
}

// The promotion interval an environment variable asks for (v09: IOATTN_V09_S_PROMOTE, v10:
// IOATTN_V10_S_PROMOTE): unset or empty = 0 (the variant's default); "fast" = d / 32 (no promotion,
// one accumulator across d); a number n = a fresh accumulator every n k32 instructions; -1 for
// anything else (0 is not a valid value).
inline int requested_promote(const char* env, int64_t d) {
  const char* v = std::getenv(env);
  if (!v || v[0] == '\0') return 0;  // the default
  if (std::string(v) == "fast") return static_cast<int>(d / 32);
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  return (end && *end == '\0' && n > 0 && n <= 8) ? static_cast<int>(n) : -1;
}

// The rescaling an FP8 variant's environment asks for (IOATTN_V09_RESCALE, IOATTN_V10_RESCALE):
// "lazy" = 0, "eager" = 1 (fwd_wg::softmax_tile's kLazy false), -1 for anything else; unset or
// empty = the default: eager where the kernel has an eager configuration for the problem
// (eager_compiled: each head dim's default tile at promotion interval 1), else lazy. Eager is the
// default because lazy rescaling fails the error rule at logits of std 100 in v09 and v10 and eager
// passes every seed there (experiments/results/h200/2026-12-01_4eddfc3_fp8_promote).
inline int requested_eager(const char* env, bool eager_compiled) {
  const char* v = std::getenv(env);
  if (!v || v[0] == '\0') return eager_compiled ? 1 : 0;
  if (std::string(v) == "lazy") return 0;
  return std::string(v) == "eager" ? 1 : -1;
}

}  // namespace ioattn::kernels::fp8wg
#endif  // IOATTN_PLATFORM_NVIDIA

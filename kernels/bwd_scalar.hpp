// kernels/bwd_scalar.hpp: the building blocks of the scalar FA2 backward (bwd01, bwd01b).
//
// Shared by the two variants of the first backward rung: the workspace layout, the tiles, the
// per-element recomputation of P_ij and dS_ij, the query rows a key block can be seen by, and the
// host entry of bwd01's K/V-outer launch (bwd01b reuses it with the dQ step off).
//
// Numerics (why the dot products are computed as they are): S_ij, dP_ij and D_i are all dot
// products in the reference's fp32 order (reference/scores.hpp: sequential in x, every product and
// sum rounded, no fused multiply-add). With the forward's LSE the recomputed P_ij then equals the
// baseline's up to the last bit of exp. And with a saturated softmax (P_ij* = 1, the other P_ij
// underflow to 0) the forward's O_i is exactly V_j*, so D_i and dP_ij* are the same sum of the same
// products, and dP_ij* - D_i cancels to exactly 0, as in exact arithmetic. (An fp64 D_i, rounded
// once, is closer to the true D_i but not equal to the fp32 dP_ij*: the cancellation then leaves
// ~u |dO| |V|, which scale * K_j carries into dQ. The named case "saturated, Nq = 1, d = 5" of
// verify/kernels/gpu_backward.cpp is one where that alone exceeds the error rule's bound.)
// Everything else is fp32; P and dS are never rounded to the input dtype (no matrix cores here),
// only dQ, dK, dV once at the end.
#pragma once

#include <cstdint>
#include <string>

#include "kernels/backward.hpp"
#include "kernels/launcher.hpp"     // Launcher, MainKernel
#include "kernels/scalar_rows.hpp"  // kLanesPerRow, kCols, head_dim_bucket, dispatch_head_dim

namespace ioattn::kernels::scalar_bwd {

using scalar::kLanesPerRow;

// ---- tiles ---------------------------------------------------------------------------------
// The K/V-outer kernel: Bc key rows per CTA, kLanesPerRow lanes per key row (Bc*8 threads);
// the Q-outer dQ pass (bwd01b): Br query rows per CTA, 8 lanes per row (Br*8 threads).
inline constexpr int kMaxBc = 32;  // 256 threads: __launch_bounds__(256), <= 255 registers
inline constexpr int kMaxBr = 64;  // 512 threads in the dQ pass (as v03)
inline constexpr int kDefaultBr = 32;
inline constexpr int kDefaultBc = 32;

// Shared memory of the K/V-outer CTA, in bytes (fp32):
//   s_K, s_V (Bc, d + 1)   K_j, V_j, resident for the CTA's life
//   s_Q, s_dO (Br, d + 1)  the streamed Q_i, dO_i tile
//   s_P, s_dS (Br, Bc + 1) P_ij, dS_ij of the tile
//   s_lse, s_D (Br)        LSE_i, D_i of the tile's rows
// (+1 pads: the 8 lanes of a key row read 8 different query rows, the rows land in different banks)
constexpr int64_t kv_outer_shared_bytes(int64_t br, int64_t bc, int64_t d) {
  return 4 * (2 * bc * (d + 1) + 2 * br * (d + 1) + 2 * br * (bc + 1) + 2 * br);
}

struct Tiles {
  int br = 0, bc = 0;
  constexpr bool operator==(const Tiles&) const = default;
};

// The tiles of a problem: the given ones; a size left 0 takes the default 32, halved (Br first)
// until the K/V-outer CTA fits the shared memory of the platform (kMaxSharedBytes: 227 KiB on
// NVIDIA, 64 KiB on AMD), so the default always launches. Given sizes are never changed.
constexpr Tiles tiles_of(int64_t head_dim, const BackwardOptions& opt) {
  Tiles t{opt.br ? opt.br : kDefaultBr, opt.bc ? opt.bc : kDefaultBc};
  while (kv_outer_shared_bytes(t.br, t.bc, head_dim) > kMaxSharedBytes) {
    const bool shrink_br = !opt.br && t.br > 1, shrink_bc = !opt.bc && t.bc > 1;
    if (shrink_br && (t.br >= t.bc || !shrink_bc)) t.br /= 2;
    else if (shrink_bc) t.bc /= 2;
    else break;  // given sizes that do not fit: check_common names the limit
  }
  return t;
}
inline Tiles tiles_of(const AttnProblem& p, const BackwardOptions& opt) { return tiles_of(p.head_dim, opt); }

// The checks both scalar backward variants share; `who` names the variant in the message.
inline LaunchStatus check_common(const std::string& who, const AttnProblem& p, const Tiles& t) {
  if (auto e = p.validate()) return e;
  if (scalar::head_dim_bucket(p.head_dim) == 0)
    return who + ": head_dim must be <= 256 (got " + std::to_string(p.head_dim) + ")";
  if (t.br < 1 || t.br > kMaxBr) return who + ": Br must be in 1.." + std::to_string(kMaxBr);
  if (t.bc < 1 || t.bc > kMaxBc)
    return who + ": Bc must be in 1.." + std::to_string(kMaxBc) + " (Bc*8 threads <= 256)";
  const int64_t smem = kv_outer_shared_bytes(t.br, t.bc, p.head_dim);
  if (smem > kMaxSharedBytes)
    return who + ": the K/V-outer CTA needs 4*(2*Bc*(d+1) + 2*Br*(d+1) + 2*Br*(Bc+1) + 2*Br) = " +
           std::to_string(smem) + " bytes of shared memory, more than the " + std::to_string(kMaxSharedBytes) +
           " a block may use";
  if (p.batch * p.heads_kv * ((p.seqlen_k + t.bc - 1) / t.bc) > 0x7fffffff)
    return who + ": batch*heads_kv*ceil(seqlen_k/Bc) must be < 2^31 blocks";
  return std::nullopt;
}

// ---- workspace ------------------------------------------------------------------------------
// [ D: (B, Hq, Nq) fp32, padded to 256 bytes | dQ_accum: (B, Nq, Hq, d) fp32, "atomic" only ]
inline std::size_t d_region_bytes(const AttnProblem& p) {
  return (static_cast<std::size_t>(p.lse_elems()) * 4 + 255) / 256 * 256;
}
inline std::size_t workspace_bytes(const AttnProblem& p, bool with_dq_accum) {
  return d_region_bytes(p) + (with_dq_accum ? static_cast<std::size_t>(p.q_elems()) * 4 : 0);
}
struct Workspace {
  float* D = nullptr;         // (B, Hq, Nq)
  float* dq_accum = nullptr;  // (B, Nq, Hq, d) or nullptr
  // A null `ws` (config(): nothing is launched) gives null regions.
  static Workspace carve(void* ws, const AttnProblem& p, bool with_dq_accum) {
    Workspace w;
    if (!ws) return w;
    w.D = static_cast<float*>(ws);
    if (with_dq_accum) w.dq_accum = reinterpret_cast<float*>(static_cast<char*>(ws) + d_region_bytes(p));
    return w;
  }
};

// ---- device helpers -------------------------------------------------------------------------

// <a, b> over d elements in the reference's fp32 order (see the header).
__device__ inline float dot_ref_order(const float* a, const float* b, int d) {
  float s = 0.f;
  for (int x = 0; x < d; ++x) s = __fadd_rn(s, __fmul_rn(a[x], b[x]));
  return s;
}

// P_ij and dS_ij of one visible (i, j) (the caller checks j < seqlen_k, mask.allowed(i, j) and
// LSE_i > -inf), from fp32 rows staged in shared memory:
//   S_ij = scale <q_i, k_j>,  P_ij = exp(S_ij - LSE_i),  dP_ij = <dO_i, v_j>,  dS_ij = P_ij (dP_ij - D_i)
struct ProbGrad {
  float p, ds;
};
__device__ inline ProbGrad prob_and_dscore(const float* q_i, const float* k_j, const float* do_i,
                                           const float* v_j, int d, float scale, float lse_i, float D_i) {
  const float s = __fmul_rn(dot_ref_order(q_i, k_j, d), scale);
  const float p = expf(s - lse_i);
  const float dp = dot_ref_order(do_i, v_j, d);
  return {p, p * (dp - D_i)};
}

// The query rows [first, last) that can see some key of [j0, j1): rows with key_end(i) > j0 and
// key_begin(i) < j1. Both bounds of MaskSpec are non-decreasing in i, so the set is one range,
// found by two binary searches on the spec's own per-row key ranges (mask.hpp). It may contain
// fully masked rows (key_end <= key_begin); their LSE is -inf and they contribute nothing.
struct RowRange {
  int64_t first, last;
};
IOATTN_HD inline RowRange query_rows_seeing(const MaskSpec& m, int64_t j0, int64_t j1) {
  int64_t lo = 0, hi = m.seqlen_q;  // first i with key_end(i) > j0
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (m.key_end(mid) > j0) hi = mid;
    else lo = mid + 1;
  }
  const int64_t first = lo;
  lo = first, hi = m.seqlen_q;  // first i with key_begin(i) >= j1
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (m.key_begin(mid) >= j1) hi = mid;
    else lo = mid + 1;
  }
  return {first, lo};
}

// ---- bwd01's launch path, shared with bwd01b -----------------------------------------------------
// Through the Launcher L (launcher.hpp): the preprocess kernel (D_i; with dq_atomic it also zeroes
// the dQ accumulator) as L.aux, the K/V-outer kernel (dK, dV; with dq_atomic also dQ by fp32
// atomics) as L.main, with grid order "kv_bh_major", then with dq_atomic the convert kernel as
// L.aux. Defined in bwd01_fa2_scalar.hip; the caller has checked the problem and the tiles.
LaunchStatus launch_kv_outer(const AttnProblem& p, const BackwardTensors& t, const Tiles& tiles,
                             const Workspace& ws, bool dq_atomic, const Launcher& L);
// A launch with a null tensor or workspace is refused before it reaches the device (one line
// naming `who`). Defined in bwd01_fa2_scalar.hip.
LaunchStatus check_pointers(const std::string& who, const BackwardTensors& t, const void* workspace);

}  // namespace ioattn::kernels::scalar_bwd

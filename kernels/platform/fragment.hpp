// kernels/platform/fragment.hpp: matrix-core fragments, so a variant's algorithm reads the same on
// NVIDIA (mma.sync, warp of 32) and AMD CDNA (MFMA, wavefront of 64).
//
// A "fragment" is one lane's share of a small matrix that a whole warp/wavefront multiplies in one
// matrix-core instruction (an "atom"):
//
//                 atom (M x N x K)       lanes   A elems/lane  B elems/lane  C elems/lane
//   NVIDIA sm_80+  mma.sync m16n8k16       32        8             4             4
//   AMD gfx90a/940 mfma_f32_16x16x16{f16,bf16_1k}  64   4             4             4
//
// A is (M x K) row-major ("row"), B is (K x N) ("col": stored as N rows of K), C is (M x N) fp32.
// Which (row, col) of the atom a lane's element e holds is a fixed map per platform (a_row/a_col,
// b_k/b_n, c_row/c_col below); everything else is written against those maps. The softmax of a
// FlashAttention kernel needs two more facts, also kept here:
//   - the lanes that share an accumulator row (row_allreduce_*: 4 lanes on NVIDIA, 16 on AMD);
//   - how P (an accumulator, C layout) becomes the A operand of P·V (p_to_a): on NVIDIA the C
//     layout of two adjacent 16x8 atoms *is* the A layout of one 16x16 atom, so P never leaves
//     registers; on AMD the two layouts are transposes of each other, so P takes a round trip
//     through a 16x16 LDS scratch per wavefront (kPScratchElems).
//
// Moving tiles: load_* read fragments from shared memory (LDS). The plain versions read element
// by element through the maps (any platform; v04 uses them). The *_fast versions use ldmatrix on
// NVIDIA (one instruction loads four 8x8 matrices, 16 bytes per lane) and fall back to the plain
// loads on AMD. async_copy_16 is cp.async on NVIDIA (global -> shared without passing through
// registers, zero-filling out-of-range rows) and an ordinary 16-byte copy on AMD.
//
// AMD paths are compiled (hipcc --offload-arch=gfx90a --offload-arch=gfx940), not run: nothing AMD
// is available to this project. The NVIDIA paths are checked on the H200 by kernels/dev.
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/platform/platform.hpp"

namespace ioattn::kernels::frag {

// ---- atom shape ---------------------------------------------------------------------------------
inline constexpr int kM = 16;
inline constexpr int kK = 16;
#if defined(IOATTN_PLATFORM_NVIDIA)
inline constexpr int kN = 8;
#else
inline constexpr int kN = 16;
#endif
inline constexpr int kAElems = kM * kK / kWarpSize;  // 8 (NVIDIA) / 4 (AMD)
inline constexpr int kBElems = kK * kN / kWarpSize;  // 4 / 4
inline constexpr int kCElems = kM * kN / kWarpSize;  // 4 / 4
// Atoms side by side that cover 16 columns of C (and 16 keys of P): 2 on NVIDIA, 1 on AMD.
inline constexpr int kNPer16 = 16 / kN;
// Distinct accumulator rows one lane holds within an atom: 2 on NVIDIA (rows r and r+8), 4 on AMD.
#if defined(IOATTN_PLATFORM_NVIDIA)
inline constexpr int kCRows = 2;
#else
inline constexpr int kCRows = 4;
#endif
// LDS elements per warp/wavefront that p_to_a needs (0 on NVIDIA: P stays in registers).
#if defined(IOATTN_PLATFORM_NVIDIA)
inline constexpr int kPScratchElems = 0;
#else
inline constexpr int kPScratchElems = kM * 16;
#endif

// ---- element maps -------------------------------------------------------------------------------
// NVIDIA (PTX ISA, "Matrix Fragments for mma.m16n8k16"): group g = lane/4, thread-in-group t = lane%4.
//   A: e in 0..7, register e/2:   row g + 8*((e/2)%2), col 2t + e%2 + 8*(e/4)
//   B: e in 0..3, register e/2:   k   2t + e%2 + 8*(e/2), n g
//   C: e in 0..3:                 row g + 8*(e/2),     col 2t + e%2
// AMD (CDNA3 ISA, MFMA 16x16x16): lane l, e in 0..3:
//   A: row l%16, k 4*(l/16) + e;  B: k 4*(l/16) + e, n l%16;  C: row 4*(l/16) + e, col l%16
#if defined(IOATTN_PLATFORM_NVIDIA)
__device__ inline int a_row(int lane, int e) { return lane / 4 + 8 * ((e / 2) % 2); }
__device__ inline int a_col(int lane, int e) { return 2 * (lane % 4) + e % 2 + 8 * (e / 4); }
__device__ inline int b_k(int lane, int e) { return 2 * (lane % 4) + e % 2 + 8 * (e / 2); }
__device__ inline int b_n(int lane, int /*e*/) { return lane / 4; }
__device__ inline int c_row(int lane, int e) { return lane / 4 + 8 * (e / 2); }
__device__ inline int c_col(int lane, int e) { return 2 * (lane % 4) + e % 2; }
// Which of the lane's kCRows rows element e belongs to.
__device__ constexpr int c_row_slot(int e) { return e / 2; }
#else
__device__ inline int a_row(int lane, int /*e*/) { return lane % 16; }
__device__ inline int a_col(int lane, int e) { return 4 * (lane / 16) + e; }
__device__ inline int b_k(int lane, int e) { return 4 * (lane / 16) + e; }
__device__ inline int b_n(int lane, int /*e*/) { return lane % 16; }
__device__ inline int c_row(int lane, int e) { return 4 * (lane / 16) + e; }
__device__ inline int c_col(int lane, int /*e*/) { return lane % 16; }
__device__ constexpr int c_row_slot(int e) { return e; }
#endif
// The atom row of the lane's row slot s (inverse of c_row_slot).
__device__ inline int c_slot_row(int lane, int s) {
#if defined(IOATTN_PLATFORM_NVIDIA)
  return lane / 4 + 8 * s;
#else
  return 4 * (lane / 16) + s;
#endif
}

// ---- fragments ----------------------------------------------------------------------------------
// 16-bit elements packed in pairs into 32-bit registers (the form both instructions take).
struct FragA { uint32_t r[kAElems / 2]; };
struct FragB { uint32_t r[kBElems / 2]; };
struct FragC { float x[kCElems]; };

__device__ inline void zero(FragC& c) {
#pragma unroll
  for (int e = 0; e < kCElems; ++e) c.x[e] = 0.0f;
}

// Bit-level helpers: a 16-bit element <-> its raw bits.
template <class T>
__device__ inline uint16_t bits_of(T v) { return *reinterpret_cast<const uint16_t*>(&v); }
template <class T>
__device__ inline uint32_t pack2(float lo, float hi) {
  return uint32_t{bits_of(from_float<T>(lo))} | (uint32_t{bits_of(from_float<T>(hi))} << 16);
}
#if defined(IOATTN_PLATFORM_NVIDIA)
// One cvt instruction for two values instead of two.
template <>
__device__ inline uint32_t pack2<fp16_t>(float lo, float hi) {
  __half2 h = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&h);
}
template <>
__device__ inline uint32_t pack2<bf16_t>(float lo, float hi) {
  __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&h);
}
#endif

__device__ inline void set_half(uint32_t& reg, int which, uint16_t bits) {
  reg = which ? ((reg & 0x0000ffffu) | (uint32_t{bits} << 16)) : ((reg & 0xffff0000u) | bits);
}

// ---- the matrix-core instruction: c += a * b ------------------------------------------------------
template <class T>
__device__ inline void mma(FragC& c, const FragA& a, const FragB& b) {
  static_assert(sizeof(T) == 2, "matrix cores take 16-bit operands here (fp16, bf16)");
#if defined(IOATTN_PLATFORM_NVIDIA)
  if constexpr (std::is_same_v<T, fp16_t>) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(c.x[0]), "+f"(c.x[1]), "+f"(c.x[2]), "+f"(c.x[3])
        : "r"(a.r[0]), "r"(a.r[1]), "r"(a.r[2]), "r"(a.r[3]), "r"(b.r[0]), "r"(b.r[1]));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c.x[0]), "+f"(c.x[1]), "+f"(c.x[2]), "+f"(c.x[3])
        : "r"(a.r[0]), "r"(a.r[1]), "r"(a.r[2]), "r"(a.r[3]), "r"(b.r[0]), "r"(b.r[1]));
  }
#else
  typedef float f4 __attribute__((ext_vector_type(4)));
  f4 acc = {c.x[0], c.x[1], c.x[2], c.x[3]};
  if constexpr (std::is_same_v<T, fp16_t>) {
    typedef _Float16 h4 __attribute__((ext_vector_type(4)));
    acc = __builtin_amdgcn_mfma_f32_16x16x16f16(*reinterpret_cast<const h4*>(a.r),
                                                *reinterpret_cast<const h4*>(b.r), acc, 0, 0, 0);
  } else {
    typedef short s4 __attribute__((ext_vector_type(4)));
    acc = __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(*reinterpret_cast<const s4*>(a.r),
                                                    *reinterpret_cast<const s4*>(b.r), acc, 0, 0, 0);
  }
#pragma unroll
  for (int e = 0; e < 4; ++e) c.x[e] = acc[e];
#endif
}

// ---- plain fragment loads from shared memory (every platform) -------------------------------------
// s points at element (0, 0) of a row-major tile with leading dimension ld (elements).

// A(r, c) = s[(row0 + r) * ld + k0 + c]: Q rows as the A operand of S = Q K^T.
template <class T>
__device__ inline FragA load_a(const T* s, int ld, int row0, int k0, int lane) {
  FragA f;
#pragma unroll
  for (int e = 0; e < kAElems; ++e)
    set_half(f.r[e / 2], e % 2, bits_of(s[(row0 + a_row(lane, e)) * ld + k0 + a_col(lane, e)]));
  return f;
}
// B(k, n) = s[(n0 + n) * ld + k0 + k]: K rows (one key per row) as the B operand of Q K^T.
template <class T>
__device__ inline FragB load_b_nk(const T* s, int ld, int n0, int k0, int lane) {
  FragB f;
#pragma unroll
  for (int e = 0; e < kBElems; ++e)
    set_half(f.r[e / 2], e % 2, bits_of(s[(n0 + b_n(lane, e)) * ld + k0 + b_k(lane, e)]));
  return f;
}
// B(k, n) = s[(k0 + k) * ld + n0 + n]: V rows (one key per row) as the B operand of P V.
template <class T>
__device__ inline FragB load_b_kn(const T* s, int ld, int k0, int n0, int lane) {
  FragB f;
#pragma unroll
  for (int e = 0; e < kBElems; ++e)
    set_half(f.r[e / 2], e % 2, bits_of(s[(k0 + b_k(lane, e)) * ld + n0 + b_n(lane, e)]));
  return f;
}

// ---- fast fragment loads: ldmatrix on NVIDIA, plain loads on AMD ------------------------------------
#if defined(IOATTN_PLATFORM_NVIDIA)
__device__ inline uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ inline void ldmatrix_x4(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}
__device__ inline void ldmatrix_x4_trans(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}
#endif

// One A fragment (rows row0..row0+15, k0..k0+15). Lane l points ldmatrix at matrix l/8, row l%8:
// matrices (rows 0-7, k 0-7), (rows 8-15, k 0-7), (rows 0-7, k 8-15), (rows 8-15, k 8-15) are
// exactly registers a0..a3 of the mma A operand.
template <class T>
__device__ inline FragA load_a_fast(const T* s, int ld, int row0, int k0, int lane) {
#if defined(IOATTN_PLATFORM_NVIDIA)
  FragA f;
  ldmatrix_x4(f.r, s + (row0 + lane % 8 + 8 * ((lane / 8) % 2)) * ld + k0 + 8 * (lane / 16));
  return f;
#else
  return load_a(s, ld, row0, k0, lane);
#endif
}
// The B fragments of 16 keys (n0..n0+15) x 16 k from K rows: kNPer16 fragments.
// NVIDIA: matrices (keys 0-7, k 0-7), (keys 0-7, k 8-15), (keys 8-15, k 0-7), (keys 8-15, k 8-15).
template <class T>
__device__ inline void load_b_nk_fast(FragB (&f)[kNPer16], const T* s, int ld, int n0, int k0, int lane) {
#if defined(IOATTN_PLATFORM_NVIDIA)
  uint32_t r[4];
  ldmatrix_x4(r, s + (n0 + lane % 8 + 8 * (lane / 16)) * ld + k0 + 8 * ((lane / 8) % 2));
  f[0].r[0] = r[0]; f[0].r[1] = r[1]; f[1].r[0] = r[2]; f[1].r[1] = r[3];
#else
  f[0] = load_b_nk(s, ld, n0, k0, lane);
#endif
}
// The B fragments of 16 keys (k0..k0+15) x 16 columns (n0..n0+15) from V rows: kNPer16 fragments.
// NVIDIA: ldmatrix .trans of (keys 0-7, d 0-7), (keys 8-15, d 0-7), (keys 0-7, d 8-15), (keys 8-15, d 8-15).
template <class T>
__device__ inline void load_b_kn_fast(FragB (&f)[kNPer16], const T* s, int ld, int k0, int n0, int lane) {
#if defined(IOATTN_PLATFORM_NVIDIA)
  uint32_t r[4];
  ldmatrix_x4_trans(r, s + (k0 + lane % 8 + 8 * ((lane / 8) % 2)) * ld + n0 + 8 * (lane / 16));
  f[0].r[0] = r[0]; f[0].r[1] = r[1]; f[1].r[0] = r[2]; f[1].r[1] = r[3];
#else
  f[0] = load_b_kn(s, ld, k0, n0, lane);
#endif
}

// ---- P (accumulator layout) -> A operand ----------------------------------------------------------
// p[0..kNPer16) are the accumulator atoms of 16 consecutive keys of P (16 rows x 16 keys).
// NVIDIA: registers only (c0c1 of atom 0, c2c3 of atom 0, c0c1 of atom 1, c2c3 of atom 1).
// AMD: through `scratch` (kPScratchElems elements private to this wavefront).
template <class T>
__device__ inline FragA p_to_a(const FragC (&p)[kNPer16], T* scratch, int lane) {
  FragA a;
#if defined(IOATTN_PLATFORM_NVIDIA)
  (void)scratch;
  (void)lane;
  a.r[0] = pack2<T>(p[0].x[0], p[0].x[1]);
  a.r[1] = pack2<T>(p[0].x[2], p[0].x[3]);
  a.r[2] = pack2<T>(p[1].x[0], p[1].x[1]);
  a.r[3] = pack2<T>(p[1].x[2], p[1].x[3]);
#else
#pragma unroll
  for (int e = 0; e < kCElems; ++e) scratch[c_row(lane, e) * 16 + c_col(lane, e)] = from_float<T>(p[0].x[e]);
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "wavefront");
  __builtin_amdgcn_wave_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "wavefront");
  a = load_a(scratch, 16, 0, 0, lane);
  __builtin_amdgcn_wave_barrier();  // every lane has read before the next call overwrites
#endif
  return a;
}

// ---- reductions over the lanes that share an accumulator row --------------------------------------
__device__ inline float shfl_xor(float v, int m) {
#if defined(IOATTN_PLATFORM_NVIDIA)
  return __shfl_xor_sync(0xffffffffu, v, m);
#else
  return __shfl_xor(v, m);
#endif
}
// NVIDIA: the 4 lanes of a quad (xor 1, 2); AMD: the 16 lanes of a row group (xor 1, 2, 4, 8).
inline constexpr int kRowLanes = kWarpSize == 32 ? 4 : 16;
__device__ inline float row_allreduce_max(float v) {
#pragma unroll
  for (int m = 1; m < kRowLanes; m *= 2) v = fmaxf(v, shfl_xor(v, m));
  return v;
}
__device__ inline float row_allreduce_sum(float v) {
#pragma unroll
  for (int m = 1; m < kRowLanes; m *= 2) v += shfl_xor(v, m);
  return v;
}

// True on every lane when `pred` holds on any lane of the warp/wavefront (a warp-uniform branch).
__device__ inline bool warp_any(bool pred) {
#if defined(IOATTN_PLATFORM_NVIDIA)
  return __any_sync(0xffffffffu, pred);
#else
  return __any(pred);
#endif
}

// warp_sync() (order shared-memory accesses within one warp/wavefront) is platform.hpp's.

// 2^x, the one transcendental of the softmax (log2(e) is folded into the score scale).
__device__ inline float fast_exp2(float x) {
#if defined(IOATTN_PLATFORM_NVIDIA)
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
#else
  return exp2f(x);
#endif
}

// ---- global -> shared copies ----------------------------------------------------------------------
// Copy 16 bytes from global `src` to shared `dst`, or write 16 zero bytes when !valid (rows past
// seqlen). NVIDIA: cp.async.cg (bypasses L1 and registers; completes at async_wait); AMD: plain.
__device__ inline void async_copy_16(void* dst, const void* src, bool valid) {
#if defined(IOATTN_PLATFORM_NVIDIA)
  const int src_bytes = valid ? 16 : 0;  // 0: nothing is read, dst is zero-filled
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src),
               "r"(src_bytes));
#else
  *reinterpret_cast<uint4*>(dst) = valid ? *reinterpret_cast<const uint4*>(src) : uint4{0, 0, 0, 0};
#endif
}
// Close the group of copies issued since the last commit.
__device__ inline void async_commit() {
#if defined(IOATTN_PLATFORM_NVIDIA)
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}
// Wait until at most `Pending` committed groups are still in flight (this thread's copies only:
// follow with __syncthreads() before reading what other threads copied).
template <int Pending>
__device__ inline void async_wait() {
#if defined(IOATTN_PLATFORM_NVIDIA)
  asm volatile("cp.async.wait_group %0;\n" ::"n"(Pending));
#endif
}

}  // namespace ioattn::kernels::frag

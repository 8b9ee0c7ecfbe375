// kernels/platform/wgmma.hpp: Hopper's warpgroup MMA (wgmma.mma_async), NVIDIA sm_90a only.
//
// A warpgroup (4 consecutive warps, 128 threads) issues one wgmma together; A comes from shared
// memory (a descriptor) or registers, B always from shared memory, the fp32 accumulator D lives in
// registers: for m64nN each warp w holds rows 16w..16w+15 in 16x8 atoms laid out exactly like
// mma.sync's C (frag::c_row / c_col), 4 registers per atom, atom t = columns 8t..8t+7. A in
// registers uses mma.sync's A layout per warp, so an S accumulator turns into P's A operand with
// frag::pack2 alone.
//
// Protocol: fence_regs (keep the compiler's hands off the accumulators) -> fence() -> wgmma ... ->
// commit() -> wait_all() (or wait<n>(): the n newest groups may still run) -> fence_regs. Shared
// data written by the generic proxy (cp.async, st.shared) needs fence_proxy_async() in the writing
// threads before the barrier that precedes the wgmma. Descriptors (PTX ISA 9.7.15.5.1.2): start
// address, leading byte offset (LBO), stride byte offset (SBO), all >> 4, layout 1 = 128-byte
// swizzle in bits 62-63.
//   K-major, 128B swizzle: LBO unused (1), SBO = 1024 (8 rows x 128 bytes).
//   N-major, 128B swizzle: LBO = from one 8-row group (along K) to the next, SBO = from one
//   64-element (128-byte) panel along N to the next.
// The instructions are compiled only in an sm_90a device pass (__CUDA_ARCH_FEAT_SM90_ALL).
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/platform/platform.hpp"

#if defined(IOATTN_PLATFORM_NVIDIA)
namespace ioattn::kernels::wg {

__device__ inline uint64_t desc(uint32_t smem_addr, uint32_t lbo, uint32_t sbo) {
  return static_cast<uint64_t>((smem_addr & 0x3FFFF) >> 4) | (static_cast<uint64_t>((lbo & 0x3FFFF) >> 4) << 16) |
         (static_cast<uint64_t>((sbo & 0x3FFFF) >> 4) << 32) | (uint64_t{1} << 62);
}

// An empty asm that "modifies" every register of an accumulator: the compiler may not move reads
// or writes of it across the asynchronous MMA that owns it.
template <int N>
__device__ inline void fence_regs(float (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(r[i])::"memory");
}

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
__device__ inline void fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ inline void commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
__device__ inline void wait_all() { asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory"); }
// Wait until at most kPending of this thread's most recent wgmma groups are still in flight (the
// older ones, in commit order, are complete).
template <int kPending>
__device__ inline void wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kPending) : "memory");
}
__device__ inline void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

// D (64 x 64) (+)= A (64 x 16, shared, K-major) * B (16 x 64; shared, 64 rows of K, K-major)
template <class T>
__device__ inline void wgmma_ss_n64(float (&d)[32], uint64_t desc_a, uint64_t desc_b, int accumulate) {
#define IOATTN_WGMMA_SS(TY)                                                                        \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"                              \
               "wgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY " {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, %32, %33, p, 1, 1, 0, 0;\n}\n" \
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])                                                                          \
               : "l"(desc_a), "l"(desc_b), "r"(accumulate))
  if constexpr (std::is_same_v<T, fp16_t>) IOATTN_WGMMA_SS("f16");
  else IOATTN_WGMMA_SS("bf16");
#undef IOATTN_WGMMA_SS
}

// D (64 x 112) (+)= A (64 x 16, shared, K-major) * B (16 x 112; shared, 112 rows of K, K-major): a
// 112-key tile's S in one instruction (A read once per k-step, not once per chunk).
template <class T>
__device__ inline void wgmma_ss_n112(float (&d)[56], uint64_t desc_a, uint64_t desc_b, int accumulate) {
#define IOATTN_WGMMA_SS(TY)                                                                        \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %58, 0;\n"                              \
               "wgmma.mma_async.sync.aligned.m64n112k16.f32." TY "." TY " {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55}, %56, %57, p, 1, 1, 0, 0;\n}\n" \
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]) \
               : "l"(desc_a), "l"(desc_b), "r"(accumulate))
  if constexpr (std::is_same_v<T, fp16_t>) IOATTN_WGMMA_SS("f16");
  else IOATTN_WGMMA_SS("bf16");
#undef IOATTN_WGMMA_SS
}

// D (64 x 176) (+)= A (64 x 16, shared, K-major) * B (16 x 176; shared, 176 rows of K, K-major): a
// 176-key tile's S in one instruction.
template <class T>
__device__ inline void wgmma_ss_n176(float (&d)[88], uint64_t desc_a, uint64_t desc_b, int accumulate) {
#define IOATTN_WGMMA_SS(TY)                                                                        \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %90, 0;\n"                              \
               "wgmma.mma_async.sync.aligned.m64n176k16.f32." TY "." TY " {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,%80,%81,%82,%83,%84,%85,%86,%87}, %88, %89, p, 1, 1, 0, 0;\n}\n" \
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]) \
               : "l"(desc_a), "l"(desc_b), "r"(accumulate))
  if constexpr (std::is_same_v<T, fp16_t>) IOATTN_WGMMA_SS("f16");
  else IOATTN_WGMMA_SS("bf16");
#undef IOATTN_WGMMA_SS
}

// D (64 x 64) (+)= A (64 x 16, registers: the mma.sync A fragment of each warp's 16 rows)
//                   * B (16 x 64, shared, N-major: imm-trans-b = 1)
template <class T>
__device__ inline void wgmma_rs_n64(float (&d)[32], const uint32_t (&a)[4], uint64_t desc_b, int accumulate) {
#define IOATTN_WGMMA_RS(TY)                                                                        \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"                              \
               "wgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY " {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, {%32,%33,%34,%35}, %36, p, 1, 1, 1;\n}\n" \
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])                                                                          \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(accumulate))
  if constexpr (std::is_same_v<T, fp16_t>) IOATTN_WGMMA_RS("f16");
  else IOATTN_WGMMA_RS("bf16");
#undef IOATTN_WGMMA_RS
}

// D (64 x 128) (+)= A (64 x 16, shared, K-major) * B (16 x 128; shared, 128 rows of K, K-major)
template <class T>
__device__ inline void wgmma_ss_n128(float (&d)[64], uint64_t desc_a, uint64_t desc_b, int accumulate) {
#define IOATTN_WGMMA_SS(TY)                                                                        \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"                              \
               "wgmma.mma_async.sync.aligned.m64n128k16.f32." TY "." TY " {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, %64, %65, p, 1, 1, 0, 0;\n}\n" \
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])                                                                          \
               : "l"(desc_a), "l"(desc_b), "r"(accumulate))
  if constexpr (std::is_same_v<T, fp16_t>) IOATTN_WGMMA_SS("f16");
  else IOATTN_WGMMA_SS("bf16");
#undef IOATTN_WGMMA_SS
}

// D (64 x 192) (+)= A (64 x 16, shared, K-major) * B (16 x 192; shared, 192 rows of K, K-major)
template <class T>
__device__ inline void wgmma_ss_n192(float (&d)[96], uint64_t desc_a, uint64_t desc_b, int accumulate) {
#define IOATTN_WGMMA_SS(TY)                                                                        \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %98, 0;\n"                              \
               "wgmma.mma_async.sync.aligned.m64n192k16.f32." TY "." TY " {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95}, %96, %97, p, 1, 1, 0, 0;\n}\n" \
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]) \
               : "l"(desc_a), "l"(desc_b), "r"(accumulate))
  if constexpr (std::is_same_v<T, fp16_t>) IOATTN_WGMMA_SS("f16");
  else IOATTN_WGMMA_SS("bf16");
#undef IOATTN_WGMMA_SS
}

// D (64 x 128) (+)= A (64 x 16, registers: the mma.sync A fragment of each warp's 16 rows)
//                   * B (16 x 128, shared, N-major: imm-trans-b = 1)
template <class T>
__device__ inline void wgmma_rs_n128(float (&d)[64], const uint32_t (&a)[4], uint64_t desc_b, int accumulate) {
#define IOATTN_WGMMA_RS(TY)                                                                        \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"                              \
               "wgmma.mma_async.sync.aligned.m64n128k16.f32." TY "." TY " {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, {%64,%65,%66,%67}, %68, p, 1, 1, 1;\n}\n" \
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])                                                                          \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(accumulate))
  if constexpr (std::is_same_v<T, fp16_t>) IOATTN_WGMMA_RS("f16");
  else IOATTN_WGMMA_RS("bf16");
#undef IOATTN_WGMMA_RS
}

// D (64 x N) (+)= A (64 x 16, shared, K-major) * B (16 x N; shared, N rows of K, K-major) as one
// instruction for the widths the kernels use (wgmma takes any N that is a multiple of 8 up to 256;
// one instruction reads A once, N split into chunks reads it once per chunk).
template <class T, int N>
__device__ inline void wgmma_ss(float (&d)[N / 2], uint64_t desc_a, uint64_t desc_b, int accumulate) {
  static_assert(N == 64 || N == 112 || N == 128 || N == 176 || N == 192, "wgmma_ss: N in {64, 112, 128, 176, 192}");
  if constexpr (N == 64) wgmma_ss_n64<T>(d, desc_a, desc_b, accumulate);
  else if constexpr (N == 112) wgmma_ss_n112<T>(d, desc_a, desc_b, accumulate);
  else if constexpr (N == 128) wgmma_ss_n128<T>(d, desc_a, desc_b, accumulate);
  else if constexpr (N == 176) wgmma_ss_n176<T>(d, desc_a, desc_b, accumulate);
  else wgmma_ss_n192<T>(d, desc_a, desc_b, accumulate);
}

#endif  // __CUDA_ARCH_FEAT_SM90_ALL

}  // namespace ioattn::kernels::wg
#endif  // IOATTN_PLATFORM_NVIDIA

// kernels/dev/fp8_mma_probe.cu: one wgmma.m64n16k32.f32.e4m3.e4m3 on the GPU against the FP8
// tensor-core model (reference/fp8_mma_model.hpp), bit for bit: the direct test of the model that
// fp8_v09_emulate.cpp tests only through a whole kernel's errors.
//
// Per trial, one warpgroup issues on random A (64 x 64 e4m3, K-major, 64-byte swizzle as v09 at d 64)
// and B (16 x 64):
//   D1 = A[:, 0:32] B[:, 0:32]^T             (fresh accumulator: scale-d = 0)
//   D2 = D1 + A[:, 32:64] B[:, 32:64]^T      (the second k32 slice, C = the GPU's D1)
//   D3 = C + A[:, 0:32] B[:, 0:32]^T         (C: random fp32 values of wide range, low bits set)
// and the host compares every element with fp8_mma_step (for D2 with C = the GPU's own D1, so each
// comparison is one instruction). Inputs: a third of the trials draw every finite e4m3 code
// (products from 2^-18 to 2^17: alignment truncation everywhere), a third values 1..1.875 x 2^[-3, 3]
// of random sign (cancellation, carries into a new leading bit), a third a mix with zeros and
// subnormals. Also counted: how often exact fp32 accumulation (the exact sum rounded once to fp32)
// differs from the GPU, so a pass is not a pass of a test that cannot tell the two apart.
// Output: per result kind, mismatches / elements and fp32-differs / elements, the first mismatches
// with their inputs' row and column; exit 0 when nothing mismatches, 1 otherwise, 2 without a GPU.
//
// Build and run on the H200 (from the repository root; header-only host part, no library):
//   nvcc -std=c++20 -O2 --expt-relaxed-constexpr -gencode=arch=compute_90a,code=sm_90a -I. -Iinclude -Ireference
//        -I/usr/include/eigen3 kernels/dev/fp8_mma_probe.cu -o build-gpu/fp8_mma_probe     (one line)
//   build-gpu/fp8_mma_probe [trials=300]
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <random>
#include <span>
#include <vector>

#include <cuda_runtime.h>

#include "fp8_mma_model.hpp"
#include "ioattn/fp8.hpp"
#include "kernels/platform/fragment.hpp"
#include "kernels/platform/wgmma.hpp"
#include "kernels/platform/wgmma_fp8.hpp"

namespace {

constexpr int kM = 64, kN = 16, kK = 64;  // A (kM, kK), B (kN, kK), bytes; D (kM, kN)

__global__ void __launch_bounds__(128) fp8_mma_probe_kernel(const uint8_t* g_A, const uint8_t* g_B, const float* g_C,
                                                            float* g_D, int* g_ran) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using namespace ioattn::kernels;
  __shared__ alignas(1024) uint8_t s_A[kM * kK];  // 64-byte swizzle: chunk c of row r at c ^ ((r / 2) % 4)
  __shared__ alignas(1024) uint8_t s_B[kN * kK];
  const int tid = threadIdx.x;
  for (int i = tid; i < kM * 4; i += 128) {
    const int r = i / 4, c = i % 4;
    *reinterpret_cast<uint4*>(s_A + r * kK + ((c ^ ((r / 2) % 4)) * 16)) = *reinterpret_cast<const uint4*>(g_A + r * kK + c * 16);
  }
  for (int i = tid; i < kN * 4; i += 128) {
    const int r = i / 4, c = i % 4;
    *reinterpret_cast<uint4*>(s_B + r * kK + ((c ^ ((r / 2) % 4)) * 16)) = *reinterpret_cast<const uint4*>(g_B + r * kK + c * 16);
  }
  wg::fence_proxy_async();
  __syncthreads();
  const uint32_t a0 = frag::smem_addr(s_A), b0 = frag::smem_addr(s_B);
  // Accumulator layout (wgmma.hpp): warp w rows 16 w .. 16 w + 15; register x of the thread (g, t):
  // row 16 w + g + 8 ((x % 4) / 2), column 8 (x / 4) + 2 t + x % 2.
  const int w = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
  auto at = [&](int x) { return (16 * w + g + 8 * ((x % 4) / 2)) * kN + 8 * (x / 4) + 2 * t + x % 2; };
  float d[8];
  auto mma = [&](uint32_t koff, int accumulate) {
    wg::fence_regs(d);
    wg::fence();
    wg8::wgmma_ss_n16(d, wg8::desc<64>(a0 + koff), wg8::desc<64>(b0 + koff), accumulate);
    wg::commit();
    wg::wait_all();
    wg::fence_regs(d);
  };
  for (int x = 0; x < 8; ++x) d[x] = 0.0f;
  mma(0, 0);
  for (int x = 0; x < 8; ++x) g_D[at(x)] = d[x];
  mma(32, 1);
  for (int x = 0; x < 8; ++x) g_D[kM * kN + at(x)] = d[x];
  for (int x = 0; x < 8; ++x) d[x] = g_C[at(x)];
  mma(0, 1);
  for (int x = 0; x < 8; ++x) g_D[2 * kM * kN + at(x)] = d[x];
  if (tid == 0) *g_ran = 1;
#else
  (void)g_A, (void)g_B, (void)g_C, (void)g_D, (void)g_ran;
#endif
}

bool ok(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  std::fprintf(stderr, "fp8_mma_probe: %s: %s\n", what, cudaGetErrorString(e));
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace ioattn;
  const int trials = argc > 1 ? std::atoi(argv[1]) : 300;
  if (trials < 1) {
    std::fprintf(stderr, "usage: fp8_mma_probe [trials >= 1]\n");
    return 2;
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "fp8_mma_probe: no CUDA device\n");
    return 2;
  }
  uint8_t *d_A, *d_B;
  float *d_C, *d_D;
  int* d_ran;
  if (!ok(cudaMalloc(&d_A, kM * kK), "malloc") || !ok(cudaMalloc(&d_B, kN * kK), "malloc") ||
      !ok(cudaMalloc(&d_C, kM * kN * 4), "malloc") || !ok(cudaMalloc(&d_D, 3 * kM * kN * 4), "malloc") ||
      !ok(cudaMalloc(&d_ran, 4), "malloc"))
    return 2;
  std::mt19937 gen(20261201);
  std::vector<uint8_t> A(kM * kK), B(kN * kK);
  std::vector<float> C(kM * kN), D(3 * kM * kN);
  auto code_of = [&](int kind) -> uint8_t {
    if (kind == 0) {  // any finite code
      uint8_t c;
      do c = static_cast<uint8_t>(gen() & 0xFF);
      while ((c & 0x7F) == 0x7F);
      return c;
    }
    const uint8_t sign = (gen() & 1) ? 0x80 : 0x00;
    if (kind == 1) return sign | static_cast<uint8_t>(((4 + gen() % 7) << 3) | (gen() % 8));  // 2^[-3, 3] x 1.xxx
    const unsigned r = gen() % 8;  // mix: zeros, subnormals, normals of a moderate range
    if (r == 0) return sign;
    if (r == 1) return sign | static_cast<uint8_t>(1 + gen() % 7);
    return sign | static_cast<uint8_t>(((1 + gen() % 12) << 3) | (gen() % 8));
  };
  const char* names[3] = {"D1 = A B (fresh)", "D2 = D1 + A' B' (second k32)", "D3 = C + A B"};
  long mismatches[3] = {}, fp32_differs[3] = {}, elements[3] = {};
  int shown = 0;
  for (int trial = 0; trial < trials; ++trial) {
    const int kind = trial % 3;
    for (auto& c : A) c = code_of(kind);
    for (auto& c : B) c = code_of(kind);
    std::uniform_real_distribution<float> u(1.0f, 2.0f);
    for (auto& c : C) c = (gen() % 8 == 0) ? 0.0f : ((gen() & 1) ? -1.0f : 1.0f) * std::ldexp(u(gen), int(gen() % 31) - 12);
    if (!ok(cudaMemcpy(d_A, A.data(), A.size(), cudaMemcpyHostToDevice), "copy") ||
        !ok(cudaMemcpy(d_B, B.data(), B.size(), cudaMemcpyHostToDevice), "copy") ||
        !ok(cudaMemcpy(d_C, C.data(), C.size() * 4, cudaMemcpyHostToDevice), "copy") ||
        !ok(cudaMemset(d_ran, 0, 4), "memset"))
      return 2;
    fp8_mma_probe_kernel<<<1, 128>>>(d_A, d_B, d_C, d_D, d_ran);
    int ran = 0;
    if (!ok(cudaGetLastError(), "launch") || !ok(cudaDeviceSynchronize(), "kernel") ||
        !ok(cudaMemcpy(D.data(), d_D, D.size() * 4, cudaMemcpyDeviceToHost), "copy") ||
        !ok(cudaMemcpy(&ran, d_ran, 4, cudaMemcpyDeviceToHost), "copy"))
      return 2;
    if (!ran) {
      std::fprintf(stderr, "fp8_mma_probe: the kernel has no sm_90a code (build with -gencode=arch=compute_90a,code=sm_90a)\n");
      return 2;
    }
    for (int m = 0; m < kM; ++m)
      for (int n = 0; n < kN; ++n) {
        std::vector<float> a(kK), b(kK);
        for (int k = 0; k < kK; ++k)
          a[k] = fp8_decode(A[m * kK + k], Fp8Format::e4m3), b[k] = fp8_decode(B[n * kK + k], Fp8Format::e4m3);
        const std::span<const float> a0(a.data(), 32), a1(a.data() + 32, 32), b0(b.data(), 32), b1(b.data() + 32, 32);
        const float gpu[3] = {D[m * kN + n], D[kM * kN + m * kN + n], D[2 * kM * kN + m * kN + n]};
        const std::optional<float> cin[3] = {std::nullopt, gpu[0], C[m * kN + n]};
        for (int r = 0; r < 3; ++r) {
          const auto& aa = r == 1 ? a1 : a0;
          const auto& bb = r == 1 ? b1 : b0;
          const float model = ref::fp8_mma_step(aa, bb, cin[r]);
          double exact = cin[r].value_or(0.0f);
          for (int k = 0; k < 32; ++k) exact += double{aa[k]} * double{bb[k]};  // exact: < 53 bits here
          ++elements[r];
          fp32_differs[r] += static_cast<float>(exact) != gpu[r];
          if (model != gpu[r]) {
            ++mismatches[r];
            if (shown++ < 8)
              std::printf("MISMATCH %s trial %d (inputs %d) row %d col %d: gpu %.9g model %.9g fp32 %.9g C %.9g\n",
                          names[r], trial, kind, m, n, gpu[r], model, static_cast<float>(exact), cin[r].value_or(0.0f));
          }
        }
      }
  }
  bool pass = true;
  for (int r = 0; r < 3; ++r) {
    std::printf("%-30s mismatches vs model %ld / %ld, fp32 accumulation differs from the GPU in %ld / %ld\n", names[r],
                mismatches[r], elements[r], fp32_differs[r], elements[r]);
    pass = pass && mismatches[r] == 0;
  }
  std::printf("%s: reference/fp8_mma_model.hpp %s wgmma.m64n16k32.f32.e4m3.e4m3 on this GPU (%d trials)\n",
              pass ? "PASS" : "FAIL", pass ? "reproduces" : "does NOT reproduce", trials);
  return pass ? 0 : 1;
}

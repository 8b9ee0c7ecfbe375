// kernels/v03_fa2_scalar.hip: FlashAttention-2 loop order, scalar fp32 math. The teaching kernel.
//
// What changed against v02_fa1: the loops are swapped. Each block owns ONE query block Q_i
// (Br rows) for its whole life and walks the K/V blocks j inside it, so
//   - O_i, m_i, l_i live in registers from start to end: no HBM round trip per K/V block;
//   - O_i is normalized once, at the end (diag(l_i)^-1 O_i), not after every block;
//   - the grid is batch x heads_q x Tr query blocks: enough blocks to fill the GPU at any N.
// Per (i, j): stage K_j, V_j (Bc, d) in shared memory, scores S_ij = scale * Q_i K_j^T, the
// online-softmax update (scalar_rows.hpp), then the next j. Tiles outside the mask (causal,
// windows) are skipped whole: only [block_key_begin, block_key_end) is visited.
//
// HBM traffic (simulator strategy `fa2`), e bytes per element, Tr = ceil(Nq / Br):
//   Q read once + O written once : e * 2 * B*Hq*Nq*d
//   K, V read once per Q block   : e * 2 * B*Hq*Tr*Nk*d      (visible tiles only when masked)
//   LSE written once             : 4 * B*Hq*Nq
// The K/V term is what Br trades against shared memory and registers (the block-size study:
// `ioattn run --kernel v03_fa2_scalar --br 32 --bc 64 ...`). On the H200 the 60 MB L2 catches most
// K/V re-reads (the canonical run's ncu.csv: DRAM read / compulsory read about 1.0), so DRAM sees
// less than this count; ncu measures both.
//
// Supports: fp32/fp16/bf16 in (fp32 math), head_dim <= 256 (buckets 32/64/128/256), any Nq/Nk,
// causal, windows, GQA, LSE out; a fully masked row gives O = 0, LSE = -inf.
// Tiles: Br in 1..64 (Br*8 threads), Bc in 1..256; shared memory 4*((Br+Bc)*(d+1) + Bc*d + Br*(Bc+1)).
// S is computed in the reference's fp32 order (scalar_rows.hpp): bit-identical scores, no FMA.
// Measured on the H200 (experiments/results/h200/2026-11-29_4f8a955 and _ca6c74b_ncu;
// bf16, d 128, non-causal, batch x N = 16384):
// 8.3 / 8.4 / 8.4 TFLOP/s at N = 1k / 4k / 16k; DRAM reads 0.75x the compulsory bytes (Q, K, V
// once: the L2 serves every K/V re-read). Block-size sweep: tiles.csv there. Table: kernels/README.md.
// Run: ioattn run --kernel v03_fa2_scalar --seqlen 1024 --heads 16 --head-dim 128 --dtype bf16 --check
#include "kernels/launcher.hpp"
#include "kernels/scalar_rows.hpp"

namespace ioattn::kernels {
namespace {

using namespace scalar;
constexpr int kDefaultBr = 64;
constexpr int kDefaultBc = 64;
constexpr int kMaxThreads = 512;  // __launch_bounds__: <= 128 registers per thread
constexpr int kMaxBr = kMaxThreads / kLanesPerRow;
constexpr int kMaxBc = 256;

template <class T, int kD>
__global__ void __launch_bounds__(kMaxThreads) fa2_scalar_kernel(AttnView a, int br, int bc, const T* __restrict__ g_Q,
                                  const T* __restrict__ g_K, const T* __restrict__ g_V,
                                  T* __restrict__ g_O, float* __restrict__ g_LSE) {
  extern __shared__ float s_mem[];
  const int d = static_cast<int>(a.head_dim);
  const SharedTiles sh = SharedTiles::carve(s_mem, br, bc, d);  // s_Q, s_K, s_V, s_S (scalar_rows.hpp)

  // Which query block: blockIdx.x = (b * Hq + h) * Tr + i_block (blocks of one head are adjacent,
  // so they share K/V in L2).
  const int64_t Tr = (a.seqlen_q + br - 1) / br;
  const int64_t i_block = blockIdx.x % Tr;
  const int64_t h = (blockIdx.x / Tr) % a.heads_q;
  const int64_t b = blockIdx.x / (Tr * a.heads_q);
  const int64_t h_kv = a.kv_head_of(h);
  const int lane = threadIdx.x % kLanesPerRow;
  const int row = threadIdx.x / kLanesPerRow;
  const int64_t i0 = i_block * br;
  const int64_t i1 = i0 + br < a.seqlen_q ? i0 + br : a.seqlen_q;
  const int64_t i = i0 + row;  // this thread's query row
  const bool row_valid = i < a.seqlen_q;
  float* s_Q_row = sh.s_Q + row * (d + 1);
  float* s_S_row = sh.s_S + row * (bc + 1);

  load_q_row(a, g_Q, b, i, h, row_valid, lane, s_Q_row);  // HBM read: Q_i, once
  float r_o[kCols<kD>];
#pragma unroll
  for (int c = 0; c < kCols<kD>; ++c) r_o[c] = 0.f;
  float m_i = -INFINITY, l_i = 0.f;  // running max and running sum of row i

  // Only key blocks that some row of this query block may see.
  const int64_t kb = a.mask.block_key_begin(i0, i1), ke = a.mask.block_key_end(i0, i1);
  for (int64_t j0 = kb; j0 < ke; j0 += bc) {
    __syncthreads();  // every row is done with the previous tile
    load_kv_tile(a, g_K, g_V, b, h_kv, j0, bc, sh.s_K, sh.s_V);  // HBM read: K_j, V_j once per (i, j)
    __syncthreads();
    const float m_tile = tile_scores(a, s_Q_row, sh.s_K, i, j0, bc, lane, s_S_row);
    warp_sync();  // s_S_row complete for every lane of the row
    online_softmax_update<kD>(a, s_S_row, m_tile, sh.s_V, bc, lane, m_i, l_i, r_o);
  }

  if (!row_valid) return;
  const float inv_l = l_i > 0.f ? 1.f / l_i : 0.f;  // fully masked row: O = 0
#pragma unroll
  for (int c = 0; c < kCols<kD>; ++c) {
    const int x = lane + c * kLanesPerRow;
    if (x < d) g_O[a.q_offset(b, i, h) + x] = from_float<T>(r_o[c] * inv_l);  // HBM write: O_i, once
  }
  if (lane == 0) g_LSE[a.lse_offset(b, h, i)] = row_lse(m_i, l_i);  // HBM write: LSE_i
}

int br_of(const KernelOptions& opt) { return opt.br ? opt.br : kDefaultBr; }
int bc_of(const KernelOptions& opt) { return opt.bc ? opt.bc : kDefaultBc; }

}  // namespace

LaunchStatus v03_fa2_scalar_supports(const AttnProblem& p, const KernelOptions& opt) {
  if (auto e = p.validate()) return e;
  if (head_dim_bucket(p.head_dim) == 0)
    return "v03_fa2_scalar: head_dim must be <= 256 (got " + std::to_string(p.head_dim) + ")";
  const int br = br_of(opt), bc = bc_of(opt);
  if (br < 1 || br > kMaxBr)
    return "v03_fa2_scalar: Br must be in 1.." + std::to_string(kMaxBr) + " (Br*8 threads <= 512)";
  if (bc < 1 || bc > kMaxBc) return "v03_fa2_scalar: Bc must be in 1.." + std::to_string(kMaxBc);
  if (opt.splits) return "v03_fa2_scalar takes no --splits";
  const int64_t smem = shared_bytes(br, bc, p.head_dim);
  if (smem > kMaxSharedBytes)
    return "v03_fa2_scalar: tiles need 4*((Br+Bc)*(d+1) + Bc*d + Br*(Bc+1)) = " + std::to_string(smem) +
           " bytes of shared memory, more than the " + std::to_string(kMaxSharedBytes) + " a block may use";
  if (p.batch * p.heads_q * ((p.seqlen_q + br - 1) / br) > 0x7fffffff)
    return "v03_fa2_scalar: batch*heads_q*ceil(seqlen_q/Br) must be < 2^31 blocks";
  return std::nullopt;
}

std::size_t v03_fa2_scalar_workspace_bytes(const AttnProblem&, const KernelOptions&) { return 0; }

namespace {

// The launch path of launch() and config().
LaunchStatus run(const AttnProblem& p, const DeviceTensors& t, const KernelOptions& opt, const Launcher& L) {
  if (auto e = v03_fa2_scalar_supports(p, opt)) return e;
  const AttnView a = AttnView::of(p);
  const int br = br_of(opt), bc = bc_of(opt);
  const int64_t blocks = p.batch * p.heads_q * ((p.seqlen_q + br - 1) / br);
  const int smem = static_cast<int>(shared_bytes(br, bc, p.head_dim));
  const MainKernel main{.br = br, .bc = bc, .stages = 1, .splits = 0, .grid_order = "bh_major"};
  return dispatch_dtype(p.dtype, [&]<class T>() -> LaunchStatus {
    return dispatch_head_dim(p.head_dim, [&]<int kD>() -> LaunchStatus {
      return L.main(main, &fa2_scalar_kernel<T, kD>, dim3(static_cast<unsigned>(blocks)), br * kLanesPerRow, smem,
                    a, br, bc, static_cast<const T*>(t.q), static_cast<const T*>(t.k), static_cast<const T*>(t.v),
                    static_cast<T*>(t.o), t.lse);
    });
  });
}

}  // namespace

LaunchStatus v03_fa2_scalar_launch(const AttnProblem& p, const DeviceTensors& t, const KernelOptions& opt,
                                   void*, void* stream) {
  return run(p, t, opt, Launcher::enqueue(stream));
}

LaunchStatus v03_fa2_scalar_config(const AttnProblem& p, const KernelOptions& opt, LaunchConfig& out) {
  return describe_launch(out, [&](const Launcher& L) { return run(p, {}, opt, L); });
}

}  // namespace ioattn::kernels

// kernels/v02_fa1.hip: FlashAttention-1 loop order (Dao et al. 2022, Algorithm 1), scalar fp32 math.
//
// What changed against v01_naive: S and P never reach HBM. Keys and values are walked in blocks
// K_j, V_j (Bc rows, staged in shared memory) and the softmax is computed online: each query row
// keeps a running max m_i and sum l_i and rescales its partial output when the max grows.
// The loop order is FA1's: K/V blocks OUTER, query blocks INNER. So a query block's state
// (O_i, m_i, l_i) cannot stay on chip between two visits: for every (j, i) it is read from HBM,
// updated and written back (here O_i is kept unnormalized in an fp32 workspace, FA1 normalizes
// each time; same traffic, no repeated rounding to the input dtype). Q_i is re-read per (j, i) too.
//
// Parallelism: FA1 parallelized over batch x heads only. That leaves an H200 with 16 blocks at
// batch*heads = 16; here the query blocks of a head are split into chunks of kChunk query blocks,
// and the grid is batch x heads_q x chunks, each chunk running the FA1 loop order over its own
// query blocks (the traffic per query block is the same as one block per head).
//
// HBM traffic (simulator strategy `fa1`), e bytes per input element, Tc = ceil(Nk / Bc),
// chunks = ceil(Tr / kChunk):
//   K, V read once per chunk          : e * 2 * B*Hq*chunks*Nk*d
//   Q_i read per (i, j)               : e * B*Hq*Nq*d*Tc
//   O_i (fp32), m_i, l_i read+written per (i, j) : 2 * 4 * B*Hq*Nq*(d + 2)*Tc   <- FA1's extra term
//   O written once, LSE written once  : e * B*Hq*Nq*d + 4 * B*Hq*Nq
// (visible tiles only when masked). v03 removes the Tc factor on Q, O, m, l.
//
// Supports: fp32/fp16/bf16 in, head_dim <= 256, any Nq/Nk, causal, windows, GQA, LSE out; a fully
// masked row gives O = 0, LSE = -inf. Tiles: Br in 1..64, Bc in 1..256.
// Workspace: fp32 O accumulator, m and l: 4*B*Hq*Nq*(d + 2) bytes.
// Measured on the H200 (experiments/results/h200/2026-11-29_4f8a955 and _ca6c74b_ncu;
// bf16, d 128, non-causal, batch x N = 16384):
// 7.3 / 7.4 TFLOP/s at N = 1k / 4k; DRAM reads 11x / 41x / 144x the compulsory bytes at 1k / 4k /
// 16k: O, m, l re-read per K/V block, growing with Tc. Table: kernels/README.md.
// Run: ioattn run --kernel v02_fa1 --seqlen 1024 --heads 16 --head-dim 128 --dtype bf16 --check
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
constexpr int kChunk = 8;  // query blocks per thread block

template <class T, int kD>
__global__ void __launch_bounds__(kMaxThreads) fa1_kernel(AttnView a, int br, int bc, const T* __restrict__ g_Q, const T* __restrict__ g_K,
                           const T* __restrict__ g_V, T* __restrict__ g_O, float* __restrict__ g_LSE,
                           float* __restrict__ g_Oacc, float* __restrict__ g_m, float* __restrict__ g_l) {
  extern __shared__ float s_mem[];
  const int d = static_cast<int>(a.head_dim);
  const SharedTiles sh = SharedTiles::carve(s_mem, br, bc, d);  // s_Q, s_K, s_V, s_S (scalar_rows.hpp)

  // blockIdx.x = (b * Hq + h) * chunks + chunk; the chunk owns query blocks [ib0, ib1).
  const int64_t Tr = (a.seqlen_q + br - 1) / br;
  const int64_t chunks = (Tr + kChunk - 1) / kChunk;
  const int64_t chunk = blockIdx.x % chunks;
  const int64_t h = (blockIdx.x / chunks) % a.heads_q;
  const int64_t b = blockIdx.x / (chunks * a.heads_q);
  const int64_t h_kv = a.kv_head_of(h);
  const int64_t ib0 = chunk * kChunk, ib1 = ib0 + kChunk < Tr ? ib0 + kChunk : Tr;
  const int lane = threadIdx.x % kLanesPerRow;
  const int row = threadIdx.x / kLanesPerRow;
  float* s_Q_row = sh.s_Q + row * (d + 1);
  float* s_S_row = sh.s_S + row * (bc + 1);
  // Row r of query block ib: its index, its fp32 state in the workspace (same layout as O / LSE).
  auto row_of = [&](int64_t ib) { return ib * br + row; };

  // Initialize O_acc = 0, m = -inf, l = 0 for the chunk's rows (the workspace arrives NaN-poisoned).
  for (int64_t ib = ib0; ib < ib1; ++ib) {
    const int64_t i = row_of(ib);
    if (i >= a.seqlen_q) continue;
    for (int x = lane; x < d; x += kLanesPerRow) g_Oacc[a.q_offset(b, i, h) + x] = 0.f;
    if (lane == 0) { g_m[a.lse_offset(b, h, i)] = -INFINITY; g_l[a.lse_offset(b, h, i)] = 0.f; }
  }

  // Keys any row of the chunk may see.
  const int64_t c0 = ib0 * br, c1 = (ib1 * br < a.seqlen_q ? ib1 * br : a.seqlen_q);
  const int64_t kb = a.mask.block_key_begin(c0, c1), ke = a.mask.block_key_end(c0, c1);
  for (int64_t j0 = kb; j0 < ke; j0 += bc) {  // OUTER: K/V blocks
    __syncthreads();
    load_kv_tile(a, g_K, g_V, b, h_kv, j0, bc, sh.s_K, sh.s_V);  // HBM read: K_j, V_j once per (chunk, j)
    __syncthreads();
    for (int64_t ib = ib0; ib < ib1; ++ib) {  // INNER: query blocks
      const int64_t i0 = ib * br, i1 = (i0 + br < a.seqlen_q ? i0 + br : a.seqlen_q);
      // Skip a tile no row of this query block sees (block-uniform: no divergence at barriers).
      if (j0 + bc <= a.mask.block_key_begin(i0, i1) || j0 >= a.mask.block_key_end(i0, i1)) continue;
      const int64_t i = row_of(ib);
      const bool row_valid = i < a.seqlen_q;
      load_q_row(a, g_Q, b, i, h, row_valid, lane, s_Q_row);  // HBM read: Q_i, per (i, j)
      float r_o[kCols<kD>];
      float m_i = -INFINITY, l_i = 0.f;
#pragma unroll
      for (int c = 0; c < kCols<kD>; ++c) {
        const int x = lane + c * kLanesPerRow;
        r_o[c] = (row_valid && x < d) ? g_Oacc[a.q_offset(b, i, h) + x] : 0.f;  // HBM read: O_i, per (i, j)
      }
      if (row_valid) { m_i = g_m[a.lse_offset(b, h, i)]; l_i = g_l[a.lse_offset(b, h, i)]; }  // HBM read: m_i, l_i
      const float m_tile = tile_scores(a, s_Q_row, sh.s_K, i, j0, bc, lane, s_S_row);
      warp_sync();
      online_softmax_update<kD>(a, s_S_row, m_tile, sh.s_V, bc, lane, m_i, l_i, r_o);
      warp_sync();  // s_Q_row and s_S_row are rewritten for the next query block
      if (!row_valid) continue;
#pragma unroll
      for (int c = 0; c < kCols<kD>; ++c) {
        const int x = lane + c * kLanesPerRow;
        if (x < d) g_Oacc[a.q_offset(b, i, h) + x] = r_o[c];  // HBM write: O_i, per (i, j)
      }
      // Every lane read m_i, l_i above before this write: the row's lanes passed warp_sync().
      if (lane == 0) { g_m[a.lse_offset(b, h, i)] = m_i; g_l[a.lse_offset(b, h, i)] = l_i; }  // HBM write
    }
  }

  // Normalize once per row and write O in the input dtype, and LSE.
  for (int64_t ib = ib0; ib < ib1; ++ib) {
    const int64_t i = row_of(ib);
    if (i >= a.seqlen_q) continue;
    const float m_i = g_m[a.lse_offset(b, h, i)], l_i = g_l[a.lse_offset(b, h, i)];
    const float inv_l = l_i > 0.f ? 1.f / l_i : 0.f;  // fully masked row: O = 0
    for (int x = lane; x < d; x += kLanesPerRow)
      g_O[a.q_offset(b, i, h) + x] = from_float<T>(g_Oacc[a.q_offset(b, i, h) + x] * inv_l);
    warp_sync();  // all lanes read m_i, l_i before lane 0 is done with the row
    if (lane == 0) g_LSE[a.lse_offset(b, h, i)] = row_lse(m_i, l_i);
  }
}

int br_of(const KernelOptions& opt) { return opt.br ? opt.br : kDefaultBr; }
int bc_of(const KernelOptions& opt) { return opt.bc ? opt.bc : kDefaultBc; }
int64_t grid_of(const AttnProblem& p, int br) {
  const int64_t Tr = (p.seqlen_q + br - 1) / br;
  return p.batch * p.heads_q * ((Tr + kChunk - 1) / kChunk);
}

}  // namespace

LaunchStatus v02_fa1_supports(const AttnProblem& p, const KernelOptions& opt) {
  if (auto e = p.validate()) return e;
  if (head_dim_bucket(p.head_dim) == 0)
    return "v02_fa1: head_dim must be <= 256 (got " + std::to_string(p.head_dim) + ")";
  const int br = br_of(opt), bc = bc_of(opt);
  if (br < 1 || br > kMaxBr) return "v02_fa1: Br must be in 1.." + std::to_string(kMaxBr) + " (Br*8 threads <= 512)";
  if (bc < 1 || bc > kMaxBc) return "v02_fa1: Bc must be in 1.." + std::to_string(kMaxBc);
  if (opt.splits) return "v02_fa1 takes no --splits";
  const int64_t smem = shared_bytes(br, bc, p.head_dim);
  if (smem > kMaxSharedBytes)
    return "v02_fa1: tiles need 4*((Br+Bc)*(d+1) + Bc*d + Br*(Bc+1)) = " + std::to_string(smem) +
           " bytes of shared memory, more than the " + std::to_string(kMaxSharedBytes) + " a block may use";
  if (grid_of(p, br) > 0x7fffffff) return "v02_fa1: too many blocks (batch*heads_q*chunks >= 2^31)";
  return std::nullopt;
}

std::size_t v02_fa1_workspace_bytes(const AttnProblem& p, const KernelOptions&) {
  return static_cast<std::size_t>(p.q_elems() + 2 * p.lse_elems()) * sizeof(float);
}

namespace {

// The launch path of launch() and config().
LaunchStatus run(const AttnProblem& p, const DeviceTensors& t, const KernelOptions& opt, void* workspace,
                 const Launcher& L) {
  if (auto e = v02_fa1_supports(p, opt)) return e;
  if (workspace == nullptr && !L.describes())
    return "v02_fa1 needs a workspace of workspace_bytes() (O, m, l in HBM)";
  const AttnView a = AttnView::of(p);
  const int br = br_of(opt), bc = bc_of(opt);
  const int smem = static_cast<int>(shared_bytes(br, bc, p.head_dim));
  float* g_Oacc = static_cast<float*>(workspace);             // (B, Nq, Hq, d) like O
  float* g_m = g_Oacc ? g_Oacc + p.q_elems() : nullptr;       // (B, Hq, Nq) like LSE
  float* g_l = g_m ? g_m + p.lse_elems() : nullptr;           // (B, Hq, Nq)
  const MainKernel main{.br = br, .bc = bc, .stages = 1, .splits = 0, .grid_order = "bh_major_chunks"};
  return dispatch_dtype(p.dtype, [&]<class T>() -> LaunchStatus {
    return dispatch_head_dim(p.head_dim, [&]<int kD>() -> LaunchStatus {
      return L.main(main, &fa1_kernel<T, kD>, dim3(static_cast<unsigned>(grid_of(p, br))), br * kLanesPerRow, smem,
                    a, br, bc, static_cast<const T*>(t.q), static_cast<const T*>(t.k), static_cast<const T*>(t.v),
                    static_cast<T*>(t.o), t.lse, g_Oacc, g_m, g_l);
    });
  });
}

}  // namespace

LaunchStatus v02_fa1_launch(const AttnProblem& p, const DeviceTensors& t, const KernelOptions& opt,
                            void* workspace, void* stream) {
  return run(p, t, opt, workspace, Launcher::enqueue(stream));
}

LaunchStatus v02_fa1_config(const AttnProblem& p, const KernelOptions& opt, LaunchConfig& out) {
  return describe_launch(out, [&](const Launcher& L) { return run(p, {}, opt, nullptr, L); });
}

}  // namespace ioattn::kernels

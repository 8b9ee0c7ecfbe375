// kernels/decode_common.hpp: what the split-KV decode rungs share (v07_decode_splitkv on mma.sync /
// MFMA fragments, v07b_decode_wgmma on Hopper's wgmma), besides the combine (splitkv_combine.hpp):
//   - the split heuristic (default_splits) and the GPU it fills (132 SMs, 228 KiB of shared memory);
//   - the 16-byte K/V copy with its L2 prefetch hint (copy_kv_16);
//   - the page-granular row table of a paged cache: one table read per key of a tile, by one
//     thread, into a small shared table that the K and V copies of that key read (paged_tile_row);
//   - the last step of the epilogue when several warps (or warpgroups) of a CTA split the keys of
//     each stage: their partial rows in shared memory, summed by log-sum-exp, written as O and LSE
//     (one split) or as the split's partial O_s, LSE_s (finish_key_split_rows).
//   - the host side: the table of compiled tiles (Config; the first with Br >= the packed rows is
//     taken), the plan (tile, row tiles, splits), the problem constraints both rungs share, the
//     launch of the main kernel plus the combine, and the launch path after supports().
// These were v07's functions, moved here unchanged when v07b arrived (v07's sm_90 cubin, built with
// the flags of kernels/dev/build.sh, is byte-identical before and after the move).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "kernels/attn_view.hpp"
#include "kernels/decode_splits.hpp"
#include "kernels/launch.hpp"
#include "kernels/launcher.hpp"
#include "kernels/layout_rows.hpp"
#include "kernels/platform/fragment.hpp"
#include "kernels/platform/platform.hpp"
#include "kernels/splitkv_combine.hpp"

namespace ioattn::kernels::decode {

// The GPU the split heuristic fills (kSms, kSmemPerSm, kSmemReservedPerCta), ctas_per_sm(), the
// heuristic default_splits() and kMaxSplits: kernels/decode_splits.hpp (host code, which the
// simulator's twin of a decode launch includes too: one function for kernels and model).

// One 16-byte global -> shared copy of K or V (HBM read). NVIDIA: cp.async.cg with an L2 prefetch
// of the whole 256-byte line pair (a key's row of one head is 2 d bytes: d = 128 is 256 bytes,
// whose other chunks the same warp instruction copies); !valid: nothing read, dst zero-filled.
// AMD: the plain copy of frag::async_copy_16.
__device__ inline void copy_kv_16(void* dst, const void* src, bool valid) {
#if defined(IOATTN_PLATFORM_NVIDIA)
  asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16, %2;\n" ::"r"(frag::smem_addr(dst)), "l"(src),
               "r"(valid ? 16 : 0));
#else
  frag::async_copy_16(dst, src, valid);
#endif
}

// Paged: cache row of key k of the sequence (block-table row page_row), 0 for keys >= k_end (never
// read: table slots past the sequence's keys may hold -1). One table read per key of a tile, by
// the thread that owns that key in the row table; the keys of one page read the same entry, so a
// warp's reads of a page are one L1/L2 transaction, and K, V and every chunk of the key's row
// reuse the row from shared memory (before: one table read and division per 16-byte copy, twice).
__device__ inline int32_t paged_tile_row(const int32_t* page_row, int page_size, int k, int k_end) {
  return k < k_end ? static_cast<int32_t>(paged_kv_row(page_row, page_size, k)) : 0;
}

// The last epilogue step of a CTA whose kWN key groups (warps or warpgroups) each saw a share of
// the keys of every stage, for its packed rows [r0, r1) (CTA row r is packed row r0 + r = query
// (r0 + r) / G of head hk * G + (r0 + r) % G). Shared inputs, written and synchronized before:
//   s_m[w * kBr + r]  group w's running max of row r (raw score units; -inf: it saw no key)
//   s_l[w * kBr + r]  group w's row sum, relative to that max
//   s_Ored[(w * kBr + r) * kRedLd + x]  group w's O row, already scaled to the row's max over the
//                     groups (0 for a group that saw no key), fp32
// All kThreads threads, 4 columns each: O = sum_w O_w / sum_w f_w l_w; LSE = scale M + log L.
// splits == 1: O (element type) and LSE out; else the split's normalized partial O_s, LSE_s.
template <class T, int kWN, int kBr, int kD, int kRedLd, int kThreads>
__device__ __forceinline__ void finish_key_split_rows(const AttnView& a, const float* s_Ored, const float* s_m,
                                                      const float* s_l, int tid, int r0, int r1, int G, int64_t hk,
                                                      int64_t b, int split, int splits, float sl2, T* g_O_all,
                                                      float* g_LSE, float* g_Opart, float* g_LSEpart) {
  constexpr int kCols4 = kD / 4;
  for (int c = tid; c < kBr * kCols4; c += kThreads) {
    const int r = c / kCols4, x = (c % kCols4) * 4, R = r0 + r;
    if (R >= r1) continue;  // padding row
    float M = -INFINITY;
#pragma unroll
    for (int w = 0; w < kWN; ++w) M = fmaxf(M, s_m[w * kBr + r]);
    float L = 0.f, acc[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
    for (int w = 0; w < kWN; ++w) {
      const float mw = s_m[w * kBr + r];
      L += mw == -INFINITY ? 0.f : frag::fast_exp2((mw - M) * sl2) * s_l[w * kBr + r];
      const float4 o = *reinterpret_cast<const float4*>(&s_Ored[(w * kBr + r) * kRedLd + x]);
      acc[0] += o.x, acc[1] += o.y, acc[2] += o.z, acc[3] += o.w;
    }
    const float inv = L > 0.f ? 1.f / L : 0.f;  // no key seen: O = 0
    const float lse = L > 0.f ? M * a.scale + logf(L) : -INFINITY;
    const int64_t i = R / G, h = hk * G + R % G;
    if (splits == 1) {
      const uint2 packed = make_uint2(frag::pack2<T>(acc[0] * inv, acc[1] * inv), frag::pack2<T>(acc[2] * inv, acc[3] * inv));
      *reinterpret_cast<uint2*>(g_O_all + a.q_offset(b, i, h) + x) = packed;  // HBM write: O, once
      if (x == 0) g_LSE[a.lse_offset(b, h, i)] = lse;                        // HBM write: LSE
    } else {
      *reinterpret_cast<float4*>(g_Opart + splitkv::o_part_offset(a, split, b, i, h) + x) =
          make_float4(acc[0] * inv, acc[1] * inv, acc[2] * inv, acc[3] * inv);  // HBM write: O_s (fp32)
      if (x == 0) g_LSEpart[splitkv::lse_part_offset(a, split, b, h, i)] = lse;  // HBM write: LSE_s
    }
  }
}



// ---- host: tiles, plan, constraints, launch ------------------------------------------------------
// --splits range of both rungs (0: the heuristic): kMaxSplits, kernels/decode_splits.hpp.
static_assert(kMaxSplits <= splitkv::kMaxSplits, "the combine takes at most splitkv::kMaxSplits splits");

// One compiled tile of a decode rung. launch enqueues (or describes) the main kernel and, with
// S > 1, the combine.
struct Config {
  int d, br, keys, stages;  // head dim, packed rows per CTA, keys per stage, stages
  int ctas_per_sm;          // CTAs one SM holds by shared memory (the split heuristic's slots)
  const char* name;
  LaunchStatus (*launch)(const AttnView&, const PagedKv&, const DeviceTensors&, DType, int splits, int row_tiles,
                         const splitkv::Partials&, const Launcher&);
};

// Per d in ascending Br: the first with Br >= rows is taken, else the last (row tiles).
inline const Config* config_for(std::span<const Config> table, int64_t d, int64_t rows) {
  const Config* last = nullptr;
  for (const Config& c : table) {
    if (c.d != d) continue;
    if (c.br >= rows) return &c;
    last = &c;
  }
  return last;
}

// What the launch path resolves from (problem, options): tile, row tiles, splits.
struct Plan {
  const Config* c = nullptr;
  int64_t row_tiles = 0;
  int64_t splits = 0;
};
inline Plan plan_of(std::span<const Config> table, const AttnProblem& p, const KernelOptions& opt) {
  Plan pl;
  const int64_t rows = p.group_size() * p.seqlen_q;
  pl.c = config_for(table, p.head_dim, rows);
  if (!pl.c) return pl;
  pl.row_tiles = (rows + pl.c->br - 1) / pl.c->br;
  pl.splits = opt.splits > 0 ? opt.splits : default_splits(p, pl.c->keys, pl.c->ctas_per_sm, pl.row_tiles, kMaxSplits);
  return pl;
}

// The problem constraints of both rungs, each refusal one line naming the variant (name).
inline LaunchStatus check_problem(std::string_view name, std::span<const Config> table, const AttnProblem& p,
                                  const KernelOptions& opt) {
  const std::string n(name);
  if (auto e = p.validate()) return e;
  if (p.layout.varlen_q() || p.layout.varlen_k())
    return n + ": packed (varlen) queries or keys are not supported (dense or paged KV only)";
  if (p.dtype == DType::fp32) return n + ": dtype must be fp16 or bf16 (matrix cores take 16-bit inputs)";
  if (p.head_dim != 64 && p.head_dim != 128 && p.head_dim != 256) return n + ": head_dim must be 64, 128 or 256";
  if (opt.br || opt.bc)
    return n + " takes no --br/--bc (its tile follows from the packed rows heads_q/heads_kv * seqlen_q)";
  if (opt.splits < 0 || opt.splits > kMaxSplits)
    return n + ": --splits must be in 1.." + std::to_string(kMaxSplits) + " (0: default)";
  if (p.group_size() * p.seqlen_q > 0x7fffffff)
    return n + ": heads_q/heads_kv * seqlen_q (packed rows per K/V head) must be < 2^31";
  const Plan pl = plan_of(table, p, opt);
  if (p.batch * p.heads_kv * pl.row_tiles * pl.splits > 0x7fffffff)
    return n + ": batch * heads_kv * row tiles * splits must be < 2^31 CTAs";
  return std::nullopt;
}

// The workspace of a problem check_problem accepts: the split partials when S > 1.
inline std::size_t workspace_bytes(std::span<const Config> table, const AttnProblem& p, const KernelOptions& opt) {
  const Plan pl = plan_of(table, p, opt);
  return pl.splits > 1 ? splitkv::Partials::workspace_bytes(p, static_cast<int>(pl.splits)) : 0;
}

// The main kernel of a decode rung (both rungs' kernels take these arguments), then the combine
// when S > 1. Grid: B Hkv S Tr CTAs (grid order kv_splits_rows).
template <class T>
using MainFn = void (*)(AttnView, PagedKv, int, int, const T*, const T*, const T*, T*, float*, float*, float*);
template <class T>
LaunchStatus launch_main_and_combine(const Launcher& L, const MainKernel& main, MainFn<T> kernel, int threads,
                                     int smem, const AttnView& a, const PagedKv& pk, const DeviceTensors& t,
                                     int splits, int row_tiles, const splitkv::Partials& w) {
  const int64_t ctas = a.batch * a.heads_kv * splits * int64_t{row_tiles};
  if (auto st = L.main(main, kernel, dim3(static_cast<unsigned>(ctas)), threads, smem, a, pk, splits, row_tiles,
                       static_cast<const T*>(t.q), static_cast<const T*>(t.k), static_cast<const T*>(t.v),
                       static_cast<T*>(t.o), t.lse, w.o, w.lse))
    return st;
  if (splits == 1) return std::nullopt;  // O and LSE written by the main kernel
  return splitkv::launch_combine<T>(L, a, splits, w, static_cast<T*>(t.o), t.lse);
}

// The launch path of launch() and config() after the variant's supports() accepted the problem:
// the workspace and paged-table checks, then the plan's tile.
inline LaunchStatus launch_plan(std::string_view name, std::span<const Config> table, const AttnProblem& p,
                                const DeviceTensors& t, const KernelOptions& opt, void* workspace, const Launcher& L) {
  const Plan pl = plan_of(table, p, opt);
  const int splits = static_cast<int>(pl.splits);
  if (splits > 1 && workspace == nullptr && !L.describes())
    return std::string(name) + " needs a workspace of workspace_bytes() (the split partials)";
  PagedKv pk;
  if (p.layout.paged()) {
    if (!L.describes() && (t.block_table == nullptr || t.seqused_k == nullptr))
      return std::string(name) + ": a paged KV cache needs the device block_table and seqused_k (DeviceTensors)";
    pk = {t.block_table, t.seqused_k, static_cast<int>(p.layout.page_size), p.layout.max_pages};
  }
  return pl.c->launch(AttnView::of(p), pk, t, p.dtype, splits, static_cast<int>(pl.row_tiles),
                      splitkv::Partials::carve(workspace, p, splits), L);
}

}  // namespace ioattn::kernels::decode

// kernels/design.hpp: each variant's pipeline design (forward and backward ladders), as the simulator's expected time
// models it, keyed by the registry name (registry.cpp IOATTN_LADDER, bwd_registry.cpp).
//
// A design is "instr/overlap/lds" (sim::parse_design, simulator/simulator.hpp):
//   instr    fma (scalar fp32 FMAs), mma_sync, wgmma, mfma: the matrix instruction of the tile loop
//   overlap  none, intra-warpgroup, ping-pong, warp-specialized: how the softmax overlaps the
//            matrix units
//   lds      fragments (conflict-free: ldmatrix, padded or swizzled rows, wgmma descriptors) or
//            scalar (element-wise fragment reads from unpadded rows: bank conflicts)
//   dq=...   (optional, backward) a separate dQ pass with its own tile, grid order and occupancy:
//            dq=ORDER,BRxBC[@CTAS][,d<=D:BRxBC[@CTAS]] (sim::DqPass)
//   walk=up  (optional, forward) the key blocks are walked from the first visible one up (the
//            `for (j = j_first; j < j_last; ++j)` loops of v04-v09; sim::KvWalk), which keeps causal
//            CTAs that share K_j in step in the L2 model
//   rows=R   (optional, forward) each R-row consumer slice of a query tile computes S, the softmax and
//            P V only over the key blocks its own rows see, and a slice whose rows all lie past
//            seqlen_q computes nothing (sim::Design::consumer_rows): the expected time's tile work
//            counts (slice, key block) visits of R x Bc; the K/V loads stay the block's
// Each line restates what the variant's header says it does (the file named in the comment). This is
// the one place the design is written: `ioattn simulate --kernel NAME` and experiments/exp_h200_model
// read it from here. It belongs in the registry line itself (one more IOATTN_LADDER column); it sits
// beside it only because registry.cpp was being changed by other work when the design was added.
// The ctest cli_sim_kernel_designs fails when a registered variant has no line here.
//
// Two launch traits of the decoding kernels sit beside the design (both false unless a line says so;
// `ioattn simulate --kernel NAME` reads them, the design string does not carry them):
//   gqa_packed     one CTA per K/V head holds the rows of all G query heads of its group, so one K/V
//                  load serves them (simulator/layouts.hpp, GQA packing; --gqa-packed for a design
//                  without a variant behind it)
//   decode_splits  the launch picks its split count by the decode heuristic
//                  (kernels/decode_splits.hpp, default_splits) when none is given: the twin takes the
//                  same count from its tile (keys per stage = Bc, packed rows per CTA = Br) and CTAs
//                  per SM (--ctas-per-cu, else the model's occupancy clamped to 1..2 as the kernels
//                  clamp theirs)
#pragma once

#include <string_view>

namespace ioattn::kernels {

struct VariantDesign {
  std::string_view variant;
  std::string_view design;
  bool gqa_packed = false;
  bool decode_splits = false;
};

inline constexpr VariantDesign kVariantDesigns[] = {
    {"v01_naive", "fma/none/fragments"},            // three unfused passes, scalar fp32 math
    {"v02_fa1", "fma/none/fragments"},              // scalar fp32 tile loop
    {"v03_fa2_scalar", "fma/none/fragments"},       // scalar fp32 tile loop
    {"v03b_splitkv_scalar", "fma/none/fragments"},  // scalar fp32 tile loop, split-KV
    {"v04_fa2_mma", "mma_sync/none/scalar/walk=up"},        // mma.sync; element-wise fragment reads, unpadded rows
    {"v05_fa2_fast", "mma_sync/none/fragments/walk=up"},    // mma.sync; ldmatrix from padded rows
    {"v06_fa2_wgmma", "wgmma/intra-warpgroup/fragments/walk=up"},  // wgmma; softmax of S_j under P_{j-1} V_{j-1}
    {"v08_fa3_warpspec", "wgmma/warp-specialized/fragments/walk=up"},  // TMA producer warp, 2 consumer warpgroups in ping-pong, v06's overlap inside each
    // v08 on a persistent grid: the same pipeline per tile; its launch reports the order
    // (persistent_bh_major / persistent_qblock_major_rev, modeled as bh_major / qblock_major_rev: the
    // same waves; persistent_bh_major_rev, masked at short N, as bh_major: the grouping of heads, not
    // the reversal within a head); the overlap of one tile's epilogue with the next tile's loads is
    // not modeled.
    // rows=64 (its header, "Per consumer, not per block"): each consumer warpgroup runs S, softmax
    // and P V only over the key tiles its own 64 rows see (key_tiles of its rows) and passes the
    // block's other key tiles idle; a consumer whose rows all lie past seqlen_q does no matrix work.
    // The block still loads every key tile its rows see (HBM traffic unchanged). v08 computes every
    // key tile of the block for all its rows (no rows part).
    {"v08p_fa3_persistent", "wgmma/warp-specialized/fragments/walk=up/rows=64"},
    // v07: mma.sync decoding kernel (split-KV); its warps issue the cp.async copies of the next K/V
    // stages between tiles, behind one CTA barrier per tile (kv=inline: no producer warp); a paged
    // cache's table is read once per key of a tile into a shared row table (table=tile).
    // Both decoding kernels pack a group's query heads into a CTA's rows (v07's header: packed row
    // R = i * G + g, a CTA per (batch, K/V head, split, row tile)) and take decode::default_splits's
    // count when --splits is 0 (v07's and v07b's headers).
    {"v07_decode_splitkv", "mma_sync/none/fragments/kv=inline/table=tile", /*gqa_packed=*/true,
     /*decode_splits=*/true},
    // v07b: v07's pipeline (cp.async ring issued by the compute warpgroups between tiles, one CTA
    // barrier per tile; the same row table) with both products on wgmma; within a warpgroup the
    // softmax waits for S and P V for the softmax (no overlap; kernels/v07b_decode_wgmma.hip).
    // kv=inline-overlapped: its tile compute runs under its own K/V stream (no exposed share), unlike
    // v07's. Its header's ring: 3 stages of 128 keys at d 128, two of them (128 KiB) in flight while
    // one is consumed, against v07's 96 KiB at one CTA per SM; both products are wgmma.mma_async
    // from shared memory (no ldmatrix or per-atom mma.sync in the issue stream). Nsight Compute of
    // v07b at one CTA per SM (experiments/results/h200/2026-12-01_4eddfc3_ncu_v07b_grid; the
    // decode_ncu block of simulator/README.md) shows it near the copy ceiling on a contiguous cache at
    // every seqlen_q, where v07 at one CTA per SM is not. Which of the two traits hides it is not
    // measured.
    {"v07b_decode_wgmma", "wgmma/none/fragments/kv=inline-overlapped/table=tile", /*gqa_packed=*/true,
     /*decode_splits=*/true},
    {"v09_fp8_wgmma", "wgmma/intra-warpgroup/fragments/vt-pass/walk=up"},  // v06's loop on wgmma e4m3, after its V transpose pass
    // v10: v09's arithmetic (after the same V transpose pass) on v08's pipeline: TMA producer,
    // consumer warpgroups in ping-pong (kernels/v10_fp8_warpspec.hip; timed on the H200 in
    // experiments/results/h200/2026-12-01_9176181_fp8_v10).
    {"v10_fp8_warpspec", "wgmma/warp-specialized/fragments/vt-pass/walk=up"},
    // The backward ladder (bwd_registry.cpp): the overlap of their softmax-gradient work with the
    // matrix units is not described in their headers, so none is modeled.
    {"bwd01_fa2_scalar", "fma/none/fragments"},               // scalar fp32
    {"bwd01b_fa2_scalar_dqpass", "fma/none/fragments"},
    {"bwd02_fa2_mma", "mma_sync/none/fragments"},             // mma.sync, padded rows, ldmatrix (bwd_mma.hpp)
    // A separate dQ pass of its own (fourth part): the Q-outer kernel's tile and grid as its launch
    // sets them (bwd02b: DqTile Br 64, Bc 32, or 64 at d <= 64; bwd03b: DqTile<d, 2> Br 128, Bc
    // 64, whose 129 KiB of shared memory at d = 128 (its static_assert) leave one CTA per SM; both
    // on a (b*Hq + h, Tr - 1 - query block) grid, heads fastest: qblock_major_rev). bwd02b's dQ pass
    // runs 3 CTAs per SM: ptxas -v (nvcc 13.0, sm_90) gives its kernel 167 (d = 128) and 168 (d =
    // 64) registers at 128 threads: 3 CTAs x 128 x 168 = 64512 of the SM's 65536, 4 would need
    // 86016 (shared memory would allow 4); recheck with
    // one nvcc -c of the file (kernels/dev/build.sh's flags, -Xptxas -v) after a change. bwd03b's
    // d = 64 occupancy is left to the model's footprint. The registry's LaunchConfig describes the
    // main kernel only, so none of this is read from there.
    {"bwd02b_fa2_mma_dqpass", "mma_sync/none/fragments/dq=qblock_major_rev,64x32@3,d<=64:64x64@3"},
    {"bwd03_fa3_wgmma", "wgmma/none/fragments"},              // the five products on wgmma (bwd_wgmma.hpp)
    {"bwd03b_fa3_wgmma_dqpass", "wgmma/none/fragments/dq=qblock_major_rev,128x64@1,d<=64:128x64"},
};

// The line of registry variant `variant` (its full name); nullptr when it has none here.
constexpr const VariantDesign* variant_design(std::string_view variant) {
  for (const auto& d : kVariantDesigns)
    if (d.variant == variant) return &d;
  return nullptr;
}

// The design of registry variant `variant` (its full name); empty when it has none here.
constexpr std::string_view design(std::string_view variant) {
  const VariantDesign* d = variant_design(variant);
  return d ? d->design : std::string_view{};
}

// Its launch traits (above); false for a variant without a line here.
constexpr bool gqa_packed(std::string_view variant) {
  const VariantDesign* d = variant_design(variant);
  return d && d->gqa_packed;
}
constexpr bool decode_splits(std::string_view variant) {
  const VariantDesign* d = variant_design(variant);
  return d && d->decode_splits;
}

}  // namespace ioattn::kernels

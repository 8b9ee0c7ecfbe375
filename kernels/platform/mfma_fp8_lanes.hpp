// kernels/platform/mfma_fp8_lanes.hpp: where v09a_fp8_mfma's data sit in the lanes of CDNA3's
// 16x16x32 FP8 MFMA, as index functions shared by the kernel and its host test.
//
// The instruction (v_mfma_f32_16x16x32_fp8_fp8; CDNA3 ISA, and CK's xdlops table: 4 input blocks of
// 16 lanes, 8 K per lane, K reduction): lane l of 64 holds 8 codes of A, 8 of B, 4 fp32 of C:
//   A(m, k): m = l % 16, k = 8 (l / 16) + e   (byte e of the lane's 64-bit operand)
//   B(k, n): n = l % 16, k = 8 (l / 16) + e
//   C(m, n): m = 4 (l / 16) + e, n = l % 16   (element e of 4), C += A B
// v09a issues the transposed products, S^T = K Q^T (A = K, B = Q^T) and O^T = V^T P^T (A = V^T,
// B = P^T), so a lane's C column n is its query. The placements below say which key, query and d
// index each lane reads or holds; verify/kernels/amd_fp8_fnuz.cpp emulates the instruction from the
// maps above (written there independently) and checks that they compose to S = Q K^T and O = P V.
// Plain C++ (constexpr: host and device code).
#pragma once

namespace ioattn::kernels::mfma8 {

// The lane's operand row (A) / column (B): the key of K, the query of Q^T, the d index of V^T.
constexpr int lane_row(int lane) { return lane % 16; }
// The first of the 8 consecutive K indices (d for S^T, renumbered keys for O^T) of the lane's operand.
constexpr int lane_k0(int lane) { return 8 * (lane / 16); }
// The accumulator row of element e: a key of S^T's atom, a d index of O^T's atom; its column is
// lane_row(lane), the lane's query.
constexpr int acc_row(int lane, int e) { return 4 * (lane / 16) + e; }

// Keys renumbered within each 32-key group, so that P^T's B operand is packed from the lane's own
// S^T accumulators: lane group g = lane / 16 holds keys 4g + e of atom 2G and 16 + 4g + e of atom
// 2G + 1 (acc_row), and B wants K indices 8g .. 8g + 7 (lane_k0): K index kpos of the P V product
// holds key phys_key(kpos); kpos_of is the inverse (the column of key w in a V^T row).
constexpr int phys_key(int kpos) { return 4 * (kpos / 8) + kpos % 4 + 16 * ((kpos % 8) / 4); }
constexpr int kpos_of(int w) { return 8 * ((w % 16) / 4) + w % 4 + 4 * (w / 16); }
// Byte j of P^T's operand for 32-key group G: accumulator atom p_atom(G, j), element p_elem(j).
constexpr int p_atom(int group, int j) { return 2 * group + j / 4; }
constexpr int p_elem(int j) { return j % 4; }
// The LDS column of key r of a tile in every V^T row.
constexpr int vt_col(int r) { return 32 * (r / 32) + kpos_of(r % 32); }

static_assert([] {
  bool seen[32] = {};
  for (int k = 0; k < 32; ++k) {
    if (phys_key(k) < 0 || phys_key(k) >= 32 || seen[phys_key(k)] || kpos_of(phys_key(k)) != k) return false;
    seen[phys_key(k)] = true;
  }
  // Lane group g = 1: bytes 0-3 are keys 4..7 of atom 0, bytes 4-7 keys 20..23 (atom 1's 4..7).
  return phys_key(8) == 4 && phys_key(11) == 7 && phys_key(12) == 20 && phys_key(15) == 23;
}(), "phys_key must be a permutation of 0..31 matching the S^T accumulator layout, kpos_of its inverse");

}  // namespace ioattn::kernels::mfma8

"""kernels/dev/v07b_index_model.py: v07b_decode_wgmma's index logic in float64 numpy, against softmax attention.

    python3 kernels/dev/v07b_index_model.py        (numpy; exit 1 when a case fails)

What it models, line for line with kernels/v07b_decode_wgmma.hip (and v07's shared rules): the GQA
packing (packed row R = i * G + g), row tiles of 64 kWM rows, the split bounds (a multiple of the
stage's kWK Bc keys), the per-warpgroup skip of tiles none of its rows sees, the mask condition
(tile_unmasked of the warpgroup's queries, or the split's end) with each row's [key_lo, key_hi),
keys past the split zero-filled, the lazy online softmax (threshold 2^8) per warpgroup, the key-split
epilogue over the kWK warpgroups (decode::finish_key_split_rows) and the log-sum-exp combine over
splits (splitkv_combine.hpp), fully masked rows (O = 0, LSE = -inf), bottom-right causal and windows.
What it does not model: anything of the GPU (wgmma fragment layouts, the 128-byte swizzle and the
descriptors, cp.async groups, barriers, the paged row table: addressing only); those need the GPU
suite (kernels/dev/NEXT_GPU_RUN.md). Mutating the skip test or the epilogue's rescale makes it fail;
dropping the split-end clause of the mask condition does not (split bounds are whole stages from
the first visible key, so only the last split's end can cut a tile, where tile_unmasked is false).
"""
import math
import sys

import numpy as np
# ioattn/mask.hpp's MaskSpec (bottom-right: shift = Nk - Nq); wr = -1: no right bound, 0: causal.
def key_begin(i, Nq, Nk, wl, wr):
    if wl < 0: return 0
    b = i + (Nk - Nq) - wl
    return min(max(b, 0), Nk)
def key_end(i, Nq, Nk, wl, wr):
    if wr < 0: return Nk
    e = i + (Nk - Nq) + wr + 1
    return min(max(e, 0), Nk)
def tile_unmasked(i0, i1, j0, j1, f):
    return j0 < j1 and f(i1 - 1)[0] <= j0 and j1 <= f(i0)[1]
@np.errstate(invalid="ignore")
def run(Nq, Nk, G, d, splits, kWM, kWK, Bc, wl, wr, seed):
    rng = np.random.default_rng(seed)
    R = G * Nq
    Q = rng.standard_normal((Nq, G, d)); K = rng.standard_normal((Nk, d)); V = rng.standard_normal((Nk, d))
    scale = 1 / math.sqrt(d); sl2 = scale * math.log2(math.e)
    f = lambda i: (key_begin(i, Nq, Nk, wl, wr), key_end(i, Nq, Nk, wl, wr))
    kBr, kKeys = 64 * kWM, Bc * kWK
    Tr = (R + kBr - 1) // kBr
    O = np.zeros((Nq, G, d)); LSE = np.full((Nq, G), -np.inf)
    parts = {}
    for rt in range(Tr):
        r0, r1 = rt * kBr, min(rt * kBr + kBr, R)
        q0, q1 = r0 // G, (r1 - 1) // G + 1
        kb = f(q0)[0]; ke = max(kb, f(q1 - 1)[1])
        per_split = ((ke - kb + splits - 1) // splits + kKeys - 1) // kKeys * kKeys
        for split in range(splits):
            k_lo = min(kb + split * per_split, ke); k_hi = min(k_lo + per_split, ke)
            n_tiles = (k_hi - k_lo + kKeys - 1) // kKeys
            # per warpgroup state
            st = {}
            for wm in range(kWM):
                for wk in range(kWK):
                    st[(wm, wk)] = dict(m=np.full(64, -np.inf), l=np.zeros(64), o=np.zeros((64, d)))
            for wm in range(kWM):
                ga, gb = r0 + 64 * wm, min(r0 + 64 * wm + 64, r1)
                gq0 = ga // G if ga < gb else 0; gq1 = (gb - 1) // G + 1 if ga < gb else 0
                gkb = max(k_lo, f(gq0)[0]) if ga < gb else 0
                gke = min(k_hi, f(gq1 - 1)[1]) if ga < gb else 0
                rows = [r0 + 64 * wm + x for x in range(64)]
                klo = np.array([max(k_lo, f(Rr // G)[0]) if Rr < r1 else 0 for Rr in rows])
                khi = np.array([min(k_hi, f(Rr // G)[1]) if Rr < r1 else 0 for Rr in rows])
                q = np.array([Q[Rr // G, Rr % G] if Rr < r1 else np.zeros(d) for Rr in rows])
                for j in range(n_tiles):
                    for wk in range(kWK):
                        s = st[(wm, wk)]
                        kj0 = k_lo + j * kKeys + wk * Bc
                        if kj0 >= gke or kj0 + Bc <= gkb: continue
                        cols = np.arange(kj0, kj0 + Bc)
                        valid = cols < k_hi  # copies zero-filled past k_hi
                        Kt = np.where(valid[:, None], K[np.minimum(cols, Nk - 1)], 0)
                        Vt = np.where(valid[:, None], V[np.minimum(cols, Nk - 1)], 0)
                        S = q @ Kt.T
                        if (not tile_unmasked(gq0, gq1, kj0, kj0 + Bc, f)) or kj0 + Bc > k_hi:
                            S = np.where((cols[None] >= klo[:, None]) & (cols[None] < khi[:, None]), S, -np.inf)
                        mt = S.max(1)
                        grow = (mt - s['m']) * sl2 > 8  # lazy; m=-inf grows unless mt=-inf
                        grow = np.where(np.isinf(s['m']) & ~np.isinf(mt), True, grow)
                        mnew = np.where(grow, mt, s['m'])
                        alpha = np.where(grow, np.where(np.isinf(s['m']), 0, np.exp2((s['m'] - mnew) * sl2)), 1)
                        s['l'] *= alpha; s['o'] *= alpha[:, None]; s['m'] = mnew
                        off = np.where(np.isinf(s['m']), 0, s['m'] * sl2)
                        P = np.exp2(S * sl2 - off[:, None])
                        s['l'] += P.sum(1); s['o'] += P @ Vt
                # epilogue (kWK combine)
                for x in range(64):
                    Rr = r0 + 64 * wm + x
                    if Rr >= r1: continue
                    M = max(st[(wm, w)]['m'][x] for w in range(kWK))
                    L = 0; acc = np.zeros(d)
                    for w in range(kWK):
                        mw = st[(wm, w)]['m'][x]
                        fct = 0 if mw == -np.inf else 2 ** ((mw - M) * sl2)
                        L += fct * st[(wm, w)]['l'][x]; acc += fct * st[(wm, w)]['o'][x]
                    o = acc / L if L > 0 else np.zeros(d)
                    lse = M * scale + math.log(L) if L > 0 else -np.inf
                    parts.setdefault((Rr // G, Rr % G), []).append((o, lse))
    for (i, g), ps in parts.items():
        M = max(p[1] for p in ps)
        if M == -np.inf: continue
        w = [math.exp(p[1] - M) if p[1] != -np.inf else 0 for p in ps]
        O[i, g] = sum(wi * p[0] for wi, p in zip(w, ps)) / sum(w); LSE[i, g] = M + math.log(sum(w))
    # reference
    err = 0
    for i in range(Nq):
        b0, e0 = f(i)
        for g in range(G):
            if e0 <= b0:
                assert np.all(O[i, g] == 0) and LSE[i, g] == -np.inf, (i, g); continue
            s = Q[i, g] @ K[b0:e0].T * scale
            p = np.exp(s - s.max()); ref = p @ V[b0:e0] / p.sum(); lref = s.max() + math.log(p.sum())
            err = max(err, np.abs(O[i, g] - ref).max(), abs(LSE[i, g] - lref))
    return err
worst = 0; n = 0; failed = 0
for (Nq, Nk, G) in [(1, 1, 4), (1, 0, 4), (4, 3001, 8), (16, 1000, 4), (64, 300, 4), (8, 2049, 16), (16, 77, 1), (32, 777, 4), (3, 5, 4)]:
    for (kWM, kWK) in [(1, 2), (2, 1), (1, 1)]:
        for splits in [1, 3, 64]:
            for (wl, wr) in [(-1, -1), (-1, 0), (100, 0), (37, 5)]:
                e = run(Nq, Nk, G, 32, splits, kWM, kWK, 64, wl, wr, n); n += 1
                worst = max(worst, e)
                if e > 1e-9:
                    failed += 1
                    print("FAIL", Nq, Nk, G, kWM, kWK, splits, wl, wr, e)
print(f"v07b index model: {n} cases (seqlen_q, seqlen_k incl. 0 and 1, G 1-16, tiles 1x2/2x1/1x1, splits 1/3/64, "
      f"no mask / causal / windows), worst |error| {worst:.2e}, {failed} failed")
sys.exit(1 if failed else 0)

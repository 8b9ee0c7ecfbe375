"""python/test_ring_cpu.py: ring_attention.py's algorithm on the CPU, float64 (ctest ring_attention_cpu).

    python3 python/test_ring_cpu.py

No GPU and no ioattn library: the rank programs run with dense_block_fns (the dense softmax per
block, float64) on numpy arrays, and on torch CPU tensors too when torch is installed (else those
cases are listed as not run, not counted). Needs numpy; without it prints "SKIPPED: ..." and exits 77.
Checks:
  - chunk_ranges: every position exactly once, lengths within one, zigzag's chunk pairs, refusals;
  - block_calls: for every (rank, source) pair of every layout, P in 1..8 and odd N, the calls'
    cells, with ioattn's bottom-right causal mask inside each call, cover exactly the global causal
    mask (key position <= query position) once, in at most one call per step;
  - merge: partial (O, LSE) of random key pieces, some fully masked (LSE = -inf), merged in random
    order equal the dense softmax over all keys;
  - the dense backward against central finite differences (so it can stand as the reference);
  - simulated ring and Ulysses, forward and backward, P in 1, 2, 3, 4, 8, contiguous and zigzag,
    causal and not, GQA, odd N: equal to the dense whole-sequence result within 1e-10;
  - controls that must fail: a block function that drops the causal flag, and a merge that skips
    the rescale, give results the check rejects;
  - refusals: N below the chunk count, Ulysses with heads not divisible by P, seqlen_q != seqlen_k;
  - with torch: torch.distributed over gloo with 2, 3 and 4 processes on the CPU (spawned; the
    sends and receives of run_distributed, ring_attention's autograd, Ulysses where gloo has
    all_to_all, else listed as not run) against the dense whole-sequence result.
Exit 0 when every check passes, 1 otherwise.
"""
import itertools
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ring_attention as ra  # noqa: E402

passed = failed = 0
TOL = 1e-10


def report(ok, name, detail=""):
    global passed, failed
    passed, failed = passed + bool(ok), failed + (not ok)
    print(f"{'ok  ' if ok else 'FAIL'} {name}{': ' + detail if detail else ''}", flush=True)


def check_chunks():
    ok, bad = True, []
    for p in range(1, 9):
        for layout in ra.LAYOUTS:
            chunks = p if layout == "contiguous" else 2 * p
            for n in (chunks, chunks + 1, 2 * chunks + 3, 97, 1000):
                if n < chunks:
                    continue
                segs = ra.chunk_ranges(n, p, layout)
                pos = sorted(i for r in range(p) for i in ra.rank_indices(n, p, layout, r))
                lens = [ln for s in segs for _, ln in s]
                good = pos == list(range(n)) and max(lens) - min(lens) <= 1 and min(lens) >= 1
                if layout == "zigzag":
                    allc = sorted(c for s in segs for c in s)
                    good &= all(segs[r] == [allc[r], allc[2 * p - 1 - r]] for r in range(p))
                if not good:
                    ok = False
                    bad.append(f"P{p} {layout} N{n}")
    report(ok, "chunk_ranges: each position once, lengths within one, zigzag pairs r and 2P-1-r",
           ", ".join(bad[:5]))
    for args, word in (((3, 4, "contiguous"), "seqlen (3) must be >= the number of chunks (4"),
                       ((7, 4, "zigzag"), "(8: zigzag"), ((8, 2, "striped"), "layout must be"),
                       ((8, 0, "contiguous"), "ranks must be")):
        try:
            ra.chunk_ranges(*args)
            report(False, f"chunk_ranges refuses {args}", "accepted")
        except ra.RingError as e:
            report(word in str(e) and "\n" not in str(e), f"chunk_ranges refuses {args}", repr(str(e)))


def check_block_calls():
    ok, worst, calls_max = True, "", 0
    for p in range(1, 9):
        for layout in ra.LAYOUTS:
            chunks = p if layout == "contiguous" else 2 * p
            for n in (chunks, 2 * chunks + 1, 53):
                if n < chunks:
                    continue
                segs = ra.chunk_ranges(n, p, layout)
                for r, s in itertools.product(range(p), repeat=2):
                    qpos = ra.rank_indices(n, p, layout, r)
                    kpos = ra.rank_indices(n, p, layout, s)
                    for causal in (False, True):
                        cover = [[0] * len(kpos) for _ in qpos]
                        calls = ra.block_calls(segs[r], segs[s], causal)
                        calls_max = max(calls_max, len(calls))
                        for q_lo, q_hi, k_lo, k_hi, c in calls:
                            nq, nk = q_hi - q_lo, k_hi - k_lo
                            for i in range(nq):
                                for j in range(nk):
                                    if not c or j <= i + nk - nq:  # ioattn's bottom-right mask
                                        cover[q_lo + i][k_lo + j] += 1
                        want = [[1 if (not causal or kp <= qp) else 0 for kp in kpos] for qp in qpos]
                        if cover != want:
                            ok = False
                            worst = worst or f"P{p} {layout} N{n} rank {r} source {s} causal {causal}: {calls}"
    report(ok and calls_max <= 1, "block_calls: ioattn's masks cover the global causal mask exactly once",
           worst or f"at most {calls_max} call per (rank, source) pair")


def dense_global(np_, q, k, v, causal, scale=None):
    """Whole-sequence dense attention, float64, mask on positions (key <= query)."""
    return ra.dense_block_fns.forward(q, k, v, causal, scale)


def rand(np_, rng, *shape):
    return rng.standard_normal(shape)


def err(a, b):
    return float(abs(a - b).max()) if hasattr(a, "shape") else abs(a - b)


def check_merge(np):
    rng = np.random.default_rng(3)
    b, n, h, d = 2, 37, 3, 8
    q, k, v = rand(np, rng, b, 11, h, d), rand(np, rng, b, n, h, d), rand(np, rng, b, n, h, d)
    o_ref, lse_ref = ra.dense_block_fns.forward(q, k, v, False, None)
    cuts = [0, 5, 6, 20, 37]
    pieces = [(cuts[i], cuts[i + 1]) for i in range(len(cuts) - 1)]
    o = np.zeros((b, 11, h, d))
    lse = np.full((b, h, 11), -math.inf)
    # A fully masked partial (LSE = -inf, O = 0) first: the merge must leave the accumulator as it is.
    ra.merge(o, lse, np.zeros((b, 11, h, d)), np.full((b, h, 11), -math.inf), (0, 11))
    for lo, hi in [pieces[i] for i in (2, 0, 3, 1)]:
        ob, lb = ra.dense_block_fns.forward(q, k[:, lo:hi], v[:, lo:hi], False, None)
        ra.merge(o, lse, ob, lb, (0, 11))
    ra.merge(o, lse, np.zeros((b, 11, h, d)), np.full((b, h, 11), -math.inf), (0, 11))
    e = max(err(o, o_ref), err(lse, lse_ref))
    report(e <= TOL and np.isfinite(o).all(), "merge: 4 key pieces (random order) + 2 fully masked = dense softmax",
           f"max error {e:.1e}")
    # Rows that stay fully masked: (O, LSE) = (0, -inf), no NaN.
    o2 = np.zeros((1, 3, 1, 2))
    l2 = np.full((1, 1, 3), -math.inf)
    ra.merge(o2, l2, np.zeros((1, 3, 1, 2)), np.full((1, 1, 3), -math.inf), (0, 3))
    report(bool((o2 == 0).all() and np.isneginf(l2).all()), "merge: -inf with -inf stays O = 0, LSE = -inf (no NaN)")


def check_fd(np):
    """The dense backward against central differences of sum(O * G) (float64)."""
    rng = np.random.default_rng(5)
    for causal, hq, hkv in ((True, 2, 1), (False, 2, 2)):
        b, n, d = 1, 5, 3
        q, k, v, g = (rand(np, rng, b, n, hq, d), rand(np, rng, b, n, hkv, d), rand(np, rng, b, n, hkv, d),
                      rand(np, rng, b, n, hq, d))
        o, lse = ra.dense_block_fns.forward(q, k, v, causal, 0.7)
        grads = ra.dense_block_fns.backward(q, k, v, o, lse, g, causal, 0.7)
        worst, eps = 0.0, 1e-6
        for t, gt in zip((q, k, v), grads):
            for idx in np.ndindex(*t.shape):
                old = t[idx]
                t[idx] = old + eps
                fp = (ra.dense_block_fns.forward(q, k, v, causal, 0.7)[0] * g).sum()
                t[idx] = old - eps
                fm = (ra.dense_block_fns.forward(q, k, v, causal, 0.7)[0] * g).sum()
                t[idx] = old
                worst = max(worst, abs((fp - fm) / (2 * eps) - gt[idx]))
        report(worst < 1e-6, f"dense backward = finite differences (causal {causal}, H {hq}/{hkv})",
               f"max |diff| {worst:.1e}")


class _NoCausal:
    """A broken block function: ignores the causal flag (the diagonal unmasked)."""

    @staticmethod
    def forward(q, k, v, causal, scale):
        return ra.dense_block_fns.forward(q, k, v, False, scale)

    @staticmethod
    def backward(q, k, v, o, lse, d_o, causal, scale):
        return ra.dense_block_fns.backward(q, k, v, o, lse, d_o, False, scale)


def ring_case(x, name, q, k, v, g, p, causal, layout, method, fns=None, expect_ok=True):
    ref = ra.dense_block_fns.forward(q, k, v, causal, None)
    ref_g = ra.dense_block_fns.backward(q, k, v, ref[0], ref[1], g, causal, None)
    try:
        got = ra.simulated_ring(q, k, v, p, causal=causal, layout=layout, d_o=g, fns=fns, method=method)
    except ra.RingError as e:
        report(False, name, f"refused: {e}")
        return
    errs = [err(a, r) for a, r in zip(got, ref + ref_g)]
    ok = max(errs) <= TOL
    detail = ", ".join(f"{lab} {e:.1e}" for lab, e in zip(("O", "LSE", "dQ", "dK", "dV"), errs))
    if expect_ok:
        report(ok, name, detail)
    else:
        report(not ok, name + " (control: must be rejected)", detail + (" rejected" if not ok else " NOT rejected"))


def check_rings(x, label, make):
    cases = 0
    for p, layout, causal, (hq, hkv), n in itertools.product((1, 2, 3, 4, 8), ra.LAYOUTS, (False, True),
                                                              ((4, 4), (4, 2)), (None,)):
        n = {1: 13, 2: 23, 3: 31, 4: 37, 8: 53}[p]  # odd N, not a multiple of the chunk count
        q, k, v, g = make(2, n, hq, 16), make(2, n, hkv, 16), make(2, n, hkv, 16), make(2, n, hq, 16)
        ring_case(x, f"{label} ring P{p} {layout} causal {int(causal)} H{hq}/{hkv} N{n}", q, k, v, g, p, causal,
                  layout, "ring")
        cases += 1
        if hq % p == 0 and hkv % p == 0:
            ring_case(x, f"{label} ulysses P{p} {layout} causal {int(causal)} H{hq}/{hkv} N{n}", q, k, v, g, p,
                      causal, layout, "ulysses")
    return cases


def check_controls(np):
    rng = np.random.default_rng(11)
    mk = lambda *s: rng.standard_normal(s)  # noqa: E731
    q, k, v, g = mk(1, 29, 2, 8), mk(1, 29, 2, 8), mk(1, 29, 2, 8), mk(1, 29, 2, 8)
    ring_case(np, "ring P4 zigzag causal with the causal flag dropped", q, k, v, g, 4, True, "zigzag", "ring",
              fns=_NoCausal, expect_ok=False)
    real = ra.merge

    def no_rescale(o, lse, o_b, lse_b, rows):
        lo, hi = rows
        o[:, lo:hi] = o[:, lo:hi] + o_b
        lse[:, :, lo:hi] = np.logaddexp(lse[:, :, lo:hi], lse_b)

    ra.merge = no_rescale
    try:
        ring_case(np, "ring P3 contiguous with a merge that does not rescale", q, k, v, g, 3, False, "contiguous",
                  "ring", expect_ok=False)
    finally:
        ra.merge = real
    for what, call, word in (
            ("N 5 < 8 chunks", lambda: ra.simulated_ring(q[:, :5], k[:, :5], v[:, :5], 4, layout="zigzag"),
             "must be >= the number of chunks"),
            ("Ulysses H 2 over P 4", lambda: ra.simulated_ring(q, k, v, 4, method="ulysses"), "divisible"),
            ("seqlen_q != seqlen_k", lambda: ra.simulated_ring(q[:, :7], k, v, 2), "must equal seqlen_k"),
            ("method", lambda: ra.simulated_ring(q, k, v, 2, method="tree"), "method must be")):
        try:
            call()
            report(False, f"refuses {what}", "accepted")
        except ra.RingError as e:
            report(word in str(e) and "\n" not in str(e), f"refuses {what}", repr(str(e)))


# ---- torch.distributed (gloo) with P processes on the CPU: run_distributed's sends and all_to_all ----

DIST_CASES = [  # (P, layout, causal, method)
    (2, "contiguous", False, "ring"), (2, "zigzag", True, "ring"), (3, "contiguous", True, "ring"),
    (3, "zigzag", True, "ring"), (4, "zigzag", True, "ring"), (2, "contiguous", True, "ulysses"),
    (2, "zigzag", False, "ulysses"),
]
DIST_SHAPE = (2, 45, 4, 2, 8)  # batch, seqlen (odd), heads_q, heads_kv, head_dim


def _dist_inputs(torch, seed):
    b, n, hq, hkv, d = DIST_SHAPE
    gen = torch.Generator().manual_seed(seed)
    mk = lambda *s: torch.randn(*s, generator=gen, dtype=torch.float64)  # noqa: E731
    return mk(b, n, hq, d), mk(b, n, hkv, d), mk(b, n, hkv, d), mk(b, n, hq, d)


def _dist_worker(rank, p, store, out, cases):
    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=p)
    res = {}
    for i, (_, layout, causal, method) in enumerate(cases):
        q, k, v, g = _dist_inputs(torch, 100 + i)
        n = q.shape[1]
        sh = [ra.shard(t, n, layout) for t in (q, k, v, g)]
        try:
            if method == "ring":
                x = [t.clone().requires_grad_(True) for t in sh[:3]]
                o = ra.ring_attention(*x, seqlen=n, causal=causal, layout=layout, fns=ra.dense_block_fns)
                grads = torch.autograd.grad(o, x, sh[3])
                res[i] = (o.detach(), *grads)
            else:
                o, _, saved = ra.ulysses_attention(*sh[:3], seqlen=n, causal=causal, layout=layout,
                                                   fns=ra.dense_block_fns)
                res[i] = (o, *ra.ulysses_backward(saved, sh[3], seqlen=n, causal=causal, layout=layout,
                                                   fns=ra.dense_block_fns))
        except Exception as e:  # noqa: BLE001 - reported by the parent
            res[i] = f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
    torch.save(res, f"{out}.{rank}")
    dist.destroy_process_group()


def check_distributed(torch):
    import multiprocessing as mp
    import tempfile

    try:
        import torch.distributed as dist
        ok = dist.is_available() and dist.is_gloo_available()
    except ImportError:
        ok = False
    if not ok:
        print("not run: torch.distributed with gloo is not available (not counted)")
        return
    ctx = mp.get_context("spawn")
    for p in sorted({c[0] for c in DIST_CASES}):
        cases = [c for c in DIST_CASES if c[0] == p]
        with tempfile.TemporaryDirectory() as tmp:
            procs = [ctx.Process(target=_dist_worker, args=(r, p, f"{tmp}/store", f"{tmp}/out", cases))
                     for r in range(p)]
            for pr in procs:
                pr.start()
            for pr in procs:
                pr.join(timeout=120)
            hung = [r for r, pr in enumerate(procs) if pr.is_alive()]
            for pr in procs:
                if pr.is_alive():
                    pr.terminate()
            if hung or any(pr.exitcode != 0 for pr in procs):
                report(False, f"gloo P{p}: {len(cases)} cases",
                       f"ranks {hung} hung" if hung else f"exit codes {[pr.exitcode for pr in procs]}")
                continue
            per_rank = [torch.load(f"{tmp}/out.{r}") for r in range(p)]
        for i, (_, layout, causal, method) in enumerate(cases):
            q, k, v, g = _dist_inputs(torch, 100 + i)
            n = q.shape[1]
            what = f"torch.distributed gloo, {p} processes: {method} {layout} causal {int(causal)} [B{q.shape[0]} N{n} H{q.shape[2]}/{k.shape[2]}]"
            errs = [r[i] for r in per_rank if isinstance(r[i], str)]
            if errs:
                low = errs[0].lower()
                supported = not (method == "ulysses" and ("all_to_all" in low or "alltoall" in low))
                if not supported:
                    print(f"not run: {what}: this torch's gloo has no all_to_all ({errs[0]}; not counted)")
                else:
                    report(False, what, errs[0])
                continue
            ref_o, ref_l = ra.dense_block_fns.forward(q, k, v, causal, None)
            ref = (ref_o,) + tuple(ra.dense_block_fns.backward(q, k, v, ref_o, ref_l, g, causal, None))
            idx = [ra.rank_indices(n, p, layout, r) for r in range(p)]
            order = ra._global_order(ra.chunk_ranges(n, p, layout))
            got = [torch.cat([per_rank[r][i][j] for r in range(p)], 1)[:, order] for j in range(4)]
            e = [err(a, b) for a, b in zip(got, ref)]
            report(max(e) <= TOL and len(idx) == p, what,
                   ", ".join(f"{lab} {x:.1e}" for lab, x in zip(("O", "dQ", "dK", "dV"), e)))


def main():
    try:
        import numpy as np
    except ImportError as e:
        print(f"SKIPPED: numpy is not installed ({e})")
        return 77
    check_chunks()
    check_block_calls()
    check_merge(np)
    check_fd(np)
    rng = np.random.default_rng(7)
    check_rings(np, "numpy", lambda *s: rng.standard_normal(s))
    check_controls(np)
    try:
        import torch
    except ImportError:
        torch = None
        print("not run: torch CPU cases (torch is not installed; not counted)")
    if torch is not None:
        gen = torch.Generator().manual_seed(7)
        check_rings(torch, "torch-cpu", lambda *s: torch.randn(*s, generator=gen, dtype=torch.float64))
        check_distributed(torch)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed or passed == 0 else 0


if __name__ == "__main__":
    sys.exit(main())

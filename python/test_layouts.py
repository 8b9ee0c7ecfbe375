"""ioattn.forward_varlen and forward_paged on the prefill kernels: against a float32 torch reference, and bad input refused.

    IOATTN_CAPI=build-gpu/kernels/libioattn_capi.so python3 python/test_layouts.py

Needs torch and a CUDA GPU (prints "SKIPPED: no GPU" and exits 77 without one). Cases, for each
variant that declares varlen (v06_fa2_wgmma on compute capability 9.0, v05_fa2_fast everywhere):
  - good: a packed batch of ragged sequences (query lengths 0, 1, 17, 300, 129, 3; key lengths
    equal, or a prefix longer, and a sequence with 3 queries and 0 keys), GQA 4 (8 over 2 heads),
    d 128, bf16, causal and not, and a window: O and LSE of every real row close to a float32
    reference computed per sequence (bottom-right aligned mask); the 0-key sequence's rows exactly
    O = 0, LSE = -inf; the two rows past cu_seqlens_q[B] (no sequence owns them) untouched.
  - paged: the same keys placed into a shuffled paged cache (page size 16, and 7, which divides no
    length) with dense queries (17 per sequence) through forward_paged(kernel=...): the same check.
  - refused (IoattnError code 2, outputs untouched): cu_seqlens of the wrong dtype, wrong length,
    not starting at 0, decreasing, past total; max_seqlen below the longest; a variant that does not
    declare varlen; out of a wrong shape.
One line per case; the last line is "N passed, M failed"; exit 0 when none failed, else 1.
"""
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ioattn  # noqa: E402
from ioattn import IoattnError  # noqa: E402

torch = None
passed = failed = 0
HQ, HKV, D = 8, 2, 128
LQ = [0, 1, 17, 300, 129, 3]
TOL = 3e-2  # bf16 output against a float32 reference


def report(ok, name, detail=""):
    global passed, failed
    passed, failed = passed + ok, failed + (not ok)
    print(f"{'ok  ' if ok else 'FAIL'} {name}{': ' + detail if detail else ''}", flush=True)


def cu_of(lengths):
    cu = [0]
    for n in lengths:
        cu.append(cu[-1] + n)
    return cu


def reference(q, k, v, lq, lk, causal, window):
    """Per sequence, float32: O (nq, HQ, D), LSE (HQ, nq) with the bottom-right aligned mask."""
    nq, nk = q.shape[0], k.shape[0]
    g = HQ // HKV
    kf = k.float().repeat_interleave(g, dim=1)
    vf = v.float().repeat_interleave(g, dim=1)
    s = torch.einsum("ihd,jhd->hij", q.float(), kf) / math.sqrt(D)
    i = torch.arange(nq, device=q.device)[:, None]
    j = torch.arange(nk, device=q.device)[None, :]
    diag = i + (nk - nq)
    ok = torch.ones(nq, nk, dtype=torch.bool, device=q.device)
    right = 0 if causal else window[1]
    if window[0] >= 0:
        ok &= j >= diag - window[0]
    if right >= 0:
        ok &= j <= diag + right
    s = s.masked_fill(~ok[None], float("-inf"))
    lse = torch.logsumexp(s, dim=-1)  # (HQ, nq)
    p = torch.exp(s - torch.where(torch.isinf(lse), torch.zeros_like(lse), lse)[..., None])
    o = torch.einsum("hij,jhd->ihd", p, vf)
    return o, lse


def check_rows(name, o, lse, q, k, v, cu_q, k_rows, lk, causal, window, lse_row):
    """Compare each sequence's rows; k_rows(b) -> its keys (nk, HKV, D); lse_row(b, i) -> LSE column."""
    worst = 0.0
    for b in range(len(cu_q) - 1):
        q0, q1 = cu_q[b], cu_q[b + 1]
        if q1 == q0:
            continue
        kb, vb = k_rows(b)
        if lk[b] == 0:
            zero = bool((o[q0:q1].float() == 0).all())
            ninf = bool(torch.isneginf(lse[:, [lse_row(b, i) for i in range(q1 - q0)]]).all())
            report(zero and ninf, f"{name}: sequence {b} with 0 keys gives O = 0, LSE = -inf")
            continue
        ro, rl = reference(q[q0:q1], kb, vb, q1 - q0, lk[b], causal, window)
        got_l = lse[:, [lse_row(b, i) for i in range(q1 - q0)]]
        finite = torch.isfinite(rl)
        if not torch.equal(torch.isneginf(got_l), ~finite):
            report(False, f"{name}: sequence {b}: fully masked rows differ from the reference")
            return
        worst = max(worst, (o[q0:q1].float() - ro).abs().max().item(),
                    (got_l[finite] - rl[finite]).abs().max().item() if finite.any() else 0.0)
    report(worst <= TOL, f"{name}: O and LSE within {TOL} of the float32 reference", f"max error {worst:.2e}")


def varlen_cases(kernel):
    dev = "cuda"
    for causal, window, prefix in ((False, (-1, -1), 0), (True, (-1, -1), 0), (True, (-1, -1), 40),
                                   (False, (20, 5), 7)):
        lk = [n + prefix for n in LQ]
        lk[-1] = 0  # 3 queries, 0 keys
        cu_q, cu_k = cu_of(LQ), cu_of(lk)
        total_q, total_k = cu_q[-1] + 2, cu_k[-1]  # two trailing rows no sequence owns
        q = torch.randn(total_q, HQ, D, device=dev, dtype=torch.bfloat16)
        k = torch.randn(max(total_k, 1), HKV, D, device=dev, dtype=torch.bfloat16)
        v = torch.randn_like(k)
        o = torch.full_like(q, float("nan"))
        lse = torch.full((HQ, total_q), float("nan"), device=dev)
        name = f"{kernel} varlen causal={int(causal)} window={window} prefix={prefix}"
        try:
            ioattn.forward_varlen(q, k, v, torch.tensor(cu_q, dtype=torch.int32, device=dev),
                                  torch.tensor(cu_k, dtype=torch.int32, device=dev), kernel=kernel, causal=causal,
                                  window=window, out=o, lse=lse)
            torch.cuda.synchronize()
        except IoattnError as e:
            report(False, name, str(e))
            continue
        tail_ok = bool(torch.isnan(o[cu_q[-1]:].float()).all() and torch.isnan(lse[:, cu_q[-1]:]).all())
        report(tail_ok, f"{name}: rows past cu_seqlens_q[B] untouched")
        check_rows(name, o, lse, q, k, v, cu_q,
                   lambda b: (k[cu_k[b]:cu_k[b + 1]], v[cu_k[b]:cu_k[b + 1]]), lk, causal, window,
                   lambda b, i, cu_q=cu_q: cu_q[b] + i)
        if causal and prefix == 0:
            refused_cases(kernel, q, k, v, cu_q, cu_k, o, lse)


def paged_cases(kernel):
    dev = "cuda"
    b, nq = 5, 17
    lk = [17, 0, 300, 129, 1]
    for page in (16, 7):
        pages = [(n + page - 1) // page for n in lk]
        num_pages = sum(pages) + 2
        order = torch.randperm(num_pages, generator=torch.Generator().manual_seed(page)).tolist()
        table = torch.full((b, max(pages)), -1, dtype=torch.int32)
        nxt = 0
        for s in range(b):
            for i in range(pages[s]):
                table[s, i] = order[nxt]
                nxt += 1
        kc = torch.randn(num_pages, page, HKV, D, device=dev, dtype=torch.bfloat16)
        vc = torch.randn_like(kc)
        q = torch.randn(b, nq, HQ, D, device=dev, dtype=torch.bfloat16)
        name = f"{kernel} paged page_size={page} causal=1"
        try:
            o, lse = ioattn.forward_paged(q, kc, vc, table.to(dev), torch.tensor(lk, dtype=torch.int32, device=dev),
                                          kernel=kernel, causal=True)
            torch.cuda.synchronize()
        except IoattnError as e:
            report(False, name, str(e))
            continue

        def rows(s, kc=kc, vc=vc, table=table, page=page):
            idx = [int(table[s, j // page]) * page + j % page for j in range(lk[s])]
            flat_k, flat_v = kc.reshape(-1, HKV, D), vc.reshape(-1, HKV, D)
            return flat_k[idx], flat_v[idx]
        cu_q = [s * nq for s in range(b + 1)]
        lse_flat = lse.permute(1, 0, 2).reshape(HQ, b * nq)  # (B, HQ, nq) -> (HQ, B*nq)
        check_rows(name, o.reshape(b * nq, HQ, D), lse_flat, q.reshape(b * nq, HQ, D), None, None, cu_q, rows, lk,
                   True, (-1, -1), lambda s, i: s * nq + i)


def refused_cases(kernel, q, k, v, cu_q, cu_k, o, lse):
    dev = "cuda"
    before_o, before_l = o.clone(), lse.clone()
    t = lambda x, dt=torch.int32: torch.tensor(x, dtype=dt, device=dev)  # noqa: E731
    bad = [
        ("cu_seqlens_q int64", dict(cu_seqlens_q=t(cu_q, torch.int64))),
        ("cu_seqlens_k of another length", dict(cu_seqlens_k=t(cu_k[:-1]))),
        ("cu_seqlens_q not starting at 0", dict(cu_seqlens_q=t([1] + cu_q[1:]))),
        ("cu_seqlens_q decreasing", dict(cu_seqlens_q=t([0, 5, 3] + cu_q[3:]))),
        ("cu_seqlens_k past total_k", dict(cu_seqlens_k=t(cu_k[:-1] + [k.shape[0] + 1]))),
        ("max_seqlen_q below the longest", dict(max_seqlen_q=2)),
        ("a variant without varlen", dict(kernel="v04_fa2_mma")),
        ("out of another shape", dict(out=torch.empty(q.shape[0] - 1, HQ, D, device=dev, dtype=q.dtype))),
    ]
    for what, over in bad:
        args = dict(cu_seqlens_q=t(cu_q), cu_seqlens_k=t(cu_k), kernel=kernel, causal=True, out=o, lse=lse)
        args.update(over)
        try:
            ioattn.forward_varlen(q, k, v, **args)
            torch.cuda.synchronize()
            report(False, f"{kernel} refuses {what}", "accepted")
        except IoattnError as e:
            torch.cuda.synchronize()
            untouched = torch.equal(o.nan_to_num(7.0), before_o.nan_to_num(7.0)) and torch.equal(lse.nan_to_num(7.0), before_l.nan_to_num(7.0))
            report(e.code == 2 and "\n" not in str(e) and untouched, f"{kernel} refuses {what}", str(e)[:120])


def main():
    global torch
    try:
        import torch as _torch
    except ImportError:
        print("SKIPPED: no GPU (torch not installed)")
        return 77
    torch = _torch
    if not torch.cuda.is_available():
        print("SKIPPED: no GPU")
        return 77
    torch.manual_seed(0)
    kernels = ["v05_fa2_fast"]
    if torch.cuda.get_device_capability() == (9, 0):
        kernels.insert(0, "v06_fa2_wgmma")
    for kernel in kernels:
        varlen_cases(kernel)
        paged_cases(kernel)
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

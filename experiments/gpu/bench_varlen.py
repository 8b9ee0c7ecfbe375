"""Varlen prefill on the H200: one packed batch of sequences of ragged lengths through ioattn
(cu_seqlens, no padding) against SDPA on the same batch padded to its longest sequence.

    PYTHONPATH=python IOATTN_CAPI=... python3 experiments/gpu/bench_varlen.py --out DIR [--quick]
        [--batch 16] [--min-len 128] [--max-len 8192] [--seed 0] [--heads-q 32] [--heads-kv 8]
        [--head-dim 128] [--dtype bf16] [--causal 0,1] [--variants v06_fa2_wgmma,v05_fa2_fast]
        [--samples 2] [--reps 30]

The batch (issue "Inference", varlen prefill): --batch sequences (16) with lengths drawn uniformly
from [--min-len, --max-len] (128..8192) by random.Random(--seed); each sequence attends to itself
(seqlen_q = seqlen_k per sequence; causal bottom-right = top-left there, so SDPA's is_causal is
the same mask). --quick: 4 sequences, lengths 128..2048.

Implementations: every ioattn variant that declares varlen (--variants to choose) through
ioattn.forward_varlen on the packed (total, H, d) tensors; SDPA flash, cuDNN and efficient
(torch.nn.functional.scaled_dot_product_attention, enable_gqa=True) on the padded (B, H, Nmax, d)
batch. Flash and cuDNN take no padding mask, so they attend over the padding too: their time is
what a padded batch costs; their padding rows are waste (not compared), and without causal their
real rows also see the zero padding keys (a different result: max_abs_diff_vs_ref says so). The
efficient backend gets a boolean key-padding mask (each sequence's own keys; causal folded in),
a correct padded computation. A backend that refuses gives a row with status `refused`.

Columns: the project's (impl, study, dtype, head_dim, causal, batch, heads_q, heads_kv, seqlen_q,
seqlen_k (max lengths), page_size 0, sample, status, ms, ms_min, ms_max, reps, timing, flush_l2,
the launch configuration CONFIG_COLS of ioattn rows, error), plus `tokens` (sum of the lengths),
`padded_tokens` (batch * max length), `tflops` (conventional FLOPs of the sequences actually
present, include/ioattn/flops.hpp: 4 Hq d sum_b N_b^2, halved when causal, over the time: the
padded implementations are charged only the useful work), `peak_mib` (the device memory the
call's inputs + outputs occupy plus what the call itself allocates: torch.cuda peak during the
first call minus the memory before it, plus the input tensors it reads) and
`max_abs_diff_vs_ref` (max |O - O_ref| over the real rows; O_ref: SDPA on each sequence alone,
unpadded, computed once outside the timed calls). Timing: experiments/gpu/timing.py (the one method). Writes DIR/varlen.json
(with context) and DIR/varlen.csv, rewritten after every config. Never edit them by hand.
"""
import argparse
import os
import random
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import ioattn  # noqa: E402
import timing  # noqa: E402
from bench_sdpa import CONFIG_COLS, parse_ints  # noqa: E402

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}
SDPA = {"sdpa:flash": SDPBackend.FLASH_ATTENTION, "sdpa:cudnn": SDPBackend.CUDNN_ATTENTION,
        "sdpa:efficient_masked": SDPBackend.EFFICIENT_ATTENTION}
VARLEN_VARIANTS = ("v06_fa2_wgmma", "v05_fa2_fast")  # the variants whose layout table line declares varlen


def draw_lengths(batch, lo, hi, seed):
    rng = random.Random(seed)
    return [rng.randint(lo, hi) for _ in range(batch)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--batch", type=int, default=0)
    ap.add_argument("--min-len", type=int, default=0)
    ap.add_argument("--max-len", type=int, default=0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--heads-q", type=int, default=32)
    ap.add_argument("--heads-kv", type=int, default=8)
    ap.add_argument("--head-dim", type=int, default=128)
    ap.add_argument("--dtype", default="bf16", choices=sorted(DTYPES))
    ap.add_argument("--causal", default="0,1")
    ap.add_argument("--variants", default=",".join(VARLEN_VARIANTS))
    ap.add_argument("--samples", type=int, default=2)
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--commit", default="")
    args = ap.parse_args()
    batch = args.batch or (4 if args.quick else 16)
    lo = args.min_len or 128
    hi = args.max_len or (2048 if args.quick else 8192)
    causals = parse_ints(args.causal, "--causal", minimum=0, who="bench_varlen.py")
    hq, hkv, d = args.heads_q, args.heads_kv, args.head_dim
    if min(batch, lo, hq, hkv, d, args.samples, args.reps) < 1 or hi < lo or hq % hkv or set(causals) - {0, 1}:
        raise SystemExit("bench_varlen.py: --batch, --min-len, --heads-q, --heads-kv, --head-dim, --samples, --reps "
                         ">= 1, --max-len >= --min-len, --heads-q divisible by --heads-kv, --causal of 0/1")
    if not torch.cuda.is_available():
        raise SystemExit("bench_varlen.py: no CUDA device visible to torch")
    registered = ioattn.kernels()
    variants = [v for v in args.variants.split(",") if v]
    unknown = [v for v in variants if v not in registered]
    if unknown:
        raise SystemExit(f"bench_varlen.py: unknown ioattn variant(s) {unknown}; registered: {list(registered)}")
    lengths = draw_lengths(batch, lo, hi, args.seed)
    print(f"lengths (seed {args.seed}): {lengths}; tokens {sum(lengths)}, padded {batch * max(lengths)}", flush=True)
    os.makedirs(args.out, exist_ok=True)
    torch.manual_seed(args.seed)
    timing.prepare()
    context = timing.run_context(commit=args.commit or None, out_dir=args.out,
                                 seed=f"random.Random({args.seed}) lengths, torch.manual_seed({args.seed}) data",
                                 lengths=lengths)
    rows = []
    for sample in range(args.samples):
        for causal in causals:
            run_config(rows, args, sample, lengths, bool(causal), hq, hkv, d, DTYPES[args.dtype], variants)
            timing.write_results(args.out, "varlen", rows, context)
    summarize(rows)
    return 0


def summarize(rows):
    """Per causal setting: time of each implementation (mean of the samples) and ioattn's best
    against each SDPA backend, both samples."""
    by = {}
    for r in rows:
        if r["status"] == "ok":
            by.setdefault(r["causal"], {}).setdefault(r["impl"], {})[r["sample"]] = r
    print("varlen summary: ms (mean of samples), peak MiB; best ioattn vs each SDPA backend (s0, s1)")
    for causal in sorted(by):
        impls = by[causal]
        mean = {i: sum(x["ms"] for x in s.values()) / len(s) for i, s in impls.items()}
        print(f"  causal={causal} " + " ".join(f"{i}={m:.3f}ms/{impls[i][min(impls[i])]['peak_mib']:.0f}MiB"
                                               for i, m in sorted(mean.items())), flush=True)
        ours = [i for i in mean if i.startswith("ioattn:")]
        if not ours:
            continue
        best = min(ours, key=mean.get)
        for peer in (i for i in mean if i.startswith("sdpa:")):
            per = [impls[peer][s]["ms"] / impls[best][s]["ms"] for s in sorted(impls[best]) if s in impls[peer]]
            if per:
                print(f"    {best} vs {peer}: {sum(per) / len(per):.2f}x faster (" + ", ".join(f"{x:.2f}" for x in per)
                      + ")", flush=True)


def run_config(rows, args, sample, lengths, causal, hq, hkv, d, dt, variants):
    b, nmax, total = len(lengths), max(lengths), sum(lengths)
    el = torch.finfo(dt).bits // 8
    cu = [0]
    for n in lengths:
        cu.append(cu[-1] + n)
    cu_dev = torch.tensor(cu, device="cuda", dtype=torch.int32)
    cu_host = cu_dev.cpu()  # the offsets' host copy, so the timed call can be captured in a CUDA graph
    q = torch.randn(total, hq, d, device="cuda", dtype=dt)
    k = torch.randn(total, hkv, d, device="cuda", dtype=dt)
    v = torch.randn(total, hkv, d, device="cuda", dtype=dt)
    # The padded batch (B, H, Nmax, d), zeros past each sequence (SDPA's layout), built once.
    qp = torch.zeros(b, hq, nmax, d, device="cuda", dtype=dt)
    kp = torch.zeros(b, hkv, nmax, d, device="cuda", dtype=dt)
    vp = torch.zeros(b, hkv, nmax, d, device="cuda", dtype=dt)
    for i, n in enumerate(lengths):
        qp[i, :, :n] = q[cu[i]:cu[i + 1]].transpose(0, 1)
        kp[i, :, :n] = k[cu[i]:cu[i + 1]].transpose(0, 1)
        vp[i, :, :n] = v[cu[i]:cu[i + 1]].transpose(0, 1)
    # Key-padding (and causal) mask for the efficient backend: query i of sequence s sees key j < N_s
    # (and j <= i when causal; self-attention, so bottom-right = top-left).
    ar = torch.arange(nmax, device="cuda")
    valid_k = ar[None, :] < torch.tensor(lengths, device="cuda")[:, None]  # (B, Nmax)
    mask = valid_k[:, None, None, :].expand(b, 1, nmax, nmax)
    if causal:
        mask = mask & (ar[None, None, :, None] >= ar[None, None, None, :])
    mask = mask.contiguous()
    flops = 4.0 * hq * d * sum(n * n for n in lengths) * (0.5 if causal else 1.0)
    packed_bytes = (2 * total * hq * d + 2 * total * hkv * d) * el   # Q, O; K, V
    padded_bytes = (2 * b * nmax * hq * d + 2 * b * nmax * hkv * d) * el
    base = dict(study="varlen", dtype=args.dtype, head_dim=d, causal=int(causal), batch=b, heads_q=hq, heads_kv=hkv,
                seqlen_q=nmax, seqlen_k=nmax, page_size=0, sample=sample, tokens=total, padded_tokens=b * nmax)

    def real_rows(o_padded):  # (B, H, Nmax, d) -> packed (total, H, d): the rows of real queries
        return torch.cat([o_padded[i, :, :n].transpose(0, 1) for i, n in enumerate(lengths)], 0)

    with sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]):
        o_ref = torch.cat([F.scaled_dot_product_attention(
            q[cu[i]:cu[i + 1]].transpose(0, 1)[None], k[cu[i]:cu[i + 1]].transpose(0, 1)[None],
            v[cu[i]:cu[i + 1]].transpose(0, 1)[None], is_causal=causal, enable_gqa=True)[0].transpose(0, 1)
            for i in range(b)], 0)

    def record(impl, status, r=None, cfg=None, diff=None, error="", peak=None):
        row = dict(impl=impl, **base, status=status, ms=None, ms_min=None, ms_max=None, reps=0, timing="",
                   flush_l2=None, tflops=None, peak_mib=peak, max_abs_diff_vs_ref=diff, error=error)
        if r is not None:
            row.update(ms=r["median_ms"], ms_min=r["min_ms"], ms_max=r["max_ms"], reps=r["n"], timing=r["method"],
                       flush_l2=int(r["flush_l2"]), tflops=flops / (r["median_ms"] * 1e-3) / 1e12)
        for c in CONFIG_COLS:
            row.setdefault(c, "")
        if cfg:
            row.update({c: cfg.get(c, "") for c in CONFIG_COLS})
        rows.append(row)
        tag = f"s{sample} causal={int(causal)} {impl:24s}"
        print(f"{tag} {r['median_ms']:.3f} ms {row['tflops']:.0f} TFLOP/s {peak:.0f} MiB" if r
              else f"{tag} {status}: {error}", flush=True)

    def measure(fn, inputs_bytes, problem_bytes):
        """timing.time_call with the first call's peak memory: inputs it reads + what it allocates."""
        out = {}
        torch.cuda.synchronize()
        before = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()

        def first(o):
            out["peak"] = (torch.cuda.max_memory_allocated() - before + inputs_bytes) / 2**20  # before the copy below
            out["o"] = o.detach().clone()
        r = timing.time_call(fn, problem_bytes=problem_bytes, reps=args.reps, max_time_s=1.0, first_call=first)
        return r, out

    for impl in ("sdpa:flash", "sdpa:cudnn", "sdpa:efficient_masked"):
        backend = SDPA[impl]
        masked = impl == "sdpa:efficient_masked"
        inputs = (qp.nbytes + kp.nbytes + vp.nbytes) + (mask.nbytes if masked else 0)
        try:
            def call(backend=backend, masked=masked):
                with sdpa_kernel(backend):
                    if masked:
                        return F.scaled_dot_product_attention(qp, kp, vp, attn_mask=mask, enable_gqa=True)
                    return F.scaled_dot_product_attention(qp, kp, vp, is_causal=causal, enable_gqa=True)
            r, out = measure(call, inputs, padded_bytes)
        except Exception as e:  # noqa: BLE001 - a backend refusing the shape is a result, not a crash
            record(impl, "refused", error=(str(e).splitlines() or [type(e).__name__])[0][:160])
            continue
        diff = (real_rows(out["o"]).float() - o_ref.float()).abs().max().item()
        record(impl, "ok", r, diff=diff, peak=out["peak"])
    del qp, kp, vp, mask

    for name in variants:
        o = torch.empty_like(q)
        lse = torch.empty(hq, total, device="cuda", dtype=torch.float32)
        try:  # the dense problem of the same max lengths: the same tile and grid as the packed launch
            cfg = ioattn.kernel_config(name, b, hq, hkv, nmax, nmax, d, args.dtype, causal=causal, window=(-1, -1))
        except ioattn.IoattnError:
            cfg = None
        inputs = q.nbytes + k.nbytes + v.nbytes + 2 * cu_dev.nbytes + o.nbytes + lse.nbytes
        try:
            r, out = measure(lambda: ioattn.forward_varlen(q, k, v, cu_dev, cu_dev, nmax, nmax, kernel=name,
                                                           causal=causal, out=o, lse=lse,
                                                           host_copies=(cu_host, cu_host))[0], inputs, packed_bytes)
        except ioattn.IoattnError as e:
            record(f"ioattn:{name}", "refused", error=str(e)[:160])
            continue
        diff = (out["o"].float() - o_ref.float()).abs().max().item()
        record(f"ioattn:{name}", "ok", r, cfg=cfg, diff=diff, peak=out["peak"])
    del q, k, v
    torch.cuda.empty_cache()


if __name__ == "__main__":
    sys.exit(main())

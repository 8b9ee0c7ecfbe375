"""Decoding on the H200: a few queries against a long KV cache, ioattn vs SDPA flash and cuDNN, in
bandwidth (the problem is memory-bound), kernel time only.

    PYTHONPATH=python IOATTN_CAPI=... python3 experiments/gpu/bench_decode.py --out DIR [--quick]
        [--seqlens-q 1,4,16] [--seqlens-k 1024,...,131072] [--batches 1,16,64] [--heads-q 32]
        [--heads-kv 8] [--head-dim 128] [--dtype bf16] [--variants v06_fa2_wgmma,...]
        [--page-sizes 0,16,256] [--splits 0] [--samples 2] [--reps 30] [--deadline-s 0]

Grid (issue "Inference"): seqlen_q in {1, 4, 16}, seqlen_k in {1k, 4k, 16k, 64k, 128k}, batch in
{1, 16, 64}, 32 query heads over 8 KV heads (GQA 4), d = 128, bf16, not causal (the query rows
see the whole cache: SDPA's is_causal is top-left aligned, which is not decoding's bottom-right,
so the peers are compared without a mask). --quick: seqlen_q 1, seqlen_k {8k, 128k}, batch {1, 16}.
--page-sizes (default 0,16,256; --quick 0,16): 0 = the contiguous cache (BSHD), every implementation;
P > 0 = the same K and V copied into a paged cache of pages of P keys, (B ceil(Nk/P), P, Hkv, d),
the pages in a shuffled order (torch.randperm, seeded) named by a block table, read through
ioattn.forward_paged by every ioattn variant that takes a paged cache (the others' rows say
`refused`); SDPA has no paged input and runs on the contiguous cache only. The row's page_size says
which; its bytes are the contiguous problem's (the block table and a last page's unused slots are
not counted), so a paged row's gbps against the contiguous row is their time ratio.

Bandwidth: `gbps` = bytes / time, bytes = Q read + K and V read once + O written
(2 B Nq Hq d + 2 B Nk Hkv d, times the element size). The same bytes for every implementation,
so gbps ratios are time ratios. The copy ceiling of this run (copy_sm of experiments/gpu/
ceilings.py, a 4 GiB SM copy, bytes read + written) is measured at the start of every sample and
written as rows with impl `copy_sm`; `of_copy` = gbps / that sample's copy ceiling.

Implementations: SDPA flash and cuDNN (torch.nn.functional.scaled_dot_product_attention with
enable_gqa=True on the BHSD views of the same memory; a backend that refuses a shape gives a row
with status `refused` and its message), and every registered ioattn forward variant except the
scalar rungs (--variants to choose), each with its registry launch configuration (splits
included: `--splits` passes a split count to the variants that take one, 0 = the kernel's own
heuristic). Timing: experiments/gpu/timing.py (CUDA-graph replay between events, host enqueue
hidden, the L2 flushed when the problem fits in 4x L2). The summary also gives v07b_decode_wgmma's
GB/s over v07_decode_splitkv's per cache (`v07b/v07`, `v07b/v07@p16`) when both ran. `max_abs_diff_vs_flash`: max |O - O_flash|
(sanity; the GPU suite is the correctness test). Writes DIR/decode.json (with context) and
DIR/decode.csv, rewritten after every config. Never edit them by hand.
"""
import argparse
import os
import sys
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import ceilings  # noqa: E402
import ioattn  # noqa: E402
import timing  # noqa: E402
from bench_sdpa import CONFIG_COLS, SCALAR, parse_ints  # noqa: E402

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}
SDPA = {"sdpa:flash": SDPBackend.FLASH_ATTENTION, "sdpa:cudnn": SDPBackend.CUDNN_ATTENTION}
V07, V07B = "ioattn:v07_decode_splitkv", "ioattn:v07b_decode_wgmma"  # the summary's v07b/v07 ratio


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--seqlens-q", default="")
    ap.add_argument("--seqlens-k", default="")
    ap.add_argument("--batches", default="")
    ap.add_argument("--heads-q", type=int, default=32)
    ap.add_argument("--heads-kv", type=int, default=8)
    ap.add_argument("--head-dim", type=int, default=128)
    ap.add_argument("--dtype", default="bf16", choices=sorted(DTYPES))
    ap.add_argument("--variants", default="", help="ioattn forward variants (default: all but the scalar rungs)")
    ap.add_argument("--splits", type=int, default=0, help="split count for variants that take one (0: heuristic)")
    ap.add_argument("--page-sizes", default="", help="0 (contiguous) and page sizes of a paged cache (default 0,16,256)")
    ap.add_argument("--samples", type=int, default=2)
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--copy-gib", type=float, default=4.0)
    ap.add_argument("--deadline-s", type=float, default=0, help="start no config after this many seconds (0: none)")
    ap.add_argument("--commit", default="")
    args = ap.parse_args()
    nqs = parse_ints(args.seqlens_q or ("1" if args.quick else "1,4,16"), "--seqlens-q")
    nks = parse_ints(args.seqlens_k or ("8192,131072" if args.quick else "1024,4096,16384,65536,131072"),
                     "--seqlens-k")
    bs = parse_ints(args.batches or ("1,16" if args.quick else "1,16,64"), "--batches")
    pages = [int(x) for x in (args.page_sizes or ("0,16" if args.quick else "0,16,256")).split(",") if x != ""]
    if not pages or min(pages) < 0:
        raise SystemExit("bench_decode.py: --page-sizes is a comma list of integers >= 0 (0: contiguous)")
    args.pages = pages
    hq, hkv, d = args.heads_q, args.heads_kv, args.head_dim
    if min(hq, hkv, d, args.samples, args.reps) < 1 or hq % hkv or args.splits < 0 or args.copy_gib <= 0:
        raise SystemExit("bench_decode.py: --heads-q, --heads-kv, --head-dim, --samples, --reps >= 1, "
                         "--heads-q divisible by --heads-kv, --splits >= 0, --copy-gib > 0")
    if not torch.cuda.is_available():
        raise SystemExit("bench_decode.py: no CUDA device visible to torch")
    registered = ioattn.kernels()
    variants = [v for v in args.variants.split(",") if v] or [v for v in registered if v not in SCALAR]
    unknown = [v for v in variants if v not in registered]
    if unknown:
        raise SystemExit(f"bench_decode.py: unknown ioattn variant(s) {unknown}; registered: {registered}")
    os.makedirs(args.out, exist_ok=True)
    dt = DTYPES[args.dtype]
    torch.manual_seed(0)
    timing.prepare()
    context = timing.run_context(commit=args.commit or None, out_dir=args.out, seed="torch.manual_seed(0)",
                                 bytes="2 B Nq Hq d + 2 B Nk Hkv d elements (Q, O; K, V once)")
    rows = []
    t0 = time.time()
    src = torch.randn(int(args.copy_gib * 2**30) // 4, device="cuda", dtype=torch.float32)
    dst = torch.empty_like(src)

    for sample in range(args.samples):
        r, work, check = ceilings.copy_sm(src, dst, None, args.reps)
        copy_gbps = work / (r["median_ms"] * 1e-3) / 1e9
        rows.append(dict(impl="copy_sm", study="decode", sample=sample, status="ok" if "FAILED" not in check else
                         "failed", ms=r["median_ms"], ms_min=r["min_ms"], ms_max=r["max_ms"], reps=r["n"],
                         timing=r["method"], gbps=copy_gbps, bytes=work, error="" if "FAILED" not in check else check))
        print(f"s{sample} copy_sm {copy_gbps:.0f} GB/s ({check})", flush=True)
        for b in bs:
            for nk in nks:
                for nq in nqs:
                    if args.deadline_s and time.time() - t0 > args.deadline_s:
                        print(f"bench_decode.py: deadline {args.deadline_s:g} s reached; configs after this not run",
                              flush=True)
                        timing.write_results(args.out, "decode", rows, context)
                        summarize(rows)
                        return 0
                    run_config(rows, args, sample, b, nq, nk, hq, hkv, d, dt, variants, copy_gbps)
                    timing.write_results(args.out, "decode", rows, context)
    del src, dst
    summarize(rows)
    return 0


def summarize(rows):
    """Per config: GB/s of each implementation (mean of the samples), the best ioattn variant's
    share of the copy ceiling and its ratio to cuDNN with both samples (a margin under the spread
    is not a win)."""
    by = {}
    for r in rows:
        if r["impl"] != "copy_sm" and r["status"] == "ok":
            key = (r["batch"], r["seqlen_q"], r["seqlen_k"])
            impl = r["impl"] + (f"@p{r['page_size']}" if int(r.get("page_size") or 0) else "")
            by.setdefault(key, {}).setdefault(impl, {})[r["sample"]] = r
    print("decode summary: GB/s (mean of samples; @pN: paged cache, pages of N keys); best ioattn on the "
          "contiguous cache: share of copy_sm, vs sdpa:cudnn (s0, s1)")
    for key in sorted(by):
        impls = by[key]
        mean = {i: sum(x["gbps"] for x in s.values()) / len(s) for i, s in impls.items()}
        line = f"  B={key[0]:2d} Nq={key[1]:2d} Nk={key[2]:6d} " + " ".join(
            f"{i.split(':')[-1]}={g:.0f}" for i, g in sorted(mean.items()))
        ours = [i for i in mean if i.startswith("ioattn:") and "@p" not in i]
        if ours:
            best = max(ours, key=mean.get)
            of_copy = sum(x["of_copy"] for x in impls[best].values()) / len(impls[best])
            line += f" | best {best.split(':')[1]} {of_copy:.2f} of copy"
            if "sdpa:cudnn" in impls:
                per = [impls[best][s]["gbps"] / impls["sdpa:cudnn"][s]["gbps"]
                       for s in sorted(impls[best]) if s in impls["sdpa:cudnn"]]
                if per:
                    line += f", vs cudnn {sum(per) / len(per):.2f}x (" + ", ".join(f"{x:.2f}" for x in per) + ")"
        # v07b (wgmma) beside v07 (mma.sync): GB/s ratio (v07 time / v07b time) per cache (contiguous, each page size).
        for suffix in sorted({i[len(V07B):] for i in mean if i.startswith(V07B)}):
            if V07 + suffix in mean:
                line += f" | v07b/v07{suffix} {mean[V07B + suffix] / mean[V07 + suffix]:.2f}"
        print(line, flush=True)


def run_config(rows, args, sample, b, nq, nk, hq, hkv, d, dt, variants, copy_gbps):
    el = torch.finfo(dt).bits // 8
    nbytes = (2 * b * nq * hq * d + 2 * b * nk * hkv * d) * el
    q = torch.randn(b, nq, hq, d, device="cuda", dtype=dt)
    k = torch.randn(b, nk, hkv, d, device="cuda", dtype=dt)
    v = torch.randn(b, nk, hkv, d, device="cuda", dtype=dt)
    qt, kt, vt = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)  # BHSD views, no copy
    base = dict(study="decode", dtype=args.dtype, head_dim=d, causal=0, batch=b, heads_q=hq, heads_kv=hkv,
                seqlen_q=nq, seqlen_k=nk, page_size=0, sample=sample, bytes=nbytes)
    o_flash = None

    def record(impl, status, r=None, cfg=None, diff=None, error="", splits=""):
        row = dict(impl=impl, **base, status=status, splits=splits, ms=None, ms_min=None, ms_max=None, reps=0,
                   timing="", flush_l2=None, gbps=None, of_copy=None, max_abs_diff_vs_flash=diff, error=error)
        if r is not None:
            g = nbytes / (r["median_ms"] * 1e-3) / 1e9
            row.update(ms=r["median_ms"], ms_min=r["min_ms"], ms_max=r["max_ms"], reps=r["n"], timing=r["method"],
                       flush_l2=int(r["flush_l2"]), gbps=g, of_copy=g / copy_gbps)
        for c in CONFIG_COLS:
            row.setdefault(c, "")
        if cfg:
            row.update({c: cfg.get(c, "") for c in CONFIG_COLS})
            row["splits"] = cfg.get("splits", "")
        rows.append(row)
        tag = f"s{sample} B={b:2d} Nq={nq:2d} Nk={nk:6d} P={base['page_size']:3d} {impl:22s}"
        print(f"{tag} {row['gbps']:7.0f} GB/s ({row['of_copy']:.2f} of copy) {r['median_ms']:.4f} ms" if r
              else f"{tag} {status}: {error}", flush=True)

    for impl, backend in SDPA.items():
        out = {}
        try:
            def call(backend=backend):
                with sdpa_kernel(backend):
                    return F.scaled_dot_product_attention(qt, kt, vt, enable_gqa=True)
            r = timing.time_call(call, problem_bytes=nbytes, reps=args.reps, max_time_s=0.5,
                                 first_call=lambda o: out.setdefault("o", o.detach().clone()))
        except Exception as e:  # noqa: BLE001 - a backend refusing the shape is a result, not a crash
            record(impl, "refused", error=(str(e).splitlines() or [type(e).__name__])[0][:160])
            continue
        if impl == "sdpa:flash":
            o_flash = out["o"].transpose(1, 2)
        diff = None if o_flash is None else (out["o"].transpose(1, 2).float() - o_flash.float()).abs().max().item()
        record(impl, "ok", r, diff=diff)

    for name in variants:
        try:
            cfg = ioattn.kernel_config(name, b, hq, hkv, nq, nk, d, args.dtype, causal=False, window=(-1, -1),
                                       splits=args.splits)
        except ioattn.IoattnError as e:
            record(f"ioattn:{name}", "refused", error=str(e)[:160])
            continue
        o = torch.empty_like(q)
        lse = torch.empty(b, hq, nq, device="cuda", dtype=torch.float32)
        out = {}
        try:
            r = timing.time_call(lambda: ioattn.forward(q, k, v, kernel=name, splits=args.splits, out=o, lse=lse)[0],
                                 problem_bytes=nbytes, reps=args.reps, max_time_s=0.5,
                                 first_call=lambda x: out.setdefault("o", x.detach().clone()))
        except ioattn.IoattnError as e:
            record(f"ioattn:{name}", "refused", error=str(e)[:160])
            continue
        diff = None if o_flash is None else (out["o"].float() - o_flash.float()).abs().max().item()
        record(f"ioattn:{name}", "ok", r, cfg=cfg, diff=diff)

    for ps in [p for p in args.pages if p > 0]:
        # The same K, V in pages of ps keys, pages shuffled: sequence bb's page j is cache page
        # table[bb, j]; the unused tail of a last page is zero.
        npb = (nk + ps - 1) // ps
        perm = torch.randperm(b * npb, generator=torch.Generator().manual_seed(1000 + ps)).to("cuda")
        table = perm.view(b, npb).to(torch.int32).contiguous()
        k_cache = torch.zeros(b * npb, ps, hkv, d, device="cuda", dtype=dt)
        v_cache = torch.zeros_like(k_cache)
        pad = npb * ps - nk
        for src_t, cache in ((k, k_cache), (v, v_cache)):
            full = torch.nn.functional.pad(src_t, (0, 0, 0, 0, 0, pad)) if pad else src_t
            cache[perm] = full.reshape(b * npb, ps, hkv, d)
        used = torch.full((b,), nk, device="cuda", dtype=torch.int32)
        host = (table.cpu(), used.cpu())  # the tables' host copies, so the timed call can be captured
        base["page_size"] = ps
        for name in variants:
            o = torch.empty_like(q)
            lse = torch.empty(b, hq, nq, device="cuda", dtype=torch.float32)
            out = {}
            try:
                cfg = ioattn.kernel_config(name, b, hq, hkv, nq, nk, d, args.dtype, causal=False, window=(-1, -1),
                                           splits=args.splits)
                r = timing.time_call(lambda: ioattn.forward_paged(q, k_cache, v_cache, table, used, kernel=name,
                                                                  splits=args.splits, out=o, lse=lse,
                                                                  host_copies=host)[0],
                                     problem_bytes=nbytes, reps=args.reps, max_time_s=0.5,
                                     first_call=lambda x: out.setdefault("o", x.detach().clone()))
            except ioattn.IoattnError as e:
                record(f"ioattn:{name}", "refused", error=str(e).splitlines()[0][:160])
                continue
            diff = None if o_flash is None else (out["o"].float() - o_flash.float()).abs().max().item()
            # cfg: the variant's launch configuration for the contiguous problem (the same grid).
            record(f"ioattn:{name}", "ok", r, cfg=cfg, diff=diff)
        del k_cache, v_cache
        torch.cuda.empty_cache()
    del q, k, v
    torch.cuda.empty_cache()


if __name__ == "__main__":
    sys.exit(main())

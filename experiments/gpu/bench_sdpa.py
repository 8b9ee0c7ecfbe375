"""ioattn kernels vs torch SDPA (flash, cuDNN) on the H200: one process, same inputs, kernel time only.

    PYTHONPATH=python IOATTN_CAPI=... python3 experiments/gpu/bench_sdpa.py --out DIR [--quick]
        [--variants v05_fa2_fast,...] [--samples 2] [--reps 30] [--flush-l2 auto|on|off]

Configs (FlashAttention-2's benchmark): batch * seqlen = 16384, hidden = 2048 (heads = 2048 / d),
N in {512, 1k, 2k, 4k, 8k, 16k}, d in {64, 128}, bf16 and fp16, causal 0/1. FLOPs by the FA2
convention (include/ioattn/flops.hpp): 4 * B * H * N^2 * d, halved when causal.

Timing: experiments/gpu/timing.py for every implementation alike (CUDA-graph replay between
events, host enqueue hidden, L2 flushed where the problem fits in 4x L2; see that module). ioattn
is called with preallocated `out` and `lse`, so no allocation is timed. The whole grid is swept
`--samples` times (default 2) in this one process: every row carries `sample`; the spread of a
number is |s0 - s1| / mean (summarize.py prints every ratio with both samples).

Outside the timed region, per (config, impl): the first (warm-up) call gives the peak device
memory beyond the inputs (`peak_extra_mib`, with ioattn's C ABI workspace) and max |O - O_flash|
(`max_abs_diff_vs_flash`, a sanity column). Inputs are BSHD (ioattn's layout); SDPA gets the BHSD
view of the same memory (transpose(1, 2), no copy).

The scalar rungs (v01-v03b, 1-9 TFLOP/s) would take most of the device call: they run in
--scalar-dtypes only, up to the N of --scalar-max-n, with at most --scalar-reps timed calls; every
other implementation gets --reps calls, fewer when --time-per-impl would be exceeded (>= 3). A
point not run is a row with status `skipped` and the reason in `error`; a limited one says how in
`limit`; `reps` is the number of timed calls. Nothing is dropped silently.

Every ioattn row carries the launch configuration the kernel really uses, from the registry
(ioattn.kernel_config): br, bc, stages, threads, smem_bytes, ctas_per_sm, grid_x/y/z, grid_order,
launches, splits. SDPA rows leave them empty.

Writes DIR/bench.json (rows with context: GPU, driver, versions, commit, date, command, timing
method) and DIR/bench.csv (tidy, one row per (sample, config, impl)), rewritten after every config
so a time cap keeps what ran. Never edit them by hand.
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
import ioattn  # noqa: E402
import timing  # noqa: E402

SEQLENS = [512, 1024, 2048, 4096, 8192, 16384]
SCALAR = {"v01_naive", "v02_fa1", "v03_fa2_scalar", "v03b_splitkv_scalar"}
# Largest N of each scalar rung by default (v03_fa2_scalar, the teaching kernel, runs at every N).
SCALAR_MAX_N = "v01_naive=2048,v02_fa1=4096,v03b_splitkv_scalar=4096,v03_fa2_scalar=16384"
CONFIG_COLS = ["br", "bc", "stages", "threads", "smem_bytes", "ctas_per_sm", "grid_x", "grid_y", "grid_z",
               "grid_order", "launches", "splits"]
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}
FLOP_CONVENTION = "4*B*H*N^2*d, /2 causal (FA2)"


def fwd_flops(b, h, n, d, causal):
    f = 4.0 * b * h * n * n * d
    return f / 2 if causal else f


def parse_max_n(text):
    """'v01_naive=2048,...' -> {name: N}; a one-line error for anything else."""
    out = {}
    for item in filter(None, text.split(",")):
        name, sep, n = item.partition("=")
        if not sep or not n.isdigit():
            raise SystemExit(f"bench_sdpa.py: --scalar-max-n wants NAME=N[,NAME=N...], got '{item}'")
        out[name] = int(n)
    return out


def config_columns(name, b, h, n, d, dname, causal, br=0, bc=0):
    """The launch configuration of ioattn variant `name` for this problem, from the registry."""
    cfg = ioattn.kernel_config(name, b, h, h, n, n, d, dname, causal=causal, window=(-1, -1), br=br, bc=bc,
                               splits=0)
    return {c: cfg.get(c, "") for c in CONFIG_COLS}


def empty_row(impl, dname, d, causal, n, b, h, sample):
    row = dict(impl=impl, study="bench", dtype=dname, head_dim=d, causal=int(causal), seqlen=n, batch=b, heads=h,
               sample=sample, status="", ms=None, ms_min=None, ms_max=None, reps=0, timing="", flush_l2=None,
               tflops=None)
    row.update({c: "" for c in CONFIG_COLS})
    row.update(peak_extra_mib=None, max_abs_diff_vs_flash=None, limit="", error="")
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--quick", action="store_true", help="N in {1k, 4k}, d = 128, bf16 only")
    ap.add_argument("--dtypes", default="", help="comma list of dtypes to run (default: bf16,fp16)")
    ap.add_argument("--variants", default="", help="comma list of ioattn variants (default: all registered)")
    ap.add_argument("--samples", type=int, default=2, help="sweeps of the whole grid (run-to-run spread)")
    ap.add_argument("--reps", type=int, default=30, help="timed calls per (sample, config, impl)")
    ap.add_argument("--time-per-impl", type=float, default=0.5,
                    help="cap (s) on reps x time of one call; at least 3 calls")
    ap.add_argument("--flush-l2", choices=["auto", "on", "off"], default="auto",
                    help="auto: flush when inputs + outputs < 4x L2 (timing.py)")
    ap.add_argument("--scalar-dtypes", default="bf16", help="dtypes the scalar rungs run in")
    ap.add_argument("--scalar-max-n", default=SCALAR_MAX_N, help="NAME=N,...: largest N per scalar rung")
    ap.add_argument("--scalar-reps", type=int, default=3, help="timed calls of a scalar rung")
    ap.add_argument("--deadline-s", type=float, default=0, help="start no config after this many seconds (0: none)")
    ap.add_argument("--commit", default="", help="commit of the binaries (default: build-gpu/carry/COMMIT)")
    args = ap.parse_args()
    if args.samples < 1 or args.reps < 1 or args.scalar_reps < 1:
        raise SystemExit("bench_sdpa.py: --samples, --reps and --scalar-reps must be >= 1")
    max_n = parse_max_n(args.scalar_max_n)
    if not torch.cuda.is_available():
        raise SystemExit("bench_sdpa.py: no CUDA device visible to torch")
    if not hasattr(ioattn, "kernel_config"):
        raise SystemExit("bench_sdpa.py: python/ioattn.py has no kernel_config(): the rows could not carry the "
                         "kernels' launch configuration")
    os.makedirs(args.out, exist_ok=True)
    registered = list(ioattn.kernels())
    variants = [v for v in (args.variants.split(",") if args.variants else registered) if v]
    unknown = [v for v in variants if v not in registered]
    if unknown:
        raise SystemExit(f"bench_sdpa.py: unknown variant(s) {', '.join(unknown)} (registered: {', '.join(registered)})")
    seqlens = [1024, 4096] if args.quick else SEQLENS
    dims = [128] if args.quick else [64, 128]
    dtypes = {"bf16": DTYPES["bf16"]} if args.quick else DTYPES
    if args.dtypes:
        unknown = set(args.dtypes.split(",")) - set(DTYPES)
        if unknown:
            ap.error(f"--dtypes: unknown {sorted(unknown)} (known: {sorted(DTYPES)})")
        dtypes = {k: v for k, v in DTYPES.items() if k in args.dtypes.split(",")}
    flush = None if args.flush_l2 == "auto" else args.flush_l2 == "on"
    scalar_dtypes = set(args.scalar_dtypes.split(","))
    timing.prepare()
    context = timing.run_context(commit=args.commit or None, out_dir=args.out, flop_convention=FLOP_CONVENTION,
                                 samples=args.samples, reps=args.reps, time_per_impl_s=args.time_per_impl,
                                 scalar=dict(variants=sorted(SCALAR), dtypes=sorted(scalar_dtypes), max_n=max_n,
                                             reps=args.scalar_reps),
                                 seed="torch.manual_seed(N * 1000 + d) per config, the same in every sample",
                                 complete=False)
    rows = []
    t0 = time.monotonic()
    free0, _ = torch.cuda.mem_get_info()
    stopped = ""
    for sample in range(args.samples):
        for d in dims:
            h = 2048 // d
            for n in seqlens:
                b = 16384 // n
                for dname, dt in dtypes.items():
                    if args.deadline_s and time.monotonic() - t0 > args.deadline_s:
                        stopped = (f"stopped by --deadline-s {args.deadline_s:.0f} at sample {sample}, "
                                   f"before d={d} N={n} {dname}")
                        break
                    rows += bench_config(args, sample, b, h, n, d, dname, dt, variants, max_n, scalar_dtypes,
                                         flush, free0)
                    context.update(elapsed_s=round(time.monotonic() - t0, 1))
                    timing.write_results(args.out, "bench", rows, context)
                if stopped:
                    break
            if stopped:
                break
        if stopped:
            break
    context.update(complete=not stopped, stopped=stopped, elapsed_s=round(time.monotonic() - t0, 1))
    timing.write_results(args.out, "bench", rows, context)
    print(stopped or f"bench: {args.samples} samples in {time.monotonic() - t0:.0f} s", flush=True)
    return 0


def bench_config(args, sample, b, h, n, d, dname, dt, variants, max_n, scalar_dtypes, flush, free0):
    """Rows of every implementation at one (sample, d, N, dtype), both causal settings."""
    rows = []
    torch.manual_seed(n * 1000 + d)
    q, k, v = (torch.randn(b, n, h, d, device="cuda", dtype=dt) for _ in range(3))  # BSHD
    qt, kt, vt = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)          # BHSD views
    problem_bytes = 4 * q.nbytes + b * h * n * 4                                    # q, k, v, O + fp32 LSE
    torch.cuda.synchronize()
    base_alloc = torch.cuda.memory_allocated()
    for causal in (False, True):
        flops = fwd_flops(b, h, n, d, causal)
        o_flash = None
        impls = [("sdpa:flash", SDPBackend.FLASH_ATTENTION), ("sdpa:cudnn", SDPBackend.CUDNN_ATTENTION)]
        impls += [("ioattn:" + name, None) for name in variants]
        for impl, backend in impls:
            name = impl.split(":", 1)[1]
            row = empty_row(impl, dname, d, causal, n, b, h, sample)
            rows.append(row)
            reps, max_time = args.reps, args.time_per_impl
            if backend is None and name in SCALAR:
                reps = min(reps, args.scalar_reps)
                cap = max_n.get(name)
                row["limit"] = (f"scalar rung: <= {reps} timed calls (--scalar-reps), dtypes "
                                f"{','.join(sorted(scalar_dtypes))}" + (f", N <= {cap}" if cap else ""))
                if dname not in scalar_dtypes:
                    row.update(status="skipped", error=f"not run: scalar rung, dtype {dname} not in --scalar-dtypes")
                    continue
                if cap is not None and n > cap:
                    row.update(status="skipped", error=f"not run: scalar rung, N {n} > {cap} (--scalar-max-n)")
                    continue
            o = lse = None
            try:
                if backend is not None:
                    def fn(backend=backend, causal=causal):
                        with sdpa_kernel(backend):
                            return F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal).transpose(1, 2)
                    ws = 0
                else:
                    row.update(config_columns(name, b, h, n, d, dname, causal))  # refuses what it cannot run
                    ws = ioattn.workspace_bytes(name, b, h, h, n, n, d, dname, causal)
                    if ws > 0.6 * free0:
                        raise ioattn.IoattnError(2, f"{name}: workspace {ws / 2**30:.1f} GiB does not fit in 60% "
                                                    f"of the free device memory")
                torch.cuda.synchronize()
                torch.cuda.reset_peak_memory_stats()
                if backend is None:
                    o = torch.empty_like(q)
                    lse = torch.empty((b, h, n), device=q.device, dtype=torch.float32)

                    def fn(name=name, causal=causal, o=o, lse=lse):
                        return ioattn.forward(q, k, v, kernel=name, causal=causal, out=o, lse=lse)[0]

                def first(out, impl=impl, ws=ws):
                    nonlocal o_flash
                    row["peak_extra_mib"] = (torch.cuda.max_memory_allocated() - base_alloc + ws) / 2**20
                    if impl == "sdpa:flash":
                        o_flash = out
                    elif o_flash is not None:
                        row["max_abs_diff_vs_flash"] = (out.float() - o_flash.float()).abs().max().item()

                r = timing.time_call(fn, problem_bytes=problem_bytes, flush_l2=flush, reps=reps, min_reps=min(3, reps),
                                     max_time_s=max_time, first_call=first)
                row.update(status="ok", ms=r["median_ms"], ms_min=r["min_ms"], ms_max=r["max_ms"], reps=r["n"],
                           timing=r["method"], flush_l2=int(r["flush_l2"]), tflops=flops / (r["median_ms"] * 1e-3) / 1e12)
                if r["n"] < reps:
                    row["limit"] = "; ".join(filter(None, [row["limit"], f"{r['n']} of {reps} timed calls "
                                                           f"(--time-per-impl {max_time:g} s)"]))
            except ioattn.IoattnError as e:
                row.update(status="refused" if e.code == 2 else "error", error=str(e).splitlines()[0][:200])
            except (RuntimeError, ValueError) as e:
                row.update(status="error", error=(str(e).splitlines() or [type(e).__name__])[0][:200])
            torch.cuda.synchronize()
            del o, lse
            print(f"s{sample} {impl:27s} {dname} d={d:3d} causal={int(causal)} N={n:5d} "
                  + (f"{row['ms']:9.3f} ms {row['tflops']:7.1f} TFLOP/s  ({row['reps']} calls, {row['timing']})"
                     if row["status"] == "ok" else f"{row['status']}: {row['error']}"), flush=True)
        del o_flash
    del q, k, v, qt, kt, vt
    ioattn.release_workspace()
    torch.cuda.empty_cache()
    return rows


if __name__ == "__main__":
    sys.exit(main())

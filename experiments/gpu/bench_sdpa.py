"""ioattn kernels vs torch SDPA (flash, cuDNN) on the H200: one process, same inputs, CUDA events.

    PYTHONPATH=python python3 experiments/gpu/bench_sdpa.py --out DIR [--quick] [--variants v03_fa2_scalar,...]

Configs (FlashAttention-2's benchmark): batch * seqlen = 16384, hidden = 2048 (heads = 2048 / d),
N in {512, 1k, 2k, 4k, 8k, 16k}, d in {64, 128}, bf16 and fp16, causal 0/1. FLOPs by the FA2
convention (include/ioattn/flops.hpp): 4 * B * H * N^2 * d, halved when causal.
Per (config, impl): warm-up calls, then CUDA-event median of up to --iters calls (fewer when one
call is slow, so the scalar variants fit the run), peak device memory beyond the inputs, and the
max |O - O_flash| as a sanity column. Inputs are BSHD (ioattn's layout); SDPA gets the BHSD view
of the same memory (transpose(1, 2), no copy).
Writes DIR/bench.json (raw, with context) and DIR/bench.csv (tidy: impl,dtype,head_dim,causal,
seqlen,batch,heads,ms,tflops,...). Never edit them by hand.
"""
import argparse
import csv
import json
import os
import sys
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
import ioattn  # noqa: E402

SEQLENS = [512, 1024, 2048, 4096, 8192, 16384]
SCALAR = {"v01_naive", "v02_fa1", "v03_fa2_scalar", "v03b_splitkv_scalar"}
# The slowest rungs (about 1-7 TFLOP/s) run only up to --slow-max-n to keep the run inside the
# device call; v03_fa2_scalar, the teaching kernel, runs at every N.
SLOW = {"v01_naive", "v02_fa1", "v03b_splitkv_scalar"}


def fwd_flops(b, h, n, d, causal):
    f = 4.0 * b * h * n * n * d
    return f / 2 if causal else f


def time_ms(fn, iters, budget_s=1.0):
    """Median of CUDA-event timed calls: 1 warm-up, then up to `iters` calls within ~budget_s."""
    fn()
    torch.cuda.synchronize()
    times = []
    t_end = time.time() + budget_s
    for _ in range(iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
        if time.time() > t_end and len(times) >= 3:
            break
    times.sort()
    return times[len(times) // 2], len(times)


def run_context(**extra):
    """What a results file says about its run: GPU, torch/CUDA versions, date, command, timing."""
    return dict(gpu=torch.cuda.get_device_name(), torch=torch.__version__, cuda=torch.version.cuda,
                date=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), command=" ".join(sys.argv),
                timing="CUDA events, median, 1 warm-up", **extra)


def write_results(out_dir, stem, rows, context):
    """OUT_DIR/STEM.json (rows with context) and OUT_DIR/STEM.csv (tidy, one row per dict)."""
    if not rows:
        return
    with open(os.path.join(out_dir, f"{stem}.json"), "w") as f:
        json.dump(dict(context=context, rows=rows), f, indent=1)
    with open(os.path.join(out_dir, f"{stem}.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)


def save(args, rows):
    """Write bench.json and bench.csv (rewritten after every config, so a time cap keeps what ran)."""
    write_results(args.out, "bench", rows,
                  run_context(cudnn=torch.backends.cudnn.version(), flop_convention="4*B*H*N^2*d, /2 causal (FA2)"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--quick", action="store_true", help="N in {1k, 4k}, d = 128, bf16 only")
    ap.add_argument("--variants", default="", help="comma list of ioattn variants (default: all registered)")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--scalar-dtypes", default="bf16", help="dtypes the slow scalar variants run in")
    ap.add_argument("--slow-max-n", type=int, default=4096, help="largest N for " + ", ".join(sorted(SLOW)))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    variants = [v for v in (args.variants.split(",") if args.variants else ioattn.kernels()) if v]
    seqlens = [1024, 4096] if args.quick else SEQLENS
    dims = [128] if args.quick else [64, 128]
    dtypes = {"bf16": torch.bfloat16} if args.quick else {"bf16": torch.bfloat16, "fp16": torch.float16}
    rows = []
    free0, total = torch.cuda.mem_get_info()
    for d in dims:
        h = 2048 // d
        for n in seqlens:
            b = 16384 // n
            for dname, dt in dtypes.items():
                torch.manual_seed(n * 1000 + d)
                q, k, v = (torch.randn(b, n, h, d, device="cuda", dtype=dt) for _ in range(3))  # BSHD
                qt, kt, vt = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)          # BHSD views
                base_alloc = torch.cuda.memory_allocated()
                for causal in (False, True):
                    flops = fwd_flops(b, h, n, d, causal)
                    o_flash = None
                    impls = [("sdpa:flash", SDPBackend.FLASH_ATTENTION), ("sdpa:cudnn", SDPBackend.CUDNN_ATTENTION)]
                    impls += [("ioattn:" + name, None) for name in variants]
                    for impl, backend in impls:
                        name = impl.split(":", 1)[1]
                        if backend is None and name in SCALAR and dname not in args.scalar_dtypes.split(","):
                            continue
                        if backend is None and name in SLOW and n > args.slow_max_n:
                            continue
                        row = dict(impl=impl, dtype=dname, head_dim=d, causal=int(causal), seqlen=n, batch=b,
                                   heads=h, ms=None, tflops=None, iters=0, peak_extra_mib=None,
                                   max_abs_diff_vs_flash=None, error="")
                        try:
                            if backend is not None:
                                def fn(backend=backend):
                                    with sdpa_kernel(backend):
                                        return F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal).transpose(1, 2)
                            else:
                                ws = ioattn.workspace_bytes(name, b, h, h, n, n, d, dname, causal)
                                if ws > 0.6 * free0:
                                    raise ioattn.IoattnError(2, f"workspace {ws / 2**30:.1f} GiB does not fit")
                                def fn(name=name):
                                    return ioattn.forward(q, k, v, kernel=name, causal=causal)[0]
                            torch.cuda.synchronize()
                            torch.cuda.reset_peak_memory_stats()
                            out = fn()
                            torch.cuda.synchronize()
                            peak = torch.cuda.max_memory_allocated() - base_alloc
                            if backend is None:
                                peak += ioattn.workspace_bytes(name, b, h, h, n, n, d, dname, causal)
                            row["peak_extra_mib"] = peak / 2**20
                            if impl == "sdpa:flash":
                                o_flash = out
                            elif o_flash is not None:
                                row["max_abs_diff_vs_flash"] = (out.float() - o_flash.float()).abs().max().item()
                            del out
                            budget = 0.6 if (backend is None and name in SCALAR) else 1.0
                            row["ms"], row["iters"] = time_ms(fn, args.iters, budget)
                            row["tflops"] = flops / (row["ms"] * 1e-3) / 1e12
                        except (RuntimeError, ioattn.IoattnError) as e:
                            row["error"] = str(e).splitlines()[0][:200]
                            torch.cuda.synchronize()
                        rows.append(row)
                        print(f"{impl:22s} {dname} d={d:3d} causal={int(causal)} N={n:5d} "
                              + (f"{row['ms']:9.3f} ms {row['tflops']:7.1f} TFLOP/s" if row["ms"] else row["error"]),
                              flush=True)
                del q, k, v, qt, kt, vt, o_flash
                ioattn.release_workspace()
                torch.cuda.empty_cache()
                save(args, rows)
    save(args, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Block-size study on the GPU: the teaching kernel v03_fa2_scalar timed over a grid of (Br, Bc).

    PYTHONPATH=python IOATTN_CAPI=... python3 experiments/gpu/bench_tiles.py --out DIR
        [--seqlen 8192 --batch 2 --heads 16 --head-dim 128] [--reps 3] [--samples 1]

The default problem is the one `exp_block_size --preset figure` models (H200, FA2 forward, bf16,
N = 8192, batch 2, 16 heads, d = 128), so plots/fig_block_size.py can draw the measurement beside
the model. Every (Br, Bc) the kernel refuses (shared memory, Br <= 64, ...) is kept as a row with
status `refused` and its one-line reason in `error`, never dropped. Timing: experiments/gpu/timing.py
(the method bench_sdpa.py uses); ioattn is called with preallocated outputs. One call takes
0.1-1.6 s here, so the default is 3 timed calls per tile and one sample (--samples 2 for a spread).

Every row carries the launch configuration the kernel really uses for that request (ioattn.kernel_config):
br, bc (the tile asked for is in br_asked, bc_asked; a refused row has no configuration, its br,
bc are the tile asked for and the other columns are empty), stages, threads, smem_bytes, ctas_per_sm, grid,
grid_order, launches, splits. The rows have study = tiles (bench.csv's rows have study = bench).
Writes DIR/tiles.csv (tidy) and DIR/tiles.json (the same rows with context). Never edit them by hand.
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import ioattn  # noqa: E402
import timing  # noqa: E402
from bench_sdpa import CONFIG_COLS, FLOP_CONVENTION, config_columns, fwd_flops  # noqa: E402

KERNEL = "v03_fa2_scalar"
BRS = [8, 16, 32, 64]
BCS = [16, 32, 64, 128, 256]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--seqlen", type=int, default=8192)
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--head-dim", type=int, default=128)
    ap.add_argument("--dtype", default="bf16", choices=["bf16", "fp16"])
    ap.add_argument("--reps", type=int, default=3, help="timed calls per tile")
    ap.add_argument("--samples", type=int, default=1, help="sweeps of the tile grid")
    ap.add_argument("--flush-l2", choices=["auto", "on", "off"], default="auto")
    ap.add_argument("--commit", default="")
    args = ap.parse_args()
    if min(args.seqlen, args.batch, args.heads, args.head_dim, args.reps, args.samples) < 1:
        raise SystemExit("bench_tiles.py: --seqlen, --batch, --heads, --head-dim, --reps, --samples must be >= 1")
    if not hasattr(ioattn, "kernel_config"):
        raise SystemExit("bench_tiles.py: python/ioattn.py has no kernel_config()")
    os.makedirs(args.out, exist_ok=True)
    dt = {"bf16": torch.bfloat16, "fp16": torch.float16}[args.dtype]
    b, h, n, d = args.batch, args.heads, args.seqlen, args.head_dim
    flush = None if args.flush_l2 == "auto" else args.flush_l2 == "on"
    torch.manual_seed(n * 1000 + d)
    q, k, v = (torch.randn(b, n, h, d, device="cuda", dtype=dt) for _ in range(3))  # BSHD
    o, lse = torch.empty_like(q), torch.empty((b, h, n), device="cuda", dtype=torch.float32)
    problem_bytes = 4 * q.nbytes + lse.nbytes
    timing.prepare()
    context = timing.run_context(commit=args.commit or None, out_dir=args.out, flop_convention=FLOP_CONVENTION,
                                 kernel=KERNEL, reps=args.reps, samples=args.samples,
                                 seed="torch.manual_seed(N * 1000 + d)")
    rows = []
    for sample in range(args.samples):
        for br in BRS:
            for bc in BCS:
                row = dict(impl="ioattn:" + KERNEL, study="tiles", dtype=args.dtype, head_dim=d, causal=0, seqlen=n,
                           batch=b, heads=h, sample=sample, br_asked=br, bc_asked=bc, status="", ms=None, ms_min=None,
                           ms_max=None, reps=0, timing="", flush_l2=None, tflops=None)
                row.update({c: "" for c in CONFIG_COLS})
                row["error"] = ""
                try:
                    row.update(config_columns(KERNEL, b, h, n, d, args.dtype, False, br=br, bc=bc))

                    def fn(br=br, bc=bc):
                        return ioattn.forward(q, k, v, kernel=KERNEL, br=br, bc=bc, out=o, lse=lse)[0]
                    r = timing.time_call(fn, problem_bytes=problem_bytes, flush_l2=flush, reps=args.reps,
                                         min_reps=min(3, args.reps))
                    row.update(status="ok", ms=r["median_ms"], ms_min=r["min_ms"], ms_max=r["max_ms"], reps=r["n"],
                               timing=r["method"], flush_l2=int(r["flush_l2"]),
                               tflops=fwd_flops(b, h, n, d, False) / (r["median_ms"] * 1e-3) / 1e12)
                except ioattn.IoattnError as e:
                    row.update(status="refused" if e.code == 2 else "error", error=str(e).splitlines()[0][:200])
                except (RuntimeError, ValueError) as e:
                    row.update(status="error", error=(str(e).splitlines() or [type(e).__name__])[0][:200])
                if row["status"] != "ok" and row["br"] == "":
                    row.update(br=br, bc=bc)  # no configuration runs: br, bc name the tile asked for
                print(f"s{sample} Br={br:3d} Bc={bc:3d} " + (f"{row['ms']:9.3f} ms {row['tflops']:6.2f} TFLOP/s "
                      f"(runs Br={row['br']} Bc={row['bc']}, {row['ctas_per_sm']} CTA/SM)" if row["status"] == "ok"
                      else f"{row['status']}: {row['error']}"), flush=True)
                rows.append(row)
                timing.write_results(args.out, "tiles", rows, context)
    timing.write_results(args.out, "tiles", rows, context)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Block-size study on the GPU: the teaching kernel v03_fa2_scalar timed over a grid of (Br, Bc).

    PYTHONPATH=python python3 experiments/gpu/bench_tiles.py --out DIR [--seqlen 8192 --batch 2 --heads 16 --head-dim 128]

The default problem is the one `exp_block_size --preset figure` models (H200, FA2 forward, bf16,
N = 8192, batch 2, 16 heads, d = 128), so plots/fig_block_size.py can draw the measurement beside
the model. Every (Br, Bc) the kernel refuses (shared memory, Br <= 64, ...) is kept as a row with
its one-line reason in `error`, never dropped. Timing: CUDA events, median, as bench_sdpa.py.
Writes DIR/tiles.csv (tidy: impl,dtype,head_dim,causal,seqlen,batch,heads,br,bc,ms,tflops,iters,error)
and DIR/tiles.json (the same rows with context). Never edit them by hand.
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
import ioattn  # noqa: E402
from bench_sdpa import fwd_flops, run_context, time_ms, write_results  # noqa: E402

KERNEL = "v03_fa2_scalar"
BRS = [8, 16, 32, 64]
BCS = [16, 32, 64, 128, 256]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--seqlen", type=int, default=8192)
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--head-dim", type=int, default=128)
    ap.add_argument("--dtype", default="bf16", choices=["bf16", "fp16"])
    ap.add_argument("--iters", type=int, default=5)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    dt = {"bf16": torch.bfloat16, "fp16": torch.float16}[args.dtype]
    b, h, n, d = args.batch, args.heads, args.seqlen, args.head_dim
    torch.manual_seed(n * 1000 + d)
    q, k, v = (torch.randn(b, n, h, d, device="cuda", dtype=dt) for _ in range(3))  # BSHD
    rows = []
    for br in BRS:
        for bc in BCS:
            row = dict(impl="ioattn:" + KERNEL, dtype=args.dtype, head_dim=d, causal=0, seqlen=n, batch=b,
                       heads=h, br=br, bc=bc, ms=None, tflops=None, iters=0, error="")
            try:
                def fn(br=br, bc=bc):
                    return ioattn.forward(q, k, v, kernel=KERNEL, br=br, bc=bc)[0]
                row["ms"], row["iters"] = time_ms(fn, args.iters, budget_s=2.0)
                row["tflops"] = fwd_flops(b, h, n, d, False) / (row["ms"] * 1e-3) / 1e12
            except ioattn.IoattnError as e:
                row["error"] = str(e).splitlines()[0]
            print(f"Br={br:3d} Bc={bc:3d} " + (f"{row['ms']:9.3f} ms {row['tflops']:6.2f} TFLOP/s"
                                                if row["ms"] else f"refused: {row['error']}"), flush=True)
            rows.append(row)
    write_results(args.out, "tiles", rows, run_context())


if __name__ == "__main__":
    main()

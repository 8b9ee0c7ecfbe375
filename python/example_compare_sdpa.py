"""Compare every ioattn kernel with torch's scaled_dot_product_attention on the same tensors.

    PYTHONPATH=python python3 python/example_compare_sdpa.py [--seqlen 1024] [--head-dim 128] [--causal]

Prints, per kernel: max |O - O_sdpa|, the float64 error of both against an fp64 SDPA on upcast
inputs, and the kernel time of one call (experiments/gpu/timing.py, the project's one timing
method: CUDA-graph replay between events, median of 10). Exit 1 when an ioattn kernel is
further from fp64 than 2x SDPA's own error + 1e-3 (a loose version of the project's error rule).
"""
import argparse
import os
import sys

import torch
import torch.nn.functional as F

import ioattn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "experiments", "gpu"))
from timing import time_call  # noqa: E402


def bench(fn, problem_bytes, iters=10):
    """Median kernel time (ms) of fn by the project's one timing method (L2 flushed when the
    problem's inputs + outputs fit in it)."""
    return time_call(fn, problem_bytes=problem_bytes, reps=iters, min_reps=iters)["median_ms"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--seqlen", type=int, default=1024)
    ap.add_argument("--head-dim", type=int, default=128)
    ap.add_argument("--dtype", default="bf16", choices=["fp16", "bf16"])
    ap.add_argument("--causal", action="store_true")
    args = ap.parse_args()
    dt = torch.bfloat16 if args.dtype == "bf16" else torch.float16
    torch.manual_seed(0)
    shape = (args.batch, args.seqlen, args.heads, args.head_dim)  # BSHD
    q, k, v = (torch.randn(shape, device="cuda", dtype=dt) for _ in range(3))

    def sdpa(q_, k_, v_):  # SDPA takes BHSD
        return F.scaled_dot_product_attention(q_.transpose(1, 2), k_.transpose(1, 2), v_.transpose(1, 2),
                                              is_causal=args.causal).transpose(1, 2)

    o64 = sdpa(q.double(), k.double(), v.double())
    o_ref = sdpa(q, k, v)
    ref_err = (o_ref.double() - o64).abs().max().item()
    print(f"sdpa (default backend): max err vs fp64 {ref_err:.3e}, {bench(lambda: sdpa(q, k, v), 4 * q.nbytes):.3f} ms")
    failed = False
    for name in ioattn.kernels():
        if name == "v01_naive" and args.seqlen > 4096:
            continue
        try:
            o, lse = ioattn.forward(q, k, v, kernel=name, causal=args.causal)
        except ioattn.IoattnError as e:
            print(f"{name:16s} refused: {e}")
            continue
        torch.cuda.synchronize()
        err = (o.double() - o64).abs().max().item()
        diff = (o - o_ref).abs().max().item()
        ms = bench(lambda: ioattn.forward(q, k, v, kernel=name, causal=args.causal, out=o, lse=lse),
                   4 * q.nbytes)
        ok = err <= 2 * ref_err + 1e-3
        failed |= not ok
        print(f"{name:16s} max|O-O_sdpa| {diff:.3e}  err vs fp64 {err:.3e}  {ms:.3f} ms  {'ok' if ok else 'FAIL'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

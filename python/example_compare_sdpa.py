"""Compare every ioattn kernel with torch's scaled_dot_product_attention on the same tensors.

    PYTHONPATH=python python3 python/example_compare_sdpa.py [--seqlen 1024] [--head-dim 128] [--causal]

Prints, per kernel: max |O - O_sdpa|, the float64 error of both against an fp64 SDPA on upcast
inputs, and the time of one call (CUDA events, median of 10). Exit 1 when an ioattn kernel is
further from fp64 than 2x SDPA's own error + 1e-3 (a loose version of the project's error rule).
"""
import argparse
import sys

import torch
import torch.nn.functional as F

import ioattn


def bench(fn, iters=10):
    fn()
    times = []
    for _ in range(iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b))
    return sorted(times)[len(times) // 2]


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
    print(f"sdpa (default backend): max err vs fp64 {ref_err:.3e}, {bench(lambda: sdpa(q, k, v)):.3f} ms")
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
        ms = bench(lambda: ioattn.forward(q, k, v, kernel=name, causal=args.causal))
        ok = err <= 2 * ref_err + 1e-3
        failed |= not ok
        print(f"{name:16s} max|O-O_sdpa| {diff:.3e}  err vs fp64 {err:.3e}  {ms:.3f} ms  {'ok' if ok else 'FAIL'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

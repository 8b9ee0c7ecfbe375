"""kernels/dev/sdpa_peers.py: torch SDPA (flash, cuDNN) at the shapes check_fast timed, same call.

Usage (H200): python3 kernels/dev/sdpa_peers.py ioattn_timings.csv [out.csv]
Reads check_fast's CSV, times the peers at every (dtype, d, causal, N) in it with
triton.testing.do_bench (median, ms), and prints, per shape, the best ioattn variant/tile config,
v05's default, and their ratios to SDPA flash (FlashAttention-2) and SDPA cuDNN.
FLOP convention (include/ioattn/flops.hpp): 4 * B * H * N^2 * d, halved when causal.
"""
import csv
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from triton.testing import do_bench


def flops(b, h, n, d, causal):
    f = 4.0 * b * h * n * n * d
    return f / 2 if causal else f


def time_sdpa(backend, dtype, b, h, n, d, causal):
    g = torch.Generator(device="cuda").manual_seed(0)
    q, k, v = (torch.randn(b, h, n, d, device="cuda", dtype=dtype, generator=g) for _ in range(3))
    with sdpa_kernel([backend]):
        fn = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        try:
            fn()
        except RuntimeError as e:  # backend refused the shape
            print(f"  {backend} refused: {str(e)[:80]}")
            return None
        return do_bench(fn, warmup=25, rep=100, return_mode="median")


def main():
    rows = list(csv.DictReader(open(sys.argv[1])))
    shapes = sorted({(r["dtype"], int(r["head_dim"]), int(r["causal"]), int(r["seqlen"]), int(r["batch"]),
                      int(r["heads"])) for r in rows})
    out = []
    dt = {"bf16": torch.bfloat16, "fp16": torch.float16}
    print(f"{'dtype':5} {'d':>4} {'c':>2} {'N':>6} | {'v05':>6} {'v06':>6} {'best':>6} {'(cfg)':24} | {'flash':>6} "
          f"{'cudnn':>6} | {'v05/fl':>6} {'v06/fl':>6} {'v06/cu':>6} {'best/fl':>7}")
    for (dtype, d, causal, n, b, h) in shapes:
        peers = {}
        for name, be in (("sdpa:flash", SDPBackend.FLASH_ATTENTION), ("sdpa:cudnn", SDPBackend.CUDNN_ATTENTION)):
            ms = time_sdpa(be, dt[dtype], b, h, n, d, bool(causal))
            if ms is not None:
                tf = flops(b, h, n, d, causal) / (ms * 1e-3) / 1e12
                peers[name] = tf
                out.append([name, dtype, d, causal, n, b, h, f"{ms:.5f}", f"{tf:.2f}"])
        mine = [r for r in rows if (r["dtype"], int(r["head_dim"]), int(r["causal"]), int(r["seqlen"])) ==
                (dtype, d, causal, n)]
        best = max(mine, key=lambda r: float(r["tflops"]))
        v05 = [r for r in mine if r["impl"] == "ioattn:v05"]
        v05tf = float(v05[0]["tflops"]) if v05 else float("nan")
        v06 = [r for r in mine if r["impl"] == "ioattn:v06"]
        v06tf = float(v06[0]["tflops"]) if v06 else float("nan")
        fl, cu = peers.get("sdpa:flash", float("nan")), peers.get("sdpa:cudnn", float("nan"))
        print(f"{dtype:5} {d:4} {causal:2} {n:6} | {v05tf:6.1f} {v06tf:6.1f} {float(best['tflops']):6.1f} "
              f"{best['impl'][7:]:24} | {fl:6.1f} {cu:6.1f} | {v05tf / fl:6.2f} {v06tf / fl:6.2f} {v06tf / cu:6.2f} "
              f"{float(best['tflops']) / fl:7.2f}")
    if len(sys.argv) > 2:
        with open(sys.argv[2], "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["impl", "dtype", "head_dim", "causal", "seqlen", "batch", "heads", "ms", "tflops"])
            w.writerows(out)


if __name__ == "__main__":
    main()

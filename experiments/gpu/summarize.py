"""The short table run_h200.sh prints last: TFLOP/s per impl for bf16 (and fp16 ratios), from bench.csv.

    python3 experiments/gpu/summarize.py DIR      (DIR holds bench.csv, optionally ncu.csv)
"""
import csv
import os
import sys
from collections import defaultdict


def main(d):
    path = os.path.join(d, "bench.csv")
    if not os.path.exists(path):
        print("no bench.csv")
        return 1
    rows = list(csv.DictReader(open(path)))
    impls = []
    for r in rows:
        if r["impl"] not in impls:
            impls.append(r["impl"])
    t = defaultdict(dict)
    for r in rows:
        if r["tflops"]:
            t[(r["dtype"], r["head_dim"], r["causal"], r["seqlen"])][r["impl"]] = float(r["tflops"])
    short = [i.replace("ioattn:", "").replace("sdpa:", "") for i in impls]
    print("TFLOP/s (FA2 convention); best/flash = best ioattn variant over SDPA flash")
    print(f"{'dt':4s} {'d':>3s} {'c':1s} {'N':>5s} " + " ".join(f"{s[:9]:>9s}" for s in short) + "  best/flash")
    for key in sorted(t, key=lambda k: (k[0], int(k[1]), k[2], int(k[3]))):
        vals = t[key]
        best = max((v for i, v in vals.items() if i.startswith("ioattn:")), default=None)
        flash = vals.get("sdpa:flash")
        ratio = f"{best / flash:9.2f}" if best and flash else "        -"
        print(f"{key[0]:4s} {key[1]:>3s} {key[2]:1s} {key[3]:>5s} "
              + " ".join(f"{vals[i]:9.1f}" if i in vals else f"{'-':>9s}" for i in impls) + "  " + ratio)
    ncu = os.path.join(d, "ncu.csv")
    if os.path.exists(ncu):
        print("\nncu (bf16, d=128, non-causal): DRAM read / compulsory, L2 bytes / compulsory")
        for r in csv.DictReader(open(ncu)):
            if r["dram_read_bytes"]:
                c = float(r["compulsory_bytes"])
                print(f"{r['impl']:22s} N={r['seqlen']:>5s} read/comp {float(r['dram_read_bytes']) / c:8.2f}  "
                      f"L2/comp {float(r['l2_bytes']) / c:9.2f}  {float(r['gpu_time_ms']):9.3f} ms")
            else:
                print(f"{r['impl']:22s} N={r['seqlen']:>5s} {r['error']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))

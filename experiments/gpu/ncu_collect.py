"""DRAM and L2 bytes of every ioattn variant from Nsight Compute, one launch each.

    python3 experiments/gpu/ncu_collect.py --ioattn build-gpu/carry/ioattn --out DIR [--seqlens 1024,4096,16384]

For each variant and N: `ncu --clock-control none --profile-from-start off --print-units base --csv
--metrics dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,gpu__time_duration.sum
ioattn run --kernel V ... --profile` (one launch between cudaProfilerStart/Stop; all the kernels of
that launch are summed, e.g. v01's three passes). Config: bf16, d = 128, 16 heads, batch*N = 16384,
non-causal. Writes DIR/ncu.csv (tidy) and DIR/ncu_raw/<variant>_<N>.csv (ncu's own output).
Compulsory bytes = Q, K, V read + O written once (2 bytes each) + LSE (4 bytes) written.
"""
import argparse
import csv
import io
import os
import subprocess
import sys

METRICS = ["dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_bytes.sum", "gpu__time_duration.sum"]


def save(out_dir, rows):
    with open(os.path.join(out_dir, "ncu.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ioattn", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seqlens", default="1024,4096,16384")
    ap.add_argument("--variants", default="")
    ap.add_argument("--naive-max", type=int, default=4096, help="largest N for v01_naive (its N^2 buffers under replay)")
    ap.add_argument("--timeout", type=int, default=120)
    args = ap.parse_args()
    raw_dir = os.path.join(args.out, "ncu_raw")
    os.makedirs(raw_dir, exist_ok=True)
    if args.variants:
        variants = args.variants.split(",")
    else:
        listing = subprocess.run([args.ioattn, "kernels"], capture_output=True, text=True, check=True).stdout
        variants = [line.split()[0] for line in listing.splitlines()[1:] if line.strip() and not line.startswith("(")]
    d, heads, dtype = 128, 16, "bf16"
    rows = []
    for n in [int(x) for x in args.seqlens.split(",")]:
        b = 16384 // n
        for v in variants:
            row = dict(impl="ioattn:" + v, dtype=dtype, head_dim=d, causal=0, seqlen=n, batch=b, heads=heads,
                       kernels=0, dram_read_bytes=None, dram_write_bytes=None, l2_bytes=None, gpu_time_ms=None,
                       compulsory_bytes=2 * 4 * b * n * heads * d + 4 * b * heads * n, error="")
            if v == "v01_naive" and n > args.naive_max:
                row["error"] = f"skipped: N > {args.naive_max} (N^2 workspace under ncu replay)"
                rows.append(row)
                continue
            cmd = ["ncu", "--clock-control", "none", "--profile-from-start", "off", "--print-units", "base",
                   "--csv", "--metrics", ",".join(METRICS), args.ioattn, "run", "--kernel", v, "--batch", str(b),
                   "--heads", str(heads), "--seqlen", str(n), "--head-dim", str(d), "--dtype", dtype, "--profile"]
            try:
                res = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
                out = res.stdout
                with open(os.path.join(raw_dir, f"{v}_{n}.csv"), "w") as f:
                    f.write(out + "\n# stderr\n" + res.stderr[-2000:])
                start = out.find('"ID"')
                if res.returncode != 0 or start < 0:
                    raise RuntimeError(f"ncu rc={res.returncode}: {(res.stderr or out).strip().splitlines()[-1:]}")
                sums, ids = {m: 0.0 for m in METRICS}, set()
                for r in csv.DictReader(io.StringIO(out[start:])):
                    if r.get("Metric Name") in sums:
                        sums[r["Metric Name"]] += float(r["Metric Value"].replace(",", ""))
                        ids.add(r["ID"])
                row.update(kernels=len(ids), dram_read_bytes=sums["dram__bytes_read.sum"],
                           dram_write_bytes=sums["dram__bytes_write.sum"], l2_bytes=sums["lts__t_bytes.sum"],
                           gpu_time_ms=sums["gpu__time_duration.sum"] * 1e-6)
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                row["error"] = str(e)[:200]
            rows.append(row)
            save(args.out, rows)  # after every row: a time cap keeps what ran
            print(f"ncu {v:16s} N={n:5d} " + (f"read {row['dram_read_bytes'] / 1e6:10.1f} MB  write "
                  f"{row['dram_write_bytes'] / 1e6:9.1f} MB  L2 {row['l2_bytes'] / 1e6:10.1f} MB  "
                  f"{row['gpu_time_ms']:9.3f} ms" if not row["error"] else row["error"]), flush=True)
    save(args.out, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""DRAM and L2 bytes of every ioattn variant from Nsight Compute, one forward each.

    PYTHONPATH=python IOATTN_CAPI=... python3 experiments/gpu/ncu_collect.py --ioattn build-gpu/carry/ioattn
        --out DIR [--seqlens 1024,4096,16384] [--variants v05_fa2_fast,...] [--time-cap 300]

For each variant and N: `ncu --clock-control none --profile-from-start off --print-units base --csv
--metrics dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,gpu__time_duration.sum
ioattn run --kernel V ... --profile` (one forward between cudaProfilerStart/Stop; all the kernels
of that forward are summed, e.g. v01's three passes). Config: bf16, d = 128, 16 heads,
batch * N = 16384, non-causal.

Metrics, named for what they are (bytes are 1-byte units, element size 2 for bf16):
  compulsory_read_bytes   Q + K + V, each read once          = 3 * B*N*H*d * 2
  compulsory_write_bytes  O + LSE, each written once         = B*N*H*d * 2 + B*H*N * 4
  dram_read_over_compulsory_read    dram__bytes_read.sum  / compulsory_read_bytes
  dram_write_over_compulsory_write  dram__bytes_write.sum / compulsory_write_bytes
  flop_per_dram_byte      FA2-convention FLOPs (4 B H N^2 d) / (DRAM read + write bytes)
DRAM write can fall below the compulsory write (0.89-0.98 in earlier runs), presumably because
lines of O still dirty in the L2 when the kernel ends are written back after the profiled range
(not established).
Every row carries the variant's launch configuration (ioattn.kernel_config: br, bc, stages,
threads, smem_bytes, ctas_per_sm, grid_x/y/z, grid_order, launches, splits), the block and grid
ncu saw for the first kernel launched (ncu_block, ncu_grid) and whether they agree
(config_check: "matches ncu" or "MISMATCH: ...").
A point not profiled (v01 above --naive-max, --time-cap reached) is a row with its reason in
`error`, never dropped. Writes DIR/ncu.csv (tidy, rewritten after every row) and
DIR/ncu_raw/<variant>_<N>.csv (ncu's own output).
"""
import argparse
import csv
import io
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
METRICS = ["dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_bytes.sum", "gpu__time_duration.sum"]
CONFIG_COLS = ["br", "bc", "stages", "threads", "smem_bytes", "ctas_per_sm", "grid_x", "grid_y", "grid_z",
               "grid_order", "launches", "splits"]


def compulsory(b, n, h, d, elem=2):
    """(read, write) bytes of one forward: Q, K, V read once; O and the fp32 LSE written once."""
    return 3 * b * n * h * d * elem, b * n * h * d * elem + 4 * b * h * n


def fwd_flops(b, h, n, d, causal=False):
    f = 4.0 * b * h * n * n * d
    return f / 2 if causal else f


def ratios(read, write, comp_read, comp_write, flops):
    """The derived columns of one profiled row."""
    return dict(dram_read_over_compulsory_read=read / comp_read, dram_write_over_compulsory_write=write / comp_write,
                flop_per_dram_byte=flops / (read + write) if read + write > 0 else None)


def parse_ncu_csv(out):
    """({metric: sum over every profiled kernel}, number of kernels, (block, grid) of the first
    kernel launched, as ncu prints them: "(x, y, z)") from ncu --csv output."""
    start = out.find('"ID"')
    if start < 0:
        return None, 0, None
    sums, ids, first = {m: 0.0 for m in METRICS}, set(), {}
    for r in csv.DictReader(io.StringIO(out[start:])):
        if r.get("Metric Name") in sums:
            sums[r["Metric Name"]] += float(r["Metric Value"].replace(",", ""))
            ids.add(r["ID"])
            first.setdefault(int(r["ID"]), (r.get("Block Size", ""), r.get("Grid Size", "")))
    return sums, len(ids), (first[min(first)] if first else None)


def dims(text):
    """'(128, 1, 1)' -> (128, 1, 1); None for anything else."""
    try:
        v = tuple(int(x) for x in text.strip().strip("()").split(","))
        return v if len(v) == 3 else None
    except (AttributeError, ValueError):
        return None


def config_check(row, launch):
    """Does the registry's configuration (threads, grid of the main kernel) match the first kernel
    ncu saw? (the main kernel is the first one launched: v01's scores pass, v03b's partial pass)"""
    if launch is None or row["threads"] in ("", None):
        return "not checked"
    block, grid = dims(launch[0]), dims(launch[1])
    want_grid = tuple(int(row[c]) for c in ("grid_x", "grid_y", "grid_z"))
    if block is None or grid is None:
        return "not checked (ncu printed no block/grid)"
    if block[0] * block[1] * block[2] == int(row["threads"]) and grid == want_grid:
        return "matches ncu"
    return f"MISMATCH: registry threads {row['threads']} grid {want_grid}, ncu block {block} grid {grid}"


def save(out_dir, rows):
    with open(os.path.join(out_dir, "ncu.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ioattn", required=True, help="the ioattn CLI (build-gpu/carry/ioattn)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--seqlens", default="1024,4096,16384")
    ap.add_argument("--variants", default="", help="comma list (default: every registered variant)")
    ap.add_argument("--naive-max", type=int, default=4096, help="largest N for v01_naive (its N^2 buffers under replay)")
    ap.add_argument("--timeout", type=int, default=120, help="cap (s) on one profile")
    ap.add_argument("--time-cap", type=float, default=0, help="start no profile after this many seconds (0: none)")
    args = ap.parse_args()
    try:
        seqlens = [int(x) for x in args.seqlens.split(",") if x]
    except ValueError:
        raise SystemExit(f"ncu_collect.py: --seqlens wants N[,N...], got '{args.seqlens}'")
    if not seqlens or any(n < 1 or 16384 % n for n in seqlens):
        raise SystemExit("ncu_collect.py: every N of --seqlens must divide 16384 (batch * N = 16384)")
    try:
        import ioattn
        registered = list(ioattn.kernels())
    except Exception as e:  # noqa: BLE001 - no library, no config columns: say so and stop
        raise SystemExit(f"ncu_collect.py: cannot load python/ioattn.py's library (set IOATTN_CAPI): {e}")
    if not hasattr(ioattn, "kernel_config"):
        raise SystemExit("ncu_collect.py: python/ioattn.py has no kernel_config()")
    variants = [v for v in args.variants.split(",") if v] if args.variants else registered
    unknown = [v for v in variants if v not in registered]
    if unknown:
        raise SystemExit(f"ncu_collect.py: unknown variant(s) {', '.join(unknown)}")
    raw_dir = os.path.join(args.out, "ncu_raw")
    os.makedirs(raw_dir, exist_ok=True)
    d, heads, dtype = 128, 16, "bf16"
    t0 = time.monotonic()
    rows = []
    for n in seqlens:
        b = 16384 // n
        comp_read, comp_write = compulsory(b, n, heads, d)
        flops = fwd_flops(b, heads, n, d)
        for v in variants:
            row = dict(impl="ioattn:" + v, dtype=dtype, head_dim=d, causal=0, seqlen=n, batch=b, heads=heads,
                       kernels=0, dram_read_bytes=None, dram_write_bytes=None, l2_bytes=None, gpu_time_ms=None,
                       compulsory_read_bytes=comp_read, compulsory_write_bytes=comp_write, flops=flops,
                       dram_read_over_compulsory_read=None, dram_write_over_compulsory_write=None,
                       flop_per_dram_byte=None)
            row.update({c: "" for c in CONFIG_COLS})
            row.update(ncu_block="", ncu_grid="", config_check="", error="")
            rows.append(row)
            try:
                cfg = ioattn.kernel_config(v, b, heads, heads, n, n, d, dtype, causal=False, window=(-1, -1),
                                           br=0, bc=0, splits=0)
                row.update({c: cfg.get(c, "") for c in CONFIG_COLS})
            except ioattn.IoattnError as e:
                row["error"] = f"refused: {str(e).splitlines()[0][:180]}"
            elapsed = time.monotonic() - t0
            if row["error"]:
                pass
            elif v == "v01_naive" and n > args.naive_max:
                row["error"] = f"not profiled: N > {args.naive_max} (--naive-max; N^2 workspace under ncu replay)"
            elif args.time_cap and elapsed > args.time_cap - 10:
                row["error"] = f"not profiled: --time-cap {args.time_cap:.0f} s reached"
            else:
                limit = args.timeout if not args.time_cap else max(10, min(args.timeout, args.time_cap - elapsed))
                cmd = ["ncu", "--clock-control", "none", "--profile-from-start", "off", "--print-units", "base",
                       "--csv", "--metrics", ",".join(METRICS), args.ioattn, "run", "--kernel", v, "--batch", str(b),
                       "--heads", str(heads), "--seqlen", str(n), "--head-dim", str(d), "--dtype", dtype, "--profile"]
                try:
                    res = subprocess.run(cmd, capture_output=True, text=True, timeout=limit)
                    with open(os.path.join(raw_dir, f"{v}_{n}.csv"), "w") as f:
                        f.write(res.stdout + "\n# stderr\n" + res.stderr[-2000:])
                    sums, kernels, launch = parse_ncu_csv(res.stdout)
                    if res.returncode != 0 or sums is None or kernels == 0:
                        tail = (res.stderr or res.stdout).strip().splitlines()[-1:]
                        raise RuntimeError(f"ncu rc={res.returncode}, {kernels} kernels: {tail}")
                    read, write = sums["dram__bytes_read.sum"], sums["dram__bytes_write.sum"]
                    row.update(kernels=kernels, dram_read_bytes=read, dram_write_bytes=write,
                               l2_bytes=sums["lts__t_bytes.sum"], gpu_time_ms=sums["gpu__time_duration.sum"] * 1e-6,
                               ncu_block=launch[0], ncu_grid=launch[1], config_check=config_check(row, launch),
                               **ratios(read, write, comp_read, comp_write, flops))
                except subprocess.TimeoutExpired:
                    row["error"] = f"ncu timed out after {limit:.0f} s"
                except (RuntimeError, OSError) as e:
                    row["error"] = str(e)[:200]
            save(args.out, rows)  # after every row: a time cap keeps what ran
            print(f"ncu {v:20s} N={n:5d} " + (
                f"read/comp_read {row['dram_read_over_compulsory_read']:7.2f}  write/comp_write "
                f"{row['dram_write_over_compulsory_write']:5.2f}  FLOP/B {row['flop_per_dram_byte']:8.1f}  "
                f"L2 {row['l2_bytes'] / 1e6:10.1f} MB  {row['gpu_time_ms']:9.3f} ms  (Br={row['br']} Bc={row['bc']})"
                if not row["error"] else row["error"]), flush=True)
    save(args.out, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""H200 measurements the simulator README compares the model with, beside h200_ncu_l2.csv.

  python3 simulator/validate/h200_anchors.py --out DIR        (on the H200: needs torch and ncu)

Writes, each with a context header (commit, date, device, driver, torch, command):
  DIR/h200_sdpa_ncu.csv     DRAM read/write, L2 bytes and GPU time of one PyTorch SDPA forward per config,
                            summed over every kernel of that forward (the math backend launches many),
                            from `ncu --clock-control none --profile-from-start off --print-units base`
                            around ncu_sdpa_l2.py (3 warm-ups, one profiled call). Configs: bf16, 16 heads,
                            d = 128, batch * N = 16384 (flash at N = 1k, 4k, 4k causal; math at 1k, 4k)
                            and a repeat of h200_ncu_l2.csv's N = 131072 row (run-to-run variation).
  DIR/h200_sdpa_memory.csv  peak extra memory of one forward+backward (B = 1, H = 16, d = 64, bf16,
                            non-causal) for the math and flash backends, N = 128 .. 16384:
                            torch.cuda.max_memory_allocated() during forward + backward minus the
                            memory allocated just before it (Q, K, V with requires_grad and dO exist).
"""
import argparse
import csv
import datetime
import io
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
METRICS = ["dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_bytes.sum", "gpu__time_duration.sum"]
# (N, B, H, D, causal, backend)
NCU_CONFIGS = [(1024, 16, 16, 128, 0, "flash"), (4096, 4, 16, 128, 0, "flash"), (4096, 4, 16, 128, 1, "flash"),
               (1024, 16, 16, 128, 0, "math"), (4096, 4, 16, 128, 0, "math"), (131072, 1, 16, 128, 0, "flash")]
MEMORY_SEQLENS = [128, 256, 512, 1024, 2048, 4096, 8192, 16384]


def sh(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def context(command, commit):
    import torch
    if not commit:
        root = os.path.dirname(os.path.dirname(HERE))
        commit = sh(["git", "-C", root, "rev-parse", "HEAD"])
        dirty = sh(["git", "-C", root, "status", "--porcelain", "--untracked-files=no", "--", "simulator/validate"])
        commit += "+dirty" if dirty not in ("", "unknown") else ""
    return [f"commit: {commit}",
            f"date: {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')}",
            "device: " + sh(["nvidia-smi", "--query-gpu=name,driver_version,clocks.max.sm", "--format=csv,noheader"]),
            f"torch {torch.__version__} cuda {torch.version.cuda} cudnn {torch.backends.cudnn.version()}",
            f"command: {command}"]


def write_csv(path, header_lines, rows):
    with open(path, "w", newline="") as f:
        for line in header_lines:
            f.write(f"# {line}\n")
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)


def ncu_row(ncu, n, b, h, d, causal, backend, raw_dir):
    name = f"n{n}_b{b}_h{h}_d{d}_c{causal}_{backend}"
    cmd = [ncu, "--clock-control", "none", "--profile-from-start", "off", "--print-units", "base", "--csv",
           "--metrics", ",".join(METRICS), sys.executable, os.path.join(HERE, "ncu_sdpa_l2.py"),
           str(n), str(b), str(h), str(d), str(causal), backend]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    with open(os.path.join(raw_dir, name + ".csv"), "w") as f:
        f.write(res.stdout + "\n# stderr\n" + res.stderr[-4000:])
    start = res.stdout.find('"ID"')
    if res.returncode != 0 or start < 0:
        raise RuntimeError(f"{name}: ncu rc={res.returncode}: {res.stderr.strip().splitlines()[-1:]}")
    sums, ids, names = {m: 0.0 for m in METRICS}, set(), []
    for r in csv.DictReader(io.StringIO(res.stdout[start:])):
        if r.get("Metric Name") in sums:
            sums[r["Metric Name"]] += float(r["Metric Value"].replace(",", ""))
            if r["ID"] not in ids:
                ids.add(r["ID"])
                names.append(r["Kernel Name"])
    return dict(config=name, seqlen=n, batch=b, heads=h, head_dim=d, causal=causal, backend=backend,
                kernels=len(ids), dram_read_bytes=int(sums["dram__bytes_read.sum"]),
                dram_write_bytes=int(sums["dram__bytes_write.sum"]), lts_bytes=int(sums["lts__t_bytes.sum"]),
                gpu_time_ns=int(sums["gpu__time_duration.sum"]), first_kernel=names[0][:200] if names else "")


def memory_row(n, backend):
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    be = {"flash": SDPBackend.FLASH_ATTENTION, "math": SDPBackend.MATH}[backend]
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 16, n, 64, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
    do = torch.randn(1, 16, n, 64, device="cuda", dtype=torch.bfloat16)
    with sdpa_kernel(be):
        F.scaled_dot_product_attention(q, k, v).backward(do)  # warm-up (workspaces, cuBLAS handles)
        q.grad = k.grad = v.grad = None
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        F.scaled_dot_product_attention(q, k, v).backward(do)
        torch.cuda.synchronize()
        peak = torch.cuda.max_memory_allocated() - base
    del q, k, v, do
    torch.cuda.empty_cache()
    return dict(backend=backend, batch=1, heads=16, seqlen=n, head_dim=64, dtype="bf16", causal=0,
                peak_extra_bytes=int(peak))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--ncu", default="ncu")
    ap.add_argument("--commit", default="", help="the source commit, where the copy has no git metadata")
    args = ap.parse_args()
    raw_dir = os.path.join(args.out, "ncu_raw")
    os.makedirs(raw_dir, exist_ok=True)
    command = "python3 simulator/validate/h200_anchors.py --out " + os.path.basename(os.path.abspath(args.out))
    ctx = context(command, args.commit)
    mem = [memory_row(n, be) for be in ("math", "flash") for n in MEMORY_SEQLENS]
    write_csv(os.path.join(args.out, "h200_sdpa_memory.csv"),
              ctx + ["peak_extra_bytes: torch.cuda.max_memory_allocated() during one forward+backward minus "
                     "memory_allocated() just before it (Q, K, V, dO allocated); after one warm-up"], mem)
    for r in mem:
        print(f"memory {r['backend']:5s} N={r['seqlen']:6d} {r['peak_extra_bytes'] / 2**20:10.1f} MiB", flush=True)
    rows = []
    for cfg in NCU_CONFIGS:
        rows.append(ncu_row(args.ncu, *cfg, raw_dir))
        print(f"ncu {rows[-1]['config']}: read {rows[-1]['dram_read_bytes'] / 1e6:.1f} MB, "
              f"{rows[-1]['kernels']} kernels", flush=True)
        write_csv(os.path.join(args.out, "h200_sdpa_ncu.csv"),
                  ctx + ["ncu --clock-control none --profile-from-start off --print-units base --metrics "
                         + ",".join(METRICS) + " python3 ncu_sdpa_l2.py N B H D CAUSAL BACKEND; "
                         "every kernel of the profiled forward summed"], rows)


if __name__ == "__main__":
    main()

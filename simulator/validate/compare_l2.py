"""Model vs. DRAM counters: prints a markdown table for simulator/README.md.

  python3 simulator/validate/compare_l2.py build-sim/apps/ioattn simulator/validate/h200_ncu_l2.csv

Each measured row names its config (n<N>_b<B>_h<H>_d<D>_c<causal>) and kernel traits
Flash_fwd_kernel_traits<D, kBlockM, kBlockN, ...>; the model runs `ioattn simulate` on the h200 with
Br = kBlockM, Bc = kBlockN, once L2-aware and once --no-l2.
"""
import csv
import json
import re
import subprocess
import sys


def simulate(ioattn, n, b, h, d, causal, br, bc, no_l2):
    cmd = [ioattn, "simulate", "--machine", "h200", "--strategy", "fa2", "--seqlen", str(n), "--batch", str(b),
           "--heads", str(h), "--head-dim", str(d), "--dtype", "bf16", "--br", str(br), "--bc", str(bc), "--json"]
    if causal:
        cmd.append("--causal")
    if no_l2:
        cmd.append("--no-l2")
    return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)


def main():
    ioattn, path = sys.argv[1], sys.argv[2]
    rows = [r for r in csv.DictReader(line for line in open(path) if not line.startswith("#"))]
    print("| config | Br x Bc | compulsory read | measured DRAM read | model read (regime) | model / measured | no-L2 read | measured time | model time |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        n, b, h, d, c = (int(x) for x in re.match(r"n(\d+)_b(\d+)_h(\d+)_d(\d+)_c(\d)", r["config"]).groups())
        d_t, br, bc = (int(x) for x in re.search(r"Flash_fwd_kernel_traits<(\d+), (\d+), (\d+)", r["kernel"]).groups())
        assert d_t == d
        m = simulate(ioattn, n, b, h, d, c, br, bc, False)
        z = simulate(ioattn, n, b, h, d, c, br, bc, True)
        meas = int(r["dram_read_bytes"])
        print(f"| N={n} H={h} d={d}{' causal' if c else ''} | {br}x{bc} | {m['hbm_compulsory']['read']/1e9:.3f} GB "
              f"| {meas/1e9:.3f} GB | {m['hbm_read_bytes']/1e9:.3f} GB ({m['l2_regime']}) "
              f"| {m['hbm_read_bytes']/meas:.2f} | {z['hbm_read_bytes']/1e9:.1f} GB "
              f"| {int(r['gpu_time_ns'])/1e6:.2f} ms | {m['time_s']*1e3:.2f} ms |")


if __name__ == "__main__":
    main()

"""Write the measured table of kernels/README.md from a committed H200 results folder (no typed numbers).

    /usr/bin/python3 experiments/gpu/readme_table.py experiments/results/h200/<tag> [<ncu tag> ...] [kernels/README.md]

Replaces the lines between <!-- MEASURED:BEGIN --> and <!-- MEASURED:END --> with one row per
impl: TFLOP/s (FA2 convention) for bf16 at several (d, causal, N) from the first folder's
bench.csv, and the DRAM bytes read over the compulsory bytes at N = 4096 from the ncu.csv of every
folder given (a later folder's point replaces an earlier one: a run that completes another's ncu
stage).
"""
import csv
import os
import sys

NVIDIA_ONLY = {"ioattn:v06_fa2_wgmma"}  # supports() refuses on AMD (its header)
COLS = [("128", "0", "1024"), ("128", "0", "4096"), ("128", "0", "16384"), ("128", "1", "16384"),
        ("64", "0", "16384"), ("64", "1", "16384")]


def main(*args):
    readme = args[-1] if args and args[-1].endswith(".md") else "kernels/README.md"
    folders = [a for a in args if not a.endswith(".md")]
    res = folders[0]
    rows = list(csv.DictReader(open(os.path.join(res, "bench.csv"))))
    tf, impls = {}, []
    for r in rows:
        if r["dtype"] == "bf16" and r["tflops"]:
            tf[(r["impl"], r["head_dim"], r["causal"], r["seqlen"])] = float(r["tflops"])
            if r["impl"] not in impls:
                impls.append(r["impl"])
    dram, ncu_files = {}, []
    for folder in folders:
        ncu = os.path.join(folder, "ncu.csv")
        if not os.path.exists(ncu):
            continue
        ncu_files.append(f"`{ncu}`")
        for r in csv.DictReader(open(ncu)):
            if r["dram_read_bytes"] and r["seqlen"] == "4096":
                dram[r["impl"]] = float(r["dram_read_bytes"]) / float(r["compulsory_bytes"])
    head = " | ".join(f"d{d} {'causal' if c == '1' else 'non-causal'} N={int(n) // 1024}k" for d, c, n in COLS)
    lines = [f"Measured on the H200, bf16, TFLOP/s by the FA2 convention, from `{res}/bench.csv`; DRAM",
             f"bytes from {' and '.join(ncu_files) or 'no ncu.csv'} (written by",
             "`experiments/gpu/readme_table.py`; '-' = not run at that size).", "",
             f"| impl | {head} | DRAM read / compulsory (N=4k, d128) | AMD |",
             "|---" * (len(COLS) + 3) + "|"]
    for impl in impls:
        vals = " | ".join(f"{tf[(impl, d, c, n)]:.1f}" if (impl, d, c, n) in tf else "-" for d, c, n in COLS)
        amd = ("n/a" if not impl.startswith("ioattn:") else
               "none: wgmma is NVIDIA sm_90a; refused on AMD" if impl in NVIDIA_ONLY else
               "compiled (gfx90a, gfx940), not run")
        dr = f"{dram[impl]:.2f}" if impl in dram else "-"
        lines.append(f"| `{impl}` | {vals} | {dr} | {amd} |")
    text = open(readme).read()
    a, b = "<!-- MEASURED:BEGIN -->", "<!-- MEASURED:END -->"
    i, j = text.index(a) + len(a), text.index(b)
    open(readme, "w").write(text[:i] + "\n" + "\n".join(lines) + "\n" + text[j:])
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    sys.exit(main(*sys.argv[1:]))

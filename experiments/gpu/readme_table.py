"""Write the measured table of kernels/README.md from a committed H200 results folder (no typed numbers).

    /usr/bin/python3 experiments/gpu/readme_table.py experiments/results/h200/<tag> [<ncu tag> ...] [kernels/README.md]

Replaces the lines between <!-- MEASURED:BEGIN --> and <!-- MEASURED:END --> with one row per
impl: TFLOP/s (FA2 convention) for bf16 at several (d, causal, N) from the first folder's
bench.csv, and DRAM read / compulsory read (Q + K + V) and DRAM write / compulsory write (O + LSE)
at N = 4096, d = 128 from the ncu.csv of every folder given (a later folder's point replaces an
earlier one: a run that completes another's ncu stage). With two samples in bench.csv (the
current format) a cell is "mean ±spread", spread = |s0 - s1| / mean (timing.spread); a folder of
the old format (one sample) gives plain numbers. Compulsory bytes come from the ncu.csv columns
where present, else from the row's shape (old folders).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from summarize import bench_points, impl_order, ncu_compulsory, read_csv  # noqa: E402
from timing import spread  # noqa: E402

NVIDIA_ONLY = {"ioattn:v06_fa2_wgmma"}  # supports() refuses on AMD (its header)
COLS = [(128, 0, 1024), (128, 0, 4096), (128, 0, 16384), (128, 1, 16384), (64, 0, 16384), (64, 1, 16384)]


def cell(samples):
    """'425.7 ±0.4%' from {sample: row} (two or more samples), '425.7' from one."""
    tf = [float(samples[s]["tflops"]) for s in sorted(samples)]
    m = sum(tf) / len(tf)
    return f"{m:.1f} ±{spread(tf[0], tf[1]) * 100:.1f}%" if len(tf) >= 2 else f"{m:.1f}"


def main(*args):
    readme = args[-1] if args and args[-1].endswith(".md") else "kernels/README.md"
    folders = [a.rstrip("/") for a in args if not a.endswith(".md")]
    if not folders:
        raise SystemExit(__doc__)
    res = folders[0]
    rows = read_csv(os.path.join(res, "bench.csv"))
    if not rows:
        raise SystemExit(f"readme_table.py: no bench.csv in {res}")
    pts, impls = bench_points(rows), [i for i in impl_order(rows)]
    nsamples = len({r.get("sample") or "0" for r in rows})
    have = {i for key, v in pts.items() if key[0] == "bf16" for i in v}
    impls = [i for i in impls if i in have]
    dram, ncu_files = {}, []
    for folder in folders:
        ncu = os.path.join(folder, "ncu.csv")
        rs = read_csv(ncu)
        if rs is None:
            continue
        ncu_files.append(f"`{ncu}`")
        for r in rs:
            if r.get("dram_read_bytes") and r["seqlen"] == "4096" and r["head_dim"] == "128":
                cr, cw = ncu_compulsory(r)
                dram[r["impl"]] = (float(r["dram_read_bytes"]) / cr, float(r["dram_write_bytes"]) / cw)
    head = " | ".join(f"d{d} {'causal' if c else 'non-causal'} N={n // 1024}k" for d, c, n in COLS)
    spread_note = (f"mean of {nsamples} samples ±spread |s0 - s1| / mean" if nsamples >= 2 else "one sample")
    lines = [f"Measured on the H200, bf16, TFLOP/s by the FA2 convention ({spread_note}), from `{res}/bench.csv`;",
             f"DRAM bytes from {' and '.join(ncu_files) or 'no ncu.csv'} (written by",
             "`experiments/gpu/readme_table.py`; '-' = not run at that size).", "",
             f"| impl | {head} | DRAM read / compulsory read (N=4k, d128) | DRAM write / compulsory write | AMD |",
             "|---" * (len(COLS) + 4) + "|"]
    for impl in impls:
        vals = " | ".join(cell(pts[("bf16", d, c, n)][impl]) if impl in pts.get(("bf16", d, c, n), {}) else "-"
                          for d, c, n in COLS)
        amd = ("n/a" if not impl.startswith("ioattn:") else
               "none: wgmma is NVIDIA sm_90a; refused on AMD" if impl in NVIDIA_ONLY else
               "compiled (gfx90a, gfx940), not run")
        dr, dw = (f"{dram[impl][0]:.2f}", f"{dram[impl][1]:.2f}") if impl in dram else ("-", "-")
        lines.append(f"| `{impl}` | {vals} | {dr} | {dw} | {amd} |")
    with open(readme) as f:
        text = f.read()
    a, b = "<!-- MEASURED:BEGIN -->", "<!-- MEASURED:END -->"
    if a not in text or b not in text:
        raise SystemExit(f"readme_table.py: {readme} has no {a} ... {b} block")
    i, j = text.index(a) + len(a), text.index(b)
    with open(readme, "w") as f:
        f.write(text[:i] + "\n" + "\n".join(lines) + "\n" + text[j:])
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    sys.exit(main(*sys.argv[1:]))

"""paper/gen_fast.py: the warp-specialized forward's numbers (fast.* values) for paper/gen_numbers.py.

fast(nb) reads the canonical fast-forward benchmark (role `fast` of experiments/results/h200/CANONICAL:
v08_fa3_warpspec and v08p_fa3_persistent beside SDPA cuDNN, bench_sdpa.py's bench.csv, read through
experiments/gpu/readme_table.py's loader as README.md's fast_headline reads it) and the short-N
Nsight Compute reports (experiments/gpu/short_n_gap.py's runs) and sets:
  fast.<rung>.d<d>.long / .short   the range of the rung's speedup over SDPA cuDNN at N >= 2k / N < 2k
                                   (mean over the run's samples per point; bf16 and fp16, causal or not)
  fast.<rung>.d<d>.peak            the rung's highest TFLOP/s at that head dim
  fast.sn.<key>                    v08p against cuDNN at N 512, d 128 in the oldest and the newest
                                   short-N run (ncu duration ratio, DRAM read, global store count and
                                   bytes per sector), causal 0 and 1
  fast.sr.<before|after>.<code|noinst>  v08p's kernel size (KB) and its no_instruction share of the
                                   sampled stalls (%) at causal d 64, N 512, before and after its
                                   mbarrier poll loop was rolled (kernels/dev/stall_regions.py's RUNS)
  fast.runs                        the folders (escaped for TeX)
Nothing when role fast has no rows.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "experiments" / "gpu"))

RUNGS = {"ioattn:v08_fa3_warpspec": "vaeight", "ioattn:v08p_fa3_persistent": "vaeightp"}  # TeX-safe key parts


def fast(nb) -> None:
    from gen_numbers import sig, tex_escape  # the paper's formatting (imported at call time)
    import readme_table as rt
    import short_n_gap as sg
    import results_index as results

    dirs = results.canonical().get("fast", [])
    if not dirs:
        return
    for d in dirs:
        f = d / "bench.csv"
        if f.exists():
            nb.use(f)
    pts = rt.bench_points(rt.load_fast(), "fwd")
    if not pts:
        return
    for impl, key in RUNGS.items():
        for d in sorted({k[1] for k in pts}, key=int):
            hi, lo = rt.speedups_by_n(pts, impl, "sdpa:cudnn", d)
            tf = [rt.mean_of(v[impl], "tflops") for k, v in pts.items() if k[1] == d and impl in v]
            span = lambda xs: f"{min(xs):.2f}--{max(xs):.2f}"  # noqa: E731
            if hi:
                nb.val(f"fast.{key}.d{d}.long", span(hi))
            if lo:
                nb.val(f"fast.{key}.d{d}.short", span(lo))
            if tf:
                nb.val(f"fast.{key}.d{d}.peak", f"{max(tf):.0f}")
    nb.val("fast.runs", ", ".join(r"\texttt{" + tex_escape(d.name) + "}" for d in dirs))

    sys.path.insert(0, str(REPO / "kernels" / "dev"))
    import stall_regions as sr
    stem = sr.PAGES[0][0]  # causal d 64, N 512
    for when, run in sr.RUNS.items():
        if (REPO / run / f"{stem}.source.csv.xz").exists():
            nb.sources.add(str(results.rel(REPO / run / f"{stem}.source.csv.xz")))  # xz: listed, read by stall_regions
            f = sr.page_facts(str(REPO / run), stem)
            nb.val(f"fast.sr.{when}.code", f"{f['code_kb']:.0f}")
            nb.val(f"fast.sr.{when}.noinst", f"{f['share']['no_inst']:.1f}")

    try:
        rows = sg.build(sg.DEFAULT_RUNS, str(REPO))
    except sg.GapError:
        return
    for run in sg.DEFAULT_RUNS:
        for name in sorted(os.listdir(REPO / run)):
            if name.endswith(".csv"):
                nb.use(REPO / run / name)
    for c in (0, 1):
        have = sg.pairs(rows, 512, 128, c)
        for when, (commit, o, p) in (("before", have[0]), ("after", have[-1])) if have else ():
            k = f"fast.sn.c{c}.{when}"
            nb.val(f"{k}.ratio", sig(o["us"] / p["us"], 3))
            nb.val(f"{k}.dram", f"{o['dram'] / 1e6:.0f}")
            nb.val(f"{k}.peerdram", f"{p['dram'] / 1e6:.0f}")
            nb.val(f"{k}.stores", f"{o['st'] / 1e3:.0f}")
            nb.val(f"{k}.bps", f"{o['st_bps']:.1f}")
            nb.val(f"{k}.commit", tex_escape(commit))

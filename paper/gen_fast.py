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
            lo, hi, tf = [], [], []
            for (dt, dd, c, n), v in pts.items():
                if dd != d or impl not in v:
                    continue
                tf.append(rt.mean_of(v[impl], "tflops"))
                if "sdpa:cudnn" in v and rt.tag_of(v[impl]) == rt.tag_of(v["sdpa:cudnn"]):
                    m = rt.ratio(v[impl], v["sdpa:cudnn"])[0]
                    if m is not None:
                        (hi if int(n) >= 2048 else lo).append(m)
            span = lambda xs: f"{min(xs):.2f}--{max(xs):.2f}"  # noqa: E731
            if hi:
                nb.val(f"fast.{key}.d{d}.long", span(hi))
            if lo:
                nb.val(f"fast.{key}.d{d}.short", span(lo))
            if tf:
                nb.val(f"fast.{key}.d{d}.peak", f"{max(tf):.0f}")
    nb.val("fast.runs", ", ".join(r"\texttt{" + tex_escape(d.name) + "}" for d in dirs))

    try:
        rows = sg.build(sg.DEFAULT_RUNS, str(REPO))
    except sg.GapError:
        return
    for run in sg.DEFAULT_RUNS:
        for name in sorted(os.listdir(REPO / run)):
            if name.endswith(".csv"):
                nb.use(REPO / run / name)
    base = [r for r in rows if not r["setting"]]
    runs = list(dict.fromkeys(r["run"] for r in base))
    at = {(r["run"], r["impl"], r["n"], r["d"], r["causal"]): r["facts"] for r in base}
    for c in (0, 1):
        have = [run for run in runs if (run, sg.OURS, 512, 128, c) in at and (run, sg.PEER, 512, 128, c) in at]
        for when, run in (("before", have[0]), ("after", have[-1])) if have else ():
            o, p = at[(run, sg.OURS, 512, 128, c)], at[(run, sg.PEER, 512, 128, c)]
            k = f"fast.sn.c{c}.{when}"
            nb.val(f"{k}.ratio", sig(o["us"] / p["us"], 3))
            nb.val(f"{k}.dram", f"{o['dram'] / 1e6:.0f}")
            nb.val(f"{k}.peerdram", f"{p['dram'] / 1e6:.0f}")
            nb.val(f"{k}.stores", f"{o['st'] / 1e3:.0f}")
            nb.val(f"{k}.bps", f"{o['st_bps']:.1f}")
            nb.val(f"{k}.commit", tex_escape(next(r["commit"] for r in base if r["run"] == run)))

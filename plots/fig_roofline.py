#!/usr/bin/python3
"""fig_roofline: every attention kernel on its machine's roofline (modeled).

The roof is min(peak bf16 FLOP/s, HBM bandwidth x intensity) from the catalog's datasheet numbers
(grey), and from the measured ceilings where the catalog has them (dotted). Each kernel of
standard attention (QK^T, softmax, PV) and of FA1/FA2 is a hollow marker at its modeled intensity
(FLOPs over L2-aware HBM bytes) and modeled throughput; a thin line runs to the intensity it would
have without the L2 (every global access from HBM), showing how much the cache lifts it.

Data: sim/roofline/kernels.csv (experiments/exp_roofline.cpp), sim/machines/machines.csv.
"""

import math

import style
from style import results  # experiments/results_index.py

NAME = "fig_roofline"
PANELS = ["H200", "MI300X"]
MARK = {"standard": "s", "fa1": "D", "fa2": "o"}


def main() -> None:
    args = style.parser(__doc__).parse_args()
    kpath = results.find_csv("sim", "roofline", "kernels")
    mpath = results.find_csv("sim", "machines", "machines")
    if kpath is None or mpath is None:
        style.skip(NAME, "no sim/roofline/kernels.csv or sim/machines/machines.csv")
    kernels = [r for r in results.read_csv(kpath) if results.num(r, "flops") > 0]
    machines = {r["label"]: r for r in results.read_csv(mpath)}
    panels = [p for p in PANELS if p in machines and any(k["label"] == p for k in kernels)]
    if not panels:
        style.skip(NAME, f"no kernels for {PANELS} in {kpath}")

    fig, axes, leg = style.figure_with_legend_row(len(panels), height=2.8, legend_share=0.18)
    for ax, lab in zip(axes, panels):
        m = machines[lab]
        ks = [k for k in kernels if k["label"] == lab]
        xs = [results.num(k, c) for k in ks for c in ("intensity", "intensity_no_l2")]
        lo, hi = min(xs) / 2, max(xs) * 2
        grid = [lo * (hi / lo) ** (i / 200) for i in range(201)]
        for peak, bw, sty, name in ((results.num(m, "bf16_tflops"), results.num(m, "hbm_tbs"),
                                     dict(color="#bbbbbb", linewidth=2.2), "roof (datasheet)"),
                                    (results.num(m, "measured_bf16_tflops"), results.num(m, "measured_bw_tbs"),
                                     dict(color="#666666", linewidth=0.9, linestyle=":"), "roof (measured ceilings)")):
            if peak == peak and bw == bw:  # both present (not NaN)
                ax.plot(grid, [min(peak, bw * x) for x in grid], label=name, zorder=1, **sty)
        names = {}  # kernels at (nearly) the same point share one label: "qk/pv"
        for k in ks:
            x, x0, y = results.num(k, "intensity"), results.num(k, "intensity_no_l2"), results.num(k, "achieved_tflops")
            c = style.color_for(k["strategy"])
            ax.plot([x0, x], [y, y], color=c, linewidth=0.6, zorder=2)
            ax.plot([x], [y], linestyle="none", zorder=3, label=f"{k['strategy']} kernels (model)",
                    **{kk: v for kk, v in style.modeled(c, MARK.get(k["strategy"], "o")).items() if kk != "linestyle"})
            key = (round(math.log10(x) * 20), round(math.log10(y) * 20))
            names.setdefault(key, [x, y, c, []])[3].append(k["kernel"].replace("_gemm", "").replace("_fwd", ""))
        for x, y, c, ns in names.values():
            ax.annotate("/".join(ns), (x, y), xytext=(3, -7), textcoords="offset points", fontsize=4.8, color=c)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(f"{lab}: ridge {float(m['ridge']):.0f}", fontsize=6.5)
        ax.set_xlabel("FLOP per HBM byte")
    axes[0].set_ylabel("TFLOP/s")
    for ax in axes:
        style.plain_log_axis(ax)
    style.shared_legend(axes, leg)
    k0 = kernels[0]
    style.footer(fig, f"models of {', '.join(panels)}; bf16, d = {k0['head_dim']}, N = {k0['seqlen']}, "
                      f"batch {k0['batch']}, heads {k0['heads']}, forward; thin line: intensity without L2",
                 [kpath, mpath])
    style.save(fig, args.out, NAME)


if __name__ == "__main__":
    main()

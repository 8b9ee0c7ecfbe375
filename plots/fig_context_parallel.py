#!/usr/bin/python3
"""fig_context_parallel: predicted scaling efficiency of ring attention over 1-8 GPUs (modeled only).

Data: sim/context_parallel/scaling.csv (experiments/exp_context_parallel.cpp; simulator/
context_parallel.hpp). Rows: H200 (NVLink) and MI300X (Infinity Fabric); left: efficiency
T_1 / (P T_P) against the number of GPUs P at the smallest N of the data; right: against N at the
largest P. Lines: unmasked, causal with contiguous chunks (the last rank does the most work),
causal with the zigzag layout, and zigzag over PCIe Gen5 instead of the peer link. Forward pass.
Every point is the model's: no multi-GPU run has been measured.
"""

import style
from style import results  # experiments/results_index.py

NAME = "fig_context_parallel"
# (label, layout, causal, link, color, marker)
LINES = [
    ("unmasked", "contiguous", "0", "peer", "#4c72b0", "o"),
    ("causal, contiguous", "contiguous", "1", "peer", "#c44e52", "s"),
    ("causal, zigzag", "zigzag", "1", "peer", "#55a868", "D"),
    ("causal, zigzag, PCIe Gen5", "zigzag", "1", "pcie", "#8172b2", "v"),
]
MACHINES = ["H200", "MI300X"]


def main() -> None:
    args = style.parser(__doc__).parse_args()
    path = results.find_csv("sim", "context_parallel", "scaling")
    if path is None:
        style.skip(NAME, "no sim/context_parallel/scaling.csv (run experiments/exp_context_parallel)")
    rows = [r for r in results.read_csv(path) if r["pass"] == "fwd"]
    if not rows:
        style.skip(NAME, "scaling.csv has no forward rows")
    n_min = min(int(r["seqlen"]) for r in rows)
    p_max = max(int(r["ranks"]) for r in rows)

    fig, axes = style.figure(width=style.COLUMN_WIDTH_IN, height=3.6, ncols=2, nrows=2, sharey=True)
    for mi, label in enumerate(MACHINES):
        mrows = [r for r in rows if r["label"] == label]
        ax_p, ax_n = axes[mi][0], axes[mi][1]
        for name, layout, causal, link, color, marker in LINES:
            sel = [r for r in mrows if r["layout"] == layout and r["causal"] == causal and r["link"] == link]
            vs_p = sorted((int(r["ranks"]), float(r["efficiency"])) for r in sel if int(r["seqlen"]) == n_min)
            vs_n = sorted((int(r["seqlen"]), float(r["efficiency"])) for r in sel if int(r["ranks"]) == p_max)
            if vs_p:
                ax_p.plot([x for x, _ in vs_p], [y for _, y in vs_p], label=name, **style.modeled(color, marker))
            if vs_n:
                ax_n.plot([x for x, _ in vs_n], [y for _, y in vs_n], label=name, **style.modeled(color, marker))
        gbps = {r["link"]: float(r["link_gbps"]) for r in mrows}
        ax_p.set_title(f"{label}, N = {n_min // 1024}k (peer link {gbps.get('peer', 0):.0f} GB/s)", fontsize=6)
        ax_n.set_title(f"{label}, P = {p_max}", fontsize=6)
        ax_p.set_ylabel("scaling efficiency (model)")
        for ax in (ax_p, ax_n):
            ax.set_ylim(0, 1.05)
            ax.axhline(1.0, color="#999999", linewidth=0.6)
            ax.set_xscale("log", base=2)
        ax_p.set_xticks([1, 2, 4, 8])
        ax_p.set_xticklabels(["1", "2", "4", "8"])
        style.pow2_axis(ax_n, max_ticks=4)
    axes[1][0].set_xlabel("GPUs P")
    axes[1][1].set_xlabel("sequence length N")
    axes[0][0].legend(fontsize=4.8, loc="lower left")
    r0 = rows[0]
    style.footer(fig, "H200 and MI300X models (not measured)", [path],
                 f"ring attention forward, batch {r0['batch']}, {r0['heads']} heads, d {r0['head_dim']}, "
                 f"{r0['dtype']}; fa2 blocks {r0['br']}x{r0['bc']} (H200 row's tiling); efficiency = T1 / (P TP)")
    style.save(fig, args.out, NAME)


if __name__ == "__main__":
    main()

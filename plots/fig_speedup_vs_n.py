#!/usr/bin/python3
"""fig_speedup_vs_n: forward speedup of FlashAttention-2 over standard attention against N.

Modeled (dashed): the simulator's roofline time of the unfused standard strategy over FA2 with
the searched tile, for MI210, MI250X, MI300X, A100, H100 and H200 (both on the matrix units).
Measured (solid), on the H200 from the committed results: ioattn's naive three-pass kernel (v01,
scalar fp32 math) over (a) the scalar FA2 kernel (v03, the same scalar math: the ratio is the IO
effect alone) and (b) the fastest ioattn variant (which adds the matrix units, so the ratio mixes
IO and arithmetic and is not comparable with the model).
Config of both: bf16, d = 128, non-causal, batch * N = 16384, hidden 2048.

Data: sim/speedup_vs_n/speedup.csv, the canonical H200 bench.csv (h200/CANONICAL).
"""

from collections import Counter

import style
from style import results  # experiments/results_index.py

NAME = "fig_speedup_vs_n"
PAPER_MACHINES = ["MI210", "MI250X", "MI300X", "A100", "H100", "H200"]
DTYPE, HEAD_DIM, CAUSAL = "bf16", 128, 0


def main() -> None:
    args = style.parser(__doc__).parse_args()
    sim_path = results.find_csv("sim", "speedup_vs_n", "speedup")
    h_rows, h_files = results.bench_rows()
    sel = results.select(h_rows, DTYPE, HEAD_DIM, CAUSAL)
    meas_io = results.speedup_points(sel, flash="ioattn:v03")
    meas = results.speedup_points(sel)
    if sim_path is None and not meas:
        style.skip(NAME, "no sim/speedup_vs_n/speedup.csv and no H200 speedup data")

    fig, axes, leg = style.figure_with_legend_row(1, height=3.2, legend_share=0.3)
    ax = axes[0]
    sources, notes, tokens = [], [], "?"
    if sim_path is not None:
        rows = [r for r in results.read_csv(sim_path)
                if r["pass"] == "fwd" and int(r["head_dim"]) == HEAD_DIM and int(r["causal"]) == CAUSAL
                and r["dtype"] == DTYPE]
        sources.append(sim_path)
        counts = Counter(int(r["batch"]) * int(r["seqlen"]) for r in rows)
        tokens = str(counts.most_common(1)[0][0]) if counts else "?"
        for lab in PAPER_MACHINES:
            pts = sorted((int(r["seqlen"]), results.num(r, "speedup")) for r in rows if r["label"] == lab)
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], label=f"{lab} (model)",
                        **style.modeled(style.color_for(lab)))
            else:
                notes.append(f"{lab}: no modeled row")
    if meas:
        sources += h_files
        if meas_io:
            ax.plot([p[0] for p in meas_io], [p[1] for p in meas_io], label="H200 v03/v01, scalar (measured)",
                    **style.measured(style.color_for("H200"), "*"))
        ax.plot([p[0] for p in meas], [p[1] for p in meas], label="H200 fastest/v01 (measured)",
                **style.measured("#444444", "P"))
        notes.append("measured: v01 naive (scalar) over v03 scalar FA2, and over the fastest of "
                     + ", ".join(sorted({p[2] for p in meas})))
    else:
        notes.append("no measured H200 speedup committed yet")
        ax.text(0.98, 0.02, "H200 measurement: not committed yet", transform=ax.transAxes,
                ha="right", va="bottom", fontsize=5.5, color="#aa0000")
    ax.axhline(1.0, color="#999999", linewidth=0.6)
    ax.set_yscale("log", base=2)
    ax.set_xlabel("sequence length N")
    ax.set_ylabel("speedup over standard (×)")
    style.pow2_axis(ax, max_ticks=5)
    from matplotlib.ticker import FuncFormatter
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:g}"))
    style.shared_legend([ax], leg, ncol=2, fontsize=5.2)
    style.footer(fig, f"model: 6 catalog machines; measured: H200. {DTYPE}, d = {HEAD_DIM}, "
                      f"{'causal' if CAUSAL else 'non-causal'}, forward, batch·N = {tokens}. " + "; ".join(notes),
                 sources)
    style.save(fig, args.out, NAME)


if __name__ == "__main__":
    main()

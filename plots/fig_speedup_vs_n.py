#!/usr/bin/python3
"""fig_speedup_vs_n: forward speedup of FlashAttention-2 over standard attention against N.

Modeled (dashed): the simulator's roofline time of the unfused standard strategy over FA2 with
the searched tile, for MI210, MI250X, MI300X, A100, H100 and H200. Measured (solid): on the H200,
ioattn's naive kernel over its fastest variant at each N, from the committed H200 results; the
modeled and the measured H200 lines side by side show how far to trust the model elsewhere.
Config of both: bf16, d = 128, non-causal, batch * N = 16384, hidden 2048.

Data: sim/speedup_vs_n/speedup.csv, h200/*/*.csv.
"""

from collections import Counter

import h200
import style

NAME = "fig_speedup_vs_n"
PAPER_MACHINES = ["MI210", "MI250X", "MI300X", "A100", "H100", "H200"]
DTYPE, HEAD_DIM, CAUSAL = "bf16", 128, 0


def main() -> None:
    args = style.parser(__doc__).parse_args()
    sim_path = style.find_csv("sim", "speedup_vs_n", "speedup")
    h_rows, h_files = h200.rows()
    meas = h200.speedup_points(h200.select(h_rows, DTYPE, HEAD_DIM, CAUSAL))
    if sim_path is None and not meas:
        style.skip(NAME, "no sim/speedup_vs_n/speedup.csv and no H200 speedup data")

    fig, ax = style.figure(width=style.COLUMN_WIDTH_IN, height=2.6)
    sources, notes, tokens = [], [], "?"
    if sim_path is not None:
        rows = [r for r in style.read_csv(sim_path)
                if r["pass"] == "fwd" and int(r["head_dim"]) == HEAD_DIM and int(r["causal"]) == CAUSAL
                and r["dtype"] == DTYPE]
        sources.append(sim_path)
        counts = Counter(int(r["batch"]) * int(r["seqlen"]) for r in rows)
        tokens = str(counts.most_common(1)[0][0]) if counts else "?"
        for lab in PAPER_MACHINES:
            pts = sorted((int(r["seqlen"]), style.num(r, "speedup")) for r in rows if r["label"] == lab)
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], label=f"{lab} (model)",
                        **style.modeled(style.color_for(lab)))
            else:
                notes.append(f"{lab}: no modeled row")
    if meas:
        sources += h_files
        ax.plot([p[0] for p in meas], [p[1] for p in meas], label="H200 (measured)",
                **style.measured(style.color_for("H200"), "*"))
        notes.append("measured: " + ", ".join(sorted({p[2] for p in meas})) + " vs naive")
    else:
        notes.append("no measured H200 speedup committed yet")
        ax.text(0.98, 0.02, "H200 measurement: not committed yet", transform=ax.transAxes,
                ha="right", va="bottom", fontsize=5.5, color="#aa0000")
    ax.axhline(1.0, color="#999999", linewidth=0.6)
    ax.set_yscale("log", base=2)
    ax.set_xlabel("sequence length N")
    ax.set_ylabel("speedup of FA2 over standard (×)")
    style.pow2_axis(ax, max_ticks=9)
    from matplotlib.ticker import FuncFormatter
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:g}"))
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=5.5)
    style.footer(fig, f"model: 6 catalog machines; measured: H200. {DTYPE}, d = {HEAD_DIM}, "
                      f"{'causal' if CAUSAL else 'non-causal'}, forward, batch·N = {tokens}. " + "; ".join(notes),
                 sources)
    style.save(fig, args.out, NAME)


if __name__ == "__main__":
    main()

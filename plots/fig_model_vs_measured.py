#!/usr/bin/python3
"""fig_model_vs_measured: the simulator held against the H200, run by run.

For every ioattn run of the canonical H200 benchmark (bf16, d = 128, non-causal, forward) whose
twin in sim/h200_model was modeled (model_status ok: the run recorded its launch configuration and
the simulator expresses its grid order), the simulator's prediction for the same problem,
strategy, tile, occupancy and grid order (experiments/exp_h200_model.cpp) beside what was measured.
Left: HBM (DRAM) bytes read + written, measured by Nsight Compute where the canonical ncu run
profiled that run (solid), against the L2-aware model (dashed); the compulsory traffic (Q, K, V
read once, O and LSE written once) dash-dotted. Right: time, measured (solid; the benchmark's
median, or Nsight Compute's kernel time for runs only profiled) against the model's roofline time
(dashed). Runs without a prediction are not drawn; the footer counts them by reason.

Data: the canonical H200 run (experiments/results/h200/CANONICAL: bench.csv, ncu.csv),
sim/h200_model/model.csv.
"""

import style
from style import results  # experiments/results_index.py

NAME = "fig_model_vs_measured"
DTYPE, HEAD_DIM, CAUSAL = "bf16", 128, 0


def main() -> None:
    args = style.parser(__doc__).parse_args()
    meas, files = results.merged_runs()
    sel = [r for r in results.select(meas, DTYPE, HEAD_DIM, CAUSAL) if results.is_ioattn(r["impl"])]
    pairs, left_out, mpath = results.model_pairs(sel)
    if not meas or mpath is None:
        style.skip(NAME, "needs the canonical H200 run and sim/h200_model/model.csv (exp_h200_model)")
    if not pairs:
        why = "; ".join(f"{n} x {k}" for k, n in sorted(left_out.items())) or "no twin rows"
        style.skip(NAME, f"no canonical H200 run at {DTYPE}, d = {HEAD_DIM}, causal = {CAUSAL} has a modeled twin ({why})")

    fig, axes, leg = style.figure_with_legend_row(2, height=3.0, legend_share=0.24)
    ax_b, ax_t = axes
    variants = sorted({results.variant(r["impl"]) for r, _ in pairs})
    colors = style.ladder_colors(variants)
    from matplotlib.lines import Line2D

    handles, no_dram = [], []
    for v in variants:
        best = {}  # N -> (run, model): the fastest configuration of the variant at that N
        for r, m in pairs:
            if results.variant(r["impl"]) == v:
                n = int(r["seqlen"])
                if n not in best or results.measured_ms(r) < results.measured_ms(best[n][0]):
                    best[n] = (r, m)
        ns = sorted(best)
        c = colors[v]
        dn = [n for n in ns if results.dram_bytes(best[n][0]) == results.dram_bytes(best[n][0])]
        if dn:
            ax_b.plot(dn, [results.dram_bytes(best[n][0]) for n in dn], **style.measured(c))
        else:
            no_dram.append(v.split(":", 1)[1])
        ax_b.plot(ns, [results.num(best[n][1], "hbm_read_bytes") + results.num(best[n][1], "hbm_write_bytes")
                       for n in ns], **style.modeled(c))
        tn = [n for n in ns if results.measured_ms(best[n][0]) == results.measured_ms(best[n][0])]
        ax_t.plot(tn, [results.measured_ms(best[n][0]) for n in tn], **style.measured(c))
        ax_t.plot(ns, [results.num(best[n][1], "time_s") * 1e3 for n in ns], **style.modeled(c))
        m0 = best[ns[0]][1]
        cfg = "" if m0["strategy"] == "standard" else f", {m0['br']}x{m0['bc']}, {m0['grid_order']}"
        handles.append(Line2D([], [], color=c, linewidth=3, label=f"{v.split(':', 1)[1]} ({m0['strategy']}{cfg})"))
    comp = sorted({(int(m["seqlen"]), results.num(m, "hbm_compulsory_bytes")) for _, m in pairs})
    ax_b.plot([p[0] for p in comp], [p[1] for p in comp], color="#888888", linestyle="-.", linewidth=0.8)
    handles += [Line2D([], [], **style.measured("#555555"), label="measured (ncu bytes; time)"),
                Line2D([], [], **style.modeled("#555555"), label="model (L2-aware; roofline time)"),
                Line2D([], [], color="#888888", linestyle="-.", linewidth=0.8, label="compulsory")]
    for ax in (ax_b, ax_t):
        ax.set_yscale("log")
        ax.set_xlabel("sequence length N")
        style.pow2_axis(ax, max_ticks=4)
    style.human_bytes_axis(ax_b, max_ticks=5)
    ax_b.set_ylabel("HBM / DRAM bytes")
    ax_t.set_ylabel("time (ms)")
    style.log_axis_125(ax_t, "y")
    leg.legend(handles=handles, loc="center", ncol=2, fontsize=5.0)
    notes = [f"canonical run {', '.join(sorted({t for r, _ in pairs for t in r.get('_runs', [])}))}"]
    if left_out:
        notes.append("not drawn (no prediction): " + "; ".join(f"{n} run(s): {k}" for k, n in sorted(left_out.items())))
    if no_dram:
        notes.append("no DRAM counters for " + ", ".join(no_dram))
    style.footer(fig, f"H200 (measured) and its model; {DTYPE}, d = {HEAD_DIM}, non-causal, forward",
                 files + [mpath], note=". ".join(notes))
    style.save(fig, args.out, NAME)


if __name__ == "__main__":
    main()

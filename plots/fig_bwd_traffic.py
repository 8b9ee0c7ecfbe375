#!/usr/bin/python3
"""fig_bwd_traffic: DRAM bytes of each ioattn backward on the H200 (Nsight Compute, summed over
every kernel of one backward launch: preprocess, K/V-outer kernel, dQ convert or dQ pass) beside
the simulator's prediction for the same tile, occupancy and dQ mode (exp_h200_model's twin row:
`ioattn simulate --pass bwd --dq atomic|separate` with the row's backward_config). One panel per
N; per variant a measured bar (solid: read below, write on top) and a modeled bar (hatched); the
dotted line is the backward's compulsory traffic (Q, K, V, O, dO, LSE read once; dQ, dK, dV
written once). The number over a measured bar is DRAM read / compulsory read.

Data: the canonical ncu.csv rows with pass = bwd (role ncu; experiments/gpu/ncu_collect.py
--passes bwd) and sim/h200_model/model.csv. With no backward ncu rows committed the figure is
skipped (exit 77), never drawn from anything else.
"""

import style
from style import results  # experiments/results_index.py

NAME = "fig_bwd_traffic"
GIB = 2.0**30


def main() -> None:
    args = style.parser(__doc__).parse_args()
    meas, files = results.ncu_rows("bwd")
    if not meas:
        style.skip(NAME, "the canonical ncu run has no backward rows (pass = bwd): run experiments/gpu/run_h200.sh "
                         "ncu with NCU_PASSES=bwd on the H200 and add its folder as an ncu line of CANONICAL")
    pairs, left_out, mpath = results.model_pairs(meas)
    model = {id(m): x for m, x in pairs}
    print(f"  {len(pairs)} of {len(meas)} backward ncu rows paired with a model row" + (f" ({mpath})" if mpath else ""))
    ns = sorted({int(float(r["seqlen"])) for r in meas})
    impls = sorted({r["impl"] for r in meas})
    colors = style.ladder_colors(impls)
    fig, axes, leg = style.figure_with_legend_row(len(ns), width=style.FULL_WIDTH_IN if len(ns) > 2
                                                  else style.COLUMN_WIDTH_IN * 1.4, height=2.9, legend_share=0.25)
    w = 0.38
    for ax, n in zip(axes, ns):
        at = {r["impl"]: r for r in meas if int(float(r["seqlen"])) == n}
        comp = None
        for i, impl in enumerate(impls):
            r = at.get(impl)
            if r is None:
                continue
            c = colors.get(impl) or style.color_for(impl)
            rd, wr = results.num(r, "dram_read_bytes") / GIB, results.num(r, "dram_write_bytes") / GIB
            ax.bar(i - w / 2, rd, w, color=c, label=f"{impl.replace('ioattn:', '')} DRAM (measured)")
            ax.bar(i - w / 2, wr, w, bottom=rd, color=c, alpha=0.55)
            cr = results.num(r, "compulsory_read_bytes") / GIB
            comp = (results.num(r, "compulsory_read_bytes") + results.num(r, "compulsory_write_bytes")) / GIB
            if cr == cr and cr > 0:
                ax.text(i - w / 2, rd + wr, f"{rd / cr:.2f}", ha="center", va="bottom", fontsize=4.5)
            x = model.get(id(r))
            if x is not None:
                mr, mw = results.num(x, "hbm_read_bytes") / GIB, results.num(x, "hbm_write_bytes") / GIB
                ax.bar(i + w / 2, mr, w, color="white", edgecolor=c, hatch="////", linewidth=0.6,
                       label="simulator, same tile and dQ mode (model)")
                ax.bar(i + w / 2, mw, w, bottom=mr, color="white", edgecolor=c, hatch="..", linewidth=0.6)
            else:
                ax.text(i + w / 2, 0, "no\nmodel", ha="center", va="bottom", fontsize=4.5, color="#aa0000")
        if comp == comp and comp is not None:
            ax.axhline(comp, color="#555555", linestyle=":", linewidth=0.8, label="backward compulsory (read + write)")
        ax.set_xticks(range(len(impls)))
        ax.set_xticklabels([i.replace("ioattn:", "") for i in impls], rotation=30, ha="right", fontsize=5)
        b = int(float(next(iter(at.values()))["batch"])) if at else 0
        ax.set_title(f"N = {n} (batch {b})", fontsize=6.5)
    axes[0].set_ylabel("GiB: read (solid) + write (light)")
    style.shared_legend(axes, leg, ncol=2)
    why = "; ".join(f"{k}: {v} row(s) without a model" for k, v in left_out.items())
    unmatched = len(meas) - len(pairs)
    note = "bf16, d = 128, 16 heads, non-causal; one backward after its paired forward, all its kernels summed"
    if unmatched:
        note += f"; {unmatched} measured row(s) have no model row" + (f" ({why})" if why else
                                                                        " (rerun exp_h200_model)")
    style.footer(fig, "H200", files + ([mpath] if mpath else []), note)
    style.save(fig, args.out, NAME)


if __name__ == "__main__":
    main()

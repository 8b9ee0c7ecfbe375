#!/usr/bin/python3
"""fig_block_size: block-size study at fixed N (after the FlashAttention paper's Fig. 2, middle).

Modeled FA2 forward on the H200 model: left, HBM bytes with the L2 switched off (only on-chip
reuse) against Br, one line per Bc (FA2 reads K and V once per query block, so its traffic
falls as 1/Br and does not depend on Bc); right, modeled time. Tiles that do not fit the LDS and
register budget are drawn as grey crosses; the paper's rule and the search's choice are starred.
H200 measurements are added (solid) where the committed H200 results carry br and bc columns.

Data: sim/block_size/{tiles,choices}.csv, the canonical H200 run's tiles.csv (h200/CANONICAL).
"""

import style
from style import results  # experiments/results_index.py

NAME = "fig_block_size"
MACHINE = "H200"
BR_COLORS = ["#c6dbef", "#6baed6", "#2171b5", "#08519c", "#08306b"]


def main() -> None:
    args = style.parser(__doc__).parse_args()
    tpath = results.find_csv("sim", "block_size", "tiles")
    cpath = results.find_csv("sim", "block_size", "choices")
    if tpath is None:
        style.skip(NAME, "no sim/block_size/tiles.csv (run experiments/exp_block_size)")
    tiles = [r for r in results.read_csv(tpath) if r["label"] == MACHINE]
    if not tiles:
        style.skip(NAME, f"sim/block_size/tiles.csv has no {MACHINE} rows")
    choices = [r for r in results.read_csv(cpath) if r["label"] == MACHINE] if cpath else []
    measured, mfiles = results.tile_rows()
    n = tiles[0]["seqlen"]
    same_problem = ("seqlen", "head_dim", "dtype", "batch", "heads")
    measured = [r for r in measured if all(r.get(k) == tiles[0][k] for k in same_problem) and r["ms"]]

    fig, (ax_b, ax_t) = style.figure(width=style.COLUMN_WIDTH_IN, height=3.0, ncols=2)
    bcs = sorted({int(r["bc"]) for r in tiles})
    for i, bc in enumerate(bcs):
        pts = sorted((int(r["br"]), results.num(r, "hbm_no_l2_bytes"), results.num(r, "time_s") * 1e3, r["fits"] == "1")
                     for r in tiles if int(r["bc"]) == bc)
        col = BR_COLORS[i % len(BR_COLORS)]
        for ax, k in ((ax_b, 1), (ax_t, 2)):
            ax.plot([p[0] for p in pts], [p[k] for p in pts], label=f"Bc={bc} (model)", **style.modeled(col, "o"))
            bad = [p for p in pts if not p[3]]
            ax.plot([p[0] for p in bad], [p[k] for p in bad], linestyle="none", marker="x", color="#888888",
                    markersize=4, label="_nolegend_")
    off_grid = []
    for c in choices:
        hit = [r for r in tiles if r["br"] == c["br"] and r["bc"] == c["bc"]]
        if not hit:
            off_grid.append(f"{c['method']} picks {c['br']}×{c['bc']} (off the grid)")
        if hit:
            r = hit[0]
            for ax, v in ((ax_b, results.num(r, "hbm_no_l2_bytes")), (ax_t, results.num(r, "time_s") * 1e3)):
                ax.plot([int(r["br"])], [v], marker="*", markersize=8, linestyle="none",
                        color="#d62728" if c["method"] == "search" else "#ff7f0e",
                        label=f"{c['method']}: Br×Bc = {c['br']}×{c['bc']}" if ax is ax_b else "_nolegend_")
    notes = ["grey ×: tile does not fit LDS/registers"] + off_grid
    if measured:
        for bc in sorted({int(r["bc"]) for r in measured}):
            pts = sorted((int(r["br"]), results.num(r, "ms")) for r in measured if int(r["bc"]) == bc)
            col = BR_COLORS[bcs.index(bc) % len(BR_COLORS)] if bc in bcs else "#2ca02c"
            ax_t.plot([p[0] for p in pts], [p[1] for p in pts], label=f"Bc={bc} (H200, measured)",
                      **style.measured(col, "*"))
        # The measured kernel is the scalar teaching kernel, far slower than the model's matrix-core
        # roofline: a log axis shows both trends.
        ax_t.set_yscale("log")
        notes.append(f"measured: {measured[0]['impl']} (scalar fp32 math), compare trends, not levels")
    else:
        notes.append("no H200 tile-size measurement committed")
    for ax in (ax_b, ax_t):
        ax.set_xlabel("Br (query rows)")
        style.pow2_axis(ax)
    ax_b.set_yscale("log")
    style.human_bytes_axis(ax_b, max_ticks=5)
    ax_b.set_ylabel("HBM bytes (model, no L2)")
    ax_t.set_ylabel("time (ms)")
    ax_b.legend(loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=2, fontsize=5.0)
    if measured:
        ax_t.legend(loc="upper center", bbox_to_anchor=(0.5, -0.22), fontsize=5.0)
    r0 = tiles[0]
    style.footer(fig, f"model of {r0['machine']}, FA2 forward, N = {n}, batch {r0['batch']}, heads {r0['heads']}, "
                      f"d = {r0['head_dim']}, {r0['dtype']}; " + "; ".join(notes),
                 [tpath] + ([cpath] if cpath else []) + (mfiles if measured else []))
    style.save(fig, args.out, NAME)


if __name__ == "__main__":
    main()

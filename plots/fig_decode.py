#!/usr/bin/python3
"""fig_decode: decode bandwidth on the H200 against the KV cache length (issue 12). One panel per
(queries per step, batch) the run measured; in each, the bandwidth of ioattn's split-KV decoding
kernel v07 on a contiguous cache and on paged caches (page 16 and 256, a shuffled block table),
SDPA flash and cuDNN on the contiguous cache, the copy ceiling measured in the same run, and the
simulator's expected time of v07 for the same problem (its own split count, tile and two CTAs per
SM, GQA-packed; contiguous and paged) drawn as a bandwidth.

Bandwidth = the benchmark's bytes (K and V read once, Q read and O written once:
experiments/gpu/bench_decode.py's `bytes`) / time; the model's bandwidth divides the same bytes by
its expected time. Samples of one configuration collapse to their median.
Data: the canonical decode run (role decode in h200/CANONICAL: decode.csv); the model's rows are
written by this script to <out>/fig_decode_model.csv from `ioattn simulate --json` ($IOATTN_BIN,
else build-figures/apps/ioattn; without a binary the model is left out and the figure says so);
measured and model rows come through experiments/decode_model.py (shared with paper/gen_decode.py).
"""

from pathlib import Path

import matplotlib.pyplot as plt

import style
from style import results  # experiments/results_index.py
import decode_model as dm  # experiments/decode_model.py (style puts experiments/ on the path)

NAME = "fig_decode"
V07 = dm.V07
PEERS = dm.PEERS
PAGE_COLORS = {0: "#9467bd", 16: "#e377c2", 256: "#8c564b"}
MODEL_MARKERS = {0: "s", 16: "v", 256: "^"}


def main() -> None:
    args = style.parser(__doc__).parse_args()
    files = results.canonical_csvs("decode")
    if not files:
        style.skip(NAME, "no canonical decode run (role decode in experiments/results/h200/CANONICAL)")
    rows, copy = dm.measured(files)
    if not rows:
        style.skip(NAME, f"no v07 or SDPA decode rows in {', '.join(str(results.rel(f)) for f in files)}")
    exe = dm.ioattn_bin()
    model_csv = Path(args.out) / f"{NAME}_model.csv"
    model, why = [], "no ioattn binary (build-figures/apps/ioattn or $IOATTN_BIN)"
    if exe and any(r["impl"] == V07 for r in rows):
        try:
            model = dm.model(rows, exe, model_csv)
        except RuntimeError as e:  # e.g. a binary older than the simulator's layout options
            why = f"ioattn simulate failed ({e})"
    panels = sorted({(int(float(r["seqlen_q"])), int(float(r["batch"]))) for r in rows})
    ncols = min(3, len(panels))
    nrows = (len(panels) + ncols - 1) // ncols
    style.apply()
    names = [[f"p{k}" if (k := i * ncols + c) < len(panels) else "." for c in range(ncols)] for i in range(nrows)]
    fig, d = plt.subplot_mosaic(names + [["legend"] * ncols], figsize=(style.COLUMN_WIDTH_IN * (1 if ncols < 2 else 2),
                                                                        2.0 * nrows + 0.9),
                                layout="constrained", height_ratios=[1.0] * nrows + [0.4], empty_sentinel=".")
    axes, leg = [d[f"p{k}"] for k in range(len(panels))], d["legend"]
    leg.axis("off")
    for ax, (nq, b) in zip(axes, panels):
        sel = [r for r in rows if int(float(r["seqlen_q"])) == nq and int(float(r["batch"])) == b]

        def series(impl, page, src=sel):
            pts = sorted((int(float(r["seqlen_k"])), float(r["gbps"])) for r in src
                         if r["impl"] == impl and int(float(r.get("page_size") or 0)) == page)
            return [p[0] for p in pts], [p[1] / 1e3 for p in pts]  # TB/s

        for page in sorted(PAGE_COLORS):
            x, y = series(V07, page)
            if x:
                what = "contiguous" if page == 0 else f"paged, page {page}"
                ax.plot(x, y, label=f"v07 {what} (measured)", **style.measured(PAGE_COLORS[page], "o"))
        for impl, marker in zip(PEERS, ["^", "D"]):
            x, y = series(impl, 0)
            if x:
                ax.plot(x, y, label=f"{impl} (measured)", **style.measured(style.color_for(impl), marker))
        msel = [r for r in model if int(r["seqlen_q"]) == nq and int(r["batch"]) == b]
        for page in sorted(PAGE_COLORS):
            x, y = series("model:" + V07, page, msel)
            if x:
                what = "contiguous" if page == 0 else f"page {page}"
                ax.plot(x, y, label=f"v07 {what} (model)", **style.modeled(PAGE_COLORS[page], MODEL_MARKERS[page]))
        if copy:
            ax.axhline(copy / 1e3, color="#555555", linestyle=":", linewidth=0.9,
                       label="copy ceiling (measured, same run)")
        ax.set_xscale("log", base=2)
        style.pow2_axis(ax, max_ticks=5)
        ax.set_ylim(bottom=0)
        ax.set_title(f"{nq} quer{'y' if nq == 1 else 'ies'} per step, batch {b}", fontsize=6.5)
        ax.set_xlabel("KV cache length (keys)")
    axes[0].set_ylabel("bandwidth (TB/s)")
    style.shared_legend(axes, leg, ncol=3)
    r0 = rows[0]
    note = (f"{r0['dtype']}, d = {int(float(r0['head_dim']))}, {int(float(r0['heads_q']))} query heads over "
            f"{int(float(r0['heads_kv']))} K/V heads; bandwidth = K, V read once + Q, O bytes / time (median of "
            f"the samples); paged: the same K/V in a shuffled block table; model: ioattn simulate --kernel "
            f"v07_decode_splitkv with the run's splits, tile and CTAs/SM (expected time); the copy ceiling "
            f"reads and writes, so a read-mostly kernel can pass it")
    if not model:
        note += f"; model not drawn: {why}"
    style.footer(fig, "H200", files + ([model_csv] if model else []), note)
    style.save(fig, args.out, NAME)


if __name__ == "__main__":
    main()

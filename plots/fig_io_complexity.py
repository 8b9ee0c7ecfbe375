#!/usr/bin/python3
"""fig_io_complexity: HBM accesses against N and against on-chip memory M (modeled, no L2).

Data: sim/io_complexity/{vs_n,vs_m,fits}.csv (experiments/exp_io_complexity.cpp).
Left: bytes against N for standard, FA1, FA2, plus the compulsory traffic (inputs read once,
output written once). Right: bytes against M at fixed N; the grey line marks M = 4 d^2, where the
paper's rule stops growing Br. Legends carry the fitted exponent beside the theorem's.
"""

import style
from style import results  # experiments/results_index.py

NAME = "fig_io_complexity"
ORDER = ["standard", "fa1", "fa2"]
MARKERS = {"standard": "s", "fa1": "D", "fa2": "o"}


def main() -> None:
    args = style.parser(__doc__).parse_args()
    paths = {k: results.find_csv("sim", "io_complexity", k) for k in ("vs_n", "vs_m", "fits")}
    if any(p is None for p in paths.values()):
        style.skip(NAME, "no sim/io_complexity/{vs_n,vs_m,fits}.csv (run experiments/exp_io_complexity)")
    vs_n, vs_m, fits = (results.read_csv(paths[k]) for k in ("vs_n", "vs_m", "fits"))
    fit = {(r["strategy"], r["variable"]): r for r in fits}

    fig, (ax_n, ax_m) = style.figure(width=style.COLUMN_WIDTH_IN, height=2.9, ncols=2)
    for s in ORDER:
        pts = sorted((int(r["seqlen"]), results.num(r, "hbm_no_l2_bytes")) for r in vs_n if r["strategy"] == s)
        if not pts:
            continue
        f = fit.get((s, "N"))
        lab = f"{s}: {float(f['exponent']):.2f} ({f['theory_exponent']})" if f else s
        ax_n.plot([p[0] for p in pts], [p[1] for p in pts], label=lab,
                  **style.modeled(style.color_for(s), MARKERS[s]))
        pts = sorted((int(r["m_elems"]), results.num(r, "hbm_no_l2_bytes")) for r in vs_m if r["strategy"] == s)
        f = fit.get((s, "M"))
        lab = f"{s}: {float(f['exponent']):.2f} ({f['theory_exponent']})" if f else s
        ax_m.plot([p[0] for p in pts], [p[1] for p in pts], label=lab,
                  **style.modeled(style.color_for(s), MARKERS[s]))
    comp = sorted({(int(r["seqlen"]), results.num(r, "hbm_compulsory_bytes")) for r in vs_n if r["strategy"] == "fa2"})
    ax_n.plot([p[0] for p in comp], [p[1] for p in comp], color="#555555", linestyle=":", label="compulsory")

    d = int(vs_m[0]["head_dim"])
    # Small-cache regime M < d^2 (Saha & Ye 2024: tight bound N^2 d / sqrt(M), below FA's N^2 d^2 / M).
    ax_m.axvspan(ax_m.get_xlim()[0], d * d, color="#eeeeee", zorder=0)
    ax_m.text(d * d, 0.02, "M<d² ", transform=ax_m.get_xaxis_transform(), fontsize=5.5, ha="right",
              va="bottom", color="#555555")
    ax_m.axvline(4 * d * d, color="#999999", linewidth=0.8)
    ax_m.text(4 * d * d, 0.98, " M=4d²", transform=ax_m.get_xaxis_transform(), fontsize=5.5, va="top",
              color="#555555")

    ax_n.set_xlabel("sequence length N")
    ax_m.set_xlabel("M (elements on chip)")
    ax_n.set_ylabel("HBM bytes (model, no L2)")
    for ax in (ax_n, ax_m):
        ax.set_yscale("log")
        style.pow2_axis(ax, max_ticks=5)
        style.human_bytes_axis(ax, max_ticks=6)
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.22), fontsize=5.2,
                  title="fitted exponent (theorem)", title_fontsize=5.2)
    ax_m.set_title(f"N = {vs_m[0]['seqlen']}", fontsize=6.5)
    ax_n.set_title(f"M = {vs_n[0]['m_elems']} elements", fontsize=6.5)
    r0 = vs_n[0]
    style.footer(fig, f"model of {r0['machine']} (block sizes by the paper's rule), one head, "
                      f"{r0['dtype']}, d = {r0['head_dim']}, forward", paths.values())
    style.save(fig, args.out, NAME, bottom=0.36)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""fig_throughput_h200: forward throughput against N on the H200: the ioattn kernel ladder and
PyTorch SDPA's backends (measured, solid), beside the simulator's FA2 and standard roofline for
the same configuration (modeled, dashed). One panel per head dimension; bf16, non-causal.

TFLOP/s follow the FlashAttention-2 convention (forward = 4·batch·heads·N²·d / time).
Data: the canonical H200 bench.csv (h200/CANONICAL), sim/speedup_vs_n/speedup.csv.
"""

import style
from style import results  # experiments/results_index.py

NAME = "fig_throughput_h200"
DTYPE, CAUSAL = "bf16", 0
MARKERS = ["o", "s", "D", "^", "v", "P", "X", "h", "<", ">"]


def main() -> None:
    args = style.parser(__doc__).parse_args()
    h_rows, h_files = results.bench_rows()
    sim_path = results.find_csv("sim", "speedup_vs_n", "speedup")
    sim_rows = [r for r in results.read_csv(sim_path) if r["label"] == "H200" and r["pass"] == "fwd"
                and r["dtype"] == DTYPE and int(r["causal"]) == CAUSAL] if sim_path else []
    if not h_rows and not sim_rows:
        style.skip(NAME, "no committed H200 results and no simulator data")
    dims = sorted({int(float(r["head_dim"])) for r in h_rows if r["dtype"] == DTYPE} or
                  {int(r["head_dim"]) for r in sim_rows})
    fig, axes, leg = style.figure_with_legend_row(len(dims), height=3.1, legend_share=0.3)
    impls = sorted({r["impl"] for r in h_rows}, key=lambda s: (not s.startswith("ioattn:"), s))
    colors = style.ladder_colors(impls)
    for ax, d in zip(axes, dims):
        sel = results.select(h_rows, DTYPE, d, CAUSAL)
        for i, impl in enumerate(impls):
            pts = sorted((int(r["seqlen"]), results.num(r, "tflops")) for r in sel if r["impl"] == impl)
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], label=f"{impl} (measured)",
                        **style.measured(colors.get(impl) or style.color_for(impl), MARKERS[i % len(MARKERS)]))
        for col, lab in (("tflops_fa2", "fa2"), ("tflops_standard", "standard")):
            pts = sorted((int(r["seqlen"]), results.num(r, col)) for r in sim_rows if int(r["head_dim"]) == d)
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], label=f"{lab} roofline (model)",
                        **style.modeled(style.color_for(lab), "s"))
        ax.set_yscale("log")
        ax.set_title(f"d = {d}", fontsize=6.5)
        ax.set_xlabel("sequence length N")
        style.pow2_axis(ax, max_ticks=4)
        if not sel:
            ax.text(0.5, 0.5, "H200 measurement:\nnot committed yet", transform=ax.transAxes, ha="center",
                    va="center", fontsize=6, color="#aa0000")
    axes[0].set_ylabel("TFLOP/s (forward)")
    for ax in axes:
        style.plain_log_axis(ax)
    style.shared_legend(axes, leg)
    note = "measured: H200" if h_rows else "no H200 measurement committed yet; model only"
    style.footer(fig, f"H200; {note}; {DTYPE}, non-causal, forward", h_files + ([sim_path] if sim_path else []))
    style.save(fig, args.out, NAME)


if __name__ == "__main__":
    main()

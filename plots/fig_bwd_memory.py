#!/usr/bin/python3
"""fig_bwd_memory: measured peak device memory of one forward + backward on the H200 against N
(the FlashAttention paper's memory figure, measured): SDPA's math backend (the naive path: S and
P materialized) against the flash path (SDPA flash, SDPA cuDNN and every ioattn backward). One
panel per (dtype, head dim) the run measured, non-causal where measured (else causal).

peak_extra_mib is what the benchmark records for a fwdbwd row: the torch allocator's peak during
one forward + backward beyond q, k, v and dO, plus ioattn's C ABI workspace (bench_sdpa.py). The
benchmark holds batch·N = 16k, so at fixed tokens the naive path grows like batch·N² = 16k·N and
the flash path stays flat.
Data: the canonical backward benchmark (role bwd in h200/CANONICAL), pass fwdbwd rows.
"""

import style
from style import results  # experiments/results_index.py

NAME = "fig_bwd_memory"
MARKERS = ["o", "s", "D", "^", "v", "P", "X", "h"]


def label(impl: str) -> str:
    if impl == "sdpa:math":
        return "sdpa:math, naive path (measured)"
    return impl.replace("ioattn:", "") + " (measured)"


def main() -> None:
    args = style.parser(__doc__).parse_args()
    rows, files = results.bwd_rows("fwdbwd")
    rows = [r for r in rows if results.num(r, "peak_extra_mib") == results.num(r, "peak_extra_mib")]
    if not rows:
        style.skip(NAME, "no fwdbwd rows with peak_extra_mib in the canonical backward benchmark (role bwd)")
    groups = sorted({(r["dtype"], int(float(r["head_dim"]))) for r in rows})
    fig, axes, leg = style.figure_with_legend_row(len(groups), height=3.0, legend_share=0.3,
                                                  width=style.COLUMN_WIDTH_IN * (1 if len(groups) < 3 else 2))
    impls = sorted({r["impl"] for r in rows}, key=lambda s: (s != "sdpa:math", not s.startswith("sdpa:"), s))
    colors = style.ladder_colors(impls)
    notes = []
    for ax, (dt, d) in zip(axes, groups):
        causal = 0 if any(results.flag(r["causal"]) == 0 for r in rows if r["dtype"] == dt
                          and int(float(r["head_dim"])) == d) else 1
        sel = results.select(rows, dt, d, causal)
        for i, impl in enumerate(impls):
            pts = sorted((int(r["seqlen"]), results.num(r, "peak_extra_mib")) for r in sel if r["impl"] == impl)
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], label=label(impl),
                        **style.measured(colors.get(impl) or style.color_for(impl), MARKERS[i % len(MARKERS)]))
        ax.set_yscale("log")
        style.pow2_axis(ax, max_ticks=4)
        style.plain_log_axis(ax)
        ax.set_title(f"{dt}, d = {d}, {'causal' if causal else 'non-causal'}", fontsize=6.5)
        ax.set_xlabel("sequence length N (batch·N = 16k)")
        n = max(int(r["seqlen"]) for r in sel)
        at = {r["impl"]: results.num(r, "peak_extra_mib") for r in sel if int(r["seqlen"]) == n}
        flash = [v for k, v in at.items() if k != "sdpa:math"]
        if "sdpa:math" in at and flash:
            notes.append(f"{dt} d{d} N={n}: naive {at['sdpa:math']:.0f} MiB, flash path {min(flash):.0f}-"
                         f"{max(flash):.0f} MiB")
    axes[0].set_ylabel("peak extra MiB (fwd + bwd)")
    style.shared_legend(axes, leg)
    style.footer(fig, "H200", files, "; ".join(notes) + "; torch allocator peak beyond q, k, v, dO "
                 "(+ ioattn's C ABI workspace)")
    style.save(fig, args.out, NAME)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""fig_cpu_reference: time and heap memory of the naive vs the tiled CPU reference (measured).

Data: cpu/cpu_reference/cpu_reference.csv (experiments/exp_cpu_reference.cpp).
Left: best-of-reps wall time against N; right: extra heap bytes (peak live heap during one call
minus the outputs) against N. Forward and backward, every implementation the driver measured.
"""

import style
from style import results  # experiments/results_index.py

NAME = "fig_cpu_reference"
MARK = {"fwd": "o", "bwd": "^"}


def main() -> None:
    args = style.parser(__doc__).parse_args()
    path = results.find_csv("cpu", "cpu_reference", "cpu_reference")
    if path is None:
        style.skip(NAME, "no cpu/cpu_reference/cpu_reference.csv (run experiments/exp_cpu_reference)")
    rows = results.read_csv(path)
    fig, (ax_t, ax_m) = style.figure(width=style.COLUMN_WIDTH_IN, height=2.4, ncols=2)
    series = sorted({(r["impl"], r["pass"]) for r in rows}, key=lambda s: (s[1], s[0]))
    for impl, pas in series:
        pts = sorted((int(r["seqlen"]), results.num(r, "ms_min"), results.num(r, "extra_bytes"))
                     for r in rows if r["impl"] == impl and r["pass"] == pas)
        n = [p[0] for p in pts]
        kw = style.measured(style.color_for(impl), MARK.get(pas, "o"))
        label = f"{impl} {pas}"
        ax_t.plot(n, [p[1] for p in pts], label=label, **kw)
        ax_m.plot(n, [max(p[2], 1.0) for p in pts], label=label, **kw)
    for ax in (ax_t, ax_m):
        style.pow2_axis(ax)
        ax.set_yscale("log")
        ax.set_xlabel("sequence length N")
    ax_t.set_ylabel("time (ms, measured)")
    style.plain_log_axis(ax_t)
    ax_m.set_ylabel("extra heap (measured)")
    style.human_bytes_axis(ax_m)
    ax_t.legend(loc="upper left", ncol=1, fontsize=5.5)
    r0 = rows[0]
    cfg = f"{r0['dtype']}, batch {r0['batch']}, heads {r0['heads']}, d {r0['head_dim']}, Br=Bc={r0['br']}"
    style.footer(fig, f"this CPU ({r0.get('host_cpu', '?')}, {r0['threads']} threads); {cfg}", [path])
    style.save(fig, args.out, NAME)


if __name__ == "__main__":
    main()

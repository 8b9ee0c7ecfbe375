#!/usr/bin/python3
"""fig_amd_predictions: the model's forward and backward TFLOP/s against N for the GPUs ioattn
cannot run (MI210, one MI250X GCD, MI300X, A100, H100), each with its ceiling and an uncertainty
band. One row per pass, one column per (head dim, causal).

Drawn per machine (all modeled, nothing measured):
  expected  dashed, hollow markers: the expected-time model with the H200's calibrated instruction
            efficiencies borrowed (`expected_borrowed_tflops`; simulator/validate/predictions.py);
  band      shaded: that expected value over [1 / (1 + e), 1 / (1 - e)], e the pass's worst held-out
            time error on the H200 (`band_lo_tflops`, `band_hi_tflops`), cut at the ceiling (no kernel
            beats it); the spread the model showed on the H200, not a bound on another architecture;
  ceiling   thin dotted line: the roofline (`ceiling_tflops`).
The design is the default one of predictions.py (FA2, the searched tile, the machine's native
matrix instruction, no softmax/matrix overlap), bf16, batch·N = 16k, 16 heads; the footer says so
from the CSV's own columns. TFLOP/s follow the FlashAttention-2 convention (causal halves the FLOPs).

Data: simulator/validate/predictions.csv (committed; rewritten by predictions.py from `ioattn sweep`).
"""

import style
from style import results  # experiments/results_index.py

NAME = "fig_amd_predictions"
MACHINES = ["mi210", "mi250x", "mi300x", "a100-80gb", "h100"]  # drawing order; others in the CSV follow
MARKERS = ["o", "s", "D", "^", "v", "P", "X"]
PASS_LABEL = {"fwd": "forward", "bwd": "backward"}


def main() -> None:
    args = style.parser(__doc__).parse_args()
    path, rows = results.derived_csv("predictions")
    need = {"machine", "pass_", "seqlen", "head_dim", "causal", "ceiling_tflops", "expected_borrowed_tflops",
            "band_lo_tflops", "band_hi_tflops"}
    if path is None or not rows:
        style.skip(NAME, "no simulator/validate/predictions.csv (run simulator/validate/predictions.py)")
    if not need <= rows[0].keys():
        style.skip(NAME, f"{results.rel(path)} lacks the columns {', '.join(sorted(need - rows[0].keys()))}")
    passes = [p for p in ("fwd", "bwd") if any(r["pass_"] == p for r in rows)]
    groups = sorted({(int(r["head_dim"]), results.flag(r["causal"])) for r in rows})
    names = [m for m in MACHINES if any(r["machine"] == m for r in rows)]
    names += sorted({r["machine"] for r in rows} - set(names))

    style.apply()
    mosaic = [[f"p{pi}_{gi}" for gi in range(len(groups))] for pi in range(len(passes))] + [["legend"] * len(groups)]
    width = style.FULL_WIDTH_IN if len(groups) > 2 else style.COLUMN_WIDTH_IN * 1.6
    fig, d_ax = style.plt.subplot_mosaic(mosaic, figsize=(width, 0.9 + 1.6 * len(passes)), layout="constrained",
                                         height_ratios=[1.0] * len(passes) + [0.3])
    d_ax["legend"].axis("off")
    axes = []
    cut = 0  # band edges above the ceiling, cut to it
    for pi, pass_ in enumerate(passes):
        for gi, (d, c) in enumerate(groups):
            ax = d_ax[f"p{pi}_{gi}"]
            axes.append(ax)
            for mi, m in enumerate(names):
                pts = sorted((int(r["seqlen"]), r) for r in rows if r["machine"] == m and r["pass_"] == pass_
                             and int(r["head_dim"]) == d and results.flag(r["causal"]) == c)
                if not pts:
                    continue
                n = [p[0] for p in pts]
                ceil = [results.num(p[1], "ceiling_tflops") for p in pts]
                exp = [results.num(p[1], "expected_borrowed_tflops") for p in pts]
                lo = [results.num(p[1], "band_lo_tflops") for p in pts]
                # band_hi is empty where the held-out error is >= 100 % (no upper edge): the ceiling then.
                hi_raw = [results.num(p[1], "band_hi_tflops", float("inf")) for p in pts]
                cut += sum(h > x for h, x in zip(hi_raw, ceil))
                hi = [min(h, x) for h, x in zip(hi_raw, ceil)]
                label, color = style.machine_key(m.upper()), style.color_for(m.upper())
                ax.fill_between(n, lo, hi, color=color, alpha=0.13, linewidth=0)
                ax.plot(n, exp, label=f"{label} expected (model)", **style.modeled(color, MARKERS[mi % len(MARKERS)]))
                ax.plot(n, ceil, color=color, linestyle=":", linewidth=0.8, label=f"{label} ceiling (model)")
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            style.pow2_axis(ax, max_ticks=4)
            style.plain_log_axis(ax)
            ax.set_title(f"{PASS_LABEL.get(pass_, pass_)}, d = {d}, {'causal' if c else 'non-causal'}", fontsize=6)
            if pi == len(passes) - 1:
                ax.set_xlabel("sequence length N")
            if gi == 0:
                ax.set_ylabel("TFLOP/s")
    style.shared_legend(axes, d_ax["legend"], ncol=5)
    errs = {p: sorted({r["held_out_worst_error"] for r in rows if r["pass_"] == p}) for p in passes}
    tokens = min(int(r["batch"]) * int(r["seqlen"]) for r in rows)
    one = sorted(int(r["seqlen"]) for r in rows if int(r["batch"]) == 1 and int(r["batch"]) * int(r["seqlen"]) > tokens)
    batch = f"batch·N = {tokens}" + (f" (batch 1 from N = {one[0]} on)" if one else "")
    design = ", ".join(sorted({f"{r['dtype']}, {r['heads']} heads" for r in rows}))
    band = "; ".join(f"{PASS_LABEL.get(p, p)} e = {'/'.join(f'{float(e) * 100:.0f} %' for e in es)}"
                     for p, es in errs.items())
    note = (f"all modeled: FA2, searched tile, native matrix instruction, no overlap; {design}, "
            f"{batch}. Expected: H200 calibration borrowed. Band: expected over "
            f"[1/(1+e), 1/(1-e)], e the worst held-out time error on the H200 ({band})"
            + (f"; {cut} band edge(s) above the ceiling cut to it" if cut else "") + ".")
    style.footer(fig, ", ".join(style.machine_key(m.upper()) for m in names), [path], note)
    style.save(fig, args.out, NAME)


if __name__ == "__main__":
    main()

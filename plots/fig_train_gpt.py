#!/usr/bin/python3
"""fig_train_gpt: the training check on the H200: a small GPT (experiments/gpu/train_gpt.py)
trained from one initialization with ioattn.attention (the forward and backward the summary
names) and with SDPA's flash backend. Left: the training loss of both per step. Right: their
relative gap |loss_ioattn - loss_sdpa| / loss_sdpa per step. The legend carries each run's median
step time and peak device memory, the caption line the verdict train_gpt.py wrote (tolerance,
loss fell).

Data: the canonical training run (role train in h200/CANONICAL: train_gpt.json and the
train_gpt.csv beside it).
"""

import style
from style import results  # experiments/results_index.py

NAME = "fig_train_gpt"
RUNS = (("ioattn", "ioattn", "#7a0177"), ("sdpa", "sdpa:flash", style.IMPL_COLORS["sdpa:flash"]))


def main() -> None:
    args = style.parser(__doc__).parse_args()
    summary, curves, files = results.train_run()
    if summary is None or not curves:
        style.skip(NAME, "no canonical training run (role train in experiments/results/h200/CANONICAL)")
    fig, (ax, gap) = style.figure(width=style.COLUMN_WIDTH_IN * 1.6, height=2.4, ncols=2)
    steps = [int(float(r["step"])) for r in curves]
    for key, name, color in RUNS:
        col = f"loss_{key}"
        if col not in curves[0]:
            continue
        ms = (summary.get("step_ms_median") or {}).get(key)
        mib = (summary.get("peak_mib") or {}).get(key)
        extra = ", ".join(x for x in (f"{ms:.1f} ms/step" if ms else "", f"peak {mib:,.0f} MiB" if mib else "") if x)
        ax.plot(steps, [results.num(r, col) for r in curves], color=color, linewidth=0.9,
                linestyle="-" if key == "ioattn" else "--", label=f"{name} (measured{', ' + extra if extra else ''})")
    ax.set_xlabel("training step")
    ax.set_ylabel("training loss")
    ax.set_yscale("log")
    style.plain_log_axis(ax)
    ax.legend(fontsize=5)
    rel_gap = [abs(results.num(r, "loss_ioattn") - results.num(r, "loss_sdpa")) / results.num(r, "loss_sdpa")
               for r in curves]
    gap.plot(steps, rel_gap, color="#444444", linewidth=0.7, label="|ioattn - sdpa| / sdpa (measured)")
    gap.set_yscale("log")
    gap.set_xlabel("training step")
    gap.set_ylabel("relative loss gap per step")
    gap.legend(fontsize=5)
    model = summary.get("model", "")
    status = summary.get("status", "")
    style.footer(fig, "H200", files, f"{model}; {summary.get('kernels', '')}; {status}; "
                 f"step time: {summary.get('step_timing', '')}")
    style.save(fig, args.out, NAME)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""fig_fwdbwd_speedup: forward+backward and backward throughput against N on the H200: every
ioattn backward variant (each after the forward it pairs with) beside PyTorch SDPA's flash
(FlashAttention-2) and cuDNN backends, measured in the same run. One row per pass (fwdbwd, bwd)
and dtype, one column per (head dim, causal) the run measured; each point is the median of the
run's samples. Under each panel's title: the best ioattn variant's speedup ms(SDPA) / ms(ioattn) against
flash and cuDNN at the panel's largest N, per sample (so the spread shows).

TFLOP/s follow the FlashAttention-2 convention: forward = 4·batch·heads·N²·d (halved when
causal), backward = 2.5x, forward+backward = 3.5x the forward.
Data: the canonical backward benchmark (role bwd in h200/CANONICAL: its bench.csv, pass bwd and
fwdbwd rows).
"""

import style
from style import results  # experiments/results_index.py

NAME = "fig_fwdbwd_speedup"
MARKERS = ["o", "s", "D", "^", "v", "P", "X", "h"]
PEERS = ("sdpa:flash", "sdpa:cudnn")
PASS_LABEL = {"fwdbwd": "forward + backward", "bwd": "backward"}


def speedups(sel, n, peer):
    """(best ioattn impl, [ms(peer) / ms(ioattn) per sample]) at N = n, the best by median ms."""
    at = [r for r in sel if int(r["seqlen"]) == n]
    peer_rows = [r for r in at if r["impl"] == peer]
    mine = sorted((results.num(r, "ms"), r["impl"], r) for r in at if results.is_ioattn(r["impl"]))
    if not peer_rows or not mine:
        return None, []
    best = mine[0][2]
    p, b = peer_rows[0]["_ms_by_sample"], best["_ms_by_sample"]
    return best["impl"], [p[s] / b[s] for s in sorted(set(p) & set(b)) if b[s] == b[s] and b[s] > 0]


def main() -> None:
    args = style.parser(__doc__).parse_args()
    data, files = {}, []
    for pass_ in ("fwdbwd", "bwd"):
        rows, f = results.bwd_rows(pass_)
        data[pass_] = rows
        files += f
    rows_all = data["fwdbwd"] + data["bwd"]
    if not rows_all:
        style.skip(NAME, "no canonical backward benchmark (role bwd in experiments/results/h200/CANONICAL)")
    files = list(dict.fromkeys(files))
    dtypes = sorted({r["dtype"] for r in rows_all})
    groups = sorted({(int(float(r["head_dim"])), results.flag(r["causal"])) for r in rows_all})
    panels = [(p, dt) for dt in dtypes for p in ("fwdbwd", "bwd") if any(r["dtype"] == dt for r in data[p])]
    impls = sorted({r["impl"] for r in rows_all}, key=lambda s: (not s.startswith("ioattn:"), s))
    colors = style.ladder_colors(impls)
    width = style.FULL_WIDTH_IN if len(groups) > 2 else style.COLUMN_WIDTH_IN * (1.0 if len(groups) == 1 else 1.6)
    style.apply()
    mosaic = [[f"p{pi}_{gi}" for gi in range(len(groups))] for pi in range(len(panels))] + [["legend"] * len(groups)]
    fig, d_ax = style.plt.subplot_mosaic(mosaic, figsize=(width, 0.9 + 1.55 * len(panels)), layout="constrained",
                                         height_ratios=[1.0] * len(panels) + [0.35])
    axes = [[d_ax[f"p{pi}_{gi}"] for gi in range(len(groups))] for pi in range(len(panels))]
    d_ax["legend"].axis("off")
    for pi, (pass_, dt) in enumerate(panels):
        for gi, (d, c) in enumerate(groups):
            ax = axes[pi][gi]
            sel = results.select(data[pass_], dt, d, c)
            for i, impl in enumerate(impls):
                pts = sorted((int(r["seqlen"]), results.num(r, "tflops")) for r in sel if r["impl"] == impl)
                if pts:
                    ax.plot([p[0] for p in pts], [p[1] for p in pts],
                            label=f"{impl.replace('ioattn:', '')} (measured)",
                            **style.measured(colors.get(impl) or style.color_for(impl), MARKERS[i % len(MARKERS)]))
            ax.set_yscale("log")
            style.pow2_axis(ax, max_ticks=4)
            style.plain_log_axis(ax)
            ax.set_title(f"{PASS_LABEL[pass_]}, {dt}, d = {d}, {'causal' if c else 'non-causal'}", fontsize=6)
            if pi == len(panels) - 1:
                ax.set_xlabel("sequence length N (batch·N = 16k)")
            if gi == 0:
                ax.set_ylabel("TFLOP/s")
            if not sel:
                ax.text(0.5, 0.5, "not measured", transform=ax.transAxes, ha="center", va="center", fontsize=6,
                        color="#aa0000")
                continue
            n = max(int(r["seqlen"]) for r in sel)
            lines = []
            for peer in PEERS:
                best, rs = speedups(sel, n, peer)
                if rs:
                    lines.append(f"{best.replace('ioattn:', '')} vs {peer.split(':')[1]}, N={n // 1024}k: "
                                 + ", ".join(f"{x:.2f}x" for x in rs))
            if lines:  # under the panel's title: the best variant against each peer at the largest N
                ax.set_title(ax.get_title() + "\n" + "\n".join(lines), fontsize=5.2)
    style.shared_legend([ax for row in axes for ax in row], d_ax["legend"], ncol=3)
    samples = max((int(r.get("_samples", 1)) for r in rows_all), default=1)
    style.footer(fig, "H200", files,
                 f"{samples} sample(s) per point (median drawn; speedups per sample); FA2 FLOP convention; "
                 f"ioattn backward after its paired forward")
    style.save(fig, args.out, NAME)


if __name__ == "__main__":
    main()

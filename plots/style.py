"""plots/style.py: the one style every figure shares.

Conventions (so every figure reads the same way):
  - measured data: solid lines, filled markers, label ends in "(measured)";
  - modeled data (the simulator): dashed lines, hollow markers, label ends in "(model)";
  - one colour per machine and one per implementation, the same in every figure;
  - every figure carries a footer naming the machine(s) and the CSV files it was drawn from;
  - size fits one column of a two-column paper (3.4 in wide), fonts 7-8 pt.

Data: figures read CSV only, through experiments/results_index.py (imported here as `results`,
so `import style` makes `import results_index` work): the results layout, the newest run of a
simulator or CPU experiment, and the canonical H200 run (experiments/results/h200/CANONICAL). A
figure whose data is missing is not faked: the script prints `SKIPPED: <why>` and exits with code
77 (ctest's skip code), or draws the part that exists and says on the figure what is missing.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Iterable

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "experiments"))
import results_index as results  # noqa: E402

rel = results.rel
SKIP = 77  # exit code of a figure skipped for lack of data (ctest SKIP_RETURN_CODE)

COLUMN_WIDTH_IN = 3.4
FULL_WIDTH_IN = 7.0

MACHINE_COLORS = {
    "MI210": "#d62728", "MI250X": "#ff7f0e", "MI300X": "#8c564b",
    "A100": "#2ca02c", "H100": "#1f77b4", "H200": "#9467bd", "RTX3090": "#7f7f7f",
}
IMPL_COLORS = {
    "standard": "#d62728", "naive": "#d62728",
    "fa1": "#ff7f0e", "fa2": "#1f77b4", "splitkv": "#2ca02c",
    "sdpa:flash": "#17becf", "sdpa:cudnn": "#000000", "sdpa:efficient": "#bcbd22", "sdpa:math": "#8c564b",
}
_FALLBACK = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
             "#bcbd22", "#17becf"]


def apply() -> None:
    plt.rcParams.update({
        "font.size": 7.5, "axes.titlesize": 8, "axes.labelsize": 7.5, "legend.fontsize": 6.5,
        "xtick.labelsize": 6.5, "ytick.labelsize": 6.5, "lines.linewidth": 1.1, "lines.markersize": 3.5,
        "axes.grid": True, "grid.alpha": 0.3, "grid.linewidth": 0.5, "legend.frameon": False,
        "savefig.dpi": 200, "pdf.fonttype": 42, "axes.spines.top": False, "axes.spines.right": False,
    })


def ladder_colors(impls) -> dict[str, str]:
    """One colour per ioattn kernel variant, from a sequential map in ladder (name) order, so the
    ladder reads from light (naive) to dark (fast); other impls keep their fixed colours."""
    from matplotlib import colormaps

    ladder = sorted(i for i in impls if i.startswith("ioattn:"))
    cmap = colormaps["plasma"]
    n = max(len(ladder) - 1, 1)
    return {impl: matplotlib.colors.to_hex(cmap(0.85 - 0.75 * k / n)) for k, impl in enumerate(ladder)}


def machine_key(name: str) -> str:
    """Catalog names vary ('H200-SXM', 'h200_sxm', 'MI250X-GCD'): map to the colour key."""
    up = name.upper().replace("_", "-")
    for k in MACHINE_COLORS:
        if up.startswith(k):
            return k
    return name


def color_for(name: str, table: dict[str, str] | None = None) -> str:
    table = table if table is not None else {**MACHINE_COLORS, **IMPL_COLORS}
    if name in table:
        return table[name]
    k = machine_key(name)
    if k in table:
        return table[k]
    return _FALLBACK[sum(map(ord, name)) % len(_FALLBACK)]


def measured(color: str, marker: str = "o") -> dict:
    return {"color": color, "linestyle": "-", "marker": marker, "markerfacecolor": color}


def modeled(color: str, marker: str = "s") -> dict:
    return {"color": color, "linestyle": "--", "marker": marker, "markerfacecolor": "white"}


# -------------------------------------------------------------------------------------- output


def parser(description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--out", default=str(REPO / "out" / "figures"), help="folder for PNG and PDF")
    return p


def figure(width: float = COLUMN_WIDTH_IN, height: float = 2.5, ncols: int = 1, nrows: int = 1, **kw):
    apply()
    return plt.subplots(nrows, ncols, figsize=(width, height), layout="constrained", **kw)


def figure_with_legend_row(ncols: int, width: float = COLUMN_WIDTH_IN, height: float = 2.9,
                           legend_share: float = 0.3, **kw):
    """Axes in one row plus a full-width row below them that holds only the legend (so a legend
    shared by several panels never squeezes them). Returns (fig, [axes...], legend_axis)."""
    apply()
    names = [[f"p{i}" for i in range(ncols)], ["legend"] * ncols]
    fig, d = plt.subplot_mosaic(names, figsize=(width, height), layout="constrained",
                                height_ratios=[1 - legend_share, legend_share], **kw)
    leg = d["legend"]
    leg.axis("off")
    return fig, [d[f"p{i}"] for i in range(ncols)], leg


def shared_legend(axes, leg_ax, ncol: int = 2, fontsize: float = 5.0) -> None:
    """One legend in leg_ax with every distinct label of `axes`, in order of appearance."""
    handles, labels = [], []
    for ax in axes:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab not in labels and not lab.startswith("_"):
                handles.append(h)
                labels.append(lab)
    leg_ax.legend(handles, labels, loc="center", ncol=ncol, fontsize=fontsize)


def footer(fig, machines: str, sources: Iterable[Path | str], note: str = "") -> None:
    """Machine and data source, in small type under the axes: every figure says where it came from."""
    src = ", ".join(str(rel(Path(s))) for s in sources)
    text = f"machine: {machines}   data: {src}"
    if note:
        text += f"\n{note}"
    # supxlabel takes part in the constrained layout, so the footer never overlaps the axes.
    fig.supxlabel(_wrap(text, int(fig.get_figwidth() * 27)), x=0.01, ha="left", fontsize=4.8, color="#444444")


def _wrap(text: str, width: int) -> str:
    import textwrap

    return "\n".join(textwrap.fill(line, width) for line in text.splitlines())


def save(fig, out: str | Path, name: str, bottom: float = 0.0) -> None:
    """PNG and PDF of the figure (bottom: unused, kept for callers)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    for ext in ("png", "pdf"):
        fig.savefig(out / f"{name}.{ext}")
    plt.close(fig)
    print(f"  drew {rel(out / name)}.png and .pdf")


def skip(name: str, why: str) -> None:
    """No data for this figure at all: say so visibly and exit with the skip code."""
    print(f"SKIPPED: {name}: {why}")
    sys.exit(SKIP)


def _pow2_ticks(lo: float, hi: float, max_ticks: int) -> list[float]:
    """Powers of two covering [lo, hi], thinned to at most max_ticks (every 2nd, 4th, ...)."""
    import math

    if not (lo > 0 and hi > 0):
        return []
    e0, e1 = math.ceil(math.log2(lo) - 1e-9), math.floor(math.log2(hi) + 1e-9)
    if e1 < e0:  # the range holds no power of two: take the nearest one below
        e0 = e1
    step = 1
    while (e1 - e0) // step + 1 > max_ticks:
        step += 1
    return [2.0 ** e for e in range(e0, e1 + 1, step) if lo <= 2.0 ** e * 1.0001 and 2.0 ** e <= hi * 1.0001]


def human_bytes_axis(ax, axis: str = "y", max_ticks: int = 6) -> None:
    """A log axis of bytes with ticks at powers of two, labelled B/KiB/MiB/GiB/TiB.
    Call after plotting (the ticks follow the data limits)."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    def fmt(v, _pos=None):
        for unit, sc in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
            if v >= sc:
                return f"{v / sc:g} {unit}"
        return f"{v:g} B"

    a = ax.yaxis if axis == "y" else ax.xaxis
    lo, hi = ax.get_ylim() if axis == "y" else ax.get_xlim()
    a.set_major_locator(FixedLocator(_pow2_ticks(lo, hi, max_ticks)))
    a.set_minor_locator(NullLocator())
    a.set_major_formatter(FuncFormatter(fmt))


def pow2_axis(ax, axis: str = "x", max_ticks: int = 6) -> None:
    """A log2 axis of sizes with ticks at powers of two (1k = 1024). Call after plotting."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    if axis == "x":
        ax.set_xscale("log", base=2)
        lo, hi = ax.get_xlim()
        a = ax.xaxis
    else:
        ax.set_yscale("log", base=2)
        lo, hi = ax.get_ylim()
        a = ax.yaxis

    def fmt(v, _pos=None):
        return f"{v / 1024:g}k" if v >= 1024 else f"{v:g}"

    a.set_major_locator(FixedLocator(_pow2_ticks(lo, hi, max_ticks)))
    a.set_minor_locator(NullLocator())
    a.set_major_formatter(FuncFormatter(fmt))


def _ticks_125(lo: float, hi: float, max_ticks: int) -> list[float]:
    """1, 2, 5 x 10^k inside [lo, hi]; thinned to 1, 10, ... or every other decade when too many.
    At least two ticks: when the range holds fewer, its ends (rounded to 2 digits) are added."""
    import math

    if not (lo > 0 and hi > lo):
        return []
    out = []
    for e in range(math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1):
        for m in (1.0, 2.0, 5.0):
            v = m * 10.0 ** e
            if lo <= v * 1.0001 and v <= hi * 1.0001:
                out.append(v)
    if len(out) > max_ticks:
        out = [v for v in out if abs(math.log10(v) - round(math.log10(v))) < 1e-9]
        step = 1
        while len(out[::step]) > max_ticks:
            step += 1
        out = out[::step]
    if len(out) < 2:
        out = sorted(set(out) | {float(f"{lo:.2g}"), float(f"{hi:.2g}")})
        out = [v for v in out if lo <= v * 1.0001 and v <= hi * 1.0001] or [lo, hi]
    return out


def log_axis_125(ax, axis: str = "y", max_ticks: int = 7) -> None:
    """A log axis with ticks at 1, 2, 5 x 10^k inside the data limits, labelled in plain numbers
    (0.5, 1, 20, 500; no 5x10^2), at most max_ticks of them. Call after plotting."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    a = ax.yaxis if axis == "y" else ax.xaxis
    (ax.set_yscale if axis == "y" else ax.set_xscale)("log")
    lo, hi = ax.get_ylim() if axis == "y" else ax.get_xlim()
    a.set_major_locator(FixedLocator(_ticks_125(lo, hi, max_ticks)))
    a.set_minor_locator(NullLocator())
    a.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:g}"))


def plain_log_axis(ax, axis: str = "y") -> None:
    """A log axis labelled 1, 2, 5, 10, 20, 50, ... in plain numbers (log_axis_125). Call after plotting."""
    log_axis_125(ax, axis)

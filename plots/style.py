"""plots/style.py: the one style every figure shares, and where figures find their data.

Conventions (so every figure reads the same way):
  - measured data: solid lines, filled markers, label ends in "(measured)";
  - modeled data (the simulator): dashed lines, hollow markers, label ends in "(model)";
  - one colour per machine and one per implementation, the same in every figure;
  - every figure carries a footer naming the machine(s) and the CSV files it was drawn from;
  - size fits one column of a two-column paper (3.4 in wide), fonts 7-8 pt.

Data: scripts read only CSV. They look for `<root>/<machine>/<tag>/<name>.csv` in the roots of
$IOATTN_RESULTS (colon-separated; default `out/results:experiments/results`, i.e. a fresh run of
`make figures` first, then the committed results). A figure whose data is missing is not faked:
the script prints `SKIPPED: <why>` and exits with code 77 (ctest's skip code), or draws the part
that exists and says on the figure what is missing.
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
from pathlib import Path
from typing import Iterable

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
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


# ----------------------------------------------------------------------------------------- data


def roots() -> list[Path]:
    env = os.environ.get("IOATTN_RESULTS")
    parts = env.split(":") if env else ["out/results", "experiments/results"]
    return [(REPO / p if not os.path.isabs(p) else Path(p)) for p in parts if p]


def find_csv(machine: str, tag: str, name: str) -> Path | None:
    """`<root>/<machine>/<tag>[-<suffix>]/<name>.csv` in the first root that has one, or None.
    Committed results are immutable, so a newer run of an experiment is committed under a new tag
    `<tag>-<UTC time>`; among the tags of one root the newest run (tag_time) wins."""
    for r in roots():
        base = r / machine
        if not base.is_dir():
            continue
        tags = sorted((tag_time(d), d.name) for d in base.iterdir()
                      if d.is_dir() and (d.name == tag or d.name.startswith(tag + "-")) and (d / f"{name}.csv").is_file())
        if tags:
            return base / tags[-1][1] / f"{name}.csv"
    return None


def read_csv(path: Path) -> list[dict]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def h200_rows(required: Iterable[str]) -> tuple[list[dict], list[Path]]:
    """Every row of every committed H200 CSV that has the `required` columns, with its source
    file in `_source`, its run tag in `_tag` and the run's time in `_tag_time` (tag_time). Rows come from experiments/results/h200/<tag>/ in
    every root (duplicates across roots are read once, the first root wins)."""
    required = list(required)
    rows, files, seen = [], [], set()
    for r in roots():
        for p in sorted((r / "h200").glob("*/*.csv")):
            key = (p.parent.name, p.name)
            if key in seen:
                continue
            with p.open(newline="") as f:
                rd = csv.DictReader(f)
                if not rd.fieldnames or any(c not in rd.fieldnames for c in required):
                    continue
                seen.add(key)
                files.append(p)
                when = tag_time(p.parent)
                for row in rd:
                    row["_source"] = str(rel(p))
                    row["_tag"] = p.parent.name
                    row["_tag_time"] = when
                    rows.append(row)
    return rows, files


def tag_time(d: Path) -> str:
    """When the run in results folder `d` was made, as a sortable string: the `date_utc` of its
    context.json or the `date:` line of its context.txt (the GPU runs), else the folder name.
    Tag names need not sort by time (the H200 tags carry a commit hash)."""
    import json
    import re as _re

    try:
        j = d / "context.json"
        if j.is_file():
            v = json.loads(j.read_text()).get("date_utc")
            if v:
                return str(v)
        t = d / "context.txt"
        if t.is_file():
            m = _re.search(r"^date:\s*(\S+)", t.read_text(), _re.M)
            if m:
                return m.group(1)
    except (OSError, ValueError):
        pass
    return d.name


def rel(p: Path) -> Path:
    try:
        return p.resolve().relative_to(REPO)
    except ValueError:
        return p


def num(row: dict, col: str, default: float = float("nan")) -> float:
    try:
        v = row.get(col, "")
        return float(v) if v not in ("", None) else default
    except ValueError:
        return default


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


def plain_log_axis(ax, axis: str = "y") -> None:
    """A log axis labelled 1, 2, 5, 10, 20, 50, ... in plain numbers (no 6x10^2). Call after plotting."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator

    a = ax.yaxis if axis == "y" else ax.xaxis
    a.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    a.set_minor_locator(NullLocator())
    a.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:g}"))

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
    "sdpa:flash": "#17becf", "sdpa:cudnn": "#7f7f7f", "sdpa:efficient": "#bcbd22", "sdpa:math": "#8c564b",
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
    """First `<root>/<machine>/<tag>/<name>.csv` over the roots, or None."""
    for r in roots():
        p = r / machine / tag / f"{name}.csv"
        if p.is_file():
            return p
    return None


def read_csv(path: Path) -> list[dict]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def h200_rows(required: Iterable[str]) -> tuple[list[dict], list[Path]]:
    """Every row of every committed H200 CSV that has the `required` columns, with its source
    file in `_source` and its run tag in `_tag`. Rows come from experiments/results/h200/<tag>/ in
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
                for row in rd:
                    row["_source"] = str(rel(p))
                    row["_tag"] = p.parent.name
                    rows.append(row)
    return rows, files


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
    return plt.subplots(nrows, ncols, figsize=(width, height), **kw)


def footer(fig, machines: str, sources: Iterable[Path | str], note: str = "") -> None:
    """Machine and data source, in small type under the axes: every figure says where it came from."""
    src = ", ".join(str(rel(Path(s))) for s in sources)
    text = f"machine: {machines}   data: {src}"
    if note:
        text += f"\n{note}"
    fig.text(0.01, 0.005, text, fontsize=4.8, color="#444444", ha="left", va="bottom", wrap=True)


def save(fig, out: str | Path, name: str, bottom: float = 0.22) -> None:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    fig.tight_layout(rect=(0, bottom * 0.5, 1, 1))
    fig.subplots_adjust(bottom=max(fig.subplotpars.bottom, bottom))
    for ext in ("png", "pdf"):
        fig.savefig(out / f"{name}.{ext}")
    plt.close(fig)
    print(f"  drew {rel(out / name)}.png and .pdf")


def skip(name: str, why: str) -> None:
    """No data for this figure at all: say so visibly and exit with the skip code."""
    print(f"SKIPPED: {name}: {why}")
    sys.exit(SKIP)


def human_bytes_axis(ax, axis: str = "y") -> None:
    """Label a log axis of bytes as KiB/MiB/GiB/TiB."""
    from matplotlib.ticker import FuncFormatter

    def fmt(v, _pos):
        for unit, s in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
            if v >= s:
                x = v / s
                return f"{x:.0f} {unit}" if x >= 1 and abs(x - round(x)) < 1e-9 else f"{x:.3g} {unit}"
        return f"{v:.0f} B"

    (ax.yaxis if axis == "y" else ax.xaxis).set_major_formatter(FuncFormatter(fmt))


def pow2_axis(ax, axis: str = "x") -> None:
    """log2 axis with 1k/2k/... labels for sequence lengths."""
    from matplotlib.ticker import FuncFormatter

    ax.set_xscale("log", base=2) if axis == "x" else ax.set_yscale("log", base=2)

    def fmt(v, _pos):
        return f"{v / 1024:g}k" if v >= 1024 else f"{v:g}"

    (ax.xaxis if axis == "x" else ax.yaxis).set_major_formatter(FuncFormatter(fmt))

"""plots/h200.py: reading the committed H200 benchmark results (experiments/results/h200/<tag>/).

The GPU benchmark writes tidy CSV with at least impl,dtype,head_dim,causal,seqlen,batch,heads,ms,
tflops; impl is `ioattn:<variant>` for the ladder and `sdpa:<backend>` for PyTorch's backends. A
run may hold several passes (a `pass` column) and several tags; the newest run (by the date in its
context file, style.tag_time) wins when two runs measured the same point.
"""

from __future__ import annotations

import re

import style

REQUIRED = ["impl", "dtype", "head_dim", "causal", "seqlen", "batch", "heads", "ms", "tflops"]


def flag(v) -> int:
    """0/1 from '0', '1', '0.0', 'true', 'False', ...; -1 when unreadable."""
    t = str(v).strip().lower()
    if t in ("1", "true", "yes", "1.0"):
        return 1
    if t in ("0", "false", "no", "0.0"):
        return 0
    return -1


def variant(impl: str) -> str:
    """The ladder rung of an ioattn impl: 'ioattn:v05_fa2_fast/w8_mt2' -> 'ioattn:v05'; other impls
    (sdpa:flash, ...) unchanged. Tile configurations of one variant thus share one series."""
    m = re.match(r"ioattn:(v\d+[a-z]*)", impl)  # v03b (split-KV) is its own rung, not v03
    return f"ioattn:{m.group(1)}" if m else impl


def best_per_variant(rs: list[dict]) -> list[dict]:
    """Per (variant, dtype, d, causal, N) the row with the highest TFLOP/s (the best tile config),
    with impl replaced by the variant and the full impl kept in `_config`."""
    best: dict[tuple, dict] = {}
    for r in rs:
        key = (variant(r["impl"]), r["dtype"], int(float(r["head_dim"])), flag(r["causal"]), int(r["seqlen"]))
        if key not in best or float(r["tflops"]) > float(best[key]["tflops"]):
            best[key] = dict(r, impl=key[0], _config=r["impl"])
    return list(best.values())


def without_tile_sweeps(rs: list[dict], files: list) -> tuple[list[dict], list]:
    """Drop the rows of tile sweeps (br/bc columns: experiments/gpu/bench_tiles.py, one kernel at
    many tiles of one problem; the block-size study's data, drawn by fig_block_size) and the files
    left without rows: a sweep point shares its run key with the benchmark's point of that kernel."""
    kept = [r for r in rs if not (r.get("br") or r.get("bc"))]
    sources = {r["_source"] for r in kept}
    return kept, [f for f in files if str(style.rel(f)) in sources]


def rows(per_variant: bool = True) -> tuple[list[dict], list]:
    """Throughput rows of every committed H200 CSV except tile sweeps; the forward pass only where
    a pass column exists. Duplicate points keep the newest tag; with per_variant (default) the tile
    configs of a variant collapse to its best one (best_per_variant)."""
    all_rows, files = style.h200_rows(REQUIRED)
    all_rows, files = without_tile_sweeps(all_rows, files)
    best: dict[tuple, dict] = {}
    for r in all_rows:
        p = (r.get("pass") or r.get("direction") or "fwd").lower()
        if p not in ("fwd", "forward"):
            continue
        try:
            key = (r["impl"], r["dtype"], int(float(r["head_dim"])), flag(r["causal"]), int(float(r["seqlen"])))
        except ValueError:
            continue  # a malformed row is not data
        if style.num(r, "ms") != style.num(r, "ms") or style.num(r, "tflops") != style.num(r, "tflops"):
            continue  # empty cell: the point was not measured
        r["seqlen"] = str(key[4])
        if key not in best or r["_tag_time"] > best[key]["_tag_time"]:
            best[key] = r
    out = list(best.values())
    return (best_per_variant(out) if per_variant else out), files


def is_naive(impl: str) -> bool:
    return impl.startswith("ioattn:") and ("naive" in impl or "v01" in impl)


def is_ioattn(impl: str) -> bool:
    return impl.startswith("ioattn:")


def select(rs: list[dict], dtype: str, head_dim: int, causal: int) -> list[dict]:
    return [r for r in rs if r["dtype"] == dtype and int(float(r["head_dim"])) == head_dim
            and flag(r["causal"]) == causal]


def speedup_points(rs: list[dict], flash: str | None = None) -> list[tuple[int, float, str]]:
    """(N, ms(naive) / ms(other), other) for each N measured by both, where other is the ioattn
    variant `flash` (e.g. 'ioattn:v03', the scalar FA2 whose arithmetic matches the scalar naive
    kernel: the ratio is the IO effect alone) or, when None, the fastest non-naive ioattn variant."""
    out = []
    for n in sorted({int(r["seqlen"]) for r in rs}):
        at = [r for r in rs if int(r["seqlen"]) == n]
        naive = [style.num(r, "ms") for r in at if is_naive(r["impl"])]
        others = sorted((style.num(r, "ms"), r["impl"]) for r in at
                        if is_ioattn(r["impl"]) and not is_naive(r["impl"])
                        and (flash is None or variant(r["impl"]) == flash))
        if naive and others:
            out.append((n, min(naive) / others[0][0], others[0][1]))
    return out


RUN_KEY = ["impl", "dtype", "head_dim", "causal", "seqlen", "batch", "heads"]


def run_key(r: dict) -> tuple:
    return (r["impl"], r["dtype"], int(float(r["head_dim"])), flag(r["causal"]), int(float(r["seqlen"])),
            int(float(r["batch"])), int(float(r["heads"])))


def merged_runs() -> tuple[list[dict], list]:
    """One dict per measured run (impl, dtype, d, causal, N, batch, heads), merging the columns of
    every committed H200 CSV that has that run: the benchmark's ms/tflops/peak memory and Nsight
    Compute's DRAM bytes land in one row. Empty cells never overwrite; a newer tag wins a conflict."""
    rows, files = without_tile_sweeps(*style.h200_rows(RUN_KEY))
    merged: dict[tuple, dict] = {}
    for r in sorted(rows, key=lambda r: r["_tag_time"]):
        try:
            k = run_key(r)
        except ValueError:
            continue
        m = merged.setdefault(k, {})
        for c, v in r.items():
            if v not in ("", None):
                m[c] = v
    return list(merged.values()), files

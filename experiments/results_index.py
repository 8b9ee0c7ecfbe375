"""experiments/results_index.py: where the results are and how to read them, for the figures
(plots/) and the paper's numbers (paper/gen_numbers.py) alike. Plain Python (csv, json): no
plotting library is imported here.

Layout: `<root>/<machine>/<tag>/<name>.csv` beside `context.json` (the drivers) or `context.txt`
(the GPU runs), in the roots of $IOATTN_RESULTS (colon-separated; default
`out/results:experiments/results`: a fresh `make figures` first, then the committed results).

  sim/, cpu/   one experiment per tag `<experiment>[-<UTC time>]`; within the first root that has
               the experiment, its newest run wins (find_csv): committed runs are immutable, a
               newer one supersedes an older one without editing it.
  h200/        GPU runs, `<date>_<commit>[_<what>]`. Which run is quoted is not "the newest": it is
               named in `h200/CANONICAL`, one `<role> <tag>` line per role (bench: bench.csv,
               ncu: ncu.csv, tiles: tiles.csv, bwd: bench.csv, train: train_gpt.json; ROLE_FILES),
               in the first root that has that file. Every H200 number of the figures and the
               paper comes from the canonical run(s).

Passes: a bench.csv row carries `pass` (fwd, bwd, fwdbwd; a file without the column is all fwd),
an ncu.csv row too (fwd or bwd). Role `bench` gives the forward rows (bench_rows), role `bwd` the
backward and forward+backward rows of its bench.csv (bwd_rows: a backward benchmark is committed
apart from the forward one, and the forward rows of a bwd folder are not read), role `ncu` the
Nsight Compute rows of either pass (ncu_rows(pass_)). Rows of two folders of one role are told
apart by run_key and pass: a forward and a backward measurement of one impl never shadow each
other.

The benchmark sweeps its whole grid `sample` = 0, 1, ... times in one run (newer runs); bench_rows
collapses the samples of one configuration into one row (ms = median over samples) and keeps the
spread |max - min| / mean in `_spread` (0 samples recorded: `_samples` = 1, `_spread` empty).
"""

from __future__ import annotations

import csv
import json
import os
import re
from pathlib import Path
from statistics import median
from typing import Iterable

REPO = Path(__file__).resolve().parent.parent
# role -> the file of a results folder that the role reads.
# fast: the forward benchmark of the newest fast rungs against the peers (issue 13), kept apart
# from bench (the whole ladder in one run) until one run has every rung.
# fp8: the FP8 forward benchmark (bench_sdpa.py --dtypes fp8_e4m3; its rows have study fp8), read by
# paper/gen_fp8.py (precision(), called by paper/gen_numbers.py).
ROLE_FILES = {"bench": "bench.csv", "ncu": "ncu.csv", "tiles": "tiles.csv", "bwd": "bench.csv",
              "train": "train_gpt.json", "fast": "bench.csv", "fp8": "bench.csv",
              "decode": "decode.csv",  # decode: bench_decode.py's split-KV decode rows (issue 12)
              # decode_pages: a decode run over more page sizes (e.g. 1 and 64) beside its own
              # contiguous rows, read on its own (README's decode_pages sentence), never mixed with decode
              "decode_pages": "decode.csv",
              "varlen": "varlen.csv",  # varlen: bench_varlen.py's packed batch vs SDPA on the padded one
              "heldout": "bench.csv"}  # heldout: the simulator's held-out runs (expected_time.py; + ncu.csv)
ROLES = tuple(ROLE_FILES)

# ------------------------------------------------------------------------------ generic layout


def roots() -> list[Path]:
    env = os.environ.get("IOATTN_RESULTS")
    parts = env.split(":") if env else ["out/results", "experiments/results"]
    return [(REPO / p if not os.path.isabs(p) else Path(p)) for p in parts if p]


def rel(p: Path | str) -> Path:
    """`p` relative to the repository where it lies inside it (for footers and paper comments)."""
    p = Path(p)
    try:
        return p.resolve().relative_to(REPO)
    except ValueError:
        return p


def tag_time(d: Path) -> str:
    """When the run in results folder `d` was made, as a sortable string: the `date_utc` of its
    context.json or the `date:` line of its context.txt, else the folder name."""
    try:
        j = d / "context.json"
        if j.is_file():
            v = json.loads(j.read_text()).get("date_utc")
            if v:
                return str(v)
        t = d / "context.txt"
        if t.is_file():
            m = re.search(r"^date:\s*(\S+)", t.read_text(), re.M)
            if m:
                return m.group(1)
    except (OSError, ValueError):
        pass
    return d.name


def find_csv(machine: str, tag: str, name: str) -> Path | None:
    """`<root>/<machine>/<tag>[-<suffix>]/<name>.csv` of the newest run (tag_time) in the first root
    that has one, or None. For sim/ and cpu/ experiments; H200 data goes through canonical()."""
    for r in roots():
        base = r / machine
        if not base.is_dir():
            continue
        tags = sorted((tag_time(d), d.name) for d in base.iterdir()
                      if d.is_dir() and (d.name == tag or d.name.startswith(tag + "-")) and (d / f"{name}.csv").is_file())
        if tags:
            return base / tags[-1][1] / f"{name}.csv"
    return None


def read_csv(path: Path | str) -> list[dict]:
    with Path(path).open(newline="") as f:
        return list(csv.DictReader(f))


# Tables derived by simulator/validate/*.py (committed beside the scripts that write them, first
# line a '# derived: <command>' comment): the expected-time validation, the claims, the predictions.
VALIDATE = REPO / "simulator" / "validate"


def derived_csv(name: str) -> tuple[Path | None, list[dict]]:
    """(path, rows) of simulator/validate/<name>.csv, its '#' comment lines skipped; (None, []) if absent."""
    path = VALIDATE / f"{name}.csv"
    if not path.is_file():
        return None, []
    with path.open(newline="") as f:
        return path, list(csv.DictReader(line for line in f if not line.startswith("#")))


def num(row: dict, col: str, default: float = float("nan")) -> float:
    try:
        v = row.get(col, "")
        return float(v) if v not in ("", None) else default
    except ValueError:
        return default


def flag(v) -> int:
    """0/1 from '0', '1', '0.0', 'true', 'False', ...; -1 when unreadable."""
    t = str(v).strip().lower()
    if t in ("1", "true", "yes", "1.0"):
        return 1
    if t in ("0", "false", "no", "0.0"):
        return 0
    return -1


# ---------------------------------------------------------------------------- the H200 runs


def canonical() -> dict[str, list[Path]]:
    """role -> results folders of the canonical H200 run for that role, in file order, from
    `h200/CANONICAL` in the first root that has one ({} when none does). A role may have several
    lines (a run committed as several folders, e.g. bf16 and fp16 benchmarks apart): their rows
    are read together, and for a run measured in two of them the first folder listed wins. A
    malformed line or a tag without a folder is an error (ValueError naming the file and line)."""
    for r in roots():
        f = r / "h200" / "CANONICAL"
        if not f.is_file():
            continue
        out: dict[str, list[Path]] = {}
        for i, line in enumerate(f.read_text().splitlines(), 1):
            words = line.split("#", 1)[0].split()
            if not words:
                continue
            if len(words) != 2 or words[0] not in ROLES:
                raise ValueError(f"{rel(f)}:{i}: expected '<role> <tag>' with role in {', '.join(ROLES)}")
            d = r / "h200" / words[1]
            if not d.is_dir():
                raise ValueError(f"{rel(f)}:{i}: run {words[1]} has no folder {rel(d)}")
            out.setdefault(words[0], []).append(d)
        return out
    return {}


def canonical_csvs(role: str) -> list[Path]:
    """<folder>/<ROLE_FILES[role]> of every canonical folder of `role` that has one."""
    name = ROLE_FILES.get(role, f"{role}.csv")
    return [d / name for d in canonical().get(role, []) if (d / name).is_file()]


def canonical_tag(role: str) -> str | None:
    """The canonical folder name(s) of `role`, comma-separated, or None."""
    ds = canonical().get(role)
    return ", ".join(d.name for d in ds) if ds else None


def context_of(run_dir: Path) -> dict:
    """The run's context: context.json (drivers), the context of bench.json (GPU runs), or the
    `key: value` lines of context.txt (older GPU runs)."""
    j = run_dir / "context.json"
    if j.is_file():
        return json.loads(j.read_text())
    for name in ("bench.json", "ncu.json", "tiles.json"):
        b = run_dir / name
        if b.is_file():
            try:
                c = json.loads(b.read_text())
                if isinstance(c, dict) and isinstance(c.get("context"), dict):
                    return c["context"]
            except ValueError:
                pass
    t = run_dir / "context.txt"
    out = {}
    if t.is_file():
        for line in t.read_text().splitlines():
            k, sep, v = line.partition(":")
            if sep and k.strip() and " " not in k.strip():
                out.setdefault(k.strip(), v.strip())
    return out


def variant(impl: str) -> str:
    """The ladder rung of an ioattn impl: 'ioattn:v05_fa2_fast/w8_mt2' -> 'ioattn:v05'; other impls
    (sdpa:flash, ...) unchanged."""
    m = re.match(r"ioattn:(v\d+[a-z]*)", impl)  # v03b (split-KV) is its own rung, not v03
    return f"ioattn:{m.group(1)}" if m else impl


def is_naive(impl: str) -> bool:
    return impl.startswith("ioattn:") and ("naive" in impl or "v01" in impl)


def is_ioattn(impl: str) -> bool:
    return impl.startswith("ioattn:")


RUN_KEY = ["impl", "dtype", "head_dim", "causal", "seqlen", "batch", "heads"]


def row_pass(r: dict) -> str:
    """'fwd', 'bwd' or 'fwdbwd' from a row's `pass` (or older `direction`) column; 'fwd' without one."""
    p = (r.get("pass") or r.get("direction") or "fwd").strip().lower()
    return {"forward": "fwd", "backward": "bwd", "forward_backward": "fwdbwd"}.get(p, p)


def run_key(r: dict) -> tuple:
    return (r["impl"], r["dtype"], int(float(r["head_dim"])), flag(r["causal"]), int(float(r["seqlen"])),
            int(float(r["batch"])), int(float(r["heads"])))


def select(rs: list[dict], dtype: str, head_dim: int, causal: int) -> list[dict]:
    return [r for r in rs if r["dtype"] == dtype and int(float(r["head_dim"])) == head_dim
            and flag(r["causal"]) == causal]


def _rows_of(paths: list[Path], required: Iterable[str]) -> tuple[list[dict], list[Path]]:
    """Rows of the canonical CSVs of one role that have the required columns, with `_source` and
    `_tag`; a run (run_key) found in an earlier file is not taken again from a later one."""
    required = list(required)
    rows, used, seen = [], [], set()
    for path in paths:
        rs = read_csv(path)
        if not rs or any(c not in rs[0] for c in required):
            continue
        keys = set()
        for r in rs:
            try:
                k = run_key(r) + (row_pass(r),)
            except (KeyError, ValueError):
                k = None
            if k is not None and k in seen:
                continue
            keys.add(k)
            r["_source"] = str(rel(path))
            r["_tag"] = path.parent.name
            rows.append(r)
        seen |= keys
        used.append(path)
    return rows, used


def _measured(r: dict) -> bool:
    """A row with a number in it: status ok (where recorded), no error, a time."""
    if r.get("status") not in (None, "", "ok"):
        return False
    if r.get("error"):
        return False
    ms = num(r, "ms")
    return ms == ms


def _forward(r: dict) -> bool:
    return row_pass(r) == "fwd"


def bench_rows(per_variant: bool = True) -> tuple[list[dict], list[Path]]:
    """Throughput rows of the canonical benchmark (role bench), forward, measured rows only, one per
    (impl, dtype, d, causal, N, batch, heads): samples collapse to the median ms and TFLOP/s, with
    `_samples` (how many) and `_spread` (|max - min| / mean of the samples' ms; '' for one sample).
    With per_variant the tile configurations of a rung (`ioattn:v05.../x`) collapse to the fastest
    (impl becomes the rung, `_config` keeps the full name)."""
    rows, files = _rows_of(canonical_csvs("bench"), ["impl", "dtype", "head_dim", "causal", "seqlen", "batch",
                                                     "heads", "ms"])
    rows = [r for r in rows if _measured(r) and _forward(r)]
    out = _collapse_samples(rows, run_key)
    for r in out:
        r["seqlen"] = str(int(float(r["seqlen"])))
    return (best_per_variant(out) if per_variant else out), _files_of(out)


def best_per_variant(rs: list[dict]) -> list[dict]:
    """Per (variant, dtype, d, causal, N) the row with the highest TFLOP/s (the best tile config),
    with impl replaced by the variant and the full impl kept in `_config`."""
    best: dict[tuple, dict] = {}
    for r in rs:
        key = (variant(r["impl"]), r["dtype"], int(float(r["head_dim"])), flag(r["causal"]), int(r["seqlen"]))
        if key not in best or num(r, "tflops") > num(best[key], "tflops"):
            best[key] = dict(r, impl=key[0], _config=r["impl"])
    return list(best.values())


def ncu_rows(pass_: str = "fwd") -> tuple[list[dict], list[Path]]:
    """Nsight Compute rows of the canonical run (role ncu) of one pass ('fwd': the forward kernels,
    also the rows of files without a `pass` column; 'bwd': every kernel of one backward launch,
    summed) that were profiled (no error)."""
    rows, _ = _rows_of(canonical_csvs("ncu"), RUN_KEY)
    rows = [r for r in rows if not r.get("error") and row_pass(r) == pass_]
    return rows, _files_of(rows)


def bwd_rows(pass_: str = "bwd", per_variant: bool = False) -> tuple[list[dict], list[Path]]:
    """Measured rows of the canonical backward benchmark (role bwd: its bench.csv) of one pass,
    'bwd' (the backward alone) or 'fwdbwd' (forward + backward), samples collapsed as in
    bench_rows (median ms and TFLOP/s, `_samples`, `_spread`). per_variant as in bench_rows."""
    rows, _ = _rows_of(canonical_csvs("bwd"), RUN_KEY + ["ms"])
    rows = [r for r in rows if _measured(r) and row_pass(r) == pass_]
    out = _collapse_samples(rows, run_key)
    for r in out:
        r["seqlen"] = str(int(float(r["seqlen"])))
    return (best_per_variant(out) if per_variant else out), _files_of(out)


def train_run() -> tuple[dict | None, list[dict], list[Path]]:
    """The canonical training check (role train): (train_gpt.json's `summary` plus its `context`
    under '_context', the loss curves of train_gpt.csv beside it as rows, [the files read]);
    (None, [], []) when no canonical folder has a train_gpt.json."""
    for j in canonical_csvs("train"):
        data = json.loads(j.read_text())
        summary = dict(data.get("summary") or {})
        summary["_context"] = data.get("context") or {}
        summary["_tag"] = j.parent.name
        c = j.parent / "train_gpt.csv"
        curves = read_csv(c) if c.is_file() else []
        return summary, curves, [j] + ([c] if c.is_file() else [])
    return None, [], []


def _collapse_samples(rows: list[dict], key) -> list[dict]:
    """One row per key: ms (and tflops) the median over the samples, `_samples`, `_ms_samples`,
    `_spread` = |max - min| / mean of the samples' ms ('' for a single sample)."""
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        try:
            groups.setdefault(key(r), []).append(r)
        except (KeyError, ValueError):
            continue  # a malformed row is not data
    out = []
    for rs in groups.values():
        ms = [num(r, "ms") for r in rs]
        tf = [num(r, "tflops") for r in rs if num(r, "tflops") == num(r, "tflops")]
        row = dict(rs[0])
        row["ms"] = str(median(ms))
        if tf:
            row["tflops"] = str(median(tf))
        row["_samples"] = len(rs)
        row["_ms_samples"] = ms
        row["_ms_by_sample"] = {str(r.get("sample", "")): num(r, "ms") for r in rs}
        row["_spread"] = (max(ms) - min(ms)) / (sum(ms) / len(ms)) if len(rs) > 1 else ""
        out.append(row)
    return out


def tile_rows() -> tuple[list[dict], list[Path]]:
    """The block-size sweep of the canonical run (role tiles): one row per (run, tile) with a time
    (samples collapsed as in bench_rows)."""
    rows, _ = _rows_of_all(canonical_csvs("tiles"), ["impl", "seqlen", "br", "bc", "ms"])
    rows = [r for r in rows if _measured(r)]
    rows = _collapse_samples(rows, lambda r: run_key(r) + (r["br"], r["bc"]))
    return rows, _files_of(rows)


def _rows_of_all(paths: list[Path], required: Iterable[str]) -> tuple[list[dict], list[Path]]:
    """Like _rows_of, but every row of every file (a tile sweep repeats one run key per tile)."""
    required = list(required)
    rows, used = [], []
    for path in paths:
        rs = read_csv(path)
        if not rs or any(c not in rs[0] for c in required):
            continue
        for r in rs:
            r["_source"] = str(rel(path))
            r["_tag"] = path.parent.name
        rows += rs
        used.append(path)
    return rows, used


def _files_of(rows: list[dict]) -> list[Path]:
    """The CSV files the rows came from (repository paths where inside it), in order."""
    return list(dict.fromkeys(REPO / r["_source"] if not os.path.isabs(r["_source"]) else Path(r["_source"])
                              for r in rows))


def merged_runs() -> tuple[list[dict], list[Path]]:
    """One dict per measured run (impl, dtype, d, causal, N, batch, heads) of the canonical
    benchmark (samples collapsed) with the canonical Nsight Compute row of the same run merged in
    (DRAM bytes; empty cells never overwrite). Runs only profiled appear too (no ms)."""
    b, bfiles = bench_rows(per_variant=False)
    n, nfiles = ncu_rows()
    merged: dict[tuple, dict] = {}
    for r in b + n:
        try:
            k = run_key(r)
        except ValueError:
            continue
        m = merged.setdefault(k, {})
        for c, v in r.items():
            if v not in ("", None) and (c not in m or m[c] in ("", None)):
                m[c] = v
        m.setdefault("_runs", []).append(r["_tag"])
    return list(merged.values()), bfiles + nfiles


def speedup_points(rs: list[dict], flash: str | None = None) -> list[tuple[int, float, str]]:
    """(N, ms(naive) / ms(other), other) for each N measured by both, where other is the ioattn
    variant `flash` (e.g. 'ioattn:v03', the scalar FA2 whose arithmetic matches the scalar naive
    kernel: the ratio is the IO effect alone) or, when None, the fastest non-naive ioattn variant."""
    out = []
    for n in sorted({int(r["seqlen"]) for r in rs}):
        at = [r for r in rs if int(r["seqlen"]) == n]
        naive = [num(r, "ms") for r in at if is_naive(r["impl"])]
        others = sorted((num(r, "ms"), r["impl"]) for r in at
                        if is_ioattn(r["impl"]) and not is_naive(r["impl"])
                        and (flash is None or variant(r["impl"]) == flash))
        if naive and others:
            out.append((n, min(naive) / others[0][0], others[0][1]))
    return out


# Column names the H200 results may use for peak device memory (bytes or MiB).
MEMORY_COLS = [("peak_extra_mib", 2**20), ("peak_mem_bytes", 1), ("peak_memory_bytes", 1), ("peak_bytes", 1),
               ("extra_bytes", 1), ("peak_mem_mib", 2**20), ("peak_memory_mib", 2**20), ("peak_mib", 2**20)]


def memory_rows() -> tuple[list[dict], list[Path], str | None, float]:
    """Canonical benchmark rows with a peak-memory number: (rows, files, column, bytes per unit)."""
    rows, files = bench_rows(per_variant=False)
    for col, scale in MEMORY_COLS:
        sel = [r for r in rows if num(r, col) == num(r, col)]
        if sel:
            return sel, files, col, scale
    return [], [], None, 1


def dram_bytes(r: dict) -> float:
    """Nsight Compute's DRAM read + write bytes of a merged run (NaN where not profiled)."""
    return num(r, "dram_read_bytes") + num(r, "dram_write_bytes")


def measured_ms(r: dict) -> float:
    """Benchmark time (median) where present, else the kernel time Nsight Compute summed."""
    ms = num(r, "ms")
    return ms if ms == ms else num(r, "gpu_time_ms")


def bench_runs() -> list[str]:
    """Tags of every H200 run (any root) that holds a bench.csv, sorted by the run's time."""
    seen = {}
    for r in roots():
        for d in sorted((r / "h200").glob("*/bench.csv")):
            seen.setdefault(d.parent.name, tag_time(d.parent))
    return sorted(seen, key=lambda t: seen[t])


def sample_spreads(rows: list[dict]) -> list[float]:
    """The two-sample spreads (|s0 - s1| / mean of ms) of rows collapsed by bench_rows."""
    return [r["_spread"] for r in rows if r.get("_spread") not in ("", None)]


# ------------------------------------------------------------------- the simulator's twin


def model_path() -> Path | None:
    return find_csv("sim", "h200_model", "model")


def model_pairs(meas: list[dict]) -> tuple[list[tuple[dict, dict]], dict[str, int], Path | None]:
    """(measured run, model row) for every run of `meas` whose twin in sim/h200_model was modeled
    (model_status ok), matched by run tag and run key; and, per model_status other than ok, how
    many of those runs have no prediction (e.g. 'no launch config in the measured row')."""
    mpath = model_path()
    if mpath is None:
        return [], {}, None
    model: dict[tuple, list[dict]] = {}
    for r in read_csv(mpath):
        try:
            model.setdefault((r.get("run", ""), run_key(r)), []).append(r)
        except ValueError:
            continue
    pairs, left_out = [], {}
    for m in meas:
        try:
            k = run_key(m)
        except ValueError:
            continue
        cands = [x for tag in dict.fromkeys(m.get("_runs", [m.get("_tag", "")])) for x in model.get((tag, k), [])]
        ok = [x for x in cands if x.get("model_status") == "ok"]
        if ok:
            pairs.append((m, ok[0]))
        elif cands:
            why = re.split(r" \(|: ", cands[0].get("model_status", "?"), maxsplit=1)[0]
            left_out[why] = left_out.get(why, 0) + 1
    return pairs, left_out, mpath

#!/usr/bin/python3
"""simulator/machines/update_h200_ceilings.py: the H200's measured ceilings in the catalog, from a
committed measurement.

    update_h200_ceilings.py experiments/results/h200/<tag>/ceilings.json   # rewrite h200.json
    update_h200_ceilings.py --only fp8 experiments/results/h200/<tag>/ceilings.json   # one entry
    update_h200_ceilings.py --check                                        # catalog == its files?

experiments/gpu/ceilings.py writes ceilings.json ({"context": ..., "rows": [...]}) and ceilings.csv
(rows name,dtype,value,unit,...; one row per sample). This script sets the five measured entries of
simulator/machines/h200.json from such a file, each with a source naming the file by its path in
the repository:

    measured_bandwidth     copy_sm (an SM kernel reading and writing the buffer: bytes read +
                           written per second; GB/s -> x 1e9 B/s). Not copy_d2d: captured in a
                           graph it is a copy-engine memcpy, not the HBM ceiling (ceilings.py)
    measured_matrix_bf16   gemm_*, dtype bf16 (TFLOP/s -> x 1e12 FLOP/s)
    measured_matrix_fp16   gemm_*, dtype fp16
    measured_vector_fp32   gemm_*, dtype fp32 (TF32 off)
    measured_matrix_fp8    gemm_*, dtype fp8_e4m3 (torch._scaled_mm, use_fast_accum=True; the
                           gemm_*_nofastacc row, cuBLAS's slower accurate accumulation, is not read)

gemm_* is gemm_<size> exactly. A row whose check says 'unsupported: ...' (ceilings.py could not
run it there, e.g. no FP8) is no measurement: it is skipped, and its entry left as it is.

With several samples of a ceiling the largest `value` (work over the median call of that sample)
is the catalog's number, and the source lists every sample. A row whose check failed is refused.
An entry the file has no row for is left as it is (and said so); at least one must be found.
--only ENTRY[,ENTRY] takes just those entries from the file (short names bandwidth, bf16, fp16,
fp32, fp8, or the catalog field names) and leaves every other entry, with its source, as it is:
the catalog may then cite several ceilings runs, each entry naming its own (e.g. the FP8 rate
from a later run than the canonical bf16/fp16/fp32/bandwidth one). An entry named in --only that
the file has no usable row for is an error.
The file must lie inside the repository (--repo, default: this script's repository) so that the
source is a repository path. Nothing else of h200.json changes.

--check compares every measured entry whose source names experiments/results/h200/<tag>/ceilings.*
with that file (exit 1 on a difference or a missing file); when the entries still name the
placeholder <CEILINGS_TAG> (the ceilings not measured yet) it says so and exits 77 (skipped).
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SKIP = 77
UNITS = {"B/s": 1.0, "GB/s": 1e9, "TB/s": 1e12, "GiB/s": 2.0**30, "FLOP/s": 1.0, "GFLOP/s": 1e9, "TFLOP/s": 1e12}
# catalog field -> (name prefix, dtype or None, what it is)
FIELDS = {
    "measured_bandwidth": ("copy_sm", None, "copy by an SM kernel (bytes read + written)"),
    "measured_matrix_bf16": ("gemm", "bf16", "bf16 GEMM"),
    "measured_matrix_fp16": ("gemm", "fp16", "fp16 GEMM"),
    "measured_vector_fp32": ("gemm", "fp32", "fp32 GEMM without TF32"),
    "measured_matrix_fp8": ("gemm", "fp8_e4m3", "FP8 e4m3 GEMM (per-tensor scales, bf16 output, fast accumulation)"),
}
# --only's short names
SHORT = {"bandwidth": "measured_bandwidth", "bf16": "measured_matrix_bf16", "fp16": "measured_matrix_fp16",
         "fp32": "measured_vector_fp32", "fp8": "measured_matrix_fp8"}
SOURCE_RE = re.compile(r"experiments/results/h200/([^/\s]+)/ceilings\.(json|csv)")


def fail(msg: str) -> None:
    print(f"update_h200_ceilings.py: error: {msg}", file=sys.stderr)
    sys.exit(1)


def read_rows(path: Path) -> tuple[list[dict], dict]:
    """(rows, context) of a ceilings.json or ceilings.csv (context empty for the CSV)."""
    if path.suffix == ".json":
        try:
            j = json.loads(path.read_text())
        except (OSError, ValueError) as e:
            fail(f"{path}: cannot read JSON ({e})")
        rows = j.get("rows") if isinstance(j, dict) else j
        if not isinstance(rows, list):
            fail(f"{path}: expected {{'rows': [...]}} or a list of rows")
        return rows, (j.get("context") or {}) if isinstance(j, dict) else {}
    if path.suffix == ".csv":
        with path.open(newline="") as f:
            return list(csv.DictReader(f)), {}
    fail(f"{path}: expected a .json or .csv file")
    return [], {}


def ceilings(rows: list[dict], where: str) -> dict[str, tuple[float, list[float], str]]:
    """catalog field -> (value in base units, every sample's value, the row name)."""
    out = {}
    for field, (prefix, dtype, _) in FIELDS.items():
        hit = [r for r in rows if (str(r.get("name", "")) == prefix if dtype is None
                                   else re.fullmatch(re.escape(prefix) + r"_\d+", str(r.get("name", ""))))
               and (dtype is None or str(r.get("dtype", "")) == dtype)
               and not str(r.get("check", "")).startswith("unsupported")]
        if not hit:
            continue
        vals = []
        for r in hit:
            if "FAILED" in str(r.get("check", "")):
                fail(f"{where}: {r['name']} {r.get('dtype', '')}: its check failed ({r['check']})")
            unit = str(r.get("unit", ""))
            if unit not in UNITS:
                fail(f"{where}: {r['name']}: unknown unit '{unit}' (known: {', '.join(UNITS)})")
            try:
                v = float(r["value"]) * UNITS[unit]
            except (KeyError, TypeError, ValueError):
                fail(f"{where}: {r.get('name')}: unreadable value {r.get('value')!r}")
            if not v > 0:
                fail(f"{where}: {r['name']}: value must be positive (got {v})")
            vals.append(v)
        names = sorted({str(r["name"]) for r in hit})
        if len(names) > 1:
            fail(f"{where}: {field} matches rows of several names ({', '.join(names)})")
        out[field] = (max(vals), vals, names[0])
    if not out:
        fail(f"{where}: no row for any measured entry (names copy_sm, gemm_* with dtype bf16/fp16/fp32/fp8_e4m3)")
    return out


def wanted(field: str) -> str:
    prefix, dtype, _ = FIELDS[field]
    return f"name {prefix}" if dtype is None else f"name {prefix}_*, dtype {dtype}"


def rel(path: Path, repo: Path) -> str:
    try:
        return str(path.resolve().relative_to(repo.resolve()))
    except ValueError:
        fail(f"{path} is not inside the repository {repo}: the catalog cites committed files only")
    return ""


def source_text(field: str, value: float, vals: list[float], name: str, rel_path: str, date: str) -> str:
    what = FIELDS[field][2]
    if field == "measured_bandwidth":
        shown, unit = [v / 1e12 for v in vals], "TB/s"
    else:
        shown, unit = [v / 1e12 for v in vals], "TFLOP/s"
    samples = ", ".join(f"{v:.4g}" for v in shown)
    best = f"{value / 1e12:.4g} {unit}"
    many = f"largest of {len(vals)} samples ({samples} {unit})" if len(vals) > 1 else "one sample"
    when = f", {date}" if date else ""
    return (f"measured: {what} {best} ({name}, work over the median call; {many}) on the project's H200"
            f"{when}: {rel_path} (experiments/gpu/ceilings.py)")


def only_fields(text: str | None) -> list[str]:
    """The catalog fields --only names (every field without --only)."""
    if text is None:
        return list(FIELDS)
    out = []
    for word in (w.strip() for w in text.split(",")):
        field = SHORT.get(word, word)
        if field not in FIELDS:
            fail(f"--only: unknown entry '{word}' (known: {', '.join(SHORT)} or {', '.join(FIELDS)})")
        if field not in out:
            out.append(field)
    if not out:
        fail("--only: name at least one entry")
    return out


def update(args) -> int:
    repo = Path(args.repo)
    cfile = Path(args.ceilings)
    only = only_fields(args.only)
    if not cfile.is_file():
        fail(f"{cfile}: no such file")
    rows, ctx = read_rows(cfile)
    vals = ceilings(rows, str(cfile))
    rp = rel(cfile, repo)
    if args.only is not None:
        missing = [f for f in only if f not in vals]
        if missing:
            fail(f"{rp}: --only {args.only}: no usable row for {', '.join(f'{f} ({wanted(f)})' for f in missing)}")
    machine = Path(args.machine)
    j = json.loads(machine.read_text())
    date = str(ctx.get("date", ""))[:10]
    for field in FIELDS:
        if field not in only:
            print(f"  {field}: left as it is (not named in --only)")
            continue
        if field not in vals:
            print(f"  {field}: left as it is ({rp} has no row with {wanted(field)})")
            continue
        value, samples, name = vals[field]
        j[field] = {"value": value, "source": source_text(field, value, samples, name, rp, date)}
        print(f"  {field}: {value:.6g} ({name}, {len(samples)} sample(s))")
    machine.write_text(json.dumps(j, indent=2) + "\n")
    print(f"update_h200_ceilings.py: wrote {machine} from {rp}")
    return 0


def check(args) -> int:
    repo = Path(args.repo)
    machine = Path(args.machine)
    j = json.loads(machine.read_text())
    pending, bad, checked = [], [], 0
    cache: dict[str, dict] = {}
    for field in FIELDS:
        entry = j.get(field)
        if not entry:
            # An absent measured entry is allowed: the simulator then uses the datasheet value.
            print(f"absent: {field} (not measured in a committed run; the datasheet value is used)")
            continue
        src = entry.get("source", "")
        if "<CEILINGS_TAG>" in src:
            pending.append(field)
            continue
        m = SOURCE_RE.search(src)
        if not m:
            bad.append(f"{field}: its source names no experiments/results/h200/<tag>/ceilings.json")
            continue
        f = repo / m.group(0)
        if not f.is_file():
            bad.append(f"{field}: its source {m.group(0)} is not in the repository")
            continue
        if m.group(0) not in cache:
            cache[m.group(0)] = ceilings(read_rows(f)[0], m.group(0))
        if field not in cache[m.group(0)]:
            bad.append(f"{field}: {m.group(0)} has no row with {wanted(field)}")
            continue
        want = cache[m.group(0)][field][0]
        checked += 1
        if abs(float(entry["value"]) - want) > 1e-9 * want:
            bad.append(f"{field}: catalog {entry['value']} but {m.group(0)} gives {want}")
    for b in bad:
        print(f"FAIL: {b}")
    if bad:
        return 1
    if pending:
        if checked:
            print(f"PASS: {checked} measured entries of {machine.name} equal their committed ceilings file ({', '.join(sorted(cache))})")
        print(f"SKIPPED: {', '.join(pending)}: the source names the placeholder <CEILINGS_TAG> (not measured in a "
              "committed run yet; then: update_h200_ceilings.py experiments/results/h200/<tag>/ceilings.json)")
        return SKIP
    print(f"PASS: {checked} measured entries of {machine.name} equal their committed ceilings file ({', '.join(sorted(cache))})")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 epilog="See the module docstring for the mapping and the source text.")
    ap.add_argument("ceilings", nargs="?", help="experiments/results/h200/<tag>/ceilings.json (or .csv)")
    ap.add_argument("--only", metavar="ENTRY[,ENTRY]",
                    help=f"take only these entries from the file ({', '.join(SHORT)}); the others keep their sources")
    ap.add_argument("--check", action="store_true", help="compare the catalog with the files its sources name")
    ap.add_argument("--machine", default=str(HERE / "h200.json"), help="machine file to rewrite or check")
    ap.add_argument("--repo", default=str(HERE.parent.parent), help="repository root the source paths are relative to")
    args = ap.parse_args()
    if args.check == bool(args.ceilings):
        ap.error("give a ceilings file, or --check")
    if args.check and args.only is not None:
        ap.error("--only goes with a ceilings file, not with --check (which checks every entry)")
    return check(args) if args.check else update(args)


if __name__ == "__main__":
    sys.exit(main())

"""experiments/gpu/forward_choice.py: the forward ranking that ioattn.attention(kernel=None) tries first,
measured, written to python/forward_choice.json.

    python3 experiments/gpu/forward_choice.py            write python/forward_choice.json
    python3 experiments/gpu/forward_choice.py --check    exit 1 if the committed file differs

Source: the bench.csv of the CANONICAL roles `bench` and `fast` (experiments/results/h200/CANONICAL),
forward rows (pass fwd, status ok) of ioattn's 16-bit forwards. A cell is (dtype, head_dim, causal,
N) of the square problems those runs time. No single run times every rung (v08p ran beside v08,
v08 beside v06), so each cell's rung speeds come from a least-squares fit over every run that
timed two or more of them at that cell: log ms(run, shape, rung) = a(run, shape) + s(rung), s of
the first rung in name order fixed at 0 (alternating means, 200 sweeps; the runs of a cell must be
connected through shared rungs, a rung that is not is left out of that cell). The cell's `order`
is its rungs by s, fastest first; `speed` is exp(-s) relative to the fastest (1.0 = fastest).
Ranks are ties within no margin: a 1 % difference ranks as any other (the two-sample spreads are in
the runs' tables).

Decode cells (`decode_cells`, present only when some are measured): the few-query problems of the
decode benchmark (experiments/gpu/bench_decode.py's decode.csv; the CANONICAL role `decode`, or the
files of --decode-csv instead), one cell per shape of its grid: (dtype, head_dim, causal, batch,
heads_q, heads_kv, seqlen_q, seqlen_k, page_size; 0 = the contiguous cache). Within one run only
(no fit across runs): a rung's time at a shape is the mean of its `ok` rows' ms over the samples,
`order` the ioattn rungs by it, fastest first, `speed` the fastest time over each rung's (1.0 =
fastest), `run` the folder the cell comes from. A shape measured by several runs is taken from the
first listed. The general forward is what the decode rungs must beat, so nothing is ranked without
it: a run with no `ok` row of GENERAL (v06_fa2_wgmma) gives no cell (the script says so), and a
shape gives one only where GENERAL has a row (`ok`, or `refused`: it does not take that problem)
and two or more rungs are `ok`. With no decode cell the file is the forward table alone (no
`decode_cells` key), byte for byte.

    python3 experiments/gpu/forward_choice.py --decode-csv RUN/decode.csv [--out FILE]
        rank a decode run that is not (yet) canonical; writing python/forward_choice.json from it
        makes --check (canonical runs only) fail until that run is the canonical `decode` run
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO, "experiments"))
import results_index  # noqa: E402

OUT = os.path.join(REPO, "python", "forward_choice.json")
ROLES = ("fast", "bench")
DTYPES = ("bf16", "fp16")
GENERAL = "v06_fa2_wgmma"  # the general forward the decode cells rank the decode rungs against
DECODE_KEY = ("dtype", "head_dim", "causal", "batch", "heads_q", "heads_kv", "seqlen_q", "seqlen_k", "page_size")


def observations():
    """{cell: {(run, shape): {rung: mean ms}}} over the canonical runs of ROLES."""
    cells = {}
    runs = []
    for role in ROLES:
        for d in results_index.canonical().get(role, []):
            f = os.path.join(d, "bench.csv")
            if not os.path.isfile(f) or d in runs:
                continue
            runs.append(d)
            ms = {}
            for r in results_index.read_csv(f):
                if (r.get("status") != "ok" or r.get("pass", "fwd") != "fwd" or r.get("dtype") not in DTYPES
                        or not results_index.is_ioattn(r["impl"]) or results_index.is_naive(r["impl"])):
                    continue
                cell = (r["dtype"], int(float(r["head_dim"])), results_index.flag(r["causal"]), int(float(r["seqlen"])))
                shape = (os.path.basename(d), r.get("batch"), r.get("heads"), r.get("heads_kv", ""))
                ms.setdefault((cell, shape, r["impl"].split(":", 1)[1]), []).append(float(r["ms"]))
            for (cell, shape, rung), v in ms.items():
                cells.setdefault(cell, {}).setdefault(shape, {})[rung] = sum(v) / len(v)
    return cells, runs


def fit(groups):
    """{rung: s} for one cell (see the module docstring), or {} when fewer than two rungs connect."""
    groups = {g: v for g, v in groups.items() if len(v) >= 2}
    if not groups:
        return {}
    # the connected component of the first rung (in name order) through shared groups
    rungs = sorted({x for v in groups.values() for x in v})
    comp, grew = {rungs[0]}, True
    while grew:
        grew = False
        for v in groups.values():
            if comp & set(v) and not set(v) <= comp:
                comp |= set(v)
                grew = True
    groups = {g: {x: t for x, t in v.items() if x in comp} for g, v in groups.items()}
    groups = {g: v for g, v in groups.items() if len(v) >= 2}
    s = {x: 0.0 for x in comp}
    ref = min(comp)
    for _ in range(200):
        a = {g: sum(math.log(t) - s[x] for x, t in v.items()) / len(v) for g, v in groups.items()}
        for x in comp:
            if x == ref:
                continue
            obs = [math.log(v[x]) - a[g] for g, v in groups.items() if x in v]
            s[x] = sum(obs) / len(obs)
    return s


def decode_cells(csvs):
    """([decode cell], [run folder used], [notes]) from the decode.csv files `csvs`, in order (see
    the module docstring)."""
    cells, used, notes = {}, [], []
    for f in csvs:
        run = os.path.basename(os.path.dirname(os.path.abspath(f)))
        ms, status = {}, {}
        for r in results_index.read_csv(f):
            if (r.get("study", "decode") != "decode" or r.get("dtype") not in DTYPES
                    or not results_index.is_ioattn(r.get("impl", "")) or results_index.is_naive(r["impl"])):
                continue
            try:
                shape = (r["dtype"], int(float(r["head_dim"])), results_index.flag(r["causal"]),
                         *(int(float(r[c] or 0)) for c in DECODE_KEY[3:]))
            except (KeyError, ValueError):
                continue  # a row without the decode grid's columns is not a decode row
            rung = r["impl"].split(":", 1)[1]
            status.setdefault((shape, rung), set()).add(r.get("status"))
            if r.get("status") == "ok":
                ms.setdefault(shape, {}).setdefault(rung, []).append(float(r["ms"]))
        if not any(GENERAL in by for by in ms.values()):
            notes.append(f"{results_index.rel(f)}: no ok row of {GENERAL} (the general forward), so its decode "
                         f"shapes are not ranked: no decode cell from this run")
            continue
        n = 0
        for shape, by in ms.items():
            if shape in cells or len(by) < 2 or not status.get((shape, GENERAL), set()) & {"ok", "refused"}:
                continue
            t = {x: sum(v) / len(v) for x, v in by.items()}
            order = sorted(t, key=lambda x: (t[x], x))
            cells[shape] = dict(zip(DECODE_KEY, shape), order=order, run=run,
                                speed={x: round(t[order[0]] / t[x], 3) for x in order})
            n += 1
        notes.append(f"{results_index.rel(f)}: {n} decode cells")
        if n:
            used.append(os.path.dirname(os.path.abspath(f)))
    return [cells[k] for k in sorted(cells)], used, notes


def table(decode_csvs=None):
    """The json's content; decode_csvs: the decode.csv files to rank (None: the CANONICAL `decode`
    role's)."""
    cells, runs = observations()
    out = []
    for cell in sorted(cells):
        s = fit(cells[cell])
        if len(s) < 2:
            continue
        order = sorted(s, key=lambda x: (s[x], x))
        best = s[order[0]]
        out.append(dict(dtype=cell[0], head_dim=cell[1], causal=cell[2], seqlen=cell[3], order=order,
                        speed={x: round(math.exp(best - s[x]), 3) for x in order}))
    t = dict(source=[str(results_index.rel(d)) for d in runs],
             written_by="experiments/gpu/forward_choice.py", cells=out)
    if decode_csvs is None:
        decode_csvs = results_index.canonical_csvs("decode")
    dec, used, notes = decode_cells(decode_csvs)
    for line in notes:
        print(line)
    if dec:
        t.update(decode_cells=dec, decode_source=[str(results_index.rel(d)) for d in used])
    return t


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if the output file differs")
    ap.add_argument("--decode-csv", action="append", default=None, metavar="CSV",
                    help="a decode.csv to rank instead of the CANONICAL decode run (repeatable; first listed wins)")
    ap.add_argument("--out", default=OUT, help="the file written or checked (default python/forward_choice.json)")
    args = ap.parse_args()
    for f in args.decode_csv or []:
        if not os.path.isfile(f):
            print(f"forward_choice.py: --decode-csv {f}: no such file")
            return 2
    t = table(args.decode_csv)
    text = json.dumps(t, indent=1, sort_keys=True) + "\n"
    name = os.path.relpath(args.out, REPO) if os.path.abspath(args.out).startswith(REPO + os.sep) else args.out
    if args.check:
        have = open(args.out).read() if os.path.isfile(args.out) else ""
        runs = "the canonical runs" if args.decode_csv is None else "the canonical runs and --decode-csv"
        if have != text:
            print(f"{name} differs from {runs}; rerun: python3 experiments/gpu/forward_choice.py")
            return 1
        print(f"{name}: equal to {runs}")
        return 0
    with open(args.out, "w") as f:
        f.write(text)
    print(f"wrote {name}: {len(t['cells'])} cells, {len(t.get('decode_cells', []))} decode cells")
    return 0


if __name__ == "__main__":
    sys.exit(main())

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


def table():
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
    return dict(source=[str(results_index.rel(d)) for d in runs],
                written_by="experiments/gpu/forward_choice.py", cells=out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if python/forward_choice.json differs")
    args = ap.parse_args()
    text = json.dumps(table(), indent=1, sort_keys=True) + "\n"
    if args.check:
        have = open(OUT).read() if os.path.isfile(OUT) else ""
        if have != text:
            print("python/forward_choice.json differs from the canonical runs; rerun: "
                  "python3 experiments/gpu/forward_choice.py")
            return 1
        print("python/forward_choice.json: equal to the canonical runs")
        return 0
    with open(OUT, "w") as f:
        f.write(text)
    print(f"wrote {os.path.relpath(OUT, REPO)}: {len(json.loads(text)['cells'])} cells")
    return 0


if __name__ == "__main__":
    sys.exit(main())

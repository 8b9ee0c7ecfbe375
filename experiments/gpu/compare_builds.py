#!/usr/bin/env python3
"""Two builds of a kernel side by side: its speed as a ratio to a peer timed in the same process.

    python3 experiments/gpu/compare_builds.py --impl ioattn:v08_fa3_warpspec [--peer sdpa:cudnn] \
        [--dtype bf16] [--markdown] LABEL=DIR [LABEL=DIR ...]
    python3 experiments/gpu/compare_builds.py --self-test     # the ratios on two synthetic folders

Each DIR is a bench_sdpa.py output folder (bench.csv). A build's kernels can only be timed in a
process of their own (one C ABI library per process), so two builds are compared through the ratio
peer time / impl time of the same process and sample, which cancels what moves both (clocks,
machine state); the ratio's median over the folder's samples is printed per (head dim, causal, N),
one column per LABEL, in the order given (several folders of one build show the spread between
processes). Points a folder lacks are '-'.
"""
import argparse
import csv
import os
import statistics
import sys


def ratios(folder, impl, peer, dtype):
    by = {}
    with open(os.path.join(folder, "bench.csv"), newline="") as f:
        for r in csv.DictReader(f):
            if r["status"] != "ok" or r["dtype"] != dtype or r.get("pass", "fwd") != "fwd":
                continue
            key = (int(r["head_dim"]), int(r["causal"]), int(r["seqlen"]))
            by.setdefault((r["impl"], key), {})[r["sample"]] = float(r["ms"])
    out = {}
    for (name, key), samples in by.items():
        if name != impl or (peer, key) not in by:
            continue
        p = by[(peer, key)]
        rs = [p[s] / ms for s, ms in samples.items() if s in p and ms > 0]
        if rs:
            out[key] = statistics.median(rs)
    return out


def self_test():
    import tempfile
    cols = ["impl", "pass", "dtype", "head_dim", "causal", "seqlen", "sample", "status", "ms"]
    with tempfile.TemporaryDirectory() as t:
        a, b = os.path.join(t, "a"), os.path.join(t, "b")
        for folder, ours in ((a, ("1.0", "2.0")), (b, ("0.5", "0.5"))):
            os.makedirs(folder)
            with open(os.path.join(folder, "bench.csv"), "w", newline="") as f:
                w = csv.writer(f)
                w.writerow(cols)
                for smp, ms in enumerate(ours):  # peer 1.0 ms in both samples: ratios 1.0, 0.5 -> median 0.75
                    w.writerow(["k", "fwd", "bf16", 64, 0, 512, smp, "ok", ms])
                    w.writerow(["p", "fwd", "bf16", 64, 0, 512, smp, "ok", "1.0"])
                if folder == a:  # a point only one folder has, and rows that must be ignored
                    w.writerow(["k", "fwd", "bf16", 128, 1, 1024, 0, "ok", "2.0"])
                    w.writerow(["p", "fwd", "bf16", 128, 1, 1024, 0, "ok", "1.0"])
                    w.writerow(["k", "fwd", "fp16", 64, 0, 512, 0, "ok", "9.0"])
                    w.writerow(["k", "fwd", "bf16", 64, 1, 512, 0, "refused", ""])
        ra, rb = ratios(a, "k", "p", "bf16"), ratios(b, "k", "p", "bf16")
        assert ra == {(64, 0, 512): 0.75, (128, 1, 1024): 0.5}, ra
        assert rb == {(64, 0, 512): 2.0}, rb
        import contextlib, io
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            main(["--impl", "k", "--peer", "p", f"A={a}", f"B={b}"])
        lines = out.getvalue().splitlines()
        assert lines[2].split() == ["64", "0", "512", "0.75", "2.00"] and lines[3].split() == ["128", "1", "1024", "0.50", "-"], lines
        try:
            main(["--impl", "k", f"C={t}"])
            raise AssertionError("a folder without bench.csv must be refused")
        except SystemExit as e:
            assert "LABEL=DIR" in str(e), e
    print("compare_builds.py self-test: PASS")
    return 0


def main(argv=None):
    if argv is None and sys.argv[1:] == ["--self-test"]:
        return self_test()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--impl", required=True)
    ap.add_argument("--peer", default="sdpa:cudnn")
    ap.add_argument("--dtype", default="bf16")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("runs", nargs="+", help="LABEL=DIR")
    a = ap.parse_args(argv)
    cols = []
    for spec in a.runs:
        label, sep, folder = spec.partition("=")
        if not sep or not os.path.isfile(os.path.join(folder, "bench.csv")):
            sys.exit(f"compare_builds: '{spec}' must be LABEL=DIR with DIR/bench.csv")
        cols.append((label, ratios(folder, a.impl, a.peer, a.dtype)))
    keys = sorted(set().union(*(c for _, c in cols)))
    if not keys:
        sys.exit(f"compare_builds: no {a.dtype} point has both {a.impl} and {a.peer}")
    fmt = (lambda xs: "| " + " | ".join(xs) + " |") if a.markdown else (lambda xs: "  ".join(f"{x:>8}" for x in xs))
    print(f"{a.impl}: {a.peer} time / its time ({a.dtype}, median over samples)")
    print(fmt(["d", "causal", "N"] + [l for l, _ in cols]))
    if a.markdown:
        print("|" + "---|" * (3 + len(cols)))
    for k in keys:
        print(fmt([str(k[0]), str(k[1]), str(k[2])] + [f"{c[k]:.2f}" if k in c else "-" for _, c in cols]))
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""kernels/dev/stall_regions.py: one kernel's warp stalls by region of its machine code, from the
source page that kernels/dev/ncu_source.sh exports (Nsight Compute's PC sampling, one row per SASS
instruction).

    python3 kernels/dev/stall_regions.py DIR/TAG.source.csv[.xz] [--visits N] [--top K] [--markdown]
    python3 kernels/dev/stall_regions.py --self-test     # the parsing and the regions of a synthetic page

A region is a run of consecutive instructions executed the same number of times (a straight-line
block, or several). Prints the code size (instructions x 16 bytes: all, executed at least once,
executed on at least 30 % of the visits), the share of the samples per stall reason, and the K
regions with the most `no_instruction` samples (the warp had no fetched instruction to issue),
each with its offset, size, executions per visit and its most frequent opcodes. --visits is the
number of warp visits of one work tile (e.g. work tiles x consumer warps) for the per-visit counts;
default: the largest execution count of a region entered once per tile is not known, so the
per-visit column is left out. --markdown prints the summary as a Markdown table row set instead.
"""
import argparse
import csv
import lzma
import os
import re
import sys
from collections import Counter

SAMPLES = "Warp Stall Sampling (All Samples)"
EXECUTED = "Instructions Executed"


def num(v):
    try:
        return float(v.replace(",", ""))
    except ValueError:
        return 0.0


def load(path):
    opener = lzma.open if path.endswith(".xz") else open  # results folders keep the page xz-compressed
    with opener(path, "rt", newline="") as f:
        rows = list(csv.reader(f))
    # The first row names the kernel, the second is the header.
    if len(rows) < 3 or "Address" not in rows[1]:
        sys.exit(f"stall_regions: {path} is not an ncu source page (--page source --csv --print-source sass)")
    kernel = rows[0][1] if len(rows[0]) > 1 else ""
    head = rows[1]
    ix = {k: i for i, k in enumerate(head)}
    for need in (SAMPLES, EXECUTED, "Source"):
        if need not in ix:
            sys.exit(f"stall_regions: {path} has no column '{need}'")
    reasons = [k for k in head if k.startswith("stall_") and "(Not Issued)" not in k]
    insts = []
    for r in rows[2:]:
        if len(r) != len(head):
            continue
        insts.append({"addr": int(r[ix["Address"]], 16), "src": r[ix["Source"]].strip(),
                      "exec": num(r[ix[EXECUTED]]), "all": num(r[ix[SAMPLES]]),
                      **{k: num(r[ix[k]]) for k in reasons}})
    return kernel, reasons, insts


def opcode(src):
    parts = src.split()
    if not parts:
        return "?"
    op = parts[1] if parts[0].startswith("@") and len(parts) > 1 else parts[0]
    return op.split(".")[0]


def regions(insts):
    out = []
    base = insts[0]["addr"]
    for x in insts:
        if out and out[-1]["exec"] == x["exec"]:
            g = out[-1]
        else:
            g = {"start": x["addr"] - base, "n": 0, "exec": x["exec"], "no_inst": 0.0, "all": 0.0, "ops": Counter()}
            out.append(g)
        g["n"] += 1
        g["no_inst"] += x.get("stall_no_inst", 0.0)
        g["all"] += x["all"]
        g["ops"][opcode(x["src"])] += 1
    return out


def self_test():
    import contextlib
    import io
    import tempfile
    head = ["Address", "Source", SAMPLES, EXECUTED, "stall_wait", "stall_no_inst", "stall_no_inst (Not Issued)"]
    body = [["0x100", "MOV R1, R2", "10", "4", "6", "4", "4"],      # region 1: 2 instructions executed 4 times
            ["0x110", "@P0 BRA 0x200", "2", "4", "0", "2", "2"],
            ["0x120", "MUFU.EX2 R3, R3", "30", "1,000", "20", "10", "9"],  # region 2
            ["0x130", "EXIT", "0", "0", "0", "0", "0"]]                      # never executed
    with tempfile.TemporaryDirectory() as t:
        path = os.path.join(t, "x.source.csv")
        with open(path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerows([["Kernel Name", "k"], head, *body])
        kernel, reasons, insts = load(path)
        assert kernel == "k" and reasons == ["stall_wait", "stall_no_inst"] and len(insts) == 4, (kernel, reasons)
        regs = regions(insts)
        assert [(g["start"], g["n"], g["exec"], g["no_inst"]) for g in regs] == [(0, 2, 4, 6), (0x20, 1, 1000, 10), (0x30, 1, 0, 0)], regs
        assert regs[0]["ops"] == {"MOV": 1, "BRA": 1}, regs[0]["ops"]
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            main([path, "--visits", "1000", "--top", "1"])
        text = out.getvalue()
        assert "4 instructions (0.1 KB), executed 0.0 KB" in text and "wait 61.9 %" in text and "+0x00020" in text, text
        fx = summarize(reasons, insts, 1000)
        assert round(fx["share"]["no_inst"], 1) == 38.1 and fx["hot_kb"] == 16 / 1024 and round(fx["top_region_no_inst"]) == 62, fx
        log = "== 2026-12-02T07:19:00Z ncu_source.sh t regex:x -- --kernel v08p --batch 32 --heads 16 --seqlen 512 --head-dim 64\n"
        name = "void k<__nv_bfloat16, V08Tile<(int)64, (int)192, (int)128, (int)2, (bool)1>>(int)"
        assert visits_of(log, name) == 32 * 16 * 3 * 12, visits_of(log, name)
        assert visits_of(log.replace("--seqlen 512", "--seqlen 1024"), name.replace("(int)192", "(int)128")) == 32 * 16 * 8 * 8
        assert visits_of("", name) == 0 and visits_of(log, "k") == 0
        with open(path, "w") as f:
            f.write("not,a,page\n")
        try:
            load(path)
            raise AssertionError("a file without the header must be refused")
        except SystemExit as e:
            assert "not an ncu source page" in str(e), e
    print("stall_regions.py self-test: PASS")
    return 0


# The committed pages that README.md (scripts/doc_numbers.py) and the paper (paper/gen_fast.py) quote:
# v08p's kernel before and after its mbarrier poll loop was rolled (c0b3257), the same two problems.
RUNS = {"before": "experiments/results/h200/2026-12-02_2aa0ed3_ncu_source",
        "after": "experiments/results/h200/2026-12-02_37aae22_ncu_source"}
PAGES = (("n512_d64_c1", "causal d 64, N 512"), ("n1k_d128_c0", "non-causal d 128, N 1k"))


def visits_of(log_text, kernel):
    """Warp visits of the profiled launch: work tiles (batch x heads x ceil(N / Br)) x consumer warps
    (4 Br / 64), from the run's arguments (the first line of ncu_source.sh's TAG.log) and Br from the
    kernel's name (V08Tile's second template argument); 0 when either is missing."""
    first = log_text.splitlines()[0] if log_text else ""
    arg = lambda k: re.search(rf"--{k} (\d+)", first)  # noqa: E731
    tile = re.search(r"V08Tile<\(int\)\d+, \(int\)(\d+),", kernel)
    if not (arg("batch") and arg("heads") and arg("seqlen") and tile):
        return 0
    br = int(tile.group(1))
    return int(arg("batch").group(1)) * int(arg("heads").group(1)) * -(-int(arg("seqlen").group(1)) // br) * (4 * br // 64)


def page_facts(folder, stem):
    """summarize() of folder/stem.source.csv.xz with the visits of its own log."""
    kernel, reasons, insts = load(os.path.join(folder, f"{stem}.source.csv.xz"))
    with open(os.path.join(folder, f"{stem}.log")) as f:
        visits = visits_of(f.read(), kernel)
    if not visits:
        sys.exit(f"stall_regions: {folder}/{stem}: no --batch/--heads/--seqlen in its log or no V08Tile in its kernel name")
    return summarize(reasons, insts, visits)


def summarize(reasons, insts, visits=0):
    """One page's summary as numbers: code sizes (KB: all, executed, on >= 30 % of the visits), the
    samples, the stall shares (% of samples, by reason without the stall_ prefix), the regions, their
    no_instruction samples and the share of them in the region with the most (%)."""
    total = sum(x["all"] for x in insts) or 1.0
    floor = 0.3 * (visits if visits else max(x["exec"] for x in insts))
    regs = regions(insts)
    ni = sum(g["no_inst"] for g in regs) or 1.0
    return {"code_kb": len(insts) * 16 / 1024, "exec_kb": sum(1 for x in insts if x["exec"] > 0) * 16 / 1024,
            "hot_kb": sum(1 for x in insts if x["exec"] >= floor) * 16 / 1024, "samples": total,
            "share": {k[6:]: sum(x[k] for x in insts) / total * 100 for k in reasons},
            "regions": regs, "no_inst_samples": ni, "top_region_no_inst": max(g["no_inst"] for g in regs) / ni * 100}


def main(argv=None):
    if argv is None and sys.argv[1:] == ["--self-test"]:
        return self_test()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv")
    ap.add_argument("--visits", type=float, default=0, help="warp visits per work tile, summed over tiles")
    ap.add_argument("--top", type=int, default=8)
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args(argv)
    kernel, reasons, insts = load(a.csv)
    if not insts:
        sys.exit(f"stall_regions: {a.csv} has no instruction rows")
    f = summarize(reasons, insts, a.visits)
    top_reasons = sorted(f["share"].items(), key=lambda kv: -kv[1])[:6]
    if a.markdown:
        print(f"| {a.csv.split('/')[-1].removesuffix('.xz').removesuffix('.source.csv')} | {f['code_kb']:.0f} | {f['exec_kb']:.0f} | "
              f"{f['hot_kb']:.0f} | {f['share'].get('no_inst', 0):.1f} | " + ", ".join(f"{k} {v:.1f}" for k, v in top_reasons) + " |")
        return 0
    print(f"kernel: {kernel}")
    print(f"code: {len(insts)} instructions ({f['code_kb']:.1f} KB), executed {f['exec_kb']:.1f} KB, "
          f"on >= 30 % of the visits {f['hot_kb']:.1f} KB; samples {f['samples']:.0f}")
    print("stall share of all samples: " + ", ".join(f"{k} {v:.1f} %" for k, v in top_reasons))
    print(f"regions with the most no_instruction samples (of {f['no_inst_samples']:.0f}):")
    for g in sorted(f["regions"], key=lambda g: -g["no_inst"])[:a.top]:
        per = f" exec/visit {g['exec'] / a.visits:5.2f}" if a.visits else f" exec {g['exec']:.0f}"
        ops = ", ".join(f"{o} {c}" for o, c in g["ops"].most_common(5))
        print(f"  +0x{g['start']:05x} {g['n']:4d} inst ({g['n'] * 16 / 1024:4.1f} KB){per}  no_inst "
              f"{g['no_inst'] / f['no_inst_samples'] * 100:4.1f} %  all {g['all'] / f['samples'] * 100:4.1f} %  [{ops}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""experiments/gpu/short_n_gap.py: where v08p loses to cuDNN at short sequences, as generated Markdown
from committed Nsight Compute reports (CPU only; reads files, runs nothing on a GPU).

  python3 experiments/gpu/short_n_gap.py                # print the block for the runs scripts/doc_numbers.py names
  python3 experiments/gpu/short_n_gap.py --runs DIR...  # ncu_detail folders, oldest first
  python3 experiments/gpu/short_n_gap.py --self-test    # the parser and the arithmetic on synthetic rows

Input: folders written by experiments/gpu/ncu_detail.py --pass fwd --tag nN_dD_cC: one
`<impl>_<tag>.csv` per implementation and problem (ncu --page raw --csv: a header row of metric
names, a row of units, one row per profiled kernel; ncu_detail.py profiles one forward call, so one
kernel row), in the folder itself or in subfolders named after the setting they ran under (e.g.
head/ and heavy/ for IOATTN_V08P_ORDER; the table's kernel column says which). The problem is bf16,
16 heads, batch 16384 / N (ncu_detail.py's); the tag names N, d and causal. Each folder's
context.txt names the commit of its binaries.
Per report (nothing fitted; every number is a metric of the report):
  duration          gpu__time_duration.sum (ncu replays the kernel serialized, clocks unlocked: read as
                    relative to the other kernel of the same problem and run)
  DRAM read         dram__bytes_read.sum (compulsory: Q, K, V once = 3 B H N d 2 bytes)
  instructions      smsp__inst_executed.sum (warp instructions)
  I-cache requests  gcc__cache_requests_type_instruction.sum (instruction fetches that missed the
                    SM's own instruction caches and went to the GPC's cache)
  issue active      smsp__issue_active.avg.pct_of_peak_sustained_active
  O store           bytes used per 32-byte sector by global stores
                    (smsp__sass_average_data_bytes_per_sector_mem_global_op_st.ratio) and their count
                    (smsp__sass_inst_executed_op_global_st.sum; 0: the kernel stores O by TMA)
  stalls            the three largest smsp__average_warps_issue_stalled_<reason>_per_issue_active.ratio
                    (cycles a warp spends stalled for that reason per issued instruction), 'selected' aside
Exit 2 with one line for a missing folder, file or metric.
"""
import argparse
import csv
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The runs the READMEs (scripts/doc_numbers.py) and the paper (paper/gen_fast.py) quote, oldest first.
DEFAULT_RUNS = ["experiments/results/h200/2026-12-02_a109f05_ncu_shortn", "experiments/results/h200/2026-12-02_b7896cf_ncu_shortn",
                "experiments/results/h200/2026-12-02_b7896cf_ncu_order", "experiments/results/h200/2026-12-02_a963f30_ncu_rows",
                "experiments/results/h200/2026-12-02_c9ab8a8_ncu_heavy", "experiments/results/h200/2026-12-02_32a2caf_fwd_v08p_maskall"]
PEER = "sdpa_cudnn"
OURS = "ioattn_v08p_fa3_persistent"
TAG_RE = re.compile(r"^(?P<impl>.+)_n(?P<n>\d+)_d(?P<d>\d+)_c(?P<c>[01])\.csv$")
UNIT = {"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "Tbyte": 1e12,
        "ns": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3, "s": 1e6, "second": 1e6}
TENSOR = "TPC.TriageCompute.sm__pipe_tensor_cycles_active_realtime.avg.pct_of_peak_sustained_elapsed"
STALL = re.compile(r"^smsp__average_warps_issue_stalled_(?P<r>\w+)_per_issue_active\.ratio$")


class GapError(Exception):
    pass


def num(text):
    t = (text or "").replace(",", "").strip()
    try:
        return float(t)
    except ValueError:
        return None


def read_report(path):
    """{metric: (value, unit)} of the last kernel row of one `ncu --page raw --csv` file."""
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    if len(rows) < 3:
        raise GapError(f"{path}: no kernel row (header, units, then one row per kernel)")
    head, units, last = rows[0], rows[1], rows[-1]
    if len(last) != len(head):
        raise GapError(f"{path}: the last row has {len(last)} fields, the header {len(head)}")
    return {h: (v, u) for h, u, v in zip(head, units, last)}


def metric(rep, name, path, scale_to=None):
    if name not in rep:
        raise GapError(f"{path}: no metric {name}")
    v, u = rep[name]
    x = num(v)
    if x is None:
        raise GapError(f"{path}: metric {name} is not a number ('{v}')")
    if scale_to == "bytes":
        if u not in UNIT:
            raise GapError(f"{path}: metric {name} has unit '{u}', not a byte unit")
        x *= UNIT[u]
    elif scale_to == "us":
        if u not in UNIT:
            raise GapError(f"{path}: metric {name} has unit '{u}', not a time unit")
        x *= UNIT[u]
    return x


def facts_of(path):
    rep = read_report(path)
    stalls = sorted(((metric(rep, k, path), m.group("r")) for k in rep if (m := STALL.match(k))
                     and m.group("r") != "selected" and num(rep[k][0]) is not None), reverse=True)
    return {"us": metric(rep, "gpu__time_duration.sum", path, "us"),
            "dram": metric(rep, "dram__bytes_read.sum", path, "bytes"),
            "inst": metric(rep, "smsp__inst_executed.sum", path),
            "icache": metric(rep, "gcc__cache_requests_type_instruction.sum", path),
            "issue": metric(rep, "smsp__issue_active.avg.pct_of_peak_sustained_active", path),
            "st": metric(rep, "smsp__sass_inst_executed_op_global_st.sum", path),
            "st_bps": metric(rep, "smsp__sass_average_data_bytes_per_sector_mem_global_op_st.ratio", path),
            "cycles": metric(rep, "sm__cycles_elapsed.max", path),  # the busiest SM's: the kernel's length in cycles
            "tensor": metric(rep, TENSOR, path),  # % of the elapsed cycles the tensor pipe was busy
            "stalls": stalls[:3]}


def commit_of(folder):
    ctx = os.path.join(folder, "context.txt")
    if os.path.exists(ctx):
        for ln in open(ctx):
            if ln.startswith("commit:"):
                return ln.split(":", 1)[1].strip()[:7]
    return os.path.basename(folder.rstrip("/")).split("_")[1] if "_" in os.path.basename(folder) else "?"


def build(runs, root=ROOT):
    """[{run, commit, impl, n, d, causal, facts}] of every report in the folders, in folder order."""
    out = []
    for run in runs:
        folder = os.path.join(root, run)
        if not os.path.isdir(folder):
            raise GapError(f"no folder {run}")
        # The folder's own reports, and those of its subfolders, named after the setting they ran
        # under (e.g. head/ and heavy/: IOATTN_V08P_ORDER; the folder's context.txt says so).
        subs = [("", folder)] + [(d, os.path.join(folder, d)) for d in sorted(os.listdir(folder))
                                 if os.path.isdir(os.path.join(folder, d))]
        for label, where in subs:
            for name in sorted(os.listdir(where)):
                m = TAG_RE.match(name)
                if m:
                    out.append({"run": run, "commit": commit_of(folder), "impl": m.group("impl"), "setting": label,
                                "n": int(m.group("n")), "d": int(m.group("d")), "causal": int(m.group("c")),
                                "facts": facts_of(os.path.join(where, name))})
    if not out:
        raise GapError(f"no <impl>_nN_dD_cC.csv report in {', '.join(runs)}")
    return out


def compulsory(r):
    b = 16384 // r["n"]
    return 3 * b * 16 * r["n"] * r["d"] * 2


def short(impl):
    return {PEER: "cuDNN", OURS: "v08p", "peer_triton_fa2": "Triton"}.get(impl, impl)


def render_block(rows, runs):
    lines = ["", f"Nsight Compute, one forward call each (bf16, 16 heads, batch x N = 16k; `{', '.join(runs)}`; "
             "written by `experiments/gpu/short_n_gap.py`; durations are ncu replays, compare within a problem):", "",
             "| problem | binaries | kernel | ncu µs | vs cuDNN | DRAM read MB (compulsory) | warp instr. M | I-cache req. k | issue active % "
             "| global stores (B used / 32 B sector) | top stalls (cycles / issued instr.) |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---|---|"]
    peer = {(r["run"], r["n"], r["d"], r["causal"]): r["facts"]["us"] for r in rows if r["impl"] == PEER}
    for r in sorted(rows, key=lambda r: (r["d"], r["n"], r["causal"], r["impl"] != PEER, r["run"], r["setting"])):
        f = r["facts"]
        p = peer.get((r["run"], r["n"], r["d"], r["causal"]))
        vs = f"{f['us'] / p:.2f}x" if p and r["impl"] != PEER else "1" if r["impl"] == PEER else "-"
        st = f"{f['st'] / 1e3:.0f}k ({f['st_bps']:.1f})" if f["st"] > 0 else "none (TMA)"
        stalls = ", ".join(f"{name} {v:.2f}" for v, name in f["stalls"])
        name = short(r["impl"]) + (f" ({r['setting']})" if r["setting"] and r["impl"] != PEER else "")
        lines.append(f"| N {r['n']}, d {r['d']}, causal {r['causal']} | {r['commit']} | {name} | {f['us']:.0f} | {vs} "
                     f"| {f['dram'] / 1e6:.0f} ({compulsory(r) / 1e6:.0f}) | {f['inst'] / 1e6:.1f} | {f['icache'] / 1e3:.0f} | {f['issue']:.0f} | {st} | {stalls} |")
    return "\n".join(lines) + "\n"


def pairs(rows, n, d, causal):
    """[(commit, v08p's facts, cuDNN's facts)] of every run, oldest first, with both reports of the
    problem under the default settings (no setting subfolder)."""
    at = {(r["run"], r["impl"], r["n"], r["d"], r["causal"]): r for r in rows if not r["setting"]}
    runs = dict.fromkeys(r["run"] for r in rows if not r["setting"])
    return [(at[(run, OURS, n, d, causal)]["commit"], at[(run, OURS, n, d, causal)]["facts"],
             at[(run, PEER, n, d, causal)]["facts"])
            for run in runs if (run, OURS, n, d, causal) in at and (run, PEER, n, d, causal) in at]


def sentence(rows, lead, parts, why_none):
    """'lead (binaries c1, c2): part; part', the runs' binaries as their commits; GapError(why_none) without parts."""
    if not parts:
        raise GapError(why_none)
    commits = ", ".join(dict.fromkeys(r["commit"] for r in rows if not r["setting"]))
    return f"{lead} (binaries {commits}): " + "; ".join(parts)


def render_summary(rows):
    """One sentence: v08p against cuDNN at N 512, d 128, causal 0 and 1, in the newest run that has
    the pair, with the oldest run's figures beside it when they differ (before -> now)."""
    parts = []
    for c in (0, 1):
        have = pairs(rows, 512, 128, c)
        if not have:
            continue
        def fig(pair):
            commit, o, p = pair
            return {"ratio": f"{o['us'] / p['us']:.2f}x", "dram": f"{o['dram'] / 1e6:.0f}", "peer_dram": f"{p['dram'] / 1e6:.0f}",
                    "st": f"{o['st'] / 1e3:.0f}k", "bps": f"{o['st_bps']:.1f}", "commit": commit}
        new, old = fig(have[-1]), fig(have[0])
        was = lambda k: f" (was {old[k]} at {old['commit']})" if len(have) > 1 and old[k] != new[k] else ""  # noqa: E731
        parts.append(f"causal {c}: {new['ratio']} cuDNN's duration{was('ratio')}, DRAM read {new['dram']} MB{was('dram')} vs "
                     f"cuDNN's {new['peer_dram']}, global stores {new['st']}{was('st')} using {new['bps']} of 32 bytes per "
                     f"sector{was('bps')}")
    return sentence(rows, "at N 512, d 128", parts, "no run with v08p and cuDNN reports at N 512, d 128")


def render_cycles(rows):
    """One sentence: v08p's SM cycles over cuDNN's per problem of the runs (the clock taken out of the
    replay durations; the runs' binaries named), problems in (causal, d, N) order."""
    parts = []
    probs = sorted({(r["causal"], r["d"], r["n"]) for r in rows if not r["setting"]})
    for c, d, n in probs:
        for commit, o, p in pairs(rows, n, d, c)[-1:]:
            extra = f", DRAM read {o['dram'] / 1e6:.0f} MB against cuDNN's {p['dram'] / 1e6:.0f}" if o["dram"] > 1.2 * p["dram"] else ""
            nn = f"{n // 1024}k" if n >= 1024 else str(n)
            parts.append(f"{'causal' if c else 'non-causal'} d {d} N {nn}: {o['cycles'] / p['cycles']:.2f}x "
                         f"({o['cycles'] / 1e6:.2f}M against {p['cycles'] / 1e6:.2f}M, tensor pipe busy {o['tensor']:.0f} % "
                         f"against {p['tensor']:.0f} %{extra})")
    return sentence(rows, "v08p's SM cycles over cuDNN's", parts, "no problem with both v08p's and cuDNN's reports")


def self_test():
    import tempfile
    head = ["ID", "Kernel Name", "gpu__time_duration.sum", "dram__bytes_read.sum", "smsp__inst_executed.sum",
            "gcc__cache_requests_type_instruction.sum",
            "smsp__issue_active.avg.pct_of_peak_sustained_active", "smsp__sass_inst_executed_op_global_st.sum",
            "smsp__sass_average_data_bytes_per_sector_mem_global_op_st.ratio",
            "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio",
            "smsp__average_warps_issue_stalled_selected_per_issue_active.ratio",
            "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio", "sm__cycles_elapsed.max", TENSOR]
    units = ["", "", "us", "Mbyte", "inst", "request", "%", "inst", "byte/sector", "ratio", "ratio", "ratio", "cycle", "%"]
    with tempfile.TemporaryDirectory() as t:
        run = os.path.join(t, "2026-01-01_abc1234_x")
        os.makedirs(run)
        for impl, us, mb, st, cyc in ((OURS, "150", "402", "557,056", "330,000"), (PEER, "100", "201", "0", "300,000")):
            with open(os.path.join(run, f"{impl}_n512_d128_c1.csv"), "w", newline="") as f:
                w = csv.writer(f)
                w.writerows([head, units, ["0", "k", us, mb, "1,000,000", "600,000", "30", st, "16", "2", "1", "0.5", cyc, "60"]])
        rows = build([run], root="/")
        assert len(rows) == 2 and {r["impl"] for r in rows} == {OURS, PEER}, rows
        o = next(r for r in rows if r["impl"] == OURS)
        assert o["facts"]["dram"] == 402e6 and o["facts"]["st"] == 557056, o
        assert [n for _, n in o["facts"]["stalls"]] == ["wait", "barrier"], o["facts"]["stalls"]
        s = render_summary(rows)
        assert "causal 1: 1.50x cuDNN's duration" in s and "DRAM read 402 MB vs cuDNN's 201" in s and "was" not in s, s
        cy = render_cycles(rows)
        assert "causal d 128 N 512: 1.10x (0.33M against 0.30M, tensor pipe busy 60 % against 60 %, DRAM read 402 MB against cuDNN's 201)" in cy, cy
        b = render_block(rows, [run])
        assert "| 1.50x |" in b and "none (TMA)" in b and "402 (201)" in b and "| 600 |" in b, b
        try:
            build([os.path.join(t, "missing")], root="/")
            raise AssertionError("a missing folder must fail")
        except GapError:
            pass
    print("short_n_gap.py self-test: PASS")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", nargs="+", default=DEFAULT_RUNS, help="ncu_detail folders (repository-relative)")
    ap.add_argument("--self-test", action="store_true")
    a = ap.parse_args(argv)
    if a.self_test:
        self_test()
        return 0
    try:
        rows = build(a.runs)
    except GapError as e:
        print(f"short_n_gap.py: {e}", file=sys.stderr)
        return 2
    print(render_block(rows, a.runs))
    print(render_cycles(rows))
    try:
        print(render_summary(rows))
    except GapError as e:  # runs without the N 512 pair have no summary line
        print(f"(no summary: {e})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""experiments/gpu/fp8_gap.py: why v10_fp8_warpspec misses issue 14's 1.6x, as generated Markdown
from committed H200 results (CPU only; reads files, runs nothing on a GPU).

  python3 experiments/gpu/fp8_gap.py                 # print the block for the runs scripts/doc_numbers.py names
  python3 experiments/gpu/fp8_gap.py --ncu F --ceilings F --bench lazy=F --bench eager=F --bench fast=F
  python3 experiments/gpu/fp8_gap.py --self-test     # the parser and the arithmetic on synthetic rows

Inputs:
  --ncu       Nsight Compute --csv text (experiments/results/h200/<tag>_ncu_fp8/ncu_v10_v08.txt): per case a
              line "== <command>" and ncu rows "ID","Process ID",...,"Section Name","Metric Name",
              "Metric Unit","Metric Value","Rule Name","Rule Type","Rule Description",...; one record per
              launch (ID) of a case. v10's case has two launches: its V-transpose pass and the main kernel.
  --ceilings  ceilings.csv of experiments/gpu/ceilings.py (gemm_<M> rows of dtype fp8_e4m3 and bf16: the
              best of the samples is the rate; its ceilings.json beside it gives the SM count).
  --bench     MODE=bench.csv (MODE lazy, eager or fast) of run_h200.sh fp8 (bench_sdpa.py --dtypes fp8_e4m3): v10 under one setting
              of its environment, with the same run's bf16 forwards and SDPA cuDNN.
Arithmetic (nothing fitted):
  FLOPs                = 4 B H N^2 d (the project's convention; non-causal, as the profiled cases)
  MMA floor            = FLOPs / cuBLAS GEMM rate of the kernel's input dtype (e4m3 for v10, bf16 otherwise)
  issue floor          = executed warp instructions / (SMs * 4 schedulers * the kernel's SM clock from ncu)
                         (one instruction per scheduler per cycle)
  promotion adds       = (d/32 - 1) fp32 adds per element of S (v10 adds each k32 part of Q K^T from a fresh
                         accumulator into S): B H N^2 (d/32 - 1) / 32 warp instructions, compared with the
                         measured difference of non-fused FP32 instructions between v10 and v08 (ncu's
                         FPInstructions rule)
  speed ratio          = ms(best bf16 ioattn forward) / ms(v10) per sample of one run, mean of the samples;
                         spread = |r0 - r1| / mean (the runs' own definition); same-run ratios only.
Exit 2 with one line for a missing file, metric or case.
"""
import argparse
import csv
import json
import os
import re
import statistics
import sys

SCHEDULERS_PER_SM = 4  # Hopper SM: 4 sub-partitions, each issues at most one warp instruction per cycle
TARGET = 1.6           # issue 14: >= 1.6x the best ioattn bf16 forward at N >= 4k, d 128 and 256
TARGET_NMIN = 4096
MODES = ("lazy", "eager", "fast")  # the three runs: v10's settings when they were timed
MODE_TEXT = {"lazy": "lazy rescaling, S promoted every k32 instruction (v10's default when timed)",
             "eager": "IOATTN_V10_RESCALE=eager, promoted as lazy",
             "fast": "IOATTN_V10_S_PROMOTE=fast: no promotion, lazy rescaling"}
FP8_KERNEL = "ioattn:v10_fp8_warpspec"
CUDNN = "sdpa:cudnn"

# (section, metric) every launch record must have
NEEDED = {
    "ms": ("GPU Speed Of Light Throughput", "Duration"),
    "hz": ("GPU Speed Of Light Throughput", "SM Frequency"),
    "cycles": ("GPU Speed Of Light Throughput", "Elapsed Cycles"),
    "dram_pct": ("GPU Speed Of Light Throughput", "DRAM Throughput"),
    "sm_pct": ("GPU Speed Of Light Throughput", "Compute (SM) Throughput"),
    "inst": ("Instruction Statistics", "Executed Instructions"),
    "issue_busy": ("Compute Workload Analysis", "Issue Slots Busy"),
    "no_eligible": ("Scheduler Statistics", "No Eligible"),
    "eligible": ("Scheduler Statistics", "Eligible Warps Per Scheduler"),
    "active": ("Scheduler Statistics", "Active Warps Per Scheduler"),
    "dram_bps": ("Memory Workload Analysis", "Memory Throughput"),
}


class GapError(Exception):
    pass


def num(text):
    """A number as ncu --csv prints it ("1,962,152,777.78")."""
    try:
        return float(str(text).replace(",", ""))
    except ValueError:
        raise GapError(f"not a number: {text!r}") from None


# ------------------------------------------------------------------------------------------------
# Nsight Compute text
# ------------------------------------------------------------------------------------------------

def case_of(header):
    """(source, shape) of a case line: source 'v10_fp8_warpspec', 'v08_fa3_warpspec', ... or 'cudnn'."""
    shape = {}
    for key, val in re.findall(r"(?:--)?\b(batch|heads|seqlen|head-dim)\s+(\d+)", header):
        shape[key.replace("-", "_")] = int(val)
    if set(shape) != {"batch", "heads", "seqlen", "head_dim"}:
        raise GapError(f"case line without batch, heads, seqlen and head-dim: {header.strip()!r}")
    m = re.search(r"--kernel\s+(\S+)", header)
    if m:
        return m.group(1), shape
    if "cudnn" in header.lower():
        return "cudnn", shape
    raise GapError(f"case line names no kernel: {header.strip()!r}")


def parse_ncu(path):
    """Launch records in file order: source, shape, id, kernel, role, metrics {(section, name): value}, rules."""
    recs, case, cols = {}, None, None
    order = []
    with open(path) as f:
        for line in f:
            if line.startswith("=="):
                case = case_of(line[2:])
                cols = None
                continue
            if not line.startswith('"'):
                continue
            row = next(csv.reader([line]))
            if row and row[0] == "ID":
                cols = {c: i for i, c in enumerate(row)}
                continue
            if case is None or cols is None:
                raise GapError(f"{path}: an ncu row before its case line or its header")
            get = lambda c: row[cols[c]] if cols[c] < len(row) else ""  # noqa: E731
            key = (case[0], case[1]["head_dim"], get("ID"))
            if key not in recs:
                recs[key] = {"source": case[0], "shape": case[1], "id": get("ID"), "kernel": get("Kernel Name"),
                             "metrics": {}, "rules": {}}
                order.append(key)
            r = recs[key]
            if get("Metric Name"):
                r["metrics"].setdefault((get("Section Name"), get("Metric Name")), get("Metric Value"))
            if "Rule Name" in cols and get("Rule Name"):
                r["rules"].setdefault(get("Rule Name"), []).append(get("Rule Description"))
    if not order:
        raise GapError(f"{path}: no ncu rows")
    out = []
    for key in order:
        r = recs[key]
        for name, (sec, met) in NEEDED.items():
            if (sec, met) not in r["metrics"]:
                raise GapError(f"{path}: {r['source']} d {r['shape']['head_dim']} launch {r['id']}: no '{met}' "
                               f"in section '{sec}'")
            r[name] = num(r["metrics"][(sec, met)])
        r["ms"] /= 1e6  # ns -> ms
        r["role"] = role_of(r)
        r["pipe"] = high_pipe(r)
        r["fp32"] = fp32_counts(r)
        out.append(r)
    return out


def role_of(r):
    if r["source"] == "cudnn":
        return "cuDNN (bf16)"
    short = r["source"].split("_")[0]
    if "transpose" in r["kernel"]:
        return f"{short} V-transpose pass"
    return f"{short} main" if r["source"].startswith("v10") else f"{short} (bf16)"


def high_pipe(r):
    """(pipe, percent) from ncu's HighPipeUtilization rule, or None."""
    for text in r["rules"].get("HighPipeUtilization", []):
        m = re.match(r"\s*(\w[\w ]*?) is the highest-utilized pipeline \(([\d.]+)%\)", text)
        if m:
            return m.group(1), float(m.group(2))
    return None


def fp32_counts(r):
    """(fused, non-fused) FP32 instructions from ncu's FPInstructions rule, or None."""
    for text in r["rules"].get("FPInstructions", []):
        m = re.search(r"executes (\d+) fused and (\d+) non-fused FP32 instructions", text)
        if m:
            return int(m.group(1)), int(m.group(2))
    return None


# ------------------------------------------------------------------------------------------------
# Ceilings and benchmarks
# ------------------------------------------------------------------------------------------------

def read_csv(path):
    with open(path) as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def ceilings(path):
    """({dtype: best GEMM TFLOP/s over the samples}, SM count from ceilings.json beside it, GEMM size)."""
    rates, size = {}, None
    for r in read_csv(path):
        if re.fullmatch(r"gemm_\d+", r.get("name", "")) and r.get("value"):
            rates[r["dtype"]] = max(rates.get(r["dtype"], 0.0), float(r["value"]))
            size = r["name"].split("_")[1]
    for dt in ("fp8_e4m3", "bf16"):
        if dt not in rates:
            raise GapError(f"{path}: no gemm_<M> row of dtype {dt}")
    js = os.path.join(os.path.dirname(path), "ceilings.json")
    with open(js) as f:
        sms = int(json.load(f)["context"]["sms"])
    return rates, sms, size


def bench_points(path):
    """{(d, causal, N): {impl: {sample: row}}} of the ok rows of one bench.csv."""
    pts = {}
    for r in read_csv(path):
        if r.get("status") != "ok":
            continue
        key = (int(float(r["head_dim"])), int(float(r["causal"])), int(float(r["seqlen"])))
        pts.setdefault(key, {}).setdefault(r["impl"], {})[str(r.get("sample", "0"))] = r
    if not pts:
        raise GapError(f"{path}: no ok rows")
    return pts


def ratio(base, fp8):
    """(mean, spread, n) of ms(base) / ms(fp8) over the samples both have; None without a common sample."""
    common = sorted(set(base) & set(fp8))
    if not common:
        return None
    rs = [float(base[s]["ms"]) / float(fp8[s]["ms"]) for s in common]
    mean = statistics.mean(rs)
    spread = (max(rs) - min(rs)) / mean if len(rs) > 1 else 0.0
    return mean, spread, len(rs)


def best_bf16(at):
    """The ioattn bf16 forward with the highest mean TFLOP/s at one point (paper/gen_fp8.py's choice)."""
    mine = {i: s for i, s in at.items() if i.startswith("ioattn:") and all(r.get("dtype") == "bf16" for r in s.values())}
    if not mine:
        return None
    return max(mine, key=lambda i: statistics.mean(float(r["tflops"]) for r in mine[i].values()))


def speed(benches):
    """{(d, causal, N): {mode: {'bf16': ratio, 'cudnn': ratio, 'bf16_kernel': name, 'bh': (B, H)}}}."""
    out = {}
    for mode, path in benches.items():
        for key, at in bench_points(path).items():
            if FP8_KERNEL not in at:
                continue
            b = best_bf16(at)
            f8 = at[FP8_KERNEL]
            r0 = next(iter(f8.values()))
            out.setdefault(key, {})[mode] = {
                "bf16": ratio(at[b], f8) if b else None, "bf16_kernel": b,
                "cudnn": ratio(at[CUDNN], f8) if CUDNN in at else None,
                "bh": (int(r0["batch"]), int(r0["heads"])),
                "flush": {i: sorted({r.get("flush_l2", "") for r in s.values()}) for i, s in at.items()}}
    if not out:
        raise GapError("no v10 rows in the bench files")
    return out


# ------------------------------------------------------------------------------------------------
# The facts and their Markdown
# ------------------------------------------------------------------------------------------------

def flops(shape):
    return 4.0 * shape["batch"] * shape["heads"] * shape["seqlen"] ** 2 * shape["head_dim"]


def promotion_adds(shape):
    """Warp instructions of v10's promotion: (d/32 - 1) fp32 adds per element of S, 32 lanes a warp."""
    return shape["batch"] * shape["heads"] * shape["seqlen"] ** 2 * (shape["head_dim"] // 32 - 1) / 32


def facts(launches, ceil, benches):
    rates, sms, size = ceil
    dims = sorted({r["shape"]["head_dim"] for r in launches})
    per_d = {}
    for d in dims:
        rs = [r for r in launches if r["shape"]["head_dim"] == d]
        roles = {r["role"]: r for r in rs}
        for need in ("v10 main", "v10 V-transpose pass", "v08 (bf16)"):
            if need not in roles:
                raise GapError(f"ncu: no '{need}' launch at d {d}")
        for r in rs:
            r["flops"] = flops(r["shape"])
            r["inst_per_mflop"] = r["inst"] / (r["flops"] / 1e6)
            r["rate"] = rates["fp8_e4m3"] if r["source"].startswith("v10") else rates["bf16"]
            r["mma_floor_ms"] = r["flops"] / (r["rate"] * 1e12) * 1e3
            r["issue_floor_ms"] = r["inst"] / (sms * SCHEDULERS_PER_SM * r["hz"]) * 1e3
        v10, vt, v08 = roles["v10 main"], roles["v10 V-transpose pass"], roles["v08 (bf16)"]
        f = {"launches": rs, "v10": v10, "vt": vt, "v08": v08, "cudnn": roles.get("cuDNN (bf16)"),
             "vt_share": vt["ms"] / (vt["ms"] + v10["ms"]), "promo": promotion_adds(v10["shape"])}
        if v10["fp32"] and v08["fp32"]:
            f["fp32_extra"] = v10["fp32"][1] - v08["fp32"][1]
            f["inst_no_promo"] = v10["inst"] - f["promo"]
            f["issue_floor_no_promo_ms"] = f["inst_no_promo"] / (sms * SCHEDULERS_PER_SM * v10["hz"]) * 1e3
        per_d[d] = f
    sp = speed(benches)
    verdict = {}
    for mode in MODES:
        for d in dims:
            pts = [v[mode]["bf16"][0] for (dd, c, n), v in sp.items() if dd == d and n >= TARGET_NMIN
                   and mode in v and v[mode]["bf16"]]
            if pts:
                verdict[(mode, d)] = (sum(p >= TARGET for p in pts), len(pts), min(pts), max(pts))
    return {"per_d": per_d, "dims": dims, "rates": rates, "sms": sms, "gemm": size, "speed": sp, "verdict": verdict}


def pct(x):
    return f"{100 * x:.0f} %"


def render_block(F, sources):
    """The Markdown block (kernels/README.md, fp8_gap)."""
    s0 = F["per_d"][F["dims"][0]]["v10"]["shape"]
    L = ["", f"Counters: `{sources['ncu']}` (Nsight Compute, clocks not locked; batch {s0['batch']}, heads "
         f"{s0['heads']}, N {s0['seqlen']}, non-causal, one profiled launch each). GEMM rates: `{sources['ceilings']}` "
         f"(cuBLAS, M = N = K = {F['gemm']}, best of the samples: e4m3 {F['rates']['fp8_e4m3']:.0f}, bf16 "
         f"{F['rates']['bf16']:.0f} TFLOP/s, {F['rates']['fp8_e4m3'] / F['rates']['bf16']:.2f}x; {F['sms']} SMs). "
         "FLOPs 4·B·H·N²·d; instructions are warp instructions executed; the busiest pipe is ncu's "
         "HighPipeUtilization rule (its share of that pipe's peak); FP32 non-fused is ncu's FPInstructions rule.",
         "",
         "| d | kernel | ms | SM clock (GHz) | cycles (M) | instructions (M) | per MFLOP | FP32 non-fused (M) "
         "| issue slots busy | no eligible | eligible / active warps per scheduler | busiest pipe | DRAM throughput |",
         "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for d in F["dims"]:
        for r in F["per_d"][d]["launches"]:
            pipe = f"{r['pipe'][0]} {r['pipe'][1]:.0f} %" if r["pipe"] else "-"
            fp = f"{r['fp32'][1] / 1e6:.0f}" if r["fp32"] else "-"
            per = "-" if "transpose" in r["role"] else f"{r['inst_per_mflop']:.0f}"  # the pass does none of the FLOPs
            L.append(f"| {d} | {r['role']} | {r['ms']:.3f} | {r['hz'] / 1e9:.2f} | {r['cycles'] / 1e6:.2f} "
                     f"| {r['inst'] / 1e6:.0f} | {per} | {fp} | {r['issue_busy']:.0f} % "
                     f"| {r['no_eligible']:.0f} % | {r['eligible']:.2f} / {r['active']:.2f} | {pipe} "
                     f"| {r['dram_pct']:.0f} % ({r['dram_bps'] / 1e12:.2f} TB/s) |")
    L += ["", "Floors against the measured time (MMA floor: FLOPs at cuBLAS's rate for the kernel's input dtype; "
          f"issue floor: instructions / ({F['sms']} SMs · {SCHEDULERS_PER_SM} schedulers · the kernel's SM clock)):", "",
          "| d | kernel | ms | MMA floor (ms) | issue floor (ms) | MMA floor / ms | issue floor / ms "
          "| (MMA + issue floor) / ms |", "|---|---|---|---|---|---|---|---|"]
    for d in F["dims"]:
        for r in F["per_d"][d]["launches"]:
            if "transpose" in r["role"]:
                continue
            L.append(f"| {d} | {r['role']} | {r['ms']:.3f} | {r['mma_floor_ms']:.3f} | {r['issue_floor_ms']:.3f} "
                     f"| {pct(r['mma_floor_ms'] / r['ms'])} | {pct(r['issue_floor_ms'] / r['ms'])} "
                     f"| {pct((r['mma_floor_ms'] + r['issue_floor_ms']) / r['ms'])} |")
    L += ["", "The GEMM rate's clock is not recorded (the ceilings run is not under ncu); the profiled kernels ran at the "
          "clocks in the first table, so a floor is the time at cuBLAS's rate, not at the kernel's clock.", ""]
    for d in F["dims"]:
        f = F["per_d"][d]
        v10, v08 = f["v10"], f["v08"]
        line = (f"- d {d}: v10 executes {v10['inst'] / v08['inst']:.2f}x v08's instructions in "
                f"{v10['cycles'] / v08['cycles']:.2f}x its cycles ({v10['ms'] / v08['ms']:.2f}x its time, at "
                f"{v10['hz'] / v08['hz']:.2f}x its clock); the V-transpose pass is {pct(f['vt_share'])} of v10's "
                "two launches.")
        if "fp32_extra" in f:
            line += (f" S's promotion, (d/32 − 1) = {d // 32 - 1} fp32 adds per element of S, is "
                     f"{f['promo'] / 1e6:.1f}M warp instructions; v10 − v08 non-fused FP32 instructions measured "
                     f"{f['fp32_extra'] / 1e6:.1f}M ({f['fp32_extra'] / f['promo']:.4f} of it). Without them v10 would "
                     f"execute {f['inst_no_promo'] / 1e6:.0f}M (an estimate: the fast loop was not profiled), an issue "
                     f"floor of {f['issue_floor_no_promo_ms']:.3f} ms against the {v10['mma_floor_ms']:.3f} ms MMA floor.")
        L.append(line)
    L += ["", "Speed (ratio = ms(best bf16 ioattn forward) / ms(v10), and the same against SDPA cuDNN bf16, per sample "
          "of one run, mean of the samples, ± the spread between them; each setting's run has its own bf16 and cuDNN "
          "rows): " + "; ".join(f"{m} = {MODE_TEXT[m]}, `{sources['bench'][m]}`" for m in MODES if m in sources["bench"])
          + ".", ""]
    modes = [m for m in MODES if any(m in v for v in F["speed"].values())]
    L.append("| d | causal | N | B x H | " + " | ".join(f"{m}: x bf16 | {m}: x cuDNN" for m in modes) + " |")
    L.append("|---" * (4 + 2 * len(modes)) + "|")
    fmt = lambda r: f"{r[0]:.2f} ± {100 * r[1]:.0f} %" if r else "-"  # noqa: E731
    for key in sorted(F["speed"]):
        v = F["speed"][key]
        bh = next(iter(v.values()))["bh"]
        L.append(f"| {key[0]} | {key[1]} | {key[2]} | {bh[0]} x {bh[1]} | "
                 + " | ".join(f"{fmt(v[m]['bf16'])} | {fmt(v[m]['cudnn'])}" if m in v else "- | -" for m in modes) + " |")
    kernels = sorted({m["bf16_kernel"] for v in F["speed"].values() for m in v.values() if m["bf16_kernel"]})
    flush = sorted({(i, tuple(fl)) for v in F["speed"].values() for m in v.values() for i, fl in m["flush"].items()})
    L += ["", f"Best bf16 forward in these runs: {', '.join(k.split(':', 1)[1] for k in kernels)}. L2 flush per row "
          "(timing.py flushes when inputs and outputs fit in 4x the L2): "
          + ", ".join(f"{i.split(':', 1)[1]} {'/'.join(fl)}" for i, fl in flush) + ".",
          f"Issue 14's target (≥ {TARGET}x the best bf16 forward at N ≥ {TARGET_NMIN // 1024}k, mean ratio): "
          + "; ".join(f"{m} d {d}: {F['verdict'][(m, d)][0]} of {F['verdict'][(m, d)][1]} points "
                      f"({F['verdict'][(m, d)][2]:.2f}-{F['verdict'][(m, d)][3]:.2f}x)"
                      for m in modes for d in F["dims"] if (m, d) in F["verdict"]) + ".", ""]
    return "\n".join(L) + "\n"


def render_summary(F):
    """One inline clause for README.md's FP8 limit (fp8_gap_summary)."""
    parts = []
    for d in F["dims"]:
        f = F["per_d"][d]
        v10, v08 = f["v10"], f["v08"]
        parts.append(f"d {d}: {v10['inst'] / v08['inst']:.2f}x v08's instructions, "
                     f"{v10['cycles'] / v08['cycles']:.2f}x its cycles, issue slots busy {v10['issue_busy']:.0f} % "
                     f"(v08 {v08['issue_busy']:.0f} %), no warp eligible in {v10['no_eligible']:.0f} % of cycles, "
                     f"busiest pipe {v10['pipe'][0] if v10['pipe'] else '?'} at "
                     f"{v10['pipe'][1] if v10['pipe'] else float('nan'):.0f} % (v08 "
                     f"{v08['pipe'][0] if v08['pipe'] else '?'} {v08['pipe'][1] if v08['pipe'] else float('nan'):.0f} %); "
                     f"MMA floor {pct(v10['mma_floor_ms'] / v10['ms'])} and issue floor "
                     f"{pct(v10['issue_floor_ms'] / v10['ms'])} of the measured time"
                     + (f"; the promotion's fp32 adds ({f['promo'] / 1e6:.0f}M) account for "
                        f"{f['fp32_extra'] / 1e6:.0f}M extra non-fused FP32 instructions" if "fp32_extra" in f else ""))
    fast = [F["verdict"][("fast", d)] for d in F["dims"] if ("fast", d) in F["verdict"]]
    dflt = [F["verdict"][("lazy", d)] for d in F["dims"] if ("lazy", d) in F["verdict"]]
    tail = ""
    if fast and dflt:
        tail = (f"; at N ≥ {TARGET_NMIN // 1024}k the promoted loop (lazy) reaches {min(v[2] for v in dflt):.2f}-"
                f"{max(v[3] for v in dflt):.2f}x the same run's best bf16 forward and the unpromoted loop "
                f"(IOATTN_V10_S_PROMOTE=fast) {min(v[2] for v in fast):.2f}-{max(v[3] for v in fast):.2f}x, "
                f"target met at {sum(v[0] for v in fast)} of {sum(v[1] for v in fast)} points")
    return "at N 8k (ncu, non-causal): " + "; ".join(parts) + tail


def render_row(F):
    """One inline clause for v10's row in kernels/README.md (fp8_gap_row)."""
    fast = [F["verdict"][("fast", d)] for d in F["dims"] if ("fast", d) in F["verdict"]]
    dflt = [F["verdict"][("lazy", d)] for d in F["dims"] if ("lazy", d) in F["verdict"]]
    ds = " / ".join(str(d) for d in F["dims"])
    f = [F["per_d"][d] for d in F["dims"]]

    def each(fn):
        return " / ".join(fn(x) for x in f)
    met = lambda vs: f"{sum(v[0] for v in vs)} of {sum(v[1] for v in vs)}"  # noqa: E731
    return (f"issue 14's {TARGET}x at N ≥ {TARGET_NMIN // 1024}k is met at {met(dflt)} points by the promoted loop "
            f"({min(v[2] for v in dflt):.2f}-{max(v[3] for v in dflt):.2f}x the best bf16 forward) and at {met(fast)} "
            f"unpromoted ({min(v[2] for v in fast):.2f}-{max(v[3] for v in fast):.2f}x): at d {ds}, N 8k it "
            f"takes {each(lambda x: '%.2f' % (x['v10']['cycles'] / x['v08']['cycles']))}x v08's cycles with "
            f"{each(lambda x: '%.2f' % (x['v10']['inst'] / x['v08']['inst']))}x its instructions, issue slots busy "
            f"{each(lambda x: '%.0f' % x['v10']['issue_busy'])} % and its busiest pipe at "
            f"{each(lambda x: '%.0f' % x['v10']['pipe'][1] if x['v10']['pipe'] else '?')} % of its peak "
            "(section 'v10 and the 1.6x target' below)")


def default_sources():
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
    import doc_numbers
    S = doc_numbers.SOURCES
    return {"ncu": S["fp8_gap_ncu"], "ceilings": S["fp8_gap_ceilings"],
            "bench": {m: S[f"fp8_gap_{m}"] for m in MODES}}, doc_numbers.ROOT


def build(sources, root):
    """The facts of the files in sources: a path as given when it exists, else relative to the repository."""
    j = lambda p: p if os.path.isabs(p) or os.path.exists(p) else os.path.join(root, p)  # noqa: E731
    F = facts(parse_ncu(j(sources["ncu"])), ceilings(j(sources["ceilings"])),
              {m: j(p) for m, p in sources["bench"].items()})
    return F


# ------------------------------------------------------------------------------------------------
# Self-test (synthetic rows; every check can fail)
# ------------------------------------------------------------------------------------------------

def self_test():
    import tempfile
    fails = []

    def expect(cond, what):
        print(("PASS " if cond else "FAIL ") + what)
        if not cond:
            fails.append(what)

    head = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
            '"Device","CC","Section Name","Metric Name","Metric Unit","Metric Value","Rule Name","Rule Type",'
            '"Rule Description","Estimated Speedup Type","Estimated Speedup"\n')

    def rows(i, kernel, vals, pipe=None, fp32=None):
        out = []
        for k, (sec, met) in NEEDED.items():
            out.append(f'"{i}","1","p","h","{kernel}","1","7","(384, 1, 1)","(1, 1, 1)","0","9.0","{sec}","{met}","u",'
                       f'"{vals[k]}",\n')
        if pipe:
            out.append(f'"{i}","1","p","h","{kernel}","1","7","(384, 1, 1)","(1, 1, 1)","0","9.0","ComputeWorkloadAnalysis",'
                       f'"","","","HighPipeUtilization","OPT","{pipe[0]} is the highest-utilized pipeline ({pipe[1]}%) '
                       'based on elapsed cycles.","",""\n')
        if fp32:
            out.append(f'"{i}","1","p","h","{kernel}","1","7","(384, 1, 1)","(1, 1, 1)","0","9.0","InstructionStats",'
                       f'"","","","FPInstructions","OPT","This kernel executes {fp32[0]} fused and {fp32[1]} non-fused '
                       'FP32 instructions.","global","1"\n')
        return "".join(out)

    base = {"ms": "1,000,000", "hz": "2,000,000,000", "cycles": "2,000,000", "dram_pct": "10", "sm_pct": "50",
            "inst": "1,056,000,000", "issue_busy": "50", "no_eligible": "49", "eligible": "0.5", "active": "2.2",
            "dram_bps": "1,000,000,000,000"}
    shape = "--batch 1 --heads 2 --seqlen 1024 --head-dim 128"
    text = (f"== ioattn run --kernel v10_fp8_warpspec --dtype fp8_e4m3 {shape}\n" + head
            + rows(0, "transpose_v_kernel(AttnView)", dict(base, ms="40,000"))
            + rows(1, "fp8_warpspec_kernel<V10Tile>", base, ("Tensor", 40.0), (10, 1000 + 3 * 2 * 1024 * 1024 // 32))
            + "elapsed_s 3\n"
            + f"== ioattn run --kernel v08_fa3_warpspec --dtype bf16 {shape}\n" + head
            + rows(0, "fa3_warpspec_kernel<V08Tile>", dict(base, ms="2,000,000", inst="528,000,000"), ("Tensor", 70.0),
                   (10, 1000))
            + "== sdpa cudnn bf16 batch 1 heads 2 seqlen 1024 head-dim 128\n" + head
            + rows(0, "cudnn_generated_fort_native_sdpa", base))
    with tempfile.TemporaryDirectory() as tmp:
        p = os.path.join(tmp, "ncu.txt")
        open(p, "w").write(text)
        L = parse_ncu(p)
        expect([r["role"] for r in L] == ["v10 V-transpose pass", "v10 main", "v08 (bf16)", "cuDNN (bf16)"],
               "four launches with their roles, in file order")
        expect(abs(L[1]["hz"] - 2e9) < 1 and abs(L[1]["ms"] - 1.0) < 1e-12, "thousands separators, ns -> ms")
        expect(L[1]["pipe"] == ("Tensor", 40.0) and L[3]["pipe"] is None, "HighPipeUtilization rule read, absent ok")
        expect(L[1]["fp32"] == (10, 1000 + 3 * 65536), "FPInstructions rule read")
        # ceilings
        c = os.path.join(tmp, "ceilings.csv")
        open(c, "w").write("name,dtype,value,unit,sample\ngemm_8192,bf16,500,TFLOP/s,0\ngemm_8192,bf16,510,TFLOP/s,1\n"
                           "gemm_8192,fp8_e4m3,1000,TFLOP/s,0\ngemm_8192_nofastacc,fp8_e4m3,1200,TFLOP/s,0\n"
                           "copy_sm,fp32,4000,GB/s,0\n")
        json.dump({"context": {"sms": 132}}, open(os.path.join(tmp, "ceilings.json"), "w"))
        rates, sms, _ = ceilings(c)
        expect(rates == {"bf16": 510.0, "fp8_e4m3": 1000.0} and sms == 132,
               "best sample per dtype, nofastacc and copy rows not taken as the GEMM rate")
        # bench
        b = os.path.join(tmp, "bench.csv")
        hdr = "impl,dtype,head_dim,causal,seqlen,batch,heads,sample,status,ms,tflops,flush_l2\n"
        body = ("ioattn:v10_fp8_warpspec,fp8_e4m3,128,0,8192,2,16,0,ok,1.0,800,1\n"
                "ioattn:v10_fp8_warpspec,fp8_e4m3,128,0,8192,2,16,1,ok,1.0,800,1\n"
                "ioattn:v08_fa3_warpspec,bf16,128,0,8192,2,16,0,ok,1.2,600,0\n"
                "ioattn:v08_fa3_warpspec,bf16,128,0,8192,2,16,1,ok,1.4,560,0\n"
                "ioattn:v06_fa2_wgmma,bf16,128,0,8192,2,16,0,ok,2.0,300,0\n"
                "ioattn:v06_fa2_wgmma,bf16,128,0,8192,2,16,1,ok,2.0,300,0\n"
                "ioattn:v09_fp8_wgmma,fp8_e4m3,128,0,8192,2,16,0,ok,0.5,1600,1\n"
                "sdpa:cudnn,bf16,128,0,8192,2,16,0,ok,1.1,700,0\n"
                "sdpa:cudnn,bf16,128,0,8192,2,16,1,ok,1.1,700,0\n")
        open(b, "w").write(hdr + body)
        sp = speed({"lazy": b, "fast": b})
        m = sp[(128, 0, 8192)]["lazy"]
        expect(m["bf16_kernel"] == "ioattn:v08_fa3_warpspec", "best bf16 = fastest bf16 ioattn row, the FP8 v09 not taken")
        expect(abs(m["bf16"][0] - 1.3) < 1e-12 and abs(m["bf16"][1] - 0.2 / 1.3) < 1e-12,
               "ratio = mean of per-sample ms ratios, spread = |r0 - r1| / mean")
        expect(abs(m["cudnn"][0] - 1.1) < 1e-12 and m["cudnn"][1] == 0.0, "cuDNN ratio")
        F = facts(L, (rates, sms, "8192"), {"lazy": b, "fast": b})
        v10 = F["per_d"][128]["v10"]
        expect(abs(v10["issue_floor_ms"] - 1056e6 / (132 * 4 * 2e9) * 1e3) < 1e-12, "issue floor formula")
        expect(abs(v10["mma_floor_ms"] - 4 * 2 * 1024 ** 2 * 128 / 1000e12 * 1e3) < 1e-15, "MMA floor at the e4m3 rate")
        expect(abs(F["per_d"][128]["v08"]["mma_floor_ms"] - 4 * 2 * 1024 ** 2 * 128 / 510e12 * 1e3) < 1e-15,
               "bf16 kernels' MMA floor at the bf16 rate")
        expect(F["per_d"][128]["fp32_extra"] == F["per_d"][128]["promo"] == 3 * 2 * 1024 ** 2 / 32,
               "promotion adds (d/32 - 1) per S element against the FP32 difference")
        expect(abs(F["per_d"][128]["vt_share"] - 0.04 / 1.04) < 1e-12, "transpose share of v10's two launches")
        vd = F["verdict"][("lazy", 128)]
        expect(vd[:2] == (0, 1) and abs(vd[2] - 1.3) < 1e-12, "target verdict: 1.3x < 1.6x counted as a miss")
        md = render_block(F, {"ncu": "n", "ceilings": "c", "bench": {"lazy": "b", "fast": "b"}})
        expect("| 128 | v10 main |" in md and "1.30 ± 15 %" in md, "the block has the rows and the ratio")
        # refusals
        open(p, "w").write(text.replace('"Issue Slots Busy"', '"Something Else"'))
        try:
            parse_ncu(p)
            expect(False, "a missing metric is refused")
        except GapError as e:
            expect("Issue Slots Busy" in str(e), "a missing metric is refused by name")
        open(p, "w").write(head + rows(0, "k", base))
        try:
            parse_ncu(p)
            expect(False, "rows before a case line are refused")
        except GapError:
            expect(True, "rows before a case line are refused")
    print(f"fp8_gap self-test: {len(fails)} failed")
    return 1 if fails else 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--self-test", action="store_true")
    ap.add_argument("--ncu")
    ap.add_argument("--ceilings")
    ap.add_argument("--bench", action="append", default=[], metavar="MODE=CSV")
    ap.add_argument("--summary", action="store_true", help="also print the README clauses")
    args = ap.parse_args(argv)
    if args.self_test:
        return self_test()
    try:
        sources, root = default_sources()
        if args.ncu:
            sources["ncu"] = args.ncu
        if args.ceilings:
            sources["ceilings"] = args.ceilings
        if args.bench:
            sources["bench"] = {}
            for b in args.bench:
                mode, sep, path = b.partition("=")
                if not sep or mode not in MODES:
                    raise GapError(f"--bench takes MODE=CSV with MODE in {', '.join(MODES)}: {b!r}")
                sources["bench"][mode] = path
        F = build(sources, root)
        print(render_block(F, sources))
        if args.summary:
            print(render_summary(F))
            print()
            print(render_row(F))
    except (GapError, OSError, KeyError, ValueError) as e:
        print(f"fp8_gap.py: {type(e).__name__}: {e}")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The expected-time model against the committed H200 measurements: calibration and validation, apart.

  python3 simulator/validate/expected_time.py --ioattn build/apps/ioattn               # rewrite the CSV + README block
  python3 simulator/validate/expected_time.py --ioattn build/apps/ioattn --check       # exit 1 if either differs
  python3 simulator/validate/expected_time.py --ioattn build/apps/ioattn --calibrate   # refit, rewrite h200.json's
                                                                                       # calibrated_* entries

Points (measured, committed, never edited):
  bench   the CANONICAL bench runs (experiments/results/h200/CANONICAL, role bench): kernel time (ms, the
          median over the run's samples; cuda-graph replay, L2 not flushed) of ioattn's fast forwards
          (FAST_IMPLS: the matrix-core rungs) and SDPA's FlashAttention-2, with each ioattn row's launch
          configuration (br, bc, ctas_per_sm, grid_order)
  heldout the CANONICAL heldout runs (bench_sdpa.py / ncu_collect.py --preset heldout: GQA, d 256,
          N 32k-64k): bench points and their ncu DRAM reads, held-out only
  fp8     the CANONICAL fp8 run (bench_sdpa.py --dtypes fp8_e4m3): the rows of the FP8 forwards (FP8_IMPLS:
          v09, v10; e4m3 Q, K, V, bf16 out), each with its launch configuration; timed with the L2 flushed
          between replays (the 16-bit bench rows are not) and over both launches (V transpose pass and main
          kernel; the twin's design part vt-pass models the pass). Held-out only (set `held-out fp8`)
  ncu     the CANONICAL ncu run: DRAM read bytes of the ioattn rows (joined to the bench point of the
          same problem), and SDPA FlashAttention-2 forwards under ncu (compare_l2.py's inputs), whose
          time is ncu's gpu__time_duration (clocks not locked) and whose tile is the one in the kernel's
          template arguments
Each point is modeled by `ioattn simulate`: an ioattn row with `--kernel NAME` (strategy and pipeline
design from the registry, kernels/design.hpp) and the row's tile, occupancy and grid order; an SDPA
row with `--design mma_sync/none/fragments` (FlashAttention-2: mma.sync, softmax after both matmuls
of a tile, ldmatrix) and the tile of its kernel traits. A point's heads are the row's query heads
`heads` and K/V heads `heads_kv` (the column bench_sdpa.py and ncu_collect.py append; absent or empty
in the older CSVs, which are multi-head: heads_kv = heads); a GQA point is modeled with
--heads-q/--heads-kv, joins its ncu row on both, and is its own shape (it is never a training shape's
repeat). The CSV carries both columns.

Calibration and validation are kept apart:
  TRAINING       forward: fp16 rows, non-causal, N in TRAIN_N, both head dims, every impl of role bench
                 (16 points); v08's rows of the same rule (4 points: the warp-specialized design)
                 train only that design's own parameters (CALIBRATED_WS), the others fixed
  TRAINING BWD   the same rule on the backward bench rows (CANONICAL role bwd): fp16, non-causal, N in
                 TRAIN_N, d 64 and 128, every backward rung timed there at those shapes
  HELD-OUT FP8   every FP8 point (v09, v10: no FP8 row trains anything; the twin takes the FP8 element size
                 and the catalog's matrix_fp8 rate, the calibrated efficiencies of its instruction and design
                 as fitted on the 16-bit rows). A set of its own: the forward verdict above stays the 16-bit
                 one (predictions.py's band and the paper read it), and the summary states the FP8 set's
                 verdict and the verdict of both sets together
  HELD-OUT       every other point whose (pass, impl, d, causal, N, heads / heads_kv) is not a training shape
                 (bf16 bench rows, causal rows, the other N, SDPA's ncu rows up to N = 256k and d = 256,
                 every other v08 row, e.g. its d 256 and its Br 192 d 64 tile); HELD-OUT BWD the same for the backward (bf16, causal, the other N, every
                 bwd02 row: bwd02 has no fp16 row, so it is validated on parameters fitted to the others)
  EXCLUDED       a training shape measured again (e.g. in bf16): in neither set
  TRAINING DRAM  the DRAM reads of the SDPA FlashAttention-2 forwards of DRAM_TRAIN (run_ncu_l2.sh, 2026-11-29:
                 11 points, N 16k-256k, d 64/128/256, two causal): the only points whose reads fit a parameter
                 (CALIBRATED_DRAM, the L2 wave model's CTA drift, by mean |log(model / measured read)|); their read
                 errors leave the held-out read statistics (column read_set), their times stay held-out (no time
                 parameter is fitted on them). Every other measured read (the ioattn ncu rows, the heldout role,
                 the SDPA anchors) is held-out.
Only the calibrated_* entries of machines/h200.json are fitted (CALIBRATED, CALIBRATED_WS, CALIBRATED_BWD, CALIBRATED_DRAM:
parameters no datasheet gives): the forward ones on TRAINING less v08, then the warp-specialized design's
(its wgmma efficiency and ring stage latency) on v08's TRAINING rows, then the backward ones on TRAINING BWD with the forward
ones fixed, by minimizing the mean |log(model / measured)| time error with a coordinate search
(--calibrate [all|fwd|bwd|dram]; a temporary catalog copy per trial; dram: a log-spaced scan of the drift, then
a golden-section refinement around the best, on TRAINING DRAM's reads; `all` fits it first). --check never refits: it reruns the
model on every point with the committed catalog and compares the CSV and the README block.

Backward points: the CANONICAL bwd bench rows of FAST_BWD, their ncu DRAM reads where the ncu runs
measured the same problem, and the ncu rows of FAST_BWD whose problem the bench did not time (timed by
ncu, as the SDPA rows). The table `expected_bwd_kernels` compares each backward kernel with its ncu
time and DRAM reads (the per-kernel ncu_raw/ files of those runs).

Outputs: simulator/validate/expected_vs_h200.csv (one row per point: set, measured and modeled time,
ceiling, errors, DRAM reads where measured) and the blocks `expected_validation` (the summary, then the
FP8 diagnosis: fp8_diagnosis) and `expected_bwd_kernels` of simulator/README.md.
"""
import argparse
import csv
import json
import math
import os
import re
import shutil
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from derived import TARGET_MAPE, TARGET_MAX, derived_csv, heads_args, heads_kv, replace_block, run_cli  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
H200 = os.path.join(REPO, "experiments", "results", "h200")
CATALOG = os.path.join(REPO, "simulator", "machines")
OUT_CSV = os.path.join(HERE, "expected_vs_h200.csv")
README = os.path.join(REPO, "simulator", "README.md")
BLOCK = "expected_validation"
BEGIN = f"<!-- generated by simulator/validate/expected_time.py: {BLOCK} -->"
END = f"<!-- end generated: {BLOCK} -->"
BWD_BLOCK = "expected_bwd_kernels"
BWD_BEGIN = f"<!-- generated by simulator/validate/expected_time.py: {BWD_BLOCK} -->"
BWD_END = f"<!-- end generated: {BWD_BLOCK} -->"
SDPA_NCU = ["experiments/results/h200/2026-11-29_sdpa_ncu_l2/h200_ncu_l2.csv",
            "experiments/results/h200/2026-12-01_f9ca3ea_sdpa_anchors/h200_sdpa_ncu.csv"]
FAST_IMPLS = ("ioattn:v04_fa2_mma", "ioattn:v05_fa2_fast", "ioattn:v06_fa2_wgmma", "ioattn:v08_fa3_warpspec",
              "ioattn:v08p_fa3_persistent", "sdpa:flash")
# Forward rungs measured in the CANONICAL role `fast` (not in role bench). Their tile, ring depth,
# occupancy and grid order are the bench rows' (the registry's launch), their design kernels/design.hpp's.
# v08 is the one rung of the warp-specialized design: the parameters only that design uses (CALIBRATED_WS)
# are fitted on its rows of the training rule (fp16, non-causal, N in TRAIN_N, d 64 and 128), the
# forward parameters fixed; every other v08 row is held-out.
FAST_ROLE_IMPLS = ("ioattn:v08_fa3_warpspec", "ioattn:v08p_fa3_persistent")
WS_IMPLS = ("ioattn:v08_fa3_warpspec", "ioattn:v08p_fa3_persistent")
# Rungs whose every point is held-out, whatever its shape: v08p is v08's design on a persistent grid,
# a kernel the parameters were not fitted on (they come from v08's rows).
HELDOUT_ONLY_IMPLS = ("ioattn:v08p_fa3_persistent",)
# The FP8 forwards (CANONICAL role fp8: bench_sdpa.py --dtypes fp8_e4m3). Every point held-out, in
# a set of its own (FP8_SET): no calibrated parameter was fitted on an FP8 row.
FP8_IMPLS = ("ioattn:v09_fp8_wgmma", "ioattn:v10_fp8_warpspec")
FP8_SET = "held-out fp8"
# The FP8 diagnosis after the summary (not a validation set: no statistic above reads it): each FP8
# point beside v08's bf16 row of the same problem in the same run (bench_sdpa.py --dtypes fp8_e4m3 times
# v08 in bf16 beside the FP8 rungs), and each FP8 rung of a promotion study (a run_h200.sh fp8 run with
# the variable its env.txt names, e.g. IOATTN_V09_S_PROMOTE=fast: no promotion of S; not CANONICAL)
# against the same twin, which models no promotion. (folder, FP8 rung); the first is v09's.
FP8_BF16_PEER = "ioattn:v08_fa3_warpspec"
FP8_PROMOTE_STUDIES = (("2026-12-01_eeb7765_fp8_promote_fast", "ioattn:v09_fp8_wgmma"),)
# CANONICAL role of the runs that measure held-out points only (bench_sdpa.py / ncu_collect.py
# --preset heldout: GQA, d 256, N 32k-64k): bench and ncu rows, never training.
HELDOUT_ROLE = "heldout"
# Backward (CANONICAL role bwd, pass bwd): ioattn's matrix-core backward rungs. SDPA's backward is left
# out: its tile is not recorded (no kernel name in the bench rows).
FAST_BWD = ("ioattn:bwd02_fa2_mma", "ioattn:bwd02b_fa2_mma_dqpass", "ioattn:bwd03_fa3_wgmma",
            "ioattn:bwd03b_fa3_wgmma_dqpass")
BWD_ORDER = {"kv_bh_major": "bh_major"}  # the K/V-outer nest's bh_major (exp_h200_model says why)
SDPA_DESIGN = "mma_sync/none/fragments/walk=down"  # FlashAttention-2 walks its key blocks from the diagonal down
TRAIN_DTYPE, TRAIN_CAUSAL, TRAIN_N = "fp16", 0, (1024, 8192)
# The parameters calibrated (none has a datasheet value), with their search ranges. The forward ones
# are fitted on the forward training points first; the backward ones (used only by backward tile
# loops) then on the backward training points, the forward ones fixed.
CALIBRATED = {
    "calibrated_mma_sync_efficiency": (0.2, 1.0),
    "calibrated_wgmma_efficiency": (0.2, 1.0),
    "calibrated_lds_scalar_efficiency": (0.01, 1.0),
    "calibrated_cta_fixed_s": (1e-7, 2e-5),
}
CALIBRATED_WS = {
    "calibrated_ws_wgmma_efficiency": (0.2, 1.0),
    "calibrated_ws_wgmma_head_dim_exponent": (0.01, 1.0),
    "calibrated_ring_stage_latency_s": (1e-8, 2e-5),
}
CALIBRATED_BWD = {
    "calibrated_bwd_mma_sync_efficiency": (0.1, 1.0),
    "calibrated_bwd_wgmma_efficiency": (0.1, 1.0),
    "calibrated_atomic_adds_per_cu_per_clock": (0.25, 64.0),
}
# The L2 wave model's drift (nest.cpp): fitted on the DRAM reads of DRAM_TRAIN only (TRAINING DRAM).
CALIBRATED_DRAM = {
    "calibrated_cta_drift_tiles_per_tile": (1e-4, 0.5),
}
DRAM_TRAIN = ("experiments/results/h200/2026-11-29_sdpa_ncu_l2/h200_ncu_l2.csv",)
TRANSFER = ("h100",)  # machines with the H200's SM and clock (see calibrate())


def rel(path):
    return os.path.relpath(path, REPO)


def canonical(role):
    tags = []
    for line in open(os.path.join(H200, "CANONICAL")):
        line = line.split("#")[0].split()
        if len(line) == 2 and line[0] == role and line[1] not in tags:
            tags.append(line[1])
    return tags


def read_csv(path):
    with open(path) as f:
        return list(csv.DictReader(l for l in f if not l.startswith("#")))


def shape_key(p):
    # A GQA point (heads_q / heads_kv > 1) is another shape than the MHA training point of its N and d;
    # a point with another tile (Br, Bc) than the training point's is another configuration.
    return (p["impl"], p["head_dim"], p["causal"], p["seqlen"], p["heads"] // p["heads_kv"], str(p["br"]), str(p["bc"]))


def bench_points(roles=(("bench", FAST_IMPLS),), pass_="fwd", tags_of=canonical):
    """The bench rows of `pass_` of each (CANONICAL role, impls) in `roles`, one point per problem: the
    median over every sample of every folder that timed it (a problem two folders measured is one point).
    tags_of(role): the folders of a role (default: its CANONICAL lines)."""
    pts = {}
    for role, impls in roles:
        for tag in tags_of(role):
            path = os.path.join(H200, tag, "bench.csv")
            if not os.path.exists(path):
                continue
            for r in read_csv(path):
                if r["impl"] not in impls or r.get("status", "ok") != "ok" or r.get("pass", "fwd") != pass_:
                    continue
                # The launch's tile and ring depth are part of the point: two folders that timed the
                # same problem with another tile (v08's d 64 Br 128 and Br 192) are two points.
                key = (r["impl"], r["dtype"], int(r["head_dim"]), int(r["causal"]), int(r["seqlen"]), int(r["batch"]),
                       int(r["heads"]), heads_kv(r), r["br"], r["bc"], r.get("stages", ""))
                p = pts.setdefault(key, dict(impl=r["impl"], dtype=r["dtype"], head_dim=key[2], causal=key[3],
                                             seqlen=key[4], batch=key[5], heads=key[6], heads_kv=key[7], ms=[],
                                             source=rel(path),
                                             timing="bench", br=r["br"], bc=r["bc"], ctas=r["ctas_per_sm"],
                                             order=BWD_ORDER.get(r["grid_order"], r["grid_order"]), pass_=pass_,
                                             role=role, stages=r.get("stages", "")))
                p["ms"].append(float(r["ms"]))
    out = []
    for p in pts.values():
        p["measured_s"] = statistics.median(p.pop("ms")) / 1e3
        out.append(p)
    return out


def sdpa_traits():
    """FlashAttention-2's tile per head dim, read from the kernel names ncu recorded."""
    traits = {}
    for path in SDPA_NCU:
        for r in read_csv(os.path.join(REPO, path)):
            kernel = r.get("kernel") or r.get("first_kernel", "")
            m = re.search(r"Flash_fwd_kernel_traits<(\d+), (\d+), (\d+)", kernel)
            if m:
                traits[int(m.group(1))] = (int(m.group(2)), int(m.group(3)))
    return traits


def ncu_points():
    out = []
    for path in SDPA_NCU:
        for r in read_csv(os.path.join(REPO, path)):
            if r.get("backend", "flash") != "flash":
                continue
            n, b, h, d, c = (int(x) for x in re.match(r"n(\d+)_b(\d+)_h(\d+)_d(\d+)_c(\d)", r["config"]).groups())
            out.append(dict(impl="sdpa:flash", dtype="bf16", head_dim=d, causal=c, seqlen=n, batch=b, heads=h,
                            heads_kv=heads_kv(dict(r, heads=h)), measured_s=int(r["gpu_time_ns"]) / 1e9, source=path, timing="ncu",
                            measured_read=int(r["dram_read_bytes"]), br="", bc="", ctas="", order="", pass_="fwd"))
    return out


def ioattn_ncu():
    """(impl, pass, dtype, d, causal, N, batch, heads, heads_kv) -> the row of the CANONICAL ncu runs
    (forward rows of FAST_IMPLS, backward rows of FAST_BWD; a row's pass is `fwd` where the column is
    absent, its heads_kv its heads)."""
    out = {}
    for tag in canonical("ncu") + canonical(HELDOUT_ROLE):
        if not os.path.exists(os.path.join(H200, tag, "ncu.csv")):
            continue
        for r in read_csv(os.path.join(H200, tag, "ncu.csv")):
            pass_ = r.get("pass") or "fwd"
            if ((pass_ == "fwd" and r["impl"] in FAST_IMPLS) or (pass_ == "bwd" and r["impl"] in FAST_BWD)) \
                    and r.get("dram_read_bytes"):
                key = (r["impl"], pass_, r["dtype"], int(r["head_dim"]), int(r["causal"]), int(r["seqlen"]),
                       int(r["batch"]), int(r["heads"]), heads_kv(r))
                out.setdefault(key, dict(r, source=rel(os.path.join(H200, tag, "ncu.csv"))))
    return out


def point_key(p):
    return (p["impl"], p["pass_"], p["dtype"], p["head_dim"], p["causal"], p["seqlen"], p["batch"], p["heads"],
            p["heads_kv"])


def ncu_bwd_points(ncu, have):
    """Backward rows of the ncu runs whose problem the bench has not timed (N = 16384): timed by ncu's
    gpu__time_duration (the kernels summed, clocks not locked), as the SDPA ncu rows are; the tile,
    occupancy and grid order those rows record. These runs predate the element-loop tuning (81a1882,
    3e02437); only bwd02's problem at N = 16384 is timed this way, and bwd02's ncu time is within 5 % of
    its tuned bench time at the N both measured (1k, 4k)."""
    out = []
    for key, r in ncu.items():
        if key[1] != "bwd" or key in have:
            continue
        out.append(dict(impl=key[0], dtype=key[2], head_dim=key[3], causal=key[4], seqlen=key[5], batch=key[6],
                        heads=key[7], heads_kv=key[8], measured_s=float(r["gpu_time_ms"]) / 1e3, source=r["source"], timing="ncu",
                        measured_read=int(float(r["dram_read_bytes"])), read_source=r["source"], br=r["br"],
                        bc=r["bc"], ctas=r["ctas_per_sm"], order=BWD_ORDER.get(r["grid_order"], r["grid_order"]),
                        pass_="bwd"))
    return out


def points():
    pts = (bench_points((("bench", FAST_IMPLS), (HELDOUT_ROLE, FAST_IMPLS), ("fast", FAST_ROLE_IMPLS),
                         ("fp8", FP8_IMPLS)))
           + bench_points((("bwd", FAST_BWD),), "bwd"))
    ncu = ioattn_ncu()
    for p in pts:
        r = ncu.get(point_key(p))
        if r is not None:
            p["measured_read"], p["read_source"] = int(float(r["dram_read_bytes"])), r["source"]
    pts += ncu_bwd_points(ncu, {point_key(p) for p in pts})
    pts += ncu_points()
    traits = sdpa_traits()
    for p in pts:
        p["train"] = (p["dtype"] == TRAIN_DTYPE and p["causal"] == TRAIN_CAUSAL and p["seqlen"] in TRAIN_N
                      and p["timing"] == "bench" and p.get("role") != HELDOUT_ROLE
                      and p["impl"] not in HELDOUT_ONLY_IMPLS and p["impl"] not in FP8_IMPLS)
        if p["impl"] == "sdpa:flash":
            if p["head_dim"] not in traits:
                sys.exit(f"expected_time.py: no FlashAttention-2 kernel traits recorded for d = {p['head_dim']}")
            p["br"], p["bc"] = traits[p["head_dim"]]
    train_shapes = {(p["pass_"],) + shape_key(p) for p in pts if p["train"]}
    for p in pts:
        sfx = " bwd" if p["pass_"] == "bwd" else ""
        p["set"] = ("training" + sfx if p["train"]
                    else FP8_SET if p["impl"] in FP8_IMPLS
                    else ("held-out" + sfx if (p["pass_"],) + shape_key(p) not in train_shapes else "excluded"))
        # The reads' own set: TRAINING DRAM's points fit the drift; every other read keeps its point's set.
        p["read_set"] = "training dram" if p["source"] in DRAM_TRAIN and "measured_read" in p else p["set"]
    pts.sort(key=lambda p: (p["set"] != "training", p["impl"], p["dtype"], p["head_dim"], p["causal"], p["seqlen"],
                            p["timing"]))
    return pts


def command(ioattn, p, catalog):
    cmd = [ioattn, "simulate", "--machine", "h200", "--strategy", "fa2", "--seqlen", str(p["seqlen"]),
           "--batch", str(p["batch"]), *heads_args(p["heads"], p["heads_kv"]), "--head-dim", str(p["head_dim"]),
           "--dtype", p["dtype"], "--br", str(p["br"]), "--bc", str(p["bc"]), "--pass", p["pass_"], "--json"]
    if catalog:
        cmd += ["--catalog", catalog]
    if p["causal"]:
        cmd.append("--causal")
    if p["impl"].startswith("ioattn:"):
        cmd += ["--kernel", p["impl"].split(":", 1)[1], "--ctas-per-cu", str(p["ctas"]), "--grid-order", p["order"]]
        if p.get("stages"):
            cmd += ["--stages", str(p["stages"])]
    else:
        cmd += ["--design", SDPA_DESIGN]
    return cmd


def model(ioattn, p, catalog=None):
    cmd = command(ioattn, p, catalog)
    return json.loads(run_cli(cmd, "expected_time.py"))


def log_error(ioattn, pts, catalog):
    return statistics.mean(abs(math.log(model(ioattn, p, catalog)["time_s"] / p["measured_s"])) for p in pts)


def read_log_error(ioattn, pts, catalog):
    return statistics.mean(abs(math.log(model(ioattn, p, catalog)["hbm_read_bytes"] / p["measured_read"])) for p in pts)


def fit(ioattn, train, params, tmp, error=log_error, scan=0):
    """Coordinate search (golden section per parameter in log space, three rounds) of `params` on the
    points `train` by `error`, in the temporary catalog copy `tmp` (its h200.json rewritten per trial).
    scan > 0: first a log-spaced scan of `scan` values per parameter, the golden section then searching
    between the best value's neighbours (for an error with steps, as the drift's thresholds give)."""
    path = os.path.join(tmp, "h200.json")
    j = json.load(open(path))
    vals = {k: j[k]["value"] if k in j else math.sqrt(lo * hi) for k, (lo, hi) in params.items()}

    def cost(v):
        for k, x in v.items():
            j[k] = {"value": x, "source": "trial"}
        with open(path, "w") as f:
            json.dump(j, f)
        return error(ioattn, train, tmp)

    g = (math.sqrt(5) - 1) / 2
    bounds = {k: (math.log(lo), math.log(hi)) for k, (lo, hi) in params.items()}
    if scan:
        for k, (a, b) in bounds.items():
            grid = [a + (b - a) * i / (scan - 1) for i in range(scan)]
            costs = [cost({**vals, k: math.exp(x)}) for x in grid]
            i = costs.index(min(costs))
            bounds[k] = (grid[max(0, i - 1)], grid[min(scan - 1, i + 1)])
            vals[k] = float(f"{math.exp(grid[i]):.3g}")
            print(f"scan {k}: best {vals[k]:.3g} (error {costs[i]:.4f})")
    for rnd in range(3):
        for k in params:
            a, b = bounds[k]
            c, d = b - g * (b - a), a + g * (b - a)
            fc = cost({**vals, k: math.exp(c)})
            fd = cost({**vals, k: math.exp(d)})
            for _ in range(14):
                if fc < fd:
                    b, d, fd = d, c, fc
                    c = b - g * (b - a)
                    fc = cost({**vals, k: math.exp(c)})
                else:
                    a, c, fc = c, d, fd
                    d = a + g * (b - a)
                    fd = cost({**vals, k: math.exp(d)})
            best = float(f"{math.exp((a + b) / 2):.3g}")
            if not scan or cost({**vals, k: best}) <= cost(vals):  # a scan's best is kept when it is lower
                vals[k] = best
        print(f"round {rnd + 1}: " + ", ".join(f"{k} = {v:.3g}" for k, v in vals.items())
              + f"; mean |log error| {cost(vals):.4f}")
    return vals


def describe(train, impls, what):
    names = sorted({p["source"] for p in train})
    dims = sorted({p["head_dim"] for p in train})
    return (f"{len(train)} {what} points: {TRAIN_DTYPE}, non-causal, N {' and '.join(map(str, TRAIN_N))}, "
            f"d {' and '.join(filter(None, (', '.join(map(str, dims[:-1])), str(dims[-1]))))}, "
            f"{', '.join(sorted({p['impl'].split(':')[-1] for p in train}))} ({', '.join(names)})")


def calibrate(ioattn, which="all"):
    """The forward parameters on the forward training points, then the backward parameters on the
    backward training points (the forward ones fixed); never a held-out point. which: all, fwd, ws (the
    warp-specialized design's own only), bwd or dram (the other sets' committed values kept); the drift
    (dram) is fitted first, on TRAINING DRAM's reads."""
    pts = points()
    train_dram = [p for p in pts if p.get("read_set") == "training dram"]
    train = [p for p in pts if p["set"] == "training" and p["impl"] not in WS_IMPLS]
    train_ws = [p for p in pts if p["set"] == "training" and p["impl"] in WS_IMPLS]
    train_bwd = [p for p in pts if p["set"] == "training bwd"]
    tmp = tempfile.mkdtemp()
    try:
        for f in os.listdir(CATALOG):
            if f.endswith(".json"):
                shutil.copy(os.path.join(CATALOG, f), tmp)
        vals_dram = (fit(ioattn, train_dram, CALIBRATED_DRAM, tmp, error=read_log_error, scan=121)
                     if which in ("all", "dram") else {})
        vals = fit(ioattn, train, CALIBRATED, tmp) if which in ("all", "fwd") else {}
        if which in ("all", "fwd", "ws"):  # the warp-specialized design's own, the forward ones fixed
            json.dump({**json.load(open(os.path.join(tmp, "h200.json"))),
                       **{k: {"value": v, "source": "fitted"} for k, v in vals.items()}},
                      open(os.path.join(tmp, "h200.json"), "w"))
            vals_ws = fit(ioattn, train_ws, CALIBRATED_WS, tmp)
        else:
            vals_ws = {}
        vals_bwd = fit(ioattn, train_bwd, CALIBRATED_BWD, tmp) if which in ("all", "bwd") else {}
    finally:
        shutil.rmtree(tmp)
    desc = {**{k: describe(train, FAST_IMPLS, "forward") for k in vals},
            **{k: describe(train_ws, WS_IMPLS, "warp-specialized forward")
               + "; the other forward parameters fixed"
               for k in vals_ws},
            **{k: describe(train_bwd, FAST_BWD, "backward") for k in vals_bwd},
            **{k: f"{len(train_dram)} DRAM-read points (mean |log(model / measured read)|): SDPA FlashAttention-2 "
                  f"forwards, bf16, N 16k-256k, d 64/128/256, causal or not ({', '.join(DRAM_TRAIN)})"
               for k in vals_dram}}
    vals = {**vals_dram, **vals, **vals_ws, **vals_bwd}
    catalog_file = os.path.join(CATALOG, "h200.json")
    j = json.load(open(catalog_file))
    what = {
        "calibrated_mma_sync_efficiency": "share of the dense bf16/fp16 rate an mma.sync attention loop issues at",
        "calibrated_wgmma_efficiency": "share of the dense bf16/fp16 rate a wgmma attention loop issues at",
        "calibrated_lds_scalar_efficiency": "share of the LDS bandwidth element-wise fragment reads from unpadded "
                                            "rows reach (bank conflicts; 2-byte lanes)",
        "calibrated_cta_fixed_s": "seconds per CTA wave not hidden by the tile loop (first tiles' latency, O and LSE "
                                  "stores)",
        "calibrated_ws_wgmma_efficiency": "share of the dense bf16/fp16 rate a warp-specialized wgmma loop (TMA "
                                          "producer warp, consumer warpgroups in ping-pong, no loads or spills in "
                                          "the consumers) issues at head dim 128",
        "calibrated_ws_wgmma_head_dim_exponent": "exponent g of the warp-specialized wgmma efficiency's head-dim "
                                                 "scaling, calibrated_ws_wgmma_efficiency x (d / 128)^g (at most 1): "
                                                 "a tile's MMA work per score element (2 d MACs) amortizes the "
                                                 "consumer's per-tile issue and wait bubbles",
        "calibrated_ring_stage_latency_s": "seconds a K/V ring stage is held beyond its tile's compute (load issue "
                                           "to data arrival and release), the Little's-law term of a ring of the "
                                           "launch's stages",
        "calibrated_bwd_mma_sync_efficiency": "share of the dense bf16/fp16 rate an mma.sync backward tile loop "
                                              "(dK/dV kernel or dQ pass) issues at",
        "calibrated_bwd_wgmma_efficiency": "share of the dense bf16/fp16 rate a wgmma backward tile loop (dK/dV "
                                           "kernel or dQ pass) issues at",
        "calibrated_atomic_adds_per_cu_per_clock": "fp32 atomic adds (dQ += dS K_j of the K/V-outer backward) "
                                                   "completed per SM per clock, on the tile loop's path",
        "calibrated_cta_drift_tiles_per_tile": "progress spread, in key tiles, that the co-resident CTAs of one K/V "
                                               "stream gather per tile their slot walked in the waves before (the "
                                               "L2 wave model's drift: a lockstep wave re-reads the share of the "
                                               "spread's live set that the L2 cannot hold)",
    }
    for k, v in vals.items():
        how = "" if k in CALIBRATED_DRAM else " (mean |log time error|)"
        j[k] = {"value": v, "source": f"calibrated: {what[k]}; fitted by simulator/validate/expected_time.py "
                                      f"--calibrate{how} on the training set only: {desc[k]}"}
    with open(catalog_file, "w") as f:
        f.write(json.dumps(j, indent=2) + "\n")
    print(f"wrote {rel(catalog_file)}: " + ", ".join(f"{k} = {v:.3g}" for k, v in vals.items()))
    # The same SM at the same clock (TRANSFER: the H100 is the H200's GH100 with other memory) takes
    # the H200's values, its source saying so; no other machine does.
    for name in TRANSFER:
        other = os.path.join(CATALOG, f"{name}.json")
        o = json.load(open(other))
        if o["arch"] != j["arch"] or o["clock_hz"]["value"] != j["clock_hz"]["value"]:
            sys.exit(f"expected_time.py: {name} is not the H200's SM at its clock; no transfer")
        for k, v in vals.items():
            o[k] = {"value": v, "source": f"transferred from the H200's calibration (same GH100 SM, arch and clock; "
                                          f"not measured on this machine): {what[k]}; "
                                          f"simulator/validate/expected_time.py --calibrate, training set: {desc[k]}"}
        with open(other, "w") as f:
            f.write(json.dumps(o, indent=2) + "\n")
        print(f"wrote {rel(other)} (transferred)")


def rows(ioattn):
    out = []
    for p in points():
        m = model(ioattn, p)
        err = 100.0 * (m["time_s"] - p["measured_s"]) / p["measured_s"]
        cerr = 100.0 * (m["ceiling_time_s"] - p["measured_s"]) / p["measured_s"]
        read = p.get("measured_read")
        t = m["expected_terms"]
        out.append(dict(
            set=p["set"], impl=p["impl"], pass_=p["pass_"], design=m["tiling"]["design"], dtype=p["dtype"], head_dim=p["head_dim"],
            causal=p["causal"], seqlen=p["seqlen"], batch=p["batch"], heads=p["heads"], heads_kv=p["heads_kv"],
            Br=p["br"], Bc=p["bc"], stages=p.get("stages", ""),
            ctas_per_cu=m["tiling"]["ctas_per_cu"], grid_order=p["order"] or "bh_major", timing=p["timing"],
            measured_time_s=f"{p['measured_s']:.6g}", expected_time_s=f"{m['time_s']:.6g}",
            ceiling_time_s=f"{m['ceiling_time_s']:.6g}", expected_error_pct=f"{err:.1f}",
            ceiling_error_pct=f"{cerr:.1f}", expected_bound=m["expected_bound"],
            matrix_issue_s=f"{t['matrix_issue']['seconds']:.4g}", exp_sfu_s=f"{t['exp_sfu']['seconds']:.4g}",
            fp32_vector_s=f"{t['fp32_vector']['seconds']:.4g}", overlap_hidden_s=f"{t['overlap_hidden']['seconds']:.4g}",
            lds_s=f"{t['lds']['seconds']:.4g}", wave_quantization_s=f"{t['wave_quantization']['seconds']:.4g}",
            cta_fixed_s=f"{t['cta_fixed']['seconds']:.4g}", ring_latency_s=f"{t['ring_latency']['seconds']:.4g}", hbm_s=f"{t['hbm']['seconds']:.4g}",
            l2_s=f"{t['l2']['seconds']:.4g}",
            measured_read_bytes=read if read is not None else "", model_read_bytes=m["hbm_read_bytes"],
            read_error_pct=f"{100.0 * (m['hbm_read_bytes'] - read) / read:.1f}" if read else "",
            read_set=p["read_set"] if read else "", l2_regime=m["l2_regime"] if read else "",
            source=p["source"]))
    return out


def summary(rs):
    def stats(sel, col):
        errs = [abs(float(r[col])) for r in sel if r[col] != ""]
        if not errs:
            return "no points", None, None
        return len(errs), statistics.mean(errs), max(errs)

    lines = ["", "| set | points | time MAPE | time max error | ceiling's MAPE | DRAM-read points | read MAPE | read max error |",
             "|---|---|---|---|---|---|---|---|"]
    for name in ("training", "held-out", FP8_SET, "training bwd", "held-out bwd"):
        sel = [r for r in rs if r["set"] == name]
        if not sel:
            continue
        n, mape, mx = stats(sel, "expected_error_pct")
        _, cm, _ = stats(sel, "ceiling_error_pct")
        rn, rm, rx = stats([r for r in sel if r["read_set"] == name], "read_error_pct")
        lines.append(f"| {name} | {n} | {mape:.1f} % | {mx:.1f} % | {cm:.1f} % | {rn} | "
                     + (f"{rm:.1f} % | {rx:.1f} % |" if rm is not None else "- | - |"))
    dram = [r for r in rs if r["read_set"] == "training dram"]
    if dram:
        rn, rm, rx = stats(dram, "read_error_pct")
        lines.append(f"| training DRAM (reads only; their times are held-out above) | - | - | - | - | {rn} | "
                     f"{rm:.1f} % | {rx:.1f} % |")
    lines.append("")
    lines.append("Held-out forward DRAM-read error by kernel (model / measured - 1; the L2 regime the model gave):")
    lines.append("")
    lines.append("| impl | points | read MAPE | read max error | worst point |")
    lines.append("|---|---|---|---|---|")
    def worst(sel, col):
        """(MAPE, max |error|, the row of the max) of column col over the rows sel."""
        errs = [abs(float(r[col])) for r in sel]
        return statistics.mean(errs), max(errs), sel[errs.index(max(errs))]

    for impl in FAST_IMPLS:
        sel = [r for r in rs if r["read_set"] == "held-out" and r["impl"] == impl and r["read_error_pct"] != ""]
        if not sel:
            continue
        mape, mx, w = worst(sel, "read_error_pct")
        lines.append(f"| {impl} | {len(sel)} | {mape:.1f} % | {mx:.1f} % | "
                     f"{w['dtype']} d={w['head_dim']} N={w['seqlen']} H={w['heads']}/{w['heads_kv']}"
                     f"{' causal' if w['causal'] == 1 else ''} ({w['read_error_pct']} %, {w['l2_regime']}) |")
    lines.append("")
    held = [r for r in rs if r["set"] == "held-out"]
    lines.append("Held-out time error by kernel (MAPE, max; the design the model used; forward, FP8 forward and "
                 "backward):")
    lines.append("")
    lines.append("| impl | design | points | MAPE | max error | worst point |")
    lines.append("|---|---|---|---|---|---|")
    for impl in FAST_IMPLS + FP8_IMPLS + FAST_BWD:
        sel = [r for r in rs if r["set"].startswith("held-out") and r["impl"] == impl and r["expected_error_pct"] != ""]
        if not sel:
            continue
        mape, mx, w = worst(sel, "expected_error_pct")
        lines.append(f"| {impl} | {sel[0]['design']} | {len(sel)} | {mape:.1f} % | {mx:.1f} % | "
                     f"{w['dtype']} d={w['head_dim']} N={w['seqlen']}{' causal' if w['causal'] == 1 else ''} "
                     f"({w['expected_error_pct']} %) |")
    cat = json.load(open(os.path.join(CATALOG, "h200.json")))
    lines.append("")
    lines.append("Calibrated on the forward training set (machines/h200.json): " + ", ".join(
        f"`{k}` {cat[k]['value']:.3g}" for k in CALIBRATED if k in cat) + "; on v08's rows of the forward "
        "training rule (the warp-specialized design's own, the others fixed): " + ", ".join(
        f"`{k}` {cat[k]['value']:.3g}" for k in CALIBRATED_WS if k in cat) + "; on the backward training set: "
        + (", ".join(f"`{k}` {cat[k]['value']:.3g}" for k in CALIBRATED_BWD if k in cat) or "none")
        + "; on the DRAM reads of TRAINING DRAM (" + ", ".join(DRAM_TRAIN) + "): "
        + (", ".join(f"`{k}` {cat[k]['value']:.3g}" for k in CALIBRATED_DRAM if k in cat) or "none") + ".")
    n, mape, mx = stats(held, "expected_error_pct")
    verdict = "meets" if mape <= TARGET_MAPE and mx <= TARGET_MAX else "misses"
    lines.append("")
    bn, bm, bx = stats([r for r in rs if r["set"] == "held-out bwd"], "expected_error_pct")
    bverdict = "meets" if bm is not None and bm <= TARGET_MAPE and bx <= TARGET_MAX else "misses"
    lines.append(f"Targets (held-out time MAPE <= {TARGET_MAPE:.0f} %, no point > {TARGET_MAX:.0f} %): the 16-bit "
                 f"forward model (set held-out) **{verdict}** them ({mape:.1f} % MAPE, worst {mx:.1f} %); the backward "
                 f"**{bverdict}** them ({bm:.1f} % MAPE, worst {bx:.1f} %, {bn} points). Excluded (a training shape measured "
                 f"again, e.g. in bf16): {sum(r['set'] == 'excluded' for r in rs)} points.")
    fp8 = [r for r in rs if r["set"] == FP8_SET]
    if fp8:
        fn, fm, fx = stats(fp8, "expected_error_pct")
        an, am, ax = stats(held + fp8, "expected_error_pct")
        fverdict = "meets" if fm <= TARGET_MAPE and fx <= TARGET_MAX else "misses"
        averdict = "meets" if am <= TARGET_MAPE and ax <= TARGET_MAX else "misses"
        slower = sum(float(r["expected_error_pct"]) < 0 for r in fp8)
        lines.append(f"FP8 forwards ({', '.join(i.split(':', 1)[1] for i in FP8_IMPLS)}; every point held-out, no "
                     f"parameter fitted on them): the model **{fverdict}** the targets ({fm:.1f} % MAPE, worst "
                     f"{fx:.1f} %, {fn} points; the kernel slower than the model at {slower} of {fn}). The forward "
                     f"held-out points of both sets together: **{averdict}** ({am:.1f} % MAPE, worst {ax:.1f} %, "
                     f"{an} points).")
    rn, rm, rx = stats([r for r in held if r["read_set"] == "held-out"], "read_error_pct")
    if rm is not None:
        rverdict = "meets" if rm <= TARGET_MAPE and rx <= TARGET_MAX else "misses"
        lines.append(f"Held-out forward DRAM reads (same targets): the L2 model **{rverdict}** them ({rm:.1f} % MAPE, "
                     f"worst {rx:.1f} %, {rn} points).")
    lines.append("")
    return "\n".join(lines)


def raw_kernels(path):
    """Per kernel (in launch order) of one ncu_raw file: name, gpu__time_duration (s), DRAM read bytes."""
    rows = {}
    with open(path) as f:
        for r in csv.DictReader(line for line in f if line.startswith('"')):
            k = rows.setdefault(int(r["ID"]), {"name": r["Kernel Name"].split("(")[0]})
            k[r["Metric Name"]] = float(r["Metric Value"].replace(",", ""))
    return [(k["name"], k["gpu__time_duration.sum"] / 1e9, k.get("dram__bytes_read.sum")) for _, k in sorted(rows.items())]


def bwd_kernel_rows(ioattn):
    """The backward points measured under ncu, kernel by kernel: the ncu_raw file of each CANONICAL ncu
    row of FAST_BWD (ncu_raw/bwd_<variant>_<N>.csv beside ncu.csv) against the model's kernels."""
    out = []
    for p in points():
        if p["set"] != "held-out bwd" or "read_source" not in p:
            continue
        raw = os.path.join(REPO, os.path.dirname(p["read_source"]), "ncu_raw",
                           f"bwd_{p['impl'].split(':', 1)[1]}_{p['seqlen']}.csv")
        if not os.path.exists(raw):
            continue
        measured = raw_kernels(raw)
        m = model(ioattn, p)
        if len(measured) != len(m["kernels"]):
            sys.exit(f"expected_time.py: {rel(raw)} has {len(measured)} kernels, the model {len(m['kernels'])}")
        for (name, t, rd), k in zip(measured, m["kernels"]):
            terms = {x: v["seconds"] for x, v in k["expected_terms"].items()}
            top = sorted(((v, x) for x, v in terms.items() if x not in ("launch", "ceiling_floor")), reverse=True)[:3]
            out.append(dict(impl=p["impl"], seqlen=p["seqlen"], kernel=k["name"], measured_s=t, expected_s=k["time_s"],
                            measured_read=rd, model_read=k["hbm"]["read"], bound=k["expected_bound"],
                            top=", ".join(f"{x} {v * 1e3:.2f}" for v, x in top), source=rel(raw)))
    return out


def bwd_kernel_table(kr):
    lines = ["", "Backward kernel by kernel (the ncu runs' per-kernel gpu__time_duration and DRAM reads, ncu_raw/ "
             "beside each ncu.csv; bf16, d = 128, batch x N = 16384, 16 heads, non-causal). These runs predate the "
             "backward's element-loop tuning (81a1882, 3e02437): their reads stand (the tuning changed instructions, "
             "not traffic), their times are of the older loops (the whole backward under ncu against the tuned "
             "bench time of the same problem: bwd02 1.03-1.05x, bwd02b 1.14-1.16x, bwd03 1.6-1.8x, bwd03b "
             "2.0-2.1x), so the time columns show where the older loops' time went, not the model's error.", "",
             "| impl | N | kernel | measured ms | expected ms | measured / expected | measured read | model read | "
             "expected bound | largest terms (ms) |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in kr:
        rd = f"{r['measured_read'] / 1e9:.3f} GB" if r["measured_read"] is not None else "-"
        lines.append(f"| {r['impl']} | {r['seqlen']} | {r['kernel']} | {r['measured_s'] * 1e3:.3f} | "
                     f"{r['expected_s'] * 1e3:.3f} | {r['measured_s'] / r['expected_s']:.2f} | {rd} | "
                     f"{r['model_read'] / 1e9:.3f} GB | {r['bound']} | {r['top']} |")
    groups = (("the streaming kernels (preprocess, dQ convert)", ("bwd_preprocess", "dq_convert")),
              ("the K/V-outer kernels with dQ atomics", ("bwd_main",)),
              ("the K/V-outer kernels without (dK, dV only)", ("bwd_dkdv",)),
              ("the separate dQ passes", ("bwd_dq",)))
    parts = []
    for what, names in groups:
        q = [r["measured_s"] / r["expected_s"] for r in kr if r["kernel"] in names]
        if q:
            parts.append(f"{what} {min(q):.2f}-{max(q):.2f}")
    lines.append("")
    lines.append("Measured (older loops) / expected time: " + "; ".join(parts) + ". The error was in the tile "
                 "loops, not in the traffic (the DRAM reads above): the backward terms that address it are named in "
                 "the text below.")
    lines.append("")
    return "\n".join(lines)


def render_csv(rs):
    return derived_csv("python3 simulator/validate/expected_time.py --ioattn <build>/apps/ioattn "
                       "(model: machines/h200.json)", rs)


def fp8_diagnosis(ioattn):
    """Where the FP8 twins miss: per run, FP8 rung and head dim, the signed and absolute mean error, and
    the measured time over v08's bf16 time of the same problem in the same run against the model's ratio
    (medians over the problems both timed)."""
    runs = [("CANONICAL fp8 (" + ", ".join(canonical("fp8")) + ")", canonical("fp8"), FP8_IMPLS)]
    for tag, impl in FP8_PROMOTE_STUDIES:
        study = os.path.join(H200, tag)
        for f in ("env.txt", os.path.join("fp8", "bench.csv")):
            if not os.path.exists(os.path.join(study, f)):
                sys.exit(f"expected_time.py: the FP8 promotion study has no {f} ({rel(study)})")
        env = [line.strip() for line in open(os.path.join(study, "env.txt")) if line.strip().startswith("IOATTN_")]
        runs.append((f"{tag} ({', '.join(env) or 'no IOATTN_ variable'}; not CANONICAL)", [os.path.join(tag, "fp8")],
                     (impl,)))
    lines = ["FP8 diagnosis (not a validation set): each FP8 row against the bf16 row of v08 of the same problem "
             "timed in the same run (bench_sdpa.py --dtypes fp8_e4m3; the FP8 rows with the L2 flushed between "
             "replays, v08's not), and v09 without the promotion of S (its study run) against the same twin. "
             "Ratios: the median over the problems of FP8 time / v08 bf16 time, measured and modeled.", "",
             "| run | impl | d | points | mean error | MAPE | measured FP8 / v08 bf16 | model FP8 / v08 bf16 |",
             "|---|---|---|---|---|---|---|---|"]

    def key(p):  # the problem, whatever the kernel and dtype
        return (p["head_dim"], p["causal"], p["seqlen"], p["batch"], p["heads"], p["heads_kv"])

    def ratio(x):
        return f"{statistics.median(x):.2f}" if x else "-"

    means = {}
    for label, tags, impls in runs:
        pts = bench_points((("fp8", impls + (FP8_BF16_PEER,)),), tags_of=lambda _role, t=tags: t)
        peer = {key(p): p for p in pts if p["impl"] == FP8_BF16_PEER}
        for impl in impls:
            for d in sorted({p["head_dim"] for p in pts if p["impl"] == impl}):
                sel = [p for p in pts if p["impl"] == impl and p["head_dim"] == d]
                errs, meas, mod = [], [], []
                for p in sel:
                    t = model(ioattn, p)["time_s"]
                    errs.append(100.0 * (t - p["measured_s"]) / p["measured_s"])
                    q = peer.get(key(p))
                    if q is not None:
                        meas.append(p["measured_s"] / q["measured_s"])
                        mod.append(t / model(ioattn, q)["time_s"])
                means[(label, impl, d)] = statistics.mean(errs)
                lines.append(f"| {label} | {impl} | {d} | {len(sel)} | {statistics.mean(errs):+.1f} % | "
                             f"{statistics.mean(abs(e) for e in errs):.1f} % | {ratio(meas)} | {ratio(mod)} |")
    canon, promo = runs[0][0], runs[1][0]

    def by_d(label, impl):
        return ", ".join(f"{means[k]:+.1f} %" for k in sorted(means) if k[:2] == (label, impl))

    lines += ["", "What the FP8 twins likely lack (hypotheses: no term added, nothing fitted on these rows): "
              "(1) the promotion of S: v09 and v10 compute S = Q K^T in d / 32 parts of k = 32, each into a fresh "
              "accumulator added to S in fp32 on the CUDA cores (d / 32 - 1 adds per score); v09 waits for each "
              "part with nothing queued behind it, v10 pipelines the parts (kernels/fp8_wgmma_common.hpp), and the "
              "twin models one product at the FP8 rate. v09's mean error at d "
              + ", ".join(str(k[2]) for k in sorted(means) if k[:2] == (canon, "ioattn:v09_fp8_wgmma"))
              + f": {by_d(canon, 'ioattn:v09_fp8_wgmma')} with the promotion, {by_d(promo, 'ioattn:v09_fp8_wgmma')} "
              "without it (the study run). (2) The FP8 rate: the twin runs FP8 at "
              "the efficiency its instruction and design were fitted to on 16-bit loops; the measured FP8 / v08 "
              "bf16 ratios above are what the kernels gained from e4m3, the modeled ones what that assumption "
              "expects. " + fp8_rate_sentence(), ""]
    return "\n".join(lines)


def fp8_rate_sentence():
    """What the catalog's measured FP8 GEMM rate says beside the datasheet's, from machines/h200.json."""
    cat = json.load(open(os.path.join(CATALOG, "h200.json")))
    fp8, bf16 = cat.get("measured_matrix_fp8"), cat.get("measured_matrix_bf16")
    if not fp8 or not bf16:
        return ("The catalog has no measured FP8 GEMM rate (measured_matrix_fp8) to separate the instruction's "
                "share from the loop's (P's conversion to e4m3, the descales, the V transpose pass).")
    sheet = cat["matrix_fp8"]["value"] / cat["matrix_bf16"]["value"]
    r = fp8["value"] / bf16["value"]
    return (f"The catalog's measured FP8 GEMM rate (measured_matrix_fp8, cuBLAS e4m3 with fast accumulation: "
            f"{fp8['value'] / 1e12:.0f} TFLOP/s) is {r:.2f}x its measured bf16 GEMM, where the datasheet rates "
            f"are {sheet:.2f}x. The instruction efficiencies were fitted against the datasheet 16-bit rates, so the "
            f"twin prices FP8 at the datasheet bf16 rate times the measured ratio (matrix_issue {sheet / r:.2f}x "
            f"what matrix_fp8 gives; nothing fitted on the FP8 rows); the rest of the gap is the loop's (P's "
            f"conversion to e4m3, the descales, the V transpose pass, the promotion above).")


def render_readme(rs, kr, fp8):
    text = replace_block(open(README).read(), BEGIN, END, summary(rs) + fp8, f"expected_time.py: {rel(README)}")
    return replace_block(text, BWD_BEGIN, BWD_END, bwd_kernel_table(kr), f"expected_time.py: {rel(README)}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ioattn", required=True, help="the ioattn CLI (build/apps/ioattn)")
    ap.add_argument("--check", action="store_true", help="compare with the committed CSV and README block")
    ap.add_argument("--calibrate", nargs="?", const="all", choices=("all", "fwd", "ws", "bwd", "dram"),
                    help="refit the calibrated_* entries of h200.json first (all, or only the forward, the "
                         "warp-specialized design's own (ws: the other forward ones fixed), backward or "
                         "DRAM-read (drift) ones)")
    args = ap.parse_args()
    if not os.access(args.ioattn, os.X_OK):
        sys.exit(f"expected_time.py: --ioattn {args.ioattn} is not an executable")
    if args.calibrate and args.check:
        sys.exit("expected_time.py: --check never refits; give one of --calibrate, --check")
    if args.calibrate:
        calibrate(args.ioattn, args.calibrate)
    rs = rows(args.ioattn)
    new_csv, new_readme = render_csv(rs), render_readme(rs, bwd_kernel_rows(args.ioattn), fp8_diagnosis(args.ioattn))
    if not args.check:
        open(OUT_CSV, "w").write(new_csv)
        open(README, "w").write(new_readme)
        print(f"wrote {rel(OUT_CSV)} ({len(rs)} rows) and the {BLOCK} block of {rel(README)}")
        print(summary(rs))
        return 0
    failed = False
    old = open(OUT_CSV).read() if os.path.exists(OUT_CSV) else ""
    if old != new_csv:
        failed = True
        old_lines = set(old.splitlines())
        print(f"{rel(OUT_CSV)} differs from the model now; rows that changed (new):")
        for line in new_csv.splitlines():
            if line not in old_lines:
                print("  " + line)
    if open(README).read() != new_readme:
        failed = True
        print(f"{rel(README)}: the {BLOCK} block differs from the model now")
    if failed:
        print("rerun: python3 simulator/validate/expected_time.py --ioattn <build>/apps/ioattn")
        return 1
    print(f"{rel(OUT_CSV)}: {len(rs)} rows and the README block equal the model")
    return 0


if __name__ == "__main__":
    sys.exit(main())

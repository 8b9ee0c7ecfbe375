"""DRAM and L2 bytes of every ioattn variant from Nsight Compute, one forward (or backward) each.

    PYTHONPATH=python IOATTN_CAPI=... python3 experiments/gpu/ncu_collect.py --ioattn build-gpu/carry/ioattn
        --out DIR [--seqlens 1024,4096,16384] [--variants v05_fa2_fast,...] [--time-cap 300]
        [--passes fwd,bwd] [--bwd-variants bwd02_fa2_mma,...] [--head-dims 128] [--heads H]
        [--heads-kv HKV] [--causal 0,1] [--peers sdpa:flash,...] [--preset heldout] [--list]

For each variant and N: `ncu --clock-control none --profile-from-start off --print-units base --csv
--metrics dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,gpu__time_duration.sum
ioattn run --kernel V ... --profile` (one forward between cudaProfilerStart/Stop; all the kernels
of that forward are summed, e.g. v01's three passes). Config (the defaults): bf16, d = 128, 16
heads, batch * N = 16384, non-causal. Other problems: --head-dims (heads = 2048 / d unless
--heads), --heads-kv (GQA/MQA: `--heads-q H --heads-kv HKV` on the ioattn command line), --causal
0,1 (`--causal`, FLOPs halved), any N >= 1 with batch = max(1, 16384 // N) (so N = 32k and 64k run
at batch 1). Rows carry heads (the query heads) and, appended after the older columns, heads_kv
and first_kernel (the first kernel's full name as ncu printed it, template arguments included).
ncu_raw/ names: <variant>_<N>.csv as before for the default problem, with _d<d>, _c1, _hkv<HKV>
appended for others; a peer's file is named by its impl (sdpa_flash_<N>..., peer_triton_fa2_<N>...).

--peers sdpa:flash,sdpa:cudnn,peer:triton_fa2 profiles those forwards too, each through
experiments/gpu/peers/profile_one.py (the same BSHD inputs as bench_sdpa.py, three warm-up calls,
one call between cudaProfilerStart/Stop); their config columns stay empty and config_check says
"not checked"; a peer that refuses the problem gets `refused: ...` in `error`.
--preset heldout profiles bench_sdpa.py's held-out list (its HELDOUT: d 256 at N 2k/8k for v05
and SDPA flash; GQA 32q/8kv at d 128, N 4k/16k for v05, v06 and SDPA flash; N 32k/64k at d 128
for v06 and SDPA flash; bf16, causal 0 and 1): 28 profiles, about 150-200 s (an estimate; not yet
run). --list prints the profiles the flags select and exits (no ncu, no library).

Metrics, named for what they are (bytes are 1-byte units, element size 2 for bf16):
  compulsory_read_bytes   Q + K + V, each read once          = 3 * B*N*H*d * 2 (MHA;
                          GQA: (B*N*H*d + 2 * B*N*Hkv*d) * 2)
  compulsory_write_bytes  O + LSE, each written once         = B*N*H*d * 2 + B*H*N * 4
  dram_read_over_compulsory_read    dram__bytes_read.sum  / compulsory_read_bytes
  dram_write_over_compulsory_write  dram__bytes_write.sum / compulsory_write_bytes
  flop_per_dram_byte      FA2-convention FLOPs (4 B H N^2 d, halved when causal) / (DRAM read + write bytes)
DRAM write can fall below the compulsory write (0.89-0.98 in earlier runs), presumably because
lines of O still dirty in the L2 when the kernel ends are written back after the profiled range
(not established).
Every row carries the variant's launch configuration (ioattn.kernel_config: br, bc, stages,
threads, smem_bytes, ctas_per_sm, grid_x/y/z, grid_order, launches, splits), the block and grid
ncu saw for the first kernel launched (ncu_block, ncu_grid) and whether they agree
(config_check: "matches ncu" or "MISMATCH: ...").
A point not profiled (v01 above --naive-max, --time-cap reached) is a row with its reason in
`error`, never dropped. Writes DIR/ncu.csv (tidy, rewritten after every row) and
DIR/ncu_raw/<variant>_<N>.csv (ncu's own output).

--passes (default fwd): `fwd` profiles the forward variants as above (rows with pass = fwd);
`bwd` profiles every registered backward variant (ioattn.backward_kernels(), or --bwd-variants):
`ioattn run --backward --bwd-kernel B ... --profile` runs the forward B pairs with and one
backward on its O and LSE, and only the backward's launches lie between cudaProfilerStart/Stop
(BackwardRun::profile_once), so with --profile-from-start off ncu sees the backward's kernels and
none of the forward's: the preprocess (D = rowsum(dO o O), dQ accumulator zeroed), the K/V-outer
kernel, and the dQ convert (atomic dQ) or the Q-outer dQ pass (separate dQ). Their metrics are
summed into one row with pass = bwd; `ncu_kernel_names` lists the kernels ncu saw, in launch
order ('|'-separated, names without template arguments), so a reader can check that no forward
kernel is in the sum, and `kernels` must equal the registry's `launches`. Compulsory bytes of a
backward (bf16, MHA; with GQA K, V, dK, dV have Hkv heads):
  compulsory_read_bytes   Q, K, V, O, dO once, and the fp32 LSE  = 5 * B*N*H*d * 2 + B*H*N * 4
  compulsory_write_bytes  dQ, dK, dV once                        = 3 * B*N*H*d * 2
  flops                   FA2 convention, backward = 2.5 x forward = 10 B H N^2 d
(the D vector and the fp32 dQ accumulator are workspace, not compulsory). A backward row also
carries dq_mode, deterministic and forward_kernel (the registry's pairs_with); a forward row has
them empty. The config columns of a backward row are ioattn.backward_config's (main kernel: the
K/V-outer one; `launches` every kernel of the backward).
"""
import argparse
import csv
import io
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
METRICS = ["dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_bytes.sum", "gpu__time_duration.sum"]
CONFIG_COLS = ["br", "bc", "stages", "threads", "smem_bytes", "ctas_per_sm", "grid_x", "grid_y", "grid_z",
               "grid_order", "launches", "splits"]


PASSES = ("fwd", "bwd")


def compulsory(b, n, h, d, elem=2, pass_="fwd", hkv=None):
    """(read, write) bytes of one pass. fwd: Q, K, V read once; O and the fp32 LSE written once.
    bwd: Q, K, V, O, dO and the fp32 LSE read once; dQ, dK, dV written once. K, V, dK, dV have
    hkv heads (GQA; default h), Q, O, dO, dQ and the LSE h."""
    t = b * n * h * d * elem
    kv = b * n * (hkv or h) * d * elem
    if pass_ == "bwd":
        return 3 * t + 2 * kv + 4 * b * h * n, t + 2 * kv
    return t + 2 * kv, t + 4 * b * h * n


def fwd_flops(b, h, n, d, causal=False):
    f = 4.0 * b * h * n * n * d
    return f / 2 if causal else f


def pass_flops(b, h, n, d, causal=False, pass_="fwd"):
    """FA2-convention FLOPs of one pass: the backward is 2.5x the forward."""
    return fwd_flops(b, h, n, d, causal) * (2.5 if pass_ == "bwd" else 1.0)


def short_kernel_name(name):
    """'void ns::k<128, true>(Params)' -> 'ns::k': the function name without return type,
    template arguments or parameters."""
    name = (name or "").strip()
    depth, out = 0, []
    for ch in name:  # drop <...> (nested) and stop at the parameter list
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(0, depth - 1)
        elif ch == "(" and depth == 0:
            break
        elif depth == 0:
            out.append(ch)
    words = "".join(out).split()
    return words[-1] if words else ""


def ratios(read, write, comp_read, comp_write, flops):
    """The derived columns of one profiled row."""
    return dict(dram_read_over_compulsory_read=read / comp_read, dram_write_over_compulsory_write=write / comp_write,
                flop_per_dram_byte=flops / (read + write) if read + write > 0 else None)


def parse_ncu_csv(out, names=None, launches=None, full=None):
    """({metric: sum over every profiled kernel}, number of kernels, (block, grid) of the first
    kernel launched, as ncu prints them: "(x, y, z)") from ncu --csv output. With a list `names`,
    the kernels' names (short_kernel_name) are appended to it in launch (ID) order; with a list
    `launches`, every kernel's (block, grid); with a list `full`, the first kernel's full name."""
    start = out.find('"ID"')
    if start < 0:
        return None, 0, None
    sums, ids, first, kname, kfull = {m: 0.0 for m in METRICS}, set(), {}, {}, {}
    for r in csv.DictReader(io.StringIO(out[start:])):
        if r.get("Metric Name") in sums:
            sums[r["Metric Name"]] += float(r["Metric Value"].replace(",", ""))
            ids.add(r["ID"])
            first.setdefault(int(r["ID"]), (r.get("Block Size", ""), r.get("Grid Size", "")))
            kname.setdefault(int(r["ID"]), short_kernel_name(r.get("Kernel Name", "")))
            kfull.setdefault(int(r["ID"]), (r.get("Kernel Name") or "").strip())
    if names is not None:
        names += [kname[i] for i in sorted(kname)]
    if launches is not None:
        launches += [first[i] for i in sorted(first)]
    if full is not None and kfull:
        full.append(kfull[min(kfull)])
    return sums, len(ids), (first[min(first)] if first else None)


def dims(text):
    """'(128, 1, 1)' -> (128, 1, 1); None for anything else."""
    try:
        v = tuple(int(x) for x in text.strip().strip("()").split(","))
        return v if len(v) == 3 else None
    except (AttributeError, ValueError):
        return None


def config_check(row, launch):
    """Does the registry's configuration (threads, grid of the main kernel) match the kernel
    `launch` = (block, grid) ncu saw? For a forward that is the first one launched (the main
    kernel: v01's scores pass, v03b's partial pass); for a backward the one of its kernels that
    matches (the K/V-outer kernel comes after the preprocess)."""
    if launch is None or row["threads"] in ("", None):
        return "not checked"
    block, grid = dims(launch[0]), dims(launch[1])
    want_grid = tuple(int(row[c]) for c in ("grid_x", "grid_y", "grid_z"))
    if block is None or grid is None:
        return "not checked (ncu printed no block/grid)"
    if block[0] * block[1] * block[2] == int(row["threads"]) and grid == want_grid:
        return "matches ncu"
    return f"MISMATCH: registry threads {row['threads']} grid {want_grid}, ncu block {block} grid {grid}"


def save(out_dir, rows):
    with open(os.path.join(out_dir, "ncu.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)


def parse_list(text, what):
    return [v for v in (text or "").split(",") if v]


def new_row(impl, pass_, b, n, heads, d, dtype, causal=False, heads_kv=None):
    """One ncu.csv row before profiling: the problem, the pass's compulsory bytes and FLOPs."""
    comp_read, comp_write = compulsory(b, n, heads, d, pass_=pass_, hkv=heads_kv)
    row = dict(impl=impl, dtype=dtype, head_dim=d, causal=int(bool(causal)), seqlen=n, batch=b, heads=heads,
               kernels=0, dram_read_bytes=None, dram_write_bytes=None, l2_bytes=None, gpu_time_ms=None,
               compulsory_read_bytes=comp_read, compulsory_write_bytes=comp_write,
               flops=pass_flops(b, heads, n, d, causal=bool(causal), pass_=pass_),
               dram_read_over_compulsory_read=None, dram_write_over_compulsory_write=None,
               flop_per_dram_byte=None)
    row.update({c: "" for c in CONFIG_COLS})
    row.update(ncu_block="", ncu_grid="", config_check="", error="")
    # Columns added with the backward (after the forward's, so the forward's keep their order).
    row.update({"pass": pass_, "ncu_kernel_names": "", "dq_mode": "", "deterministic": "", "forward_kernel": ""})
    # Columns added with GQA and the peers: the key/value heads (`heads` is the query heads) and the
    # first kernel's full name as ncu printed it (a peer's tile is in its template arguments).
    row.update(heads_kv=heads_kv or heads, first_kernel="")
    return row


def profile(row, cmd, raw_path, limit):
    """Run ncu `cmd`, write its output to raw_path, fill the row's metrics (or its error)."""
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=limit)
        # ncu's "==PROF== Connected to process N (<absolute path>)" status lines name the machine's
        # folders and carry no data: they are left out of the raw report (the CSV rows are kept whole).
        out = "".join(ln for ln in res.stdout.splitlines(keepends=True) if not ln.startswith("==PROF=="))
        err = "".join(ln for ln in res.stderr.splitlines(keepends=True) if not ln.startswith("==PROF=="))
        with open(raw_path, "w") as f:
            f.write(out + "\n# stderr\n" + err[-2000:])
        names, launches, full = [], [], []
        sums, kernels, launch = parse_ncu_csv(res.stdout, names, launches, full)
        if row["pass"] == "bwd":
            # The registry's config describes the backward's main (K/V-outer) kernel, launched
            # after the preprocess: compare with the kernel that matches, else the second one.
            checks = [config_check(row, lc) for lc in launches]
            hit = [i for i, c in enumerate(checks) if c == "matches ncu"]
            launch = launches[hit[0] if hit else min(1, len(launches) - 1)] if launches else launch
        if res.returncode != 0 or sums is None or kernels == 0:
            tail = (res.stderr or res.stdout).strip().splitlines()[-1:]
            refused = [ln for ln in res.stderr.splitlines() if " refused: " in ln]  # peers/profile_one.py, rc 2
            if res.returncode == 2 and refused:
                raise RuntimeError("refused: " + refused[-1].split(" refused: ", 1)[1][:180])
            raise RuntimeError(f"ncu rc={res.returncode}, {kernels} kernels: {tail}")
        read, write = sums["dram__bytes_read.sum"], sums["dram__bytes_write.sum"]
        row.update(kernels=kernels, dram_read_bytes=read, dram_write_bytes=write,
                   l2_bytes=sums["lts__t_bytes.sum"], gpu_time_ms=sums["gpu__time_duration.sum"] * 1e-6,
                   ncu_block=launch[0], ncu_grid=launch[1], config_check=config_check(row, launch),
                   ncu_kernel_names="|".join(names), first_kernel=(full or [""])[0][:300],
                   **ratios(read, write, row["compulsory_read_bytes"], row["compulsory_write_bytes"], row["flops"]))
        if row["pass"] == "bwd" and str(row["launches"]) not in ("", str(kernels)):
            row["config_check"] += f"; MISMATCH: registry launches {row['launches']}, ncu saw {kernels} kernels"
    except subprocess.TimeoutExpired:
        row["error"] = f"ncu timed out after {limit:.0f} s"
    except (RuntimeError, OSError) as e:
        row["error"] = str(e)[:200]


PEERS = ("sdpa:flash", "sdpa:cudnn", "peer:triton_fa2")
PEER_TARGET = os.path.join(os.path.dirname(os.path.abspath(__file__)), "peers", "profile_one.py")


def exe_path(path):
    """`path` relative to the working directory when it lies below it (with a ./ so exec finds it),
    else unchanged: ncu writes the profiled command line into every raw report."""
    rel = os.path.relpath(os.path.abspath(path))
    return path if rel.startswith("..") else (rel if os.sep in rel else "./" + rel)


class Point:
    """One problem to profile: N, batch = max(1, 16384 // N), heads_q, heads_kv, d, causal, and the
    impls there (None: every one the flags select)."""

    def __init__(self, n, h, hkv, d, causal, only=None):
        self.n, self.b, self.h, self.hkv, self.d, self.causal, self.only = n, max(1, 16384 // n), h, hkv, d, causal, only


def heldout_points():
    """bench_sdpa.py's --preset heldout list (one definition), both causal settings."""
    from bench_sdpa import HELDOUT
    pts = []
    for ds, ns, h, hkv, impls in HELDOUT:
        for d in ds:
            for n in ns:
                hq = h or max(1, 2048 // d)
                for causal in (0, 1):
                    pts.append(Point(n, hq, hkv or hq, d, causal, set(impls)))
    return pts


def parse_ints(text, flag, allowed=None):
    try:
        vals = [int(x) for x in (text or "").split(",") if x]
    except ValueError:
        raise SystemExit(f"ncu_collect.py: {flag} wants comma-separated integers, got '{text}'") from None
    if not vals or any(v < 0 if allowed else v < 1 for v in vals) or (allowed and any(v not in allowed for v in vals)):
        raise SystemExit(f"ncu_collect.py: {flag} wants " + (f"values in {sorted(allowed)}" if allowed else
                                                              "integers >= 1") + f", got '{text}'")
    return vals


def problem_flags(p, dtype):
    """The ioattn CLI's problem flags (MHA: --heads; GQA: --heads-q and --heads-kv)."""
    heads = ["--heads", str(p.h)] if p.hkv == p.h else ["--heads-q", str(p.h), "--heads-kv", str(p.hkv)]
    return (["--batch", str(p.b)] + heads + ["--seqlen", str(p.n), "--head-dim", str(p.d), "--dtype", dtype]
            + (["--causal"] if p.causal else []) + ["--profile"])


def raw_name(impl, pass_, p):
    """ncu_raw/ file of one profile: <variant>_<N>.csv (bwd_<variant>_<N>.csv) for the default
    problem (d 128, MHA, non-causal) as before; other problems add _d<d>, _c1, _hkv<Hkv>."""
    stem = impl.replace("ioattn:", "", 1).replace(":", "_")  # a peer keeps its prefix: sdpa_flash
    extra = (f"_d{p.d}" if p.d != 128 else "") + ("_c1" if p.causal else "") + (f"_hkv{p.hkv}" if p.hkv != p.h else "")
    return (f"bwd_{stem}_{p.n}" if pass_ == "bwd" else f"{stem}_{p.n}") + extra + ".csv"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ioattn", required=True, help="the ioattn CLI (build-gpu/carry/ioattn)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--seqlens", default="1024,4096,16384", help="N, any >= 1; batch = max(1, 16384 // N)")
    ap.add_argument("--head-dims", default="128", help="comma list of d (default 128)")
    ap.add_argument("--heads", type=int, default=0, help="query heads (default 2048 / d: 16 at d = 128)")
    ap.add_argument("--heads-kv", type=int, default=0, help="key/value heads, dividing --heads (default: = heads)")
    ap.add_argument("--causal", default="0", help="0, 1 or 0,1 (default 0: non-causal)")
    ap.add_argument("--variants", default="", help="forward variants, comma list (default: every registered one)")
    ap.add_argument("--peers", default="", help=f"forward peers to profile too, comma list of {', '.join(PEERS)} "
                                                "(default none; via peers/profile_one.py)")
    ap.add_argument("--preset", choices=["heldout"], default=None,
                    help="heldout: bench_sdpa.py's held-out points (d256, GQA 32q/8kv, N 32k/64k; fwd, bf16, "
                         "both causal; v05/v06 and SDPA flash; ~150 s); fixes the problems, variants and peers")
    ap.add_argument("--list", action="store_true", help="print the profiles the flags select and exit (no ncu)")
    ap.add_argument("--python", default=sys.executable, help="python that runs the peers' target (default: this one)")
    ap.add_argument("--passes", default="fwd", help="fwd, bwd or fwd,bwd (default fwd)")
    ap.add_argument("--bwd-variants", default="",
                    help="backward variants, comma list (default: every registered backward)")
    ap.add_argument("--naive-max", type=int, default=4096, help="largest N for v01_naive (its N^2 buffers under replay)")
    ap.add_argument("--timeout", type=int, default=120, help="cap (s) on one profile")
    ap.add_argument("--time-cap", type=float, default=0, help="start no profile after this many seconds (0: none)")
    args = ap.parse_args(argv)
    seqlens = parse_ints(args.seqlens, "--seqlens")
    dims = parse_ints(args.head_dims, "--head-dims")
    causals = parse_ints(args.causal, "--causal", allowed={0, 1})
    if args.heads < 0 or args.heads_kv < 0:
        raise SystemExit("ncu_collect.py: --heads and --heads-kv must be >= 1")
    passes = parse_list(args.passes, "passes")
    if not passes or any(p not in PASSES for p in passes) or len(set(passes)) != len(passes):
        raise SystemExit(f"ncu_collect.py: --passes wants a comma list of {', '.join(PASSES)} (each once), "
                         f"got '{args.passes}'")
    peers = parse_list(args.peers, "peers")
    unknown = [p for p in peers if p not in PEERS]
    if unknown:
        raise SystemExit(f"ncu_collect.py: unknown peer(s) {', '.join(unknown)} (known: {', '.join(PEERS)})")
    if args.preset:
        given = [f for f, v in (("--seqlens", args.seqlens != "1024,4096,16384"), ("--head-dims", args.head_dims != "128"),
                                ("--heads", args.heads), ("--heads-kv", args.heads_kv), ("--causal", args.causal != "0"),
                                ("--variants", args.variants), ("--peers", args.peers), ("--passes", args.passes != "fwd"))
                 if v]
        if given:
            raise SystemExit(f"ncu_collect.py: --preset {args.preset} fixes the problems; drop {', '.join(given)}")
        points = heldout_points()
    else:
        points = []
        for d in dims:
            h = args.heads or max(1, 2048 // d)
            hkv = args.heads_kv or h
            if h % hkv:
                raise SystemExit(f"ncu_collect.py: --heads-kv ({hkv}) must divide the query heads ({h}, at d = {d})")
            points += [Point(n, h, hkv, d, c) for n in seqlens for c in causals]
    if args.preset:
        names = sorted({i for p in points for i in p.only})
        peers = [i for i in names if i in PEERS]
        args.variants = ",".join(i.split(":", 1)[1] for i in names if i.startswith("ioattn:"))
    if args.list:
        for pass_ in passes:
            for p in points:
                impls = ([] if pass_ == "bwd" else list(peers)) + [
                    "ioattn:" + v for v in ((args.variants or "<every registered forward>") if pass_ == "fwd"
                                            else (args.bwd_variants or "<every registered backward>")).split(",")]
                if p.only is not None:
                    impls = [i for i in impls if i in p.only]
                print(f"{pass_} N={p.n} B={p.b} Hq={p.h} Hkv={p.hkv} d={p.d} causal={p.causal}: {' '.join(impls)}")
        return 0
    try:
        import ioattn
        registered = list(ioattn.kernels())
        bwd_registered = ioattn.backward_kernels() if "bwd" in passes else {}
    except Exception as e:  # noqa: BLE001 - no library, no config columns: say so and stop
        raise SystemExit(f"ncu_collect.py: cannot load python/ioattn.py's library (set IOATTN_CAPI): {e}")
    if not hasattr(ioattn, "kernel_config"):
        raise SystemExit("ncu_collect.py: python/ioattn.py has no kernel_config()")
    variants = parse_list(args.variants, "variants") or registered
    unknown = [v for v in variants if v not in registered]
    if unknown:
        raise SystemExit(f"ncu_collect.py: unknown variant(s) {', '.join(unknown)}")
    bwd_variants = parse_list(args.bwd_variants, "bwd-variants") or list(bwd_registered)
    unknown = [v for v in bwd_variants if v not in bwd_registered] if "bwd" in passes else []
    if unknown:
        raise SystemExit(f"ncu_collect.py: unknown backward variant(s) {', '.join(unknown)}")
    raw_dir = os.path.join(args.out, "ncu_raw")
    os.makedirs(raw_dir, exist_ok=True)
    dtype = "bf16"
    t0 = time.monotonic()
    rows = []
    ncu = ["ncu", "--clock-control", "none", "--profile-from-start", "off", "--print-units", "base",
           "--csv", "--metrics", ",".join(METRICS)]
    # The profiled command line is recorded in every raw report: name the binary relative to the
    # working directory (the repository root when run_h200.sh runs it), not by the machine's path.
    base = ncu + [exe_path(args.ioattn), "run"]
    for pass_ in passes:
        for p in points:
            b, n, heads, d = p.b, p.n, p.h, p.d
            problem = problem_flags(p, dtype)
            impls = ([("peer", x) for x in peers] + [("ioattn", v) for v in variants] if pass_ == "fwd"
                     else [("ioattn", v) for v in bwd_variants])
            for kind, v in impls:
                impl = v if kind == "peer" else "ioattn:" + v
                if p.only is not None and impl not in p.only:
                    continue
                row = new_row(impl, pass_, b, n, heads, d, dtype, causal=p.causal, heads_kv=p.hkv)
                rows.append(row)
                try:
                    if kind == "peer":
                        pass
                    elif pass_ == "fwd":
                        cfg = ioattn.kernel_config(v, b, heads, p.hkv, n, n, d, dtype, causal=bool(p.causal),
                                                   window=(-1, -1), br=0, bc=0, splits=0)
                    else:
                        info = bwd_registered[v]
                        row.update(dq_mode=info["dq_mode"], deterministic=int(bool(info["deterministic"])),
                                   forward_kernel=info["pairs_with"])
                        cfg = ioattn.backward_config(v, b, heads, p.hkv, n, n, d, dtype, causal=bool(p.causal),
                                                     window=(-1, -1), br=0, bc=0)
                    if kind != "peer":
                        row.update({c: cfg.get(c, "") for c in CONFIG_COLS})
                except ioattn.IoattnError as e:
                    row["error"] = f"refused: {str(e).splitlines()[0][:180]}"
                elapsed = time.monotonic() - t0
                if row["error"]:
                    pass
                elif pass_ == "fwd" and v == "v01_naive" and n > args.naive_max:
                    row["error"] = f"not profiled: N > {args.naive_max} (--naive-max; N^2 workspace under ncu replay)"
                elif args.time_cap and elapsed > args.time_cap - 10:
                    row["error"] = f"not profiled: --time-cap {args.time_cap:.0f} s reached"
                else:
                    limit = args.timeout if not args.time_cap else max(10, min(args.timeout, args.time_cap - elapsed))
                    if kind == "peer":
                        cmd = ncu + [args.python, exe_path(PEER_TARGET), "--impl", v] + problem[:-1]  # no --profile
                    else:
                        which = ["--kernel", v] if pass_ == "fwd" else ["--backward", "--bwd-kernel", v]
                        cmd = base + which + problem
                    profile(row, cmd, os.path.join(raw_dir, raw_name(impl, pass_, p)), limit)
                save(args.out, rows)  # after every row: a time cap keeps what ran
                tag = f"d={d} c={p.causal}" + (f" Hkv={p.hkv}" if p.hkv != heads else "")
                print(f"ncu {pass_} {impl.split(':', 1)[-1]:24s} N={n:5d} {tag} " + (
                    f"read/comp_read {row['dram_read_over_compulsory_read']:7.2f}  write/comp_write "
                    f"{row['dram_write_over_compulsory_write']:5.2f}  FLOP/B {row['flop_per_dram_byte']:8.1f}  "
                    f"L2 {row['l2_bytes'] / 1e6:10.1f} MB  {row['gpu_time_ms']:9.3f} ms  (Br={row['br']} Bc={row['bc']}"
                    + (f", {row['kernels']} kernels: {row['ncu_kernel_names']})" if pass_ == "bwd" or kind == "peer"
                       else ")")
                    if not row["error"] else row["error"]), flush=True)
    if rows:
        save(args.out, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())

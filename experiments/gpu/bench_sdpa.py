"""ioattn kernels vs torch SDPA (flash, cuDNN) on the H200: one process, same inputs, kernel time only.

    PYTHONPATH=python IOATTN_CAPI=... python3 experiments/gpu/bench_sdpa.py --out DIR [--quick]
        [--passes fwd,bwd,fwdbwd] [--variants v05_fa2_fast,...] [--bwd-variants bwd01_fa2_scalar,...]
        [--seqlens 1024,4096] [--head-dims 64,128,256] [--heads H] [--heads-kv HKV] [--dtypes bf16,fp16,fp8_e4m3]
        [--peers sdpa:flash,sdpa:cudnn,peer:triton_fa2] [--preset heldout] [--samples 2] [--reps 30]
        [--flush-l2 auto|on|off] [--list]

Configs (FlashAttention-2's benchmark): batch * seqlen = 16384, hidden = 2048 (heads = 2048 / d),
N in {512, 1k, 2k, 4k, 8k, 16k}, d in {64, 128}, bf16 and fp16, causal 0/1. FLOPs by the FA2
convention (include/ioattn/flops.hpp): forward 4 * B * H * N^2 * d, halved when causal; backward
2.5x forward; forward+backward 3.5x forward (FLOPs count the query heads: GQA does not change them).
Beyond that grid: --head-dims takes any d (e.g. 64,128,256; a kernel that refuses a d gives a
`refused` row, as for any other constraint); --heads sets the query heads (default 2048 / d) and
--heads-kv the key/value heads (GQA/MQA; default = heads): k and v get Hkv heads, the ioattn calls
and the registry queries get (Hq, Hkv), SDPA gets enable_gqa=True. Every row carries `heads` (the
query heads) and, appended after the older columns, `heads_kv`. Every row has a `pass`:
  fwd     (the default --passes, so a run without the flag is what it always was) the forward:
          the --peers (default SDPA flash and cuDNN; peer:triton_fa2 is the Triton
          FlashAttention-2 of experiments/gpu/peers/triton_fa2.py, opt-in: its autotuning
          compiles ~8 configs per (d, dtype, causal)), every ioattn forward variant
          (ioattn.forward with preallocated out, lse).
  bwd     the backward alone: SDPA flash and cuDNN by torch.autograd.grad of the SDPA output with
          a fixed output gradient (retain_graph; the forward that builds the autograd graph runs
          once, in the first warm-up call, outside the timed region), every ioattn backward
          variant (ioattn.backward with preallocated dq, dk, dv on the O and LSE of the ioattn
          forward in `forward_kernel`).
  fwdbwd  forward + backward in one call: SDPA math (the naive path: S and P in HBM; up to
          --naive-max-n), flash and cuDNN (SDPA then torch.autograd.grad), every ioattn backward
          after the ioattn forward in `forward_kernel` (ioattn's choice for the problem, or
          --fwdbwd-forward), outputs preallocated.
ioattn rows carry the launch configuration the kernel really uses, from the registry: the
forward's (ioattn.kernel_config) on fwd rows, the backward's (ioattn.backward_config) on bwd and
fwdbwd rows: br, bc, stages, threads, smem_bytes, ctas_per_sm, grid_x/y/z, grid_order, launches,
splits. SDPA rows leave them empty; peer:triton_fa2 rows carry the config its autotuner chose
(br = BLOCK_M, bc = BLOCK_N, stages, threads = 32 num_warps, grid_x/y/z, launches 1).
Peers: a peer that does not run a problem gives a `refused` row with its reason: SDPA's "No
available kernel", the Triton peer's constraint (d 64/128, fp16/bf16, ...) or "triton is not
installed". The Triton peer's first call of a problem runs its autotuning (Triton's autotuner
benchmarks every config); it is made before the memory window and timing.py's warm-up, so no
tuning is timed and peak_extra_mib does not see the tuner's buffers.

FP8 (--dtypes fp8_e4m3, alone or beside bf16/fp16): at each (d, N) the bf16 inputs of that
config (the same seed, so the same values as its bf16 rows) are quantized to e4m3 with per-tensor
descales (ioattn.quantize_fp8: descale = amax / 448) and FP8_VARIANT (v09_fp8_wgmma, bf16 out)
runs on the codes (and FP8_WS_VARIANTS, v10_fp8_warpspec, where registered: rows of their own,
a line of their own under fp8_table()'s row), beside ioattn's best bf16 forward on the bf16 inputs (FP8_BF16_BEST: v08, else
v06 where v08 is not registered or refuses) and SDPA cuDNN bf16; an SDPA FP8 backend only if this
PyTorch has one: a tiny float8_e4m3fn SDPA call per backend (flash, cuDNN), in try/except, at the
start of the run, recorded in the context (`sdpa_fp8`, each backend's 'ok' or its error); a backend
that passed gets rows `sdpa:<backend>_fp8` (the codes, scale * q_descale * k_descale, O times
v_descale outside the timed call). These rows have study `fp8` (dtype fp8_e4m3 for the FP8 rows,
bf16 for the others; --variants and --peers do not apply to them). Every row of an FP8 config
carries its error on a slice against a float64 reference (torch float64 on the GPU, from the bf16
values: batch 0, the first FP8_SLICE_HEADS query heads, every row, every column):
slice_max_abs_err = max |O - O_64|, slice_rel_l2_err = ||O - O_64||_2 / ||O_64||_2, and for the FP8
rows slice_max_abs_err_dequant against the float64 reference of the dequantized codes (the
kernel's own error, without the quantization's); error_slice names the slice and fp8_descales the
descales. TFLOP/s use the same FLOP convention as every row (the FP8 forward does the same
products). With FP8 configs the run ends with a short table (fp8_table()): per (d, causal, N)
the FP8 TFLOP/s, its ratio to the best bf16 ioattn and to cuDNN bf16, and the slice errors.
With bf16 also in --dtypes the bf16 rows of the FP8 configs are a second measurement (study fp8)
beside the bench rows.

--preset heldout measures the points of the simulator's held-out set (issue #11) that no
committed run has: d = 256 at N 2k and 8k (v05, SDPA flash), GQA 32 query / 8 K/V heads at d =
128, N 4k and 16k (v05, v06, SDPA flash), N 32k and 64k at d = 128 (v06, SDPA flash; batch 1);
forward, bf16, causal 0 and 1 (list HELDOUT; ncu_collect.py --preset heldout profiles the same
points). About 90-150 s with --samples 2 on the H200 (an estimate; not yet run). It fixes the grid,
the variants and the peers (other grid flags are refused). --list prints the configs and implementations the flags select
and exits without a GPU (torch is imported only after it).

Timing: experiments/gpu/timing.py for every implementation alike (CUDA-graph replay between
events, host enqueue hidden, L2 flushed where the problem fits in 4x L2; see that module). The
autograd calls are captured like any other call (the autograd graph's forward is recorded on the
capture stream, so its backward runs there); where a capture fails, the timing falls back to
eager launches and the row's `timing` says so and why. The whole grid is swept `--samples` times
(default 2) in this one process: every row carries `sample`; the spread of a number is
|s0 - s1| / mean (summarize.py prints every ratio with both samples).

Outside the timed region, per (config, pass, impl): the first (warm-up) call gives the peak device
memory (`peak_extra_mib`: torch.cuda.max_memory_allocated over that call minus what was allocated
before it, plus ioattn's C ABI workspace, which torch's allocator does not see) and max |X -
X_flash| for X = O (fwd) or dQ (bwd, fwdbwd) (`max_abs_diff_vs_flash`, a sanity column). What
peak_extra_mib counts, beyond the inputs q, k, v and the output gradient:
  fwd     O, LSE, temporaries, the forward's workspace;
  bwd     dQ, dK, dV, temporaries, the backward's workspace; not the forward's saved state (O,
          LSE, SDPA's autograd buffers), which exists before the backward starts;
  fwdbwd  everything one forward + backward allocates: O, LSE, saved state, dQ, dK, dV,
          temporaries, the workspaces of both (the C ABI keeps one buffer for the forward and one
          for the backward, so their sum). This is the FA paper's memory figure per N:
          sdpa:math is the naive path, ioattn and sdpa:flash the flash path.
Inputs are BSHD (ioattn's layout); SDPA gets the BHSD view of the same memory (transpose(1, 2),
no copy); the Triton peer reads the BSHD strides directly.

The scalar rungs (v01-v03b forward, 1-9 TFLOP/s; backwards named *_scalar*, ~5-9 TFLOP/s) would
take most of the device call: they run in --scalar-dtypes only, up to the N of --scalar-max-n
(forward) or --scalar-bwd-max-n (backward), with at most --scalar-reps timed calls; every other
implementation gets --reps calls, fewer when --time-per-impl would be exceeded (>= 3). A point
not run is a row with status `skipped` and the reason in `error`; a limited one says how in
`limit`; `reps` is the number of timed calls. Nothing is dropped silently.

Writes DIR/bench.json (rows with context: GPU, driver, versions, commit, date, command, timing
method) and DIR/bench.csv (tidy, one row per (sample, config, pass, impl)), rewritten after every
config so a time cap keeps what ran. Never edit them by hand.
"""
import argparse
import math
import os
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "peers"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import ioattn  # noqa: E402  (loads its library on first use, imports no torch)
import timing  # noqa: E402

torch = F = sdpa_kernel = None  # imported by import_torch(), after the arguments are read (--help, --list)

SEQLENS = [512, 1024, 2048, 4096, 8192, 16384]
SCALAR = {"v01_naive", "v02_fa1", "v03_fa2_scalar", "v03b_splitkv_scalar"}
# Largest N of each scalar rung by default (v03_fa2_scalar, the teaching kernel, runs at every N).
SCALAR_MAX_N = "v01_naive=2048,v02_fa1=4096,v03b_splitkv_scalar=4096,v03_fa2_scalar=16384"
CONFIG_COLS = ["br", "bc", "stages", "threads", "smem_bytes", "ctas_per_sm", "grid_x", "grid_y", "grid_z",
               "grid_order", "launches", "splits"]
DTYPE_NAMES = ("bf16", "fp16")
FP8_NAME = "fp8_e4m3"  # --dtypes fp8_e4m3: the FP8 configs (module docstring)
FP8_VARIANT = "v09_fp8_wgmma"
FP8_WS_VARIANTS = ("v10_fp8_warpspec",)  # FP8 forwards timed beside FP8_VARIANT where registered (same codes)
FP8_BF16_BEST = ("v08_fa3_warpspec", "v06_fa2_wgmma")  # the best bf16 ioattn forward, then its fallback
FP8_SLICE_HEADS = 2  # the error slice: batch 0, the first 2 query heads, all rows
FP8_COLS = ["slice_max_abs_err", "slice_rel_l2_err", "slice_max_abs_err_dequant", "error_slice", "fp8_descales"]
SDPA_FP8 = {}  # backend -> 'ok' or why not: probe_sdpa_fp8(), at the start of a run with FP8 configs
DTYPES = {}  # name -> torch dtype, filled by import_torch()
PASSES = ("fwd", "bwd", "fwdbwd")
FLOP_FACTOR = {"fwd": 1.0, "bwd": 2.5, "fwdbwd": 3.5}  # include/ioattn/flops.hpp
FLOP_CONVENTION = "fwd 4*B*H*N^2*d, /2 causal; bwd 2.5x fwd; fwdbwd 3.5x fwd (FA2)"
SDPA = {}  # impl -> SDPBackend, filled by import_torch()
SDPA_NAMES = ("sdpa:math", "sdpa:flash", "sdpa:cudnn")
# Forward peers (--peers): SDPA's backends and the Triton FlashAttention-2 of experiments/gpu/peers/.
PEERS = ("sdpa:flash", "sdpa:cudnn", "peer:triton_fa2")
DEFAULT_PEERS = "sdpa:flash,sdpa:cudnn"
TRITON = "peer:triton_fa2"
# --preset heldout: the points of the simulator's held-out set (issue #11) that no committed run
# has, forward only, bf16, both causal settings: (head dims, N, heads_q, heads_kv, impls). heads_q
# 0 means the FA2 grid's 2048 / d; batch = max(1, 16384 // N) as everywhere.
HELDOUT = (
    ((256,), (2048, 8192), 0, 0, ("sdpa:flash", "ioattn:v05_fa2_fast", "ioattn:v08_fa3_warpspec")),
    ((128,), (4096, 16384), 32, 8, ("sdpa:flash", "ioattn:v05_fa2_fast", "ioattn:v06_fa2_wgmma",
                                    "ioattn:v08_fa3_warpspec")),
    ((128,), (32768, 65536), 0, 0, ("sdpa:flash", "ioattn:v06_fa2_wgmma", "ioattn:v08_fa3_warpspec")),
)
HELDOUT_DTYPE = "bf16"


def import_torch():
    """torch, SDPA's backends and the dtypes, into this module's globals (once)."""
    global torch, F, sdpa_kernel
    if torch is not None:
        return
    import torch as _torch
    import torch.nn.functional as _F
    from torch.nn.attention import SDPBackend, sdpa_kernel as _sdpa_kernel
    torch, F, sdpa_kernel = _torch, _F, _sdpa_kernel
    DTYPES.update(bf16=torch.bfloat16, fp16=torch.float16)
    SDPA.update({"sdpa:math": SDPBackend.MATH, "sdpa:flash": SDPBackend.FLASH_ATTENTION,
                 "sdpa:cudnn": SDPBackend.CUDNN_ATTENTION})


def fwd_flops(b, h, n, d, causal):
    f = 4.0 * b * h * n * n * d
    return f / 2 if causal else f


def is_scalar_backward(name):
    return "_scalar" in name


def parse_max_n(text):
    """'v01_naive=2048,...' -> {name: N}; a one-line error for anything else."""
    out = {}
    for item in filter(None, text.split(",")):
        name, sep, n = item.partition("=")
        if not sep or not n.isdigit():
            raise SystemExit(f"bench_sdpa.py: --scalar-max-n wants NAME=N[,NAME=N...], got '{item}'")
        out[name] = int(n)
    return out


def parse_ints(text, flag, minimum=1, who="bench_sdpa.py"):
    try:
        vals = [int(x) for x in text.split(",") if x]
    except ValueError:
        raise SystemExit(f"{who}: {flag} wants comma-separated integers, got '{text}'") from None
    if not vals or any(v < minimum for v in vals):
        raise SystemExit(f"{who}: {flag} wants integers >= {minimum}, got '{text}'")
    return vals


def config_columns(name, b, h, n, d, dname, causal, br=0, bc=0, hkv=None):
    """The launch configuration of ioattn forward variant `name` for this problem, from the registry."""
    cfg = ioattn.kernel_config(name, b, h, hkv or h, n, n, d, dname, causal=causal, window=(-1, -1), br=br, bc=bc,
                               splits=0)
    return {c: cfg.get(c, "") for c in CONFIG_COLS}


def bwd_config_columns(name, b, h, n, d, dname, causal, hkv=None):
    """The launch configuration of ioattn backward variant `name` for this problem, from the registry."""
    cfg = ioattn.backward_config(name, b, h, hkv or h, n, n, d, dname, causal=causal, window=(-1, -1))
    return {c: cfg.get(c, "") for c in CONFIG_COLS}


def empty_row(impl, pass_, dname, d, causal, n, b, h, sample, hkv=None):
    """One bench.csv row before timing. `heads` is the query heads; heads_kv (appended after the
    older columns, so their order is unchanged) the key/value heads (= heads: MHA)."""
    row = {"impl": impl, "study": "bench", "pass": pass_}
    row.update(dtype=dname, head_dim=d, causal=int(causal), seqlen=n, batch=b, heads=h, sample=sample, status="",
               ms=None, ms_min=None, ms_max=None, reps=0, timing="", flush_l2=None, tflops=None)
    row.update({c: "" for c in CONFIG_COLS})
    row.update(forward_kernel="", peak_extra_mib=None, max_abs_diff_vs_flash=None, limit="", error="")
    row.update(heads_kv=hkv or h)
    row.update({c: "" for c in FP8_COLS})  # appended after heads_kv: FP8 configs only (module docstring)
    return row


class Point:
    """One config of the grid: head dim, N, batch, heads_q, heads_kv, dtype, and the impls to run
    there (None: every one the flags select)."""

    def __init__(self, d, n, h, hkv, dname, only=None):
        self.d, self.n, self.b, self.h, self.hkv, self.dname, self.only = d, n, max(1, 16384 // n), h, hkv, dname, only

    def label(self):
        gqa = f" Hkv={self.hkv}" if self.hkv != self.h else ""
        return f"d={self.d} N={self.n} B={self.b} H={self.h}{gqa} {self.dname}"


def heads_for(d, heads, heads_kv, what="bench_sdpa.py"):
    """(heads_q, heads_kv): --heads or the FA2 grid's hidden 2048 / d (at least 1); --heads-kv or heads_q."""
    h = heads or max(1, 2048 // d)
    hkv = heads_kv or h
    if h % hkv:
        raise SystemExit(f"{what}: --heads-kv ({hkv}) must divide the query heads ({h}, at d = {d})")
    return h, hkv


def grid_points(args, dims, seqlens, dtypes):
    """The configs to run, in order: --preset heldout's list, else dims x seqlens x dtypes."""
    if args.preset == "heldout":
        pts = []
        for ds, ns, h, hkv, impls in HELDOUT:
            for d in ds:
                for n in ns:
                    hq, hk = heads_for(d, h, hkv)
                    pts.append(Point(d, n, hq, hk, HELDOUT_DTYPE, set(impls)))
        return pts
    pts = []
    for d in dims:
        h, hkv = heads_for(d, args.heads, args.heads_kv)
        for n in seqlens:
            for dname in dtypes:
                pts.append(Point(d, n, h, hkv, dname))
    return pts


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="results folder (required unless --list)")
    ap.add_argument("--list", action="store_true",
                    help="print the configs and implementations the flags select and exit (no GPU, no torch)")
    ap.add_argument("--quick", action="store_true", help="N in {1k, 4k}, d = 128, bf16 only")
    ap.add_argument("--preset", choices=["heldout"], default=None,
                    help="heldout: the simulator's missing held-out points (d256, GQA 32q/8kv, N 32k/64k; "
                         "fwd, bf16, both causal; ~150 s with --samples 2); fixes the grid, the variants and the peers")
    ap.add_argument("--passes", default="fwd", help="comma list of fwd, bwd, fwdbwd (default: fwd)")
    ap.add_argument("--dtypes", default="", help="comma list of bf16, fp16, fp8_e4m3 (default: bf16,fp16; fp8_e4m3: "
                    "the FP8 configs, forward only)")
    ap.add_argument("--seqlens", default="", help="comma list of N (default: 512..16384; --quick: 1024,4096)")
    ap.add_argument("--head-dims", default="", help="comma list of d, e.g. 64,128,256 (default: 64,128; --quick: 128)")
    ap.add_argument("--heads", type=int, default=0, help="query heads (default: 2048 / d, the FA2 grid's hidden 2048)")
    ap.add_argument("--heads-kv", type=int, default=0,
                    help="key/value heads, dividing the query heads (GQA/MQA; default: = query heads)")
    ap.add_argument("--peers", default=DEFAULT_PEERS,
                    help=f"comma list of forward peers from {', '.join(PEERS)} (default: {DEFAULT_PEERS}; "
                         f"'none' for none)")
    ap.add_argument("--variants", default="", help="comma list of ioattn forward variants (default: all registered)")
    ap.add_argument("--bwd-variants", default="", help="comma list of ioattn backward variants (default: all)")
    ap.add_argument("--fwdbwd-forward", default="auto",
                    help="forward variant of the ioattn bwd/fwdbwd rows (auto: ioattn.choose_forward)")
    ap.add_argument("--samples", type=int, default=2, help="sweeps of the whole grid (run-to-run spread)")
    ap.add_argument("--reps", type=int, default=30, help="timed calls per (sample, config, impl)")
    ap.add_argument("--time-per-impl", type=float, default=0.5,
                    help="cap (s) on reps x time of one call; at least 3 calls")
    ap.add_argument("--hold-s", type=float, default=0.0,
                    help="run each call back to back this long before its timed calls, for every implementation "
                         "alike (the clock it holds under the power cap; default 0: none)")
    ap.add_argument("--flush-l2", choices=["auto", "on", "off"], default="auto",
                    help="auto: flush when inputs + outputs < 4x L2 (timing.py)")
    ap.add_argument("--scalar-dtypes", default="bf16", help="dtypes the scalar rungs run in")
    ap.add_argument("--scalar-max-n", default=SCALAR_MAX_N, help="NAME=N,...: largest N per scalar forward rung")
    ap.add_argument("--scalar-bwd-max-n", type=int, default=4096, help="largest N of a scalar backward")
    ap.add_argument("--scalar-reps", type=int, default=3, help="timed calls of a scalar rung")
    ap.add_argument("--naive-max-n", type=int, default=16384, help="largest N of sdpa:math (fwdbwd rows)")
    ap.add_argument("--deadline-s", type=float, default=0, help="start no config after this many seconds (0: none)")
    ap.add_argument("--commit", default="", help="commit of the binaries (default: build-gpu/carry/COMMIT)")
    args = ap.parse_args(argv)
    if not args.list and not args.out:
        ap.error("--out is required (or --list)")
    if args.samples < 1 or args.reps < 1 or args.scalar_reps < 1:
        raise SystemExit("bench_sdpa.py: --samples, --reps and --scalar-reps must be >= 1")
    if args.heads < 0 or args.heads_kv < 0:
        raise SystemExit("bench_sdpa.py: --heads and --heads-kv must be >= 1")
    if not args.hold_s >= 0:  # NaN too
        raise SystemExit("bench_sdpa.py: --hold-s must be >= 0 (seconds)")
    passes = [p for p in args.passes.split(",") if p]
    bad = [p for p in passes if p not in PASSES]
    if bad or not passes:
        raise SystemExit(f"bench_sdpa.py: --passes wants a comma list of {', '.join(PASSES)}, got '{args.passes}'")
    peers = [] if args.peers == "none" else [p for p in args.peers.split(",") if p]
    unknown = [p for p in peers if p not in PEERS]
    if unknown:
        raise SystemExit(f"bench_sdpa.py: unknown peer(s) {', '.join(unknown)} (known: {', '.join(PEERS)}, none)")
    max_n = parse_max_n(args.scalar_max_n)
    if args.preset:
        clash = [f for f, v in (("--quick", args.quick), ("--seqlens", args.seqlens), ("--head-dims", args.head_dims),
                                ("--dtypes", args.dtypes), ("--heads", args.heads), ("--heads-kv", args.heads_kv),
                                ("--variants", args.variants), ("--passes", args.passes != "fwd"),
                                ("--peers", args.peers != DEFAULT_PEERS)) if v]
        if clash:
            raise SystemExit(f"bench_sdpa.py: --preset {args.preset} fixes the grid; drop {', '.join(clash)}")
    seqlens = [1024, 4096] if args.quick else SEQLENS
    dims = [128] if args.quick else [64, 128]
    if args.seqlens:
        seqlens = parse_ints(args.seqlens, "--seqlens")
    if args.head_dims:
        dims = parse_ints(args.head_dims, "--head-dims")
    dtypes = ["bf16"] if args.quick else list(DTYPE_NAMES)
    if args.dtypes:
        unknown = set(args.dtypes.split(",")) - set(DTYPE_NAMES) - {FP8_NAME}
        if unknown:
            ap.error(f"--dtypes: unknown {sorted(unknown)} (known: {sorted(DTYPE_NAMES + (FP8_NAME,))})")
        dtypes = [k for k in DTYPE_NAMES + (FP8_NAME,) if k in args.dtypes.split(",")]
        if FP8_NAME in dtypes and passes != ["fwd"]:
            raise SystemExit(f"bench_sdpa.py: --dtypes {FP8_NAME} is forward only: drop --passes {args.passes}")
    points = grid_points(args, dims, seqlens, dtypes)
    if args.preset:
        names = sorted({i for p in points for i in p.only})
        peers = [i for i in names if i in PEERS]
        args.variants = ",".join(i.split(":", 1)[1] for i in names if i.startswith("ioattn:"))
    if args.list:
        variants = args.variants or "<every registered forward>"
        for p in points:
            impls = sorted(p.only) if p.only else peers + [f"ioattn:{v}" for v in variants.split(",")]
            if p.dname == FP8_NAME:
                impls = [f"ioattn:{FP8_VARIANT} (fp8)", *[f"ioattn:{v} (fp8, where registered)" for v in FP8_WS_VARIANTS],
                         f"ioattn:{FP8_BF16_BEST[0]} or {FP8_BF16_BEST[1]} (bf16)",
                         "sdpa:cudnn (bf16)", "sdpa FP8 backends the probe finds"]
            print(f"{p.label()} causal 0,1 passes {','.join(passes)}: {' '.join(impls)}")
        print(f"{len(points)} configs x 2 causal x {args.samples} samples")
        return 0
    import_torch()
    if not torch.cuda.is_available():
        raise SystemExit("bench_sdpa.py: no CUDA device visible to torch")
    if not hasattr(ioattn, "kernel_config"):
        raise SystemExit("bench_sdpa.py: python/ioattn.py has no kernel_config(): the rows could not carry the "
                         "kernels' launch configuration")
    os.makedirs(args.out, exist_ok=True)
    registered = list(ioattn.kernels())
    variants = [v for v in (args.variants.split(",") if args.variants else registered) if v]
    unknown = [v for v in variants if v not in registered]
    if unknown:
        raise SystemExit(f"bench_sdpa.py: unknown variant(s) {', '.join(unknown)} (registered: {', '.join(registered)})")
    bwd_variants = []
    if "bwd" in passes or "fwdbwd" in passes:
        try:
            bwd_registered = list(ioattn.backward_kernels())
        except ioattn.IoattnError as e:
            raise SystemExit(f"bench_sdpa.py: --passes {args.passes} needs the backward: {e}") from None
        bwd_variants = [v for v in (args.bwd_variants.split(",") if args.bwd_variants else bwd_registered) if v]
        unknown = [v for v in bwd_variants if v not in bwd_registered]
        if unknown:
            raise SystemExit(f"bench_sdpa.py: unknown backward variant(s) {', '.join(unknown)} "
                             f"(registered: {', '.join(bwd_registered)})")
        if args.fwdbwd_forward != "auto" and args.fwdbwd_forward not in registered:
            raise SystemExit(f"bench_sdpa.py: --fwdbwd-forward {args.fwdbwd_forward} is not a registered forward")
    flush = None if args.flush_l2 == "auto" else args.flush_l2 == "on"
    scalar_dtypes = set(args.scalar_dtypes.split(","))
    timing.prepare()
    if any(p.dname == FP8_NAME for p in points):
        SDPA_FP8.clear()
        SDPA_FP8.update(probe_sdpa_fp8())
    context = timing.run_context(commit=args.commit or None, out_dir=args.out, flop_convention=FLOP_CONVENTION,
                                 passes=passes, samples=args.samples, reps=args.reps,
                                 time_per_impl_s=args.time_per_impl,
                                 scalar=dict(variants=sorted(SCALAR), backward="names containing _scalar",
                                             dtypes=sorted(scalar_dtypes), max_n=max_n,
                                             bwd_max_n=args.scalar_bwd_max_n, reps=args.scalar_reps),
                                 naive_max_n=args.naive_max_n, fwdbwd_forward=args.fwdbwd_forward,
                                 peers=peers, preset=args.preset or "",
                                 sdpa_fp8=dict(SDPA_FP8) if SDPA_FP8 else "not probed (no fp8 configs)",
                                 fp8=(dict(variant=FP8_VARIANT, bf16_best=list(FP8_BF16_BEST), descales="per tensor, "
                                           "amax / 448 (ioattn.quantize_fp8)", slice=slice_name(), out_dtype="bf16",
                                           reference="torch float64 on the GPU, from the bf16 values")
                                      if SDPA_FP8 else ""),
                                 seed="torch.manual_seed(N * 1000 + d) per config, the same in every sample",
                                 complete=False)
    rows = []
    t0 = time.monotonic()
    free0, _ = torch.cuda.mem_get_info()
    stopped = ""
    for sample in range(args.samples):
        for p in points:
            if args.deadline_s and time.monotonic() - t0 > args.deadline_s:
                stopped = f"stopped by --deadline-s {args.deadline_s:.0f} at sample {sample}, before {p.label()}"
                break
            rows += bench_config(args, passes, sample, p, variants, bwd_variants, peers, max_n, scalar_dtypes, flush,
                                 free0)
            context.update(elapsed_s=round(time.monotonic() - t0, 1))
            timing.write_results(args.out, "bench", rows, context)
        if stopped:
            break
    context.update(complete=not stopped, stopped=stopped, elapsed_s=round(time.monotonic() - t0, 1))
    timing.write_results(args.out, "bench", rows, context)
    if any(r["study"] == "fp8" for r in rows):
        print("\n".join(fp8_table(rows)), flush=True)
    print(stopped or f"bench: {args.samples} samples in {time.monotonic() - t0:.0f} s", flush=True)
    return 0


class Inputs:
    """The tensors of one config: q (B, N, Hq, d), k, v (B, N, Hkv, d) and, for the backward passes,
    the output gradient g (like q) and leaf views of q, k, v that require grad (same memory)."""

    def __init__(self, b, h, n, d, dt, need_grad, hkv=None):
        self.q = torch.randn(b, n, h, d, device="cuda", dtype=dt)
        self.k, self.v = (torch.randn(b, n, hkv or h, d, device="cuda", dtype=dt) for _ in range(2))
        self.g = torch.randn(b, n, h, d, device="cuda", dtype=dt) if need_grad else None
        self.leaves = [t.detach().requires_grad_(True) for t in (self.q, self.k, self.v)] if need_grad else None


def sdpa_fn(inp, pass_, backend, causal):
    """The timed call of SDPA for a pass, and a dict whose 'base' (allocated bytes the peak is taken
    against) the first call may set."""
    state = {}
    gqa = dict(enable_gqa=True) if inp.k.shape[2] != inp.q.shape[2] else {}  # K/V heads shared by query groups
    if pass_ == "fwd":
        qt, kt, vt = inp.q.transpose(1, 2), inp.k.transpose(1, 2), inp.v.transpose(1, 2)

        def fn():
            with sdpa_kernel(backend):
                return F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal, **gqa).transpose(1, 2)
        return fn, state

    def forward():  # inside the call, so autograd records every node on the stream the call runs on
        qt, kt, vt = (t.transpose(1, 2) for t in inp.leaves)
        with sdpa_kernel(backend):
            return F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal, **gqa)

    gt = inp.g.transpose(1, 2)
    if pass_ == "fwdbwd":
        def fn():
            return torch.autograd.grad(forward(), inp.leaves, gt)
        return fn, state

    def fn():  # bwd: the autograd graph is built once, by the first (warm-up) call
        if "out" not in state:
            state["out"] = forward()
            torch.cuda.synchronize()
            state["base"] = torch.cuda.memory_allocated()
            torch.cuda.reset_peak_memory_stats()
        return torch.autograd.grad(state["out"], inp.leaves, gt, retain_graph=True)
    return fn, state


def ioattn_fn(inp, pass_, name, fwd_name, causal, b, h, n, d, dname=""):
    """The timed call of an ioattn variant for a pass (outputs preallocated here, after the caller
    reset the peak-memory counter), and its o, lse (for bwd: written once, before). dname FP8: the
    forward on inp.fp8's codes and descales, O in q's (bf16) dtype."""
    q, k, v = inp.q, inp.k, inp.v
    if pass_ == "fwd" and dname == FP8_NAME:
        f8 = inp.fp8
        o, lse = torch.empty_like(q), torch.empty((b, h, n), device=q.device, dtype=torch.float32)

        def fn():
            return ioattn.forward(f8["q"], f8["k"], f8["v"], kernel=name, causal=causal, out=o, lse=lse,
                                  q_descale=f8["qd"], k_descale=f8["kd"], v_descale=f8["vd"], out_dtype=q.dtype)[0]
        return fn
    if pass_ == "fwd":
        o, lse = torch.empty_like(q), torch.empty((b, h, n), device=q.device, dtype=torch.float32)

        def fn():
            return ioattn.forward(q, k, v, kernel=name, causal=causal, out=o, lse=lse)[0]
        return fn
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    if pass_ == "fwdbwd":
        o, lse = torch.empty_like(q), torch.empty((b, h, n), device=q.device, dtype=torch.float32)

        def fn():
            ioattn.forward(q, k, v, kernel=fwd_name, causal=causal, out=o, lse=lse)
            return ioattn.backward(q, k, v, o, lse, inp.g, kernel=name, causal=causal, dq=dq, dk=dk, dv=dv)[0]
        return fn
    o, lse = inp.fwd_state[(fwd_name, causal)]

    def fn():
        return ioattn.backward(q, k, v, o, lse, inp.g, kernel=name, causal=causal, dq=dq, dk=dk, dv=dv)[0]
    return fn


def triton_fn(inp, causal, b, h, n):
    """The timed call of the Triton peer (outputs preallocated), after one untimed call that runs
    its autotuning for this problem (outside the memory window and the timing); the chosen config."""
    import triton_fa2
    o, lse = torch.empty_like(inp.q), torch.empty((b, h, n), device=inp.q.device, dtype=torch.float32)

    def fn():
        return triton_fa2.forward(inp.q, inp.k, inp.v, causal=causal, out=o, lse=lse)[0]
    fn()
    torch.cuda.synchronize()
    return fn, triton_fa2.tuned_config(inp.q.shape[-1])


def peer_refusal(impl):
    """Why a peer cannot run here ('' if it can)."""
    if impl == TRITON:
        import triton_fa2
        return triton_fa2.available()
    return ""


def bench_config(args, passes, sample, p, variants, bwd_variants, peers, max_n, scalar_dtypes, flush, free0):
    """Rows of every (pass, implementation) at one (sample, config), both causal settings."""
    if p.dname == FP8_NAME:
        return bench_fp8_config(args, sample, p, flush, free0)
    b, h, hkv, n, d, dname, dt = p.b, p.h, p.hkv, p.n, p.d, p.dname, DTYPES[p.dname]
    rows = []
    torch.manual_seed(n * 1000 + d)
    need_grad = any(x != "fwd" for x in passes)
    inp = Inputs(b, h, n, d, dt, need_grad, hkv)
    inp.fwd_state = {}
    q = inp.q
    kv = inp.k.nbytes + inp.v.nbytes
    bytes_fwd = 2 * q.nbytes + kv + b * h * n * 4       # q, k, v, O + fp32 LSE
    bytes_bwd = 4 * q.nbytes + 2 * kv + b * h * n * 4   # q, k, v, O, dO in; dQ, dK, dV out; LSE
    torch.cuda.synchronize()
    for causal in (False, True):
        flops = fwd_flops(b, h, n, d, causal)
        fwd_name = ""
        if "bwd" in passes or "fwdbwd" in passes:
            try:
                fwd_name = (ioattn.choose_forward(b, h, hkv, n, n, d, dname, causal) if args.fwdbwd_forward == "auto"
                            else args.fwdbwd_forward)
            except ioattn.IoattnError as e:
                fwd_name = ""
                print(f"no ioattn forward for the backward rows: {e}", flush=True)
        for pass_ in passes:
            ref = {}  # the flash output of this (causal, pass): first tensor of its warm-up call
            # SDPA flash first: its output is the reference of max_abs_diff_vs_flash.
            impls = [(x, SDPA[x]) for x in ("sdpa:flash", "sdpa:cudnn") if x in peers or pass_ != "fwd"]
            if pass_ == "fwdbwd":
                impls = [("sdpa:math", SDPA["sdpa:math"])] + impls
            if pass_ == "fwd" and TRITON in peers:
                impls.append((TRITON, None))
            names = variants if pass_ == "fwd" else bwd_variants
            impls += [("ioattn:" + name, None) for name in names]
            if p.only is not None:
                impls = [x for x in impls if x[0] in p.only]
            for impl, backend in impls:
                rows.append(bench_one(args, pass_, impl, backend, inp, sample, b, h, n, d, dname, causal, flops,
                                      fwd_name, max_n, scalar_dtypes, flush, free0, ref,
                                      bytes_fwd if pass_ == "fwd" else bytes_bwd, hkv))
            del ref
        inp.fwd_state.clear()
    del inp, q
    ioattn.release_workspace()
    torch.cuda.empty_cache()
    return rows


def bench_one(args, pass_, impl, backend, inp, sample, b, h, n, d, dname, causal, flops, fwd_name, max_n,
              scalar_dtypes, flush, free0, ref, problem_bytes, hkv=None, err=None, study="bench"):
    """One row: (pass, impl) at one config. err: None, or x -> {column: value} of the first call's
    output (an FP8 config's slice errors); study: the row's study (fp8 for an FP8 config's rows)."""
    name = impl.split(":", 1)[1]
    row = empty_row(impl, pass_, dname, d, causal, n, b, h, sample, hkv)
    row["study"] = study
    hkv = hkv or h
    reps, max_time = args.reps, args.time_per_impl
    peer = impl.startswith("peer:")
    scalar = backend is None and not peer and (name in SCALAR if pass_ == "fwd" else is_scalar_backward(name))
    if peer and peer_refusal(impl):
        row.update(status="refused", error=peer_refusal(impl))
        return log(row)
    if scalar:
        reps = min(reps, args.scalar_reps)
        cap = max_n.get(name) if pass_ == "fwd" else args.scalar_bwd_max_n
        flag = "--scalar-max-n" if pass_ == "fwd" else "--scalar-bwd-max-n"
        row["limit"] = (f"scalar rung: <= {reps} timed calls (--scalar-reps), dtypes "
                        f"{','.join(sorted(scalar_dtypes))}" + (f", N <= {cap}" if cap else ""))
        if dname not in scalar_dtypes:
            row.update(status="skipped", error=f"not run: scalar rung, dtype {dname} not in --scalar-dtypes")
            return log(row)
        if cap is not None and n > cap:
            row.update(status="skipped", error=f"not run: scalar rung, N {n} > {cap} ({flag})")
            return log(row)
    if impl == "sdpa:math":
        need = 6 * b * h * n * n * inp.q.element_size()  # S, P, dP, dS and their copies (estimate)
        if n > args.naive_max_n:
            row.update(status="skipped", error=f"not run: naive path, N {n} > {args.naive_max_n} (--naive-max-n)")
            return log(row)
        if need > 0.6 * free0:
            row.update(status="skipped", error=f"not run: naive path needs ~{need / 2**30:.0f} GiB (6 B H N^2 "
                                                f"elements), over 60% of the free device memory")
            return log(row)
    state = {}
    try:
        ws = 0
        if backend is None and not peer:  # an ioattn variant
            if pass_ == "fwd":
                row.update(config_columns(name, b, h, n, d, dname, causal, hkv=hkv))  # refuses what it cannot run
                ws = ioattn.workspace_bytes(name, b, h, hkv, n, n, d, dname, causal)
            else:
                if not fwd_name:
                    raise ioattn.IoattnError(2, "no ioattn forward runs this problem (its O and LSE are needed)")
                row["forward_kernel"] = fwd_name
                row.update(bwd_config_columns(name, b, h, n, d, dname, causal, hkv=hkv))
                ws = ioattn.backward_workspace_bytes(name, b, h, hkv, n, n, d, dname, causal)
                if pass_ == "fwdbwd":
                    ws += ioattn.workspace_bytes(fwd_name, b, h, hkv, n, n, d, dname, causal)
                elif (fwd_name, causal) not in inp.fwd_state:  # bwd: the forward's O, LSE, once per config
                    o, lse = ioattn.forward(inp.q, inp.k, inp.v, kernel=fwd_name, causal=causal)
                    inp.fwd_state[(fwd_name, causal)] = (o, lse)
            if ws > 0.6 * free0:
                raise ioattn.IoattnError(2, f"{name}: workspace {ws / 2**30:.1f} GiB does not fit in 60% "
                                            f"of the free device memory")
        if peer:  # autotuning (the first call) before the memory window and the timing
            fn, cfg = triton_fn(inp, causal, b, h, n)
            if cfg:
                bm, bn, stages, warps = cfg
                row.update(br=bm, bc=bn, stages=stages, threads=32 * warps, grid_x=-(-n // bm), grid_y=b * h,
                           grid_z=1, launches=1)
        torch.cuda.synchronize()
        state["base"] = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        if backend is None and not peer:
            fn = ioattn_fn(inp, pass_, name, fwd_name, causal, b, h, n, d, dname)
        elif not peer and dname == FP8_NAME:
            fn = sdpa_fp8_fn(inp, backend, causal)
        elif not peer:
            fn, fn_state = sdpa_fn(inp, pass_, backend, causal)
            state["fn"] = fn_state

        def first(out, impl=impl, ws=ws):
            base = state.get("fn", {}).get("base", state["base"])  # SDPA bwd: after its forward
            row["peak_extra_mib"] = (torch.cuda.max_memory_allocated() - base + ws) / 2**20
            x = out if isinstance(out, torch.Tensor) else out[0]  # O (fwd) or dQ (bwd, fwdbwd)
            if impl == "sdpa:flash":
                ref["x"] = x
            elif ref.get("x") is not None and x is not None:
                row["max_abs_diff_vs_flash"] = (x.float() - ref["x"].float()).abs().max().item()
            if err is not None and x is not None:
                row.update(err(x))

        r = timing.time_call(fn, problem_bytes=problem_bytes, flush_l2=flush, reps=reps, min_reps=min(3, reps),
                             max_time_s=max_time, first_call=first, hold_s=args.hold_s)
        f = flops * FLOP_FACTOR[pass_]
        row.update(status="ok", ms=r["median_ms"], ms_min=r["min_ms"], ms_max=r["max_ms"], reps=r["n"],
                   timing=r["method"], flush_l2=int(r["flush_l2"]), tflops=f / (r["median_ms"] * 1e-3) / 1e12)
        if r["n"] < reps:
            row["limit"] = "; ".join(filter(None, [row["limit"], f"{r['n']} of {reps} timed calls "
                                                   f"(--time-per-impl {max_time:g} s)"]))
    except ioattn.IoattnError as e:
        row.update(status="refused" if e.code == 2 else "error", error=str(e).splitlines()[0][:200])
    except (RuntimeError, ValueError) as e:
        msg = (str(e).splitlines() or [type(e).__name__])[0][:200]
        # A peer that does not run the problem says so: SDPA's backend selection ("No available
        # kernel"), the Triton peer's constraint check (triton_fa2.Refused).
        refused = type(e).__name__ == "Refused" or (backend is not None and "No available kernel" in str(e))
        row.update(status="refused" if refused else "error", error=msg)
    except Exception as e:  # noqa: BLE001 - a peer's own failure (e.g. Triton's CompilationError) is its row's
        if not peer:
            raise
        row.update(status="error", error=f"{type(e).__name__}: {(str(e).splitlines() or [''])[0][:180]}")
    torch.cuda.synchronize()
    state.clear()
    return log(row)


# ---- FP8 configs (--dtypes fp8_e4m3; module docstring) ------------------------------------------------

def slice_name(heads=FP8_SLICE_HEADS):
    return f"batch 0, query heads 0-{heads - 1}, all rows and columns"


def probe_sdpa_fp8():
    """{backend: 'ok' or its error}: one tiny float8_e4m3fn SDPA call per fast backend (flash, cuDNN)."""
    out = {}
    x = torch.randn(1, 2, 128, 64, device="cuda").to(torch.float8_e4m3fn)
    for name in ("sdpa:flash", "sdpa:cudnn"):
        try:
            # the probe disables the other backends on purpose: their "runtime disabled" warnings say nothing
            with sdpa_kernel(SDPA[name]), warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                F.scaled_dot_product_attention(x, x, x)
            torch.cuda.synchronize()
            out[name] = "ok"
        except Exception as e:  # noqa: BLE001 - any failure means: no FP8 path in this backend
            out[name] = f"{type(e).__name__}: {(str(e).splitlines() or [''])[0][:160]}"
    return out


def slice_reference(q, k, v, causal, heads=FP8_SLICE_HEADS, descales=(1.0, 1.0, 1.0)):
    """float64 O of batch 0, query heads [0, heads) (N_q, heads, d), from BSHD q (B, Nq, Hq, d), k, v
    (B, Nk, Hkv, d) on their device (times per-tensor descales: the dequantized codes); scale
    1/sqrt(d), causal bottom-right aligned (problem.hpp)."""
    nq, hq, d = q.shape[1], q.shape[2], q.shape[3]
    nk, g = k.shape[1], q.shape[2] // k.shape[2]
    qs, ks, vs = descales
    outs = []
    for hh in range(min(heads, hq)):
        qh = q[0, :, hh, :].float().double() * qs  # .float() first: FP8 codes convert to float32 exactly
        kh, vh = k[0, :, hh // g, :].float().double() * ks, v[0, :, hh // g, :].float().double() * vs
        sc = (qh @ kh.transpose(0, 1)) / math.sqrt(d)
        if causal:
            i = torch.arange(nq, device=q.device).view(-1, 1)
            j = torch.arange(nk, device=q.device).view(1, -1)
            sc = sc.masked_fill(j > i + (nk - nq), float("-inf"))
        outs.append(torch.softmax(sc, dim=-1) @ vh)
        del sc
    return torch.stack(outs, dim=1)


def slice_errors(x, ref, ref_dequant=None, out_scale=1.0):
    """The slice error columns of output x (BSHD, any float dtype) against float64 references."""
    o = x[0, :, :ref.shape[1], :].float().double() * out_scale  # .float() first: an FP8 output converts exactly
    cols = dict(slice_max_abs_err=(o - ref).abs().max().item(),
                slice_rel_l2_err=((o - ref).norm() / ref.norm()).item(), error_slice=slice_name(ref.shape[1]))
    if ref_dequant is not None:
        cols["slice_max_abs_err_dequant"] = (o - ref_dequant).abs().max().item()
    return cols


def sdpa_fp8_fn(inp, backend, causal):
    """The timed call of an SDPA FP8 backend on the codes (BHSD views), scale * q_descale * k_descale;
    its O is in FP8 units of V (the error hook multiplies by v_descale, outside the timed call)."""
    f8 = inp.fp8
    qt, kt, vt = (f8[x].transpose(1, 2) for x in ("q", "k", "v"))
    gqa = dict(enable_gqa=True) if kt.shape[1] != qt.shape[1] else {}
    sc = f8["qd"] * f8["kd"] / math.sqrt(qt.shape[-1])

    def fn():
        with sdpa_kernel(backend):
            return F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal, scale=sc, **gqa).transpose(1, 2)
    return fn


def fp8_best_bf16(b, h, hkv, n, d, causal):
    """The best bf16 ioattn forward that takes this problem: FP8_BF16_BEST in order (the registry's answer)."""
    registered = list(ioattn.kernels())
    for name in FP8_BF16_BEST:
        if name in registered:
            try:
                ioattn.kernel_config(name, b, h, hkv, n, n, d, "bf16", causal=causal, window=(-1, -1))
                return name
            except ioattn.IoattnError:
                continue
    return FP8_BF16_BEST[-1]  # its row then says why it is refused


def bench_fp8_config(args, sample, p, flush, free0):
    """Rows of an FP8 config (module docstring): FP8_VARIANT on per-tensor codes of the config's bf16
    inputs, the best bf16 ioattn forward and SDPA cuDNN on those bf16 inputs, SDPA FP8 backends the
    probe found; each with its slice errors against float64; both causal settings."""
    b, h, hkv, n, d = p.b, p.h, p.hkv, p.n, p.d
    rows = []
    torch.manual_seed(n * 1000 + d)  # the bf16 config's seed and draws: the same values
    inp = Inputs(b, h, n, d, torch.bfloat16, False, hkv)
    inp.fwd_state = {}
    f8 = {}
    for x in ("q", "k", "v"):
        f8[x], f8[x + "d"] = ioattn.quantize_fp8(getattr(inp, x))
    inp.fp8 = f8
    descales = f"q={f8['qd']:.6g};k={f8['kd']:.6g};v={f8['vd']:.6g}"
    kv = inp.k.nbytes + inp.v.nbytes
    bytes_bf16 = 2 * inp.q.nbytes + kv + b * h * n * 4
    bytes_fp8 = inp.q.nbytes // 2 + kv // 2 + inp.q.nbytes + b * h * n * 4  # 1-byte q, k, v; bf16 O; LSE
    fp8_backends = [x for x, why in SDPA_FP8.items() if why == "ok"]
    for causal in (False, True):
        flops = fwd_flops(b, h, n, d, causal)
        ref = slice_reference(inp.q, inp.k, inp.v, causal)
        ref_dq = slice_reference(f8["q"], f8["k"], f8["v"], causal, descales=(f8["qd"], f8["kd"], f8["vd"]))
        best = fp8_best_bf16(b, h, hkv, n, d, causal)
        impls = [("ioattn:" + FP8_VARIANT, None, FP8_NAME), ("ioattn:" + best, None, "bf16"),
                 ("sdpa:cudnn", SDPA["sdpa:cudnn"], "bf16")]
        impls += [("ioattn:" + v, None, FP8_NAME) for v in FP8_WS_VARIANTS if v in ioattn.kernels()]
        impls += [(x + "_fp8", SDPA[x], FP8_NAME) for x in fp8_backends]
        for impl, backend, dname in impls:
            fp8_row = dname == FP8_NAME
            scale = f8["vd"] if (fp8_row and backend is not None) else 1.0

            def err(x, fp8_row=fp8_row, scale=scale, ref=ref, ref_dq=ref_dq):
                return slice_errors(x, ref, ref_dq if fp8_row else None, out_scale=scale)
            row = bench_one(args, "fwd", impl, backend, inp, sample, b, h, n, d, dname, causal, flops, "", {}, set(),
                            flush, free0, {}, bytes_fp8 if fp8_row else bytes_bf16, hkv, err=err, study="fp8")
            if fp8_row:
                row["fp8_descales"] = descales
            rows.append(row)
        del ref, ref_dq
    del inp, f8
    ioattn.release_workspace()
    torch.cuda.empty_cache()
    return rows


def fp8_table(rows):
    """Lines of the FP8 summary: per (d, causal, N), the mean over samples of the FP8 row's TFLOP/s, its
    ratio to the best bf16 ioattn row and to SDPA cuDNN bf16 of the same config, and the slice errors."""
    by = {}
    for r in rows:
        if r.get("study") != "fp8" or r.get("status") != "ok":
            continue
        key = (int(r["head_dim"]), int(r["causal"]), int(r["seqlen"]))
        kind = ("fp8" if r["impl"] == "ioattn:" + FP8_VARIANT else "cudnn" if r["impl"] == "sdpa:cudnn"
                else "fp8ws:" + r["impl"] if r["impl"] in ["ioattn:" + v for v in FP8_WS_VARIANTS]
                else "bf16" if r["impl"].startswith("ioattn:") and r.get("dtype") != FP8_NAME else None)
        if kind:
            e = by.setdefault(key, {}).setdefault(kind, {"tf": [], "err": [], "name": r["impl"]})
            e["tf"].append(float(r["tflops"]))
            if r.get("slice_max_abs_err") not in (None, ""):
                e["err"].append(float(r["slice_max_abs_err"]))

    def mean(x):
        return sum(x) / len(x) if x else None

    def f(x, spec):
        return format(x, spec) if x is not None else "-"
    lines = ["fp8 summary (mean of samples; err = max |O - O_float64| on " + slice_name() + ")",
             f"{'d':>4} {'causal':>6} {'N':>6} {'fp8 TF/s':>9} {'bf16 TF/s':>9} {'cuDNN TF/s':>10} "
             f"{'x bf16':>7} {'x cuDNN':>7} {'err fp8':>9} {'err bf16':>9} {'err cuDNN':>9}  bf16 ioattn"]
    for key in sorted(by):
        e = by[key]
        tf = {k: mean(e[k]["tf"]) if k in e else None for k in ("fp8", "bf16", "cudnn")}
        er = {k: max(e[k]["err"]) if k in e and e[k]["err"] else None for k in ("fp8", "bf16", "cudnn")}
        rb = tf["fp8"] / tf["bf16"] if tf["fp8"] and tf["bf16"] else None
        rc = tf["fp8"] / tf["cudnn"] if tf["fp8"] and tf["cudnn"] else None
        lines.append(f"{key[0]:>4} {key[1]:>6} {key[2]:>6} {f(tf['fp8'], '9.1f')} {f(tf['bf16'], '9.1f')} "
                     f"{f(tf['cudnn'], '10.1f')} {f(rb, '7.2f')} {f(rc, '7.2f')} {f(er['fp8'], '9.2e')} "
                     f"{f(er['bf16'], '9.2e')} {f(er['cudnn'], '9.2e')}  {e.get('bf16', {}).get('name', '-')}")
        for k in sorted(x for x in e if x.startswith("fp8ws:")):  # FP8_WS_VARIANTS: one line each, below
            t = mean(e[k]["tf"])
            lines.append(f"{'':>18} {f(t, '9.1f')} TF/s {k.split(':', 2)[2]}: x bf16 "
                         f"{f(t / tf['bf16'] if t and tf['bf16'] else None, '.2f')}, x {FP8_VARIANT} "
                         f"{f(t / tf['fp8'] if t and tf['fp8'] else None, '.2f')}, x cuDNN "
                         f"{f(t / tf['cudnn'] if t and tf['cudnn'] else None, '.2f')}, err "
                         f"{f(max(e[k]['err']) if e[k]['err'] else None, '.2e')}")
    return lines


def log(row):
    gqa = f" Hkv={row['heads_kv']}" if row.get("heads_kv") not in (None, "", row["heads"]) else ""
    print(f"s{row['sample']} {row['pass']:6s} {row['impl']:27s} {row['dtype']} d={row['head_dim']:3d} "
          f"causal={row['causal']} N={row['seqlen']:5d}{gqa} "
          + (f"{row['ms']:9.3f} ms {row['tflops']:7.1f} TFLOP/s  ({row['reps']} calls, {row['timing']})"
             if row["status"] == "ok" else f"{row['status']}: {row['error']}"), flush=True)
    return row


if __name__ == "__main__":
    sys.exit(main())

"""experiments/gpu/timing.py: the one way every GPU time in ioattn is measured (ioattn and its peers).

    from timing import time_call
    r = time_call(lambda: ioattn.forward(q, k, v, kernel="v06_fa2_wgmma", out=o, lse=lse)[0],
                  problem_bytes=q.nbytes * 4, reps=30)
    r["median_ms"], r["min_ms"], r["max_ms"], r["n"], r["method"]

Used by bench_sdpa.py (ioattn vs SDPA flash and cuDNN), bench_tiles.py and ceilings.py (copies,
GEMMs); no other timing code is left in those scripts.

The method (what `method` says in every result):
  1. Warm-up, outside the timed region: `warmup` eager calls on the capture stream (module load,
     workspace growth of the C ABI, v06's one-time device probe, cuDNN plan building, cuBLAS
     workspace of that stream). `first_call(out)` lets the caller read the first call's output
     and peak memory there, so it costs no extra call.
  2. The call is captured once in a CUDA graph (torch.cuda.CUDAGraph; global capture mode, then
     relaxed mode if global refuses). The graph's output is poisoned (NaN) and the graph replayed
     once; that replay must reproduce the eager output (else the capture did not record the
     work and the graph is not used). That replay also gives a first time estimate.
  3. Each timed call is ONE graph replay between two CUDA events. Before its start event the GPU
     is kept busy: torch.cuda._sleep (about 0.1 ms at the H200's 1.98 GHz, longer at lower
     clocks) and, when the L2 is flushed, a write of a buffer of 2x the L2 size after it. The
     host enqueues the events and the replay while the GPU still sleeps or flushes, so no host
     time (Python, ctypes, the sdpa_kernel context, the launch itself) lies between the events;
     all `n` calls are enqueued before one synchronize.
  4. Fallback, only if capture fails or the replay check fails: the same loop with eager calls
     instead of replays (longer sleep, ~0.5 ms, to cover the host's enqueue); `method` then says
     "eager launches" and why (e.g. "eager launches, events, L2 not flushed (graph capture
     failed: ...)").
  The L2 flush is on by default when the problem's inputs + outputs (`problem_bytes`, given by
  the caller) are under 4x the L2 size (torch.cuda.get_device_properties().L2_cache_size), so
  that a call does not find its inputs in the L2 that the previous call left there; above that
  the L2 can hold only a small part of the data and flushing is off (flush_l2=True/False forces
  either).
  n = min(reps, max(min_reps, max_time_s / estimate)) timed calls: slow kernels get fewer
  (the caller records n; nothing is dropped silently).

Samples and spread: a result is the median over its n calls. A benchmark sweeps its whole grid
twice in the same run (sample 0, then sample 1, minutes apart); each sample's median is that
sample's number and the run-to-run spread of a number is |s0 - s1| / mean(s0, s1) (spread()).
A difference between two implementations smaller than that spread is not a result.

This module imports torch only when a function that needs the GPU runs, so the summaries can use
spread() on a machine without torch.

Warnings: importing this module silences PyTorch's known SDPA backend-selection UserWarnings (the
messages of SDPA_WARNINGS: why a backend was not used for a shape, a dtype or a head count). The
benchmarks ask every backend in turn, so those warnings are expected; a refusal is recorded in the
row's status and error column instead, and the warning text would only print the GPU machine's
file paths into the logs. Only those messages are filtered; every other warning still prints.
"""
import csv
import json
import os
import statistics
import subprocess
import sys
import time
import warnings

# PyTorch's SDPA backend-selection UserWarnings (message starts, matched case-insensitively by
# warnings.filterwarnings); see "Warnings" in the module comment.
SDPA_WARNINGS = ("Memory efficient kernel not used", "Flash attention kernel not used",
                 "cuDNN attention kernel not used", "Memory Efficient attention has been runtime disabled",
                 "Expected query, key and value to all be of dtype", "For dense input, both fused kernels require")
for _msg in SDPA_WARNINGS:
    warnings.filterwarnings("ignore", message=_msg, category=UserWarning)

SLEEP_CYCLES = 200_000          # ~0.1 ms at 1.98 GHz: covers enqueue of events + one graph replay
SLEEP_CYCLES_EAGER = 1_000_000  # ~0.5 ms: covers a Python-level eager call (fallback only)
FLUSH_FACTOR = 2                # the flush writes FLUSH_FACTOR x L2 bytes
AUTO_FLUSH_BELOW = 4            # flush by default if problem_bytes < AUTO_FLUSH_BELOW x L2

_flush_buf = {}


def spread(s0, s1):
    """Run-to-run spread of one number measured in two samples: |s0 - s1| / mean(s0, s1)."""
    m = (s0 + s1) / 2
    return abs(s0 - s1) / m if m else float("nan")


def l2_cache_bytes(device=None):
    import torch
    return int(torch.cuda.get_device_properties(device if device is not None else torch.cuda.current_device()).L2_cache_size)


def flush_default(problem_bytes, device=None):
    """True when the inputs + outputs of the problem fit in 4x the L2: then the L2 is flushed."""
    return problem_bytes is not None and problem_bytes < AUTO_FLUSH_BELOW * l2_cache_bytes(device)


def prepare(device=None):
    """Allocate the flush buffer now (so that it does not show in a caller's peak-memory window)."""
    _flush_buffer(device)


def _flush_buffer(device=None):
    import torch
    dev = device if device is not None else torch.cuda.current_device()
    if dev not in _flush_buf:
        _flush_buf[dev] = torch.empty(FLUSH_FACTOR * l2_cache_bytes(dev), dtype=torch.uint8, device=dev)
    return _flush_buf[dev]


def _busy(flush, cycles):
    """Keep the GPU busy on the current stream so the host can enqueue the timed call meanwhile."""
    import torch
    torch.cuda._sleep(cycles)
    if flush:
        _flush_buffer().fill_(1)


def _first_tensor(x):
    import torch
    if isinstance(x, torch.Tensor):
        return x
    if isinstance(x, (tuple, list)):
        for y in x:
            t = _first_tensor(y)
            if t is not None:
                return t
    return None


def _same(a, b):
    """'' when a reproduces b, else why not. Bit-identical passes; otherwise the difference must
    stay within a reduction-order wobble: 1e-3 of max|b|, or two units in the last place of b's
    dtype at max|b| (a kernel accumulating with fp32 atomics, e.g. a backward's dQ, may round a
    bf16 element one ulp differently on every call). A capture that did not record the work leaves
    the NaN-poisoned output behind, or an output off by O(max|b|), and fails either way."""
    import torch
    if a.shape != b.shape:
        return f"shape {tuple(a.shape)} vs {tuple(b.shape)}"
    if torch.equal(a, b):
        return ""
    if not a.is_floating_point():
        return "integer output differs"
    if not torch.equal(torch.isnan(a), torch.isnan(b)):
        return "NaN pattern differs (an output element was not written by the replay)"
    af, bf = torch.nan_to_num(a.float()), torch.nan_to_num(b.float())
    diff = (af - bf).abs().max().item()
    scale = bf.abs().max().item()
    ulp = torch.finfo(b.dtype).eps
    tol = max(1e-3, 2 * ulp) * max(scale, 1e-30)
    return "" if diff <= tol else f"max |replay - eager| = {diff:.3g} (max |eager| {scale:.3g})"


def _timed_loop(launch, n, flush, cycles):
    """n calls of launch(), each between two events with the GPU busy before the start event."""
    import torch
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    for i in range(n):
        _busy(flush, cycles)
        starts[i].record()
        launch()
        ends[i].record()
    torch.cuda.synchronize()
    return [s.elapsed_time(e) for s, e in zip(starts, ends)]


def _capture(fn, stream, mode):
    import torch
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=stream, capture_error_mode=mode):
        static = fn()
    return g, static


def time_call(fn, problem_bytes=None, flush_l2=None, reps=30, min_reps=3, max_time_s=None, warmup=1,
              first_call=None, capture=True, hold_s=0.0):
    """Kernel time of fn() (one call of the implementation, outputs preallocated where it can).

    problem_bytes: inputs + outputs of the call, for the default flush rule (flush_default);
    flush_l2: True/False forces the flush on/off. reps: timed calls wanted; max_time_s: cap on
    n x estimate (n >= min_reps). warmup: eager calls before capture (>= 1). first_call(out):
    called once after the first warm-up call has finished, with its output. capture=False skips the
    CUDA-graph capture and times eager launches (the fallback below) for calls that must not be
    captured, e.g. collectives that every rank of a process group has to issue the same number of
    times (a capture that fails on one rank only would leave the others waiting). hold_s: after the
    warm-up, fn() runs back to back for this many seconds (synchronized every 20 calls), so that the
    GPU reaches the clock this call holds under its power cap before the timed calls (outside the
    timed region; 0: none, the default; experiments/gpu/sustained_clock.py measures why it matters).
    Returns dict(median_ms, min_ms, max_ms, n, method, flush_l2, check): `check` says how the
    replay reproduced the eager output. fn's own exception propagates if it fails in warm-up.
    """
    import torch
    if warmup < 1:
        raise ValueError("time_call: warmup must be >= 1 (capture only after a warm-up call)")
    flush = flush_default(problem_bytes) if flush_l2 is None else bool(flush_l2)
    if flush:
        prepare()
    where = "L2 flushed" if flush else "L2 not flushed"
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for i in range(warmup):
            out = fn()
            if i == 0 and first_call is not None:
                torch.cuda.synchronize()
                first_call(out)
        if hold_s > 0:
            t_hold = time.monotonic()
            while time.monotonic() - t_hold < hold_s:
                for _ in range(20):
                    out = fn()
                torch.cuda.synchronize()
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    ref = _first_tensor(out)
    ref = ref.clone() if ref is not None else None
    del out

    graph, why_not = None, ([] if capture else ["capture off by the caller"])
    for mode in (("global", "relaxed") if capture else ()):
        try:
            g, static = _capture(fn, stream, mode)
        except Exception as e:  # noqa: BLE001 - any refusal of capture means: fall back, and say why
            torch.cuda.synchronize()
            why_not.append(f"{mode} capture failed: {(str(e).splitlines() or [type(e).__name__])[0][:100]}")
            continue
        torch.cuda.synchronize()
        st = _first_tensor(static)
        if ref is not None and st is not None:
            if st.is_floating_point():
                st.fill_(float("nan"))
            else:
                st.fill_(-1)
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        g.replay()
        e1.record()
        torch.cuda.synchronize()
        bad = _same(st, ref) if (ref is not None and st is not None) else ""
        if bad:
            why_not.append(f"{mode} capture's replay did not reproduce the eager call: {bad}")
            del g, static
            continue
        graph, estimate = g, e0.elapsed_time(e1)
        check = ("replay output not checked (no tensor returned)" if ref is None or st is None
                 else "replay reproduces the eager output")
        method = f"cuda-graph replay{' (relaxed capture)' if mode == 'relaxed' else ''}, events, {where}"
        break

    if graph is None:
        # Fallback: eager calls, each between events, the GPU kept busy before each start.
        times = _timed_loop(fn, 1, flush, SLEEP_CYCLES_EAGER)
        estimate = times[0]
        check = "eager calls (no replay to check)"
        method = f"eager launches, events, {where} ({'; '.join(why_not)})"
        launch, cycles = fn, SLEEP_CYCLES_EAGER
    else:
        launch, cycles = graph.replay, SLEEP_CYCLES
    n = reps
    if max_time_s is not None and estimate > 0:
        n = min(reps, max(min_reps, int(max_time_s * 1e3 / estimate)))
    times = _timed_loop(launch, n, flush, cycles)
    del graph
    if hold_s > 0:
        method += f", after {hold_s:g} s back to back"
    return dict(median_ms=statistics.median(times), min_ms=min(times), max_ms=max(times), n=n,
                method=method, flush_l2=flush, check=check)


# ---------------------------------------------------------------------------------------------
# The context and the files of a timed run (shared by bench_sdpa.py, bench_tiles.py, ceilings.py).

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
METHOD = ("experiments/gpu/timing.py: warm-up outside the timed region, then per timed call one CUDA-graph "
          "replay between two CUDA events, enqueued while the GPU sleeps (and flushes the L2: a write of "
          "2x L2 bytes, when inputs + outputs < 4x L2), all calls enqueued before one synchronize; median, "
          "min and max over n calls; eager launches between events only where capture fails (the row's "
          "`timing` says so); with a hold (hold_s > 0, the row's `timing` says so) the call first runs back to back "
          "for that long. Two samples per run (the grid swept twice); spread = |s0 - s1| / mean.")


def portable_command(argv, out_dir=None):
    """The command line with no machine path: paths inside the repository become relative to it,
    the results folder becomes <results>, any other absolute path keeps only its last part."""
    out_abs = os.path.abspath(out_dir) if out_dir else None

    def fix(a):
        if a.startswith("--") and "=" in a:
            k, v = a.split("=", 1)
            return k + "=" + fix(v)
        if not os.path.isabs(a):
            return a  # relative: to the repository root, where the scripts run
        p = os.path.normpath(a)
        if out_abs and (p == out_abs or p.startswith(out_abs + os.sep)):
            return "<results>" + p[len(out_abs):]
        if p == REPO or p.startswith(REPO + os.sep):
            return os.path.relpath(p, REPO)
        return "<abs>/" + os.path.basename(p)

    return " ".join(fix(a) for a in argv)


def _read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return ""


def _driver():
    try:
        r = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                           capture_output=True, text=True, timeout=20)
        if r.returncode == 0 and r.stdout.strip():
            return r.stdout.strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError):
        pass
    import torch
    try:
        return f"CUDA driver API {torch._C._cuda_getDriverVersion()} (nvidia-smi not available)"
    except Exception:  # noqa: BLE001
        return "unknown"


def run_context(commit=None, out_dir=None, **extra):
    """What a results file says about its run: GPU, driver, torch/CUDA/cuDNN versions, commit,
    date, command (paths relative to the repository), the timing method."""
    import torch
    dev = torch.cuda.current_device()
    p = torch.cuda.get_device_properties(dev)
    carry = os.path.join(REPO, "build-gpu", "carry")
    return dict(gpu=torch.cuda.get_device_name(dev), driver=_driver(), sms=p.multi_processor_count,
                l2_bytes=int(p.L2_cache_size), memory_bytes=int(p.total_memory), torch=torch.__version__,
                cuda=torch.version.cuda, cudnn=torch.backends.cudnn.version(),
                commit=commit or _read(os.path.join(carry, "COMMIT")) or "unknown",
                built=_read(os.path.join(carry, "BUILT")).replace("\n", "; "),
                date=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                command=portable_command(sys.argv, out_dir), timing=METHOD, **extra)


def write_results(out_dir, stem, rows, context):
    """OUT_DIR/STEM.json (rows with context) and OUT_DIR/STEM.csv (tidy, one row per dict; columns
    in order of first appearance)."""
    if not rows:
        return
    cols = []
    for r in rows:
        cols += [k for k in r if k not in cols]
    with open(os.path.join(out_dir, f"{stem}.json"), "w") as f:
        json.dump(dict(context=context, rows=rows), f, indent=1)
    with open(os.path.join(out_dir, f"{stem}.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols, restval="")
        w.writeheader()
        w.writerows(rows)

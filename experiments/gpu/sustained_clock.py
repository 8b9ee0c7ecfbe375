"""experiments/gpu/sustained_clock.py: the SM clock and power each forward sustains under the GPU's
power cap, beside its kernel time, so that a time ratio can be split into cycles and clock.

  IOATTN_CAPI=... python3 experiments/gpu/sustained_clock.py --out DIR [--impls A,B] [--points d:N:causal,...]

Why: on the H200 the benchmarks run under the software power cap (clocks_event_reasons 0x4, SM clock
1575-1980 MHz while kernels run). Two kernels of equal cycles can then differ in time when one
draws more power. Nsight Compute replays one kernel at a time with idle gaps between replays, so its
durations do not show the clock a kernel holds when it runs back to back.

Per point (--dtype, bf16 by default; batch x N = 16k, hidden 2048, as bench_sdpa.py) and impl, in the order A B B A (two
samples per impl, the second pass reversed): timing.time_call (the project's one timing method:
CUDA-graph replays, L2 flushed where the problem fits, median of the timed calls) with hold_s = --hold-s
runs the forward back to back for that long, then times it while the GPU is still at that state;
`nvidia-smi -lms 100` samples the SM clock and the power draw all along. (Runs before 2026-12-02's
--dtype commit held in a loop of this script's own, the same calls; timing.py has the hold since.) Reported per sample: median SM clock and power over the
hold's second half, the kernel time, and kernel cycles = time x clock (an estimate: the clock during
the timed calls is taken as the hold's).

Writes DIR/clock.csv and DIR/clock.json (timing.write_results: one row per sample, the json with the run's
context; runs before that commit wrote context.json beside clock.csv) and DIR/smi.csv (nvidia-smi's samples);
prints a table.
"""
import argparse
import csv
from collections import Counter
import statistics
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_sdpa as bs  # noqa: E402  (its Inputs and call factories: the benchmark's own calls)
import timing  # noqa: E402


def parse_points(text):
    """'d:N:causal,...' -> [(d, N, causal)]; a bad item ends the run with one line naming it."""
    pts = []
    for item in text.split(","):
        f = item.split(":")
        if len(f) != 3 or not f[0].isdigit() or not f[1].isdigit() or f[2] not in ("0", "1") or int(f[0]) < 1 or int(f[1]) < 1:
            raise SystemExit(f"sustained_clock.py: --points item '{item}' must be d:N:causal with d, N >= 1 and causal 0 or 1")
        pts.append((int(f[0]), int(f[1]), f[2] == "1"))
    return pts


def sample_smi(path):
    """Start nvidia-smi sampling into path; returns the process."""
    return subprocess.Popen(["nvidia-smi", "--query-gpu=timestamp,clocks.sm,power.draw,clocks_event_reasons.active",
                             "--format=csv,noheader,nounits", "-lms", "100"], stdout=open(path, "w"),
                            stderr=subprocess.DEVNULL)


def read_smi(path, t_from, t_to):
    """(clock MHz, power W, throttle reasons) of the samples taken between epoch times t_from and t_to
    (nvidia-smi's timestamps are local time, as time.mktime reads them)."""
    out = []
    for line in open(path):
        f = [x.strip() for x in line.split(",")]
        if len(f) < 3:
            continue
        try:
            whole, _, frac = f[0].partition(".")
            ts = time.mktime(time.strptime(whole, "%Y/%m/%d %H:%M:%S")) + float("0." + (frac or "0"))
            out.append((ts, float(f[1]), float(f[2]), f[3] if len(f) > 3 else ""))
        except ValueError:
            continue
    return [(c, p, r) for ts, c, p, r in out if t_from <= ts <= t_to]


def median(xs):
    """statistics.median (the mean of the two middle values for an even count); NaN for none. (Before the
    commit that made it so, the upper middle value: in the committed runs each row's sm_mhz and power_w
    are the upper middle of its nvidia-smi samples and clock.log's summary table of two samples shows the
    larger one; the README's ranges are per pair of samples, from the rows.)"""
    return statistics.median(xs) if xs else float("nan")


def summary(rows, points, impls):
    """Per point, each impl's medians over its samples and its time and cycles over the first impl's."""
    lines = ["point                 impl                          ms      MHz      W   Mcycles   (over the first: time, cycles)"]
    for d, n, causal in points:
        sel = [r for r in rows if (r["d"], r["n"], r["causal"]) == (d, n, int(causal))]
        agg = {}
        for impl in impls:
            rs = [r for r in sel if r["impl"] == impl]
            if rs:
                agg[impl] = {k: median([r[k] for r in rs]) for k in ("median_ms", "sm_mhz", "power_w", "mcycles")}
        if impls[0] not in agg:
            continue
        a0 = agg[impls[0]]
        for impl, a in agg.items():
            lines.append(f"d {d:3d} N {n:5d} c {int(causal)}   {impl:28s} {a['median_ms']:7.3f} {a['sm_mhz']:7.0f} "
                         f"{a['power_w']:6.0f} {a['mcycles']:8.3f}   {a['median_ms'] / a0['median_ms']:.3f} "
                         f"{a['mcycles'] / a0['mcycles']:.3f}")
    return lines


def headline(rows, first, peer):
    """One sentence from clock.csv's rows: per (d, causal) and N < 2k / N >= 2k, the range of peer time /
    first time over the pairs of samples, then the power and each impl's clock range."""
    def f(x):
        return float(x)
    by = {}
    for r in rows:
        by.setdefault((int(r["d"]), int(r["causal"]), int(r["n"])), {})[(r["impl"], int(r["sample"]))] = r
    parts = []
    for d, c in sorted({(k[0], k[1]) for k in by}, key=lambda x: (-x[0], x[1])):
        seg = []
        for lo, hi, name in ((0, 2048, "N < 2k"), (2048, 1 << 40, "N >= 2k")):
            ratios = [f(v[(peer, s)]["median_ms"]) / f(v[(first, s)]["median_ms"])
                      for (dd, cc, n), v in by.items() if (dd, cc) == (d, c) and lo <= n < hi
                      for s in (0, 1) if (peer, s) in v and (first, s) in v]
            if ratios:
                seg.append(f"{name} {min(ratios):.2f}-{max(ratios):.2f}")
        parts.append(f"d {d} {'causal' if c else 'non-causal'} " + ", ".join(seg))
    w = [f(r["power_w"]) for r in rows]
    clk = {i: [f(r["sm_mhz"]) for r in rows if r["impl"] == i] for i in (first, peer)}
    return ("; ".join(parts) + f" (every point at {min(w):.0f}-{max(w):.0f} W; SM clock {first.split(':')[-1]} "
            f"{min(clk[first]):.0f}-{max(clk[first]):.0f} MHz, {peer.split(':')[-1]} {min(clk[peer]):.0f}-{max(clk[peer]):.0f} MHz)")


def read_rows(folder):
    path = os.path.join(folder, "clock.csv")
    if not os.path.exists(path):
        raise SystemExit(f"sustained_clock.py: no {path}")
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def self_test():
    """The parsing and the summary on synthetic input (CPU; ctest sustained_clock_cpu)."""
    import io
    from contextlib import redirect_stderr
    assert median([1.0, 3.0]) == 2.0 and median([1.0, 2.0, 9.0]) == 2.0
    assert parse_points("64:512:1,128:1024:0") == [(64, 512, True), (128, 1024, False)]
    for bad in ("64:512", "64:512:2", "x:512:0", "64:0:0"):
        try:
            with redirect_stderr(io.StringIO()):
                parse_points(bad)
            raise AssertionError(f"accepted {bad}")
        except SystemExit as e:
            assert "must be d:N:causal" in str(e), e
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), ".sustained_clock_selftest.csv")
    try:
        with open(path, "w") as f:
            f.write("2026/12/02 17:43:18.644, 345, 81.36, 0x1\n2026/12/02 17:43:19.744, 1980, 126.09, 0x0\ngarbage\n")
        t = time.mktime(time.strptime("2026/12/02 17:43:19", "%Y/%m/%d %H:%M:%S"))
        assert read_smi(path, t, t + 1) == [(1980.0, 126.09, "0x0")], read_smi(path, t, t + 1)
        assert read_smi(path, t - 1, t + 1)[0][0] == 345.0
    finally:
        os.remove(path)
    rows = [dict(d=128, n=8192, causal=0, impl=i, sample=s, median_ms=ms, sm_mhz=mhz, power_w=690, mcycles=ms * mhz * 1e-3)
            for i, s, ms, mhz in (("a", 0, 1.0, 1700), ("b", 0, 1.1, 1600), ("a", 1, 1.0, 1700), ("b", 1, 1.1, 1600))]
    out = summary(rows, [(128, 8192, False)], ["a", "b"])
    assert len(out) == 3 and out[2].split()[-2:] == ["1.100", "1.035"], out
    h = headline([{k: str(v) for k, v in r.items()} for r in rows], "a", "b")
    for bad in ("ioattn:x", "sdpa:nope,ioattn:x", "ioattn:x,ioattn:x"):
        try:
            main(["--impls", bad, "--out", "unused"])
            raise AssertionError(f"accepted --impls {bad}")
        except SystemExit as e:
            assert "--impls must name" in str(e), e
    assert h == "d 128 non-causal N >= 2k 1.10-1.10 (every point at 690-690 W; SM clock a 1700-1700 MHz, b 1600-1600 MHz)", h
    print("sustained_clock.py self-test: ok")
    return 0


def make_fn(impl, inp, causal, b, h, n, d):
    if impl.startswith("sdpa:"):
        return bs.sdpa_fn(inp, "fwd", bs.SDPA[impl], causal)[0]
    name = impl.split(":", 1)[1]
    return bs.ioattn_fn(inp, "fwd", name, name, causal, b, h, n, d)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="results folder (required unless --self-test)")
    ap.add_argument("--self-test", action="store_true", help="the parsing and the summary on synthetic input")
    ap.add_argument("--summarize", metavar="DIR", help="print the one-sentence headline of a committed run's clock.csv")
    ap.add_argument("--impls", default="ioattn:v08p_fa3_persistent,sdpa:cudnn")
    ap.add_argument("--points", default="128:8192:0,128:16384:0", help="d:N:causal,...")
    ap.add_argument("--dtype", choices=["bf16", "fp16"], default="bf16")
    ap.add_argument("--hold-s", type=float, default=4.0, help="back-to-back seconds before each timing")
    ap.add_argument("--commit", default="")
    args = ap.parse_args(argv)
    if args.self_test:
        return self_test()
    impls = args.impls.split(",")
    bad = [i for i in impls if i not in bs.SDPA_NAMES and not (i.startswith("ioattn:") and len(i) > len("ioattn:"))]
    if bad or len(impls) < 2 or len(set(impls)) != len(impls):
        raise SystemExit(f"sustained_clock.py: --impls must name two or more distinct implementations, each one of "
                         f"{', '.join(bs.SDPA_NAMES)} or ioattn:<variant> (got '{args.impls}')")
    if args.summarize:
        print(headline(read_rows(args.summarize), impls[0], impls[1]))
        return 0
    if not args.out:
        ap.error("--out is required")
    points = parse_points(args.points)  # refused before any GPU work
    bs.import_torch()
    os.makedirs(args.out, exist_ok=True)
    rows = []
    ctx = timing.run_context(commit=args.commit or None, out_dir=args.out, script="experiments/gpu/sustained_clock.py")
    smi_path = os.path.join(args.out, "smi.csv")  # every sample of the run, kept
    smi = sample_smi(smi_path)
    try:
        for d, n, causal in points:
            b = max(1, 16384 // n)
            h, _ = bs.heads_for(d, 0, 0)
            inp = bs.Inputs(b, h, n, d, bs.DTYPES[args.dtype], False)
            flops = bs.fwd_flops(b, h, n, d, causal)
            nbytes = 4 * b * n * h * d * 2
            for sample, order in enumerate((impls, impls[::-1])):
                for impl in order:
                    fn = make_fn(impl, inp, causal, b, h, n, d)
                    t0 = time.time()  # the hold starts after one warm-up call (timing.time_call's)
                    r = timing.time_call(fn, problem_bytes=nbytes, hold_s=args.hold_s)
                    t_half, t_end = t0 + args.hold_s / 2, t0 + args.hold_s
                    time.sleep(0.3)  # let nvidia-smi write the hold's last samples
                    s = read_smi(smi_path, t_half, t_end)
                    clk, pw = median([c for c, _, _ in s]), median([p for _, p, _ in s])
                    ms = r["median_ms"]
                    rows.append(dict(dtype=args.dtype, d=d, n=n, causal=int(causal), impl=impl, sample=sample, median_ms=ms,
                                     tflops=flops / ms / 1e9, sm_mhz=clk, power_w=pw, smi_samples=len(s),
                                     reasons=Counter(x for _, _, x in s).most_common(1)[0][0] if s else "",
                                     mcycles=ms * clk * 1e-3, method=r["method"]))
                    print(f"d {d} N {n} causal {int(causal)} {impl:28s} s{sample} {ms:8.3f} ms {clk:6.0f} MHz "
                          f"{pw:5.0f} W  {rows[-1]['mcycles']:8.3f} Mcycles", flush=True)
            timing.write_results(args.out, "clock", rows, ctx)  # after every point: a time cap keeps what ran
    finally:
        smi.terminate()
    print("\n".join(summary(rows, points, impls)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

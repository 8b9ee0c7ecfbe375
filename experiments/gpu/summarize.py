"""The summary run_h200.sh prints last, from the files of one H200 results folder.

    python3 experiments/gpu/summarize.py DIR

DIR holds what run_h200.sh wrote (any subset): test_gpu.log, test_gpu_backward.log, pybad.log,
autograd.log, train_gpt.json, ceilings.csv, ncu.csv, tiles.csv, bench.csv. Sections, in this order
(the last one of each bench pass is its headline):
  GPU suite       the `variant NAME: N cases run, M refused` lines and any FAIL line (forward
                  suite, then the backward suite)
  bad input       the last line of python/test_bad_input.py's log, then of python/test_autograd.py's
  train_gpt       the summary of experiments/gpu/train_gpt.py (steps, step time, peak memory, loss
                  difference and its tolerance)
  ceilings        copy GB/s and GEMM TFLOP/s per sample, mean and spread
  ncu             DRAM read / compulsory read, DRAM write / compulsory write, FLOP per DRAM byte,
                  L2 bytes / compulsory bytes, the launch configuration
  tiles           v03 time per (Br, Bc) and the configuration that ran
  bench           TFLOP/s per impl and config (mean of the samples), the spread per impl, the
                  launch configuration of every ioattn variant, timing methods, rows not run
  ratios          every ioattn variant vs SDPA flash and cuDNN, per config:
                  "1.04x (s0 1.03, s1 1.05) win"
  headline        per config, the best ioattn variant against flash and cuDNN, and the counts
  (bench, ratios and headline once per pass in bench.csv's `pass` column: fwd, bwd, fwdbwd; a
  file without the column is all fwd; FLOPs by the FA2 convention: bwd 2.5x, fwdbwd 3.5x fwd)
  memory          the fwdbwd rows' peak_extra_mib per N (the FA paper's memory figure: sdpa:math
                  the naive path, sdpa:flash and ioattn the flash path), when there are fwdbwd rows
A ratio is speedup = ms(peer) / ms(ioattn) per sample; the number is the mean of the samples and
its spread |r0 - r1| / mean (timing.spread). It is a "win" when the margin (mean - 1) exceeds the
spread, a "loss" when (1 - mean) does, else "not a win" (the margin is smaller than the spread);
with one sample there is no spread and the verdict is "one sample". Reads old folders too (no
`sample` column: one sample).
"""
import csv
import json
import os
import re
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import spread  # noqa: E402  (no torch needed for spread)

PASS_WHAT = {"fwd": "forward", "bwd": "backward alone", "fwdbwd": "forward + backward"}
PASS_FLOPS = {"fwd": "4*B*H*N^2*d, /2 causal", "bwd": "2.5x fwd", "fwdbwd": "3.5x fwd"}
CONFIG_COLS = ["br", "bc", "stages", "threads", "smem_bytes", "ctas_per_sm", "grid_order", "launches", "splits"]


def read_csv(path):
    if not os.path.exists(path):
        return None
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def fnum(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


PEERS = ("sdpa:flash", "sdpa:cudnn", "peer:triton_fa2")  # what the ioattn rows are compared with


def short(impl):
    return impl.replace("ioattn:", "").replace("sdpa:", "").replace("peer:", "")


def is_ok(r):
    return (r.get("status") in ("ok", None, "")) and fnum(r.get("ms")) is not None and fnum(r.get("tflops")) is not None


def config_key(r):
    return (r["dtype"], int(r["head_dim"]), int(r["causal"]), int(r["seqlen"]))


def row_pass(r):
    """The row's pass: fwd, bwd or fwdbwd (rows of files without the column are fwd)."""
    return (r.get("pass") or "fwd").lower()


def passes_of(rows):
    out = []
    for r in rows:
        if row_pass(r) not in out:
            out.append(row_pass(r))
    return out


def bench_points(rows, pass_="fwd"):
    """{(dtype, d, causal, N): {impl: {sample: row}}} of the rows of one pass that ran."""
    pts = defaultdict(lambda: defaultdict(dict))
    for r in rows:
        if is_ok(r) and row_pass(r) == pass_:
            pts[config_key(r)][r["impl"]][int(r.get("sample") or 0)] = r
    return pts


def impl_order(rows):
    out = []
    for r in rows:
        if r["impl"] not in out:
            out.append(r["impl"])
    return out


def mean_of(samples, col):
    v = [fnum(s[col]) for s in samples.values() if fnum(s.get(col)) is not None]
    return sum(v) / len(v) if v else None


def ratio(ioattn, peer):
    """(mean, [r per sample], spread or None) of speedup ms(peer) / ms(ioattn), over the samples both have."""
    common = sorted(set(ioattn) & set(peer))
    rs = [fnum(peer[s]["ms"]) / fnum(ioattn[s]["ms"]) for s in common]
    if not rs:
        return None, [], None
    m = sum(rs) / len(rs)
    return m, rs, (spread(rs[0], rs[1]) if len(rs) >= 2 else None)


def verdict(m, sp):
    if sp is None:
        return "one sample"
    if m - 1 > sp:
        return "win"
    if 1 - m > sp:
        return "loss"
    return "not a win"


def fmt_ratio(m, rs, sp):
    if m is None:
        return "-"
    f = ".2f" if m >= 0.1 else ".3f"
    per = ", ".join(f"s{i} {r:{f}}" for i, r in enumerate(rs))
    return f"{m:{f}}x ({per}) {verdict(m, sp)}"


def section_suite(d, log="test_gpu.log", title="GPU suite"):
    path = os.path.join(d, log)
    if not os.path.exists(path):
        return
    lines = open(path, errors="replace").read().splitlines()
    var = [ln for ln in lines if ln.startswith("variant ")]
    fails = [ln for ln in lines if "FAIL" in ln]
    print(f"{title} ({log}): per-variant coverage")
    for ln in var or ["(no `variant NAME: ...` lines: the suite did not reach its coverage report)"]:
        print("  " + ln)
    print(f"  FAIL lines: {len(fails)}" + "".join("\n  " + f for f in fails[:10]))
    print()


def section_pybad(d, log="pybad.log", title="python bad-input test"):
    path = os.path.join(d, log)
    if os.path.exists(path):
        lines = [ln for ln in open(path, errors="replace").read().splitlines() if ln.strip()]
        print(f"{title} ({log}): " + (lines[-1] if lines else "empty log"))
        print()


def section_ceilings(d):
    rows = read_csv(os.path.join(d, "ceilings.csv"))
    if not rows:
        return
    by = defaultdict(dict)
    for r in rows:
        by[(r["name"], r["dtype"], r["unit"])][int(r["sample"])] = r
    print("ceilings (ceilings.csv): value from the median time; best = from the fastest call")
    for (name, dt, unit), s in by.items():
        vals = [fnum(s[i]["value"]) for i in sorted(s)]
        if None in vals:  # a ceiling that could not run here (ceilings.py: check 'unsupported: why')
            print(f"  {name:10s} {dt:5s} not measured: " + "; ".join(sorted({s[i]["check"] for i in s})))
            continue
        best = max(fnum(s[i]["value_at_min"]) for i in s)
        sp = f"spread {spread(vals[0], vals[1]) * 100:.1f}%" if len(vals) >= 2 else "one sample"
        checks = "; ".join(sorted({s[i]["check"] for i in s}))
        print(f"  {name:10s} {dt:5s} " + " ".join(f"s{i} {v:8.1f}" for i, v in enumerate(vals))
              + f"  mean {sum(vals) / len(vals):8.1f} {unit}  best {best:8.1f}  {sp}  [{checks}]")
    print()


def ncu_compulsory(r):
    """(read, write) compulsory bytes: the columns of the new format, else from the shape."""
    cr, cw = fnum(r.get("compulsory_read_bytes")), fnum(r.get("compulsory_write_bytes"))
    if cr and cw:
        return cr, cw
    b, n, h, dd = (int(r[c]) for c in ("batch", "seqlen", "heads", "head_dim"))
    elem = 4 if r["dtype"] == "fp32" else 2
    return 3 * b * n * h * dd * elem, b * n * h * dd * elem + 4 * b * h * n


def section_ncu(d):
    rows = read_csv(os.path.join(d, "ncu.csv"))
    if not rows:
        return
    print("ncu (bf16, d=128, non-causal; pass fwd: one forward, compulsory read Q+K+V, write O+LSE; pass bwd: "
          "one backward, its kernels summed, compulsory read Q+K+V+O+dO+LSE, write dQ+dK+dV): DRAM read / "
          "compulsory read, DRAM write / compulsory write, FLOP per DRAM byte, L2 bytes / compulsory (read+write)")
    for r in rows:
        tag = f"  {r.get('pass') or 'fwd':3s} {short(r['impl']):20s} N={r['seqlen']:>5s} "
        if fnum(r.get("dram_read_bytes")) is None:
            print(tag + (r.get("error") or "no data"))
            continue
        cr, cw = ncu_compulsory(r)
        rd, wr = float(r["dram_read_bytes"]), float(r["dram_write_bytes"])
        b, n, h, dd = (int(r[c]) for c in ("batch", "seqlen", "heads", "head_dim"))
        flops = fnum(r.get("flops")) or 4.0 * b * h * n * n * dd
        cfg = " ".join(f"{c}={r[c]}" for c in CONFIG_COLS if r.get(c) not in (None, ""))
        chk = r.get("config_check") or ""
        print(tag + f"read/comp {rd / cr:8.2f}  write/comp {wr / cw:6.2f}  FLOP/B {flops / (rd + wr):8.1f}  "
              f"L2/comp {float(r['l2_bytes']) / (cr + cw):9.2f}  {float(r['gpu_time_ms']):9.3f} ms  {cfg}"
              + (f"  [{chk}]" if chk else ""))
    print()


def section_tiles(d):
    rows = read_csv(os.path.join(d, "tiles.csv"))
    if not rows:
        return
    print(f"tiles ({short(rows[0]['impl'])}, {rows[0]['dtype']} N={rows[0]['seqlen']} B={rows[0]['batch']} "
          f"H={rows[0]['heads']} d={rows[0]['head_dim']}): ms per sample, the configuration that ran")
    for r in rows:
        asked = f"Br={r.get('br_asked') or r['br']:>3} Bc={r.get('bc_asked') or r['bc']:>3}"
        if is_ok(r):
            cfg = " ".join(f"{c}={r[c]}" for c in CONFIG_COLS if r.get(c) not in (None, ""))
            print(f"  s{r.get('sample', 0)} {asked} {float(r['ms']):9.3f} ms {float(r['tflops']):6.2f} TFLOP/s "
                  f"({r.get('reps') or r.get('iters')} calls)  {cfg}")
        else:
            print(f"  s{r.get('sample', 0)} {asked} {r.get('status') or 'refused'}: {r['error']}")
    print()


def section_bench(rows, pts, impls, pass_="fwd"):
    """rows: the rows of one pass (impls: their impls, in order)."""
    samples = sorted({int(r.get("sample") or 0) for r in rows})
    print(f"bench (bench.csv), pass {pass_} ({PASS_WHAT.get(pass_, pass_)}): TFLOP/s by the FA2 convention "
          f"({PASS_FLOPS.get(pass_, '?')}), mean of {len(samples)} sample(s) {samples}; '-' = not run (see below)")
    print(f"{'dt':4s} {'d':>3s} {'c':1s} {'N':>5s} " + " ".join(f"{short(i)[:9]:>9s}" for i in impls))
    for key in sorted(pts):
        vals = pts[key]
        cells = [f"{mean_of(vals[i], 'tflops'):9.1f}" if i in vals else f"{'-':>9s}" for i in impls]
        print(f"{key[0]:4s} {key[1]:>3d} {key[2]:1d} {key[3]:>5d} " + " ".join(cells))
    if len(samples) >= 2:
        print("run-to-run spread |s0 - s1| / mean of ms, per impl over its configs: median / max")
        for i in impls:
            sps = sorted(spread(float(s[0]["ms"]), float(s[1]["ms"])) for v in pts.values() if i in v
                         for s in [v[i]] if 0 in s and 1 in s)
            if sps:
                print(f"  {short(i):22s} {sps[len(sps) // 2] * 100:5.1f}% / {sps[-1] * 100:5.1f}%  ({len(sps)} configs)")
    # Launch configurations of the ioattn rows, grouped.
    cfgs = defaultdict(lambda: defaultdict(list))
    for r in rows:
        if r["impl"].startswith("ioattn:") and r.get("br") not in (None, "") and int(r.get("sample") or 0) == samples[0]:
            c = " ".join(f"{k}={r[k]}" for k in CONFIG_COLS if r.get(k) not in (None, ""))
            if r.get("forward_kernel"):
                c += f" (after forward {r['forward_kernel']})"
            cfgs[r["impl"]][c].append(f"{r['dtype']}/d{r['head_dim']}/c{r['causal']}/N{r['seqlen']}")
    if cfgs:
        query = "kernel_config" if pass_ == "fwd" else "backward_config"
        print(f"launch configuration of each ioattn variant ({query}), with the configs it applies to:")
        for impl, by in cfgs.items():
            for c, where in by.items():
                ds = sorted({w.split("/")[1] for w in where})
                print(f"  {short(impl):20s} {c}  [{len(where)} configs, {','.join(ds)}]")
    methods = defaultdict(int)
    for r in rows:
        if is_ok(r):
            methods[r.get("timing") or "(not recorded)"] += 1
    print("timing method of the rows: " + "; ".join(f"{n} x {m}" for m, n in methods.items()))
    not_run = defaultdict(int)
    for r in rows:
        if not is_ok(r):
            why = re.sub(r"\b\d+\b", "#", r.get("error") or "no time recorded")
            not_run[(short(r["impl"]), r.get("status") or "error", why)] += 1
    if not_run:
        print("rows not run, over all samples (per impl, status and reason, digits as #):")
        for (i, st, why), n in sorted(not_run.items()):
            print(f"  {i:20s} {n:3d} x {st}: {why[:110]}")
    limited = defaultdict(int)
    for r in rows:
        if is_ok(r) and r.get("limit"):
            limited[(short(r["impl"]), re.sub(r"\d+ of \d+", "# of #", r["limit"]))] += 1
    if limited:
        print("rows timed with a limit:")
        for (i, why), n in sorted(limited.items()):
            print(f"  {i:20s} {n:3d} x {why[:120]}")
    print()


def section_ratios(pts, impls, pass_="fwd"):
    peers = [p for p in PEERS if p in impls]
    mine = [i for i in impls if i.startswith("ioattn:")]
    if not peers or not mine:
        return
    print(f"ratios, pass {pass_}: speedup = ms(peer) / ms(ioattn), mean of the samples (per sample); win / not a win "
          "(margin < spread) / loss")
    for key in sorted(pts):
        vals = pts[key]
        for i in mine:
            if i not in vals:
                continue
            parts = [f"vs {short(p)} {fmt_ratio(*ratio(vals[i], vals[p]))}" for p in peers if p in vals]
            print(f"  {key[0]} d{key[1]:<3d} c{key[2]} N={key[3]:<5d} {short(i):20s} " + " | ".join(parts))
    print()


def section_headline(pts, impls, pass_="fwd"):
    peers = [p for p in PEERS if p in impls]
    if "sdpa:flash" not in peers:
        return
    print(f"headline, pass {pass_}: per config the best ioattn variant (highest mean speedup over SDPA flash)")
    for key in sorted(pts):
        vals = pts[key]
        if "sdpa:flash" not in vals:
            continue
        cands = [(ratio(vals[i], vals["sdpa:flash"])[0] or 0, i) for i in vals if i.startswith("ioattn:")]
        if not cands:
            continue
        _, best = max(cands)
        parts = [f"vs {short(p)} {fmt_ratio(*ratio(vals[best], vals[p]))}" for p in peers if p in vals]
        print(f"  {key[0]} d{key[1]:<3d} c{key[2]} N={key[3]:<5d} {short(best):16s} " + " | ".join(parts))
    print("verdicts per ioattn variant over the configs it ran (win: margin > spread; not a win: margin <= spread):")
    for i in impls:
        if not i.startswith("ioattn:"):
            continue
        for p in peers:
            c = defaultdict(int)
            for vals in pts.values():
                if i in vals and p in vals:
                    m, _, sp = ratio(vals[i], vals[p])
                    c[verdict(m, sp)] += 1
            if c:
                print(f"  {short(i):20s} vs {short(p):5s}: " + ", ".join(f"{v} {n}" for v, n in sorted(c.items()))
                      + f" (of {sum(c.values())})")
    print()


def section_memory(rows):
    """fwdbwd peak_extra_mib per (dtype, d, causal) and N, one column per impl (first sample that has it)."""
    mem = defaultdict(dict)
    impls = []
    for r in rows:
        if row_pass(r) != "fwdbwd" or fnum(r.get("peak_extra_mib")) is None or not is_ok(r):
            continue
        key = (r["dtype"], int(r["head_dim"]), int(r["causal"]), int(r["seqlen"]))
        mem[key].setdefault(r["impl"], fnum(r["peak_extra_mib"]))
        if r["impl"] not in impls:
            impls.append(r["impl"])
    if not mem:
        return
    print("memory, pass fwdbwd: peak device MiB of one forward + backward beyond q, k, v, dO (peak_extra_mib: "
          "torch allocator peak + ioattn's C ABI workspace); sdpa:math = the naive path")
    widths = [max(9, len(short(i))) for i in impls]
    print(f"{'dt':4s} {'d':>3s} {'c':1s} {'N':>5s} " + " ".join(f"{short(i):>{w}s}" for i, w in zip(impls, widths)))
    for key in sorted(mem):
        cells = [f"{mem[key][i]:{w}.1f}" if i in mem[key] else f"{'-':>{w}s}" for i, w in zip(impls, widths)]
        print(f"{key[0]:4s} {key[1]:>3d} {key[2]:1d} {key[3]:>5d} " + " ".join(cells))
    print()


def section_train(d):
    path = os.path.join(d, "train_gpt.json")
    if not os.path.exists(path):
        return
    try:
        with open(path) as f:
            s = json.load(f).get("summary", {})
    except (OSError, ValueError) as e:
        print(f"train_gpt (train_gpt.json): unreadable ({e})")
        print()
        return
    print("train_gpt (train_gpt.json): small GPT trained with ioattn.attention and with SDPA flash from one init")
    for key in ("model", "steps", "precision", "kernels", "step_ms_median", "tokens_per_s", "peak_mib",
                "ioattn_capi_workspace_mib", "loss_first", "loss_last", "copy_loss_first", "copy_loss_last",
                "loss_floor_estimate", "steps_cut", "max_abs_loss_diff",
                "max_rel_smoothed_diff_after", "tolerance", "within_tolerance", "loss_fell", "status"):
        if key in s:
            print(f"  {key:28s} {s[key]}")
    print()


def main(argv):
    if len(argv) > 1 or (argv and argv[0].startswith("-")):
        print(f"summarize.py: usage: summarize.py DIR (got {' '.join(argv)})", file=sys.stderr)
        return 2
    d = argv[0] if argv else "."
    if not os.path.isdir(d):
        print(f"summarize.py: {d} is not a folder", file=sys.stderr)
        return 2
    section_suite(d)
    section_suite(d, "test_gpu_backward.log", "GPU backward suite")
    section_pybad(d)
    section_pybad(d, "autograd.log", "python autograd test")
    section_train(d)
    section_ceilings(d)
    section_ncu(d)
    section_tiles(d)
    rows = read_csv(os.path.join(d, "bench.csv"))
    if not rows:
        print("no bench.csv")
        return 0
    for pass_ in passes_of(rows):
        prow = [r for r in rows if row_pass(r) == pass_]
        pts, impls = bench_points(rows, pass_), impl_order(prow)
        section_bench(prow, pts, impls, pass_)
        section_ratios(pts, impls, pass_)
        section_headline(pts, impls, pass_)
    section_memory(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

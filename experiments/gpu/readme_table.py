"""Write the measured blocks of kernels/README.md from the canonical committed H200 run (no typed numbers).

    /usr/bin/python3 experiments/gpu/readme_table.py [--check] [kernels/README.md]

The run is the one `experiments/results/h200/CANONICAL` names (bench, ncu roles; read through
experiments/results_index.py, committed results only). Three blocks are rewritten, each between
its marker comments:

  MEASURED  one row per impl: bf16 TFLOP/s (FA2 convention) at several (d, causal, N), the mean of
            the run's samples with its spread |s0 - s1| / mean (timing.spread); DRAM read /
            compulsory read (Q + K + V) and DRAM write / compulsory write (O + LSE) at N = 4096,
            d = 128 from the canonical ncu.csv.
  PERF      per (dtype, d, causal) the best ioattn variant against SDPA flash and cuDNN: the
            range of the speedup ms(peer) / ms(ioattn) over N >= 1k and at N = 512, and how many
            points are a win (margin larger than the two-sample spread), not a win, or a loss.
  CHECK     the GPU suite's per-variant lines, the sanitizer summaries and the Python bad-input
            test's closing line, from the logs of the canonical bench folder that has them.

The backward (role bwd: the bench.csv rows with pass bwd and fwdbwd; role train: train_gpt.json)
fills three more blocks of kernels/README.md:

  BWD_MEASURED  one row per backward variant and (dtype, d, causal): the backward's and the
                forward+backward's TFLOP/s over N (mean of the samples; the range over N, with
                the N), and the speedup ms(SDPA) / ms(ioattn) against SDPA flash and cuDNN over
                N, per pass, with the largest two-sample spread of those ratios; then the peak
                device memory of forward+backward at the largest N (naive path = SDPA math).
  BWD_PERF      as PERF, for the pass bwd and the pass fwdbwd (best backward variant per point).
  BWD_CHECK     the backward GPU suite's per-variant lines, its sanitizer summaries, the
                autograd test's closing line and the training check's summary (train_gpt.json:
                step time, peak memory, loss first -> last, the largest relative loss gap and
                its tolerance, verdict).

and, in README.md, the span `bwd_headline` (the best backward against SDPA flash and cuDNN,
backward and forward+backward, and the training check in one sentence).

In README.md it fills the span `h200_headline` (one sentence: the best ioattn against SDPA flash
and cuDNN over the whole grid), `fast_headline` (role fast), and three spans of the inference and
FP8 work, each from its CANONICAL role:

  decode_headline  role decode (bench_decode.py's decode.csv, read through experiments/decode_model.py
                   as the paper reads it): issue 12's targets (paper/gen_decode.py TARGETS) as verdicts
                   per seqlen_q, the faster decode rung's (v07 or v07b, per configuration) share of
                   the same run's copy ceiling (copy_sm) and its ratio to SDPA cuDNN at seqlen_k >= 8k
                   and batch >= 16, pages of 16 keys against contiguous, batch 1 at the longest cache,
                   and where cuDNN (and ioattn) exceed the copy ceiling.
  fp8_headline     role fp8 (bench_sdpa.py --dtypes fp8_e4m3): paper/gen_fp8.py's precision() on the
                   rows of each slice (d 128 and 256 at N >= 4k; d 256, N = 16k), issue 14's target
                   (>= 1.6x the best bf16 forward) and moonshot (1 PFLOP/s) as verdicts.
  varlen_headline  role varlen (bench_varlen.py's varlen.csv): the packed batch through the fastest
                   ioattn variant against SDPA flash and cuDNN on the padded batch, time and peak memory.

Their test: experiments/gpu/test_readme_table.py (synthetic rows, targets met and missed).

--check rewrites nothing and exits 1 when a block differs from what the committed data gives
(a ctest runs it, so the README cannot drift from the data).
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
os.environ["IOATTN_RESULTS"] = os.path.join(REPO, "experiments", "results")  # committed results only
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "experiments"))
import results_index  # noqa: E402
from summarize import (bench_points, fnum, impl_order, mean_of, ncu_compulsory, ratio, read_csv, row_pass,  # noqa: E402
                       short, verdict)
from timing import spread  # noqa: E402

NVIDIA_ONLY = {"ioattn:v06_fa2_wgmma"}  # supports() refuses on AMD (its header)
COLS = [(128, 0, 1024), (128, 0, 4096), (128, 0, 16384), (128, 1, 16384), (64, 0, 16384), (64, 1, 16384)]


def rel(p):
    return str(results_index.rel(p))


def cell(samples):
    """'425.7 ±0.4%' from {sample: row} (two or more samples), '425.7' from one."""
    tf = [float(samples[s]["tflops"]) for s in sorted(samples)]
    m = sum(tf) / len(tf)
    return f"{m:.1f} ±{spread(tf[0], tf[1]) * 100:.1f}%" if len(tf) >= 2 else f"{m:.1f}"


def role_rows(dirs, keep=lambda r: True):
    """bench.csv rows of a role's canonical folders, each with its folder as _tag (a ratio compares
    rows of one folder only); a point measured in two folders: the first listed wins."""
    rows, seen = [], set()
    for d in dirs:
        rs = [dict(r, _tag=os.path.basename(d)) for r in (read_csv(os.path.join(d, "bench.csv")) or []) if keep(r)]
        key = lambda r: (r["impl"], row_pass(r), r["dtype"], r["head_dim"], r["causal"], r["seqlen"])  # noqa: E731
        keys = {key(r) for r in rs}
        rows += [r for r in rs if key(r) not in seen]
        seen |= keys
    return rows


def load_bwd():
    """(bwd/fwdbwd rows of every canonical bwd folder, their folders, the training summary or None,
    the training folder or None)."""
    dirs = results_index.canonical().get("bwd", [])
    rows = role_rows(dirs, lambda r: row_pass(r) in ("bwd", "fwdbwd"))
    summary, _, train_files = results_index.train_run()
    return rows, dirs, summary, (os.path.dirname(train_files[0]) if train_files else None)


def load():
    """(bench rows of every canonical bench folder, their folders, ncu rows, ncu folders)."""
    canon = results_index.canonical()
    bench_dirs, ncu_dirs = canon.get("bench", []), canon.get("ncu", [])
    rows = role_rows(bench_dirs)
    ncu = [r for d in ncu_dirs for r in (read_csv(os.path.join(d, "ncu.csv")) or [])]
    if not rows:
        raise SystemExit("readme_table.py: the canonical run has no bench.csv (experiments/results/h200/CANONICAL)")
    return rows, bench_dirs, ncu, ncu_dirs


def block_measured(rows, bench_dirs, ncu, ncu_dirs):
    pts, impls = bench_points(rows), impl_order(rows)
    nsamples = len({r.get("sample") or "0" for r in rows})
    have = {i for key, v in pts.items() if key[0] == "bf16" for i in v}
    impls = [i for i in impls if i in have]
    dram = {}
    for r in ncu:
        if r.get("dram_read_bytes") and r["seqlen"] == "4096" and r["head_dim"] == "128" and r["causal"] == "0":
            cr, cw = ncu_compulsory(r)
            dram[r["impl"]] = (float(r["dram_read_bytes"]) / cr, float(r["dram_write_bytes"]) / cw)
    head = " | ".join(f"d{d} {'causal' if c else 'non-causal'} N={n // 1024}k" for d, c, n in COLS)
    spread_note = f"mean of {nsamples} samples ±spread |s0 - s1| / mean" if nsamples >= 2 else "one sample"
    srcs = " and ".join(f"`{rel(d)}/bench.csv`" for d in bench_dirs)
    nsrc = " and ".join(f"`{rel(d)}/ncu.csv`" for d in ncu_dirs) or "no ncu.csv"
    lines = [f"Measured on the H200, bf16, TFLOP/s by the FA2 convention ({spread_note}), from {srcs};",
             f"DRAM bytes from {nsrc} (written by `experiments/gpu/readme_table.py` from the run",
             "`experiments/results/h200/CANONICAL` names; '-' = not run at that size).", "",
             f"| impl | {head} | DRAM read / compulsory read (N=4k, d128) | DRAM write / compulsory write | AMD |",
             "|---" * (len(COLS) + 4) + "|"]
    for impl in impls:
        vals = " | ".join(cell(pts[("bf16", d, c, n)][impl]) if impl in pts.get(("bf16", d, c, n), {}) else "-"
                          for d, c, n in COLS)
        amd = ("n/a" if not impl.startswith("ioattn:") else
               "none: wgmma is NVIDIA sm_90a; refused on AMD" if impl in NVIDIA_ONLY else
               "compiled (gfx90a, gfx940), not run")
        dr, dw = (f"{dram[impl][0]:.2f}", f"{dram[impl][1]:.2f}") if impl in dram else ("-", "-")
        lines.append(f"| `{impl}` | {vals} | {dr} | {dw} | {amd} |")
    return lines


def tag_of(samples):
    return next(iter(samples.values())).get("_tag")


def best_ioattn(vals):
    """The ioattn impl with the highest mean speedup over SDPA flash at one point, among those of
    flash's run (a ratio never compares two canonical folders)."""
    t = tag_of(vals["sdpa:flash"]) if "sdpa:flash" in vals else None
    cands = [(ratio(vals[i], vals["sdpa:flash"])[0] or 0, i) for i in vals
             if i.startswith("ioattn:") and tag_of(vals[i]) == t]
    return max(cands)[1] if cands else None


def rng(xs):
    return f"{min(xs):.2f}x" if len(xs) == 1 or f"{min(xs):.2f}" == f"{max(xs):.2f}" else f"{min(xs):.2f}-{max(xs):.2f}x"


def block_perf(rows, pass_="fwd"):
    pts = bench_points(rows, pass_)
    groups = sorted({(k[0], k[1], k[2]) for k in pts})
    lines = ["Best ioattn variant per point against SDPA in the same run: speedup = ms(SDPA) / ms(ioattn),",
             "the mean of the two samples; a point is a win when the margin over 1.0 is larger than the",
             "spread of the ratio between the samples, 'not a win' when it is not, a loss when ioattn is",
             "slower by more than the spread (written by `experiments/gpu/readme_table.py`).", ""]
    if pass_ != "fwd":
        lines[-1:] = [f"Pass `{pass_}` ({'the backward alone' if pass_ == 'bwd' else 'forward + backward'}; "
                      "FA2 convention).", ""]
    lines += ["| dtype | d | causal | vs flash, N >= 1k | win / not a win / loss (N >= 1k) | vs flash, N = 512 "
              "| vs cuDNN, N >= 1k | best variant(s) | largest spread of a ratio |",
              "|---|---|---|---|---|---|---|---|---|"]
    for dt, d, c in groups:
        big, small, cud, counts, best, sps = [], [], [], {"win": 0, "not a win": 0, "loss": 0}, set(), []
        for (kdt, kd, kc, n), vals in sorted(pts.items()):
            if (kdt, kd, kc) != (dt, d, c) or "sdpa:flash" not in vals:
                continue
            b = best_ioattn(vals)
            if b is None:
                continue
            m, _, sp = ratio(vals[b], vals["sdpa:flash"])
            if sp is not None:
                sps.append(sp)
            if n >= 1024:
                big.append(m)
                best.add(short(b))
                counts[verdict(m, sp)] = counts.get(verdict(m, sp), 0) + 1
                if "sdpa:cudnn" in vals:
                    mc, _, spc = ratio(vals[b], vals["sdpa:cudnn"])
                    cud.append(mc)
                    if spc is not None:
                        sps.append(spc)
            elif n == 512:
                small.append(m)
        if not big:
            continue
        worst = f"{max(sps) * 100:.1f}%" if sps else "- (one sample)"
        lines.append(f"| {dt} | {d} | {c} | {rng(big)} | {counts['win']} / {counts['not a win']} / {counts['loss']} "
                     f"| {rng(small) if small else '-'} | {rng(cud) if cud else '-'} | {', '.join(sorted(best))} "
                     f"| {worst} |")
    return lines


def headline(rows, bench_dirs):
    """One sentence for README.md: the best ioattn against SDPA flash and cuDNN over the whole grid."""
    pts = bench_points(rows)
    big, small, cud, sps, lose, best = [], [], [], [], 0, set()
    for (dt, d, c, n), vals in sorted(pts.items()):
        if "sdpa:flash" not in vals or (b := best_ioattn(vals)) is None:
            continue
        m, _, sp = ratio(vals[b], vals["sdpa:flash"])
        sps += [sp] if sp is not None else []
        if n >= 1024:
            big.append(m)
            best.add(short(b))
            lose += verdict(m, sp) != "win"
            if "sdpa:cudnn" in vals:
                cud.append(ratio(vals[b], vals["sdpa:cudnn"])[0])
        else:
            small.append(m)
    dts = sorted({k[0] for k in pts})
    where = ", ".join(f"`{rel(d)}/`" for d in bench_dirs)
    return (f"the best variant ({', '.join(sorted(best))}) reaches {rng(big)} PyTorch SDPA's FlashAttention-2 "
            f"backend at every N ≥ 1k ({'/'.join(dts)}, d 64 and 128, causal or not; "
            f"{'a win at every such point' if not lose else f'{lose} such point(s) not a win'} against the "
            f"two-sample spread, at most {max(sps) * 100:.1f}%), {rng(small)} at N = 512, and {rng(cud)} "
            f"its cuDNN backend ({where}; kernel time, CUDA-graph replays)")


def nk(n):
    return f"{n // 1024}k" if n >= 1024 and n % 1024 == 0 else str(n)


def tf_range(pts, impl, group):
    """'131-159 (N 1k-4k)': the impl's mean TFLOP/s over the N of one (dtype, d, causal) group."""
    vals = sorted((n, mean_of(v[impl], "tflops")) for (dt, d, c, n), v in pts.items() if (dt, d, c) == group and impl in v)
    if not vals:
        return "-"
    lo, hi = min(v for _, v in vals), max(v for _, v in vals)
    ns = f"N {nk(vals[0][0])}" + (f"-{nk(vals[-1][0])}" if len(vals) > 1 else "")
    return (f"{lo:.1f}" if f"{lo:.1f}" == f"{hi:.1f}" else f"{lo:.1f}-{hi:.1f}") + f" ({ns})"


def ratio_range(pts, impl, peer, group, sps):
    """rng() of the mean speedups ms(peer) / ms(impl) over the group's N; spreads appended to sps."""
    ms = []
    for (dt, d, c, n), v in sorted(pts.items()):
        if (dt, d, c) == group and impl in v and peer in v and tag_of(v[impl]) == tag_of(v[peer]):
            m, _, sp = ratio(v[impl], v[peer])
            if m is not None:
                ms.append(m)
            if sp is not None:
                sps.append(sp)
    return rng(ms) if ms else "-"


def block_bwd_measured(rows, dirs):
    if not rows:
        return ["No canonical backward benchmark (role `bwd` in `experiments/results/h200/CANONICAL`)."]
    pts = {p: bench_points(rows, p) for p in ("bwd", "fwdbwd")}
    nsamples = len({r.get("sample") or "0" for r in rows})
    spread_note = f"mean of {nsamples} samples" if nsamples >= 2 else "one sample"
    srcs = " and ".join(f"`{rel(d)}/bench.csv`" for d in dirs)
    lines = [f"Measured on the H200 ({spread_note}; TFLOP/s by the FA2 convention: backward 2.5x, forward+backward",
             f"3.5x the forward's FLOPs; speedup = ms(SDPA) / ms(ioattn), the range over N), from {srcs}, pass",
             "`bwd` (the backward alone, after its paired forward) and `fwdbwd` (the forward it pairs with, then",
             "the backward); written by `experiments/gpu/readme_table.py` from the run `CANONICAL` names.", "",
             "| backward | dtype | d | causal | bwd TFLOP/s | bwd vs flash | bwd vs cuDNN | fwd+bwd TFLOP/s "
             "| fwd+bwd vs flash | fwd+bwd vs cuDNN | largest spread of a ratio |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    groups = sorted({k[:3] for p in pts.values() for k in p})
    impls = [i for i in impl_order(rows) if i.startswith("ioattn:")]
    for impl in impls:
        for g in groups:
            if not any(impl in v for k, v in pts["bwd"].items() if k[:3] == g) and \
               not any(impl in v for k, v in pts["fwdbwd"].items() if k[:3] == g):
                continue
            sps = []
            cells = []
            for p in ("bwd", "fwdbwd"):
                cells += [tf_range(pts[p], impl, g), ratio_range(pts[p], impl, "sdpa:flash", g, sps),
                          ratio_range(pts[p], impl, "sdpa:cudnn", g, sps)]
            worst = f"{max(sps) * 100:.1f}%" if sps else "- (one sample)"
            lines.append(f"| `{short(impl)}` | {g[0]} | {g[1]} | {g[2]} | " + " | ".join(cells) + f" | {worst} |")
    mem = {}
    for r in rows:
        if row_pass(r) == "fwdbwd" and fnum(r.get("peak_extra_mib")) is not None and fnum(r.get("ms")) is not None:
            mem.setdefault((r["dtype"], int(r["head_dim"]), int(r["causal"]), int(r["seqlen"])), {}).setdefault(
                r["impl"], fnum(r["peak_extra_mib"]))
    if mem:
        key = max(mem, key=lambda k: (k[3], -k[2], k[1]))
        at = mem[key]
        flash = {i: v for i, v in at.items() if i != "sdpa:math"}
        lines += ["", f"Peak device memory of one forward + backward at N = {key[3]} ({key[0]}, d {key[1]}, "
                  f"{'causal' if key[2] else 'non-causal'}; the benchmark's `peak_extra_mib`: torch allocator peak "
                  "beyond q, k, v, dO plus ioattn's C ABI workspace): "
                  + ", ".join(f"`{short(i)}` {v:,.0f} MiB" for i, v in sorted(at.items(), key=lambda x: -x[1]))
                  + (f" (naive path `math` {at['sdpa:math'] / max(min(flash.values()), 1e-9):.0f}x the smallest flash-path "
                     "number)" if "sdpa:math" in at and flash else "") + "."]
    return lines


def train_sentence(s, where):
    """The training check in one sentence, from train_gpt.json's summary."""
    ms, mib = s.get("step_ms_median", {}), s.get("peak_mib", {})
    gap, tol = s.get("max_rel_smoothed_diff_after"), s.get("tolerance", "")
    return (f"{s.get('model', 'GPT')} trained {s.get('steps', '?')} steps ({s.get('kernels', '')}): median step "
            f"{ms.get('ioattn', float('nan')):.1f} ms with ioattn against {ms.get('sdpa', float('nan')):.1f} ms with SDPA "
            f"(host-inclusive), peak {mib.get('ioattn', float('nan')):,.0f} against {mib.get('sdpa', float('nan')):,.0f} MiB, "
            f"loss {s.get('loss_first', {}).get('ioattn', '?')} -> {s.get('loss_last', {}).get('ioattn', '?')} (SDPA "
            f"{s.get('loss_first', {}).get('sdpa', '?')} -> {s.get('loss_last', {}).get('sdpa', '?')}), largest relative "
            f"gap of the smoothed curves {gap:.4f} ({tol}): {str(s.get('status', '?')).split(':')[0]} ({where})"
            if gap is not None else f"training summary without a loss gap ({where})")


def block_bwd_check(dirs, summary, train_dir):
    d = next((d for d in dirs if os.path.exists(os.path.join(d, "test_gpu_backward.log"))), None)
    lines = []
    if d is None:
        lines.append("No canonical bwd folder holds a backward GPU-suite log (test_gpu_backward.log).")
    else:
        commit = last_line_with(os.path.join(d, "context.txt"), "commit:") or "commit: ?"
        lines += [f"From `{rel(d)}/` (binaries of {commit.split(':', 1)[1].strip()[:7]}; written by",
                  "`experiments/gpu/readme_table.py`):", "",
                  "- `test_gpu_backward.log`, every registered backward's dQ, dK, dV against the float64 reference:"]
        var = [ln.strip() for ln in open(os.path.join(d, "test_gpu_backward.log"), errors="replace")
               if ln.startswith("variant ")]
        lines += [f"  - `{v}`" for v in var] or ["  - (no per-variant lines: the suite did not finish)"]
        for name, needle in (("sanitizer_bwd_memcheck.log", "ERROR SUMMARY"),
                             ("sanitizer_bwd_racecheck.log", "RACECHECK SUMMARY")):
            path = os.path.join(d, name)
            s = last_line_with(path, needle)
            lines.append(f"- `{name}` (compute-sanitizer over the suite's quick shapes): "
                         + (f"`{s.lstrip('= ').strip()}`" if s else
                            "no summary line (did not finish: see the run's summary.txt)" if os.path.exists(path)
                            else "not run"))
        s = last_line_with(os.path.join(d, "autograd.log"), "passed")
        lines.append("- `autograd.log` (`python/test_autograd.py`: torch.autograd gradients vs SDPA under the error "
                     "rule): " + (f"`{s}`" if s else "not run"))
    if summary is not None:
        lines.append("- `train_gpt.json` (`experiments/gpu/train_gpt.py`): " + train_sentence(summary, f"`{rel(train_dir)}/`"))
    return lines


def bwd_headline(rows, dirs, summary, train_dir):
    """One sentence for README.md: the best backward against SDPA flash and cuDNN, and the training check."""
    parts = []
    for p, what in (("bwd", "backward"), ("fwdbwd", "forward+backward")):
        pts = bench_points(rows, p)
        fl, cu, best, sps = [], [], set(), []
        for (dt, d, c, n), vals in sorted(pts.items()):
            if n < 1024 or "sdpa:flash" not in vals or (b := best_ioattn(vals)) is None:
                continue
            m, _, sp = ratio(vals[b], vals["sdpa:flash"])
            fl.append(m)
            sps += [sp] if sp is not None else []
            best.add(short(b))
            if "sdpa:cudnn" in vals and tag_of(vals["sdpa:cudnn"]) == tag_of(vals[b]):
                mc, _, spc = ratio(vals[b], vals["sdpa:cudnn"])
                cu.append(mc)
                sps += [spc] if spc is not None else []
        if fl:
            parts.append(f"{what} {rng(fl)} SDPA flash and {rng(cu) if cu else '-'} cuDNN "
                         f"({', '.join(sorted(best))}; spread at most {max(sps) * 100:.1f}%)" if sps else
                         f"{what} {rng(fl)} SDPA flash and {rng(cu) if cu else '-'} cuDNN ({', '.join(sorted(best))})")
    groups = sorted({(r["dtype"], r["head_dim"], r["causal"]) for r in rows})
    desc = "; ".join(sorted({f"{dt} d{d}" for dt, d, _ in groups})) + (
        ", causal or not" if len({c for *_, c in groups}) > 1 else "")
    where = ", ".join(f"`{rel(d)}/`" for d in dirs)
    text = (f"at every N ≥ 1k measured ({desc}; {where}) the best backward reaches " + "; ".join(parts)
            if parts else "no backward benchmark is canonical")
    if summary is not None:
        text += "; training check: " + train_sentence(summary, f"`{rel(train_dir)}/`")
    return text


def bwd_target(rows):
    """One clause for README.md: where the best backward misses the issue's target (>= 1.0x SDPA
    flash's backward at every N >= 1k; a point counts as met only when the margin exceeds the
    spread), and what the deterministic bwd03b costs against bwd03 (ms ratio) at N >= 1k."""
    pts = bench_points(rows, "bwd")
    miss, tie, cost = [], [], []
    for (dt, d, c, n), vals in sorted(pts.items(), key=lambda kv: (kv[0][3], kv[0][0], kv[0][1], kv[0][2])):
        if n < 1024 or "sdpa:flash" not in vals or (b := best_ioattn(vals)) is None:
            continue
        m, _, sp = ratio(vals[b], vals["sdpa:flash"])
        where = f"{dt} d{d} {'causal' if c else 'non-causal'} N={nk(n)} ({m:.2f}x)"
        if m < 1.0 and (sp is None or 1.0 - m > sp):
            miss.append(where)
        elif sp is not None and abs(m - 1.0) <= sp:
            tie.append(where)
        det, fast = "ioattn:bwd03b_fa3_wgmma_dqpass", "ioattn:bwd03_fa3_wgmma"
        if det in vals and fast in vals and tag_of(vals[det]) == tag_of(vals[fast]):
            cost.append(mean_of(vals[det], "ms") / mean_of(vals[fast], "ms") - 1.0)
    text = ("the target holds at every such point" if not miss and not tie else
            "the target is missed at " + (", ".join(miss) if miss else "no point") +
            ("; within the spread of 1.0x at " + ", ".join(tie) if tie else ""))
    if cost:
        text += (f"; the deterministic bwd03b's time against bwd03's there: {min(cost) * 100:+.0f}% to "
                 f"{max(cost) * 100:+.0f}%")
    return text


def load_fast():
    """Rows of the canonical `fast` folders (role_rows)."""
    return role_rows(results_index.canonical().get("fast", []))


FAST_RUNGS = ("ioattn:v08_fa3_warpspec", "ioattn:v08p_fa3_persistent")  # role fast's rungs, in ladder order


def fast_headline(rows):
    """README.md's fast-forward sentence: fast_rung() of each rung of FAST_RUNGS the canonical run
    measured, joined."""
    pts = bench_points(rows, "fwd")
    if not pts:
        return "no fast-forward benchmark is canonical"
    dirs = ", ".join(f"`{rel(d)}/`" for d in results_index.canonical().get("fast", []))
    said = [fast_rung(pts, impl) for impl in FAST_RUNGS if any(impl in v for v in pts.values())]
    return "; and ".join(said) + f" ({dirs}; two samples, kernel time)"


def speedups_by_n(pts, impl, peer, d):
    """(speedups at N >= 2k, speedups at N < 2k) of impl over peer at head dim d: the mean over the
    samples of each point that both measured in the same run, over dtype and causality."""
    lo_n, hi_n = [], []
    for (dt, dd, c, n), v in pts.items():
        if dd != d or impl not in v or peer not in v or tag_of(v[impl]) != tag_of(v[peer]):
            continue
        m = ratio(v[impl], v[peer])[0]
        if m is not None:
            (hi_n if n >= 2048 else lo_n).append(m)
    return hi_n, lo_n


def fast_rung(pts, impl):
    """One clause: the rung against each peer of its run, per head dim, over N >= 2k and at N < 2k
    (mean speedups; ranges over dtype and causality), and its peak."""
    parts = []
    for d in sorted({k[1] for k in pts}, key=int):
        per = []
        for peer in ("sdpa:cudnn", "sdpa:flash", "peer:triton_fa2"):
            hi_n, lo_n = speedups_by_n(pts, impl, peer, d)
            if hi_n or lo_n:
                per.append(f"{short(peer)} {rng(hi_n) if hi_n else '-'} ({rng(lo_n) if lo_n else '-'})")
        tf = [(mean_of(v[impl], "tflops"), dt, c, n) for (dt, dd, c, n), v in pts.items() if dd == d and impl in v]
        peak = max(tf) if tf else None
        if per:
            parts.append(f"d = {d}: vs " + ", ".join(per) +
                         (f"; peak {peak[0]:.0f} TFLOP/s ({peak[1]}, {'causal' if int(peak[2]) else 'non-causal'}, "
                          f"N = {nk(int(peak[3]))})" if peak else ""))
    return f"these speedups of {short(impl)} at N ≥ 2k (at N < 2k in parentheses): " + "; ".join(parts)


# ------------------------------------------------------------------ decode, FP8, varlen (README.md)


def load_decode():
    """(decode rows: one per configuration, median of the samples (experiments/decode_model.py, as
    the paper and fig_decode read them), the copy ceiling (median of the copy_sm rows), the copy_sm
    samples' GB/s, the canonical decode folders)."""
    import decode_model as dm
    files = results_index.canonical_csvs("decode")
    rows, copy = dm.measured(files) if files else ([], None)
    samples = [fnum(r.get("gbps")) for f in files for r in read_csv(str(f)) or []
               if r.get("impl") == "copy_sm" and r.get("status") == "ok"]
    return rows, copy, [x for x in samples if x is not None], [f.parent for f in files]


def span(xs):
    """'0.67-0.70' (two decimals), or one number when both ends print alike."""
    lo, hi = f"{min(xs):.2f}", f"{max(xs):.2f}"
    return lo if lo == hi else f"{lo}-{hi}"


def decode_headline(rows, copy, copy_samples, dirs):
    """One sentence for README.md: issue 12's decode targets (paper/gen_decode.py TARGETS) as verdicts
    from the rows of decode_model.measured(), per seqlen_q: the faster decode rung's (v07 or v07b, per
    configuration on the contiguous cache) share of the same run's copy
    ceiling and its ratio to SDPA cuDNN (GB/s ratio = time ratio) at seqlen_k >= 8k and batch >= 16;
    pages of 16 keys against the contiguous cache over the whole grid; batch 1 at the longest cache;
    and where cuDNN's (and ioattn's) bandwidth exceeds the copy ceiling."""
    sys.path.insert(0, os.path.join(REPO, "paper"))
    from gen_decode import TARGETS as T
    import decode_model as dm
    DECODE_IMPLS = (dm.V07, dm.V07B)  # the split-KV decode rungs
    i = lambda r, c: int(float(r[c]))  # noqa: E731
    at = {(r["impl"], i(r, "batch"), i(r, "seqlen_q"), i(r, "seqlen_k"), i(r, "page_size")): r for r in rows}
    # Per configuration (batch, seqlen_q, seqlen_k) the faster ioattn decode rung on the contiguous
    # cache; its rows are the ones judged (`ours` below holds them); the paged target compares the
    # faster rung on the paged cache with it.
    best = {}
    for k, r in at.items():
        if k[0] in DECODE_IMPLS and k[4] == 0 and (k[1:4] not in best or r["gbps"] > at[(best[k[1:4]],) + k[1:4] + (0,)]["gbps"]):
            best[k[1:4]] = k[0]
    ours = {k: r for k, r in at.items() if k[0] in DECODE_IMPLS and best.get(k[1:4]) == k[0]}
    if not ours or not copy:
        return "no decode benchmark is canonical"
    won = {impl: sum(1 for b in best.values() if b == impl) for impl in DECODE_IMPLS if impl in best.values()}
    who = (short(next(iter(won))) + "'s" if len(won) == 1 else
           "the faster ioattn rung's (" + ", ".join(f"{short(x)} at {n} of {len(best)} configurations"
                                          for x, n in won.items()) + ")")
    held = lambda ok: "holds" if ok else "missed"  # noqa: E731
    nqs = sorted({k[2] for k in ours})
    nkmax, bmin = max(k[3] for k in ours), min(k[1] for k in ours)
    tgt = lambda k: k[4] == 0 and k[3] >= T["nk"] and k[1] >= T["batch"]  # noqa: E731
    copy_p, cud_p, page_p, b1_p = [], [], [], []
    for nq in nqs:
        sel = [k for k in ours if k[2] == nq and tgt(k)]
        if sel:
            sh = [ours[k]["gbps"] / copy for k in sel]
            copy_p.append(f"seqlen_q {nq}: {span(sh)} ({held(min(sh) >= T['copy'])})")
            vs = [ours[k]["gbps"] / at[("sdpa:cudnn",) + k[1:]]["gbps"] for k in sel if ("sdpa:cudnn",) + k[1:] in at]
            if vs:
                cud_p.append(f"seqlen_q {nq}: {span(vs)}x ({held(min(vs) >= 1.0)})")
        # paged: the faster rung on the paged cache against the faster one on the contiguous cache
        pg = []
        for cfg, b in best.items():
            paged = [at[(x,) + cfg + (T["page"],)]["gbps"] for x in DECODE_IMPLS if (x,) + cfg + (T["page"],) in at]
            if cfg[1] == nq and paged:
                pg.append((max(paged) / at[(b,) + cfg + (0,)]["gbps"], cfg))
        if pg:
            miss = sum(q < T["paged"] for q, _ in pg)
            page_p.append(f"seqlen_q {nq}: {span([q for q, _ in pg])} ("
                          + ("holds" if not miss else f"missed at {miss} of {len(pg)} configurations") + ")")
        one = ours.get((best.get((bmin, nq, nkmax)), bmin, nq, nkmax, 0))
        if one:
            b1_p.append(f"seqlen_q {nq}: {one['gbps'] / copy:.2f} ({held(one['gbps'] / copy >= T['b1'])})")
    over = sorted(((r["gbps"] / copy, k) for k, r in at.items() if k[0] == "sdpa:cudnn" and r["gbps"] > copy),
                  key=lambda x: x[0])
    ours_over = [r["gbps"] / copy for k, r in ours.items() if r["gbps"] > copy]
    if over:
        ks = [k for _, k in over]
        cells = sorted({(k[2], k[1]) for k in ks})
        nks = lambda nq, b: "/".join(nk(x) for x in sorted({k[3] for k in ks if (k[2], k[1]) == (nq, b)}))  # noqa: E731
        where = "; ".join(f"seqlen_q {nq}, batch {b}, seqlen_k {nks(nq, b)}" for nq, b in cells)
        over_t = (f"cuDNN's bandwidth exceeds it at {len(over)} configuration{'s' if len(over) > 1 else ''}, up to "
                  f"{over[-1][0]:.2f}x ({where})")
    else:
        over_t = "cuDNN's bandwidth stays below that copy ceiling everywhere"
    if ours_over:
        over_t += f", and ioattn's at {len(ours_over)} (contiguous or paged), up to {max(ours_over):.2f}x"
    if len(copy_samples) >= 2:
        over_t += (f"; the copy ceiling's own samples differ by {spread(copy_samples[0], copy_samples[1]) * 100:.0f}% "
                   "(|s0 - s1| / mean)")
    samp = " and ".join(f"{x:.0f}" for x in copy_samples)
    src = ", ".join(f"`{rel(d)}/`" for d in dirs)
    return (f"issue 12's targets against the full grid ({src}; GB/s = bytes / kernel time, median of the samples; "
            f"copy ceiling `copy_sm` of the same run, median {copy:.0f} GB/s of its samples {samp}): "
            f"at seqlen_k ≥ {nk(T['nk'])} (here {', '.join(nk(x) for x in sorted({k[3] for k in ours if tgt(k)}))}) "
            f"and batch ≥ {T['batch']}, {who} share of the copy ceiling "
            f"(target ≥ {T['copy']:.2f}) is " + ", ".join(copy_p) +
            f"; its ratio to SDPA cuDNN (target ≥ 1.0x) is " + ", ".join(cud_p) +
            f"; pages of {T['page']} keys against the contiguous cache, every configuration (target within "
            f"{round(100 * (1 - T['paged']))} %), " + ", ".join(page_p) +
            f"; batch {bmin} at {nk(nkmax)} keys, share of the copy ceiling (target ≥ {T['b1']:.2f}), "
            + ", ".join(b1_p) + f". The copy ceiling is not a hard bound: {over_t}")


def decode_pages_headline():
    """One sentence for README.md: the role decode_pages (decode runs over more page sizes, each paged
    row against the same run's contiguous row): per page size, the faster decode rung on the paged
    cache (v07 or v07b) over the faster one on the contiguous cache of the same configuration, over
    the configurations measured and at seqlen_k >= 8k, batch >= 16 (issue 12's target region), how
    many are within issue 12's 10 %, and, where two runs (or samples) measured a configuration, how
    far their ratios differ (each run's ratio from its own rows)."""
    sys.path.insert(0, os.path.join(REPO, "paper"))
    from gen_decode import TARGETS as T
    import decode_model as dm
    files = results_index.canonical_csvs("decode_pages")
    if not files:
        return "no decode run over further page sizes is canonical"
    RUNGS = (dm.V07, dm.V07B)
    i = lambda r, c: int(float(r[c]))  # noqa: E731

    def ratios(rows):
        """{(page, batch, nq, nk): faster paged / faster contiguous} of one set of rows."""
        best = {}  # (page, batch, nq, nk) -> the faster rung's GB/s
        for r in rows:
            if r["impl"] in RUNGS:
                key = (i(r, "page_size"), i(r, "batch"), i(r, "seqlen_q"), i(r, "seqlen_k"))
                best[key] = max(best.get(key, 0.0), r["gbps"])
        return {k: v / best[(0,) + k[1:]] for k, v in best.items() if k[0] > 0 and best.get((0,) + k[1:], 0.0) > 0}

    # one sample of one run: its rows with the gbps of that sample
    per_sample = []
    for f in files:
        raw = [r for r in read_csv(str(f)) or [] if r.get("status") == "ok" and r.get("seqlen_k")]
        for smp in sorted({r.get("sample") for r in raw}):
            per_sample.append(ratios([dict(r, page_size=r.get("page_size") or 0, gbps=fnum(r.get("gbps")))
                                      for r in raw if r.get("sample") == smp]))
    med = ratios(dm.measured(files)[0])
    pages = sorted({k[0] for k in med})
    parts = []
    for pg in pages:
        q = {k[1:]: v for k, v in med.items() if k[0] == pg}
        tgt = [v for c, v in q.items() if c[2] >= T["nk"] and c[0] >= T["batch"]]
        within = sum(v >= T["paged"] for v in q.values())
        parts.append(f"pages of {pg}: {span(list(q.values()))} over {len(q)} configurations ({within} within "
                     f"{round(100 * (1 - T['paged']))} %)" + (f", {span(tgt)} at seqlen_k ≥ {nk(T['nk'])} and batch ≥ "
                                                             f"{T['batch']}" if tgt else ""))
    twice = [k for k in med if sum(k in s for s in per_sample) >= 2]
    diff = max((max(s[k] for s in per_sample if k in s) - min(s[k] for s in per_sample if k in s) for k in twice),
               default=None)
    cfgs = {k[1:] for k in med}
    src = ", ".join(f"`{rel(f.parent)}/`" for f in files)
    rep = (f"{len({k[1:] for k in twice})} of the {len(cfgs)} configurations measured twice (one sample per run), "
           f"their two ratios at most {diff:.2f} apart; the others once" if twice else f"{len(cfgs)} configurations, one sample each")
    return (f"every page size against the contiguous cache of the same run ({src}; {rep}; the faster rung paged over "
            f"the faster rung contiguous, GB/s ratio, median over the runs): " + "; ".join(parts))


class _Values:
    """The `nb` that paper/gen_fp8.py's precision() writes into: use() returns the rows of a file
    that `keep` accepts (the slice a sentence speaks of), val() records the value."""

    def __init__(self, keep):
        self.keep, self.vals = keep, {}

    def use(self, f):
        return [r for r in (read_csv(str(f)) or []) if self.keep(r)]

    def val(self, key, value):
        self.vals[key] = value


def fp8_values(keep):
    """paper/gen_fp8.py's precision() on the canonical fp8 rows that `keep` accepts, its values as
    numbers: the paper's formatting helpers (gen_numbers.sig, integer, tex_escape) are swapped for
    the identity during the call, so the README's verdicts compare the unrounded values (the
    arithmetic stays in gen_fp8.py, written once)."""
    sys.path.insert(0, os.path.join(REPO, "paper"))
    import gen_fp8
    import gen_numbers
    saved = gen_numbers.sig, gen_numbers.integer, gen_numbers.tex_escape
    gen_numbers.sig, gen_numbers.integer, gen_numbers.tex_escape = (lambda x, digits=3: x), (lambda x: x), (lambda x: x)
    try:
        nb = _Values(keep)
        gen_fp8.precision(nb)
        return nb.vals
    finally:
        gen_numbers.sig, gen_numbers.integer, gen_numbers.tex_escape = saved


FP8_TARGET, FP8_MOONSHOT = 1.6, 1000.0  # issue 14: >= 1.6x the best bf16 forward; 1 PFLOP/s at d 256, N 16k


def fp8_headline(dims=(128, 256), nmin=4096, moon=(256, 16384)):
    """One sentence for README.md: v09's FP8 forward against the best bf16 ioattn forward and SDPA
    cuDNN bf16 of the same run at N >= nmin, per head dim, issue 14's target and moonshot as
    verdicts, the peak and where, and the slice errors against float64 beside bf16's."""
    hd = lambda r: int(float(r.get("head_dim") or 0))  # noqa: E731
    n = lambda r: int(float(r.get("seqlen") or 0))  # noqa: E731
    allv = fp8_values(lambda r: True)
    if "fp8.tflops_max" not in allv:
        return "no FP8 benchmark is canonical"
    parts = []
    for d in dims:
        v = fp8_values(lambda r, d=d: hd(r) == d and n(r) >= nmin)
        if "fp8.over_bf16_min" not in v:
            parts.append(f"d {d}: not measured at N ≥ {nk(nmin)}")
            continue
        e8, e16 = (f"{v[f'fp8.err_{k}_min']:.1e}" + (f"-{v[f'fp8.err_{k}_max']:.1e}"
                                                     if v[f"fp8.err_{k}_max"] != v[f"fp8.err_{k}_min"] else "")
                   for k in ("fp8", "bf16"))
        parts.append(f"d {d}: {span([v['fp8.over_bf16_min'], v['fp8.over_bf16_max']])}x the best bf16 forward "
                     f"({v.get('fp8.bf16_kernel', '?')}; target ≥ {FP8_TARGET}x "
                     f"{'holds' if v['fp8.over_bf16_min'] >= FP8_TARGET else 'met nowhere' if v['fp8.over_bf16_max'] < FP8_TARGET else 'holds at part of it'}) "
                     f"and {span([v['fp8.over_cudnn_min'], v['fp8.over_cudnn_max']])}x cuDNN bf16, "
                     f"up to {v['fp8.tflops_max']:.0f} TFLOP/s; max abs error vs float64 on the slice {e8} "
                     f"(bf16 {e16})")
    m = fp8_values(lambda r: hd(r) == moon[0] and n(r) == moon[1])
    moon_t = (f"at d {moon[0]}, N = {nk(moon[1])} it reaches {m['fp8.tflops_max']:.0f} TFLOP/s "
              f"({m['fp8.tflops_max'] / FP8_MOONSHOT:.2f} of the 1 PFLOP/s moonshot)" if "fp8.tflops_max" in m
              else f"d {moon[0]}, N = {nk(moon[1])} was not measured (the 1 PFLOP/s moonshot)")
    src = ", ".join(f"`{rel(d)}/`" for d in results_index.canonical().get("fp8", []))
    return (f"{allv['fp8.kernel']} (e4m3) against the same run's bf16 forwards at N ≥ {nk(nmin)} ({src}; "
            f"ms ratios, mean of {allv['fp8.samples']} samples; issue 14's target ≥ {FP8_TARGET}x the best bf16): "
            + "; ".join(parts) + f"; {moon_t}; its peak over the whole run is {allv['fp8.tflops_max']:.0f} TFLOP/s "
            f"(d {allv['fp8.tflops_max_d']}, {allv['fp8.tflops_max_causal']}, N = {nk(allv['fp8.tflops_max_n'])}; "
            f"slice: {allv.get('fp8.slice', '?')})")


def load_varlen():
    """(ok rows of the canonical varlen folders' varlen.csv, each with its folder as _tag; the folders)."""
    dirs = results_index.canonical().get("varlen", [])
    rows = [dict(r, _tag=os.path.basename(d)) for d in dirs for r in (read_csv(os.path.join(d, "varlen.csv")) or [])]
    return rows, dirs


def varlen_headline(rows, dirs):
    """One sentence for README.md: the packed batch through the fastest ioattn variant (mean ms over
    the samples) against SDPA flash and cuDNN on the same batch padded to its longest sequence
    (ratio per sample, of one folder), per causal setting, and the peak device memory of each."""
    refused = sorted({short(r["impl"]) for r in rows if r.get("status") == "refused"})
    rows = [r for r in rows if r.get("status") == "ok" and fnum(r.get("ms")) is not None]
    if not rows:
        return "no varlen benchmark is canonical"
    by = {}
    for r in rows:
        by.setdefault((r["_tag"], int(float(r["causal"]))), {}).setdefault(r["impl"], {})[r.get("sample", "0")] = r
    parts = []
    for (tag, c), impls in sorted(by.items()):
        mean = {i: sum(float(x["ms"]) for x in s.values()) / len(s) for i, s in impls.items()}
        ours = [i for i in mean if i.startswith("ioattn:")]
        if not ours:
            continue
        best = min(ours, key=mean.get)
        peers = []
        for peer in ("sdpa:flash", "sdpa:cudnn"):
            if peer not in impls:
                continue
            per = [float(impls[peer][s]["ms"]) / float(impls[best][s]["ms"]) for s in sorted(impls[best]) if s in impls[peer]]
            if per:
                peers.append(f"{short(peer)} {mean[peer]:.1f} ms (speedup {span(per)}x over {len(per)} "
                             f"sample{'s' if len(per) > 1 else ''})")
        mib = {i: fnum(min(s.items())[1].get("peak_mib")) for i, s in impls.items()}
        mem = ", ".join(f"{short(i)} {mib[i]:,.0f}" for i in [best] + [p for p in ("sdpa:flash", "sdpa:cudnn") if p in impls]
                        if mib.get(i) is not None)
        pad = [mib[p] / mib[best] for p in ("sdpa:flash", "sdpa:cudnn") if mib.get(p) and mib.get(best)]
        diff = {i: max(fnum(x.get("max_abs_diff_vs_ref")) or 0.0 for x in s.values()) for i, s in impls.items()
                if any(fnum(x.get("max_abs_diff_vs_ref")) is not None for x in s.values())}
        dtxt = ", ".join(f"{short(i)} {diff[i]:.2g}" for i in [best] + [p for p in ("sdpa:flash", "sdpa:cudnn") if p in diff]
                         if i in diff)
        parts.append(f"{'causal' if c else 'non-causal'}: {short(best)} {mean[best]:.1f} ms against " + ", ".join(peers)
                     + f"; peak memory {mem} MiB" + (f" (padded {span(pad)}x the packed)" if pad else "")
                     + (f"; max |O - O_ref| on the real rows {dtxt}" if dtxt else ""))
    r0 = rows[0]
    desc = (f"{r0['batch']} sequences, {int(r0['tokens']):,} tokens packed, {int(r0['padded_tokens']):,} padded "
            f"(longest {r0['seqlen_q']}), {r0['dtype']}, d {r0['head_dim']}, {r0['heads_q']}/{r0['heads_kv']} heads")
    src = ", ".join(f"`{rel(d)}/`" for d in dirs)
    return (f"the packed batch ({desc}; {src}; kernel time, mean of the samples; speedup = ms(SDPA) / ms(ioattn) "
            "of one sample; peak memory = the call's inputs, outputs and allocations): " + "; ".join(parts)
            + (f"; refused the padded batch: {', '.join(refused)}" if refused else "")
            + " (flash and cuDNN take no padding mask: they also compute the padding, and without causal their "
            "real rows see the zero padding keys, hence their difference to O_ref)")


def last_line_with(path, needle):
    if not os.path.exists(path):
        return None
    hits = [ln.strip() for ln in open(path, errors="replace") if needle in ln]
    return hits[-1] if hits else None


def block_check(bench_dirs):
    d = next((d for d in bench_dirs if os.path.exists(os.path.join(d, "test_gpu.log"))), None)
    if d is None:
        return ["No canonical bench folder holds a GPU-suite log (test_gpu.log)."]
    commit = last_line_with(os.path.join(d, "context.txt"), "commit:") or "commit: ?"
    lines = [f"From `{rel(d)}/` (binaries of {commit.split(':', 1)[1].strip()[:7]}; written by",
             "`experiments/gpu/readme_table.py`):", "",
             "- `test_gpu.log`, every registered variant against the float64 reference (named cases, RapidCheck",
             "  properties, determinism at every head dim the variant lists; cases counted once per distinct",
             "  (problem, tile, seed, check)):"]
    var = [ln.strip() for ln in open(os.path.join(d, "test_gpu.log"), errors="replace") if ln.startswith("variant ")]
    lines += [f"  - `{v}`" for v in var] or ["  - (no per-variant lines: the suite did not finish)"]
    for name, needle in (("sanitizer_memcheck.log", "ERROR SUMMARY"), ("sanitizer_racecheck.log", "RACECHECK SUMMARY")):
        s = last_line_with(os.path.join(d, name), needle)
        lines.append(f"- `{name}` (compute-sanitizer over the suite's quick shapes): "
                     + (f"`{s.lstrip('= ').strip()}`" if s else "not run"))
    s = last_line_with(os.path.join(d, "pybad.log"), "passed")
    lines.append("- `pybad.log` (`python/test_bad_input.py`: bad input refused, guard bytes intact): "
                 + (f"`{s}`" if s else "not run"))
    return lines


def replace_block(text, name, lines, readme):
    a, b = f"<!-- {name}:BEGIN -->", f"<!-- {name}:END -->"
    if a not in text or b not in text:
        raise SystemExit(f"readme_table.py: {readme} has no {a} ... {b} block")
    i, j = text.index(a) + len(a), text.index(b)
    return text[:i] + "\n" + "\n".join(lines) + "\n" + text[j:]


def replace_inline(text, name, value, path):
    """The text between `<!-- readme_table.py: NAME -->` and `<!-- end readme_table.py: NAME -->`."""
    a, b = f"<!-- readme_table.py: {name} -->", f"<!-- end readme_table.py: {name} -->"
    if a not in text or b not in text:
        raise SystemExit(f"readme_table.py: {path} has no {a} ... {b} span")
    i, j = text.index(a) + len(a), text.index(b)
    return text[:i] + value + text[j:]


def main(argv):
    check = "--check" in argv
    args = [a for a in argv if a != "--check"]
    if any(a.startswith("-") for a in args) or len(args) > 1:
        raise SystemExit(__doc__)
    readme = args[0] if args else os.path.join(REPO, "kernels", "README.md")
    rows, bench_dirs, ncu, ncu_dirs = load()
    with open(readme) as f:
        text = f.read()
    new = replace_block(text, "MEASURED", block_measured(rows, bench_dirs, ncu, ncu_dirs), readme)
    new = replace_block(new, "PERF", block_perf(rows), readme)
    new = replace_block(new, "CHECK", block_check(bench_dirs), readme)
    brows, bdirs, summary, train_dir = load_bwd()
    new = replace_block(new, "BWD_MEASURED", block_bwd_measured(brows, bdirs), readme)
    new = replace_block(new, "BWD_PERF", block_perf(brows, "bwd") + [""] + block_perf(brows, "fwdbwd")[4:]
                        if brows else ["No canonical backward benchmark."], readme)
    new = replace_block(new, "BWD_CHECK", block_bwd_check(bdirs, summary, train_dir), readme)
    top = os.path.join(REPO, "README.md")
    with open(top) as f:
        top_text = f.read()
    top_new = replace_inline(top_text, "h200_headline", headline(rows, bench_dirs), top)
    top_new = replace_inline(top_new, "bwd_headline", bwd_headline(brows, bdirs, summary, train_dir), top)
    top_new = replace_inline(top_new, "bwd_target", bwd_target(brows) if brows else "no backward benchmark is canonical", top)
    top_new = replace_inline(top_new, "fast_headline", fast_headline(load_fast()), top)
    top_new = replace_inline(top_new, "decode_headline", decode_headline(*load_decode()), top)
    top_new = replace_inline(top_new, "decode_pages", decode_pages_headline(), top)
    top_new = replace_inline(top_new, "fp8_headline", fp8_headline(), top)
    top_new = replace_inline(top_new, "varlen_headline", varlen_headline(*load_varlen()), top)
    if check:
        bad = [f for f, a, b in ((readme, text, new), (top, top_text, top_new)) if a != b]
        for f in bad:
            print(f"FAIL: {f}: a generated block differs from the committed data (run experiments/gpu/readme_table.py)")
        if not bad:
            print(f"PASS: {readme} (MEASURED, PERF, CHECK, BWD_MEASURED, BWD_PERF, BWD_CHECK) and {top} "
                  "(h200_headline, bwd_headline, bwd_target, fast_headline, decode_headline, decode_pages, fp8_headline, "
                  "varlen_headline) match the canonical run")
        return 1 if bad else 0
    for f, a, b in ((readme, text, new), (top, top_text, top_new)):
        if a != b:
            with open(f, "w") as fh:
                fh.write(b)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""paper/gen_fp8.py: the precision section's numbers (fp8.* values) for paper/gen_numbers.py.

precision(nb) reads the canonical FP8 benchmark (role `fp8` of experiments/results/h200/CANONICAL:
the bench.csv of experiments/gpu/bench_sdpa.py --dtypes fp8_e4m3, rows of study fp8) through
experiments/results_index.py, as every other section does, and sets nb's values; gen_numbers.py
calls it from main(). Kept in its own file so that its test (paper/test_gen_fp8.py, a synthetic
results folder, CPU only) does not depend on the rest of the paper's data.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "experiments"))
import results_index as results  # noqa: E402

# The FP8 kernels whose rows role fp8 may hold (experiments/gpu/bench_sdpa.py --dtypes fp8_e4m3), newest
# rung first: the section speaks of the first one the canonical run measured.
FP8_KERNELS = ("ioattn:v10_fp8_warpspec", "ioattn:v09_fp8_wgmma")


def precision(nb) -> None:
    """The precision section's numbers from the canonical FP8 benchmark (role fp8: bench.csv rows of
    study fp8, bench_sdpa.py --dtypes fp8_e4m3): the FP8 kernel's TFLOP/s (peak and where), its
    speed against the best bf16 ioattn forward and SDPA cuDNN bf16 of the same config and folder
    (ms ratio, mean over the samples both have), and the slice errors against float64 (FP8, bf16,
    and the FP8 kernel against the dequantized codes). Keys fp8.*; none when role fp8 has no rows.
    Only values, no switches (a switch needs a \\newif in main.tex; a value main.tex does not quote
    is harmless)."""
    from gen_numbers import _mean, integer, sig, tex_escape  # the paper's formatting (imported at call time)

    rows = []
    for d in results.canonical().get("fp8", []):
        f = d / "bench.csv"
        if not f.is_file():
            continue
        rs = [dict(r, _tag=d.name) for r in nb.use(f) if r.get("study") == "fp8" and r.get("status") == "ok"]
        rows += rs
    if not rows:
        return
    # Per (folder, d, causal, N): impl -> {sample: row}.
    pts: dict[tuple, dict[str, dict[str, dict]]] = {}
    for r in rows:
        key = (r["_tag"], int(float(r["head_dim"])), results.flag(r["causal"]), int(float(r["seqlen"])))
        pts.setdefault(key, {}).setdefault(r["impl"], {})[str(r.get("sample", "0"))] = r
    FP8_KERNEL = next((k for k in FP8_KERNELS if any(k in v for v in pts.values())), None)
    fp8 = {k: v[FP8_KERNEL] for k, v in pts.items() if FP8_KERNEL in v}
    if not fp8:
        return
    nb.val("fp8.run", tex_escape(", ".join(dict.fromkeys(r["_tag"] for r in rows))))
    nb.val("fp8.kernel", tex_escape(FP8_KERNEL.split(":", 1)[1]))
    others = [k for k in FP8_KERNELS if k != FP8_KERNEL]

    def mean_of(samples: dict, col: str) -> float:
        return _mean([results.num(r, col) for r in samples.values()])

    def ratio(a: dict, b: dict) -> float:  # ms(b) / ms(a), mean over the samples both have
        common = sorted(set(a) & set(b))
        return _mean([results.num(b[s], "ms") / results.num(a[s], "ms") for s in common]) if common else float("nan")

    peak_key = max(fp8, key=lambda k: mean_of(fp8[k], "tflops"))
    nb.val("fp8.tflops_max", sig(mean_of(fp8[peak_key], "tflops")))
    nb.val("fp8.tflops_max_d", integer(peak_key[1]))
    nb.val("fp8.tflops_max_n", integer(peak_key[3]))
    nb.val("fp8.tflops_max_causal", "causal" if peak_key[2] == 1 else "non-causal")
    nb.val("fp8.dims", ", ".join(str(d) for d in sorted({k[1] for k in fp8})))
    nb.val("fp8.nmin", integer(min(k[3] for k in fp8)))
    nb.val("fp8.nmax", integer(max(k[3] for k in fp8)))
    nb.val("fp8.samples", str(max(len(v) for v in fp8.values())))
    over = {"bf16": [], "cudnn": [], "bf16_2k": [], "cudnn_2k": []}
    err = {"fp8": [], "bf16": [], "cudnn": [], "dequant": [], "ratio": []}
    bf16_names = set()
    for k, f8 in fp8.items():
        at = pts[k]
        mine = {i: v for i, v in at.items() if results.is_ioattn(i) and i != FP8_KERNEL and i not in others
                and all(r.get("dtype") != "fp8_e4m3" for r in v.values())}  # the other FP8 rung's rows are not bf16
        best = max(mine, key=lambda i: mean_of(mine[i], "tflops")) if mine else None
        e8 = max(results.num(r, "slice_max_abs_err") for r in f8.values())
        err["fp8"].append(e8)
        err["dequant"] += [results.num(r, "slice_max_abs_err_dequant") for r in f8.values()]
        for name, peer in (("bf16", best), ("cudnn", "sdpa:cudnn")):
            if peer is None or peer not in at:
                continue
            q = ratio(f8, at[peer])
            over[name].append(q)
            if k[3] >= 2048:
                over[name + "_2k"].append(q)
            e = max(results.num(r, "slice_max_abs_err") for r in at[peer].values())
            err[name].append(e)
            if name == "bf16":
                bf16_names.add(peer.split(":", 1)[1])
                if e > 0:
                    err["ratio"].append(e8 / e)
    for name, qs in over.items():
        qs = [q for q in qs if q == q]
        if qs:
            nb.val(f"fp8.over_{name}_min", sig(min(qs), 2))
            nb.val(f"fp8.over_{name}_max", sig(max(qs), 2))
    if bf16_names:
        nb.val("fp8.bf16_kernel", tex_escape(", ".join(sorted(bf16_names))))
    for name, es in err.items():
        es = [e for e in es if e == e]
        if es:
            nb.val(f"fp8.err_{name}_max", sig(max(es), 2))
            nb.val(f"fp8.err_{name}_min", sig(min(es), 2))
    slices = {r.get("error_slice", "") for v in fp8.values() for r in v.values()} - {""}
    if len(slices) == 1:
        nb.val("fp8.slice", tex_escape(slices.pop()))

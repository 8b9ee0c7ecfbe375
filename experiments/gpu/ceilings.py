"""The GPU's own ceilings, measured with the benchmark's timing method: copy bandwidth and GEMM rates.

    python3 experiments/gpu/ceilings.py --out DIR [--copy-gib 4] [--gemm 8192] [--reps 30] [--samples 2]

  copy_d2d    dst.copy_(src) of a --copy-gib GiB buffer, device to device: bytes read + bytes
              written (2 x size) over the time, in GB/s (1e9 B/s). Captured in a CUDA graph this
              is a memcpy node, which the driver may run on a copy engine rather than the SMs: on
              the H200 (2026-12-01_ab52a53_core) it gave 2.77 TB/s, far under what SM loads and
              stores reach, so it is kept as what it is and not used as the HBM ceiling.
  copy_sm     the same bytes moved by an SM kernel (torch.neg(src, out=dst): one read, one write
              per element), checked against -src: the HBM ceiling a kernel can reach.
  gemm        C = A @ B, M = N = K = --gemm, in bf16, fp16 and fp32 with TF32 off
              (torch.backends.cuda.matmul.allow_tf32 = False, float32 matmul precision "highest"):
              2 M N K FLOP over the time, in TFLOP/s
Inputs are random (torch.randn, never zeros: a product on zeros runs faster than on data).
Each is checked before it is timed: the copy equals its source; C's first 64 x 64 block is
compared with a float64 product of the same rows and columns (rel_err column). Timing:
experiments/gpu/timing.py (CUDA-graph replay between events, host enqueue hidden; these problems
are far larger than the L2, so it is not flushed unless --flush-l2 on), median and min over
--reps calls, --samples sweeps (default 2; spread = |s0 - s1| / mean). `value` is the work over
the median time, `value_at_min` over the fastest call.
Writes DIR/ceilings.json (rows with context) and DIR/ceilings.csv (name,dtype,value,unit,
median_ms,min_ms,sample,...). Never edit them by hand.
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import timing  # noqa: E402


def flag(name):
    """A torch.backends.cuda.matmul setting as recorded in the context ('unknown' where it is gone)."""
    try:
        return getattr(torch.backends.cuda.matmul, name)
    except (AttributeError, RuntimeError):
        return "unknown"


def gemm_check(a, b, c):
    """Relative error of C's first 64 x 64 block against a float64 product."""
    ref = a[:64].double() @ b[:, :64].double()
    return ((c[:64, :64].double() - ref).norm() / ref.norm()).item()


def copy_sm(src, dst, flush=None, reps=30):
    """One copy_sm measurement (see above) of src into dst (fp32, same size): (timing result,
    bytes moved, check text). Also used by bench_decode.py for the ceiling of its own run."""
    dst.fill_(float("nan"))
    r = timing.time_call(lambda: torch.neg(src, out=dst), problem_bytes=2 * src.nbytes, flush_l2=flush, reps=reps)
    ok = torch.equal(dst, -src)
    return r, 2 * src.nbytes, "dst equals -src" if ok else "FAILED: dst differs from -src"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--copy-gib", type=float, default=4.0)
    ap.add_argument("--gemm", type=int, default=8192)
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--samples", type=int, default=2)
    ap.add_argument("--flush-l2", choices=["auto", "on", "off"], default="auto")
    ap.add_argument("--commit", default="")
    args = ap.parse_args()
    if args.copy_gib <= 0 or args.gemm < 64 or args.reps < 1 or args.samples < 1:
        raise SystemExit("ceilings.py: --copy-gib > 0, --gemm >= 64, --reps >= 1, --samples >= 1")
    if not torch.cuda.is_available():
        raise SystemExit("ceilings.py: no CUDA device visible to torch")
    os.makedirs(args.out, exist_ok=True)
    flush = None if args.flush_l2 == "auto" else args.flush_l2 == "on"
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    torch.manual_seed(0)
    timing.prepare()
    context = timing.run_context(
        commit=args.commit or None, out_dir=args.out, seed="torch.manual_seed(0)",
        tf32=dict(allow_tf32=flag("allow_tf32"), float32_matmul_precision=torch.get_float32_matmul_precision()),
        reduced_precision_reduction=dict(bf16=flag("allow_bf16_reduced_precision_reduction"),
                                         fp16=flag("allow_fp16_reduced_precision_reduction")))
    rows = []

    def record(name, dtype, work, unit, scale, r, sample, size, check):
        rows.append(dict(name=name, dtype=dtype, value=work / (r["median_ms"] * 1e-3) / scale, unit=unit,
                         median_ms=r["median_ms"], min_ms=r["min_ms"], sample=sample,
                         value_at_min=work / (r["min_ms"] * 1e-3) / scale, max_ms=r["max_ms"], reps=r["n"],
                         size=size, work=work, timing=r["method"], flush_l2=int(r["flush_l2"]), check=check))
        print(f"s{sample} {name:9s} {dtype:5s} {rows[-1]['value']:9.1f} {unit} (median {r['median_ms']:.3f} ms, "
              f"best {rows[-1]['value_at_min']:.1f}; {r['n']} calls, {r['method']}; {check})", flush=True)
        timing.write_results(args.out, "ceilings", rows, context)

    nbytes = int(args.copy_gib * 2**30) // 4 * 4
    src = torch.randn(nbytes // 4, device="cuda", dtype=torch.float32)
    dst = torch.empty_like(src)
    m = args.gemm
    mats = {}
    for dname, dt in (("bf16", torch.bfloat16), ("fp16", torch.float16), ("fp32", torch.float32)):
        a, b = torch.randn(m, m, device="cuda", dtype=dt), torch.randn(m, m, device="cuda", dtype=dt)
        mats[dname] = (a, b, torch.empty(m, m, device="cuda", dtype=dt))
    for sample in range(args.samples):
        dst.fill_(float("nan"))
        r = timing.time_call(lambda: dst.copy_(src), problem_bytes=2 * nbytes, flush_l2=flush, reps=args.reps)
        ok = torch.equal(dst, src)
        record("copy_d2d", "fp32", 2 * nbytes, "GB/s", 1e9, r, sample, f"{nbytes} bytes",
               "copy equals its source" if ok else "FAILED: copy differs from its source")
        r, work, check = copy_sm(src, dst, flush, args.reps)
        record("copy_sm", "fp32", work, "GB/s", 1e9, r, sample, f"{nbytes} bytes", check)
        for dname, (a, b, c) in mats.items():
            r = timing.time_call(lambda a=a, b=b, c=c: torch.matmul(a, b, out=c),
                                 problem_bytes=3 * a.nbytes, flush_l2=flush, reps=args.reps)
            err = gemm_check(a, b, c)
            tol = 1e-5 if dname == "fp32" else 1e-2
            record(f"gemm_{m}", dname, 2.0 * m * m * m, "TFLOP/s", 1e12, r, sample, f"M=N=K={m}",
                   f"rel_err {err:.2e} vs float64 ({'ok' if err <= tol else 'FAILED'}, bound {tol:g})")
    if any("FAILED" in r["check"] for r in rows):
        print("ceilings.py: a check failed (see the check column)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

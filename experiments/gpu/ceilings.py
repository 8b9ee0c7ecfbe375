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
  gemm fp8    the same product in FP8 e4m3 (torch._scaled_mm: A and B in float8_e4m3fn with
              per-tensor float32 scales amax / 448, bf16 output), dtype fp8_e4m3, after the three
              above in each sample. Two rows: gemm_M with use_fast_accum=True (the products summed
              in the tensor cores' own accumulator: the FP8 ceiling, read by
              simulator/machines/update_h200_ceilings.py as measured_matrix_fp8) and gemm_M_nofastacc
              (use_fast_accum=False, cuBLAS's more accurate accumulation, slower). Its check compares
              with a float64 product of the FP8 values times their scales. Where torch has no
              _scaled_mm or float8_e4m3fn, the device is older than sm_89, --gemm is not a multiple
              of 16 or the call is refused, the rows say 'unsupported: <reason>' (value empty) and
              the script goes on.
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


E4M3_MAX = 448.0  # largest finite float8_e4m3fn value


def fp8_unsupported(m):
    """Why the FP8 GEMM cannot run here ('' when it can, as far as can be told before a call)."""
    if not hasattr(torch, "_scaled_mm"):
        return f"torch {torch.__version__} has no torch._scaled_mm"
    if not hasattr(torch, "float8_e4m3fn"):
        return f"torch {torch.__version__} has no torch.float8_e4m3fn"
    if getattr(torch.version, "hip", None):
        return "ROCm build: its FP8 GEMM takes float8_e4m3fnuz on MI300, not measured by this script"
    cap = torch.cuda.get_device_capability()
    if cap < (8, 9):
        return f"device sm_{cap[0]}{cap[1]} has no FP8 tensor cores (sm_89 or newer needed)"
    if m % 16:
        return f"--gemm {m} is not a multiple of 16 (torch._scaled_mm needs M, N, K multiples of 16)"
    return ""


def fp8_quantize(x):
    """(x / s in float8_e4m3fn, s): per-tensor scale s = amax / 448 (float32, 0-dim), so that
    x ~= x8 * s; _scaled_mm multiplies by s (the descale) in its epilogue."""
    s = (x.abs().amax().float() / E4M3_MAX).clamp(min=1e-12)
    return (x.float() / s).to(torch.float8_e4m3fn), s


def fp8_gemm_inputs(m):
    """A (M, K) row-major and B (K, N) COLUMN-major in float8_e4m3fn with their scales.
    torch._scaled_mm (cuBLASLt's FP8 GEMM) takes A row-major and B column-major only (the
    FP8 tensor-core path is "TN": both operands K-major); a row-major B is refused. B is built
    as an (N, K) row-major tensor and transposed, a view with strides (1, K)."""
    a8, sa = fp8_quantize(torch.randn(m, m, device="cuda", dtype=torch.float32))
    bt8, sb = fp8_quantize(torch.randn(m, m, device="cuda", dtype=torch.float32))  # (N, K) row-major
    b8 = bt8.t()  # (K, N), column-major
    assert b8.stride() == (1, m), b8.stride()
    return a8, b8, sa, sb


def fp8_gemm(a8, b8, sa, sb, fast_accum):
    """C = (A8 sa) @ (B8 sb) in bf16: torch._scaled_mm(a, b, scale_a, scale_b, out_dtype=...,
    use_fast_accum=...), per-tensor float32 scales."""
    return torch._scaled_mm(a8, b8, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16, use_fast_accum=fast_accum)


def fp8_gemm_check(a8, b8, sa, sb, c):
    """Relative error of C's first 64 x 64 block against a float64 product of the FP8 values
    times their scales (what the GEMM is asked to compute)."""
    ref = (a8[:64].float().double() * sa.double()) @ (b8[:, :64].float().double() * sb.double())
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

    def unsupported(name, dtype, sample, size, work, reason):
        """A row for a ceiling that cannot be measured here: same columns, no numbers."""
        rows.append(dict(name=name, dtype=dtype, value=None, unit="TFLOP/s", median_ms=None, min_ms=None,
                         sample=sample, value_at_min=None, max_ms=None, reps=0, size=size, work=work,
                         timing="not run", flush_l2="", check=f"unsupported: {reason}"))
        print(f"s{sample} {name:9s} {dtype:5s} unsupported: {reason}", flush=True)
        timing.write_results(args.out, "ceilings", rows, context)

    nbytes = int(args.copy_gib * 2**30) // 4 * 4
    src = torch.randn(nbytes // 4, device="cuda", dtype=torch.float32)
    dst = torch.empty_like(src)
    m = args.gemm
    mats = {}
    for dname, dt in (("bf16", torch.bfloat16), ("fp16", torch.float16), ("fp32", torch.float32)):
        a, b = torch.randn(m, m, device="cuda", dtype=dt), torch.randn(m, m, device="cuda", dtype=dt)
        mats[dname] = (a, b, torch.empty(m, m, device="cuda", dtype=dt))
    # FP8 e4m3: (mode name suffix, use_fast_accum, rel_err bound). Fast accumulation keeps the sum in
    # the tensor cores' narrower accumulator over all K = --gemm terms, hence the wider bound; either
    # bound is far under the O(1) error of a wrong layout or scale.
    fp8_modes = (("", True, 5e-2), ("_nofastacc", False, 1e-2))
    fp8_why = fp8_unsupported(m)
    fp8 = None
    if not fp8_why:
        try:
            fp8 = fp8_gemm_inputs(m)
            fp8_gemm(*fp8, fast_accum=True)  # a refused call (e.g. no FP8 kernel in this build) shows here
            torch.cuda.synchronize()
        except (RuntimeError, TypeError) as e:
            fp8, fp8_why = None, "torch._scaled_mm refused: " + (str(e).splitlines() or [type(e).__name__])[0][:160]
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
        for suffix, fast, tol in fp8_modes:
            name, size = f"gemm_{m}{suffix}", f"M=N=K={m}, use_fast_accum={fast}"
            if fp8 is None:
                unsupported(name, "fp8_e4m3", sample, size, 2.0 * m * m * m, fp8_why)
                continue
            first = []
            r = timing.time_call(lambda fast=fast: fp8_gemm(*fp8, fast_accum=fast), first_call=first.append,
                                 problem_bytes=2 * fp8[0].nbytes + 2 * m * m, flush_l2=flush, reps=args.reps)
            err = fp8_gemm_check(*fp8, first[0])
            del first
            record(name, "fp8_e4m3", 2.0 * m * m * m, "TFLOP/s", 1e12, r, sample, size,
                   f"rel_err {err:.2e} vs float64 of the scaled FP8 inputs ({'ok' if err <= tol else 'FAILED'}, "
                   f"bound {tol:g})")
    if any("FAILED" in r["check"] for r in rows):
        print("ceilings.py: a check failed (see the check column)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

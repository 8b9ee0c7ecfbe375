"""FP8 logic of the Python front door and of the FP8 benchmark, on the CPU (no GPU, no C ABI library).

    python3 python/test_fp8_cpu.py

Needs torch with torch.float8_e4m3fn (prints "SKIPPED: ..." and exits 77 without it). Checks:
  - ioattn.quantize_fp8, per tensor: descale = amax / 448, the largest |x| becomes the code 448,
    every other value is within half an e4m3 step of x / descale (relative 2^-4 for normal codes,
    2^-10 absolute in code units below 2^-6, the subnormal step 2^-9 halved), zero stays zero; per
    K/V head (GQA grouping of query heads): one descale per group, from that group's amax alone; an
    all-zero tensor gets descale 1.0; bad input (inf, NaN, rank 3, an integer tensor, a granularity
    or heads_kv that does not fit) is refused with IoattnError(2) and one line;
  - the descale arguments (ioattn._fp8_descale, _fp8_args): None, a float, a sequence and a 1-D
    tensor of 1 or heads_kv values pass as those values; counts other than 1 or heads_kv, values
    <= 0, NaN or inf, a 2-D tensor, a bool, a str, and out_dtype other than bf16/fp16 are refused;
    FP8 arguments with bf16 inputs are refused;
  - forward(), backward() and attention() with FP8 CPU tensors: forward() refuses them as not CUDA
    (after the FP8 argument checks), backward() and attention() with requires_grad as forward only;
  - experiments/gpu/bench_sdpa.py's slice_reference (float64 O of batch 0, the first heads, GQA,
    causal bottom-right, descales) against a per-element loop, and slice_errors on a known
    perturbation.
One line per check; exit 0 when all pass, 1 otherwise.
"""
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "experiments", "gpu"))
import ioattn  # noqa: E402
from ioattn import IoattnError  # noqa: E402

bad = []


def expect(ok, what):
    print(("PASS: " if ok else "FAIL: ") + what, flush=True)
    if not ok:
        bad.append(what)


def refused(fn, keyword):
    """fn() raises IoattnError(2) with one line containing keyword; the message, or None."""
    try:
        fn()
    except IoattnError as e:
        msg = str(e)
        return msg if e.code == 2 and "\n" not in msg and keyword in msg else None
    except Exception as e:  # noqa: BLE001 - anything else is a failure of the front door
        print(f"  (raised {type(e).__name__}: {e})")
        return None
    print("  (accepted)")
    return None


def check_quantize(torch):
    g = torch.Generator().manual_seed(5)
    x = (torch.randn(2, 33, 4, 64, generator=g) * 3).to(torch.bfloat16)
    x[0, 0, 0, :4] = 0.0
    x[1, 3, 2, 5] = 1e-6  # a value far below the smallest normal code after scaling
    codes, ds = ioattn.quantize_fp8(x)
    amax = x.float().abs().max().item()
    expect(isinstance(ds, float) and ds == amax / 448.0 and codes.dtype == torch.float8_e4m3fn
           and codes.shape == x.shape, f"per tensor: descale = amax / 448 ({ds:.6g}), e4m3 codes of x's shape")
    c = codes.float()
    expect(c.abs().max().item() == 448.0 and c[x.float().abs() == amax].abs().min().item() == 448.0,
           "per tensor: the largest |x| is the code 448")
    t = x.float() / ds
    step_ok = ((c - t).abs() <= torch.where(t.abs() >= 2.0 ** -6, t.abs() * 2.0 ** -4, torch.full_like(t, 2.0 ** -10))
               + 1e-6 * t.abs()).all().item()
    expect(step_ok, "per tensor: every code within half an e4m3 step of x / descale")
    expect((c[0, 0, 0, :4] == 0).all().item(), "zero stays zero")

    hkv = 2
    xh = x.clone()
    xh[:, :, 2:, :] *= 100  # the second K/V group is 100x larger
    codes_h, dsh = ioattn.quantize_fp8(xh, "head", heads_kv=hkv)
    want = xh.float().abs().amax(dim=(0, 1, 3)).view(hkv, 2).amax(dim=1) / 448.0
    expect(isinstance(dsh, torch.Tensor) and dsh.dtype == torch.float32 and tuple(dsh.shape) == (hkv,)
           and torch.allclose(dsh, want.float(), rtol=1e-6, atol=0), f"per head: one descale per K/V group {dsh.tolist()}")
    ch = codes_h.float()
    expect(ch[:, :, :2].abs().max().item() == 448.0 and ch[:, :, 2:].abs().max().item() == 448.0,
           "per head: each group's own amax becomes 448 (the large group does not squash the small one)")
    per_head = dsh.repeat_interleave(2).view(1, 1, 4, 1)
    th = xh.float() / per_head  # in code units
    bound = torch.where(th.abs() >= 2.0 ** -6, th.abs() * 2.0 ** -4, torch.full_like(th, 2.0 ** -10)) + 1e-6 * th.abs()
    expect(((ch - th).abs() <= bound).all().item(), "per head: every code within half an e4m3 step of x / its descale")
    z, dz = ioattn.quantize_fp8(torch.zeros(1, 4, 2, 8, dtype=torch.float16))
    expect(dz == 1.0 and (z.float() == 0).all().item(), "an all-zero tensor: descale 1.0, zero codes")
    zh = torch.zeros(1, 4, 2, 8)
    zh[:, :, 1] = 2.0
    _, dzh = ioattn.quantize_fp8(zh, "head")
    expect(dzh.tolist() == torch.tensor([1.0, 2.0 / 448.0], dtype=torch.float32).tolist(),
           f"an all-zero head: descale 1.0, the other its own {dzh.tolist()}")
    for name, fn, kw in (
            ("inf", lambda: ioattn.quantize_fp8(torch.tensor([[[[math.inf]]]])), "finite"),
            ("NaN", lambda: ioattn.quantize_fp8(torch.full((1, 1, 1, 2), math.nan)), "finite"),
            ("rank 3", lambda: ioattn.quantize_fp8(torch.ones(2, 3, 4)), "rank 4"),
            ("int32", lambda: ioattn.quantize_fp8(torch.ones(1, 1, 1, 1, dtype=torch.int32)), "x.dtype"),
            ("granularity 'row'", lambda: ioattn.quantize_fp8(x, "row"), "granularity"),
            ("heads_kv 3 of 4 heads", lambda: ioattn.quantize_fp8(x, "head", heads_kv=3), "heads_kv"),
            ("heads_kv 0", lambda: ioattn.quantize_fp8(x, "head", heads_kv=0), "heads_kv"),
            ("a list", lambda: ioattn.quantize_fp8([1.0]), "torch.Tensor")):
        msg = refused(fn, kw)
        expect(msg is not None, f"quantize_fp8 refuses {name}: {msg}")


def check_descales(torch):
    d = ioattn._fp8_descale
    expect(d(torch, "q_descale", None, 4) == [1.0] and d(torch, "q_descale", 0.25, 4) == [0.25]
           and d(torch, "q_descale", [0.5, 1, 2, 4], 4) == [0.5, 1.0, 2.0, 4.0]
           and d(torch, "q_descale", torch.tensor([0.5, 2.0]), 2) == [0.5, 2.0]
           and d(torch, "q_descale", torch.tensor(0.125), 2) == [0.125],
           "descales: None, a float, a sequence, a 1-D or 0-D tensor pass as their values")
    for name, x, kw in (("3 values for heads_kv 2", [1.0, 1.0, 1.0], "heads_kv = 2"), ("0 values", [], "heads_kv = 2"),
                        ("0", 0.0, "finite and > 0"), ("-1", -1, "finite and > 0"), ("NaN", math.nan, "finite and > 0"),
                        ("inf in a list", [1.0, math.inf], "finite and > 0"),
                        ("a 2-D tensor", torch.ones(1, 2), "1-D tensor"), ("True", True, "q_descale must be"),
                        ("a str", "1", "q_descale must be"), ("a tensor with NaN", torch.tensor([1.0, math.nan]),
                                                              "finite and > 0")):
        msg = refused(lambda x=x: d(torch, "q_descale", x, 2), kw)
        expect(msg is not None, f"descale {name} refused: {msg}")
    q8 = torch.zeros(1, 4, 4, 16).to(torch.float8_e4m3fn)
    k8 = torch.zeros(1, 4, 2, 16).to(torch.float8_e4m3fn)
    a = ioattn._fp8_args(torch, q8, k8, None, [1.0, 2.0], 0.5, torch.float16)
    expect(a == ([1.0], [1.0, 2.0], [0.5], torch.float16), f"_fp8_args: descales and out dtype {a}")
    expect(ioattn._fp8_args(torch, q8, k8, None, None, None, None)[3] == torch.bfloat16, "out_dtype defaults to bf16")
    for name, od in (("float32", torch.float32), ("float8", torch.float8_e4m3fn), ("a str", "bf16")):
        msg = refused(lambda od=od: ioattn._fp8_args(torch, q8, k8, None, None, None, od), "out_dtype")
        expect(msg is not None, f"out_dtype {name} refused: {msg}")
    qb = torch.zeros(1, 4, 4, 16, dtype=torch.bfloat16)
    expect(ioattn._fp8_args(torch, qb, qb, None, None, None, None) is None, "bf16 inputs: not an FP8 call")
    msg = refused(lambda: ioattn._fp8_args(torch, qb, qb, 0.5, None, None, torch.float16), "float8_e4m3fn inputs only")
    expect(msg is not None and "q_descale" in msg and "out_dtype" in msg, f"FP8 arguments on bf16 inputs refused: {msg}")

    v8 = torch.zeros(1, 4, 2, 16).to(torch.float8_e4m3fn)
    msg = refused(lambda: ioattn.forward(q8, k8, v8, kernel="v09_fp8_wgmma", q_descale=0.5), "CUDA tensor")
    expect(msg is not None, f"forward(FP8 CPU tensors) refused before any GPU work: {msg}")
    msg = refused(lambda: ioattn.forward(q8, k8, v8, kernel="v09_fp8_wgmma", k_descale=[1.0] * 3), "heads_kv = 2")
    expect(msg is not None, f"forward(FP8): the descale count is checked first: {msg}")
    o = torch.zeros(1, 4, 4, 16, dtype=torch.bfloat16)
    lse = torch.zeros(1, 4, 4)
    msg = refused(lambda: ioattn.backward(q8, k8, v8, o, lse, o), "forward only")
    expect(msg is not None, f"backward(FP8) refused as forward only: {msg}")
    try:
        leaf = q8.clone().requires_grad_(True)
    except RuntimeError as e:
        print(f"skip: this torch makes no FP8 leaf that requires grad ({str(e).splitlines()[0]})")
        return
    msg = refused(lambda: ioattn.attention(leaf, k8, v8), "forward only")
    expect(msg is not None, f"attention(FP8 q with requires_grad) refused as forward only: {msg}")
    msg = refused(lambda: ioattn.attention(q8, k8, v8, kernel=("v09_fp8_wgmma", "bwd03_fa3_wgmma")), "forward only")
    expect(msg is not None, f"attention(FP8) with a backward kernel named refused: {msg}")


def check_slice_reference(torch):
    import bench_sdpa
    bench_sdpa.import_torch()
    g = torch.Generator().manual_seed(9)
    b, nq, nk, hq, hkv, d = 2, 5, 7, 4, 2, 8
    q = torch.randn(b, nq, hq, d, generator=g)
    k = torch.randn(b, nk, hkv, d, generator=g)
    v = torch.randn(b, nk, hkv, d, generator=g)
    for causal in (False, True):
        ref = bench_sdpa.slice_reference(q, k, v, causal, heads=2, descales=(0.5, 2.0, 3.0))
        want = torch.zeros(nq, 2, d, dtype=torch.float64)
        for h in range(2):
            hk = h // (hq // hkv)
            for i in range(nq):
                s = [(0.5 * q[0, i, h].double() * 2.0 * k[0, j, hk].double()).sum().item() / math.sqrt(d)
                     for j in range(nk)]
                keep = [j for j in range(nk) if not causal or j <= i + (nk - nq)]
                m = max(s[j] for j in keep)
                w = {j: math.exp(s[j] - m) for j in keep}
                z = sum(w.values())
                for j in keep:
                    want[i, h] += w[j] / z * 3.0 * v[0, j, hk].double()
        err = (ref - want).abs().max().item()
        expect(ref.dtype == torch.float64 and tuple(ref.shape) == (nq, 2, d) and err < 1e-12,
               f"slice_reference (GQA {hq}/{hkv}, causal {int(causal)}, descales) = the per-element loop (max diff {err:.1e})")
    ref = bench_sdpa.slice_reference(q, k, v, False)
    x = torch.zeros(b, nq, hq, d, dtype=torch.float32)
    x[0, :, :2] = ref.float()
    x[0, 1, 1, 3] += 0.5  # a known error inside the slice
    x[0, :, 2:] = 100.0  # heads outside the slice: not counted
    x[1] = 100.0  # another batch: not counted
    e = bench_sdpa.slice_errors(x, ref, ref_dequant=ref)
    expect(abs(e["slice_max_abs_err"] - 0.5) <= 1e-5 and e["slice_max_abs_err_dequant"] == e["slice_max_abs_err"]
           and 0 < e["slice_rel_l2_err"] < 1 and "batch 0" in e["error_slice"],
           f"slice_errors: the slice's max error, the rest of the tensor ignored ({e['slice_max_abs_err']:.4f})")


def main():
    try:
        import torch
    except ImportError:
        print("SKIPPED: torch is not installed")
        return 77
    if not hasattr(torch, "float8_e4m3fn"):
        print(f"SKIPPED: torch {torch.__version__} has no float8_e4m3fn")
        return 77
    print(f"torch {torch.__version__} (CPU)")
    for part in (check_quantize, check_descales, check_slice_reference):
        try:
            part(torch)
        except Exception as e:  # noqa: BLE001 - a crash of one part is a failure, not the end of the report
            expect(False, f"{part.__name__} raised {type(e).__name__}: {e}")
    print(f"{'FAIL' if bad else 'PASS'}: {len(bad)} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

"""torch.autograd gradients of ioattn.attention against SDPA's, under the project's error rule (GPU).

    IOATTN_CAPI=build-gpu/kernels/libioattn_capi.so python3 python/test_autograd.py [--quick]

Needs torch (>= 2.4, torch.library.custom_op) and a CUDA GPU; without either it prints
"SKIPPED: ..." and exits 77. One line per case; the last line is "N passed, M failed"; exit 0
when none failed, else 1. A case a backward's registry entry does not list (dtype, head dim) is
printed as "skip" and not counted; one it lists but refuses is a failure.

Truth and baseline (include/ioattn/tolerance.hpp):
  truth     SDPA, math backend, float64, on the same input values upcast (q, k, v and the output
            gradient g are drawn in the case's dtype, then converted);
  baseline  SDPA in the case's dtype (the backend torch picks for it: flash without a mask,
            memory-efficient with one);
  rule      max|ours - ref64| <= factor * max|baseline - ref64| + 8 u max(1, max|ref64|),
            factor 2 for O and 3 for dQ, dK, dV; u = 2^-24 (fp32), 2^-11 (fp16), 2^-8 (bf16). NaN
            never passes (a NaN in ours is an infinite error; a non-finite baseline error is
            replaced by 0, which leaves only the floor, and the line says so).
Masks: SDPA is given the project's mask explicitly (boolean, True = attend): query i sees key j
when j <= i + Nk - Nq (causal, bottom-right) and j in [i + Nk - Nq - left, i + Nk - Nq + right]
for a window (causal tightens right to 0). A fully masked row has O = 0 and no gradient in ioattn;
SDPA is given that row unmasked and its output multiplied by 0, which is the same function with
finite gradients. GQA/MQA: K and V heads repeated for SDPA (repeat_interleave), so autograd sums
dK, dV over each group. TF32 is off.

Cases:
  - every registered backward (ioattn.backward_kernels(), with the forward it pairs with) x
    shapes (odd sizes, seqlen_q != seqlen_k both ways with causal, windows, GQA/MQA, fully masked
    leading rows, head dims 32-256, a custom scale) x fp32/fp16/bf16: O, dQ, dK, dV by the rule,
    and exact zeros in O and dQ on fully masked rows;
  - kernel=None (ioattn's choice, printed) on a few of those shapes;
  - every backward registered deterministic: dQ, dK, dV bit-identical over 5 backward calls;
  - torch.compile(fullgraph=True) of a function calling ioattn.attention: backends aot_eager (the
    fake impls traced by AOTAutograd) and inductor, and dynamic=True over two seqlens; gradients
    by the rule and, with a deterministic backward, bit-identical to eager;
  - torch.library.opcheck of both custom ops (schema, fake impl, autograd registration);
  - attention() refuses bad input with IoattnError (code 2) naming the constraint.
--quick: fewer shapes (the first four and the last), bf16 and fp32 only.
"""
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ioattn  # noqa: E402
from ioattn import IoattnError  # noqa: E402

torch = F = SDPBackend = sdpa_kernel = None
passed = failed = 0
U = {"fp32": 2.0 ** -24, "fp16": 2.0 ** -11, "bf16": 2.0 ** -8}
FLOOR_ULPS = 8.0
QUICK = "--quick" in sys.argv[1:]

# (name, batch, seqlen_q, seqlen_k, heads_q, heads_kv, head_dim, causal, window, scale)
SHAPES = [
    ("one query, one key", 1, 1, 1, 1, 1, 64, False, (-1, -1), None),
    ("odd sizes, GQA 4/2", 2, 77, 131, 4, 2, 64, False, (-1, -1), None),
    ("causal, Nq 113 < Nk 203", 2, 113, 203, 4, 4, 64, True, (-1, -1), None),
    ("causal, Nq 203 > Nk 113, MQA 4/1 (90 leading rows fully masked)", 1, 203, 113, 4, 1, 128, True, (-1, -1), None),
    ("causal square 256, d 128", 1, 256, 256, 2, 2, 128, True, (-1, -1), None),
    ("window (16, 0), d 96", 2, 97, 97, 3, 3, 96, False, (16, 0), None),
    ("window (5, 3), Nq 150 > Nk 120, GQA 4/2, d 32 (rows fully masked)", 1, 150, 120, 4, 2, 32, False, (5, 3), None),
    ("causal + window left 7, Nq 33 < Nk 45, d 80, scale 0.3", 1, 33, 45, 2, 2, 80, True, (7, -1), 0.3),
    ("d 256", 1, 64, 64, 2, 2, 256, False, (-1, -1), None),
    ("causal, Nq 1000 < Nk 1024, GQA 4/2", 1, 1000, 1024, 4, 2, 64, True, (-1, -1), None),
]
AUTO_SHAPES = [1, 3, 7, 9]  # indices into SHAPES for kernel=None


def report(ok, name, detail=""):
    global passed, failed
    passed, failed = passed + ok, failed + (not ok)
    print(f"{'ok  ' if ok else 'FAIL'} {name}{': ' + detail if detail else ''}", flush=True)


def dtypes():
    all_ = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
    return {k: all_[k] for k in (("bf16", "fp32") if QUICK else ("fp32", "fp16", "bf16"))}


def shapes():
    return [SHAPES[i] for i in (0, 1, 2, 3, len(SHAPES) - 1)] if QUICK else SHAPES


def lists(spec, value):
    """Does a registry list ("fp32,fp16", "64,128", "any", "any<=256") contain value?"""
    spec = spec.strip()
    if spec == "any":
        return True
    if spec.startswith("any<="):
        return int(value) <= int(spec[5:])
    return str(value) in [s.strip() for s in spec.split(",")]


# ---- the reference: SDPA with the project's mask -------------------------------------------------

def allowed_mask(nq, nk, causal, window, device):
    """(Nq, Nk) bool, True = query i may see key j (include/ioattn/mask.hpp)."""
    left, right = window
    right = 0 if causal else right
    i = torch.arange(nq, device=device)[:, None]
    j = torch.arange(nk, device=device)[None, :]
    diag = i + (nk - nq)
    ok = torch.ones(nq, nk, dtype=torch.bool, device=device)
    if left >= 0:
        ok &= j >= diag - left
    if right >= 0:
        ok &= j <= diag + right
    return ok


def sdpa_attention(q, k, v, causal, window, scale, math_backend):
    """O (BSHD) of SDPA on BSHD q, k, v with the project's mask; fully masked rows give 0."""
    b, nq, hq, d = q.shape
    nk, hkv = k.shape[1], k.shape[2]
    qt, kt, vt = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
    if hkv != hq:
        kt, vt = kt.repeat_interleave(hq // hkv, dim=1), vt.repeat_interleave(hq // hkv, dim=1)
    mask, keep = None, None
    if causal or window != (-1, -1):
        allowed = allowed_mask(nq, nk, causal, window, q.device)
        rows = allowed.any(dim=-1)                       # (Nq,): rows that see at least one key
        mask = allowed | ~rows[:, None]                  # a fully masked row: unmasked here, zeroed below
        if not bool(rows.all()):
            keep = rows.to(q.dtype)[None, None, :, None]
    kw = {} if scale is None else {"scale": scale}
    if math_backend:
        with sdpa_kernel([SDPBackend.MATH]):
            o = F.scaled_dot_product_attention(qt, kt, vt, attn_mask=mask, **kw)
    else:
        o = F.scaled_dot_product_attention(qt, kt, vt, attn_mask=mask, **kw)
    if keep is not None:
        o = o * keep
    return o.transpose(1, 2)


def grads_of(fn, q, k, v, g, dtype=None):
    """(O, dQ, dK, dV) of fn on copies of q, k, v (converted to dtype) with output gradient g."""
    dtype = dtype or q.dtype
    x = [t.detach().to(dtype).clone().requires_grad_(True) for t in (q, k, v)]
    o = fn(*x)
    dq, dk, dv = torch.autograd.grad(o, x, g.to(dtype))
    return o.detach(), dq, dk, dv


def inputs(shape, dt, seed):
    _, b, nq, nk, hq, hkv, d = shape[:7]
    gen = torch.Generator(device="cuda").manual_seed(seed)
    mk = lambda *s: torch.randn(*s, device="cuda", generator=gen).to(dt)  # noqa: E731
    return mk(b, nq, hq, d), mk(b, nk, hkv, d), mk(b, nk, hkv, d), mk(b, nq, hq, d)


def references(shape, dt, seed):
    """Inputs and the (O, dQ, dK, dV) of truth (float64 math) and baseline (same dtype SDPA)."""
    causal, window, scale = shape[7], shape[8], shape[9]
    q, k, v, g = inputs(shape, dt, seed)
    ref = grads_of(lambda a, b_, c: sdpa_attention(a, b_, c, causal, window, scale, True), q, k, v, g, torch.float64)
    base = grads_of(lambda a, b_, c: sdpa_attention(a, b_, c, causal, window, scale, False), q, k, v, g)
    return (q, k, v, g), ref, base


def max_err(x, ref):
    """max |x - ref| in float64; NaN anywhere in x: inf."""
    if bool(torch.isnan(x).any()):
        return math.inf
    return (x.double() - ref).abs().max().item() if x.numel() else 0.0


def judge(ours, ref, base, dname):
    """(ok, detail) of O, dQ, dK, dV under the rule."""
    ok, parts = True, []
    for label, a, r, bl, factor in zip(("O", "dQ", "dK", "dV"), ours, ref, base, (2.0, 3.0, 3.0, 3.0)):
        e, eb = max_err(a, r), max_err(bl, r)
        note = ""
        if not math.isfinite(eb):
            eb, note = 0.0, " (baseline non-finite: floor only)"
        floor = FLOOR_ULPS * U[dname] * max(1.0, r.abs().max().item() if r.numel() else 0.0)
        bound = factor * eb + floor
        good = e <= bound
        ok &= good
        parts.append(f"{label} {e:.2e}{'<=' if good else '>'}{bound:.2e}{note}")
    return ok, ", ".join(parts)


def masked_rows_zero(o, dq, shape):
    """O and dQ are exactly 0 on the query rows that see no key (True when there are none)."""
    _, _, nq, nk, _, _, _, causal, window = shape[:9]
    if not (causal or window != (-1, -1)):
        return True, ""
    rows = ~allowed_mask(nq, nk, causal, window, o.device).any(dim=-1)
    n = int(rows.sum().item())
    if n == 0:
        return True, ""
    zero = bool((o[:, rows] == 0).all()) and bool((dq[:, rows] == 0).all())
    return zero, f"; {n} fully masked rows: O, dQ {'exactly 0' if zero else 'NOT 0'}"


def ours_grads(q, k, v, g, shape, kernel):
    causal, window, scale = shape[7], shape[8], shape[9]
    return grads_of(lambda a, b_, c: ioattn.attention(a, b_, c, causal=causal, window=window, scale=scale,
                                                      kernel=kernel), q, k, v, g)


def describe(shape, dname):
    name, b, nq, nk, hq, hkv, d = shape[:7]
    return f"{dname} {name} [B{b} Nq{nq} Nk{nk} H{hq}/{hkv} d{d}]"


# ---- the cases ------------------------------------------------------------------------------------

def run_gradients():
    bwds = ioattn.backward_kernels()
    report(len(bwds) > 0, "backward registry", ", ".join(bwds) or "no backward registered")
    for si, shape in enumerate(shapes()):
        for dname, dt in dtypes().items():
            d = shape[6]
            try:
                (q, k, v, g), ref, base = references(shape, dt, seed=1000 + 17 * si)
            except Exception as e:  # noqa: BLE001 - the reference itself failed: every case of it fails
                report(False, f"reference {describe(shape, dname)}", f"{type(e).__name__}: {str(e)[:200]}")
                continue
            runs = [(name, (info["pairs_with"], name)) for name, info in bwds.items()
                    if lists(info["dtypes"], dname) and lists(info["head_dims"], d)]
            for name, info in bwds.items():
                if not (lists(info["dtypes"], dname) and lists(info["head_dims"], d)):
                    print(f"skip {name} {describe(shape, dname)}: not in its registry entry "
                          f"({info['dtypes']}; {info['head_dims']}) (not counted)")
            if SHAPES.index(shape) in AUTO_SHAPES or QUICK:
                runs.append(("kernel=None", None))
            for label, kernel in runs:
                what = f"{label} {describe(shape, dname)}"
                try:
                    ours = ours_grads(q, k, v, g, shape, kernel)
                    torch.cuda.synchronize()
                except IoattnError as e:
                    report(False, what, f"refused (code {e.code}): {e}")
                    continue
                ok, detail = judge(ours, ref, base, dname)
                zero, zdetail = masked_rows_zero(ours[0], ours[1], shape)
                if kernel is None:
                    detail = "chose " + "+".join(ioattn.choose_kernels(q, k, shape[7], shape[8])) + "; " + detail
                report(ok and zero, what, detail + zdetail)
            del q, k, v, g, ref, base


def run_determinism():
    shape = SHAPES[2]  # causal, Nq < Nk: atomics would race here
    for name, info in ioattn.backward_kernels().items():
        if not info["deterministic"]:
            print(f"skip determinism {name}: not registered deterministic (not counted)")
            continue
        q, k, v, g = inputs(shape, torch.bfloat16, seed=7)
        o, lse = ioattn.forward(q, k, v, kernel=info["pairs_with"], causal=shape[7])
        first = ioattn.backward(q, k, v, o, lse, g, kernel=name, causal=shape[7])
        same = True
        for _ in range(4):
            again = ioattn.backward(q, k, v, o, lse, g, kernel=name, causal=shape[7])
            same &= all(torch.equal(a, b) for a, b in zip(first, again))
        torch.cuda.synchronize()
        report(same, f"determinism {name} {describe(shape, 'bf16')}",
               "dQ, dK, dV bit-identical over 5 calls" if same else "gradients DIFFER between calls")


def run_compile():
    ioattn.register_ops()
    shape = SHAPES[2]
    causal = shape[7]

    def f(q, k, v, g):
        return (ioattn.attention(q, k, v, causal=causal) * g).sum()

    (q, k, v, g), ref, base = references(shape, torch.bfloat16, seed=31)
    _, bwd = ioattn.choose_kernels(q, k, causal)
    deterministic = ioattn.backward_kernels()[bwd]["deterministic"]
    eager = grads_of(lambda a, b_, c: ioattn.attention(a, b_, c, causal=causal), q, k, v, g)
    for backend in ("aot_eager", "inductor"):
        what = f"torch.compile(fullgraph=True, backend={backend}) {describe(shape, 'bf16')}"
        try:
            torch._dynamo.reset()
            cf = torch.compile(f, fullgraph=True, backend=backend)
            x = [t.detach().clone().requires_grad_(True) for t in (q, k, v)]
            loss = cf(*x, g)
            dq, dk, dv = torch.autograd.grad(loss, x)
            with torch.no_grad():
                o = cf(*[t.detach() for t in x], g)  # noqa: F841 - the compiled forward also runs without grad
                o_c = ioattn.attention(*[t.detach() for t in x], causal=causal)
            torch.cuda.synchronize()
        except Exception as e:  # noqa: BLE001 - a failed trace or run is this case's failure
            report(False, what, f"{type(e).__name__}: {(str(e).splitlines() or [''])[0][:300]}")
            continue
        ok, detail = judge((o_c, dq, dk, dv), ref, base, "bf16")
        same = all(torch.equal(a, b) for a, b in zip((dq, dk, dv), eager[1:]))
        need_same = deterministic
        report(ok and (same or not need_same), what,
               f"backward {bwd}; {detail}; gradients {'bit-identical to' if same else 'differ from'} eager"
               + ("" if same or not need_same else " (the backward is deterministic: they must not)"))

    what = "torch.compile(fullgraph=True, dynamic=True, backend=aot_eager) over Nq = Nk = 96 and 131"
    try:
        torch._dynamo.reset()
        cf = torch.compile(f, fullgraph=True, dynamic=True, backend="aot_eager")
        details, ok = [], True
        for n in (96, 131):
            sh = (f"dynamic N {n}", 1, n, n, 2, 2, 64, True, (-1, -1), None)
            (q, k, v, g), ref, base = references(sh, torch.bfloat16, seed=n)
            x = [t.detach().clone().requires_grad_(True) for t in (q, k, v)]
            dq, dk, dv = torch.autograd.grad(cf(*x, g), x)
            o = ioattn.attention(q, k, v, causal=True)
            good, detail = judge((o, dq, dk, dv), ref, base, "bf16")
            ok &= good
            details.append(f"N {n}: {detail}")
        report(ok, what, " | ".join(details))
    except Exception as e:  # noqa: BLE001
        report(False, what, f"{type(e).__name__}: {(str(e).splitlines() or [''])[0][:300]}")


def run_opcheck():
    ops = ioattn.register_ops()
    if not hasattr(torch.library, "opcheck"):
        print("skip opcheck: this torch has no torch.library.opcheck (not counted)")
        return
    shape = SHAPES[1]
    q, k, v, g = inputs(shape, torch.bfloat16, seed=5)
    det = [n for n, i in ioattn.backward_kernels().items() if i["deterministic"]]
    bwd = det[0] if det else ioattn.DEFAULT_BACKWARD
    fwd = ioattn.backward_kernels()[bwd]["pairs_with"]
    x = [t.clone().requires_grad_(True) for t in (q, k, v)]
    try:
        torch.library.opcheck(ops.attention_forward.default, (*x, False, -1, -1, 0.0, fwd, bwd))
        report(True, f"opcheck ioattn::attention_forward ({fwd}, backward {bwd})")
    except Exception as e:  # noqa: BLE001
        report(False, f"opcheck ioattn::attention_forward ({fwd}, backward {bwd})",
               f"{type(e).__name__}: {(str(e).splitlines() or [''])[0][:300]}")
    o, lse = ioattn.forward(q, k, v, kernel=fwd)
    try:
        torch.library.opcheck(ops.attention_backward.default, (g, q, k, v, o, lse, False, -1, -1, 0.0, bwd))
        report(True, f"opcheck ioattn::attention_backward ({bwd})")
    except Exception as e:  # noqa: BLE001
        report(False, f"opcheck ioattn::attention_backward ({bwd})",
               f"{type(e).__name__}: {(str(e).splitlines() or [''])[0][:300]}")


def run_bad():
    q, k, v, _ = inputs(SHAPES[1], torch.bfloat16, seed=3)
    cases = [
        ("kernel an int", "kernel must be", dict(kernel=5)),
        ("kernel a triple", "kernel must be", dict(kernel=("a", "b", "c"))),
        ("kernel unknown forward", "unknown", dict(kernel="v99_none")),
        ("kernel unknown backward", "unknown", dict(kernel=(None, "bwd99_none"))),
        ("window (-2, 0)", "window bounds", dict(window=(-2, 0))),
        ("window one int", "window must be a pair", dict(window=4)),
        ("scale 0", "scale", dict(scale=0.0)),
        ("scale NaN", "scale", dict(scale=float("nan"))),
        ("causal a str", "causal", dict(causal="yes")),
        ("q on the CPU", "q must be a CUDA tensor", dict(q=q.cpu())),
        ("q float64", "q.dtype", dict(q=q.double())),
        ("k, v dtype differ from q", "one dtype", dict(k=k.half(), v=v.half())),
        ("heads_q 4 not divisible by heads_kv 3", "divisible",
         dict(k=torch.cat([k, k[:, :, :1]], 2), v=torch.cat([v, v[:, :, :1]], 2))),
        ("q not a tensor", "q must be a torch.Tensor", dict(q=[1.0])),
    ]
    for name, keyword, override in cases:
        kw = dict(q=q, k=k, v=v)
        kw.update(override)
        x = {n: (t.detach().clone().requires_grad_(True) if isinstance(t, torch.Tensor) and t.is_floating_point()
                 else t) for n, t in kw.items() if n in ("q", "k", "v")}
        rest = {n: t for n, t in kw.items() if n not in ("q", "k", "v")}
        try:
            o = ioattn.attention(x["q"], x["k"], x["v"], **rest)
            if "bwd99" in str(rest.get("kernel")):
                torch.autograd.grad(o.sum(), [x["q"]])  # the backward's kernel is used here
            torch.cuda.synchronize()
            report(False, f"attention refuses {name}", "accepted")
        except IoattnError as e:
            ok = e.code == 2 and keyword.lower() in str(e).lower() and "\n" not in str(e)
            report(ok, f"attention refuses {name}", repr(str(e)[:200]))
        except Exception as e:  # noqa: BLE001 - anything but IoattnError is a failure of the front door
            report(False, f"attention refuses {name}", f"raised {type(e).__name__}: {str(e)[:200]}")


def main():
    global torch, F, SDPBackend, sdpa_kernel
    try:
        import torch as t
        import torch.nn.functional as f
        from torch.nn.attention import SDPBackend as B, sdpa_kernel as sk
    except ImportError as e:
        print(f"SKIPPED: no GPU (torch is not installed or too old: {e})")
        return 77
    torch, F, SDPBackend, sdpa_kernel = t, f, B, sk
    if not torch.cuda.is_available():
        print("SKIPPED: no GPU (torch.cuda.is_available() is False)")
        return 77
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    lib = Path(ioattn._find_library()).resolve()
    root = Path(__file__).resolve().parent.parent
    lib = lib.relative_to(root) if lib.is_relative_to(root) else lib.name  # no machine paths in a log
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}, library {lib}"
          + (" (--quick)" if QUICK else ""))
    for part in (run_gradients, run_determinism, run_compile, run_opcheck, run_bad):
        try:
            part()
        except Exception as e:  # noqa: BLE001 - a crash of one part is a failure, not the end of the report
            report(False, part.__name__, f"raised {type(e).__name__}: {str(e)[:300]}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

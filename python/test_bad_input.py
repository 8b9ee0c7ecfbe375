"""Bad input to ioattn's Python front door and C ABI is refused, and nothing is written outside the outputs.

    IOATTN_CAPI=build-gpu/kernels/libioattn_capi.so python3 python/test_bad_input.py

Needs torch and a CUDA GPU (prints "SKIPPED: no GPU" and exits 77 without one). Every tensor lives
inside a larger uint8 allocation with 4 KiB guard bytes of a fixed pattern before and after it;
outputs are NaN-filled before a call. Cases:
  - refused: each constraint forward() checks (python/ioattn.py), then the C ABI called directly
    through ctypes with bad values (null, misaligned or overlapping pointers, sizes < 1, heads not
    divisible, unknown kernel or dtype, causal not 0/1, negative tiles, non-finite scale, bad kernel
    index). Each must raise IoattnError (code 2) / return the refusal value, with a one-line message
    naming the constraint; after torch.cuda.synchronize() every buffer (inputs, outputs and guards)
    must be byte-identical to before: nothing ran. (q, k on two devices needs 2 GPUs: skipped, not
    counted, on one.)
  - good: every registered kernel that lists bf16 and d = 64, on B=2 Nq=77 Nk=131 Hq=4 Hkv=2 d=64,
    with out/lse allocated by forward() and with out/lse given inside guarded memory; a causal
    call; a non-contiguous q/k/v (same values, so the same output bit for bit). Inputs and guards
    must be untouched, O and LSE finite and close to a float32 torch reference. kernel_config()
    answers for each of them and refuses an unknown kernel.
  - backward refused: each constraint backward() checks (o, lse, d_o: type, shape, dtype, device;
    dq, dk, dv: shape, dtype, device, contiguity, no byte shared with an input or another output;
    the problem checks it shares with forward()), with dq, dk, dv given inside guarded memory; then
    ioattn_backward, ioattn_backward_workspace_bytes and ioattn_backward_config through ctypes
    (null, misaligned, overlapping pointers, bad problem fields, a forward's name as the kernel) and
    ioattn_backward_name/info out of range. Every buffer and guard byte-identical afterwards.
  - backward good: every registered backward that lists bf16 and d = 64, after the forward it
    pairs with, causal or not: dQ, dK, dV finite and close to float32 autograd of the reference,
    inputs untouched; again with dq, dk, dv given in guarded memory (guards untouched, the given
    tensors returned, bit-identical for a deterministic backward); non-contiguous o, lse, d_o give
    the same gradients; backward_config() answers for each and refuses an unknown kernel.
  - FP8 refused (forward() with torch.float8_e4m3fn q, k, v): FP8 arguments on bf16 inputs, descale
    counts other than 1 or heads_kv, descales <= 0, NaN, inf or of rank 2, an out_dtype other than
    bf16/fp16, an out of the wrong dtype, mixed FP8/bf16 inputs, a variant whose registry line lists
    no FP8 dtype; backward() and attention() with requires_grad refuse FP8 as forward only; then
    ioattn_forward_fp8 through ctypes (non-FP8 dtype, out_dtype NULL or fp32, descale counts 0, -1
    and 3, a NULL descale array, descales 0, NaN, inf, e5m2 or a non-FP8 variant, a misaligned o),
    ioattn_forward with an FP8 dtype and the backward queries with one. Every buffer and guard
    byte-identical afterwards.
  - FP8 good (when a registered variant lists fp8_e4m3 and accepts d = 64 here): per-tensor and
    per-K/V-head codes from ioattn.quantize_fp8, bf16 and fp16 O given in guarded memory, causal or
    not: guards untouched, O and LSE finite and within 6e-2 of the float32 reference of the
    dequantized codes (FP8 rounds P to e4m3 in the kernel: a looser bound than bf16's).
One line per case; the last line is "N passed, M failed"; exit 0 when none failed, else 1.
"""
import ctypes
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ioattn  # noqa: E402
from ioattn import IoattnError  # noqa: E402

GUARD = 4096  # guard bytes on each side of every buffer
PATTERN = 0xA5
SHAPE = dict(b=2, nq=77, nk=131, hq=4, hkv=2, d=64)
BAD_KERNEL = "v03_fa2_scalar"  # takes every dtype and head dim <= 256: a bad call that got through would run
BAD_BACKWARD = "bwd01b_fa2_scalar_dqpass"  # the same for the backward

torch = None
passed = failed = 0


def report(ok, name, detail=""):
    global passed, failed
    passed, failed = passed + ok, failed + (not ok)
    print(f"{'ok  ' if ok else 'FAIL'} {name}{': ' + detail if detail else ''}", flush=True)


class Guarded:
    """A tensor of `shape` inside GUARD pattern bytes on both sides; `fill`: "randn", "nan" or None (pattern)."""

    def __init__(self, shape, dtype, device="cuda", fill="randn", seed=0):
        n = math.prod(shape) * torch.empty((), dtype=dtype).element_size()
        self.raw = torch.full((GUARD + n + GUARD,), PATTERN, dtype=torch.uint8, device=device)
        self.t = self.raw[GUARD:GUARD + n].view(dtype).view(shape)
        if fill == "randn":
            g = torch.Generator().manual_seed(seed)
            self.t.copy_(torch.randn(shape, generator=g).to(dtype))
        elif fill == "nan":
            self.t.fill_(float("nan"))
        self.before = self.raw.clone()

    def intact(self):  # every byte, the tensor's own included, as before
        return torch.equal(self.raw, self.before)

    def guards_intact(self):
        head, tail = slice(0, GUARD), slice(len(self.raw) - GUARD, len(self.raw))
        return torch.equal(self.raw[head], self.before[head]) and torch.equal(self.raw[tail], self.before[tail])


def tensors(dtype=None, device="cuda", seed=1, **dims):
    """Guarded q, k, v, out, lse for SHAPE overridden by dims (q/k/v random, out/lse NaN)."""
    dtype = dtype or torch.bfloat16
    s = {**SHAPE, **dims}
    return dict(q=Guarded((s["b"], s["nq"], s["hq"], s["d"]), dtype, device, seed=seed),
                k=Guarded((s["b"], s["nk"], s["hkv"], s["d"]), dtype, device, seed=seed + 1),
                v=Guarded((s["b"], s["nk"], s["hkv"], s["d"]), dtype, device, seed=seed + 2),
                out=Guarded((s["b"], s["nq"], s["hq"], s["d"]), dtype, device, fill="nan"),
                lse=Guarded((s["b"], s["hq"], s["nq"]), torch.float32, device, fill="nan"))


def one_line(msg):
    return bool(msg) and "\n" not in msg


# ---- refused by forward() ------------------------------------------------------------------------

def bad_forward_cases():
    """(name, keyword the message must contain, build) where build() -> (forward kwargs, Guarded buffers to check)."""
    T = tensors

    def call(g=None, **override):
        """forward kwargs from guarded tensors g (q, k, v only) with override applied."""
        g = g or T()
        kw = dict(q=g["q"].t, k=g["k"].t, v=g["v"].t, kernel=BAD_KERNEL)
        kw.update(override)
        return kw, list(g.values())

    def with_outputs(**override):
        g = T()
        return call(g, out=g["out"].t, lse=g["lse"].t, **override)

    def cpu(name):
        g = T()
        g[name] = Guarded(tuple(g[name].t.shape), torch.bfloat16, device="cpu")
        return call(g)

    def dtype_of(name, dtype):
        g = T()
        g[name] = Guarded(tuple(g[name].t.shape), dtype)
        return call(g)

    def mixed(q_dims, kv_dims):  # q from one shape, k, v (and out, lse) from another
        g = T(**kv_dims)
        g["q"] = T(**q_dims)["q"]
        return call(g)

    def reshaped(name, shape):
        g = T()
        g[name] = Guarded(shape, torch.bfloat16)
        return call(g)

    def out_like(**kw):  # an out buffer that differs from q in one property
        g = T()
        shape = kw.pop("shape", tuple(g["q"].t.shape))
        g["out"] = Guarded(shape, kw.pop("dtype", torch.bfloat16), kw.pop("device", "cuda"), fill="nan")
        return call(g, out=g["out"].t, lse=g["lse"].t)

    def lse_like(**kw):
        g = T()
        shape = kw.pop("shape", tuple(g["lse"].t.shape))
        g["lse"] = Guarded(shape, kw.pop("dtype", torch.float32), kw.pop("device", "cuda"), fill="nan")
        return call(g, out=g["out"].t, lse=g["lse"].t)

    def non_contiguous_out():  # (B, Nq, Hq, d) view of a (B, Hq, Nq, d) buffer: right shape, wrong strides
        g = T()
        s = SHAPE
        g["out"] = Guarded((s["b"], s["hq"], s["nq"], s["d"]), torch.bfloat16, fill="nan")
        return call(g, out=g["out"].t.transpose(1, 2), lse=g["lse"].t)

    def non_contiguous_lse():
        g = T()
        s = SHAPE
        g["lse"] = Guarded((s["b"], s["nq"], s["hq"]), torch.float32, fill="nan")
        return call(g, out=g["out"].t, lse=g["lse"].t.transpose(1, 2))

    b, nq, nk, hq, hkv, d = (SHAPE[x] for x in ("b", "nq", "nk", "hq", "hkv", "d"))
    return [
        ("q not a tensor", "q must be a torch.Tensor", lambda: call(q=[[1.0]])),
        ("k not a tensor", "k must be a torch.Tensor", lambda: call(k=None)),
        ("v not a tensor", "v must be a torch.Tensor", lambda: call(v=3.0)),
        ("q float64", "q.dtype must be", lambda: dtype_of("q", torch.float64)),
        ("k int32", "k.dtype must be", lambda: dtype_of("k", torch.int32)),
        ("k float16, q bfloat16", "one dtype", lambda: dtype_of("k", torch.float16)),
        ("v float32, q bfloat16", "one dtype", lambda: dtype_of("v", torch.float32)),
        ("q on the CPU", "q must be a CUDA tensor", lambda: cpu("q")),
        ("k on the CPU", "k must be a CUDA tensor", lambda: cpu("k")),
        ("v on the CPU", "v must be a CUDA tensor", lambda: cpu("v")),
        ("q rank 3", "rank 4", lambda: reshaped("q", (b, nq, hq * d))),
        ("k rank 5", "rank 4", lambda: reshaped("k", (b, nk, hkv, d, 1))),
        ("batch of k, v != batch of q", "batch", lambda: mixed(dict(b=b + 1), dict(b=b))),
        ("k and v seqlen differ", "same shape", lambda: reshaped("v", (b, nk + 1, hkv, d))),
        ("k and v heads differ", "same shape", lambda: reshaped("v", (b, nk, hkv * 2, d))),
        ("batch of v differs (k, v shapes)", "same shape", lambda: reshaped("v", (b + 1, nk, hkv, d))),
        ("head_dim of k, v (32) != q (64)", "head_dim", lambda: mixed(dict(d=64), dict(d=32))),
        ("head_dim of k, v (128) != q (64)", "head_dim", lambda: mixed(dict(d=64), dict(d=128))),
        ("heads_q 4 not divisible by heads_kv 3", "divisible", lambda: call(T(hkv=3))),
        ("batch 0", "zero-size", lambda: call(T(b=0))),
        ("seqlen_q 0", "zero-size", lambda: call(T(nq=0))),
        ("seqlen_k 0", "zero-size", lambda: call(T(nk=0))),
        ("heads 0", "zero-size", lambda: call(T(hq=0, hkv=0))),
        ("head_dim 0", "zero-size", lambda: call(T(d=0))),
        ("out not a tensor", "out must be a torch.Tensor", lambda: call(out="o")),
        ("out seqlen_q - 1", "out must have shape", lambda: out_like(shape=(b, nq - 1, hq, d))),
        ("out head_dim 32", "out must have shape", lambda: out_like(shape=(b, nq, hq, 32))),
        ("out BHSD instead of BSHD", "out must have shape", lambda: out_like(shape=(b, hq, nq, d))),
        ("out flat", "out must have shape", lambda: out_like(shape=(b * nq * hq * d,))),
        ("out float32", "out.dtype", lambda: out_like(dtype=torch.float32)),
        ("out float16", "out.dtype", lambda: out_like(dtype=torch.float16)),
        ("out on the CPU", "out must be on", lambda: out_like(device="cpu")),
        ("out not contiguous", "out must be contiguous", non_contiguous_out),
        ("lse not a tensor", "lse must be a torch.Tensor", lambda: call(lse=1)),
        ("lse (B, Nq, Hq)", "lse must have shape", lambda: lse_like(shape=(b, nq, hq))),
        ("lse seqlen_q - 1", "lse must have shape", lambda: lse_like(shape=(b, hq, nq - 1))),
        ("lse with a head_dim axis", "lse must have shape", lambda: lse_like(shape=(b, hq, nq, 1))),
        ("lse bfloat16", "lse.dtype", lambda: lse_like(dtype=torch.bfloat16)),
        ("lse float64", "lse.dtype", lambda: lse_like(dtype=torch.float64)),
        ("lse on the CPU", "lse must be on", lambda: lse_like(device="cpu")),
        ("lse not contiguous", "lse must be contiguous", non_contiguous_lse),
        ("window (-2, -1)", "window bounds", lambda: with_outputs(window=(-2, -1))),
        ("window (0, -5)", "window bounds", lambda: with_outputs(window=(0, -5))),
        ("window one int", "window must be a pair", lambda: with_outputs(window=3)),
        ("window of three", "window must be a pair", lambda: with_outputs(window=(1, 2, 3))),
        ("window (1.5, 0)", "window must be a pair", lambda: with_outputs(window=(1.5, 0))),
        ("window (True, 0)", "window must be a pair", lambda: with_outputs(window=(True, 0))),
        ("window beyond int64", "window bounds", lambda: with_outputs(window=(2**64 + 3, 0))),
        ("scale 0", "scale", lambda: with_outputs(scale=0)),
        ("scale -0.125", "scale", lambda: with_outputs(scale=-0.125)),
        ("scale NaN", "scale", lambda: with_outputs(scale=float("nan"))),
        ("scale inf", "scale", lambda: with_outputs(scale=float("inf"))),
        ("scale a str", "scale", lambda: with_outputs(scale="0.1")),
        ("kernel not a str", "kernel must be a str", lambda: with_outputs(kernel=5)),
        ("kernel None", "kernel must be a str", lambda: with_outputs(kernel=None)),
        ("kernel unknown (C ABI)", "unknown kernel", lambda: with_outputs(kernel="v99_no_such_kernel")),
        ("causal a str", "causal", lambda: with_outputs(causal="yes")),
        ("br negative", "br must be", lambda: with_outputs(br=-1)),
        ("bc 2.5", "bc must be", lambda: with_outputs(bc=2.5)),
        ("splits beyond int32", "splits must be", lambda: with_outputs(splits=2**31)),
        ("head_dim 96 for v04 (kernel refuses)", "head_dim",
         lambda: call(T(d=96), kernel="v04_fa2_mma")),
    ]


def run_refusals(what, call, cases):
    """Each bad case must raise IoattnError code 2 with one line naming the constraint (its keyword),
    and leave every output and guard byte as it was."""
    for name, keyword, build in cases:
        kw, bufs = build()
        try:
            call(**kw)
            torch.cuda.synchronize()
            report(False, f"{what} refuses {name}", "accepted")
            continue
        except IoattnError as e:
            msg, code = str(e), e.code
        except Exception as e:  # anything but IoattnError is a failure of the front door
            report(False, f"{what} refuses {name}", f"raised {type(e).__name__}: {e}")
            continue
        torch.cuda.synchronize()
        untouched = all(g.intact() for g in bufs)
        ok = code == 2 and one_line(msg) and keyword.lower() in msg.lower() and untouched
        report(ok, f"{what} refuses {name}",
               f"{msg!r}" + ("" if untouched else " (a buffer or guard CHANGED)") +
               ("" if code == 2 else f" (code {code}, want 2)") +
               ("" if keyword.lower() in msg.lower() else f" (message lacks '{keyword}')"))


def run_bad_forward():
    run_refusals("forward", ioattn.forward, bad_forward_cases())


def run_two_devices():
    if torch.cuda.device_count() < 2:
        print("skip forward refuses q, k on two devices: one GPU here (not counted)")
        return
    g, h = tensors(), tensors(device="cuda:1")
    try:
        ioattn.forward(g["q"].t, h["k"].t, g["v"].t, kernel=BAD_KERNEL)
        report(False, "forward refuses q, k on two devices", "accepted")
    except IoattnError as e:
        torch.cuda.synchronize(0), torch.cuda.synchronize(1)
        ok = "one device" in str(e) and all(x.intact() for x in [*g.values(), *h.values()])
        report(ok, "forward refuses q, k on two devices", repr(str(e)))


# ---- refused by the C ABI itself -------------------------------------------------------------------

def run_bad_capi():
    lib = ioattn._load()
    g = tensors()
    ptr = {n: ctypes.c_void_p(x.t.data_ptr()) for n, x in g.items()}
    b, nq, nk, hq, hkv, d = (SHAPE[x] for x in ("b", "nq", "nk", "hq", "hkv", "d"))
    base = dict(kernel=BAD_KERNEL.encode(), b=b, hq=hq, hkv=hkv, nq=nq, nk=nk, d=d, dtype=b"bf16",
                causal=0, wl=-1, wr=-1)

    def problem(**o):
        p = {**base, **o}
        return [p[x] for x in ("kernel", "b", "hq", "hkv", "nq", "nk", "d", "dtype", "causal", "wl", "wr")]

    def tiles(**o):
        return [o.get("br", 0), o.get("bc", 0), o.get("splits", 0)]

    def shifted(name, by):  # a pointer `by` bytes into the buffer (still inside the guarded allocation)
        return ctypes.c_void_p(g[name].t.data_ptr() + by)

    cases = [  # (name, keyword, problem and tile overrides, scale, pointer overrides)
        ("q null", "null", {}, 0.0, dict(q=None)),
        ("k null", "null", {}, 0.0, dict(k=None)),
        ("v null", "null", {}, 0.0, dict(v=None)),
        ("o null", "null", {}, 0.0, dict(out=None)),
        ("lse null", "null", {}, 0.0, dict(lse=None)),
        ("q not 16-byte aligned", "aligned", {}, 0.0, dict(q=shifted("q", 2))),
        ("o not 16-byte aligned", "aligned", {}, 0.0, dict(out=shifted("out", 8))),
        ("lse not 4-byte aligned", "aligned", {}, 0.0, dict(lse=shifted("lse", 2))),
        ("o overlapping q", "overlap", {}, 0.0, dict(out=ptr["q"])),
        ("lse overlapping o", "overlap", {}, 0.0, dict(lse=shifted("out", 64))),
        ("scale NaN", "scale", {}, float("nan"), {}),
        ("scale inf", "scale", {}, float("inf"), {}),
        ("kernel null", "kernel", dict(kernel=None), 0.0, {}),
        ("kernel unknown", "kernel", dict(kernel=b"v99_none"), 0.0, {}),
        ("dtype null", "dtype", dict(dtype=None), 0.0, {}),
        ("dtype fp64", "dtype", dict(dtype=b"fp64"), 0.0, {}),
        ("causal 2", "causal", dict(causal=2), 0.0, {}),
        ("br -1", "br", dict(br=-1), 0.0, {}),
        ("splits -3", "splits", dict(splits=-3), 0.0, {}),
        ("batch 0", "batch", dict(b=0), 0.0, {}),
        ("batch -1", "batch", dict(b=-1), 0.0, {}),
        ("heads_q 0", "heads_q", dict(hq=0), 0.0, {}),
        ("heads_kv 0", "heads_kv", dict(hkv=0), 0.0, {}),
        ("seqlen_q 0", "seqlen_q", dict(nq=0), 0.0, {}),
        ("seqlen_k -7", "seqlen_k", dict(nk=-7), 0.0, {}),
        ("head_dim 0", "head_dim", dict(d=0), 0.0, {}),
        ("head_dim -64", "head_dim", dict(d=-64), 0.0, {}),
        ("heads_q 4 not divisible by heads_kv 3", "divisible", dict(hkv=3), 0.0, {}),
        ("window_left -2", "window", dict(wl=-2), 0.0, {}),
        ("head_dim 2048 (beyond every kernel)", "head_dim", dict(d=2048), 0.0, {}),
        ("head_dim 96 for v04", "head_dim", dict(kernel=b"v04_fa2_mma", d=96), 0.0, {}),
    ]
    for name, keyword, po, scale, ptro in cases:
        p = {**ptr, **ptro}
        rc = lib.ioattn_forward(*problem(**{x: y for x, y in po.items() if x in base}), scale, *tiles(**po),
                                p["q"], p["k"], p["v"], p["out"], p["lse"], None)
        torch.cuda.synchronize()
        msg = ioattn._last_error(lib)
        untouched = all(x.intact() for x in g.values())
        ok = rc == 2 and one_line(msg) and keyword in msg and untouched
        report(ok, f"C ABI ioattn_forward refuses {name}",
               f"rc {rc}, {msg!r}" + ("" if untouched else " (a buffer or guard CHANGED)"))

    for name, keyword, po, scale, ptro in cases:  # the problem checks, through the queries that take a problem
        if ptro or scale:
            continue  # pointers and scale are ioattn_forward's alone
        args = [*problem(**{x: y for x, y in po.items() if x in base}), *tiles(**po)]
        n = lib.ioattn_workspace_bytes(*args)
        msg = ioattn._last_error(lib)
        report(n == -1 and one_line(msg) and keyword in msg, f"C ABI ioattn_workspace_bytes refuses {name}",
               f"returned {n}, {msg!r}")
        if not hasattr(lib, "ioattn_kernel_config"):
            report(False, f"C ABI ioattn_kernel_config refuses {name}", "the library has no ioattn_kernel_config")
            continue
        text = lib.ioattn_kernel_config(*args)
        msg = ioattn._last_error(lib)
        report(text is None and one_line(msg) and keyword in msg, f"C ABI ioattn_kernel_config refuses {name}",
               f"returned {text!r}, {msg!r}")

    count = lib.ioattn_kernel_count()
    for i in (-1, count, count + 100, -(2**31)):
        name_null = lib.ioattn_kernel_name(i) is None
        msg = ioattn._last_error(lib)
        info_null = lib.ioattn_kernel_info(i) is None
        report(name_null and info_null and one_line(msg), f"C ABI ioattn_kernel_name/info({i}) is NULL (count {count})",
               repr(msg))


# ---- refused by backward() -----------------------------------------------------------------------

def bwd_tensors(dtype=None, device="cuda", seed=1, **dims):
    """Guarded q, k, v, o, lse, d_o (inputs, random) and dq, dk, dv (outputs, NaN) for SHAPE overridden by dims."""
    dtype = dtype or torch.bfloat16
    s = {**SHAPE, **dims}
    qs, kvs = (s["b"], s["nq"], s["hq"], s["d"]), (s["b"], s["nk"], s["hkv"], s["d"])
    return dict(q=Guarded(qs, dtype, device, seed=seed), k=Guarded(kvs, dtype, device, seed=seed + 1),
                v=Guarded(kvs, dtype, device, seed=seed + 2), o=Guarded(qs, dtype, device, seed=seed + 3),
                lse=Guarded((s["b"], s["hq"], s["nq"]), torch.float32, device, seed=seed + 4),
                d_o=Guarded(qs, dtype, device, seed=seed + 5),
                dq=Guarded(qs, dtype, device, fill="nan"), dk=Guarded(kvs, dtype, device, fill="nan"),
                dv=Guarded(kvs, dtype, device, fill="nan"))


def bad_backward_cases():
    """(name, keyword, build) where build() -> (backward kwargs, Guarded buffers to check). Outputs
    dq, dk, dv are given (guarded) unless a case overrides them, so a call that got through would
    write inside the guarded memory and show."""
    T = bwd_tensors
    b, nq, nk, hq, hkv, d = (SHAPE[x] for x in ("b", "nq", "nk", "hq", "hkv", "d"))
    qs, kvs = (b, nq, hq, d), (b, nk, hkv, d)

    def call(g=None, **override):
        g = g or T()
        kw = {n: g[n].t for n in ("q", "k", "v", "o", "lse", "d_o", "dq", "dk", "dv")}
        kw["kernel"] = BAD_BACKWARD
        kw.update(override)
        return kw, list(g.values())

    def replaced(name, shape=None, dtype=None, device="cuda", fill="randn"):
        g = T()
        old = g[name].t
        g[name] = Guarded(shape or tuple(old.shape), dtype or old.dtype, device, fill=fill)
        return call(g)

    def non_contiguous(name, bshd):  # (B, S, H, d) view of a (B, H, S, d) buffer: right shape, wrong strides
        g = T()
        bb, ss, hh, dd = bshd
        g[name] = Guarded((bb, hh, ss, dd), torch.bfloat16, fill="nan")
        return call(g, **{name: g[name].t.transpose(1, 2)})

    def aliased(out, other):  # output `out` and buffer `other` share memory (the smaller one is a view
        g = T()                 # of the larger one's bytes, reinterpreted with its own dtype and shape)
        nbytes = {n: g[n].t.numel() * g[n].t.element_size() for n in (out, other)}
        big, small = (other, out) if nbytes[other] >= nbytes[out] else (out, other)
        t = g[small].t
        view = g[big].raw[GUARD:GUARD + nbytes[small]].view(t.dtype).view(tuple(t.shape))
        return call(g, **{small: view})

    return [
        ("o None", "o must be a torch.Tensor", lambda: call(o=None)),
        ("lse None", "lse must be a torch.Tensor", lambda: call(lse=None)),
        ("d_o None", "d_o must be a torch.Tensor", lambda: call(d_o=None)),
        ("d_o a list", "d_o must be a torch.Tensor", lambda: call(d_o=[[1.0]])),
        ("o seqlen_q - 1", "o must have shape", lambda: replaced("o", (b, nq - 1, hq, d))),
        ("o BHSD instead of BSHD", "o must have shape", lambda: replaced("o", (b, hq, nq, d))),
        ("d_o shape of k", "d_o must have shape", lambda: replaced("d_o", kvs)),
        ("o float32", "o.dtype", lambda: replaced("o", dtype=torch.float32)),
        ("d_o float16", "d_o.dtype", lambda: replaced("d_o", dtype=torch.float16)),
        ("lse bfloat16", "lse.dtype", lambda: replaced("lse", dtype=torch.bfloat16)),
        ("lse (B, Nq, Hq)", "lse must have shape", lambda: replaced("lse", (b, nq, hq))),
        ("o on the CPU", "o must be on", lambda: replaced("o", device="cpu")),
        ("lse on the CPU", "lse must be on", lambda: replaced("lse", device="cpu")),
        ("d_o on the CPU", "d_o must be on", lambda: replaced("d_o", device="cpu")),
        ("dq shape of k", "dq must have shape", lambda: replaced("dq", kvs, fill="nan")),
        ("dk shape of q (GQA: k has 2 heads)", "dk must have shape", lambda: replaced("dk", qs, fill="nan")),
        ("dv seqlen_k + 1", "dv must have shape", lambda: replaced("dv", (b, nk + 1, hkv, d), fill="nan")),
        ("dq float32", "dq.dtype", lambda: replaced("dq", dtype=torch.float32, fill="nan")),
        ("dv float16", "dv.dtype", lambda: replaced("dv", dtype=torch.float16, fill="nan")),
        ("dk on the CPU", "dk must be on", lambda: replaced("dk", device="cpu", fill="nan")),
        ("dq not a tensor", "dq must be a torch.Tensor", lambda: call(dq="dq")),
        ("dq not contiguous", "dq must be contiguous", lambda: non_contiguous("dq", qs)),
        ("dk not contiguous", "dk must be contiguous", lambda: non_contiguous("dk", kvs)),
        ("dq on top of q", "dq must not overlap q", lambda: aliased("dq", "q")),
        ("dq on top of d_o", "dq must not overlap d_o", lambda: aliased("dq", "d_o")),
        ("dk on top of v", "dk must not overlap v", lambda: aliased("dk", "v")),
        ("dv on top of dk", "dv must not overlap dk", lambda: aliased("dv", "dk")),
        ("dq over the first element of lse", "dq must not overlap lse", lambda: aliased("dq", "lse")),
        ("q float64", "q.dtype must be", lambda: replaced("q", dtype=torch.float64)),
        ("k on the CPU", "k must be a CUDA tensor", lambda: replaced("k", device="cpu")),
        ("heads_q 4 not divisible by heads_kv 3", "divisible", lambda: call(T(hkv=3))),
        ("seqlen_k 0", "zero-size", lambda: call(T(nk=0))),
        ("window (-2, -1)", "window bounds", lambda: call(window=(-2, -1))),
        ("window one int", "window must be a pair", lambda: call(window=3)),
        ("scale 0", "scale", lambda: call(scale=0)),
        ("scale NaN", "scale", lambda: call(scale=float("nan"))),
        ("causal a str", "causal", lambda: call(causal="yes")),
        ("br negative", "br must be", lambda: call(br=-1)),
        ("bc 2.5", "bc must be", lambda: call(bc=2.5)),
        ("kernel None", "kernel must be a str", lambda: call(kernel=None)),
        ("kernel unknown (C ABI)", "unknown", lambda: call(kernel="bwd99_no_such_kernel")),
        ("kernel a forward variant (C ABI)", "unknown", lambda: call(kernel="v03_fa2_scalar")),
        ("head_dim 512 (the scalar backward takes <= 256; C ABI)", "head_dim", lambda: call(T(d=512))),
    ]


def run_bad_backward():
    if not has_backward():
        report(False, "backward refuses bad input", "the library has no ioattn_backward")
        return
    run_refusals("backward", ioattn.backward, bad_backward_cases())


def has_backward():
    return hasattr(ioattn._load(), "ioattn_backward")


def run_bad_capi_backward():
    if not has_backward():
        report(False, "C ABI ioattn_backward", "the library has no ioattn_backward")
        return
    lib = ioattn._load()
    g = bwd_tensors()
    ptr = {n: ctypes.c_void_p(x.t.data_ptr()) for n, x in g.items()}
    b, nq, nk, hq, hkv, d = (SHAPE[x] for x in ("b", "nq", "nk", "hq", "hkv", "d"))
    base = dict(kernel=BAD_BACKWARD.encode(), b=b, hq=hq, hkv=hkv, nq=nq, nk=nk, d=d, dtype=b"bf16",
                causal=0, wl=-1, wr=-1)

    def problem(**o):
        p = {**base, **o}
        return [p[x] for x in ("kernel", "b", "hq", "hkv", "nq", "nk", "d", "dtype", "causal", "wl", "wr")]

    def shifted(name, by):
        return ctypes.c_void_p(g[name].t.data_ptr() + by)

    cases = [  # (name, keyword, problem and tile overrides, scale, pointer overrides)
        ("q null", "null", {}, 0.0, dict(q=None)),
        ("o null", "null", {}, 0.0, dict(o=None)),
        ("lse null", "null", {}, 0.0, dict(lse=None)),
        ("d_o null", "null", {}, 0.0, dict(d_o=None)),
        ("dq null", "null", {}, 0.0, dict(dq=None)),
        ("dv null", "null", {}, 0.0, dict(dv=None)),
        ("d_o not 16-byte aligned", "aligned", {}, 0.0, dict(d_o=shifted("d_o", 2))),
        ("dq not 16-byte aligned", "aligned", {}, 0.0, dict(dq=shifted("dq", 8))),
        ("lse not 4-byte aligned", "aligned", {}, 0.0, dict(lse=shifted("lse", 2))),
        ("dq overlapping q", "overlap", {}, 0.0, dict(dq=ptr["q"])),
        ("dk overlapping dv", "overlap", {}, 0.0, dict(dk=ptr["dv"])),
        ("dv overlapping d_o", "overlap", {}, 0.0, dict(dv=shifted("d_o", 64))),
        ("scale NaN", "scale", {}, float("nan"), {}),
        ("kernel null", "kernel", dict(kernel=None), 0.0, {}),
        ("kernel unknown", "kernel", dict(kernel=b"bwd99_none"), 0.0, {}),
        ("kernel a forward variant", "kernel", dict(kernel=b"v03_fa2_scalar"), 0.0, {}),
        ("dtype fp64", "dtype", dict(dtype=b"fp64"), 0.0, {}),
        ("causal 2", "causal", dict(causal=2), 0.0, {}),
        ("br -1", "br", dict(br=-1), 0.0, {}),
        ("batch 0", "batch", dict(b=0), 0.0, {}),
        ("seqlen_k -7", "seqlen_k", dict(nk=-7), 0.0, {}),
        ("heads_q 4 not divisible by heads_kv 3", "divisible", dict(hkv=3), 0.0, {}),
        ("window_left -2", "window", dict(wl=-2), 0.0, {}),
        ("head_dim 2048 (beyond every backward)", "head_dim", dict(d=2048), 0.0, {}),
    ]
    order = ("q", "k", "v", "o", "lse", "d_o", "dq", "dk", "dv")
    for name, keyword, po, scale, ptro in cases:
        p = {**ptr, **ptro}
        rc = lib.ioattn_backward(*problem(**{x: y for x, y in po.items() if x in base}), scale, po.get("br", 0),
                                 po.get("bc", 0), *(p[n] for n in order), None)
        torch.cuda.synchronize()
        msg = ioattn._last_error(lib)
        untouched = all(x.intact() for x in g.values())
        ok = rc == 2 and one_line(msg) and keyword in msg and untouched
        report(ok, f"C ABI ioattn_backward refuses {name}",
               f"rc {rc}, {msg!r}" + ("" if untouched else " (a buffer or guard CHANGED)"))

    for name, keyword, po, scale, ptro in cases:  # the problem checks, through the queries that take a problem
        if ptro or scale:
            continue
        args = [*problem(**{x: y for x, y in po.items() if x in base}), po.get("br", 0), po.get("bc", 0)]
        n = lib.ioattn_backward_workspace_bytes(*args)
        msg = ioattn._last_error(lib)
        report(n == -1 and one_line(msg) and keyword in msg, f"C ABI ioattn_backward_workspace_bytes refuses {name}",
               f"returned {n}, {msg!r}")
        text = lib.ioattn_backward_config(*args)
        msg = ioattn._last_error(lib)
        report(text is None and one_line(msg) and keyword in msg, f"C ABI ioattn_backward_config refuses {name}",
               f"returned {text!r}, {msg!r}")

    count = lib.ioattn_backward_count()
    for i in (-1, count, count + 100, -(2**31)):
        name_null = lib.ioattn_backward_name(i) is None
        msg = ioattn._last_error(lib)
        info_null = lib.ioattn_backward_info(i) is None
        report(name_null and info_null and one_line(msg),
               f"C ABI ioattn_backward_name/info({i}) is NULL (count {count})", repr(msg))


# ---- good calls --------------------------------------------------------------------------------------

def reference(q, k, v, causal):
    """float32 O (BSHD) and LSE (B, Hq, Nq) of attention, GQA by repeating K/V heads; causal aligned bottom-right."""
    qf, kf, vf = (x.float().transpose(1, 2) for x in (q, k, v))  # BHSD
    group = qf.shape[1] // kf.shape[1]
    kf, vf = kf.repeat_interleave(group, dim=1), vf.repeat_interleave(group, dim=1)
    s = (qf @ kf.transpose(-1, -2)) / math.sqrt(qf.shape[-1])
    if causal:
        nq, nk = s.shape[-2:]
        i = torch.arange(nq, device=s.device)[:, None]
        j = torch.arange(nk, device=s.device)[None, :]
        s = s.masked_fill(j > i + (nk - nq), float("-inf"))
    lse = torch.logsumexp(s, dim=-1)
    return (torch.softmax(s, dim=-1) @ vf).transpose(1, 2), lse


def close(o, lse, ref_o, ref_lse, tol=2e-2):
    """Finite and within tol of the float32 reference (bf16 O: |O| <= ~1, rounding ~4e-3; H200: 2-5e-3)."""
    if not (torch.isfinite(o).all() and torch.isfinite(lse).all()):
        return False, "non-finite O or LSE"
    eo = (o.float() - ref_o).abs().max().item()
    el = (lse - ref_lse).abs().max().item()
    return eo <= tol and el <= tol, f"max|O-ref| {eo:.2e}, max|LSE-ref| {el:.2e} (tol {tol})"


def run_good():
    names = [n for n, info in ioattn.kernels().items()
             if "bf16" in info["dtypes"].split(",") and (info["head_dims"].startswith("any")
                                                        or "64" in info["head_dims"].split(","))]
    for kernel in ioattn.kernels():
        if kernel not in names:
            print(f"skip good call {kernel}: its registry entry lists no bf16 d=64 (not counted)")
    for kernel in names:
        for causal in (False, True):
            g = tensors(seed=11)
            ref_o, ref_lse = reference(g["q"].t, g["k"].t, g["v"].t, causal)
            what = f"good call {kernel}{' causal' if causal else ''}"
            # out/lse allocated by forward()
            try:
                o, lse = ioattn.forward(g["q"].t, g["k"].t, g["v"].t, kernel=kernel, causal=causal)
                torch.cuda.synchronize()
            except IoattnError as e:
                report(False, what, f"refused: {e}")
                continue
            ok, detail = close(o, lse, ref_o, ref_lse)
            inputs_ok = all(g[n].intact() for n in ("q", "k", "v"))
            report(ok and inputs_ok, what, detail + ("" if inputs_ok else "; an input or its guard CHANGED"))
            # out/lse given, inside guarded memory
            try:
                o2, lse2 = ioattn.forward(g["q"].t, g["k"].t, g["v"].t, kernel=kernel, causal=causal,
                                          out=g["out"].t, lse=g["lse"].t)
                torch.cuda.synchronize()
            except IoattnError as e:
                report(False, what + " (out, lse given)", f"refused: {e}")
                continue
            same = o2.data_ptr() == g["out"].t.data_ptr() and lse2.data_ptr() == g["lse"].t.data_ptr()
            guards = g["out"].guards_intact() and g["lse"].guards_intact()
            inputs_ok = all(g[n].intact() for n in ("q", "k", "v"))
            ok, detail = close(o2, lse2, ref_o, ref_lse)
            report(ok and same and guards and inputs_ok, what + " (out, lse given)",
                   detail + ("" if guards else "; a guard of out/lse CHANGED") +
                   ("" if same else "; did not return the given out/lse") +
                   ("" if inputs_ok else "; an input or its guard CHANGED"))

    # Non-contiguous q, k, v (BHSD buffers viewed as BSHD): copied, same result bit for bit.
    kernel = "v05_fa2_fast" if "v05_fa2_fast" in names else names[0]
    g = tensors(seed=21)
    o, lse = ioattn.forward(g["q"].t, g["k"].t, g["v"].t, kernel=kernel)
    strided = [x.t.transpose(1, 2).contiguous().transpose(1, 2) for x in (g["q"], g["k"], g["v"])]
    assert not strided[0].is_contiguous()
    o_nc, lse_nc = ioattn.forward(*strided, kernel=kernel)
    torch.cuda.synchronize()
    report(torch.equal(o, o_nc) and torch.equal(lse, lse_nc) and tuple(o_nc.shape) == tuple(g["q"].t.shape),
           f"good call {kernel} non-contiguous q, k, v = contiguous result")

    # kernel_config answers for the same problem.
    check_configs("kernel_config", ioattn.kernel_config, names, "v99_none")


def check_configs(what, config, names, unknown):
    """config(name, problem...) (ioattn.kernel_config or backward_config) answers a full launch
    configuration for every variant on SHAPE, and refuses an unknown name with one line."""
    for name in names:
        try:
            c = config(name, SHAPE["b"], SHAPE["hq"], SHAPE["hkv"], SHAPE["nq"], SHAPE["nk"], SHAPE["d"], "bf16")
            ok = (all(isinstance(c.get(x), int) and c[x] >= 0 for x in ("br", "bc", "stages", "smem_bytes", "splits"))
                  and all(isinstance(c.get(x), int) and c[x] > 0
                          for x in ("threads", "ctas_per_sm", "grid_x", "grid_y", "grid_z", "launches"))
                  and isinstance(c.get("grid_order"), str) and c["grid_order"] != "")
            report(ok, f"{what} {name}", str(c))
        except IoattnError as e:
            report(False, f"{what} {name}", f"refused: {e}")
    try:
        config(unknown, 1, 1, 1, 1, 1, 64, "bf16")
        report(False, f"{what} refuses an unknown kernel", "accepted")
    except IoattnError as e:
        report(e.code == 2 and one_line(str(e)), f"{what} refuses an unknown kernel", repr(str(e)))


def grad_reference(q, k, v, d_o, causal):
    """float32 dQ, dK, dV: autograd of reference() on the same values."""
    x = [t.float().detach().requires_grad_(True) for t in (q, k, v)]
    o, _ = reference(*x, causal)
    return torch.autograd.grad(o, x, d_o.float())


def close_grads(grads, ref, tol=2e-2):
    """Finite and within tol * max(1, max|ref|) of the float32 reference (bf16 outputs round at ~4e-3
    relative; the scalar backward computes in fp32)."""
    parts, ok = [], True
    for label, g, r in zip(("dQ", "dK", "dV"), grads, ref):
        if tuple(g.shape) != tuple(r.shape):
            return False, f"{label} shape {tuple(g.shape)}, want {tuple(r.shape)}"
        if not bool(torch.isfinite(g).all()):
            return False, f"non-finite {label}"
        e = (g.float() - r).abs().max().item()
        bound = tol * max(1.0, r.abs().max().item())
        ok &= e <= bound
        parts.append(f"max|{label}-ref| {e:.2e} (bound {bound:.2e})")
    return ok, ", ".join(parts)


def run_good_backward():
    if not has_backward():
        report(False, "good backward calls", "the library has no ioattn_backward")
        return
    bwds = ioattn.backward_kernels()
    names = [n for n, info in bwds.items()
             if "bf16" in info["dtypes"].split(",") and (info["head_dims"].startswith("any")
                                                        or "64" in info["head_dims"].split(","))]
    for name in bwds:
        if name not in names:
            print(f"skip good backward {name}: its registry entry lists no bf16 d=64 (not counted)")
    outs = ("dq", "dk", "dv")
    for name in names:
        fwd, det = bwds[name]["pairs_with"], bwds[name]["deterministic"]
        for causal in (False, True):
            g = bwd_tensors(seed=41)
            q, k, v, d_o = (g[n].t for n in ("q", "k", "v", "d_o"))
            o, lse = ioattn.forward(q, k, v, kernel=fwd, causal=causal)
            ref = grad_reference(q, k, v, d_o, causal)
            what = f"good backward {name} (after {fwd}){' causal' if causal else ''}"
            try:
                r1 = ioattn.backward(q, k, v, o, lse, d_o, kernel=name, causal=causal)
                torch.cuda.synchronize()
            except IoattnError as e:
                report(False, what, f"refused: {e}")
                continue
            ok, detail = close_grads(r1, ref)
            inputs_ok = all(g[n].intact() for n in ("q", "k", "v", "d_o"))
            report(ok and inputs_ok, what, detail + ("" if inputs_ok else "; an input or its guard CHANGED"))
            try:
                r2 = ioattn.backward(q, k, v, o, lse, d_o, kernel=name, causal=causal,
                                     **{n: g[n].t for n in outs})
                torch.cuda.synchronize()
            except IoattnError as e:
                report(False, what + " (dq, dk, dv given)", f"refused: {e}")
                continue
            same_ptr = all(a.data_ptr() == g[n].t.data_ptr() for a, n in zip(r2, outs))
            guards = all(g[n].guards_intact() for n in outs)
            inputs_ok = all(g[n].intact() for n in ("q", "k", "v", "d_o"))
            if det:
                agree, adetail = all(torch.equal(a, b) for a, b in zip(r1, r2)), "bit-identical to the allocated call"
            else:
                agree, adetail = close_grads(r2, ref)
            report(agree and same_ptr and guards and inputs_ok, what + " (dq, dk, dv given)",
                   (adetail if agree else "DIFFERS from the allocated call: " + adetail) +
                   ("" if guards else "; a guard of dq/dk/dv CHANGED") +
                   ("" if same_ptr else "; did not return the given dq/dk/dv") +
                   ("" if inputs_ok else "; an input or its guard CHANGED"))

    if not names:
        return
    # Non-contiguous o, lse, d_o (same values, other strides): copied, the same gradients.
    name = ioattn.DEFAULT_BACKWARD if ioattn.DEFAULT_BACKWARD in names else names[0]
    g = bwd_tensors(seed=43)
    q, k, v, d_o = (g[n].t for n in ("q", "k", "v", "d_o"))
    o, lse = ioattn.forward(q, k, v, kernel=bwds[name]["pairs_with"])
    strided = [t.transpose(1, 2).contiguous().transpose(1, 2) for t in (o, d_o)]
    lse_s = lse.transpose(1, 2).contiguous().transpose(1, 2)
    assert not strided[0].is_contiguous() and not lse_s.is_contiguous()
    r1 = ioattn.backward(q, k, v, o, lse, d_o, kernel=name)
    r2 = ioattn.backward(q, k, v, strided[0], lse_s, strided[1], kernel=name)
    torch.cuda.synchronize()
    if bwds[name]["deterministic"]:
        ok, detail = all(torch.equal(a, b) for a, b in zip(r1, r2)), "bit-identical"
    else:
        ok, detail = close_grads(r2, [t.float() for t in r1])
    report(ok, f"good backward {name} non-contiguous o, lse, d_o = contiguous result", detail)

    check_configs("backward_config", ioattn.backward_config, names, "bwd99_none")


# ---- FP8 (forward only) ------------------------------------------------------------------------------

FP8_KERNELS = None  # registered variants listing fp8_e4m3 (filled by run_bad_fp8)


def fp8_tensors(seed=1, out_dtype=None, **dims):
    """Guarded float8_e4m3fn q, k, v (codes of randn values) and NaN out (out_dtype, default bf16), lse."""
    s = {**SHAPE, **dims}
    f8 = torch.float8_e4m3fn
    return dict(q=Guarded((s["b"], s["nq"], s["hq"], s["d"]), f8, seed=seed),
                k=Guarded((s["b"], s["nk"], s["hkv"], s["d"]), f8, seed=seed + 1),
                v=Guarded((s["b"], s["nk"], s["hkv"], s["d"]), f8, seed=seed + 2),
                out=Guarded((s["b"], s["nq"], s["hq"], s["d"]), out_dtype or torch.bfloat16, fill="nan"),
                lse=Guarded((s["b"], s["hq"], s["nq"]), torch.float32, fill="nan"))


def bad_fp8_cases():
    """(name, keyword, build) as bad_forward_cases(), for FP8 forwards (kernel: the FP8 variant)."""
    fp8_kernel = FP8_KERNELS[0] if FP8_KERNELS else "v09_fp8_wgmma"
    hkv = SHAPE["hkv"]

    def call(g=None, **override):
        g = g or fp8_tensors()
        kw = dict(q=g["q"].t, k=g["k"].t, v=g["v"].t, kernel=fp8_kernel, out=g["out"].t, lse=g["lse"].t)
        kw.update(override)
        return kw, list(g.values())

    def bf16_call(**override):
        g = tensors()
        kw = dict(q=g["q"].t, k=g["k"].t, v=g["v"].t, kernel=BAD_KERNEL, out=g["out"].t, lse=g["lse"].t)
        kw.update(override)
        return kw, list(g.values())

    def mixed():
        g = fp8_tensors()
        g["k"] = tensors()["k"]
        return call(g)

    def out_fp16_for_bf16():
        g = fp8_tensors(out_dtype=torch.float16)
        return call(g, out_dtype=torch.bfloat16)

    return [
        ("q_descale on bf16 inputs", "float8_e4m3fn inputs only", lambda: bf16_call(q_descale=0.5)),
        ("out_dtype on bf16 inputs", "float8_e4m3fn inputs only", lambda: bf16_call(out_dtype=torch.float16)),
        (f"q_descale of 3 values (heads_kv {hkv})", "heads_kv", lambda: call(q_descale=[0.5, 0.5, 0.5])),
        (f"k_descale tensor of {hkv + 2} values", "heads_kv",
         lambda: call(k_descale=torch.ones(hkv + 2, device="cuda"))),
        ("v_descale of 0 values", "heads_kv", lambda: call(v_descale=[])),
        ("q_descale 0", "finite and > 0", lambda: call(q_descale=0.0)),
        ("k_descale -1", "finite and > 0", lambda: call(k_descale=-1.0)),
        ("v_descale NaN", "finite and > 0", lambda: call(v_descale=float("nan"))),
        ("q_descale inf in a per-head list", "finite and > 0", lambda: call(q_descale=[1.0] * (hkv - 1) + [math.inf])),
        ("k_descale a 2-D tensor", "1-D tensor", lambda: call(k_descale=torch.ones(1, hkv))),
        ("v_descale a str", "v_descale must be", lambda: call(v_descale="1.0")),
        ("q_descale True", "q_descale must be", lambda: call(q_descale=True)),
        ("out_dtype float32", "out_dtype", lambda: call(out_dtype=torch.float32)),
        ("out_dtype float8", "out_dtype", lambda: call(out_dtype=torch.float8_e4m3fn)),
        ("out fp16 for out_dtype bf16", "out.dtype", out_fp16_for_bf16),
        ("k bfloat16, q float8", "one dtype", mixed),
        ("a variant without FP8 (registry)", "fp8_e4m3", lambda: call(kernel=BAD_KERNEL)),
        ("head_dim 96 (the FP8 variant refuses)", "head_dim", lambda: call(fp8_tensors(d=96))),
    ]


def run_bad_fp8():
    global FP8_KERNELS
    FP8_KERNELS = [n for n, info in ioattn.kernels().items() if "fp8_e4m3" in info["dtypes"].split(",")]
    if not hasattr(ioattn._load(), "ioattn_forward_fp8"):
        report(False, "FP8 refusals", "this libioattn_capi.so has no ioattn_forward_fp8 (rebuild it)")
        return
    run_refusals("forward (FP8)", ioattn.forward, bad_fp8_cases())
    # Forward only: backward() and attention() with grad refuse FP8 tensors.
    g = fp8_tensors()
    o = tensors()
    try:
        ioattn.backward(g["q"].t, g["k"].t, g["v"].t, o["out"].t, o["lse"].t, o["out"].t, kernel=BAD_BACKWARD)
        report(False, "backward refuses FP8 inputs", "accepted")
    except IoattnError as e:
        torch.cuda.synchronize()
        ok = e.code == 2 and one_line(str(e)) and "forward only" in str(e) and all(x.intact() for x in g.values())
        report(ok, "backward refuses FP8 inputs", repr(str(e)))
    try:
        leaf = g["q"].t.detach().clone().requires_grad_(True)
    except RuntimeError as e:  # a torch that cannot make FP8 leaves has nothing to refuse here
        print(f"skip attention refuses FP8 q that requires grad: {str(e).splitlines()[0]} (not counted)")
        return
    try:
        ioattn.attention(leaf, g["k"].t, g["v"].t)
        report(False, "attention refuses FP8 q that requires grad", "accepted")
    except IoattnError as e:
        ok = e.code == 2 and one_line(str(e)) and "forward only" in str(e)
        report(ok, "attention refuses FP8 q that requires grad", repr(str(e)))


def run_bad_capi_fp8():
    lib = ioattn._load()
    if not hasattr(lib, "ioattn_forward_fp8"):
        report(False, "C ABI ioattn_forward_fp8", "this libioattn_capi.so has no ioattn_forward_fp8 (rebuild it)")
        return
    fp8_kernel = (FP8_KERNELS[0] if FP8_KERNELS else "v09_fp8_wgmma").encode()
    g = fp8_tensors()
    ptr = {n: ctypes.c_void_p(x.t.data_ptr()) for n, x in g.items()}
    b, nq, nk, hq, hkv, d = (SHAPE[x] for x in ("b", "nq", "nk", "hq", "hkv", "d"))
    one = (ctypes.c_float * 1)(1.0)
    per_head = (ctypes.c_float * hkv)(*([0.5] * hkv))

    def arr(*vals):
        return (ctypes.c_float * len(vals))(*vals)

    base = dict(kernel=fp8_kernel, dtype=b"fp8_e4m3", out=b"bf16", qd=(one, 1), kd=(per_head, hkv), vd=(one, 1))
    cases = [  # (name, keyword, overrides)
        ("dtype bf16", "fp8_e4m3", dict(dtype=b"bf16")),
        ("dtype NULL", "fp8_e4m3", dict(dtype=None)),
        ("out_dtype NULL", "out_dtype", dict(out=None)),
        ("out_dtype fp32", "out_dtype", dict(out=b"fp32")),
        ("out_dtype fp8_e4m3", "out_dtype", dict(out=b"fp8_e4m3")),
        ("q_descale_count 0", "q_descale_count", dict(qd=(one, 0))),
        ("k_descale_count -1", "k_descale_count", dict(kd=(one, -1))),
        (f"v_descale_count 3 (heads_kv {hkv})", "heads_kv", dict(vd=(arr(1.0, 1.0, 1.0), 3))),
        ("k_descale NULL", "k_descale", dict(kd=(None, 1))),
        ("q_descale 0", "q_descale must be finite and positive", dict(qd=(arr(0.0), 1))),
        ("k_descale NaN in a per-head array", "k_descale must be finite and positive",
         dict(kd=(arr(*([0.5] * (hkv - 1) + [math.nan])), hkv))),
        ("v_descale inf", "v_descale must be finite and positive", dict(vd=(arr(math.inf), 1))),
        ("v_descale -2", "v_descale must be finite and positive", dict(vd=(arr(-2.0), 1))),
        ("a variant without FP8 (registry)", "not supported", dict(kernel=BAD_KERNEL.encode())),
        ("fp8_e5m2 (no variant lists it)", "not supported", dict(dtype=b"fp8_e5m2")),
        ("o not 16-byte aligned", "aligned", dict(o=ctypes.c_void_p(g["out"].t.data_ptr() + 8))),
        ("o overlapping q", "overlap", dict(o=ptr["q"])),
    ]
    for name, keyword, o in cases:
        c = {**base, **o}
        rc = lib.ioattn_forward_fp8(c["kernel"], b, hq, hkv, nq, nk, d, c["dtype"], 0, -1, -1, 0.0, 0, 0, 0, c["out"],
                                    ctypes.cast(c["qd"][0], ctypes.c_void_p), c["qd"][1],
                                    ctypes.cast(c["kd"][0], ctypes.c_void_p), c["kd"][1],
                                    ctypes.cast(c["vd"][0], ctypes.c_void_p), c["vd"][1],
                                    ptr["q"], ptr["k"], ptr["v"], c.get("o", ptr["out"]), ptr["lse"], None)
        torch.cuda.synchronize()
        msg = ioattn._last_error(lib)
        untouched = all(x.intact() for x in g.values())
        ok = rc == 2 and one_line(msg) and keyword in msg and untouched
        report(ok, f"C ABI ioattn_forward_fp8 refuses {name}",
               f"rc {rc}, {msg!r}" + ("" if untouched else " (a buffer or guard CHANGED)"))
    # ioattn_forward takes no FP8 (its o would be 1-byte elements): it names ioattn_forward_fp8.
    rc = lib.ioattn_forward(fp8_kernel, b, hq, hkv, nq, nk, d, b"fp8_e4m3", 0, -1, -1, 0.0, 0, 0, 0,
                            ptr["q"], ptr["k"], ptr["v"], ptr["out"], ptr["lse"], None)
    torch.cuda.synchronize()
    msg = ioattn._last_error(lib)
    report(rc == 2 and one_line(msg) and "ioattn_forward_fp8" in msg and all(x.intact() for x in g.values()),
           "C ABI ioattn_forward refuses an FP8 dtype (names ioattn_forward_fp8)", f"rc {rc}, {msg!r}")
    if hasattr(lib, "ioattn_backward_workspace_bytes"):
        n = lib.ioattn_backward_workspace_bytes(BAD_BACKWARD.encode(), b, hq, hkv, nq, nk, d, b"fp8_e4m3", 0, -1, -1,
                                                0, 0)
        msg = ioattn._last_error(lib)
        report(n == -1 and one_line(msg) and "forward only" in msg,
               "C ABI ioattn_backward_workspace_bytes refuses an FP8 dtype (forward only)", f"returned {n}, {msg!r}")


def run_good_fp8():
    if not FP8_KERNELS:
        print("skip good FP8 calls: no registered variant lists fp8_e4m3 (not counted)")
        return
    kernel = FP8_KERNELS[0]
    try:
        ioattn.kernel_config(kernel, SHAPE["b"], SHAPE["hq"], SHAPE["hkv"], SHAPE["nq"], SHAPE["nk"], SHAPE["d"],
                             "fp8_e4m3")
    except IoattnError as e:
        print(f"skip good FP8 calls: {kernel} refuses d = 64 here: {e} (not counted)")
        return
    for granularity, out_dtype, causal in (("tensor", torch.bfloat16, False), ("head", torch.float16, True)):
        what = f"good FP8 call {kernel} ({granularity} descales, {str(out_dtype)[6:]} out{', causal' if causal else ''})"
        src = tensors(seed=31)
        codes = {}
        for n in ("q", "k", "v"):
            codes[n], codes[n + "d"] = ioattn.quantize_fp8(src[n].t, granularity, heads_kv=SHAPE["hkv"])
        g = fp8_tensors(out_dtype=out_dtype)
        for n in ("q", "k", "v"):  # the codes into guarded memory
            g[n].t.copy_(codes[n])
            g[n].before = g[n].raw.clone()
        deq = []
        for n in ("q", "k", "v"):
            ds = codes[n + "d"]
            per_head = (ds.repeat_interleave(codes[n].shape[2] // ds.numel()) if isinstance(ds, torch.Tensor)
                        else torch.full((codes[n].shape[2],), ds, device="cuda"))
            deq.append(codes[n].float() * per_head.view(1, 1, -1, 1))
        ref_o, ref_lse = reference(*deq, causal)
        try:
            o, lse = ioattn.forward(g["q"].t, g["k"].t, g["v"].t, kernel=kernel, causal=causal, out=g["out"].t,
                                    lse=g["lse"].t, q_descale=codes["qd"], k_descale=codes["kd"],
                                    v_descale=codes["vd"], out_dtype=out_dtype)
            torch.cuda.synchronize()
        except IoattnError as e:
            report(False, what, f"refused: {e}")
            continue
        ok, detail = close(o, lse, ref_o, ref_lse, tol=6e-2)
        same = o.data_ptr() == g["out"].t.data_ptr() and o.dtype == out_dtype
        guards = g["out"].guards_intact() and g["lse"].guards_intact()
        inputs_ok = all(g[n].intact() for n in ("q", "k", "v"))
        report(ok and same and guards and inputs_ok, what,
               detail + ("" if guards else "; a guard of out/lse CHANGED") +
               ("" if same else "; did not return the given out in out_dtype") +
               ("" if inputs_ok else "; an input or its guard CHANGED"))


def main():
    global torch
    try:
        import torch as t
    except ImportError:
        print("SKIPPED: no GPU (torch is not installed)")
        return 77
    torch = t
    if not torch.cuda.is_available():
        print("SKIPPED: no GPU (torch.cuda.is_available() is False)")
        return 77
    lib = Path(ioattn._find_library()).resolve()
    root = Path(__file__).resolve().parent.parent
    lib = lib.relative_to(root) if lib.is_relative_to(root) else lib.name  # no machine paths in a log
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}, library {lib}")
    for part in (run_bad_forward, run_two_devices, run_bad_capi, run_good, run_bad_backward, run_bad_capi_backward,
                 run_good_backward, run_bad_fp8, run_bad_capi_fp8, run_good_fp8):
        try:
            part()
        except Exception as e:  # a crash of one part is a failure, not the end of the report
            report(False, part.__name__, f"raised {type(e).__name__}: {e}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

"""experiments/gpu/peers/test_triton_fa2_logic.py: the Triton peer's kernel body, run by NumPy (ctest triton_fa2_logic).

    python3 experiments/gpu/peers/test_triton_fa2_logic.py

A stand-in for `triton` / `triton.language` (pointers as a flat array plus offsets, tl.load and
tl.store that fail on an unmasked access out of bounds, tl.dot as a float32 matmul, jit as the
plain Python function) lets the Python source of triton_fa2.py's kernels run on the CPU, one
program at a time over the whole grid. This checks the kernel's own logic: the causal split
(unmasked blocks left of the diagonal, masked ones on it), the key bound of a last partial block,
row masks of a partial query block, the online softmax, LSE, GQA head mapping, BSHD and BHSD
strides, and the EVEN_N heuristic, for several (BLOCK_M, BLOCK_N) and N that are not multiples of
them. It does NOT check Triton's compilation, the dtype rounding of P, nor speed: that is
`triton_fa2.py --check` on a GPU. Exit 0 when every case matches a NumPy float64 reference within
1e-4 (float32 arithmetic), 1 otherwise.
"""
import os
import sys
import types

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


class A(np.ndarray):
    """A NumPy array with Triton's .to(dtype)."""

    def to(self, dtype):
        return np.asarray(self).astype(dtype).view(A)


def arr(x):
    return np.asarray(x).view(A)


class Ptr:
    """A pointer tensor: a flat buffer and integer offsets (any shape)."""

    def __init__(self, buf, off=0):
        self.buf, self.off = buf, np.asarray(off, dtype=np.int64)
        self.dtype = types.SimpleNamespace(element_ty=buf.dtype)

    def __add__(self, x):
        return Ptr(self.buf, self.off + np.asarray(x, dtype=np.int64))

    __radd__ = __add__


class OutOfBounds(AssertionError):
    pass


def _checked(ptr, mask):
    off = np.broadcast_to(ptr.off, np.broadcast_shapes(ptr.off.shape, np.shape(mask) if mask is not None else ()))
    m = np.ones(off.shape, bool) if mask is None else np.broadcast_to(mask, off.shape)
    bad = m & ((off < 0) | (off >= ptr.buf.size))
    if bad.any():
        raise OutOfBounds(f"access out of bounds at offset {off[bad][0]} (buffer {ptr.buf.size})")
    return np.where(m, off, 0), m


def load(ptr, mask=None, other=0.0):
    off, m = _checked(ptr, mask)
    return arr(np.where(m, ptr.buf[off], other).astype(ptr.buf.dtype))


def store(ptr, val, mask=None):
    off, m = _checked(ptr, mask)
    val = np.broadcast_to(np.asarray(val), off.shape)
    ptr.buf[off[m]] = val[m]


def fake_triton(program):
    tl = types.ModuleType("triton.language")
    tl.constexpr = object
    tl.int64, tl.float32 = np.int64, np.float32
    tl.program_id = lambda axis: arr(np.int32(program[axis]))
    tl.arange = lambda a, b: arr(np.arange(a, b, dtype=np.int32))
    tl.zeros = lambda shape, dtype: arr(np.zeros(shape, dtype))
    tl.full = lambda shape, value, dtype: arr(np.full(shape, value, dtype))
    tl.load, tl.store = load, store
    tl.dot = lambda a, b, acc=None: arr(np.asarray(a, np.float32) @ np.asarray(b, np.float32)
                                        + (0 if acc is None else np.asarray(acc)))
    tl.max = lambda x, axis: arr(np.max(x, axis=axis))
    tl.sum = lambda x, axis: arr(np.sum(x, axis=axis))
    tl.maximum, tl.minimum = (lambda a, b: arr(np.maximum(a, b))), (lambda a, b: arr(np.minimum(a, b)))
    tl.where = lambda c, a, b: arr(np.where(c, a, b))
    tl.math = types.SimpleNamespace(exp2=lambda x: arr(np.exp2(x)), log2=lambda x: arr(np.log2(x)))

    def multiple_of(x, n):
        assert int(x) % n == 0, f"multiple_of: {int(x)} is not a multiple of {n}"
        return x
    tl.multiple_of = multiple_of

    def static_assert(cond, msg=""):
        assert cond, msg
    tl.static_assert = static_assert
    triton = types.ModuleType("triton")
    triton.language = tl
    triton.jit = lambda fn: fn

    def heuristics(values):
        def wrap(fn):
            return types.SimpleNamespace(fn=fn, values=values)
        return wrap
    triton.heuristics = heuristics
    return triton, tl


def run(mod, q, k, v, causal, layout, bm, bn):
    """The whole grid of _fwd, program by program; returns (O in q's layout, LSE (B, Hq, N))."""
    if layout == "bshd":
        b, nq, hq, d = q.shape
        nk, hkv = k.shape[1], k.shape[2]
    else:
        b, hq, nq, d = q.shape
        hkv, nk = k.shape[1], k.shape[2]

    def strides(t):  # (b, h, n) in elements
        s = [x // t.itemsize for x in t.strides]
        return (s[0], s[2], s[1]) if layout == "bshd" else (s[0], s[1], s[2])
    o = np.zeros_like(q)
    lse = np.zeros((b, hq, nq), np.float32)
    bufs = [np.ascontiguousarray(t).reshape(-1) for t in (q, k, v)] + [o.reshape(-1), lse.reshape(-1)]
    kernel = mod._fwd
    args = dict(Q=Ptr(bufs[0]), K=Ptr(bufs[1]), V=Ptr(bufs[2]), O=Ptr(bufs[3]), LSE=Ptr(bufs[4]),
                qk_scale=np.float32(mod.LOG2E / np.sqrt(d)))
    for name, t in (("q", q), ("k", k), ("v", v), ("o", o)):
        args.update(zip((f"s{name}b", f"s{name}h", f"s{name}n"), strides(t)))
    args.update(H=hq, GROUP=hq // hkv, N_Q=nq, N_K=nk, HEAD_DIM=d, CAUSAL=causal, BLOCK_M=bm, BLOCK_N=bn)
    for name, heur in kernel.values.items():
        args[name] = heur(args)
    for pid_m in range(-(-nq // bm)):
        for pid_bh in range(b * hq):
            mod.tl.program_id = lambda axis, p=(pid_m, pid_bh): arr(np.int32(p[axis]))
            kernel.fn(**args)
    return bufs[3].reshape(o.shape), bufs[4].reshape(lse.shape)


def reference(q, k, v, causal, layout):
    if layout == "bshd":
        q, k, v = (t.transpose(0, 2, 1, 3) for t in (q, k, v))
    q, k, v = (t.astype(np.float64) for t in (q, k, v))
    g = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, g, axis=1), np.repeat(v, g, axis=1)
    s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(q.shape[-1])
    if causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
    m = s.max(-1, keepdims=True)
    p = np.exp(s - m)
    lse = (m + np.log(p.sum(-1, keepdims=True)))[..., 0]
    o = (p / p.sum(-1, keepdims=True)) @ v
    if layout == "bshd":
        o = o.transpose(0, 2, 1, 3)
    return o, lse


def main():
    program = [0, 0]
    triton, tl = fake_triton(program)
    sys.modules["triton"], sys.modules["triton.language"] = triton, tl
    sys.path.insert(0, HERE)
    import triton_fa2 as mod
    rng = np.random.default_rng(0)
    passed = failed = 0
    cases = [(1, 1, 2, 1, 64, 32), (2, 17, 2, 2, 16, 16), (1, 100, 4, 2, 32, 16), (1, 100, 4, 1, 16, 32),
             (1, 257, 2, 2, 64, 64), (1, 128, 3, 3, 32, 32), (1, 96, 2, 1, 16, 48)]
    for b, n, hq, hkv, bm, bn in cases:
        for causal in (False, True):
            for layout in ("bshd", "bhsd"):
                d = 16
                shape_q = (b, n, hq, d) if layout == "bshd" else (b, hq, n, d)
                shape_k = (b, n, hkv, d) if layout == "bshd" else (b, hkv, n, d)
                q = rng.standard_normal(shape_q).astype(np.float32)
                k = rng.standard_normal(shape_k).astype(np.float32)
                v = rng.standard_normal(shape_k).astype(np.float32)
                what = (f"B={b} N={n} Hq={hq} Hkv={hkv} BLOCK_M={bm} BLOCK_N={bn} causal={int(causal)} {layout}")
                try:
                    o, lse = run(mod, q, k, v, causal, layout, bm, bn)
                    ro, rlse = reference(q, k, v, causal, layout)
                    eo, el = np.abs(o - ro).max(), np.abs(lse - rlse).max()
                    ok = eo <= 1e-4 and el <= 1e-4 and np.isfinite(o).all()
                    line = f"max|O-ref| {eo:.2e}, max|LSE-ref| {el:.2e}"
                except AssertionError as e:
                    ok, line = False, f"{type(e).__name__}: {e}"
                print(("PASS: " if ok else "FAIL: ") + what + ": " + line)
                passed += ok
                failed += not ok
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

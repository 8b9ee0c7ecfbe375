"""A FlashAttention-2 forward in Triton: the peer a user would write after Triton's fused-attention tutorial.

    python3 experiments/gpu/peers/triton_fa2.py --check      # correctness vs SDPA on this GPU (rc 0 = pass;
                                                             # ~70 Triton compiles: 2-4 min)
    python3 experiments/gpu/peers/triton_fa2.py --help

    import triton_fa2                                        # (experiments/gpu/peers on sys.path)
    o, lse = triton_fa2.forward(q, k, v, causal=True)        # q (B, N, Hq, d), k, v (B, N, Hkv, d)
    o, lse = triton_fa2.forward(q, k, v, layout="bhsd")      # q (B, Hq, N, d)

A peer, not a rung of ioattn's ladder: it stands beside SDPA flash and cuDNN in
experiments/gpu/bench_sdpa.py (impl `peer:triton_fa2`), timed by experiments/gpu/timing.py like
every other implementation. Written in this project after the tutorial's design, not copied:
  - one program per (query block of BLOCK_M rows, batch x query head); Q_i is loaded once and
    kept on chip (registers or shared memory: Triton's choice), K_j and V_j stream through shared
    memory (Triton pipelines the loop over num_stages buffers);
    HBM traffic: Q, O, LSE once, K and V once per query block (Tr = ceil(N / BLOCK_M) times);
  - the online softmax in base 2: the scale times log2(e) is folded into one multiply, m_i and
    l_i are fp32 per row, P is rounded to the input dtype for the P V product, O = acc / l_i at
    the end, LSE = (m_i + log2 l_i) ln 2 (natural log, as ioattn and SDPA write it);
  - causal (top-left = bottom-right, since N_q = N_k is required with causal): the key blocks
    wholly left of the query block's first row run without a mask, the few on the diagonal with
    the mask (the tutorial's two stages); a non-causal problem whose N_k is not a multiple of
    BLOCK_N runs its last key block with a bound mask only;
  - autotuned over (BLOCK_M, BLOCK_N, num_stages, num_warps) per head dim, keyed by (N_q, N_k,
    d, causal) and the dtype: the first call of a new key benchmarks every config (Triton's
    autotuner); bench_sdpa.py makes that call before its memory window and timing.py's warm-up,
    so tuning is never timed. `tuned_config(...)` says which config won.
Inputs: fp16 or bf16, d in {64, 128}, the last dimension contiguous, BSHD or BHSD, GQA/MQA
(Hq a multiple of Hkv). Anything else is refused with a Refused error naming the constraint.

Fully masked rows cannot occur (causal needs N_q = N_k, so every query row sees key 0..i), hence
no -inf guard in the loop: the first key block a row visits always holds a key it may see.

triton is imported if present (no error if not), torch only when a call needs it, so --help and
the refusals work on a machine without either.
"""
import argparse
import math
import sys

try:  # optional: without triton the module still imports, and every call is refused
    import triton
    import triton.language as tl
except ImportError:
    triton = tl = None

LOG2E = 1.4426950408889634
HEAD_DIMS = (64, 128)
DTYPES = ("float16", "bfloat16")
# (BLOCK_M, BLOCK_N, num_stages, num_warps) per head dim: the tutorial's space (BLOCK_M 64/128,
# BLOCK_N 32-128, stages 2-4, warps 4/8) cut to points whose shared memory by our estimate (the Q
# tile and num_stages K and V tiles, 2 bytes each) stays under the H200's 227 KiB at that d; a config
# that still does not launch is skipped by Triton's autotuner (OutOfResources), not fatal.
CONFIGS = {
    64: [(128, 64, 3, 4), (128, 64, 4, 4), (128, 128, 3, 8), (128, 128, 2, 8), (128, 64, 3, 8), (64, 64, 3, 4),
         (64, 128, 3, 4), (128, 32, 4, 4)],
    128: [(128, 64, 2, 8), (128, 64, 3, 8), (128, 128, 2, 8), (128, 32, 3, 4), (128, 64, 3, 4), (64, 64, 3, 4),
          (64, 128, 2, 4), (128, 32, 4, 4)],
}


class Refused(ValueError):
    """The peer does not run this problem; the message names the constraint."""


_kernels = {}


def available():
    """'' when triton (and torch) can be imported, else why not (one line)."""
    if triton is None:
        return "triton peer: triton is not installed"
    try:
        import torch  # noqa: F401
    except ImportError:
        return "triton peer: torch is not installed"
    return ""


if triton is not None:
    @triton.jit
    def _key_blocks(acc, m_i, l_i, q, k_base, v_base, stride_kn, stride_vn, offs_m, offs_n, offs_d, lo, hi, n_k,
                    qk_scale, BLOCK_N: tl.constexpr, MASK: tl.constexpr):
        """Key blocks [lo, hi) of one query block. MASK 0: none; 1: keys < n_k; 2: that and causal."""
        for start_n in range(lo, hi, BLOCK_N):
            start_n = tl.multiple_of(start_n, BLOCK_N)
            cols = start_n + offs_n                                                        # (Bc,)
            k_ptrs = k_base + cols[None, :] * stride_kn + offs_d[:, None]                  # (d, Bc)
            v_ptrs = v_base + cols[:, None] * stride_vn + offs_d[None, :]                  # (Bc, d)
            if MASK == 0:
                r_k = tl.load(k_ptrs)                    # HBM read: K_j, once per (i, j)
                s = tl.dot(q, r_k)                                                         # (Br, Bc) fp32
                m_new = tl.maximum(m_i, tl.max(s, 1) * qk_scale)
                p = tl.math.exp2(s * qk_scale - m_new[:, None])
                r_v = tl.load(v_ptrs)                    # HBM read: V_j, once per (i, j)
            else:
                keep = cols[None, :] < n_k
                if MASK == 2:
                    keep = keep & (offs_m[:, None] >= cols[None, :])
                r_k = tl.load(k_ptrs, mask=cols[None, :] < n_k, other=0.0)
                s = tl.where(keep, tl.dot(q, r_k) * qk_scale, float("-inf"))
                m_new = tl.maximum(m_i, tl.max(s, 1))
                p = tl.math.exp2(s - m_new[:, None])
                r_v = tl.load(v_ptrs, mask=cols[:, None] < n_k, other=0.0)
            alpha = tl.math.exp2(m_i - m_new)            # rescale of what was summed so far
            l_i = l_i * alpha + tl.sum(p, 1)
            acc = tl.dot(p.to(r_v.dtype), r_v, acc * alpha[:, None])                       # (Br, d) fp32
            m_i = m_new
        return acc, m_i, l_i

    @triton.heuristics({"EVEN_N": lambda a: a["N_K"] % a["BLOCK_N"] == 0})
    @triton.jit
    def _fwd(Q, K, V, O, LSE, qk_scale,
             sqb, sqh, sqn, skb, skh, skn, svb, svh, svn, sob, soh, son,
             H, GROUP, N_Q, N_K,
             HEAD_DIM: tl.constexpr, CAUSAL: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
             EVEN_N: tl.constexpr):
        tl.static_assert(BLOCK_M % 16 == 0, "BLOCK_M must be a multiple of 16 (the dot shape)")
        tl.static_assert(BLOCK_N % 16 == 0, "BLOCK_N must be a multiple of 16 (the dot shape)")
        start_m = tl.program_id(0)
        bh = tl.program_id(1)
        b = (bh // H).to(tl.int64)
        h = (bh % H).to(tl.int64)
        hk = h // GROUP                                  # GQA: the K/V head of query head h
        offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_n = tl.arange(0, BLOCK_N)
        offs_d = tl.arange(0, HEAD_DIM)
        row_ok = offs_m[:, None] < N_Q
        q_ptrs = Q + b * sqb + h * sqh + offs_m[:, None] * sqn + offs_d[None, :]
        q = tl.load(q_ptrs, mask=row_ok, other=0.0)      # HBM read: Q_i, once            (Br, d)
        k_base = K + b * skb + hk * skh
        v_base = V + b * svb + hk * svh
        acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)                              # O_i (Br, d)
        m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)                          # (Br,) log2 units
        l_i = tl.zeros([BLOCK_M], dtype=tl.float32)                                        # (Br,)
        if CAUSAL:
            diag = (start_m * BLOCK_M // BLOCK_N) * BLOCK_N  # key blocks before it: left of every row
            acc, m_i, l_i = _key_blocks(acc, m_i, l_i, q, k_base, v_base, skn, svn, offs_m, offs_n, offs_d, 0, diag,
                                        N_K, qk_scale, BLOCK_N, 0)
            hi = tl.minimum((start_m + 1) * BLOCK_M, N_K)
            acc, m_i, l_i = _key_blocks(acc, m_i, l_i, q, k_base, v_base, skn, svn, offs_m, offs_n, offs_d, diag, hi,
                                        N_K, qk_scale, BLOCK_N, 2)
        elif EVEN_N:
            acc, m_i, l_i = _key_blocks(acc, m_i, l_i, q, k_base, v_base, skn, svn, offs_m, offs_n, offs_d, 0, N_K,
                                        N_K, qk_scale, BLOCK_N, 0)
        else:
            full = (N_K // BLOCK_N) * BLOCK_N
            acc, m_i, l_i = _key_blocks(acc, m_i, l_i, q, k_base, v_base, skn, svn, offs_m, offs_n, offs_d, 0, full,
                                        N_K, qk_scale, BLOCK_N, 0)
            acc, m_i, l_i = _key_blocks(acc, m_i, l_i, q, k_base, v_base, skn, svn, offs_m, offs_n, offs_d, full, N_K,
                                        N_K, qk_scale, BLOCK_N, 1)
        o = acc / l_i[:, None]
        o_ptrs = O + b * sob + h * soh + offs_m[:, None] * son + offs_d[None, :]
        tl.store(o_ptrs, o.to(O.dtype.element_ty), mask=row_ok)          # HBM write: O_i, once
        lse_ptrs = LSE + (b * H + h) * N_Q + offs_m
        tl.store(lse_ptrs, (m_i + tl.math.log2(l_i)) * 0.6931471805599453, mask=offs_m < N_Q)  # HBM write: LSE_i


def _build():
    """The jitted kernel and one autotuner per head dim (built once, on first use)."""
    if not _kernels:
        _kernels["fwd"] = _fwd
        for d, cfgs in CONFIGS.items():
            _kernels[d] = triton.autotune(
                configs=[triton.Config({"BLOCK_M": bm, "BLOCK_N": bn}, num_stages=st, num_warps=w)
                         for bm, bn, st, w in cfgs],
                key=["N_Q", "N_K", "HEAD_DIM", "CAUSAL"])(_fwd)
    return _kernels


def _dims(t, layout):
    """(B, N, H, d) and the (b, h, n) strides of a 4-d tensor in `layout`."""
    if layout == "bshd":
        b, n, h, d = t.shape
        return (b, n, h, d), (t.stride(0), t.stride(2), t.stride(1))
    b, h, n, d = t.shape
    return (b, n, h, d), (t.stride(0), t.stride(1), t.stride(2))


def check_problem(q, k, v, causal, layout):
    """Raise Refused unless the peer runs this problem; return (B, Nq, Nk, Hq, Hkv, d)."""
    why = available()
    if why:
        raise Refused(why)
    if layout not in ("bshd", "bhsd"):
        raise Refused(f"triton peer: layout must be bshd or bhsd (got '{layout}')")
    if any(t.dim() != 4 for t in (q, k, v)):
        raise Refused("triton peer: q, k, v must be 4-d tensors")
    (b, nq, hq, d), _ = _dims(q, layout)
    (bk, nk, hkv, dk), _ = _dims(k, layout)
    if tuple(v.shape) != tuple(k.shape):
        raise Refused(f"triton peer: v {tuple(v.shape)} must have k's shape {tuple(k.shape)}")
    if bk != b or dk != d:
        raise Refused(f"triton peer: q and k must agree in batch and head dim (q {tuple(q.shape)}, k {tuple(k.shape)})")
    if d not in HEAD_DIMS:
        raise Refused(f"triton peer: head dim must be one of {', '.join(map(str, HEAD_DIMS))} (got {d})")
    if str(q.dtype).replace("torch.", "") not in DTYPES or k.dtype != q.dtype or v.dtype != q.dtype:
        raise Refused(f"triton peer: q, k, v must all be fp16 or bf16 (got {q.dtype}, {k.dtype}, {v.dtype})")
    if not (q.is_cuda and k.is_cuda and v.is_cuda):
        raise Refused("triton peer: q, k, v must be CUDA tensors")
    if hq % hkv:
        raise Refused(f"triton peer: heads_q ({hq}) must be a multiple of heads_kv ({hkv})")
    if causal and nq != nk:
        raise Refused(f"triton peer: causal needs seqlen_q = seqlen_k (got {nq}, {nk})")
    if min(b, nq, nk) < 1:
        raise Refused("triton peer: batch and sequence lengths must be >= 1")
    if b * hq > 65535:
        raise Refused(f"triton peer: batch x heads_q ({b * hq}) must be <= 65535 (the grid's y dimension)")
    if any(t.stride(-1) != 1 for t in (q, k, v)):
        raise Refused("triton peer: the head dim (last dimension) of q, k, v must be contiguous")
    return b, nq, nk, hq, hkv, d


def forward(q, k, v, causal=False, layout="bshd", scale=None, out=None, lse=None, config=None):
    """(o, lse): o like q (same layout), lse fp32 (B, Hq, Nq). config = (BLOCK_M, BLOCK_N,
    num_stages, num_warps) runs that config instead of the autotuned one."""
    import torch
    b, nq, nk, hq, hkv, d = check_problem(q, k, v, causal, layout)
    if out is None:
        out = torch.empty_like(q)
    if lse is None:
        lse = torch.empty((b, hq, nq), device=q.device, dtype=torch.float32)
    if tuple(out.shape) != tuple(q.shape) or out.dtype != q.dtype or out.stride(-1) != 1:
        raise Refused("triton peer: out must have q's shape and dtype, last dimension contiguous")
    if tuple(lse.shape) != (b, hq, nq) or lse.dtype != torch.float32 or not lse.is_contiguous():
        raise Refused(f"triton peer: lse must be a contiguous fp32 tensor of shape {(b, hq, nq)}")
    ks = _build()
    qk_scale = (scale if scale is not None else 1.0 / math.sqrt(d)) * LOG2E
    _, sq = _dims(q, layout)
    _, sk = _dims(k, layout)
    _, sv = _dims(v, layout)
    _, so = _dims(out, layout)
    args = (q, k, v, out, lse, qk_scale, *sq, *sk, *sv, *so, hq, hq // hkv, nq, nk)
    if config is None:
        ks[d][lambda meta: (-(-nq // meta["BLOCK_M"]), b * hq)](*args, HEAD_DIM=d, CAUSAL=bool(causal))
    else:
        bm, bn, stages, warps = config
        ks["fwd"][(-(-nq // bm), b * hq)](*args, HEAD_DIM=d, CAUSAL=bool(causal), BLOCK_M=bm, BLOCK_N=bn,
                                         num_stages=stages, num_warps=warps)
    return out, lse


def tuned_config(d):
    """(BLOCK_M, BLOCK_N, num_stages, num_warps) the autotuner chose at its last run for head dim d,
    or None (not run yet, or a Triton without `best_config`)."""
    tuner = _kernels.get(d)
    c = getattr(tuner, "best_config", None) if tuner is not None else None
    if c is None:
        return None
    return c.kwargs.get("BLOCK_M"), c.kwargs.get("BLOCK_N"), c.num_stages, c.num_warps


# ---------------------------------------------------------------------------------------------
# The self-test: the project's error rule (include/ioattn/tolerance.hpp) against SDPA.

def _unit_roundoff(dtype):
    import torch
    return {torch.float16: 2.0 ** -11, torch.bfloat16: 2.0 ** -8}[dtype]


def _reference(q, k, v, causal, layout, dtype):
    """SDPA's math path (S materialized) on BHSD views, in `dtype`: float64 gives ref64, the input
    dtype the naive baseline. Returns (O, LSE) in q's layout; LSE from the same scores."""
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    tr = (lambda t: t.transpose(1, 2)) if layout == "bshd" else (lambda t: t)
    qt, kt, vt = (tr(t).to(dtype) for t in (q, k, v))
    hq, hkv = qt.shape[1], kt.shape[1]
    if hq != hkv:
        kt, vt = kt.repeat_interleave(hq // hkv, 1), vt.repeat_interleave(hq // hkv, 1)
    with sdpa_kernel(SDPBackend.MATH):
        o = F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal)
    s = (qt.double() @ kt.double().transpose(-1, -2)) / math.sqrt(q.shape[-1])
    if causal:
        n = s.shape[-1]
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool, device=s.device).triu(1), float("-inf"))
    return tr(o), torch.logsumexp(s, -1)


def check_case(b, n, hq, hkv, d, dtype, causal, layout, config=None, seed=0):
    """One case under the rule: max|O - ref64| <= 2 max|naive - ref64| + 8 u max(1, max|ref64|);
    LSE: max|LSE - ref64| <= 1e-4 max(1, max|ref64|) (fp32 row sums). Returns (ok, line)."""
    import torch
    g = torch.Generator(device="cuda").manual_seed(seed)
    shape_q = (b, n, hq, d) if layout == "bshd" else (b, hq, n, d)
    shape_k = (b, n, hkv, d) if layout == "bshd" else (b, hkv, n, d)
    q = torch.randn(shape_q, device="cuda", dtype=dtype, generator=g)
    k = torch.randn(shape_k, device="cuda", dtype=dtype, generator=g)
    v = torch.randn(shape_k, device="cuda", dtype=dtype, generator=g)
    o, lse = forward(q, k, v, causal=causal, layout=layout, config=config)
    torch.cuda.synchronize()
    ref, ref_lse = _reference(q, k, v, causal, layout, torch.float64)
    base, _ = _reference(q, k, v, causal, layout, dtype)
    err = (o.double() - ref).abs()
    bound = 2 * (base.double() - ref).abs().max().item() + 8 * _unit_roundoff(dtype) * max(1.0, ref.abs().max().item())
    lse_err = (lse.double() - ref_lse).abs().max().item()
    lse_bound = 1e-4 * max(1.0, ref_lse.abs().max().item())
    nan = bool(torch.isnan(o).any().item() or torch.isnan(lse).any().item())
    ok = not nan and err.max().item() <= bound and lse_err <= lse_bound
    worst = tuple(int(x) for x in torch.nonzero(err == err.max())[0].tolist())
    line = (f"{'ok  ' if ok else 'FAIL'} B={b} N={n} Hq={hq} Hkv={hkv} d={d} {str(dtype)[6:]} causal={int(causal)} "
            f"{layout} config={config or f'autotuned {tuned_config(d)}'}: max|O-ref64| {err.max().item():.3g} (bound {bound:.3g}, "
            f"mean {err.mean().item():.3g}, worst {worst}), max|LSE-ref64| {lse_err:.3g} (bound {lse_bound:.3g})"
            + (" NaN" if nan else "") + f", seed {seed}")
    return ok, line


def check():
    """Every case; prints one line each and 'N passed, N failed'. Returns the process exit code."""
    why = available()
    if why:
        print(f"triton_fa2 --check: {why}")
        return 1
    import torch
    if not torch.cuda.is_available():
        print("triton_fa2 --check: no CUDA device visible to torch")
        return 1
    # Each config compiles once per (d, dtype, causal, N's specialization): the shapes run one fixed
    # config, every config runs one shape, and the autotuner one shape per d (about 70 compiles).
    cases = []
    for d in HEAD_DIMS:
        cfg0 = CONFIGS[d][0]
        for dtype in (torch.bfloat16, torch.float16):
            for causal in (False, True):
                # N not a multiple of any tile (1, 17, 1013), GQA and MQA, both layouts.
                cases += [(2, 1013, 4, 2, d, dtype, causal, "bshd", cfg0), (1, 1, 2, 1, d, dtype, causal, "bhsd", cfg0),
                          (1, 17, 3, 3, d, dtype, causal, "bshd", cfg0), (2, 512, 8, 1, d, dtype, causal, "bhsd", cfg0)]
        for cfg in CONFIGS[d]:  # every config the autotuner may pick, causal (the split loop) and not
            cases += [(1, 777, 2, 1, d, torch.bfloat16, c, "bshd", cfg) for c in (False, True)]
        cases += [(2, 1024, 4, 4, d, torch.bfloat16, c, "bshd", None) for c in (False, True)]  # autotuned
    passed = failed = 0
    for i, c in enumerate(cases):
        try:
            ok, line = check_case(*c, seed=i)
        except Refused as e:
            ok, line = False, f"FAIL refused: {e}"
        print(line, flush=True)
        passed += ok
        failed += not ok
    try:  # a refusal must be a Refused error naming the constraint
        q = torch.zeros(1, 8, 2, 96, device="cuda", dtype=torch.bfloat16)
        forward(q, q, q)
        print("FAIL refusal: d = 96 was not refused")
        failed += 1
    except Refused as e:
        print(f"ok   refusal: {e}")
        passed += 1
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="run the correctness cases vs SDPA on this GPU")
    args = ap.parse_args(argv)
    if not args.check:
        ap.print_help()
        return 0
    return check()


if __name__ == "__main__":
    sys.exit(main())

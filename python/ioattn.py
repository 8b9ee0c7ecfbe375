"""ioattn.py: run an ioattn GPU kernel on torch tensors through the C ABI (ctypes, nothing to build).

    import torch, ioattn
    q = torch.randn(2, 1024, 16, 128, device="cuda", dtype=torch.bfloat16)   # (batch, seqlen, heads, d)
    k, v = torch.randn_like(q), torch.randn_like(q)
    o, lse = ioattn.forward(q, k, v, kernel="v05_fa2_fast", causal=True)
    # o: like q; lse: (batch, heads_q, seqlen_q) float32, natural log

Layout is BSHD (batch, seqlen, heads, head_dim), contiguous, as kernels/launch.hpp and
include/ioattn/problem.hpp define it; torch's scaled_dot_product_attention takes BHSD, so compare
with sdpa(q.transpose(1, 2), ...).transpose(1, 2) (python/example_compare_sdpa.py).

Every argument of forward() is checked here before anything reaches the C ABI (the ABI sees only
sizes and raw pointers, so a wrong shape would read or write out of bounds): a violation raises
IoattnError(2, "<the constraint>"). kernels(), kernel_config() and workspace_bytes() work without
torch installed.

The shared library is found through $IOATTN_CAPI, else build-gpu/kernels/libioattn_capi.so or
build/kernels/libioattn_capi.so beside this repository's python/ folder.
"""
import ctypes
import math
import numbers
import os
from pathlib import Path

_ROOT = Path(__file__).resolve().parent.parent
_DTYPES = {"torch.float32": "fp32", "torch.float16": "fp16", "torch.bfloat16": "bf16"}
_INT64_MAX = 2**63 - 1
_INT32_MAX = 2**31 - 1


class IoattnError(RuntimeError):
    """A refused problem (code 2: bad argument, unknown kernel, unsupported shape) or a runtime error (code 3)."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


def _find_library():
    candidates = [os.environ.get("IOATTN_CAPI")] if os.environ.get("IOATTN_CAPI") else []
    candidates += [str(_ROOT / d / "kernels" / "libioattn_capi.so") for d in ("build-gpu", "build")]
    for c in candidates:
        if c and Path(c).is_file():
            return c
    raise IoattnError(2, "libioattn_capi.so not found: build with nvcc (cmake -B build-gpu) or set IOATTN_CAPI")


_lib = None
_PROBLEM = [ctypes.c_char_p] + [ctypes.c_int64] * 6 + [ctypes.c_char_p, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]


def _load():
    global _lib
    if _lib is None:
        lib = ctypes.CDLL(_find_library())
        i32, vp = ctypes.c_int, ctypes.c_void_p
        # (kernel, batch, heads_q, heads_kv, seqlen_q, seqlen_k, head_dim, dtype, causal, window_left,
        #  window_right) + scale, br, bc, splits + q, k, v, o, lse, stream
        lib.ioattn_forward.restype = ctypes.c_int
        lib.ioattn_forward.argtypes = _PROBLEM + [ctypes.c_double, i32, i32, i32, vp, vp, vp, vp, vp, vp]
        lib.ioattn_workspace_bytes.restype = ctypes.c_int64
        lib.ioattn_workspace_bytes.argtypes = _PROBLEM + [i32, i32, i32]
        if hasattr(lib, "ioattn_kernel_config"):  # absent from libraries built before it existed
            lib.ioattn_kernel_config.restype = ctypes.c_char_p
            lib.ioattn_kernel_config.argtypes = _PROBLEM + [i32, i32, i32]
        lib.ioattn_last_error.restype = ctypes.c_char_p
        lib.ioattn_kernel_count.restype = ctypes.c_int
        lib.ioattn_kernel_name.restype = ctypes.c_char_p
        lib.ioattn_kernel_name.argtypes = [ctypes.c_int]
        lib.ioattn_kernel_info.restype = ctypes.c_char_p
        lib.ioattn_kernel_info.argtypes = [ctypes.c_int]
        lib.ioattn_release_workspace.restype = None
        lib.ioattn_release_workspace.argtypes = []
        _lib = lib
    return _lib


def _last_error(lib):
    msg = lib.ioattn_last_error()
    return msg.decode() if msg else "refused without a message"


def kernels():
    """{name: {strategy, dtypes, head_dims, tiles, idea}} for every registered variant, in ladder order."""
    lib = _load()
    out = {}
    for i in range(lib.ioattn_kernel_count()):
        strategy, dtypes, head_dims, tiles, idea = lib.ioattn_kernel_info(i).decode().split(";", 4)
        out[lib.ioattn_kernel_name(i).decode()] = dict(strategy=strategy, dtypes=dtypes, head_dims=head_dims,
                                                      tiles=tiles, idea=idea)
    return out


def release_workspace():
    """Free the workspace the library keeps between calls (it only grows)."""
    _load().ioattn_release_workspace()


def _problem_args(kernel, batch, heads_q, heads_kv, seqlen_q, seqlen_k, head_dim, dtype, causal, window):
    if not isinstance(kernel, str) or not isinstance(dtype, str):
        raise IoattnError(2, "kernel and dtype must be str (dtype: 'fp32', 'fp16' or 'bf16')")
    sizes = dict(batch=batch, heads_q=heads_q, heads_kv=heads_kv, seqlen_q=seqlen_q, seqlen_k=seqlen_k,
                 head_dim=head_dim)
    for name, x in sizes.items():  # the range is the C ABI's int64; it refuses sizes < 1 itself
        if not (_is_int(x) and -_INT64_MAX <= x <= _INT64_MAX):
            raise IoattnError(2, f"{name} must be an int (got {x!r})")
    window = _check_window(window)
    return [kernel.encode(), *(int(x) for x in sizes.values()), dtype.encode(), int(bool(causal)), *window]


def workspace_bytes(kernel, batch, heads_q, heads_kv, seqlen_q, seqlen_k, head_dim, dtype, causal=False,
                    window=(-1, -1), br=0, bc=0, splits=0):
    """Device bytes a forward allocates beyond its tensors (dtype: "fp32"|"fp16"|"bf16")."""
    lib = _load()
    n = lib.ioattn_workspace_bytes(*_problem_args(kernel, batch, heads_q, heads_kv, seqlen_q, seqlen_k, head_dim,
                                                  dtype, causal, window), *_check_tiles(br, bc, splits))
    if n < 0:
        raise IoattnError(2, _last_error(lib))
    return n


def kernel_config(kernel, batch, heads_q, heads_kv, seqlen_q, seqlen_k, head_dim, dtype, causal=False,
                  window=(-1, -1), br=0, bc=0, splits=0):
    """The launch a forward of this problem makes, as the registry reports it (dtype: "fp32"|"fp16"|"bf16"):
    {br, bc, stages, threads, smem_bytes, ctas_per_sm, grid_x, grid_y, grid_z, launches, splits: int,
    grid_order: str}. Raises IoattnError(2, reason) when the kernel refuses the problem."""
    lib = _load()
    if not hasattr(lib, "ioattn_kernel_config"):
        raise IoattnError(2, "this libioattn_capi.so has no ioattn_kernel_config (rebuild it)")
    text = lib.ioattn_kernel_config(*_problem_args(kernel, batch, heads_q, heads_kv, seqlen_q, seqlen_k, head_dim,
                                                   dtype, causal, window), *_check_tiles(br, bc, splits))
    if text is None:
        raise IoattnError(2, _last_error(lib))
    config = {}
    for item in text.decode().split(";"):
        key, _, value = item.partition("=")
        config[key] = value if key == "grid_order" or not value.lstrip("-").isdigit() else int(value)
    return config


# ---- argument checks: each violation is one IoattnError(2, "<constraint>") -------------------------

def _is_int(x):
    return isinstance(x, numbers.Integral) and not isinstance(x, bool)


def _check_window(window):
    if not (isinstance(window, (tuple, list)) and len(window) == 2 and all(_is_int(w) for w in window)):
        raise IoattnError(2, f"window must be a pair of ints (left, right), -1 = unbounded (got {window!r})")
    if not all(-1 <= w <= _INT64_MAX for w in window):
        raise IoattnError(2, f"window bounds must be -1 (unbounded) or >= 0 (got {tuple(window)})")
    return int(window[0]), int(window[1])


def _check_tiles(br, bc, splits):
    for name, x in (("br", br), ("bc", bc), ("splits", splits)):
        if not (_is_int(x) and 0 <= x <= _INT32_MAX):
            raise IoattnError(2, f"{name} must be an int >= 0 (0: the kernel's default; got {x!r})")
    return int(br), int(bc), int(splits)


def _check_forward_args(torch, q, k, v, kernel, causal, window, scale, br, bc, splits, out, lse):
    """Every constraint forward() relies on, in the order a reader would check them. Raises IoattnError(2)."""
    def need(ok, constraint):
        if not ok:
            raise IoattnError(2, constraint)

    need(isinstance(kernel, str), f"kernel must be a str naming a registered variant (got {type(kernel).__name__})")
    need(isinstance(causal, bool) or (_is_int(causal) and causal in (0, 1)), f"causal must be a bool (got {causal!r})")
    _check_window(window)
    _check_tiles(br, bc, splits)
    need(scale is None or (isinstance(scale, numbers.Real) and not isinstance(scale, bool)
                           and math.isfinite(scale) and scale > 0),
         f"scale must be None (1/sqrt(d)) or a finite positive number (got {scale!r})")
    for name, t in (("q", q), ("k", k), ("v", v)):
        need(isinstance(t, torch.Tensor), f"{name} must be a torch.Tensor (got {type(t).__name__})")
        need(t.layout == torch.strided, f"{name} must be a dense (strided) tensor (got {t.layout})")
        need(str(t.dtype) in _DTYPES, f"{name}.dtype must be float32, float16 or bfloat16 (got {t.dtype})")
        need(t.is_cuda, f"{name} must be a CUDA tensor (got device {t.device})")
        need(t.dim() == 4, f"{name} must have rank 4, BSHD (batch, seqlen, heads, head_dim) (got shape "
                           f"{tuple(t.shape)})")
        need(all(s > 0 for s in t.shape), f"{name} must have no zero-size dimension (got shape {tuple(t.shape)})")
    need(q.dtype == k.dtype == v.dtype, f"q, k, v must share one dtype (got {q.dtype}, {k.dtype}, {v.dtype})")
    need(q.device == k.device == v.device, f"q, k, v must be on one device (got {q.device}, {k.device}, {v.device})")
    need(k.shape == v.shape, f"k and v must have the same shape (got {tuple(k.shape)}, {tuple(v.shape)})")
    b, nq, hq, d = q.shape
    need(k.shape[0] == b, f"batch of k, v ({k.shape[0]}) must equal batch of q ({b})")
    need(k.shape[3] == d, f"head_dim of k, v ({k.shape[3]}) must equal head_dim of q ({d})")
    need(hq % k.shape[2] == 0, f"heads_q ({hq}) must be divisible by heads_kv ({k.shape[2]})")
    for name, t, shape, dtype in (("out", out, tuple(q.shape), q.dtype), ("lse", lse, (b, hq, nq), torch.float32)):
        if t is None:
            continue
        need(isinstance(t, torch.Tensor), f"{name} must be a torch.Tensor or None (got {type(t).__name__})")
        need(t.layout == torch.strided, f"{name} must be a dense (strided) tensor (got {t.layout})")
        need(tuple(t.shape) == shape, f"{name} must have shape {shape} (got {tuple(t.shape)})")
        need(t.dtype == dtype, f"{name}.dtype must be {dtype} (got {t.dtype})")
        need(t.device == q.device, f"{name} must be on q's device {q.device} (got {t.device})")
        need(t.is_contiguous(), f"{name} must be contiguous (the kernel writes it in place)")


def forward(q, k, v, kernel="v05_fa2_fast", causal=False, window=(-1, -1), scale=None, br=0, bc=0, splits=0,
            out=None, lse=None):
    """O, LSE of attention for BSHD torch tensors q (B, Nq, Hq, d), k and v (B, Nk, Hkv, d).

    q, k, v: float32, float16 or bfloat16 (one dtype), CUDA, one device, no zero-size dimension,
    Hq divisible by Hkv. A non-contiguous q, k or v is copied to a contiguous tensor first (same
    shape and values). out (like q) and lse ((B, Hq, Nq) float32), when given, must be contiguous on
    q's device: the kernel writes them in place and they are returned. window: (left, right) ints,
    -1 = unbounded. scale: None (1/sqrt(d)) or a finite positive number. br, bc, splits: 0 = the
    kernel's default.

    The launch is asynchronous on torch's current CUDA stream of q's device. Raises IoattnError(2)
    naming the violated constraint (checked here, or by the kernel for a shape it does not
    support) and IoattnError(3) for a runtime error.
    """
    import torch

    _check_forward_args(torch, q, k, v, kernel, causal, window, scale, br, bc, splits, out, lse)
    lib = _load()
    b, nq, hq, d = q.shape
    _, nk, hkv, _ = k.shape
    with torch.cuda.device(q.device):
        q, k, v = q.contiguous(), k.contiguous(), v.contiguous()  # same shapes; copies only if strided
        if out is None:
            out = torch.empty(tuple(q.shape), device=q.device, dtype=q.dtype)
        if lse is None:
            lse = torch.empty((b, hq, nq), device=q.device, dtype=torch.float32)
        stream = torch.cuda.current_stream(q.device).cuda_stream
        rc = lib.ioattn_forward(kernel.encode(), b, hq, hkv, nq, nk, d, _DTYPES[str(q.dtype)].encode(),
                                int(bool(causal)), int(window[0]), int(window[1]),
                                0.0 if scale is None else float(scale), int(br), int(bc), int(splits),
                                q.data_ptr(), k.data_ptr(), v.data_ptr(), out.data_ptr(), lse.data_ptr(), stream)
    if rc != 0:
        raise IoattnError(rc, _last_error(lib))
    return out, lse

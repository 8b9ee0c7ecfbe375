"""ioattn.py: run an ioattn GPU kernel on torch tensors through the C ABI (ctypes, nothing to build).

    import torch, ioattn
    q = torch.randn(2, 1024, 16, 128, device="cuda", dtype=torch.bfloat16)   # (batch, seqlen, heads, d)
    k, v = torch.randn_like(q), torch.randn_like(q)
    o, lse = ioattn.forward(q, k, v, kernel="v05_fa2_fast", causal=True)
    # o: like q; lse: (batch, heads_q, seqlen_q) float32, natural log

Layout is BSHD (batch, seqlen, heads, head_dim), contiguous, as kernels/launch.hpp and
include/ioattn/problem.hpp define it; torch's scaled_dot_product_attention takes BHSD, so compare
with sdpa(q.transpose(1, 2), ...).transpose(1, 2) (python/example_compare_sdpa.py).

The shared library is found through $IOATTN_CAPI, else build-gpu/kernels/libioattn_capi.so or
build/kernels/libioattn_capi.so beside this repository's python/ folder.
"""
import ctypes
import os
from pathlib import Path

_ROOT = Path(__file__).resolve().parent.parent
_DTYPES = {"torch.float32": "fp32", "torch.float16": "fp16", "torch.bfloat16": "bf16"}


class IoattnError(RuntimeError):
    """A refused problem (code 2: unknown kernel, unsupported shape) or a runtime error (code 3)."""

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


def _load():
    global _lib
    if _lib is None:
        lib = ctypes.CDLL(_find_library())
        i64, vp = ctypes.c_int64, ctypes.c_void_p
        lib.ioattn_forward.restype = ctypes.c_int
        lib.ioattn_forward.argtypes = [ctypes.c_char_p, i64, i64, i64, i64, i64, i64, ctypes.c_char_p,
                                       ctypes.c_int, i64, i64, ctypes.c_double, ctypes.c_int, ctypes.c_int,
                                       ctypes.c_int, vp, vp, vp, vp, vp, vp]
        lib.ioattn_workspace_bytes.restype = i64
        lib.ioattn_workspace_bytes.argtypes = [ctypes.c_char_p, i64, i64, i64, i64, i64, i64, ctypes.c_char_p,
                                               ctypes.c_int, i64, i64, ctypes.c_int, ctypes.c_int, ctypes.c_int]
        lib.ioattn_last_error.restype = ctypes.c_char_p
        lib.ioattn_kernel_count.restype = ctypes.c_int
        lib.ioattn_kernel_name.restype = ctypes.c_char_p
        lib.ioattn_kernel_name.argtypes = [ctypes.c_int]
        lib.ioattn_kernel_info.restype = ctypes.c_char_p
        lib.ioattn_kernel_info.argtypes = [ctypes.c_int]
        _lib = lib
    return _lib


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


def workspace_bytes(kernel, batch, heads_q, heads_kv, seqlen_q, seqlen_k, head_dim, dtype, causal=False,
                    window=(-1, -1), br=0, bc=0, splits=0):
    """Device bytes a forward allocates beyond its tensors (dtype: "fp32"|"fp16"|"bf16")."""
    lib = _load()
    n = lib.ioattn_workspace_bytes(kernel.encode(), batch, heads_q, heads_kv, seqlen_q, seqlen_k, head_dim,
                                   dtype.encode(), int(bool(causal)), int(window[0]), int(window[1]), br, bc, splits)
    if n < 0:
        raise IoattnError(2, lib.ioattn_last_error().decode())
    return n


def forward(q, k, v, kernel="v05_fa2_fast", causal=False, window=(-1, -1), scale=None, br=0, bc=0, splits=0,
            out=None, lse=None):
    """O, LSE of attention for BSHD torch tensors q (B, Nq, Hq, d), k and v (B, Nk, Hkv, d).

    The launch is asynchronous on torch's current CUDA stream. Raises IoattnError with the kernel's
    one-line reason when the problem is refused.
    """
    import torch

    lib = _load()
    if not (q.is_cuda and k.is_cuda and v.is_cuda):
        raise IoattnError(2, "q, k, v must be CUDA tensors")
    if not (q.dtype == k.dtype == v.dtype) or str(q.dtype) not in _DTYPES:
        raise IoattnError(2, "q, k, v must share one dtype: float32, float16 or bfloat16")
    if q.dim() != 4 or k.dim() != 4 or v.dim() != 4 or k.shape != v.shape:
        raise IoattnError(2, "q (B, Nq, Hq, d), k and v (B, Nk, Hkv, d) expected (BSHD)")
    q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
    b, nq, hq, d = q.shape
    _, nk, hkv, _ = k.shape
    if out is None:
        out = torch.empty_like(q)
    if lse is None:
        lse = torch.empty((b, hq, nq), device=q.device, dtype=torch.float32)
    stream = torch.cuda.current_stream(q.device).cuda_stream
    rc = lib.ioattn_forward(kernel.encode(), b, hq, hkv, nq, nk, d, _DTYPES[str(q.dtype)].encode(),
                            int(bool(causal)), int(window[0]), int(window[1]),
                            float(scale) if scale else 0.0, int(br), int(bc), int(splits),
                            q.data_ptr(), k.data_ptr(), v.data_ptr(), out.data_ptr(), lse.data_ptr(), stream)
    if rc != 0:
        raise IoattnError(rc, lib.ioattn_last_error().decode())
    return out, lse

"""ioattn.py: run ioattn's GPU kernels on torch tensors through the C ABI (ctypes, nothing to build),
forward and backward, and as a PyTorch autograd op.

    import torch, ioattn
    q = torch.randn(2, 1024, 16, 128, device="cuda", dtype=torch.bfloat16)   # (batch, seqlen, heads, d)
    k, v = torch.randn_like(q), torch.randn_like(q)

    # The autograd op (torch.library.custom_op; torch.compile traces it through its fake impls):
    q.requires_grad_(); k.requires_grad_(); v.requires_grad_()
    o = ioattn.attention(q, k, v, causal=True)          # best registered kernels for the problem
    o.float().square().sum().backward()                  # q.grad, k.grad, v.grad by an ioattn backward

    # The raw calls (no autograd; outputs may be preallocated):
    o, lse = ioattn.forward(q, k, v, kernel="v05_fa2_fast", causal=True)
    dq, dk, dv = ioattn.backward(q, k, v, o, lse, torch.randn_like(o), causal=True)

Layout is BSHD (batch, seqlen, heads, head_dim), as kernels/launch.hpp and
include/ioattn/problem.hpp define it; torch's scaled_dot_product_attention takes BHSD, so compare
with sdpa(q.transpose(1, 2), ...).transpose(1, 2) (python/example_compare_sdpa.py). causal is
bottom-right aligned (query i sees key j when j <= i + Nk - Nq); window = (left, right) keeps
keys in [i + Nk - Nq - left, i + Nk - Nq + right], -1 = unbounded on that side. A fully masked
query row gives O = 0, LSE = -inf and zero gradients.

Functions
  forward(q, k, v, kernel, causal, window, scale, br, bc, splits, out, lse) -> (o, lse)
  forward_paged(q, k_cache, v_cache, block_table, seqused_k, kernel, causal, window, scale, splits,
                max_seqlen_k, out, lse) -> (o, lse)
      a paged KV cache: k_cache, v_cache (num_pages, page_size, Hkv, d); block_table int32
      (B, max_pages), key j of sequence b in row j % page_size of page block_table[b, j // page_size];
      seqused_k int32 (B,), the keys of each sequence (0 allowed: its rows give O = 0, LSE = -inf).
      The tables are copied to the host once to be validated (a synchronization). Only variants that
      declare paged KV take it (v07_decode_splitkv, the default; kernel None: choose_forward_paged()).
  forward_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, kernel, causal,
                 window, scale, out, lse) -> (o, lse)
      packed (varlen) sequences: q (total_q, Hq, d), k, v (total_k, Hkv, d); cu_seqlens_q/_k int32
      (B + 1,) on q's device, sequence b owning rows [cu[b], cu[b + 1]); lse (Hq, total_q). Causal
      and windows are bottom-right aligned per sequence. The offsets are copied to the host once to
      be validated (a synchronization). Only variants that declare varlen take it (kernel None:
      v06_fa2_wgmma on compute capability 9.0, else v05_fa2_fast).
  backward(q, k, v, o, lse, d_o, kernel, causal, window, scale, br, bc, dq, dk, dv) -> (dq, dk, dv)
      dQ, dK, dV have the shapes and dtype of q, k, v (dK, dV summed over the query heads of a GQA
      group); o, d_o like q; lse fp32 (B, Hq, Nq), as forward wrote it.
  forward(..., q_descale, k_descale, v_descale, out_dtype), attention(..., same) with
      torch.float8_e4m3fn q, k, v: FP8 inputs, forward only (no autograd: backward() refuses FP8 and
      attention() refuses FP8 tensors that require grad). The real inputs are the codes times the
      descales (problem.hpp, Fp8Scaling): each None (1.0), a float (per tensor) or a 1-D tensor /
      sequence of Hkv values (per K/V head; query head h uses entry h // (Hq // Hkv)), finite and
      > 0; out_dtype torch.bfloat16 (default) or torch.float16 is O's dtype. kernel None chooses
      (an FP8 variant: v09_fp8_wgmma); the C ABI entry is ioattn_forward_fp8.
  quantize_fp8(x, granularity="tensor" | "head", heads_kv=None) -> (codes, descale)
      BSHD bf16/fp16/fp32 -> float8_e4m3fn codes and descale = amax / 448 (per tensor: a float;
      per head: a float32 tensor (Hkv,), amax over each K/V head's group of heads), codes =
      x / descale rounded to e4m3 (saturating), so codes * descale approximates x.
  attention(q, k, v, causal=False, window=(-1, -1), scale=None, kernel=None) -> o
      the autograd op. kernel: None (choose both), a forward variant's name (the backward is
      chosen), or a pair (forward or None, backward or None).
  kernels(), backward_kernels(): the registries; kernel_config(), backward_config(): the launch a
      problem gets; workspace_bytes(), backward_workspace_bytes(): device bytes beyond the tensors;
      choose_forward(), choose_backward(), choose_forward_paged(): what kernel=None picks; register_ops();
      release_workspace().

Checks: every argument of forward() and backward() is checked here before anything reaches the
C ABI (the ABI sees only sizes and raw pointers, so a wrong shape would read or write out of
bounds), by one checker of the common problem (q, k, v, kernel, causal, window, scale, tiles)
extended by each call's own tensors (forward: out, lse; backward: o, lse, d_o in, dq, dk, dv
out): a violation raises IoattnError(2, "<the constraint>"). Inputs that are not contiguous are
copied to contiguous tensors (same values); outputs given must be contiguous and share no byte
with an input or another output. The C ABI checks again what it can (IoattnError(2) with its
message) and reports runtime errors as IoattnError(3).

Kernel choice (kernel=None; cached per problem signature: dtype, sizes, causal, window, device):
  forward   the rungs the H200 benchmark measured fastest for the nearest measured problem first
            (python/forward_choice.json, written by experiments/gpu/forward_choice.py from the
            CANONICAL runs: per dtype, head dim, causality and N, the rungs by measured speed; used
            for 16-bit problems without a window with seqlen_q and seqlen_k >= 512, at the measured
            N nearest to seqlen_k in log scale, the other 16-bit dtype's cell when this one was not
            measured), then the highest rung of the forward ladder (kernels(), in ladder order);
            each asked through ioattn_workspace_bytes (it refuses exactly what supports()
            refuses); a launch refused with code 2 (e.g. a rung that needs another GPU
            architecture) moves on to the next rung, remembered for that signature.
            Few-query (decode) problems first try the decode cells of the same file instead: the
            rungs ranked on one shape of the decode benchmark (bench_decode.py) in one run, used for
            16-bit problems without a window whose seqlen_q is at most the largest measured one, of
            the same head dim, GQA group size (heads_q / heads_kv) and causality (one query row:
            causal or not is the same problem), the cell nearest in log2 seqlen_q + log2 seqlen_k +
            log2 batch; a paged cache (forward_paged(kernel=None), choose_forward_paged()) at the
            measured page size nearest in log2, then v07_decode_splitkv. Without decode cells (no
            run ranked the general forward beside the decode rungs) the forward choice stands.
  backward  the first fast backward (no "_scalar" in the name) that accepts the problem, in the
            order the H200 benchmark ranked them (_BACKWARD_MEASURED_ORDER: bwd03, bwd03b, bwd02b,
            bwd02), then any other fast one, newest first; else a deterministic scalar backward
            (bwd01b_fa2_scalar_dqpass), else any that accepts it. Which forward wrote O and LSE does
            not matter to a backward: every forward computes the same O and LSE (within rounding).

The autograd op: attention() calls torch.ops.ioattn.attention_forward(q, k, v, causal,
window_left, window_right, scale, kernel, backward_kernel) -> (o, lse); its setup_context saves
q, k, v, o, lse (lse is marked non-differentiable: no gradient flows through the LSE output), its
backward calls torch.ops.ioattn.attention_backward(d_o, q, k, v, o, lse, causal, window_left,
window_right, scale, backward_kernel) -> (dq, dk, dv). Both ops have register_fake impls (shapes
only) so torch.compile(fullgraph=True) traces them; an empty kernel string means "choose", done
in the real impl at run time with the concrete shapes. scale 0.0 in the op means 1/sqrt(d). The
ops are registered on first use of attention() (or by register_ops()); under torch.compile,
register them before the first compiled call (call register_ops() or attention() once eagerly):
registering inside a trace is refused with that message.

torch is imported only where a function needs it: `import ioattn`, kernels(), backward_kernels(),
the config, workspace and choice queries work without torch installed.

The launches are asynchronous on torch's current CUDA stream of q's device. The C ABI keeps two
grow-only workspaces per process, one for the forwards and one for the backwards
(release_workspace() frees both): calls on different streams at the same time are not supported.

The shared library is found through $IOATTN_CAPI, else build-gpu/kernels/libioattn_capi.so or
build/kernels/libioattn_capi.so beside this repository's python/ folder.
"""
import ctypes
import json
import math
import numbers
import os
import typing
from pathlib import Path

_ROOT = Path(__file__).resolve().parent.parent
_DTYPES = {"torch.float32": "fp32", "torch.float16": "fp16", "torch.bfloat16": "bf16"}
# FP8 inputs (forward only): torch dtype -> the C ABI's name; e4m3's largest finite value.
_FP8_DTYPES = {"torch.float8_e4m3fn": "fp8_e4m3"}
_FP8_OUT = {"torch.bfloat16": "bf16", "torch.float16": "fp16"}
FP8_E4M3_MAX = 448.0
_INT64_MAX = 2**63 - 1
_INT32_MAX = 2**31 - 1
DEFAULT_BACKWARD = "bwd01b_fa2_scalar_dqpass"


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
        if hasattr(lib, "ioattn_forward_paged"):  # absent from libraries built before it existed
            # problem + scale, br, bc, splits + page_size, num_pages, max_pages + host block_table,
            # host seqused_k, device block_table, device seqused_k + q, k, v, o, lse, stream
            i64 = ctypes.c_int64
            lib.ioattn_forward_paged.restype = ctypes.c_int
            lib.ioattn_forward_paged.argtypes = (_PROBLEM + [ctypes.c_double, i32, i32, i32, i64, i64, i64]
                                                 + [vp] * 4 + [vp] * 6)
        if hasattr(lib, "ioattn_forward_varlen"):  # absent from libraries built before it existed
            # problem + scale, br, bc + total_q, total_k + host cu_seqlens_q, host cu_seqlens_k,
            # device cu_seqlens_q, device cu_seqlens_k + q, k, v, o, lse, stream
            lib.ioattn_forward_varlen.restype = ctypes.c_int
            lib.ioattn_forward_varlen.argtypes = (_PROBLEM + [ctypes.c_double, i32, i32, ctypes.c_int64, ctypes.c_int64]
                                                  + [vp] * 4 + [vp] * 6)
        if hasattr(lib, "ioattn_forward_fp8"):  # absent from libraries built before it existed
            # problem + scale, br, bc, splits + out_dtype + (q, k, v descale host array, count) + q, k,
            # v, o, lse, stream
            i64 = ctypes.c_int64
            lib.ioattn_forward_fp8.restype = ctypes.c_int
            lib.ioattn_forward_fp8.argtypes = (_PROBLEM + [ctypes.c_double, i32, i32, i32, ctypes.c_char_p]
                                               + [vp, i64] * 3 + [vp] * 6)
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
        if hasattr(lib, "ioattn_backward"):  # absent from libraries built before the backward
            # problem + scale, br, bc + q, k, v, o, lse, d_o, dq, dk, dv, stream
            lib.ioattn_backward.restype = ctypes.c_int
            lib.ioattn_backward.argtypes = _PROBLEM + [ctypes.c_double, i32, i32] + [vp] * 10
            lib.ioattn_backward_workspace_bytes.restype = ctypes.c_int64
            lib.ioattn_backward_workspace_bytes.argtypes = _PROBLEM + [i32, i32]
            lib.ioattn_backward_config.restype = ctypes.c_char_p
            lib.ioattn_backward_config.argtypes = _PROBLEM + [i32, i32]
            lib.ioattn_backward_count.restype = ctypes.c_int
            lib.ioattn_backward_count.argtypes = []
            lib.ioattn_backward_name.restype = ctypes.c_char_p
            lib.ioattn_backward_name.argtypes = [ctypes.c_int]
            lib.ioattn_backward_info.restype = ctypes.c_char_p
            lib.ioattn_backward_info.argtypes = [ctypes.c_int]
        _lib = lib
    return _lib


def _load_backward():
    lib = _load()
    if not hasattr(lib, "ioattn_backward"):
        raise IoattnError(2, "this libioattn_capi.so has no ioattn_backward (rebuild it)")
    return lib


def _last_error(lib):
    msg = lib.ioattn_last_error()
    return msg.decode() if msg else "refused without a message"


def kernels():
    """{name: {strategy, dtypes, head_dims, tiles, idea}} for every registered forward variant, in ladder order."""
    lib = _load()
    out = {}
    for i in range(lib.ioattn_kernel_count()):
        strategy, dtypes, head_dims, tiles, idea = lib.ioattn_kernel_info(i).decode().split(";", 4)
        out[lib.ioattn_kernel_name(i).decode()] = dict(strategy=strategy, dtypes=dtypes, head_dims=head_dims,
                                                      tiles=tiles, idea=idea)
    return out


def backward_kernels():
    """{name: {pairs_with, strategy, dq_mode, deterministic (bool), dtypes, head_dims, idea}} for every
    registered backward variant, in ladder order."""
    lib = _load_backward()
    out = {}
    for i in range(lib.ioattn_backward_count()):
        pairs, strategy, dq_mode, det, dtypes, head_dims, idea = lib.ioattn_backward_info(i).decode().split(";", 6)
        out[lib.ioattn_backward_name(i).decode()] = dict(
            pairs_with=pairs, strategy=strategy, dq_mode=dq_mode,
            deterministic=det.strip().lower() in ("1", "true", "yes", "deterministic"),
            dtypes=dtypes, head_dims=head_dims, idea=idea)
    return out


def release_workspace():
    """Free the workspaces the library keeps between calls (they only grow)."""
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


def _parse_config(text):
    config = {}
    for item in text.decode().split(";"):
        key, _, value = item.partition("=")
        config[key] = value if key == "grid_order" or not value.lstrip("-").isdigit() else int(value)
    return config


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
    return _parse_config(text)


def backward_workspace_bytes(kernel, batch, heads_q, heads_kv, seqlen_q, seqlen_k, head_dim, dtype, causal=False,
                             window=(-1, -1), br=0, bc=0):
    """Device bytes a backward needs beyond its tensors: D = rowsum(dO o O) and, for an atomic-dQ
    backward, the fp32 dQ accumulator. Raises IoattnError(2, reason) when the kernel refuses."""
    lib = _load_backward()
    n = lib.ioattn_backward_workspace_bytes(*_problem_args(kernel, batch, heads_q, heads_kv, seqlen_q, seqlen_k,
                                                           head_dim, dtype, causal, window),
                                            *_check_tiles(br, bc, 0)[:2])
    if n < 0:
        raise IoattnError(2, _last_error(lib))
    return n


def backward_config(kernel, batch, heads_q, heads_kv, seqlen_q, seqlen_k, head_dim, dtype, causal=False,
                    window=(-1, -1), br=0, bc=0):
    """The launch a backward of this problem makes (the keys of kernel_config(); `launches` counts
    every kernel of the backward: preprocess, main, dQ pass or convert). Raises IoattnError(2)."""
    lib = _load_backward()
    text = lib.ioattn_backward_config(*_problem_args(kernel, batch, heads_q, heads_kv, seqlen_q, seqlen_k, head_dim,
                                                     dtype, causal, window), *_check_tiles(br, bc, 0)[:2])
    if text is None:
        raise IoattnError(2, _last_error(lib))
    return _parse_config(text)


# ---- kernel choice (kernel=None) ----------------------------------------------------------------------

_choice = {}  # (pass, dtype, sizes, causal, window, device) -> name
_refused_at_launch = {}  # the key of _choice -> {name: message} of launches refused (code 2)


def _is_scalar_rung(name):
    return "_scalar" in name


# The fast backwards in the order the H200 benchmark ranks them (the run CANONICAL names as `bwd`,
# 2026-12-01_02eaf49_backward_decode: backward and forward+backward time, bf16 d128, N 1k/4k, causal
# or not): on the wgmma rung the atomic dQ is the faster, on the mma.sync rung the separate pass.
# Registered fast backwards not listed follow, newest first.
_BACKWARD_MEASURED_ORDER = ("bwd03_fa3_wgmma", "bwd03b_fa3_wgmma_dqpass", "bwd02b_fa2_mma_dqpass", "bwd02_fa2_mma")


def _backward_order(registered):
    """Backward names in the order choose_backward tries them (see the module docstring)."""
    names = list(registered)
    fast = [n for n in _BACKWARD_MEASURED_ORDER if n in registered] + [
        n for n in reversed(names) if not _is_scalar_rung(n) and n not in _BACKWARD_MEASURED_ORDER]
    det = [n for n in reversed(names) if _is_scalar_rung(n) and registered[n]["deterministic"]]
    rest = [n for n in reversed(names) if n not in fast and n not in det]
    return fast + det + rest


_forward_table = None  # python/forward_choice.json's cells, loaded on first use ([] when absent)


def _forward_cells():
    global _forward_table
    if _forward_table is None:
        path = Path(__file__).resolve().parent / "forward_choice.json"
        _forward_table = json.loads(path.read_text())["cells"] if path.is_file() else []
    return _forward_table


def _measured_forward_order(cells, dtype, head_dim, causal, seqlen_q, seqlen_k, window):
    """The forward names to try first for this problem: the `order` of the measured cell nearest to it
    (see the module docstring: same head dim and causality, this dtype else the other 16-bit one,
    N nearest seqlen_k in log2), or [] where the table does not speak (another dtype, a window,
    seqlen_q or seqlen_k below 512, a head dim never measured)."""
    if dtype not in ("bf16", "fp16") or tuple(window) != (-1, -1) or min(seqlen_q, seqlen_k) < 512:
        return []
    for dt in (dtype, "fp16" if dtype == "bf16" else "bf16"):
        same = [c for c in cells if c["dtype"] == dt and c["head_dim"] == head_dim and c["causal"] == int(bool(causal))]
        if same:
            near = min(same, key=lambda c: (abs(math.log2(c["seqlen"]) - math.log2(seqlen_k)), c["seqlen"]))
            return list(near["order"])
    return []


_decode_table = None  # python/forward_choice.json's decode_cells, loaded on first use ([] when absent)


def _decode_cells():
    global _decode_table
    if _decode_table is None:
        path = Path(__file__).resolve().parent / "forward_choice.json"
        _decode_table = json.loads(path.read_text()).get("decode_cells", []) if path.is_file() else []
    return _decode_table


def _measured_decode_order(cells, dtype, head_dim, causal, batch, heads_q, heads_kv, seqlen_q, seqlen_k, window,
                           page_size=0):
    """The forward names to try first for a few-query problem: the `order` of the nearest measured decode
    cell (see the module docstring: same head dim, GQA group size, causality and cache kind, this dtype
    else the other 16-bit one, the nearest page size, then nearest in log2 seqlen_q + seqlen_k + batch),
    or [] where the cells do not speak (another dtype, a window, seqlen_q above the measured ones, a
    group size or head dim never measured, a cache kind never measured)."""
    if (dtype not in ("bf16", "fp16") or tuple(window) != (-1, -1) or min(batch, heads_q, heads_kv, seqlen_q,
                                                                            seqlen_k) < 1 or heads_q % heads_kv):
        return []
    lg = lambda x: math.log2(max(x, 1))  # noqa: E731
    flat = lambda c: int(bool(c["causal"])) if c["seqlen_q"] > 1 else 0  # noqa: E731 - one row: causal is moot
    want = int(bool(causal)) if seqlen_q > 1 else 0
    for dt in (dtype, "fp16" if dtype == "bf16" else "bf16"):
        same = [c for c in cells if c["dtype"] == dt and c["head_dim"] == head_dim and flat(c) == want
                and c["heads_q"] // c["heads_kv"] == heads_q // heads_kv and (c["page_size"] > 0) == (page_size > 0)]
        if not same:
            continue
        if page_size > 0:
            p = min({c["page_size"] for c in same}, key=lambda x: (abs(lg(x) - lg(page_size)), x))
            same = [c for c in same if c["page_size"] == p]
        if seqlen_q > max(c["seqlen_q"] for c in same):
            return []
        near = min(same, key=lambda c: (abs(lg(c["seqlen_q"]) - lg(seqlen_q)) + abs(lg(c["seqlen_k"]) - lg(seqlen_k))
                                        + abs(lg(c["batch"]) - lg(batch)), c["seqlen_q"], c["seqlen_k"], c["batch"]))
        return list(near["order"])
    return []


def _first_accepted(order, key, probe, skip=None):
    """(the first name of order that probe(name) accepts, remembered as _choice[key]; the refusals of
    the names before it, one line each). Names in skip (refused at launch) are passed over with their
    reason; (None, reasons) when every name is refused."""
    reasons = []
    for name in order:
        if skip and name in skip:
            reasons.append(f"refused at launch: {skip[name]}")
            continue
        try:
            probe(name)
        except IoattnError as e:
            reasons.append(str(e).splitlines()[0])
            continue
        _choice[key] = name
        return name, reasons
    return None, reasons


def _choose(which, batch, heads_q, heads_kv, seqlen_q, seqlen_k, head_dim, dtype, causal, window, device=None):
    _problem_args("", batch, heads_q, heads_kv, seqlen_q, seqlen_k, head_dim, dtype, causal, window)  # types
    key = (which, dtype, int(batch), int(heads_q), int(heads_kv), int(seqlen_q), int(seqlen_k), int(head_dim),
           bool(causal), *_check_window(window), device)
    if key in _choice:
        return _choice[key]
    if which == "fwd":
        ladder = list(reversed(list(kernels())))
        decode = _measured_decode_order(_decode_cells(), dtype, int(head_dim), causal, int(batch), int(heads_q),
                                        int(heads_kv), int(seqlen_q), int(seqlen_k), _check_window(window))
        first = [n for n in decode or _measured_forward_order(_forward_cells(), dtype, int(head_dim), causal,
                                                               int(seqlen_q), int(seqlen_k), _check_window(window))
                 if n in ladder]
        order, probe = first + [n for n in ladder if n not in first], workspace_bytes
    else:
        order, probe = _backward_order(backward_kernels()), backward_workspace_bytes
    name, reasons = _first_accepted(order, key, lambda n: probe(n, batch, heads_q, heads_kv, seqlen_q, seqlen_k,
                                                                 head_dim, dtype, causal, window),
                                    _refused_at_launch.get(key, {}))
    if name:
        return name
    what = "forward" if which == "fwd" else "backward"
    raise IoattnError(2, f"no registered {what} kernel supports {dtype} B={batch} Hq={heads_q} Hkv={heads_kv} "
                         f"Nq={seqlen_q} Nk={seqlen_k} d={head_dim} causal={int(bool(causal))} window={tuple(window)} "
                         f"({'; '.join(reasons) or 'none registered'})")


def choose_forward(batch, heads_q, heads_kv, seqlen_q, seqlen_k, head_dim, dtype, causal=False, window=(-1, -1),
                   device=None):
    """The forward variant kernel=None runs for this problem (dtype: "fp32"|"fp16"|"bf16"). device: the
    CUDA device index whose launch refusals count (attention() on that device remembers them);
    None: the registry's answer alone."""
    return _choose("fwd", batch, heads_q, heads_kv, seqlen_q, seqlen_k, head_dim, dtype, causal, window, device)


def choose_backward(batch, heads_q, heads_kv, seqlen_q, seqlen_k, head_dim, dtype, causal=False, window=(-1, -1),
                    device=None):
    """The backward variant kernel=None runs for this problem (device: as for choose_forward)."""
    return _choose("bwd", batch, heads_q, heads_kv, seqlen_q, seqlen_k, head_dim, dtype, causal, window, device)


_PAGED_DEFAULT = "v07_decode_splitkv"  # forward_paged's default, the last candidate of its kernel=None


def choose_forward_paged(batch, heads_q, heads_kv, seqlen_q, max_seqlen_k, head_dim, dtype, page_size, causal=False,
                         window=(-1, -1)):
    """The variant forward_paged(kernel=None) runs for a paged cache of pages of page_size keys: the rungs
    of the nearest measured paged decode cell (each was timed on a paged cache, so each takes one),
    then v07_decode_splitkv; the first whose dense problem of these sizes ioattn_workspace_bytes
    accepts (the paged launch itself may still refuse with code 2)."""
    _problem_args("", batch, heads_q, heads_kv, seqlen_q, max_seqlen_k, head_dim, dtype, causal, window)  # types
    _need(_is_int(page_size) and page_size >= 1, f"page_size must be an int >= 1 (got {page_size!r})")
    key = ("fwd_paged", dtype, int(batch), int(heads_q), int(heads_kv), int(seqlen_q), int(max_seqlen_k),
           int(head_dim), int(page_size), bool(causal), *_check_window(window))
    if key in _choice:
        return _choice[key]
    registered = kernels()
    order = [n for n in _measured_decode_order(_decode_cells(), dtype, int(head_dim), causal, int(batch),
                                               int(heads_q), int(heads_kv), int(seqlen_q), int(max_seqlen_k),
                                               _check_window(window), int(page_size)) if n in registered]
    name, reasons = _first_accepted(order + [n for n in (_PAGED_DEFAULT,) if n not in order], key,
                                    lambda n: workspace_bytes(n, batch, heads_q, heads_kv, seqlen_q, max_seqlen_k,
                                                              head_dim, dtype, causal, window))
    if name:
        return name
    raise IoattnError(2, f"no paged-KV forward supports {dtype} B={batch} Hq={heads_q} Hkv={heads_kv} Nq={seqlen_q} "
                         f"Nk={max_seqlen_k} d={head_dim} page_size={page_size} ({'; '.join(reasons)})")


def _problem_of(q, k):
    b, nq, hq, d = (int(x) for x in q.shape)
    return b, hq, int(k.shape[2]), nq, int(k.shape[1]), d, {**_DTYPES, **_FP8_DTYPES}[str(q.dtype)]


def _device_index(t):
    return t.device.index if t.device.index is not None else -1


def choose_kernels(q, k, causal=False, window=(-1, -1)):
    """(forward, backward) names that attention(kernel=None) runs for tensors q, k (BSHD) on their device."""
    p, dev = _problem_of(q, k), _device_index(q)
    return _choose("fwd", *p, causal, window, device=dev), _choose("bwd", *p, causal, window, device=dev)


def _run_auto(which, q, k, causal, window, call):
    """call(name) with the chosen kernel (the arguments already checked); a launch refused with
    code 2 (the ABI's own checks, e.g. a rung that needs another GPU) tries the next candidate and
    is remembered for this signature."""
    p, device = _problem_of(q, k), _device_index(q)
    key = (which, p[6], *p[:6], bool(causal), *_check_window(window), device)
    while True:
        name = _choose(which, *p, causal, window, device=device)
        try:
            return call(name)
        except IoattnError as e:
            if e.code != 2:
                raise
            _refused_at_launch.setdefault(key, {})[name] = str(e).splitlines()[0]
            _choice.pop(key, None)


# ---- argument checks: each violation is one IoattnError(2, "<constraint>") -------------------------

def _is_int(x):
    return isinstance(x, numbers.Integral) and not isinstance(x, bool)


def _need(ok, constraint):
    if not ok:
        raise IoattnError(2, constraint)


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


def _check_options(causal, window, scale):
    """The plain-Python arguments every call shares. (Messages are formatted only on failure: attention()
    runs this inside torch.compile's trace.)"""
    if not (isinstance(causal, bool) or (_is_int(causal) and causal in (0, 1))):
        raise IoattnError(2, f"causal must be a bool (got {causal!r})")
    _check_window(window)
    if not (scale is None or (isinstance(scale, numbers.Real) and not isinstance(scale, bool)
                              and math.isfinite(scale) and scale > 0)):
        raise IoattnError(2, f"scale must be None (1/sqrt(d)) or a finite positive number (got {scale!r})")


def _check_tensor(torch, name, t, shape, dtype, device, written, optional):
    """One tensor beside q: type, layout, shape, dtype, device; `written` (an output): contiguous."""
    _need(isinstance(t, torch.Tensor),
          f"{name} must be a torch.Tensor{' or None' if optional else ''} (got {type(t).__name__})")
    _need(t.layout == torch.strided, f"{name} must be a dense (strided) tensor (got {t.layout})")
    _need(tuple(t.shape) == tuple(shape), f"{name} must have shape {tuple(shape)} (got {tuple(t.shape)})")
    _need(t.dtype == dtype, f"{name}.dtype must be {dtype} (got {t.dtype})")
    _need(t.device == device, f"{name} must be on q's device {device} (got {t.device})")
    if written:
        _need(t.is_contiguous(), f"{name} must be contiguous (the kernel writes it in place)")


def _span(t):
    """[first, last + 1) byte addresses a strided tensor may touch."""
    if t.numel() == 0:
        return t.data_ptr(), t.data_ptr()
    extent = sum((s - 1) * abs(st) for s, st in zip(t.shape, t.stride())) + 1
    return t.data_ptr(), t.data_ptr() + extent * t.element_size()


def _check_apart(outputs, inputs):
    """Outputs (name, tensor or None) share no byte with an input or with another output."""
    given = [(n, t) for n, t in outputs if t is not None]
    for i, (n, t) in enumerate(given):
        a0, a1 = _span(t)
        for m, u in list(inputs) + given[:i]:
            b0, b1 = _span(u)
            _need(not (a0 < b1 and b0 < a1), f"{n} must not overlap {m} (the kernel writes {n})")


def _check_common(torch, q, k, v, kernel, causal, window, scale, br, bc, splits, what="variant", fp8=False):
    """Every constraint of the problem itself, in the order a reader would check them. fp8: FP8
    inputs are allowed (the forward); otherwise they are refused as forward only."""
    _need(isinstance(kernel, str), f"kernel must be a str naming a registered {what} (got {type(kernel).__name__})")
    _check_options(causal, window, scale)
    _check_tiles(br, bc, splits)
    for name, t in (("q", q), ("k", k), ("v", v)):
        _need(isinstance(t, torch.Tensor), f"{name} must be a torch.Tensor (got {type(t).__name__})")
        _need(t.layout == torch.strided, f"{name} must be a dense (strided) tensor (got {t.layout})")
        _need(fp8 or str(t.dtype) not in _FP8_DTYPES,
              f"{name}.dtype {t.dtype} is forward only: there is no FP8 {what} (no FP8 backward, no autograd)")
        _need(str(t.dtype) in _DTYPES or (fp8 and str(t.dtype) in _FP8_DTYPES),
              f"{name}.dtype must be float32, float16 or bfloat16{', or float8_e4m3fn' if fp8 else ''} (got {t.dtype})")
        _need(t.is_cuda, f"{name} must be a CUDA tensor (got device {t.device})")
        _need(t.dim() == 4, f"{name} must have rank 4, BSHD (batch, seqlen, heads, head_dim) (got shape "
                            f"{tuple(t.shape)})")
        _need(all(s > 0 for s in t.shape), f"{name} must have no zero-size dimension (got shape {tuple(t.shape)})")
    _need(q.dtype == k.dtype == v.dtype, f"q, k, v must share one dtype (got {q.dtype}, {k.dtype}, {v.dtype})")
    _need(q.device == k.device == v.device, f"q, k, v must be on one device (got {q.device}, {k.device}, {v.device})")
    _need(k.shape == v.shape, f"k and v must have the same shape (got {tuple(k.shape)}, {tuple(v.shape)})")
    b, nq, hq, d = q.shape
    _need(k.shape[0] == b, f"batch of k, v ({k.shape[0]}) must equal batch of q ({b})")
    _need(k.shape[3] == d, f"head_dim of k, v ({k.shape[3]}) must equal head_dim of q ({d})")
    _need(hq % k.shape[2] == 0, f"heads_q ({hq}) must be divisible by heads_kv ({k.shape[2]})")


def _check_forward_args(torch, q, k, v, kernel, causal, window, scale, br, bc, splits, out, lse, out_dtype=None):
    """Every constraint forward() relies on (out_dtype: O's dtype, None = q's). Raises IoattnError(2)."""
    _check_common(torch, q, k, v, kernel, causal, window, scale, br, bc, splits, fp8=True)
    b, nq, hq, _ = q.shape
    o_dtype = q.dtype if out_dtype is None else out_dtype
    for name, t, shape, dtype in (("out", out, tuple(q.shape), o_dtype), ("lse", lse, (b, hq, nq), torch.float32)):
        if t is not None:
            _check_tensor(torch, name, t, shape, dtype, q.device, written=True, optional=True)
    _check_apart([("out", out), ("lse", lse)], [("q", q), ("k", k), ("v", v)])


def _check_backward_args(torch, q, k, v, o, lse, d_o, kernel, causal, window, scale, br, bc, dq, dk, dv):
    """Every constraint backward() relies on: the forward's problem, then o, lse, d_o (inputs, any
    strides) and dq, dk, dv (outputs, when given: contiguous). Raises IoattnError(2)."""
    _check_common(torch, q, k, v, kernel, causal, window, scale, br, bc, 0, what="backward variant")
    b, nq, hq, _ = q.shape
    for name, t, shape, dtype in (("o", o, tuple(q.shape), q.dtype), ("lse", lse, (b, hq, nq), torch.float32),
                                  ("d_o", d_o, tuple(q.shape), q.dtype)):
        _check_tensor(torch, name, t, shape, dtype, q.device, written=False, optional=False)
    for name, t, like in (("dq", dq, q), ("dk", dk, k), ("dv", dv, v)):
        if t is not None:
            _check_tensor(torch, name, t, tuple(like.shape), q.dtype, q.device, written=True, optional=True)
    _check_apart([("dq", dq), ("dk", dk), ("dv", dv)],
                 [("q", q), ("k", k), ("v", v), ("o", o), ("lse", lse), ("d_o", d_o)])


# ---- the calls ---------------------------------------------------------------------------------------

def forward(q, k, v, kernel="v05_fa2_fast", causal=False, window=(-1, -1), scale=None, br=0, bc=0, splits=0,
            out=None, lse=None, q_descale=None, k_descale=None, v_descale=None, out_dtype=None):
    """O, LSE of attention for BSHD torch tensors q (B, Nq, Hq, d), k and v (B, Nk, Hkv, d).

    FP8: q, k, v torch.float8_e4m3fn codes (quantize_fp8 makes them) take q_descale, k_descale,
    v_descale (None = 1.0, a float, or Hkv values: a 1-D tensor or a sequence; finite, > 0) and
    out_dtype (torch.bfloat16, the default, or torch.float16: O's dtype, and out's when given);
    kernel must list fp8_e4m3 in its registry line (v09_fp8_wgmma), or None to choose. Forward
    only. For other dtypes the four FP8 arguments must be None.

    q, k, v: float32, float16 or bfloat16 (one dtype), CUDA, one device, no zero-size dimension,
    Hq divisible by Hkv. A non-contiguous q, k or v is copied to a contiguous tensor first (same
    shape and values). out (like q) and lse ((B, Hq, Nq) float32), when given, must be contiguous on
    q's device and overlap no input: the kernel writes them in place and they are returned. window:
    (left, right) ints, -1 = unbounded. scale: None (1/sqrt(d)) or a finite positive number. br,
    bc, splits: 0 = the kernel's default.

    The launch is asynchronous on torch's current CUDA stream of q's device. Raises IoattnError(2)
    naming the violated constraint (checked here, or by the kernel for a shape it does not
    support) and IoattnError(3) for a runtime error.
    """
    import torch

    fp8 = _fp8_args(torch, q, k, q_descale, k_descale, v_descale, out_dtype)
    if fp8 is not None:
        if kernel is None:  # the tensors checked first, then the registry's choice for the problem
            _check_forward_args(torch, q, k, v, "auto", causal, window, scale, br, bc, splits, out, lse,
                                out_dtype=fp8[3])
            kernel = _choose("fwd", *_problem_of(q, k), causal, window, device=_device_index(q))
        return _forward_fp8(torch, q, k, v, kernel, causal, window, scale, br, bc, splits, out, lse, *fp8)
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


# ---- FP8 (forward only) ------------------------------------------------------------------------------

def _fp8_descale(torch, name, x, heads_kv):
    """A descale argument -> list of floats (1 or heads_kv values), or IoattnError(2) naming the constraint."""
    if x is None:
        return [1.0]
    if isinstance(x, numbers.Real) and not isinstance(x, bool):
        vals = [float(x)]
    elif isinstance(x, torch.Tensor):
        _need(x.dim() <= 1 and (x.is_floating_point() or x.dtype in (torch.int32, torch.int64)),
              f"{name} must be a float or a 1-D tensor of heads_kv = {heads_kv} values (got a tensor of shape "
              f"{tuple(x.shape)}, {x.dtype})")
        vals = [float(v) for v in x.detach().reshape(-1).to(torch.float64).cpu().tolist()]
    elif isinstance(x, (tuple, list)) and all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in x):
        vals = [float(v) for v in x]
    else:
        raise IoattnError(2, f"{name} must be None, a float or a 1-D tensor of heads_kv = {heads_kv} values "
                             f"(got {type(x).__name__})")
    _need(len(vals) in (1, heads_kv),
          f"{name} must have 1 value (per tensor) or heads_kv = {heads_kv} values (per K/V head) (got {len(vals)})")
    _need(all(math.isfinite(v) and v > 0 for v in vals), f"{name} must be finite and > 0 (got {vals})")
    return vals


def _fp8_args(torch, q, k, q_descale, k_descale, v_descale, out_dtype):
    """None for a non-FP8 call (the FP8 arguments must then be None), else (descales q, k, v, out dtype)."""
    is_fp8 = isinstance(q, torch.Tensor) and str(q.dtype) in _FP8_DTYPES
    given = [n for n, x in (("q_descale", q_descale), ("k_descale", k_descale), ("v_descale", v_descale),
                            ("out_dtype", out_dtype)) if x is not None]
    if not is_fp8:
        _need(not given, f"{', '.join(given)} apply to float8_e4m3fn inputs only (q.dtype is "
                         f"{getattr(q, 'dtype', type(q).__name__)})")
        return None
    heads_kv = int(k.shape[2]) if isinstance(k, torch.Tensor) and k.dim() == 4 else 1
    od = torch.bfloat16 if out_dtype is None else out_dtype
    _need(str(od) in _FP8_OUT, f"out_dtype of an FP8 forward must be torch.bfloat16 or torch.float16 (got {od!r})")
    return (_fp8_descale(torch, "q_descale", q_descale, heads_kv), _fp8_descale(torch, "k_descale", k_descale, heads_kv),
            _fp8_descale(torch, "v_descale", v_descale, heads_kv), od)


def _forward_fp8(torch, q, k, v, kernel, causal, window, scale, br, bc, splits, out, lse, qd, kd, vd, out_dtype):
    """forward() of float8_e4m3fn q, k, v through ioattn_forward_fp8 (arguments as forward's)."""
    _check_forward_args(torch, q, k, v, kernel, causal, window, scale, br, bc, splits, out, lse, out_dtype=out_dtype)
    lib = _load()
    _need(hasattr(lib, "ioattn_forward_fp8"), "this libioattn_capi.so has no ioattn_forward_fp8 (rebuild it)")
    b, nq, hq, d = q.shape
    _, nk, hkv, _ = k.shape
    arrays = [(ctypes.c_float * len(x))(*x) for x in (qd, kd, vd)]  # host copies, read during the call
    with torch.cuda.device(q.device):
        q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
        if out is None:
            out = torch.empty(tuple(q.shape), device=q.device, dtype=out_dtype)
        if lse is None:
            lse = torch.empty((b, hq, nq), device=q.device, dtype=torch.float32)
        stream = torch.cuda.current_stream(q.device).cuda_stream
        rc = lib.ioattn_forward_fp8(kernel.encode(), b, hq, hkv, nq, nk, d, _FP8_DTYPES[str(q.dtype)].encode(),
                                    int(bool(causal)), int(window[0]), int(window[1]),
                                    0.0 if scale is None else float(scale), int(br), int(bc), int(splits),
                                    _FP8_OUT[str(out_dtype)].encode(),
                                    *(x for a in arrays for x in (ctypes.cast(a, ctypes.c_void_p), len(a))),
                                    q.data_ptr(), k.data_ptr(), v.data_ptr(), out.data_ptr(), lse.data_ptr(), stream)
    if rc != 0:
        raise IoattnError(rc, _last_error(lib))
    return out, lse


def quantize_fp8(x, granularity="tensor", heads_kv=None):
    """(codes, descale) of a BSHD tensor x (B, N, H, d; bf16, fp16 or fp32, any device): codes =
    x / descale rounded to float8_e4m3fn (saturating at +-448), descale = amax / 448, so codes *
    descale approximates x and the largest |x| maps to 448.

    granularity "tensor": one amax over x; descale a Python float. "head": one amax per K/V head;
    descale a float32 tensor (heads_kv,) on x's device. heads_kv (default H) groups the heads:
    for GQA queries pass the K/V head count, and K/V head j's descale covers query heads
    [j * H / heads_kv, (j + 1) * H / heads_kv), as forward()'s per-head q_descale reads it. An
    all-zero tensor (or group) gets descale 1.0. Non-finite values are refused (IoattnError(2))."""
    import torch

    _need(isinstance(x, torch.Tensor), f"x must be a torch.Tensor (got {type(x).__name__})")
    _need(str(x.dtype) in _DTYPES, f"x.dtype must be float32, float16 or bfloat16 (got {x.dtype})")
    _need(x.dim() == 4 and x.numel() > 0, f"x must be a non-empty BSHD tensor of rank 4 (got shape {tuple(x.shape)})")
    _need(granularity in ("tensor", "head"), f"granularity must be 'tensor' or 'head' (got {granularity!r})")
    h = int(x.shape[2])
    g = h if heads_kv is None else heads_kv
    _need(_is_int(g) and g >= 1 and h % g == 0, f"heads_kv must be an int dividing the {h} heads of x (got {heads_kv!r})")
    xf = x.float()
    _need(bool(torch.isfinite(xf).all()), "x must be finite (an FP8 code cannot hold inf or NaN)")
    if granularity == "tensor":
        amax = float(xf.abs().max())
        descale = amax / FP8_E4M3_MAX if amax > 0 else 1.0
        per_head = torch.full((h,), descale, dtype=torch.float32, device=x.device)
    else:
        amax = xf.abs().amax(dim=(0, 1, 3)).reshape(g, h // g).amax(dim=1)  # (heads_kv,)
        descale = torch.where(amax > 0, amax / FP8_E4M3_MAX, torch.ones_like(amax)).to(torch.float32)
        per_head = descale.repeat_interleave(h // g)
    codes = (xf / per_head.view(1, 1, h, 1)).clamp(-FP8_E4M3_MAX, FP8_E4M3_MAX).to(torch.float8_e4m3fn)
    return codes, descale


def _check_inputs(torch, named):
    """forward_paged's and forward_varlen's checks of their (name, tensor, rank) inputs."""
    for name, t, rank in named:
        _need(isinstance(t, torch.Tensor), f"{name} must be a torch.Tensor (got {type(t).__name__})")
        _need(t.layout == torch.strided, f"{name} must be a dense (strided) tensor (got {t.layout})")
        _need(str(t.dtype) in _DTYPES, f"{name}.dtype must be float32, float16 or bfloat16 (got {t.dtype})")
        _need(t.is_cuda, f"{name} must be a CUDA tensor (got device {t.device})")
        _need(t.dim() == rank, f"{name} must have rank {rank} (got shape {tuple(t.shape)})")
        _need(all(s > 0 for s in t.shape), f"{name} must have no zero-size dimension (got shape {tuple(t.shape)})")


def _host_copies(torch, device_tensors, host_copies):
    """CPU copies of the int32 tables (block table, lengths, offsets) the C ABI validates.
    host_copies None: copied now (a device-to-host copy, so not allowed while a CUDA graph is being
    captured). Given (one CPU int32 tensor per table, equal to it): they stand in for the copies;
    outside capture they are compared with the device tables (IoattnError(2) when they differ), under
    capture they cannot be, and the caller vouches that they equal what the captured call reads."""
    if host_copies is None:
        return [t.cpu() for t in device_tensors]
    _need(isinstance(host_copies, (tuple, list)) and len(host_copies) == len(device_tensors),
          f"host_copies must be None or a tuple of {len(device_tensors)} CPU tensors")
    out = []
    for dev, h in zip(device_tensors, host_copies):
        _need(isinstance(h, torch.Tensor) and h.device.type == "cpu" and h.dtype == torch.int32
              and tuple(h.shape) == tuple(dev.shape),
              f"host_copies: each must be a CPU int32 tensor of its table's shape {tuple(dev.shape)}")
        h = h.contiguous()
        if not torch.cuda.is_current_stream_capturing():
            _need(torch.equal(h, dev.cpu()), "host_copies differ from the device tables they stand for")
        out.append(h)
    return out


def forward_paged(q, k_cache, v_cache, block_table, seqused_k, kernel="v07_decode_splitkv", causal=False,
                  window=(-1, -1), scale=None, splits=0, max_seqlen_k=None, out=None, lse=None, host_copies=None):
    """O, LSE of attention of dense queries q (B, Nq, Hq, d) over a paged KV cache.

    k_cache, v_cache: (num_pages, page_size, Hkv, d), q's dtype and device; block_table: int32
    (B, max_pages) on q's device, -1 (or any page) in slots a sequence does not use; seqused_k: int32
    (B,) on q's device. max_seqlen_k: None (the largest seqused_k, at least 1) or an int >= it (the
    kernel sizes its splits from it). Causal and windows are bottom-right aligned per sequence. The
    tables are validated on a host copy (every used slot a page, no page in two slots, lengths that
    fit): IoattnError(2) names the constraint. out, lse as in forward(). host_copies: None, or CPU
    copies (block_table, seqused_k) for calls under CUDA-graph capture (see _host_copies).
    """
    import torch

    _need(kernel is None or isinstance(kernel, str),
          f"kernel must be None or a str naming a registered variant (got {type(kernel).__name__})")
    _check_options(causal, window, scale)
    _check_tiles(0, 0, splits)
    _check_inputs(torch, (("q", q, 4), ("k_cache", k_cache, 4), ("v_cache", v_cache, 4)))
    _need(q.dtype == k_cache.dtype == v_cache.dtype,
          f"q, k_cache, v_cache must share one dtype (got {q.dtype}, {k_cache.dtype}, {v_cache.dtype})")
    _need(q.device == k_cache.device == v_cache.device, "q, k_cache, v_cache must be on one device")
    _need(k_cache.shape == v_cache.shape,
          f"k_cache and v_cache must have the same shape (got {tuple(k_cache.shape)}, {tuple(v_cache.shape)})")
    b, nq, hq, d = q.shape
    num_pages, page_size, hkv, _ = k_cache.shape
    _need(k_cache.shape[3] == d, f"head_dim of the cache ({k_cache.shape[3]}) must equal head_dim of q ({d})")
    _need(hq % hkv == 0, f"heads_q ({hq}) must be divisible by heads_kv ({hkv})")
    for name, t, rank in (("block_table", block_table, 2), ("seqused_k", seqused_k, 1)):
        _need(isinstance(t, torch.Tensor), f"{name} must be a torch.Tensor (got {type(t).__name__})")
        _need(t.dtype == torch.int32, f"{name}.dtype must be torch.int32 (got {t.dtype})")
        _need(t.device == q.device, f"{name} must be on q's device {q.device} (got {t.device})")
        _need(t.dim() == rank, f"{name} must have rank {rank} (got shape {tuple(t.shape)})")
    _need(block_table.shape[0] == b and block_table.shape[1] >= 1,
          f"block_table must have shape (batch = {b}, max_pages >= 1) (got {tuple(block_table.shape)})")
    _need(tuple(seqused_k.shape) == (b,), f"seqused_k must have shape ({b},) (got {tuple(seqused_k.shape)})")
    for name, t, shape, dtype in (("out", out, tuple(q.shape), q.dtype), ("lse", lse, (b, hq, nq), torch.float32)):
        if t is not None:
            _check_tensor(torch, name, t, shape, dtype, q.device, written=True, optional=True)
    lib = _load()
    _need(hasattr(lib, "ioattn_forward_paged"), "this libioattn_capi.so has no ioattn_forward_paged (rebuild it)")
    with torch.cuda.device(q.device):
        q, k_cache, v_cache = q.contiguous(), k_cache.contiguous(), v_cache.contiguous()
        block_table, seqused_k = block_table.contiguous(), seqused_k.contiguous()
        table_host, used_host = _host_copies(torch, (block_table, seqused_k), host_copies)  # validated by the C ABI
        if max_seqlen_k is None:
            max_seqlen_k = max(1, int(used_host.max()))
        _need(_is_int(max_seqlen_k) and 1 <= max_seqlen_k <= _INT32_MAX,
              f"max_seqlen_k must be None or an int >= 1 (got {max_seqlen_k!r})")
        if kernel is None:  # the measured paged decode cells, then the default (choose_forward_paged)
            kernel = choose_forward_paged(b, hq, hkv, nq, int(max_seqlen_k), d, _DTYPES[str(q.dtype)], page_size,
                                          causal, window)
        if out is None:
            out = torch.empty(tuple(q.shape), device=q.device, dtype=q.dtype)
        if lse is None:
            lse = torch.empty((b, hq, nq), device=q.device, dtype=torch.float32)
        _check_apart([("out", out), ("lse", lse)], [("q", q), ("k_cache", k_cache), ("v_cache", v_cache),
                                                    ("block_table", block_table), ("seqused_k", seqused_k)])
        stream = torch.cuda.current_stream(q.device).cuda_stream
        rc = lib.ioattn_forward_paged(kernel.encode(), b, hq, hkv, nq, int(max_seqlen_k), d,
                                      _DTYPES[str(q.dtype)].encode(), int(bool(causal)), int(window[0]),
                                      int(window[1]), 0.0 if scale is None else float(scale), 0, 0, int(splits),
                                      page_size, num_pages, block_table.shape[1], table_host.data_ptr(),
                                      used_host.data_ptr(), block_table.data_ptr(), seqused_k.data_ptr(),
                                      q.data_ptr(), k_cache.data_ptr(), v_cache.data_ptr(), out.data_ptr(),
                                      lse.data_ptr(), stream)
    if rc != 0:
        raise IoattnError(rc, _last_error(lib))
    return out, lse


def forward_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q=None, max_seqlen_k=None, kernel=None,
                   causal=False, window=(-1, -1), scale=None, out=None, lse=None, host_copies=None):
    """O, LSE of attention over packed (varlen) sequences.

    q: (total_q, Hq, d); k, v: (total_k, Hkv, d), q's dtype and device; cu_seqlens_q, cu_seqlens_k:
    int32 (B + 1,) on q's device, sequence b owning rows [cu[b], cu[b + 1]) (lengths may be 0; rows
    past cu[B] belong to no sequence and are not written). max_seqlen_q / max_seqlen_k: None (the
    longest length, at least 1) or an int >= it (kernels size their grids from it). Causal and
    windows are bottom-right aligned per sequence. The offsets are validated on a host copy
    (cu[0] = 0, non-decreasing, within the tensors): IoattnError(2) names the constraint. kernel:
    a variant that declares varlen, or None (v06_fa2_wgmma on compute capability 9.0, else
    v05_fa2_fast). out (like q) and lse (Hq, total_q) float32 as in forward(). host_copies: None, or
    CPU copies (cu_seqlens_q, cu_seqlens_k) for calls under CUDA-graph capture (see _host_copies).
    Returns (out, lse).
    """
    import torch

    _need(kernel is None or isinstance(kernel, str),
          f"kernel must be None or a str naming a registered variant (got {type(kernel).__name__})")
    _check_options(causal, window, scale)
    _check_inputs(torch, (("q", q, 3), ("k", k, 3), ("v", v, 3)))
    _need(q.dtype == k.dtype == v.dtype, f"q, k, v must share one dtype (got {q.dtype}, {k.dtype}, {v.dtype})")
    _need(q.device == k.device == v.device, "q, k, v must be on one device")
    _need(k.shape == v.shape, f"k and v must have the same shape (got {tuple(k.shape)}, {tuple(v.shape)})")
    total_q, hq, d = q.shape
    total_k, hkv, _ = k.shape
    _need(k.shape[2] == d, f"head_dim of k ({k.shape[2]}) must equal head_dim of q ({d})")
    _need(hq % hkv == 0, f"heads_q ({hq}) must be divisible by heads_kv ({hkv})")
    for name, t in (("cu_seqlens_q", cu_seqlens_q), ("cu_seqlens_k", cu_seqlens_k)):
        _need(isinstance(t, torch.Tensor), f"{name} must be a torch.Tensor (got {type(t).__name__})")
        _need(t.dtype == torch.int32, f"{name}.dtype must be torch.int32 (got {t.dtype})")
        _need(t.device == q.device, f"{name} must be on q's device {q.device} (got {t.device})")
        _need(t.dim() == 1 and t.shape[0] >= 2, f"{name} must have shape (batch + 1,), batch >= 1 (got {tuple(t.shape)})")
    _need(cu_seqlens_q.shape == cu_seqlens_k.shape,
          f"cu_seqlens_q and cu_seqlens_k must have one length, batch + 1 (got {cu_seqlens_q.shape[0]}, "
          f"{cu_seqlens_k.shape[0]})")
    b = cu_seqlens_q.shape[0] - 1
    for name, t, shape, dtype in (("out", out, tuple(q.shape), q.dtype), ("lse", lse, (hq, total_q), torch.float32)):
        if t is not None:
            _check_tensor(torch, name, t, shape, dtype, q.device, written=True, optional=True)
    lib = _load()
    _need(hasattr(lib, "ioattn_forward_varlen"), "this libioattn_capi.so has no ioattn_forward_varlen (rebuild it)")
    if kernel is None:
        kernel = "v06_fa2_wgmma" if torch.cuda.get_device_capability(q.device) == (9, 0) else "v05_fa2_fast"
    with torch.cuda.device(q.device):
        q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
        cu_seqlens_q, cu_seqlens_k = cu_seqlens_q.contiguous(), cu_seqlens_k.contiguous()
        cu_q_host, cu_k_host = _host_copies(torch, (cu_seqlens_q, cu_seqlens_k), host_copies)  # validated by the C ABI
        longest = []
        for name, host, given in (("max_seqlen_q", cu_q_host, max_seqlen_q), ("max_seqlen_k", cu_k_host, max_seqlen_k)):
            if given is None:
                given = max(1, int((host[1:] - host[:-1]).max()))
            _need(_is_int(given) and 1 <= given <= _INT32_MAX, f"{name} must be None or an int >= 1 (got {given!r})")
            longest.append(int(given))
        if out is None:
            out = torch.empty(tuple(q.shape), device=q.device, dtype=q.dtype)
        if lse is None:
            lse = torch.empty((hq, total_q), device=q.device, dtype=torch.float32)
        _check_apart([("out", out), ("lse", lse)], [("q", q), ("k", k), ("v", v), ("cu_seqlens_q", cu_seqlens_q),
                                                    ("cu_seqlens_k", cu_seqlens_k)])
        stream = torch.cuda.current_stream(q.device).cuda_stream
        rc = lib.ioattn_forward_varlen(kernel.encode(), b, hq, hkv, longest[0], longest[1], d,
                                       _DTYPES[str(q.dtype)].encode(), int(bool(causal)), int(window[0]),
                                       int(window[1]), 0.0 if scale is None else float(scale), 0, 0, total_q, total_k,
                                       cu_q_host.data_ptr(), cu_k_host.data_ptr(), cu_seqlens_q.data_ptr(),
                                       cu_seqlens_k.data_ptr(), q.data_ptr(), k.data_ptr(), v.data_ptr(),
                                       out.data_ptr(), lse.data_ptr(), stream)
    if rc != 0:
        raise IoattnError(rc, _last_error(lib))
    return out, lse


def backward(q, k, v, o, lse, d_o, kernel=DEFAULT_BACKWARD, causal=False, window=(-1, -1), scale=None, br=0, bc=0,
             dq=None, dk=None, dv=None):
    """dQ, dK, dV of attention for the forward (q, k, v -> o, lse) and the output gradient d_o.

    q, k, v as for forward(); o and d_o of q's shape and dtype, lse (B, Hq, Nq) float32 as forward
    wrote it (natural log, -inf for a fully masked row); causal, window and scale must be those of
    the forward. Inputs with other strides are copied to contiguous tensors first. dq (like q), dk
    and dv (like k), when given, must be contiguous on q's device and overlap no input nor each
    other: the kernel overwrites them and they are returned; otherwise they are allocated. dK, dV
    of a GQA/MQA key head are summed over the query heads of its group. br, bc: 0 = the kernel's
    default (bc: key rows per K/V block, br: query rows streamed past it).

    Asynchronous on torch's current CUDA stream of q's device. Raises IoattnError(2) naming the
    violated constraint (here or in the C ABI) and IoattnError(3) for a runtime error.
    """
    import torch

    _check_backward_args(torch, q, k, v, o, lse, d_o, kernel, causal, window, scale, br, bc, dq, dk, dv)
    lib = _load_backward()
    b, nq, hq, d = q.shape
    _, nk, hkv, _ = k.shape
    with torch.cuda.device(q.device):
        q, k, v, o, lse, d_o = (t.contiguous() for t in (q, k, v, o, lse, d_o))  # copies only if strided
        dq = torch.empty(tuple(q.shape), device=q.device, dtype=q.dtype) if dq is None else dq
        dk = torch.empty(tuple(k.shape), device=q.device, dtype=q.dtype) if dk is None else dk
        dv = torch.empty(tuple(v.shape), device=q.device, dtype=q.dtype) if dv is None else dv
        stream = torch.cuda.current_stream(q.device).cuda_stream
        rc = lib.ioattn_backward(kernel.encode(), b, hq, hkv, nq, nk, d, _DTYPES[str(q.dtype)].encode(),
                                 int(bool(causal)), int(window[0]), int(window[1]),
                                 0.0 if scale is None else float(scale), int(br), int(bc),
                                 q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(), lse.data_ptr(),
                                 d_o.data_ptr(), dq.data_ptr(), dk.data_ptr(), dv.data_ptr(), stream)
    if rc != 0:
        raise IoattnError(rc, _last_error(lib))
    return dq, dk, dv


# ---- the PyTorch autograd op ----------------------------------------------------------------------------

_ops_registered = False


def _compiling(torch):
    compiler = getattr(torch, "compiler", None)
    if compiler is not None and hasattr(compiler, "is_compiling"):
        return bool(compiler.is_compiling())
    dynamo = getattr(torch, "_dynamo", None)
    return bool(dynamo is not None and hasattr(dynamo, "is_compiling") and dynamo.is_compiling())


def register_ops():
    """Register torch.ops.ioattn.attention_forward / attention_backward (once; idempotent) and return
    the namespace torch.ops.ioattn. Needs torch >= 2.4 (torch.library.custom_op)."""
    global _ops_registered
    import torch

    if _ops_registered:
        return torch.ops.ioattn

    lib_api = getattr(torch, "library", None)
    if lib_api is None or not hasattr(lib_api, "custom_op") or not hasattr(lib_api, "register_fake"):
        raise IoattnError(2, f"ioattn.attention needs torch >= 2.4 (torch.library.custom_op); this is torch "
                             f"{torch.__version__}")
    if _compiling(torch):
        raise IoattnError(2, "ioattn's custom ops are registered on first use: call ioattn.register_ops() (or "
                             "ioattn.attention once eagerly) before torch.compile traces ioattn.attention")
    Tensor = torch.Tensor

    @torch.library.custom_op("ioattn::attention_forward", mutates_args=())
    def attention_forward(q: Tensor, k: Tensor, v: Tensor, causal: bool, window_left: int, window_right: int,
                          scale: float, kernel: str, backward_kernel: str) -> typing.Tuple[Tensor, Tensor]:
        window = (window_left, window_right)
        sc = scale if scale > 0 else None
        _check_forward_args(torch, q, k, v, kernel or "auto", causal, window, sc, 0, 0, 0, None, None)

        def run(name):
            return forward(q, k, v, kernel=name, causal=causal, window=window, scale=sc)

        return run(kernel) if kernel else _run_auto("fwd", q, k, causal, window, run)

    @attention_forward.register_fake
    def _(q, k, v, causal, window_left, window_right, scale, kernel, backward_kernel):
        b, nq, hq = q.shape[0], q.shape[1], q.shape[2]
        return q.new_empty(tuple(q.shape)), q.new_empty((b, hq, nq), dtype=torch.float32)

    @torch.library.custom_op("ioattn::attention_backward", mutates_args=())
    def attention_backward(d_o: Tensor, q: Tensor, k: Tensor, v: Tensor, o: Tensor, lse: Tensor, causal: bool,
                           window_left: int, window_right: int, scale: float,
                           kernel: str) -> typing.Tuple[Tensor, Tensor, Tensor]:
        window = (window_left, window_right)
        sc = scale if scale > 0 else None
        _check_backward_args(torch, q, k, v, o, lse, d_o, kernel or "auto", causal, window, sc, 0, 0, None, None,
                             None)

        def run(name):
            return backward(q, k, v, o, lse, d_o, kernel=name, causal=causal, window=window, scale=sc)

        return run(kernel) if kernel else _run_auto("bwd", q, k, causal, window, run)

    @attention_backward.register_fake
    def _(d_o, q, k, v, o, lse, causal, window_left, window_right, scale, kernel):
        return q.new_empty(tuple(q.shape)), k.new_empty(tuple(k.shape)), v.new_empty(tuple(v.shape))

    def setup_context(ctx, inputs, output):
        q, k, v, causal, window_left, window_right, scale, _, backward_kernel = inputs
        o, lse = output
        ctx.save_for_backward(q, k, v, o, lse)
        ctx.mark_non_differentiable(lse)
        ctx.ioattn_args = (causal, window_left, window_right, scale, backward_kernel)

    def backward_fn(ctx, grad_o, grad_lse):  # grad_lse: none flows (lse is non-differentiable)
        q, k, v, o, lse = ctx.saved_tensors
        causal, window_left, window_right, scale, backward_kernel = ctx.ioattn_args
        dq, dk, dv = torch.ops.ioattn.attention_backward(grad_o, q, k, v, o, lse, causal, window_left,
                                                         window_right, scale, backward_kernel)
        return dq, dk, dv, None, None, None, None, None, None

    attention_forward.register_autograd(backward_fn, setup_context=setup_context)
    _ops_registered = True
    return torch.ops.ioattn


def _kernel_pair(kernel):
    if kernel is None:
        return "", ""
    if isinstance(kernel, str):
        return kernel, ""
    if (isinstance(kernel, (tuple, list)) and len(kernel) == 2
            and all(x is None or isinstance(x, str) for x in kernel)):
        return kernel[0] or "", kernel[1] or ""
    raise IoattnError(2, f"kernel must be None, a forward variant's name, or a pair (forward or None, backward or "
                         f"None) (got {kernel!r})")


def attention(q, k, v, causal=False, window=(-1, -1), scale=None, kernel=None, q_descale=None, k_descale=None,
              v_descale=None, out_dtype=None):
    """Attention O (like q) of BSHD tensors q (B, Nq, Hq, d), k and v (B, Nk, Hkv, d), differentiable
    in q, k and v through an ioattn backward (torch.autograd, torch.compile).

    causal: bottom-right aligned; window: (left, right), -1 = unbounded; scale: None = 1/sqrt(d).
    kernel: None chooses the forward and the backward for the problem (module docstring); a str
    names the forward variant (the backward is chosen); a pair (forward or None, backward or None)
    names either. The tensor constraints are those of forward() and backward(): IoattnError(2)
    naming the constraint, raised when the op runs (under torch.compile: when the compiled code runs).

    FP8 (torch.float8_e4m3fn q, k, v, with q_descale, k_descale, v_descale, out_dtype as in
    forward()): forward only, no autograd op: q, k, v must not require grad (refused with
    IoattnError(2)), a backward kernel cannot be named, and the result is forward()'s O.
    """
    import torch

    fwd_kernel, bwd_kernel = _kernel_pair(kernel)
    _check_options(causal, window, scale)
    fp8 = _fp8_args(torch, q, k, q_descale, k_descale, v_descale, out_dtype)
    if fp8 is not None:
        for name, t in (("q", q), ("k", k), ("v", v)):
            _need(isinstance(t, torch.Tensor) and not t.requires_grad,
                  f"{name}: FP8 attention is forward only (no FP8 backward): q, k, v must not require grad")
        _need(not bwd_kernel, f"FP8 attention is forward only: no backward kernel can be named (got {bwd_kernel!r})")
        return forward(q, k, v, kernel=fwd_kernel or None, causal=causal, window=window, scale=scale,
                       q_descale=q_descale, k_descale=k_descale, v_descale=v_descale, out_dtype=out_dtype)[0]
    if not _ops_registered:
        register_ops()
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor):
            raise IoattnError(2, f"{name} must be a torch.Tensor (got {type(t).__name__})")
    # Contiguous before the op, so autograd saves the tensors the kernels read (no second copy).
    q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
    o, _ = torch.ops.ioattn.attention_forward(q, k, v, bool(causal), int(window[0]), int(window[1]),
                                              0.0 if scale is None else float(scale), fwd_kernel, bwd_kernel)
    return o

"""experiments/gpu/test_bench_sdpa.py: bench_sdpa.py's bookkeeping without a GPU (ctest bench_sdpa_cpu).

    python3 experiments/gpu/test_bench_sdpa.py

A stand-in `torch` (tensors that carry a shape and nothing else, SDPA that records its calls and
refuses what a backend would) and a stand-in `ioattn` (registry answers, forward calls recorded)
replace the real ones; timing.time_call is replaced by one call of the function (the times are
test inputs, not measurements). Checks, on the bench.csv bench_sdpa.py writes:
  - the older columns come first, in their order; heads_kv is appended;
  - --heads-kv: k and v get Hkv heads, the registry and the ioattn calls get (Hq, Hkv), SDPA gets
    enable_gqa=True; an MHA run passes no enable_gqa and has heads_kv = heads;
  - --head-dims 128,256: a variant the registry refuses at d = 256 and SDPA's "No available kernel"
    are `refused` rows with their reason; the Triton peer without triton is a `refused` row;
  - --preset heldout: its 40 rows per sample, each config with only its impls, batch = 16384 // N
    (at least 1), bf16, both causal settings; grid flags beside it are refused with one line;
  - the Triton peer (a stand-in module): its autotuning call comes before timing.py's, its rows
    carry the chosen config;
  - --list runs without torch;
  - FP8 (--dtypes fp8_e4m3): the configs' bf16 inputs are drawn as the bf16 run's (same seed, same
    draws) and quantized per tensor by ioattn.quantize_fp8; v09 runs on the codes with their
    descales and a preallocated bf16 O; the best bf16 ioattn forward is v08 where registered and
    accepted, else v06; SDPA cuDNN bf16 beside them; the SDPA FP8 probe's answer is in the context
    and only a backend that passed it gets `_fp8` rows; every row of an FP8 config has the slice
    error columns (the dequantized reference only on FP8 rows), study fp8, the FP8 columns after
    heads_kv; --dtypes fp8_e4m3 with a backward pass and an unknown dtype are refused with one
    line; fp8_table()'s ratios on synthetic rows.
Exit 0 when every check passes, 1 otherwise.
"""
import contextlib
import importlib.util
import csv
import io
import math
import os
import subprocess
import sys
import tempfile
import types

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

OLD_COLS = ["impl", "study", "pass", "dtype", "head_dim", "causal", "seqlen", "batch", "heads", "sample", "status",
            "ms", "ms_min", "ms_max", "reps", "timing", "flush_l2", "tflops", "br", "bc", "stages", "threads",
            "smem_bytes", "ctas_per_sm", "grid_x", "grid_y", "grid_z", "grid_order", "launches", "splits",
            "forward_kernel", "peak_extra_mib", "max_abs_diff_vs_flash", "limit", "error"]
CALLS = {"sdpa": [], "config": [], "forward": [], "randn": [], "seed": [], "quantize": []}


class T:
    """A tensor stand-in: a shape and a dtype."""

    def __init__(self, shape, dtype="bf16"):
        self.shape, self.dtype = tuple(shape), dtype
        self.nbytes = math.prod(self.shape) * 2
        self.device = "cuda"

    def transpose(self, a, b):
        s = list(self.shape)
        s[a], s[b] = s[b], s[a]
        return T(s, self.dtype)

    def element_size(self):
        return 2

    def float(self):
        return self

    def __sub__(self, other):
        return self

    def abs(self):
        return self

    def max(self):
        return types.SimpleNamespace(item=lambda: 0.0)

    def detach(self):
        return self

    def requires_grad_(self, flag=True):
        return self

    def to(self, dtype):
        return T(self.shape, dtype)


def fake_torch():
    torch = types.ModuleType("torch")
    torch.__path__ = []
    torch.bfloat16, torch.float16, torch.float32 = "bf16", "fp16", "fp32"
    torch.float8_e4m3fn = "fp8"
    torch.Tensor = T

    def randn(*shape, device=None, dtype=None):
        CALLS["randn"].append((shape, dtype))
        return T(shape, dtype)
    torch.randn = randn
    torch.empty_like = lambda t: T(t.shape, t.dtype)
    torch.empty = lambda shape, device=None, dtype=None: T(shape, dtype)
    torch.manual_seed = lambda s: CALLS["seed"].append(s)
    torch.cuda = types.SimpleNamespace(is_available=lambda: True, synchronize=lambda: None,
                                       memory_allocated=lambda: 0, reset_peak_memory_stats=lambda: None,
                                       max_memory_allocated=lambda: 0, mem_get_info=lambda: (80 << 30, 80 << 30),
                                       empty_cache=lambda: None)
    nn = types.ModuleType("torch.nn")
    nn.__path__ = []
    functional = types.ModuleType("torch.nn.functional")
    attention = types.ModuleType("torch.nn.attention")
    attention.SDPBackend = types.SimpleNamespace(MATH="math", FLASH_ATTENTION="flash", CUDNN_ATTENTION="cudnn")
    current = []

    @contextlib.contextmanager
    def sdpa_kernel(backend):
        current.append(backend)
        yield
        current.pop()

    def sdpa(q, k, v, is_causal=False, enable_gqa=False, scale=None):
        CALLS["sdpa"].append(dict(backend=current[-1], q=q.shape, k=k.shape, gqa=enable_gqa, dtype=q.dtype,
                                  scale=scale))
        if k.shape[1] != q.shape[1] and not enable_gqa:
            raise RuntimeError("The size of tensor a must match the size of tensor b")
        if q.dtype == "fp8" and current[-1] != FP8_SDPA_BACKEND[0]:
            raise RuntimeError("No available kernel. Aborting execution.")
        if current[-1] == "cudnn" and q.shape[-1] == 256:
            raise RuntimeError("No available kernel. Aborting execution.")
        return T(q.shape, q.dtype)

    attention.sdpa_kernel = sdpa_kernel
    functional.scaled_dot_product_attention = sdpa
    torch.nn, nn.functional, nn.attention = nn, functional, attention
    sys.modules.update({"torch": torch, "torch.nn": nn, "torch.nn.functional": functional,
                        "torch.nn.attention": attention})


class IoattnError(RuntimeError):
    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


def fake_ioattn():
    m = types.ModuleType("ioattn")
    m.IoattnError = IoattnError
    m.kernels = lambda: {"v05_fa2_fast": {}, "v06_fa2_wgmma": {}}

    def kernel_config(name, b, hq, hkv, nq, nk, d, dtype, **kw):
        CALLS["config"].append((name, b, hq, hkv, nq, d))
        if name == "v06_fa2_wgmma" and d == 256:
            raise IoattnError(2, "v06_fa2_wgmma: head_dim 256 is not supported (64, 128)")
        return dict(br=128, bc=64, stages=2, threads=128, grid_x=nq // 128, grid_y=b * hq, grid_z=1, launches=1)

    def forward(q, k, v, kernel="", causal=False, out=None, lse=None, **fp8):
        CALLS["forward"].append((kernel, q.shape, k.shape))
        CALLS.setdefault("forward_fp8", []).append(dict(kernel=kernel, q=q.dtype, k=k.dtype, v=v.dtype,
                                                        out=None if out is None else out.dtype, **fp8))
        return out, lse

    m.kernel_config = kernel_config
    m.workspace_bytes = lambda *a, **k: 0
    m.forward = forward
    m.release_workspace = lambda: None
    return m


FP8_SDPA_BACKEND = ["none"]  # the SDPA backend the stand-in lets take float8 inputs ("none": no backend)


def read(out):
    with open(os.path.join(out, "bench.csv"), newline="") as f:
        r = csv.DictReader(f)
        return r.fieldnames, list(r)


def main():
    bad = []

    def expect(ok, what):
        print(("PASS: " if ok else "FAIL: ") + what)
        if not ok:
            bad.append(what)

    sys.modules["ioattn"] = fake_ioattn()
    import bench_sdpa
    import timing
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = bench_sdpa.main(["--list", "--preset", "heldout"])
    expect(rc == 0 and "torch" not in sys.modules and len(buf.getvalue().splitlines()) == 7,
           "--list --preset heldout runs without torch (6 configs and a total)")

    have_triton = importlib.util.find_spec("triton") is not None  # then its real import is not mixed with the stand-in
    fake_torch()

    def time_call(fn, first_call=None, **kw):
        out = fn()
        if first_call:
            first_call(out)
        return dict(median_ms=1.0, min_ms=1.0, max_ms=1.0, n=3, method="stand-in", flush_l2=False, check="")
    timing.time_call, timing.prepare = time_call, lambda *a: None
    timing.run_context = lambda **kw: dict(kw)

    tmp = tempfile.mkdtemp()
    out = os.path.join(tmp, "gqa")
    with contextlib.redirect_stdout(io.StringIO()):
        rc = bench_sdpa.main(["--out", out, "--head-dims", "128,256", "--seqlens", "1024", "--dtypes", "bf16",
                              "--heads-kv", "4", "--samples", "1", "--peers",
                              "sdpa:flash,sdpa:cudnn" + ("" if have_triton else ",peer:triton_fa2")])
    header, rows = read(out)
    expect(rc == 0 and header[:len(OLD_COLS)] == OLD_COLS and header[len(OLD_COLS)] == "heads_kv",
           "the older columns first, in order; heads_kv appended")
    expect(len(rows) == 2 * 2 * (4 if have_triton else 5) and all(r["heads_kv"] == "4" for r in rows)
           and {r["heads"] for r in rows} == {"16", "8"}, "every row has heads_kv 4; heads 2048 / d")
    expect(all(c[3] == 4 for c in CALLS["config"]) and all(f[2][2] == 4 and f[1][2] in (16, 8) for f in CALLS["forward"]),
           "the registry and ioattn.forward see (Hq, Hkv = 4)")
    expect(CALLS["sdpa"] and all(c["gqa"] and c["k"][1] == 4 for c in CALLS["sdpa"]),
           "SDPA gets the BHSD views with Hkv heads and enable_gqa=True")
    st = {(r["impl"], r["head_dim"]): (r["status"], r["error"]) for r in rows}
    expect(st[("ioattn:v06_fa2_wgmma", "256")][0] == "refused" and "head_dim 256" in st[("ioattn:v06_fa2_wgmma", "256")][1],
           "a variant refusing d = 256 is a refused row with the registry's reason")
    expect(st[("sdpa:cudnn", "256")][0] == "refused" and "No available kernel" in st[("sdpa:cudnn", "256")][1],
           "SDPA's 'No available kernel' is a refused row")
    expect(st[("ioattn:v05_fa2_fast", "256")][0] == "ok" and st[("sdpa:flash", "256")][0] == "ok",
           "the rest ran")
    if have_triton:
        print("skip: triton is installed here, the refusal without it is not checked")
    else:
        tr = [r for r in rows if r["impl"] == "peer:triton_fa2"]
        expect(len(tr) == 4 and all(r["status"] == "refused" and "triton is not installed" in r["error"] for r in tr),
               "the Triton peer without triton: refused rows")

    CALLS["sdpa"].clear()
    out = os.path.join(tmp, "mha")
    with contextlib.redirect_stdout(io.StringIO()):
        rc = bench_sdpa.main(["--out", out, "--quick", "--seqlens", "2048", "--samples", "1"])
    header, rows = read(out)
    expect(rc == 0 and all(r["heads_kv"] == r["heads"] == "16" for r in rows)
           and {r["impl"] for r in rows} == {"sdpa:flash", "sdpa:cudnn", "ioattn:v05_fa2_fast", "ioattn:v06_fa2_wgmma"}
           and not any(c["gqa"] for c in CALLS["sdpa"]), "MHA: heads_kv = heads, no enable_gqa, the default peers")

    peer_calls = []
    fake_peer = types.ModuleType("triton_fa2")
    fake_peer.available = lambda: ""
    fake_peer.tuned_config = lambda d: (128, 64, 3, 8)

    def peer_forward(q, k, v, causal=False, out=None, lse=None):
        peer_calls.append((causal, out is not None and lse is not None))
        return out, lse
    fake_peer.forward = peer_forward
    real_peer = sys.modules.pop("triton_fa2", None)
    sys.modules["triton_fa2"] = fake_peer
    out = os.path.join(tmp, "peer")
    with contextlib.redirect_stdout(io.StringIO()):
        rc = bench_sdpa.main(["--out", out, "--quick", "--seqlens", "1024", "--samples", "1", "--variants",
                              "v05_fa2_fast", "--peers", "peer:triton_fa2"])
    header, rows = read(out)
    tr = [r for r in rows if r["impl"] == "peer:triton_fa2"]
    expect(rc == 0 and len(rows) == 4 and len(tr) == 2 and all(
        r["status"] == "ok" and (r["br"], r["bc"], r["stages"], r["threads"], r["grid_x"], r["grid_y"]) ==
        ("128", "64", "3", "256", "8", "256") for r in tr), "the Triton peer's rows carry the autotuner's config")
    expect(peer_calls == [(False, True)] * 2 + [(True, True)] * 2,
           "the peer: one untimed (autotuning) call, then timing.py's, outputs preallocated, per causal setting")
    sys.modules.pop("triton_fa2")
    if real_peer is not None:
        sys.modules["triton_fa2"] = real_peer

    out = os.path.join(tmp, "heldout")
    sys.modules["ioattn"].kernels = lambda: {"v05_fa2_fast": {}, "v06_fa2_wgmma": {}, "v08_fa3_warpspec": {}}
    with contextlib.redirect_stdout(io.StringIO()):
        rc = bench_sdpa.main(["--out", out, "--preset", "heldout", "--samples", "1"])
    header, rows = read(out)
    by = {}
    for r in rows:
        by.setdefault((r["head_dim"], r["seqlen"], r["batch"], r["heads"], r["heads_kv"]), set()).add(
            (r["impl"], r["causal"]))
    v08 = "ioattn:v08_fa3_warpspec"
    want = {("256", "2048", "8", "8", "8"): ["sdpa:flash", "ioattn:v05_fa2_fast", v08],
            ("256", "8192", "2", "8", "8"): ["sdpa:flash", "ioattn:v05_fa2_fast", v08],
            ("128", "4096", "4", "32", "8"): ["sdpa:flash", "ioattn:v05_fa2_fast", "ioattn:v06_fa2_wgmma", v08],
            ("128", "16384", "1", "32", "8"): ["sdpa:flash", "ioattn:v05_fa2_fast", "ioattn:v06_fa2_wgmma", v08],
            ("128", "32768", "1", "16", "16"): ["sdpa:flash", "ioattn:v06_fa2_wgmma", v08],
            ("128", "65536", "1", "16", "16"): ["sdpa:flash", "ioattn:v06_fa2_wgmma", v08]}
    want = {k: {(i, c) for i in v for c in ("0", "1")} for k, v in want.items()}
    expect(rc == 0 and len(rows) == 40 and by == want and all(r["dtype"] == "bf16" and r["status"] == "ok" for r in rows),
           "--preset heldout: 40 rows, each config with its impls, batch max(1, 16384 // N), bf16, causal 0 and 1")
    for argv, what in ((["--preset", "heldout", "--head-dims", "64"], "--head-dims"),
                       (["--heads", "16", "--heads-kv", "5"], "--heads-kv"), (["--peers", "sdpa:nope"], "unknown peer")):
        try:
            bench_sdpa.main(["--list"] + argv)
            expect(False, f"{what} is refused")
        except SystemExit as e:
            msg = str(e.code)
            expect(msg.startswith("bench_sdpa.py: ") and "\n" not in msg and what in msg, f"{what} is refused: {msg}")
    check_fp8(expect, bench_sdpa, tmp)
    subprocess.run(["rm", "-rf", tmp], check=False)
    return 1 if bad else 0


def check_fp8(expect, bench_sdpa, tmp):
    """--dtypes fp8_e4m3 (the module docstring's FP8 checks), with the stand-ins of main()."""
    import json
    fake = bench_sdpa.ioattn
    descale = {"q": 0.5, "k": 0.25, "v": 0.125}

    def quantize_fp8(x, granularity="tensor", heads_kv=None):
        CALLS["quantize"].append((x, granularity, heads_kv))
        which = "qkv"[len(CALLS["quantize"]) % 3 - 1]  # called for q, k, v in that order
        return T(x.shape, "fp8"), descale[which]
    fake.quantize_fp8 = quantize_fp8
    refs = []
    bench_sdpa.slice_reference = lambda q, k, v, causal, heads=2, descales=(1.0, 1.0, 1.0): (
        refs.append((q.dtype, causal, tuple(descales))) or ("ref", q.dtype))
    bench_sdpa.slice_errors = lambda x, ref, ref_dequant=None, out_scale=1.0: dict(
        slice_max_abs_err=1e-3 if x.dtype == "bf16" else 2e-3, slice_rel_l2_err=1e-4, error_slice="slice",
        **({"slice_max_abs_err_dequant": out_scale} if ref_dequant is not None else {}))

    # The bf16 run's draws, to compare with the FP8 run's.
    for key in ("randn", "seed", "quantize", "forward_fp8", "sdpa"):
        CALLS[key] = []
    with contextlib.redirect_stdout(io.StringIO()):
        bench_sdpa.main(["--out", os.path.join(tmp, "bf16"), "--head-dims", "128,256", "--seqlens", "1024",
                         "--dtypes", "bf16", "--samples", "1", "--variants", "v05_fa2_fast"])
    bf16_draws = (list(CALLS["seed"]), list(CALLS["randn"]))

    for backend, registry in (("none", {"v05_fa2_fast": {}, "v06_fa2_wgmma": {}, "v09_fp8_wgmma": {}}),
                              ("cudnn", {"v06_fa2_wgmma": {}, "v08_fa3_warpspec": {}, "v09_fp8_wgmma": {}})):
        FP8_SDPA_BACKEND[0] = backend
        fake.kernels = lambda registry=registry: registry
        real_config = fake.kernel_config

        def kernel_config(name, b, hq, hkv, nq, nk, d, dtype, real_config=real_config, **kw):
            if name == "v08_fa3_warpspec" and d == 256:
                raise IoattnError(2, "v08_fa3_warpspec: head_dim 256 refused (stand-in)")
            return real_config(name, b, hq, hkv, nq, nk, d, dtype, **kw)
        fake.kernel_config = kernel_config
        for key in ("randn", "seed", "quantize", "forward_fp8", "sdpa"):
            CALLS[key] = []
        refs.clear()
        out = os.path.join(tmp, "fp8_" + backend)
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            rc = bench_sdpa.main(["--out", out, "--head-dims", "128,256", "--seqlens", "1024", "--dtypes", "fp8_e4m3",
                                  "--samples", "1"])
        fake.kernel_config = real_config
        header, rows = read(out)
        with open(os.path.join(out, "bench.json")) as f:
            ctx = json.load(f)["context"]
        tag = f"(SDPA FP8 backend: {backend})"
        expect(rc == 0 and header[:len(OLD_COLS) + 1] == OLD_COLS + ["heads_kv"]
               and header[len(OLD_COLS) + 1:] == bench_sdpa.FP8_COLS, f"FP8 columns after heads_kv {tag}")
        probe_draw = [r for r in CALLS["randn"] if r[0] == (1, 2, 128, 64)]  # the SDPA FP8 probe's, before any seed
        expect(len(probe_draw) == 1 and (list(CALLS["seed"]), [r for r in CALLS["randn"] if r not in probe_draw])
               == bf16_draws,
               f"the FP8 configs draw the bf16 run's inputs (same seeds, shapes, bf16) {tag}")
        expect(len(CALLS["quantize"]) == 6 and all(g == "tensor" and x.dtype == "bf16"
                                                   for x, g, _ in CALLS["quantize"]),
               f"q, k, v of each config quantized per tensor from the bf16 inputs {tag}")
        best = {"none": {"128": "ioattn:v06_fa2_wgmma", "256": "ioattn:v06_fa2_wgmma"},
                "cudnn": {"128": "ioattn:v08_fa3_warpspec", "256": "ioattn:v06_fa2_wgmma"}}[backend]
        for d in ("128", "256"):
            impls = sorted((r["impl"], r["dtype"]) for r in rows if r["head_dim"] == d and r["causal"] == "0")
            want = sorted([("ioattn:v09_fp8_wgmma", "fp8_e4m3"), (best[d], "bf16"), ("sdpa:cudnn", "bf16")]
                          + ([("sdpa:cudnn_fp8", "fp8_e4m3")] if backend == "cudnn" else []))
            expect(impls == want, f"d={d}: v09 fp8, {best[d]} bf16 (v08 where accepted, else v06), cuDNN bf16"
                                  f"{', cuDNN fp8' if backend == 'cudnn' else ''} {tag}: {impls}")
        ok = [r for r in rows if r["status"] == "ok"]
        expect(all(r["study"] == "fp8" for r in rows) and all(r["slice_max_abs_err"] and r["error_slice"] for r in ok)
               and {(r["impl"], r["head_dim"]) for r in rows if r["status"] != "ok"} ==
               {(best["256"], "256"), ("sdpa:cudnn", "256")} | ({("sdpa:cudnn_fp8", "256")} if backend == "cudnn" else set())
               and all(r["status"] == "refused" and r["error"] for r in rows if r["status"] != "ok"),
               f"every FP8-config row: study fp8; slice errors where it ran; the stand-ins' d = 256 refusals are "
               f"refused rows with their reason {tag}")
        fp8_rows = [r for r in ok if r["dtype"] == "fp8_e4m3"]
        expect(fp8_rows and all(r["slice_max_abs_err_dequant"] != "" for r in fp8_rows)
               and all(r["slice_max_abs_err_dequant"] == "" and r["fp8_descales"] == "" for r in rows
                       if r["dtype"] == "bf16"), f"the dequantized reference's error on FP8 rows only {tag}")
        v09 = [r for r in rows if r["impl"] == "ioattn:v09_fp8_wgmma"]
        expect(len(v09) == 4 and all(r["fp8_descales"] == "q=0.5;k=0.25;v=0.125" for r in v09),
               f"v09 rows carry the per-tensor descales {tag}")
        calls = [c for c in CALLS["forward_fp8"] if c["kernel"] == "v09_fp8_wgmma"]
        expect(calls and all(c["q"] == c["k"] == c["v"] == "fp8" and c["out"] == "bf16" and c["out_dtype"] == "bf16"
                             and (c["q_descale"], c["k_descale"], c["v_descale"]) == (0.5, 0.25, 0.125)
                             for c in calls), f"ioattn.forward gets the codes, descales, a bf16 O {tag}")
        expect(("fp8", False, (0.5, 0.25, 0.125)) in refs and ("bf16", True, (1.0, 1.0, 1.0)) in refs,
               f"float64 references of the bf16 values and of the dequantized codes, per causal {tag}")
        probe = ctx.get("sdpa_fp8", {})
        expect(isinstance(probe, dict) and set(probe) == {"sdpa:flash", "sdpa:cudnn"}
               and (probe["sdpa:cudnn"] == "ok") == (backend == "cudnn") and probe["sdpa:flash"] != "ok",
               f"the SDPA FP8 probe's answer is in the context: {probe} {tag}")
        if backend == "cudnn":
            c8 = [r for r in ok if r["impl"] == "sdpa:cudnn_fp8"]
            fp8_calls = [c for c in CALLS["sdpa"] if c["dtype"] == "fp8" and c["q"][2] == 1024]
            expect(len(c8) == 2 and all(r["slice_max_abs_err_dequant"] == "0.125" for r in c8) and fp8_calls
                   and all(abs(c["scale"] - 0.5 * 0.25 / math.sqrt(c["q"][3])) < 1e-12 for c in fp8_calls),
                   "an SDPA FP8 backend: scale * q_descale * k_descale, O times v_descale in the error")
        text = buf.getvalue()
        expect("fp8 summary" in text and sum(1 for line in text.splitlines() if line.startswith(" 128 ")) == 2,
               f"the run ends with the FP8 table, one line per (d, causal, N) {tag}")
    FP8_SDPA_BACKEND[0] = "none"

    for argv, what in ((["--dtypes", "fp8_e4m3", "--passes", "fwd,bwd"], "forward only"),):
        try:
            bench_sdpa.main(["--list"] + argv)
            expect(False, "--dtypes fp8_e4m3 with a backward pass is refused")
        except SystemExit as e:
            msg = str(e.code)
            expect(msg.startswith("bench_sdpa.py: ") and "\n" not in msg and what in msg, f"{what}: {msg}")
    with contextlib.redirect_stderr(io.StringIO()):
        try:
            bench_sdpa.main(["--list", "--dtypes", "fp8_e5m2"])
            expect(False, "--dtypes fp8_e5m2 is refused")
        except SystemExit as e:
            expect(e.code == 2, "--dtypes fp8_e5m2 is refused (argparse error)")

    def row(impl, d, causal, tf, err):
        return dict(study="fp8", status="ok", impl=impl, head_dim=str(d), causal=str(causal), seqlen="4096",
                    tflops=str(tf), slice_max_abs_err=str(err))
    synth = [row("ioattn:v09_fp8_wgmma", 128, 0, 900, 4e-3), row("ioattn:v09_fp8_wgmma", 128, 0, 1100, 5e-3),
             row("ioattn:v08_fa3_warpspec", 128, 0, 500, 1e-3), row("sdpa:cudnn", 128, 0, 400, 2e-3),
             dict(row("sdpa:cudnn", 128, 1, 400, 2e-3), status="refused"), row("sdpa:flash", 128, 0, 1, 1)]
    lines = bench_sdpa.fp8_table(synth)
    cells = lines[2].split() if len(lines) == 3 else []
    expect(cells[:11] == ["128", "0", "4096", "1000.0", "500.0", "400.0", "2.00", "2.50", "5.00e-03", "1.00e-03",
                          "2.00e-03"] and cells[11:] == ["ioattn:v08_fa3_warpspec"],
           f"fp8_table: sample means, ratios to bf16 and cuDNN, worst slice errors; refused rows and other impls "
           f"left out: {lines[2:] if len(lines) > 2 else lines}")


if __name__ == "__main__":
    sys.exit(main())

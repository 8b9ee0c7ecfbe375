"""python/test_ring.py: ring and Ulysses context-parallel attention with ioattn's kernels, P simulated
ranks on one GPU, against single-GPU ioattn and a float64 reference, under the project's error rule.

    IOATTN_CAPI=build-gpu/kernels/libioattn_capi.so python3 python/test_ring.py [--quick]

Needs torch and a CUDA GPU; without either it prints "SKIPPED: ..." and exits 77. One line per
case; the last line is "N passed, M failed"; exit 0 when none failed, else 1.

The ranks are python/ring_attention.py's rank programs run in lockstep in this process
(run_simulated: the ring as a loop; the same programs run_distributed drives over NCCL), each
block on ioattn's kernels (ioattn_block_fns: the forward and backward ioattn.attention would
choose for the block's shape). Per case: O and LSE of the forward, dQ, dK, dV of the backward
(output gradient drawn like the inputs).

Truth and baseline (include/ioattn/tolerance.hpp, as python/test_autograd.py):
  truth     the dense softmax in float64 on the same input values upcast (ring_attention's
            dense_block_fns over the whole sequence, mask on global positions);
  baseline  single-GPU ioattn on the whole sequence in the case's dtype (the kernels the ring's
            blocks use, chosen for the whole shape);
  rule      max|ring - ref64| <= factor * max|baseline - ref64| + 8 u max(1, max|ref64|),
            factor 2 for O and 3 for dQ, dK, dV, u = 2^-11 (fp16), 2^-8 (bf16); LSE (fp32 in
            both): factor 2 and floor 64 * 2^-24 max(1, max|ref64|). NaN never passes.
The line also gives max|ring - baseline| (not judged).

Cases: P in 1, 2, 4, 8; contiguous and zigzag; causal and not; shapes with odd N (1001, 777),
GQA 4/2 and MQA 4/1, d 64 and 128, batch 1 and 2; bf16 (fp16 on one shape); Ulysses where the
heads divide by P. --quick: the first shape, P in 1, 4. Then one process group of world size 1
(NCCL, a file store) runs ring_attention (torch.autograd over run_distributed) and Ulysses through
torch.distributed (P = 1: the dispatch, the autograd wrapper and all_to_all; no point-to-point
transfer happens with one rank).

Several GPUs (not run yet: no machine with several GPUs has been lent):
    torchrun --nproc-per-node P python/test_ring.py
With WORLD_SIZE > 1 each process takes GPU LOCAL_RANK, joins an NCCL group, and runs the
distributed path instead (ring_attention's autograd and Ulysses over NCCL, the same seeded inputs
sharded by layout); rank 0 gathers the rows, puts them in global order and judges them by the same
rule against single-GPU ioattn and float64 on its GPU. Every rank exits with rank 0's code.
"""
import math
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ioattn  # noqa: E402
import ring_attention as ra  # noqa: E402

torch = None
passed = failed = 0
U = {"fp16": 2.0 ** -11, "bf16": 2.0 ** -8}
U32 = 2.0 ** -24
QUICK = "--quick" in sys.argv[1:]

# (name, batch, seqlen, heads_q, heads_kv, head_dim, dtype)
SHAPES = [
    ("odd N 1001, GQA 4/2, d 64", 1, 1001, 4, 2, 64, "bf16"),
    ("N 1024, batch 2, d 128", 2, 1024, 4, 4, 128, "bf16"),
    ("odd N 777, MQA 4/1, d 128", 1, 777, 4, 1, 128, "bf16"),
    ("N 515, d 64, fp16", 1, 515, 4, 4, 64, "fp16"),
]
RANKS = (1, 4) if QUICK else (1, 2, 4, 8)


def report(ok, name, detail=""):
    global passed, failed
    passed, failed = passed + bool(ok), failed + (not ok)
    print(f"{'ok  ' if ok else 'FAIL'} {name}{': ' + detail if detail else ''}", flush=True)


def max_err(x, ref):
    if bool(torch.isnan(x).any()):
        return math.inf
    return (x.double() - ref).abs().max().item()


def judge(ours, base, ref, dname):
    ok, parts = True, []
    for label, a, bl, r, factor in zip(("O", "LSE", "dQ", "dK", "dV"), ours, base, ref, (2, 2, 3, 3, 3)):
        if a is None:
            continue
        e, eb = max_err(a, r), max_err(bl, r)
        note = ""
        if not math.isfinite(eb):
            eb, note = 0.0, " (baseline non-finite: floor only)"
        scale_ref = max(1.0, r.abs().max().item())
        floor = (64 * U32 if label == "LSE" else 8 * U[dname]) * scale_ref
        bound = factor * eb + floor
        good = e <= bound
        ok &= good
        parts.append(f"{label} {e:.2e}{'<=' if good else '>'}{bound:.2e}{note} (vs 1-GPU {max_err(a, bl.double()):.1e})")
    return ok, ", ".join(parts)


def inputs(shape, seed):
    _, b, n, hq, hkv, d, dname = shape
    dt = {"bf16": torch.bfloat16, "fp16": torch.float16}[dname]
    gen = torch.Generator(device="cuda").manual_seed(seed)
    mk = lambda *s: torch.randn(*s, device="cuda", generator=gen).to(dt)  # noqa: E731
    return mk(b, n, hq, d), mk(b, n, hkv, d), mk(b, n, hkv, d), mk(b, n, hq, d)


def run_cases():
    shapes = SHAPES[:1] if QUICK else SHAPES
    for si, shape in enumerate(shapes):
        name, b, n, hq, hkv, d, dname = shape
        q, k, v, g = inputs(shape, 100 + si)
        for causal in (False, True):
            what = f"{dname} {name} causal {int(causal)}"
            try:
                q64, k64, v64, g64 = (t.double() for t in (q, k, v, g))
                ref_o, ref_l = ra.dense_block_fns.forward(q64, k64, v64, causal, None)
                ref = (ref_o, ref_l) + tuple(ra.dense_block_fns.backward(q64, k64, v64, ref_o, ref_l, g64, causal,
                                                                         None))
                single = ra.ioattn_block_fns()
                b_o, b_l = single.forward(q, k, v, causal, None)
                base = (b_o, b_l) + tuple(single.backward(q, k, v, b_o, b_l, g, causal, None))
                torch.cuda.synchronize()
            except Exception as e:  # noqa: BLE001 - the reference or the baseline failed: this shape's cases fail
                report(False, f"reference/baseline {what}", f"{type(e).__name__}: {str(e)[:200]}")
                continue
            kernels = ", ".join(sorted(f"{p}:{k_}" for p, k_ in single.used))
            print(f"     {what}: single-GPU kernels {kernels}")
            for p in RANKS:
                for layout in ra.LAYOUTS:
                    methods = ["ring"] + (["ulysses"] if hq % p == 0 and hkv % p == 0 else [])
                    for method in methods:
                        label = f"{method} P{p} {layout} {what} [B{b} N{n} H{hq}/{hkv} d{d}]"
                        fns = ra.ioattn_block_fns()
                        try:
                            got = ra.simulated_ring(q, k, v, p, causal=causal, layout=layout, d_o=g, fns=fns,
                                                    method=method)
                            torch.cuda.synchronize()
                        except Exception as e:  # noqa: BLE001 - a refusal or crash is this case's failure
                            report(False, label, f"{type(e).__name__}: {str(e)[:300]}")
                            continue
                        ok, detail = judge(got, base, ref, dname)
                        report(ok, label, detail)
            del ref, base


def run_distributed_world1():
    """ring_attention / Ulysses through torch.distributed with one rank (NCCL, a file store)."""
    import torch.distributed as dist

    if not dist.is_available() or not dist.is_nccl_available():
        print("not run: torch.distributed with NCCL is not available in this torch (not counted)")
        return
    shape = SHAPES[0]
    q, k, v, g = inputs(shape, 7)
    n = shape[2]
    with tempfile.TemporaryDirectory() as tmp:
        try:
            store = dist.FileStore(os.path.join(tmp, "store"), 1)
            dist.init_process_group("nccl", store=store, rank=0, world_size=1)
        except Exception as e:  # noqa: BLE001
            report(False, "torch.distributed NCCL process group of one rank", f"{type(e).__name__}: {str(e)[:200]}")
            return
        try:
            # Bit equality needs a deterministic backward on both sides: the default one (bwd03) adds dQ
            # with fp32 atomics, whose order, and so whose last bits, change from run to run.
            det = [name for name, r in ioattn.backward_kernels().items() if r["deterministic"]]
            bwd = "bwd03b_fa3_wgmma_dqpass" if "bwd03b_fa3_wgmma_dqpass" in det else (det[-1] if det else None)
            for causal in (False, True):
                single = ra.ioattn_block_fns(backward_kernel=bwd)
                b_o, b_l = single.forward(q, k, v, causal, None)
                b_g = single.backward(q, k, v, b_o, b_l, g, causal, None)
                x = [t.detach().clone().requires_grad_(True) for t in (q, k, v)]
                o = ra.ring_attention(*x, seqlen=n, causal=causal, layout="zigzag" if causal else "contiguous",
                                      fns=ra.ioattn_block_fns(backward_kernel=bwd))
                grads = torch.autograd.grad(o, x, g)
                uo, ul, _ = ra.ulysses_attention(q, k, v, seqlen=n, causal=causal, fns=single)
                torch.cuda.synchronize()
                same = (torch.equal(o, b_o) and all(torch.equal(a, c) for a, c in zip(grads, b_g))
                        and torch.equal(uo, b_o) and torch.equal(ul, b_l))
                report(same, f"torch.distributed world 1, causal {int(causal)}: ring_attention autograd and Ulysses "
                             f"(all_to_all) equal single-GPU ioattn bit for bit (backward {bwd})",
                       "" if same else f"max |O diff| {(o.double() - b_o.double()).abs().max().item():.2e}")
        except Exception as e:  # noqa: BLE001
            report(False, "torch.distributed world 1", f"{type(e).__name__}: {str(e)[:300]}")
        finally:
            dist.destroy_process_group()


def run_multi_gpu():
    """The distributed path over NCCL, one process per GPU (torchrun); returns the exit code."""
    import torch.distributed as dist

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))
    dist.init_process_group("nccl")
    if rank == 0:
        print(f"device: {torch.cuda.get_device_name()} x {world} processes (NCCL), torch {torch.__version__}")
    for si, shape in enumerate(SHAPES[:1] if QUICK else SHAPES):
        name, b, n, hq, hkv, d, dname = shape
        q, k, v, g = inputs(shape, 100 + si)  # the same values on every rank (seeded generator)
        for causal in (False, True):
            for layout in ra.LAYOUTS:
                for method in ["ring"] + (["ulysses"] if hq % world == 0 and hkv % world == 0 else []):
                    label = f"{method} {world} GPUs {layout} {dname} {name} causal {int(causal)}"
                    try:
                        sh = [ra.shard(t, n, layout) for t in (q, k, v, g)]
                        if method == "ring":
                            x = [t.clone().requires_grad_(True) for t in sh[:3]]
                            o = ra.ring_attention(*x, seqlen=n, causal=causal, layout=layout)
                            mine = (o.detach(),) + tuple(torch.autograd.grad(o, x, sh[3]))
                        else:
                            o, _, saved = ra.ulysses_attention(*sh[:3], seqlen=n, causal=causal, layout=layout)
                            mine = (o,) + tuple(ra.ulysses_backward(saved, sh[3], seqlen=n, causal=causal,
                                                                    layout=layout))
                        torch.cuda.synchronize()
                        mine = [t.cpu() for t in mine]
                    except Exception as e:  # noqa: BLE001 - gathered and reported by rank 0
                        mine = f"{type(e).__name__}: {str(e)[:200]}"
                    parts = [None] * world
                    dist.all_gather_object(parts, mine)
                    if rank != 0:
                        continue
                    errs = [p_ for p_ in parts if isinstance(p_, str)]
                    if errs:
                        report(False, label, errs[0])
                        continue
                    order = ra._global_order(ra.chunk_ranges(n, world, layout))
                    got = [torch.cat([p_[j] for p_ in parts], 1)[:, order].cuda() for j in range(4)]
                    q64, k64, v64, g64 = (t.double() for t in (q, k, v, g))
                    ref_o, ref_l = ra.dense_block_fns.forward(q64, k64, v64, causal, None)
                    ref = (ref_o, None) + tuple(ra.dense_block_fns.backward(q64, k64, v64, ref_o, ref_l, g64, causal,
                                                                            None))
                    single = ra.ioattn_block_fns()
                    b_o, b_l = single.forward(q, k, v, causal, None)
                    base = (b_o, None) + tuple(single.backward(q, k, v, b_o, b_l, g, causal, None))
                    ok, detail = judge((got[0], None, *got[1:]), base, ref, dname)
                    report(ok, label, detail)
    code = [1 if failed or passed == 0 else 0]
    dist.broadcast_object_list(code, src=0)
    if rank == 0:
        print(f"{passed} passed, {failed} failed")
    dist.destroy_process_group()
    return code[0]


def main():
    global torch
    try:
        import torch as t
    except ImportError as e:
        print(f"SKIPPED: no GPU (torch is not installed: {e})")
        return 77
    torch = t
    if not torch.cuda.is_available():
        print("SKIPPED: no GPU (torch.cuda.is_available() is False)")
        return 77
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        return run_multi_gpu()
    lib = Path(ioattn._find_library()).resolve()
    root = Path(__file__).resolve().parent.parent
    lib = lib.relative_to(root) if lib.is_relative_to(root) else lib.name  # no machine paths in a log
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}, library {lib}, simulated ranks "
          f"{', '.join(map(str, RANKS))}" + (" (--quick)" if QUICK else ""))
    for part in (run_cases, run_distributed_world1):
        try:
            part()
        except Exception as e:  # noqa: BLE001 - a crash of one part is a failure, not the end of the report
            report(False, part.__name__, f"raised {type(e).__name__}: {str(e)[:300]}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed or passed == 0 else 0


if __name__ == "__main__":
    sys.exit(main())

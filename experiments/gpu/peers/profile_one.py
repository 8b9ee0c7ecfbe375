"""One forward (or backward) of a peer between cudaProfilerStart/Stop: the target ncu_collect.py and
ncu_detail.py profile for peers.

    ncu --profile-from-start off ... python3 experiments/gpu/peers/profile_one.py --impl sdpa:flash \
        --batch 1 --heads-q 32 --heads-kv 8 --seqlen 16384 --head-dim 128 --dtype bf16 [--causal]

The peer's counterpart of `ioattn run --kernel V ... --profile`: inputs as bench_sdpa.py makes them
(q (B, N, Hq, d), k, v (B, N, Hkv, d), BSHD; SDPA gets the BHSD view of the same memory, with
enable_gqa when Hkv < Hq), three warm-up calls outside the profiler range (module load, SDPA's
backend choice, cuDNN's plan, the Triton peer's autotuning), then exactly one call inside it. --pass bwd (SDPA only): the forward runs in the warm-up and the
profiled call is one backward of it (o.backward(dO)), so only the backward's kernels are in the range.
Impls: sdpa:flash, sdpa:cudnn, sdpa:efficient, peer:triton_fa2. A peer that refuses the problem
exits 2 with its one-line reason; --help works without torch.
"""
import argparse
import os
import sys

IMPLS = ("sdpa:flash", "sdpa:cudnn", "sdpa:efficient", "peer:triton_fa2")


def parse(argv=None):
    """The arguments (the problem flags as the ioattn CLI spells them: --heads or --heads-q with --heads-kv)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--impl", required=True, choices=IMPLS)
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--heads", "--heads-q", dest="heads", type=int, required=True, help="query heads")
    ap.add_argument("--heads-kv", type=int, default=0, help="key/value heads (default: = --heads)")
    ap.add_argument("--seqlen", type=int, required=True)
    ap.add_argument("--head-dim", type=int, required=True)
    ap.add_argument("--dtype", choices=["bf16", "fp16"], default="bf16")
    ap.add_argument("--causal", action="store_true")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--pass", dest="pass_", choices=["fwd", "bwd"], default="fwd")
    args = ap.parse_args(argv)
    args.heads_kv = args.heads_kv or args.heads
    if min(args.batch, args.heads, args.heads_kv, args.seqlen, args.head_dim) < 1 or args.heads % args.heads_kv:
        raise SystemExit("profile_one.py: sizes must be >= 1 and --heads-kv must divide --heads")
    return args


def main(argv=None):
    args = parse(argv)
    hkv = args.heads_kv
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    dt = {"bf16": torch.bfloat16, "fp16": torch.float16}[args.dtype]
    torch.manual_seed(0)
    b, n, h, d = args.batch, args.seqlen, args.heads, args.head_dim
    q = torch.randn(b, n, h, d, device="cuda", dtype=dt)
    k, v = (torch.randn(b, n, hkv, d, device="cuda", dtype=dt) for _ in range(2))
    if args.impl == "peer:triton_fa2":
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import triton_fa2
        o, lse = torch.empty_like(q), torch.empty((b, h, n), device="cuda", dtype=torch.float32)

        if args.pass_ == "bwd":
            print("profile_one.py: peer:triton_fa2 refused: it has no backward", file=sys.stderr)
            return 2

        def call():
            triton_fa2.forward(q, k, v, causal=args.causal, out=o, lse=lse)
        refused = (triton_fa2.Refused,)
    else:
        backend = {"sdpa:flash": SDPBackend.FLASH_ATTENTION, "sdpa:cudnn": SDPBackend.CUDNN_ATTENTION,
                   "sdpa:efficient": SDPBackend.EFFICIENT_ATTENTION}[args.impl]
        if args.pass_ == "bwd":
            for t in (q, k, v):
                t.requires_grad_(True)
        qt, kt, vt = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        gqa = dict(enable_gqa=True) if hkv != h else {}

        def forward():
            with sdpa_kernel(backend):
                return F.scaled_dot_product_attention(qt, kt, vt, is_causal=args.causal, **gqa)
        state = {}

        def backward():  # the forward once (a warm-up call), then one backward of it per call
            if "o" not in state:
                state["o"] = forward()
                state["do"] = torch.randn_like(state["o"])
            state["o"].backward(state["do"], retain_graph=True)
        call = backward if args.pass_ == "bwd" else forward
        refused = (RuntimeError,)
    try:
        for _ in range(max(1, args.warmup)):
            call()
        torch.cuda.synchronize()
    except refused as e:
        print(f"profile_one.py: {args.impl} refused: {(str(e).splitlines() or [''])[0][:200]}", file=sys.stderr)
        return 2
    torch.cuda.profiler.start()
    call()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
    print(f"profiled one {args.pass_} call of {args.impl} (B={b} N={n} Hq={h} Hkv={hkv} d={d} {args.dtype} causal={int(args.causal)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

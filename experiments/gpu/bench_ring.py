"""experiments/gpu/bench_ring.py: measured scaling of ring attention over P GPUs (torchrun, NCCL).

    torchrun --nproc-per-node P experiments/gpu/bench_ring.py --out DIR [--seqlens 32768,131072]
        [--heads 32] [--head-dim 128] [--causal 0,1] [--layouts contiguous,zigzag] [--passes fwd,fwdbwd]
        [--reps 5] [--deadline-s 500]

NOT RUN YET: no machine with several GPUs has been lent (with --nproc-per-node 1 it runs on one
GPU: the ring's P = 1 path against the whole-sequence kernel). Each rank holds its chunk of Q, K,
V (python/ring_attention.py's layouts, drawn on its own GPU), runs ring_forward (and
ring_attention's backward for fwdbwd) with ioattn's kernels, timed by experiments/gpu/timing.py with graph capture off
(median of --reps); a point's time is the slowest rank's median. T_1 is the whole sequence on
rank 0's GPU through the same kernels (ioattn's choice for the shape). The link is measured in
the same run: a ring exchange of a 256 MiB buffer (batch_isend_irecv to rank + 1 and from
rank - 1), bytes per direction over the median time. Writes DIR/ring.csv (kind measured; ranks,
seqlen, causal, layout, pass, ms, ms_min, ms_max, single_gpu_ms, efficiency = T_1 / (P T_P),
link_gbps_measured) and DIR/ring_context.json (GPU, torch, NCCL, command, date). Rank 0 prints
one line per point; exit 0 when every point ran, 1 when one failed (its row says why).
"""
import argparse
import csv
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent / "python"))
import ring_attention as ra  # noqa: E402
import timing  # noqa: E402  (experiments/gpu, this script's folder)


def ints(s):
    return [int(x) for x in s.split(",") if x]


def time_ms(fn, reps):
    """Median, min, max in ms of fn(): timing.py's method with capture off (eager launches between
    events, the GPU kept busy before each start, warm-up outside), since every rank must issue the
    ring's sends and receives the same number of times; T_1 is timed the same way."""
    t = timing.time_call(fn, reps=reps, capture=False)
    return t["median_ms"], t["min_ms"], t["max_ms"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seqlens", default="32768,65536,131072,262144")
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--head-dim", type=int, default=128)
    ap.add_argument("--causal", default="0,1")
    ap.add_argument("--layouts", default="contiguous,zigzag")
    ap.add_argument("--passes", default="fwd,fwdbwd")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--deadline-s", type=float, default=500.0)
    args = ap.parse_args()
    try:
        import torch
        import torch.distributed as dist
    except ImportError as e:
        print(f"SKIPPED: no GPU (torch is not installed: {e})")
        return 77
    if not torch.cuda.is_available():
        print("SKIPPED: no GPU (torch.cuda.is_available() is False)")
        return 77
    for p_ in args.passes.split(","):
        if p_ not in ("fwd", "fwdbwd"):
            print(f"bench_ring.py: --passes takes fwd and fwdbwd (got {p_!r})", file=sys.stderr)
            return 2
    t0 = time.monotonic()
    rank, world = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))
    if "MASTER_ADDR" not in os.environ:  # run without torchrun: one process
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT="29517", RANK="0", WORLD_SIZE="1")
    dist.init_process_group("nccl")
    dev = torch.device("cuda")

    # The link: a ring exchange of 256 MiB per rank.
    link_gbps = float("nan")
    if world > 1:
        buf = torch.empty(128 << 20, dtype=torch.bfloat16, device=dev)
        rbuf = torch.empty_like(buf)

        def ring_xchg():
            ops = [dist.P2POp(dist.isend, buf, (rank + 1) % world), dist.P2POp(dist.irecv, rbuf, (rank - 1) % world)]
            for r in dist.batch_isend_irecv(ops):
                r.wait()

        ms, _, _ = time_ms(ring_xchg, 5)
        t = torch.tensor([ms], device=dev)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        link_gbps = buf.numel() * buf.element_size() / (t.item() * 1e-3) / 1e9
        del buf, rbuf

    rows, failed = [], 0
    fns = ra.ioattn_block_fns()
    h, d = args.heads, args.head_dim
    for n in ints(args.seqlens):
        for causal in (bool(c) for c in ints(args.causal)):
            for pss in args.passes.split(","):
                single = float("nan")
                if rank == 0:
                    try:
                        q = torch.randn(1, n, h, d, device=dev, dtype=torch.bfloat16)
                        k, v = torch.randn_like(q), torch.randn_like(q)
                        if pss == "fwd":
                            single = time_ms(lambda: fns.forward(q, k, v, causal, None), args.reps)[0]
                        else:
                            def fb():
                                o, lse = fns.forward(q, k, v, causal, None)
                                fns.backward(q, k, v, o, lse, o, causal, None)
                            single = time_ms(fb, args.reps)[0]
                        del q, k, v
                    except Exception as e:  # noqa: BLE001 - the single-GPU baseline may not fit: recorded
                        print(f"single GPU N {n}: {type(e).__name__}: {str(e)[:200]}", flush=True)
                s = torch.tensor([single], device=dev)
                dist.broadcast(s, 0)
                single = s.item()
                for layout in args.layouts.split(","):
                    row = dict(kind="measured", ranks=world, seqlen=n, causal=int(causal), layout=layout, pass_=pss,
                               heads=h, head_dim=d, dtype="bf16", single_gpu_ms=single, link_gbps_measured=link_gbps,
                               ms="", ms_min="", ms_max="", efficiency="", error="")
                    if time.monotonic() - t0 > args.deadline_s:
                        row["error"] = "not run: past --deadline-s"
                        rows.append(row)
                        continue
                    try:
                        rows_local = len(ra.rank_indices(n, world, layout, rank))
                        q = torch.randn(1, rows_local, h, d, device=dev, dtype=torch.bfloat16)
                        k, v, g = torch.randn_like(q), torch.randn_like(q), torch.randn_like(q)
                        if pss == "fwd":
                            def call():
                                ra.ring_forward(q, k, v, n, causal, layout, None, None, fns)
                        else:
                            x = [t.clone().requires_grad_(True) for t in (q, k, v)]

                            def call():
                                o = ra.ring_attention(*x, seqlen=n, causal=causal, layout=layout, fns=fns)
                                torch.autograd.grad(o, x, g)
                        med, lo, hi = time_ms(call, args.reps)
                        t = torch.tensor([med, lo, hi], device=dev)
                        dist.all_reduce(t, op=dist.ReduceOp.MAX)
                        med, lo, hi = t.tolist()
                        row.update(ms=med, ms_min=lo, ms_max=hi,
                                   efficiency=single / (world * med) if single == single else "")
                    except Exception as e:  # noqa: BLE001 - a failed point is a row with its reason
                        row["error"] = f"{type(e).__name__}: {str(e)[:200]}"
                        failed += 1
                    rows.append(row)
                    if rank == 0:
                        print(f"P {world} N {n} causal {int(causal)} {layout} {pss}: "
                              + (f"{row['ms']:.3f} ms, single {single:.3f} ms, efficiency {row['efficiency']}"
                                 if row["ms"] != "" else row["error"]), flush=True)
                    torch.cuda.empty_cache()
    if rank == 0:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        cols = ["kind", "ranks", "seqlen", "causal", "layout", "pass", "heads", "head_dim", "dtype", "ms", "ms_min",
                "ms_max", "single_gpu_ms", "efficiency", "link_gbps_measured", "error"]
        with open(out / "ring.csv", "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(cols)
            for r in rows:
                w.writerow([r["pass_"] if c == "pass" else r[c] for c in cols])
        ctx = dict(device=torch.cuda.get_device_name(), gpus=world, torch=torch.__version__,
                   nccl=".".join(map(str, torch.cuda.nccl.version())), command=" ".join(sys.argv),
                   date=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        (out / "ring_context.json").write_text(json.dumps(ctx, indent=2) + "\n")
        print(f"wrote {out / 'ring.csv'} ({len(rows)} rows, {failed} failed; link {link_gbps:.1f} GB/s per direction)")
    code = torch.tensor([failed], device=dev)
    dist.all_reduce(code)
    dist.destroy_process_group()
    return 1 if code.item() else 0


if __name__ == "__main__":
    sys.exit(main())

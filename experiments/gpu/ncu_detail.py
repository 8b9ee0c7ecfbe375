"""Where a kernel's time goes: Nsight Compute's full sections for one backward (or forward) kernel.

    python3 experiments/gpu/ncu_detail.py --ioattn build-gpu/carry/ioattn --out DIR
        [--impls ioattn:bwd03_fa3_wgmma,sdpa:flash,sdpa:cudnn] [--pass bwd] [--seqlen 4096] [--head-dim 128]
        [--causal] [--tag NAME]

ncu_collect.py counts bytes over every kernel of a pass; this script asks why one kernel is as
slow as it is: for each impl it profiles every kernel of one pass (a backward is 3-4 launches;
--kernel-regex narrows the ioattn ones) with `--set full` (throughput, warp-state stall reasons, scheduler,
occupancy, tensor-pipe and shared-memory utilization, source counters) and writes
DIR/ncu_detail/<impl>[_<tag>].txt (ncu's details page) and DIR/ncu_detail/<impl>[_<tag>].csv (the raw
metrics, `--page raw --csv`). Problem: bf16, 16 heads, batch * N = 16384, non-causal unless --causal
(as ncu_collect); --tag keeps several problems' files apart in one folder.
Nothing is timed here: ncu serializes and replays the kernel; read its durations as relative.
"""
import argparse
import os
import subprocess
import sys

PEER_TARGET = os.path.join(os.path.dirname(os.path.abspath(__file__)), "peers", "profile_one.py")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ioattn", required=True, help="the ioattn CLI (build-gpu/carry/ioattn)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--impls", default="ioattn:bwd03_fa3_wgmma,sdpa:flash,sdpa:cudnn")
    ap.add_argument("--pass", dest="pass_", choices=["fwd", "bwd"], default="bwd")
    ap.add_argument("--seqlen", type=int, default=4096)
    ap.add_argument("--head-dim", type=int, default=128)
    ap.add_argument("--causal", action="store_true", help="causal mask (default: none)")
    ap.add_argument("--tag", default="", help="suffix of the output files' names, e.g. n512_d128_c1")
    ap.add_argument("--kernel-regex", default="",
                    help="ncu -k filter for the ioattn kernels, e.g. regex:kv_outer (default: every kernel of the pass)")
    ap.add_argument("--timeout", type=float, default=150)
    args = ap.parse_args(argv)
    n, d, h = args.seqlen, args.head_dim, 16
    if n < 1 or 16384 % n:
        sys.exit(f"ncu_detail: --seqlen must divide 16384 (batch = 16384 / N; got {n})")
    b = 16384 // n
    if args.tag and not all(ch.isalnum() or ch in "_-" for ch in args.tag):
        sys.exit(f"ncu_detail: --tag takes letters, digits, '_' and '-' (got '{args.tag}')")
    causal = ["--causal"] if args.causal else []
    out = os.path.join(args.out, "ncu_detail")
    os.makedirs(out, exist_ok=True)
    rc_all = 0
    for impl in [s for s in args.impls.split(",") if s]:
        kind, _, name = impl.partition(":")
        if kind == "ioattn":
            which = ["--backward", "--bwd-kernel", name] if args.pass_ == "bwd" else ["--kernel", name]
            target = [args.ioattn, "run", *which, "--batch", str(b), "--heads", str(h), "--seqlen", str(n),
                      "--head-dim", str(d), "--dtype", "bf16", *causal, "--profile"]
            regex = args.kernel_regex
        elif impl in ("sdpa:flash", "sdpa:cudnn", "sdpa:efficient", "peer:triton_fa2"):  # peers/profile_one.py's
            target = [sys.executable, PEER_TARGET, "--impl", impl, "--batch", str(b), "--heads", str(h),
                      "--seqlen", str(n), "--head-dim", str(d), "--dtype", "bf16", "--pass", args.pass_, *causal]
            regex = ""
        else:
            sys.exit(f"ncu_detail: unknown impl '{impl}' (ioattn:<variant>, or a peer of peers/profile_one.py)")
        # Every kernel between cudaProfilerStart/Stop (a backward is 3-4 launches), or the regex's.
        base = ["ncu", "--clock-control", "none", "--profile-from-start", "off", "--set", "full"]
        if regex:
            base += ["-k", regex]
        stem = os.path.join(out, impl.replace(":", "_") + (f"_{args.tag}" if args.tag else ""))
        rep = stem + ".ncu-rep"
        res = subprocess.run(base + ["-f", "-o", stem] + target, capture_output=True, text=True,
                             timeout=args.timeout)
        if res.returncode != 0 or not os.path.exists(rep):
            with open(stem + ".txt", "w") as f:
                f.write(f"ncu rc={res.returncode}\n{res.stdout[-4000:]}\n{res.stderr[-4000:]}\n")
            print(f"ncu_detail {impl}: FAILED rc={res.returncode} (see {stem}.txt)", flush=True)
            rc_all = 1
            continue
        for page, ext, extra in (("details", ".txt", []), ("raw", ".csv", ["--csv"])):
            with open(stem + ext, "w") as f:
                subprocess.run(["ncu", "--import", rep, "--page", page, *extra], stdout=f, stderr=subprocess.STDOUT,
                               timeout=args.timeout)
        os.remove(rep)  # the text pages are what comes back; the report is large
        print(f"ncu_detail {impl}: {stem}.txt", flush=True)
    return rc_all


if __name__ == "__main__":
    sys.exit(main())

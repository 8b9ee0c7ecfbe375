"""experiments/gpu/test_ncu_collect.py: ncu_collect.py's bookkeeping without a GPU (ctest ncu_collect_cpu).

    python3 experiments/gpu/test_ncu_collect.py

A stand-in `ncu` on PATH prints Nsight Compute's --csv layout for the launches it is asked to
profile (one kernel for a forward; three for `run --backward`: preprocess, K/V-outer kernel, dQ
convert or dQ pass) with known metric values, and a stand-in `ioattn` module gives the registry
answers (kernels, backward_kernels, kernel_config, backward_config). The stand-ins are test
inputs, not measurements. Checks, on the ncu.csv ncu_collect.py writes:
  - forward rows keep the columns they had before the backward (same order, first), pass = fwd;
  - a backward row sums DRAM read/write, L2 bytes and time over all three kernels, lists their
    names without template arguments, and its compulsory bytes and FLOPs are the backward's
    (reads Q, K, V, O, dO, LSE; writes dQ, dK, dV; 2.5x the forward's FLOPs);
  - the registry's config is checked against the K/V-outer kernel (the second launched), and a
    kernel count other than the registry's `launches` is reported;
  - the ncu command of a backward is `run --backward --bwd-kernel NAME ... --profile`;
  - bad --passes and unknown backward names exit with a one-line message;
  - GQA, causal, d and any N (batch = max(1, 16384 // N), up to 64k): the problem flags of the
    ioattn command (--heads-q/--heads-kv, --causal), the compulsory bytes (K, V with Hkv heads),
    the causal FLOPs (halved), heads_kv and first_kernel columns, one raw file per profile, and a
    peer (sdpa:flash) profiled through peers/profile_one.py;
  - --preset heldout lists its problems, and refuses flags that would change them.
Exit 0 when every check passes, 1 otherwise.
"""
import csv
import os
import stat
import subprocess
import sys
import tempfile
import types

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

# The forward columns as ncu_collect.py wrote them before the backward was added.
FORWARD_COLS = ["impl", "dtype", "head_dim", "causal", "seqlen", "batch", "heads", "kernels", "dram_read_bytes",
                "dram_write_bytes", "l2_bytes", "gpu_time_ms", "compulsory_read_bytes", "compulsory_write_bytes",
                "flops", "dram_read_over_compulsory_read", "dram_write_over_compulsory_write", "flop_per_dram_byte",
                "br", "bc", "stages", "threads", "smem_bytes", "ctas_per_sm", "grid_x", "grid_y", "grid_z",
                "grid_order", "launches", "splits", "ncu_block", "ncu_grid", "config_check", "error"]

FAKE_NCU = r'''#!/usr/bin/env python3
import sys
args = sys.argv[1:]
with open(__file__ + ".log", "a") as f:
    f.write(" ".join(args) + "\n")
cols = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream", "Block Size",
        "Grid Size", "Device", "CC", "Section Name", "Metric Name", "Metric Unit", "Metric Value"]
if "--backward" in args:
    name = args[args.index("--bwd-kernel") + 1]
    ks = [("void ioattn::bwd_preprocess<128>(Params)", "(256, 1, 1)", "(64, 1, 1)"),
          ("void ioattn::" + name + "_main<__nv_bfloat16, 128, true>(BwdParams<T>)", "(128, 1, 1)", "(4096, 1, 1)"),
          ("void ioattn::dq_convert<128>(Params)", "(256, 1, 1)", "(64, 1, 1)")]
    if name == "bwd_two":  # a backward that launches fewer kernels than its registry entry says
        ks = ks[:2]
elif "--impl" in args:  # a peer, through peers/profile_one.py
    ks = [("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, "
           "cutlass::bfloat16_t>, true>(Flash_fwd_params)", "(128, 1, 1)", "(32, 32, 1)")]
else:
    name = args[args.index("--kernel") + 1]
    ks = [("void ioattn::" + name + "<128>(Params)", "(128, 1, 1)", "(4096, 1, 1)")]
print("==PROF== Connected to process")
print(",".join('"%s"' % c for c in cols))
for i, (k, block, grid) in enumerate(ks):
    for m, v in (("dram__bytes_read.sum", 1000.0 * (i + 1)), ("dram__bytes_write.sum", 100.0 * (i + 1)),
                 ("lts__t_bytes.sum", 10000.0 * (i + 1)), ("gpu__time_duration.sum", 1000000.0 * (i + 1))):
        cells = [str(i), "1", "ioattn", "h", k, "1", "7", block, grid, "0", "9.0", "s", m, "byte", "{:,.0f}".format(v)]
        print(",".join('"%s"' % c for c in cells))
'''


class IoattnError(RuntimeError):
    pass


def fake_ioattn():
    m = types.ModuleType("ioattn")
    m.IoattnError = IoattnError
    m.kernels = lambda: {"v05_fa2_fast": {}}
    m.backward_kernels = lambda: {
        "bwd_atomic": dict(pairs_with="v04_fa2_mma", strategy="fa2", dq_mode="atomic", deterministic=False),
        "bwd_two": dict(pairs_with="v04_fa2_mma", strategy="fa2", dq_mode="separate", deterministic=True)}
    cfg = dict(br=64, bc=64, stages=1, threads=128, smem_bytes=1, ctas_per_sm=2, grid_x=4096, grid_y=1, grid_z=1,
               grid_order="kv_bh_major", launches=3, splits=0)
    m.kernel_config = lambda *a, **k: dict(cfg, grid_order="bh_major", launches=1)
    m.backward_config = lambda *a, **k: dict(cfg)
    return m


def main():
    bad = []

    def expect(ok, what):
        print(("PASS: " if ok else "FAIL: ") + what)
        if not ok:
            bad.append(what)

    tmp = tempfile.mkdtemp()
    ncu = os.path.join(tmp, "ncu")
    with open(ncu, "w") as f:
        f.write(FAKE_NCU.replace("#!/usr/bin/env python3", "#!" + sys.executable, 1))
    os.chmod(ncu, os.stat(ncu).st_mode | stat.S_IEXEC)
    os.environ["PATH"] = tmp + os.pathsep + os.environ.get("PATH", "")
    sys.modules["ioattn"] = fake_ioattn()
    import ncu_collect

    out = os.path.join(tmp, "out")
    rc = ncu_collect.main(["--ioattn", "IOATTN", "--out", out, "--seqlens", "1024", "--passes", "fwd,bwd"])
    expect(rc == 0, "ncu_collect.py --passes fwd,bwd exits 0")
    with open(os.path.join(out, "ncu.csv"), newline="") as f:
        reader = csv.DictReader(f)
        header, rows = reader.fieldnames, list(reader)
    expect(header[:len(FORWARD_COLS)] == FORWARD_COLS, "the forward's columns come first, unchanged")
    fwd = [r for r in rows if r["pass"] == "fwd"]
    bwd = {r["impl"]: r for r in rows if r["pass"] == "bwd"}
    expect(len(fwd) == 1 and fwd[0]["kernels"] == "1" and float(fwd[0]["dram_read_bytes"]) == 1000,
           "one forward row, one kernel, its bytes")
    b, h, n, d = 16, 16, 1024, 128
    t = b * n * h * d * 2
    expect(int(fwd[0]["compulsory_read_bytes"]) == 3 * t and int(fwd[0]["compulsory_write_bytes"]) == t + 4 * b * h * n,
           "forward compulsory bytes: Q, K, V read; O, LSE written")
    a = bwd.get("ioattn:bwd_atomic", {})
    expect(a.get("kernels") == "3", "the backward row sums three kernels")
    expect(float(a.get("dram_read_bytes", 0)) == 6000 and float(a.get("dram_write_bytes", 0)) == 600
           and float(a.get("l2_bytes", 0)) == 60000 and abs(float(a.get("gpu_time_ms", 0)) - 6.0) < 1e-9,
           "DRAM read/write, L2 bytes and time are summed over all the backward's kernels")
    expect(a.get("ncu_kernel_names") == "ioattn::bwd_preprocess|ioattn::bwd_atomic_main|ioattn::dq_convert",
           "kernel names in launch order, without template arguments")
    expect(int(a.get("compulsory_read_bytes", 0)) == 5 * t + 4 * b * h * n and int(a.get("compulsory_write_bytes", 0)) == 3 * t,
           "backward compulsory bytes: Q, K, V, O, dO, LSE read; dQ, dK, dV written")
    expect(float(a.get("flops", 0)) == 2.5 * 4.0 * b * h * n * n * d, "backward FLOPs are 2.5x the forward's")
    expect(abs(float(a.get("dram_read_over_compulsory_read", 0)) - 6000 / (5 * t + 4 * b * h * n)) < 1e-15,
           "read / compulsory read of the backward")
    expect(a.get("config_check") == "matches ncu" and a.get("ncu_grid") == "(4096, 1, 1)",
           "the config is checked against the K/V-outer kernel (second launched)")
    expect(a.get("dq_mode") == "atomic" and a.get("forward_kernel") == "v04_fa2_mma" and a.get("deterministic") == "0",
           "dq_mode, forward_kernel, deterministic from the backward registry")
    two = bwd.get("ioattn:bwd_two", {})
    expect("MISMATCH: registry launches 3, ncu saw 2 kernels" in two.get("config_check", ""),
           "a kernel count other than the registry's launches is reported")
    expect(fwd[0]["dq_mode"] == "" and fwd[0]["ncu_kernel_names"] == "ioattn::v05_fa2_fast",
           "a forward row has no dq_mode")
    log = open(ncu + ".log").read().splitlines()
    expect(any("run --backward --bwd-kernel bwd_atomic --batch 16" in ln and ln.endswith("--profile") for ln in log),
           "the backward is profiled through `ioattn run --backward --bwd-kernel NAME ... --profile`")
    expect(any(ln.startswith("--clock-control none --profile-from-start off") for ln in log),
           "ncu starts with profiling off (only the profiled range counts)")

    for argv, what in ((["--passes", "bwd,xyz"], "--passes"), (["--passes", "bwd", "--bwd-variants", "nope"],
                                                               "unknown backward")):
        try:
            ncu_collect.main(["--ioattn", "I", "--out", out, "--seqlens", "1024"] + argv)
            expect(False, f"{what} is refused")
        except SystemExit as e:
            msg = str(e.code)
            expect(msg.startswith("ncu_collect.py: ") and "\n" not in msg and what in msg, f"{what} is refused: {msg}")
    expect(fwd[0]["heads_kv"] == "16" and fwd[0]["causal"] == "0", "an MHA row has heads_kv = heads, causal 0")

    out2 = os.path.join(tmp, "out2")
    rc = ncu_collect.main(["--ioattn", "IOATTN", "--out", out2, "--seqlens", "65536,3000", "--heads", "32",
                           "--heads-kv", "8", "--causal", "0,1", "--peers", "sdpa:flash"])
    expect(rc == 0, "GQA, causal 0,1, N 64k and 3000, a peer: exits 0")
    with open(os.path.join(out2, "ncu.csv"), newline="") as f:
        rows2 = list(csv.DictReader(f))
    expect(len(rows2) == 8 and sorted({r["impl"] for r in rows2}) == ["ioattn:v05_fa2_fast", "sdpa:flash"],
           "2 N x 2 causal x (peer + variant) rows")
    for r in rows2:
        b, n, hq, hkv = int(r["batch"]), int(r["seqlen"]), 32, 8
        t, kv = b * n * hq * 128 * 2, b * n * hkv * 128 * 2
        ok = (b == max(1, 16384 // n) and r["heads"] == "32" and r["heads_kv"] == "8"
              and int(r["compulsory_read_bytes"]) == t + 2 * kv and int(r["compulsory_write_bytes"]) == t + 4 * b * hq * n
              and float(r["flops"]) == 4.0 * b * hq * n * n * 128 / (2 if r["causal"] == "1" else 1) and not r["error"])
        expect(ok, f"{r['impl']} N={n} causal={r['causal']}: batch, heads_kv, GQA compulsory bytes, causal FLOPs")
    peer = [r for r in rows2 if r["impl"] == "sdpa:flash"]
    expect(all("Flash_fwd_kernel_traits<128, 128, 64" in r["first_kernel"] for r in peer),
           "a peer row keeps the first kernel's full name (its tile)")
    log2 = open(ncu + ".log").read().splitlines()[len(log):]
    expect(any("--kernel v05_fa2_fast --batch 1 --heads-q 32 --heads-kv 8 --seqlen 65536" in ln and "--causal" in ln
               and ln.endswith("--profile") for ln in log2), "the ioattn command carries --heads-q/--heads-kv, --causal")
    expect(any("profile_one.py --impl sdpa:flash --batch 5 --heads-q 32 --heads-kv 8 --seqlen 3000" in ln
               and not ln.endswith("--profile") for ln in log2), "a peer is profiled through peers/profile_one.py")
    expect(len(os.listdir(os.path.join(out2, "ncu_raw"))) == 8, "one raw file per profile (no overwrite)")
    sys.path.insert(0, os.path.join(HERE, "peers"))
    import profile_one
    peer_cmds = [ln.split("profile_one.py ", 1)[1].split() for ln in log2 if "profile_one.py " in ln]
    parsed = [profile_one.parse(c) for c in peer_cmds]
    expect(len(parsed) == 4 and all(a.impl == "sdpa:flash" and a.heads == 32 and a.heads_kv == 8 for a in parsed)
           and sorted(a.causal for a in parsed) == [False, False, True, True],
           "peers/profile_one.py parses the problem flags ncu_collect.py gives it")

    import contextlib
    import io
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = ncu_collect.main(["--ioattn", "I", "--out", out2, "--preset", "heldout", "--list"])
    lines = buf.getvalue().splitlines()
    expect(rc == 0 and len(lines) == 12 and sum(len(ln.split(": ")[1].split()) for ln in lines) == 40
           and any("N=65536 B=1 Hq=16 Hkv=16 d=128 causal=1: sdpa:flash ioattn:v06_fa2_wgmma ioattn:v08_fa3_warpspec"
                   in ln for ln in lines)
           and any("N=4096 B=4 Hq=32 Hkv=8 d=128 causal=0" in ln for ln in lines)
           and any("N=2048 B=8 Hq=8 Hkv=8 d=256" in ln for ln in lines), "--preset heldout lists its 40 profiles")
    for argv, what in ((["--preset", "heldout", "--seqlens", "1024"], "--seqlens"),
                       (["--causal", "0,2"], "--causal"), (["--peers", "sdpa:nope"], "unknown peer"),
                       (["--heads", "32", "--heads-kv", "5"], "--heads-kv")):
        try:
            ncu_collect.main(["--ioattn", "I", "--out", out2, "--list"] + argv)
            expect(False, f"{what} is refused")
        except SystemExit as e:
            msg = str(e.code)
            expect(msg.startswith("ncu_collect.py: ") and "\n" not in msg and what in msg, f"{what} is refused: {msg}")
    subprocess.run(["rm", "-rf", tmp], check=False)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

"""experiments/gpu/fp8_rotation.py: FlashAttention-3's incoherent processing on the GPU: the FP8
kernel's error against float64 with and without a random Hadamard rotation of Q and K, on inputs
with outlier features (the GPU twin of experiments/exp_fp8_rotation.cpp, which measures the same in
the reference's exact CPU emulation).

  python3 experiments/gpu/fp8_rotation.py --out DIR [--kernel v10_fp8_warpspec] [--seqlens 1024,4096]
          [--head-dims 64,128,256] [--magnitudes 1,10,30,100] [--generators channels,entries,entries_qk]
          [--seeds 3] [--heads 8] [--logit-std 2] [--check]
  python3 experiments/gpu/fp8_rotation.py --self-test     # CPU only: the torch rotation's properties

Inputs (batch 1, --heads heads, N = seqlen, non-causal, scale 1/sqrt(d)), bf16, as the CPU driver
draws them (torch's generator, so not the same numbers):
  channels  in every head 4 channels (the same for Q and K) have std M a, the others a; V ~ N(0, 1)
  entries   each entry of Q, K, V with probability 1e-3 has std M a (V: M) instead of a (V: 1)
  entries_qk  the same in Q and K only (V ~ N(0, 1))
a keeps the logits' standard deviation at --logit-std for every M.

Per input: the truth is float64 attention of the bf16 values (torch on the GPU, per head); rows
  bf16          ioattn's best bf16 forward (v08_fa3_warpspec, else v06_fa2_wgmma) on the bf16 values
  fp8           ioattn.quantize_fp8 (per tensor, descale = amax / 448) of Q, K, V, then --kernel
  fp8_rotated   Q and K rotated by R = H_d diag(s) first (float64, the same signs s for Q and K, from
                the seed; V not rotated), then the same quantization and kernel
Each row: O's max, mean and RMS absolute error over every element, max|O| of the truth, LSE's max and
mean error. S = scale Q K^T is unchanged by the rotation in exact arithmetic (--check verifies it on
the float64 truth), so every difference between fp8 and fp8_rotated is FP8 rounding.

Writes DIR/fp8_rotation.csv (one row per input and computation) and DIR/context.json (device,
versions, commit, date, command). Prints a table: per (generator, M, d, N) the mean over seeds of
FP8's LSE and O mean errors without and with the rotation and their ratio. --check exits 1 when the
rotated float64 truth differs from the unrotated one (> 1e-9 relative) or bf16 is less accurate than
FP8. Exit 2 for bad arguments or a kernel that refuses every point.
"""
import argparse
import datetime
import json
import math
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))

OUTLIER_CHANNELS = 4
OUTLIER_FRACTION = 1e-3
BF16_KERNELS = ("v08_fa3_warpspec", "v06_fa2_wgmma")
COLUMNS = ["kind", "machine", "device", "kernel", "generator", "magnitude", "head_dim", "seqlen", "heads", "seed",
           "logit_std", "impl", "q_amax", "k_amax", "q_descale", "k_descale", "v_descale", "o_max_err", "o_mean_err",
           "o_rms_err", "o_ref_max", "lse_max_err", "lse_mean_err", "status", "error"]


# ---- the rotation (torch; reference/hadamard.hpp is the C++ definition) ------------------------------

def hadamard_signs(torch, d, seed):
    """d signs +-1 (float64, CPU) from seed: torch's CPU generator, so the same on every machine."""
    g = torch.Generator().manual_seed(int(seed))
    return torch.randint(0, 2, (d,), generator=g, dtype=torch.int64).to(torch.float64) * 2 - 1


def fwht(torch, x):
    """H_d x along the last dimension (Sylvester's order, normalized by 1/sqrt(d)), d log2 d adds."""
    d = x.shape[-1]
    if d not in (64, 128, 256):
        raise ValueError(f"hadamard rotation: head_dim must be 64, 128 or 256 (a power of two for the fast "
                         f"Walsh-Hadamard transform), got {d}")
    shape, y, h = x.shape, x.reshape(-1, d), 1
    while h < d:  # pairs (j, j + h) inside blocks of 2h
        y = y.reshape(-1, d // (2 * h), 2, h)
        y = torch.stack((y[:, :, 0, :] + y[:, :, 1, :], y[:, :, 0, :] - y[:, :, 1, :]), dim=2)
        h *= 2
    return y.reshape(shape) / math.sqrt(d)


def rotate(torch, x, signs):
    """R x = H_d (signs * x) of every row (last dimension) of x, in float64."""
    return fwht(torch, x.to(torch.float64) * signs.to(x.device))


def unrotate(torch, y, signs):
    return fwht(torch, y.to(torch.float64)) * signs.to(y.device)


# ---- inputs and truth ----------------------------------------------------------------------------------

def make_inputs(torch, gen, m, n, heads, d, logit_std, seed, device):
    """(q, k, v) BSHD bf16 (1, n, heads, d) as the module docstring says."""
    scale = 1.0 / math.sqrt(d)
    if gen == "channels":
        sum_var2 = (d - OUTLIER_CHANNELS) + OUTLIER_CHANNELS * m ** 4
    else:
        sum_var2 = d * (1.0 + OUTLIER_FRACTION * (m * m - 1.0)) ** 2
    a = math.sqrt(logit_std / (scale * math.sqrt(sum_var2)))
    gen_id = ("channels", "entries", "entries_qk").index(gen)
    g = torch.Generator(device=device).manual_seed(int(seed) * 100000 + int(m) * 10 + gen_id)
    shape = (1, n, heads, d)
    q = torch.randn(shape, generator=g, device=device, dtype=torch.float64)
    k = torch.randn(shape, generator=g, device=device, dtype=torch.float64)
    v = torch.randn(shape, generator=g, device=device, dtype=torch.float64)
    if gen == "channels":
        mult = torch.ones((heads, d), device=device, dtype=torch.float64)
        gc = torch.Generator().manual_seed(int(seed))
        for h in range(heads):
            mult[h, torch.randperm(d, generator=gc)[:OUTLIER_CHANNELS].to(device)] = m
        q, k = q * a * mult, k * a * mult
    else:
        big = [torch.rand(shape, generator=g, device=device) < OUTLIER_FRACTION for _ in range(3)]
        q = q * a * torch.where(big[0], m, 1.0)
        k = k * a * torch.where(big[1], m, 1.0)
        if gen == "entries":
            v = v * torch.where(big[2], m, 1.0)
    return tuple(t.to(torch.bfloat16) for t in (q, k, v))


def truth(torch, q, k, v):
    """float64 O (1, n, heads, d) and LSE (1, heads, n) of BSHD q, k, v (any float dtype)."""
    d = q.shape[-1]
    os_, ls = [], []
    for h in range(q.shape[2]):
        qh, kh, vh = (t[0, :, h, :].to(torch.float64) for t in (q, k, v))
        s = (qh @ kh.T) / math.sqrt(d)
        ls.append(torch.logsumexp(s, dim=-1))
        os_.append(torch.softmax(s, dim=-1) @ vh)
        del s
    return torch.stack(os_, dim=1).unsqueeze(0), torch.stack(ls, dim=0).unsqueeze(0)


def errors(torch, o, lse, t_o, t_lse):
    e = o.to(torch.float64) - t_o
    le = (lse.to(torch.float64) - t_lse).abs()
    return dict(o_max_err=e.abs().max().item(), o_mean_err=e.abs().mean().item(),
                o_rms_err=e.pow(2).mean().sqrt().item(), o_ref_max=t_o.abs().max().item(),
                lse_max_err=le.max().item(), lse_mean_err=le.mean().item())


# ---- the run -------------------------------------------------------------------------------------------

def die(msg):
    """Bad arguments or no GPU: one line, exit 2."""
    print(f"fp8_rotation.py: error: {msg}", file=sys.stderr)
    sys.exit(2)


def parse_list(text, conv, flag):
    try:
        vals = [conv(x) for x in text.split(",") if x.strip()]
    except ValueError:
        die(f"{flag} must be a comma list (got {text!r})")
    if not vals:
        die(f"{flag} is empty")
    return vals


def commit():
    carried = os.path.join(ROOT, "build-gpu", "carry", "COMMIT")
    if os.path.exists(carried):
        return open(carried).read().strip()
    try:
        return subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def run(args):
    import torch
    import ioattn

    dims = parse_list(args.head_dims, int, "--head-dims")
    for d in dims:
        if d not in (64, 128, 256):
            die(f"--head-dims: head_dim must be 64, 128 or 256 (got {d})")
    seqlens = parse_list(args.seqlens, int, "--seqlens")
    mags = parse_list(args.magnitudes, float, "--magnitudes")
    if min(seqlens) < 1 or not min(mags) > 0:
        die(f"--seqlens must be >= 1 and --magnitudes > 0 (got {seqlens}, {mags})")
    gens = parse_list(args.generators, str, "--generators")
    for gname in gens:
        if gname not in ("channels", "entries", "entries_qk"):
            die(f"--generators takes channels, entries, entries_qk (got {gname!r})")
    if not torch.cuda.is_available():
        die("no CUDA device (use --self-test on a CPU)")
    dev = torch.device("cuda")
    device_name = torch.cuda.get_device_name(dev)
    os.makedirs(args.out, exist_ok=True)
    rows, failures = [], []

    def row(gen, m, d, n, seed, impl, kernel, extra):
        r = dict(kind="measured", machine="h200", device=device_name, kernel=kernel, generator=gen, magnitude=m,
                 head_dim=d, seqlen=n, heads=args.heads, seed=seed, logit_std=args.logit_std, impl=impl,
                 status="ok", error="")
        r.update(extra)
        rows.append(r)
        return r

    for d in dims:
        for n in seqlens:
            for gen in gens:
                for m in mags:
                    for s in range(args.seeds):
                        seed = args.seed + s
                        q, k, v = make_inputs(torch, gen, m, n, args.heads, d, args.logit_std, seed, dev)
                        t_o, t_lse = truth(torch, q, k, v)
                        signs = hadamard_signs(torch, d, seed ^ 0x5EED)
                        rq, rk = rotate(torch, q, signs), rotate(torch, k, signs)
                        if args.check and s == 0:
                            r_o, r_lse = truth(torch, rq, rk, v)
                            do = (r_o - t_o).abs().max().item()
                            dl = (r_lse - t_lse).abs().max().item()
                            ok = do <= 1e-9 * max(1.0, t_o.abs().max().item()) and dl <= 1e-9 * max(
                                1.0, t_lse.abs().max().item())
                            print(f"  check {'PASS' if ok else 'FAIL'}: float64 truth of rotated Q, K equals the "
                                  f"unrotated one ({gen}, M {m:g}, d {d}, N {n}: max|dO| {do:.2e}, max|dLSE| {dl:.2e})")
                            if not ok:
                                failures.append(f"rotation moved the truth ({gen}, M {m:g}, d {d}, N {n})")
                        base = dict(q_amax=q.float().abs().max().item(), k_amax=k.float().abs().max().item(),
                                    q_descale="", k_descale="", v_descale="")
                        for kern in BF16_KERNELS:  # the best bf16 forward that takes the problem
                            try:
                                o, lse = ioattn.forward(q, k, v, kernel=kern)
                                torch.cuda.synchronize()
                                row(gen, m, d, n, seed, "bf16", kern, {**base, **errors(torch, o, lse, t_o, t_lse)})
                                break
                            except ioattn.IoattnError as e:
                                last = str(e)
                        else:
                            row(gen, m, d, n, seed, "bf16", "/".join(BF16_KERNELS), {**base, "status": "refused",
                                                                                    "error": last})
                        for impl, (qq, kk) in (("fp8", (q, k)), ("fp8_rotated", (rq, rk))):
                            q8, qd = ioattn.quantize_fp8(qq.to(torch.float32))
                            k8, kd = ioattn.quantize_fp8(kk.to(torch.float32))
                            v8, vd = ioattn.quantize_fp8(v)
                            extra = dict(q_amax=qq.abs().max().item(), k_amax=kk.abs().max().item(), q_descale=qd,
                                         k_descale=kd, v_descale=vd)
                            try:
                                o, lse = ioattn.forward(q8, k8, v8, kernel=args.kernel, q_descale=qd, k_descale=kd,
                                                        v_descale=vd, out_dtype=torch.bfloat16)
                                torch.cuda.synchronize()
                                extra.update(errors(torch, o, lse, t_o, t_lse))
                            except ioattn.IoattnError as e:
                                extra.update(status="refused" if getattr(e, "code", 0) == 2 else "error",
                                             error=str(e).splitlines()[0][:200])
                            row(gen, m, d, n, seed, impl, args.kernel, extra)
                        del q, k, v, rq, rk, t_o, t_lse
                    write(args, rows, device_name, torch)
    return rows, failures


def write(args, rows, device_name, torch):
    import csv
    with open(os.path.join(args.out, "fp8_rotation.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        for r in rows:
            w.writerow({c: r.get(c, "") for c in COLUMNS})
    # Paths inside the repository relative to it, any other absolute path by its last component only
    # (a results folder on the GPU machine is no part of the record).
    cmd = " ".join((os.path.relpath(a, ROOT) if a.startswith(ROOT + os.sep) else f"<dir>/{os.path.basename(a)}")
                   if os.path.isabs(a) else a for a in sys.argv)
    ctx = dict(commit=commit(), date_utc=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
               machine="h200", device=device_name, torch=torch.__version__, cuda=torch.version.cuda,
               driver="experiments/gpu/fp8_rotation.py", command=cmd, kernel=args.kernel, seed=args.seed,
               seeds=args.seeds, heads=args.heads, logit_std=args.logit_std, outlier_channels=OUTLIER_CHANNELS,
               outlier_fraction=OUTLIER_FRACTION, truth="torch float64 on the GPU of the bf16 values, per head",
               quantization="ioattn.quantize_fp8 per tensor (descale = amax / 448), after the rotation for fp8_rotated",
               rotation="H_d diag(s), s from torch.Generator().manual_seed(seed ^ 0x5EED); Q and K only",
               complete=True)
    with open(os.path.join(args.out, "context.json"), "w") as f:
        json.dump(ctx, f, indent=1)
        f.write("\n")


def summary(rows):
    """Per (generator, M, d, N): mean over seeds of FP8's LSE and O mean errors, plain and rotated."""
    acc = {}
    for r in rows:
        if r["status"] != "ok":
            continue
        key = (r["generator"], r["magnitude"], r["head_dim"], r["seqlen"])
        for col in ("lse_mean_err", "o_mean_err"):
            acc.setdefault((key, r["impl"], col), []).append(r[col])
    lines = ["generator  M      d    N      bf16 LSE   fp8 LSE    rot LSE   ratio  |  bf16 O     fp8 O      rot O     ratio"]
    for key in sorted({k for (k, _, _) in acc}):
        mean = lambda impl, col: (sum(acc.get((key, impl, col), [math.nan])) /  # noqa: E731
                                  max(1, len(acc.get((key, impl, col), []))))
        vals = [mean(i, c) for c in ("lse_mean_err", "o_mean_err") for i in ("bf16", "fp8", "fp8_rotated")]
        lines.append(f"{key[0]:<10} {key[1]:<6g} {key[2]:<4} {key[3]:<6} {vals[0]:.3e}  {vals[1]:.3e}  {vals[2]:.3e}"
                     f"  {vals[2] / vals[1]:.3f}  |  {vals[3]:.3e}  {vals[4]:.3e}  {vals[5]:.3e}  {vals[5] / vals[4]:.3f}")
    return lines


def self_test():
    """The torch rotation on the CPU: equals the dense H_d diag(s), orthogonal, keeps Q K^T, refuses a bad d,
    and the generators keep the logit std. Exit 77 without torch."""
    try:
        import torch
    except ImportError:
        print("SKIPPED: no torch")
        return 77
    fails = []
    for d in (64, 128, 256):
        s = hadamard_signs(torch, d, 7)
        assert torch.equal(s, hadamard_signs(torch, d, 7)), "signs not deterministic"
        i = torch.arange(d)
        parity = torch.tensor([[bin(int(a) & int(b)).count("1") % 2 for b in i] for a in i], dtype=torch.float64)
        dense = (1 - 2 * parity) / math.sqrt(d) * s.view(1, d)  # H_d diag(s)
        x = torch.randn(37, d, dtype=torch.float64) * torch.where(torch.rand(d) < 0.05, 100.0, 1.0).double()
        y = rotate(torch, x, s)
        checks = {
            "equals dense H_d diag(s)": (y - x @ dense.T).abs().max().item() <= 1e-12 * x.abs().max().item() * d,
            "norm kept": ((y.norm(dim=1) - x.norm(dim=1)).abs() <= 1e-12 * x.norm(dim=1)).all().item(),
            "inverse": (unrotate(torch, y, s) - x).abs().max().item() <= 1e-12 * x.abs().max().item(),
        }
        k = torch.randn(29, d, dtype=torch.float64)
        checks["Q K^T kept"] = ((y @ rotate(torch, k, s).T) - x @ k.T).abs().max().item() <= 1e-11 * x.abs().max().item()
        e = torch.zeros(1, d, dtype=torch.float64)
        e[0, 5] = 1000.0
        checks["one-hot spread"] = torch.allclose(rotate(torch, e, s).abs(), torch.full((1, d), 1000 / math.sqrt(d),
                                                                                      dtype=torch.float64))
        for gen in ("channels", "entries", "entries_qk"):
            for m in (1.0, 30.0):
                q, kk, _ = make_inputs(torch, gen, m, 512, 2, d, 2.0, 3, torch.device("cpu"))
                sd = ((q[0, :, 0].double() @ kk[0, :, 0].double().T) / math.sqrt(d)).std().item()
                # channels at M 30: 4 products dominate, the sample std of 512^2 logits is within 30 %
                checks[f"{gen} M {m:g} logit std {sd:.2f} ~ 2"] = 0.6 * 2 < sd < 1.4 * 2
        for name, ok in checks.items():
            print(f"  d {d}: {'PASS' if ok else 'FAIL'} {name}")
            if not ok:
                fails.append(f"d {d}: {name}")
    try:
        fwht(torch, torch.zeros(2, 96))
        fails.append("d 96 accepted")
    except ValueError as e:
        print(f"  PASS refusal: {e}")
    print(f"fp8_rotation.py --self-test: {'FAILED: ' + '; '.join(fails) if fails else 'all passed'}")
    return 1 if fails else 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="results folder (fp8_rotation.csv, context.json)")
    ap.add_argument("--kernel", default="v10_fp8_warpspec", help="the FP8 forward variant")
    ap.add_argument("--seqlens", default="1024,4096")
    ap.add_argument("--head-dims", default="64,128,256")
    ap.add_argument("--magnitudes", default="1,10,30,100")
    ap.add_argument("--generators", default="channels,entries,entries_qk")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=20261129)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--logit-std", type=float, default=2.0)
    ap.add_argument("--check", action="store_true", help="exit 1 if the rotation moves the float64 truth or bf16 "
                                                         "is less accurate than FP8")
    ap.add_argument("--self-test", action="store_true", help="CPU only: the torch rotation's properties")
    args = ap.parse_args(argv)
    if args.self_test:
        return self_test()
    if not args.out:
        ap.error("--out is required (or --self-test)")
    if args.seeds < 1 or args.heads < 1 or not (args.logit_std > 0):
        ap.error("--seeds and --heads must be >= 1 and --logit-std > 0")
    rows, failures = run(args)
    print("\n".join(summary(rows)))
    ok_fp8 = [r for r in rows if r["impl"] != "bf16" and r["status"] == "ok"]
    if not ok_fp8:
        print(f"fp8_rotation.py: {args.kernel} ran no point (see the error column)")
        return 2
    if args.check:
        by = {}
        for r in rows:
            if r["status"] == "ok":
                by.setdefault((r["generator"], r["magnitude"], r["head_dim"], r["seqlen"], r["seed"]), {})[r["impl"]] = r
        for key, g in sorted(by.items()):
            if "bf16" in g and "fp8" in g and not g["bf16"]["lse_mean_err"] < g["fp8"]["lse_mean_err"]:
                failures.append(f"bf16 less accurate than fp8 at {key}")
        print(f"fp8_rotation.py --check: {'FAILED: ' + '; '.join(failures) if failures else 'passed'}")
        return 1 if failures else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())

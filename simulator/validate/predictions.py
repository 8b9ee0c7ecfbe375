"""Predictions for the GPUs the project cannot run, with an uncertainty band from the H200's held-out error.

  python3 simulator/validate/predictions.py --ioattn build/apps/ioattn            # rewrite predictions.csv
  python3 simulator/validate/predictions.py --ioattn build/apps/ioattn --check    # exit 1 if it differs

For each machine of MACHINES, N in SEQLENS, d in 64/128, causal or not, forward and backward (fa2,
batch = 16384 / N, 16 heads, bf16, the searched tile, the default design: the machine's native
instruction, no overlap), `ioattn sweep` gives the ceiling and three expected times:
  mechanisms   the machine's own catalog: efficiency 1 where it was never measured (optimistic)
  borrowed     the same with the H200's calibrated_* entries copied into a temporary catalog (a what-if:
               ioattn's loops' efficiency on the H200 applied to the other machine; MFMA gets mma.sync's,
               both being register-operand synchronous MMAs)
  band         borrowed TFLOP/s over [1 / (1 + e), 1 / (1 - e)] for e the held-out worst time error of
               the pass (expected_vs_h200.csv: forward held-out, backward held-out), i.e. the spread
               the model showed on the H200, not a bound for another architecture
Writes simulator/validate/predictions.csv (what a figure of expected and ceiling TFLOP/s over N reads).
"""
import argparse
import csv
import io
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from derived import derived_csv, run_cli  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
CATALOG = os.path.join(REPO, "simulator", "machines")
OUT_CSV = os.path.join(HERE, "predictions.csv")
VALIDATION = os.path.join(HERE, "expected_vs_h200.csv")
MACHINES = ("mi210", "mi250x", "mi300x", "a100-80gb", "h100")
SEQLENS = (512, 1024, 2048, 4096, 8192, 16384, 32768, 65536)
CALIBRATED = ("calibrated_mma_sync_efficiency", "calibrated_wgmma_efficiency", "calibrated_lds_scalar_efficiency",
              "calibrated_cta_fixed_s")


def held_out_worst():
    rows = list(csv.DictReader(l for l in open(VALIDATION) if not l.startswith("#")))
    out = {}
    for pass_, set_ in (("fwd", "held-out"), ("bwd", "held-out bwd")):
        errs = [abs(float(r["expected_error_pct"])) / 100 for r in rows if r["set"] == set_]
        if not errs:
            sys.exit(f"predictions.py: no {set_} rows in {os.path.relpath(VALIDATION, REPO)}")
        out[pass_] = max(errs)
    return out


def sweep(ioattn, catalog, d, causal):
    cmd = [ioattn, "sweep", "--machines", ",".join(MACHINES), "--strategies", "fa2", "--passes", "fwd,bwd",
           "--seqlens", ",".join(map(str, SEQLENS)), "--tilings", "search", "--tokens", "16384", "--heads", "16",
           "--head-dim", str(d), "--dtype", "bf16", "--catalog", catalog]
    if causal:
        cmd.append("--causal")
    out = run_cli(cmd, "predictions.py")
    return {(r["machine"], r["pass"], int(r["seqlen_q"])): r for r in csv.DictReader(io.StringIO(out))}


def rows(ioattn):
    worst = held_out_worst()
    tmp = tempfile.mkdtemp()
    try:
        for f in os.listdir(CATALOG):
            if f.endswith(".json"):
                shutil.copy(os.path.join(CATALOG, f), tmp)
        h200 = json.load(open(os.path.join(CATALOG, "h200.json")))
        for name in MACHINES:
            path = os.path.join(tmp, f"{name}.json")
            j = json.load(open(path))
            for k in CALIBRATED:
                if k in h200 and k not in j:
                    j[k] = {"value": h200[k]["value"], "source": "what-if: the H200's calibration"}
            # MFMA takes both operands from registers, as mma.sync does: the what-if gives it mma.sync's.
            if "calibrated_mfma_efficiency" not in j:
                j["calibrated_mfma_efficiency"] = {"value": h200["calibrated_mma_sync_efficiency"]["value"],
                                                   "source": "what-if: the H200's mma.sync efficiency"}
            json.dump(j, open(path, "w"))
        out = []
        for d in (64, 128):
            for causal in (0, 1):
                own = sweep(ioattn, CATALOG, d, causal)
                borrowed = sweep(ioattn, tmp, d, causal)
                for key in sorted(own, key=lambda k: (MACHINES.index(k[0]), k[1], k[2])):
                    r, b = own[key], borrowed[key]
                    e = worst[key[1]]
                    tf = float(b["conventional_tflops"])
                    out.append(dict(machine=key[0], pass_=key[1], seqlen=key[2], head_dim=d, causal=causal,
                                    batch=r["batch"], heads=r["heads_q"], dtype="bf16", Br=r["Br"], Bc=r["Bc"],
                                    ceiling_tflops=f"{float(r['ceiling_tflops']):.1f}",
                                    expected_mechanisms_tflops=f"{float(r['conventional_tflops']):.1f}",
                                    expected_borrowed_tflops=f"{tf:.1f}", band_lo_tflops=f"{tf / (1 + e):.1f}",
                                    band_hi_tflops=f"{tf / (1 - e):.1f}" if e < 1 else "",
                                    held_out_worst_error=f"{e:.3f}", expected_bound=b["expected_bound"]))
        return out
    finally:
        shutil.rmtree(tmp)


def render(rs):
    return derived_csv("python3 simulator/validate/predictions.py --ioattn <build>/apps/ioattn", rs)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ioattn", required=True)
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    if not os.access(args.ioattn, os.X_OK):
        sys.exit(f"predictions.py: --ioattn {args.ioattn} is not an executable")
    text = render(rows(args.ioattn))
    if not args.check:
        open(OUT_CSV, "w").write(text)
        print(f"wrote simulator/validate/predictions.csv ({text.count(chr(10)) - 2} rows)")
        return 0
    same = os.path.exists(OUT_CSV) and open(OUT_CSV).read() == text
    print("predictions: " + ("equal the model" if same else "differ from the model now; rerun predictions.py"))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())

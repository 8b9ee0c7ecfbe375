"""The model beside the H200 measurements: writes the CSVs that simulator/README.md's tables come from.

  python3 simulator/validate/compare_l2.py --ioattn build/apps/ioattn            # rewrite the CSVs
  python3 simulator/validate/compare_l2.py --ioattn build/apps/ioattn --check    # exit 1 if they differ

Inputs (measured, committed, never edited):
  h200_ncu_l2.csv                  SDPA FlashAttention-2 forwards under ncu (run_ncu_l2.sh), N = 16k..256k
  h200_anchors/h200_sdpa_ncu.csv   flash and math forwards at batch * N = 16k (h200_anchors.py)
  h200_anchors/h200_sdpa_memory.csv  peak extra memory of forward+backward (h200_anchors.py)
  (labels; the files are committed H200 runs under experiments/results/h200/, see INPUTS)
Outputs (derived; `--check` is the ctest `simulator_model_vs_h200`, so a model change that is not
written here fails the suite):
  model_vs_h200_dram.csv    one row per measured forward: compulsory, measured and modeled DRAM bytes
                            (L2-aware and no-L2), measured time, the model's ceiling (model_time_s,
                            the roofline) and its expected time (expected_time_s, FlashAttention-2's
                            design: mma_sync/none/fragments). flash rows run `ioattn
                            simulate --strategy fa2` with the kernel's own tile (traits <d, kBlockM,
                            kBlockN>); math rows run `--strategy standard`.
  model_vs_h200_memory.csv  one row per measured forward+backward: measured peak extra memory and the
                            model's extra_memory_bytes (`--pass fwdbwd`, standard for math, fa2 for
                            flash with the searched tile).
A measured row's K/V heads are its `heads_kv` column where it has one (GQA rows), else its heads (every
input above is multi-head; the outputs then have no heads_kv column).
"""
import argparse
import csv
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from derived import derived_csv, heads_args, heads_kv, run_cli  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
# The measured inputs (committed H200 runs, experiments/results/h200/<tag>/), by the label their
# rows carry in the `source` column of the outputs.
REPO = os.path.dirname(os.path.dirname(HERE))
INPUTS = {
    "h200_ncu_l2.csv": "experiments/results/h200/2026-11-29_sdpa_ncu_l2/h200_ncu_l2.csv",
    "h200_anchors/h200_sdpa_ncu.csv": "experiments/results/h200/2026-12-01_f9ca3ea_sdpa_anchors/h200_sdpa_ncu.csv",
    "h200_anchors/h200_sdpa_memory.csv": "experiments/results/h200/2026-12-01_f9ca3ea_sdpa_anchors/h200_sdpa_memory.csv",
}
DRAM_INPUTS = ["h200_ncu_l2.csv", "h200_anchors/h200_sdpa_ncu.csv"]
MEMORY_INPUT = "h200_anchors/h200_sdpa_memory.csv"
DRAM_OUT = "model_vs_h200_dram.csv"
MEMORY_OUT = "model_vs_h200_memory.csv"
STRATEGY = {"flash": "fa2", "math": "standard"}


def read_measured(path):
    with open(os.path.join(REPO, INPUTS[path])) as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def simulate(ioattn, strategy, n, b, h, d, causal, pass_="fwd", tile=None, no_l2=False, hkv=None):
    """The model's JSON for one measured problem; hkv: its K/V heads (None: h, multi-head)."""
    cmd = [ioattn, "simulate", "--machine", "h200", "--strategy", strategy, "--pass", pass_, "--seqlen", str(n),
           "--batch", str(b), *heads_args(h, hkv or h), "--head-dim", str(d), "--dtype", "bf16", "--json"]
    if tile:
        cmd += ["--br", str(tile[0]), "--bc", str(tile[1])]
    if causal:
        cmd.append("--causal")
    if strategy == "fa2":
        cmd += ["--design", "mma_sync/none/fragments"]  # FlashAttention-2: mma.sync, no softmax overlap
    if no_l2:
        cmd.append("--no-l2")
    return json.loads(run_cli(cmd, "compare_l2.py"))


def dram_rows(ioattn):
    rows = []
    for path in DRAM_INPUTS:
        for r in read_measured(path):
            n, b, h, d, c = (int(x) for x in re.match(r"n(\d+)_b(\d+)_h(\d+)_d(\d+)_c(\d)", r["config"]).groups())
            hkv = heads_kv(dict(r, heads=h))  # the row's heads_kv where it has one (GQA), else h
            backend = r.get("backend", "flash")
            kernel = r.get("kernel") or r.get("first_kernel", "")
            tile = None
            if backend == "flash":
                d_t, br, bc = (int(x) for x in
                               re.search(r"Flash_fwd_kernel_traits<(\d+), (\d+), (\d+)", kernel).groups())
                if d_t != d:
                    sys.exit(f"compare_l2.py: {path} {r['config']}: kernel head dim {d_t} != {d}")
                tile = (br, bc)
            m = simulate(ioattn, STRATEGY[backend], n, b, h, d, c, tile=tile, hkv=hkv)
            z = simulate(ioattn, STRATEGY[backend], n, b, h, d, c, tile=tile, no_l2=True, hkv=hkv)
            rows.append(dict(source=path, config=r["config"], backend=backend, strategy=STRATEGY[backend],
                             Br=tile[0] if tile else "", Bc=tile[1] if tile else "", seqlen=n, batch=b, heads=h,
                             head_dim=d, causal=c, compulsory_read_bytes=m["hbm_compulsory"]["read"],
                             compulsory_write_bytes=m["hbm_compulsory"]["write"],
                             measured_read_bytes=int(r["dram_read_bytes"]),
                             measured_write_bytes=int(r["dram_write_bytes"]),
                             measured_time_ns=int(r["gpu_time_ns"]), model_read_bytes=m["hbm_read_bytes"],
                             model_write_bytes=m["hbm_write_bytes"], model_regime=m["l2_regime"],
                             no_l2_read_bytes=z["hbm_read_bytes"], no_l2_write_bytes=z["hbm_write_bytes"],
                             model_time_s=f"{m['ceiling_time_s']:.6g}",
                             expected_time_s=f"{m['time_s']:.6g}"))
    return rows


def memory_rows(ioattn):
    rows = []
    for r in read_measured(MEMORY_INPUT):
        be, n, h, d = r["backend"], int(r["seqlen"]), int(r["heads"]), int(r["head_dim"])
        m = simulate(ioattn, STRATEGY[be], n, int(r["batch"]), h, d, int(r["causal"]), pass_="fwdbwd", hkv=heads_kv(r))
        rows.append(dict(source=MEMORY_INPUT, backend=be, strategy=STRATEGY[be], batch=r["batch"], heads=h,
                         seqlen=n, head_dim=d, measured_peak_extra_bytes=int(r["peak_extra_bytes"]),
                         model_extra_memory_bytes=m["extra_memory_bytes"]))
    return rows


def render(rows):
    return derived_csv("python3 simulator/validate/compare_l2.py --ioattn <build>/apps/ioattn "
                       "(model: machines/h200.json)", rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ioattn", required=True, help="the ioattn CLI (build/apps/ioattn)")
    ap.add_argument("--check", action="store_true", help="compare with the committed CSVs instead of writing")
    args = ap.parse_args()
    if not os.access(args.ioattn, os.X_OK):
        sys.exit(f"compare_l2.py: --ioattn {args.ioattn} is not an executable")
    failed = False
    for name, rows in ((DRAM_OUT, dram_rows(args.ioattn)), (MEMORY_OUT, memory_rows(args.ioattn))):
        path, text = os.path.join(HERE, name), render(rows)
        if not args.check:
            with open(path, "w") as f:
                f.write(text)
            print(f"wrote simulator/validate/{name} ({len(rows)} rows)")
            continue
        old = open(path).read() if os.path.exists(path) else ""
        if old != text:
            failed = True
            old_lines, new_lines = set(old.splitlines()), text.splitlines()
            print(f"simulator/validate/{name} differs from the model now; rows that changed (new):")
            for line in new_lines:
                if line not in old_lines:
                    print("  " + line)
        else:
            print(f"simulator/validate/{name}: {len(rows)} rows equal the model")
    if failed:
        print("rerun: python3 simulator/validate/compare_l2.py --ioattn <build>/apps/ioattn "
              "(then python3 scripts/doc_numbers.py --write)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""experiments/make_figures.py: the pipeline behind `make figures`.

    drivers (experiments/exp_*)  ->  <out>/results/{sim,cpu}/<tag>/*.csv + context.json
    plots   (plots/fig_*.py)    ->  <out>/figures/fig_*.{png,pdf}
    numbers (paper/gen_numbers.py) -> <out>/generated/numbers.tex
    paper   (latexmk)           ->  <out>/paper.pdf

Modeled (simulator) and CPU results are regenerated on every run into <out>/results; the H200
results are the canonical run named in experiments/results/h200/CANONICAL (experiments/
results_index.py). With --gpu the H200 data is re-measured first into a new tag under
<out>/results/h200/, and <out>/results/h200/CANONICAL names it, so the figures, the paper and
exp_h200_model use that fresh run. Committed results are never written here.

Progress: one line per step with its elapsed time. Exit code 0 when every step either succeeded or
was skipped for lack of data (listed at the end), 1 when any step failed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PY = "/usr/bin/python3"  # Debian's interpreter: the one that has matplotlib and numpy
SKIP = 77

# Driver executables (experiments/exp_*.cpp, built into <build>/experiments/).
DRIVERS = [
    "exp_machines",
    "exp_io_complexity",
    "exp_memory_vs_n",
    "exp_speedup_vs_n",
    "exp_block_size",
    "exp_roofline",
    "exp_splitkv",
    "exp_kernel_ladder",
    "exp_h200_model",
    "exp_cpu_reference",
    "exp_context_parallel",
]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build", help="CMake build folder holding apps/ioattn")
    ap.add_argument("--out", default="out", help="output folder (results/, figures/, generated/, paper.pdf)")
    ap.add_argument("--gpu", action="store_true", help="re-measure the H200 data first (experiments/gpu/run_h200.sh)")
    ap.add_argument("--no-paper", action="store_true", help="stop after the figures")
    args = ap.parse_args()

    out = (REPO / args.out).resolve() if not os.path.isabs(args.out) else Path(args.out)
    build = (REPO / args.build).resolve() if not os.path.isabs(args.build) else Path(args.build)
    ioattn = build / "apps" / "ioattn"
    env = dict(os.environ, IOATTN_BIN=str(ioattn),
               IOATTN_BUILD=str(build),
               IOATTN_RESULTS=f"{out / 'results'}:{REPO / 'experiments' / 'results'}")

    steps: list[tuple[str, list[str]]] = []
    if args.gpu:
        # Re-measure on this machine's NVIDIA GPU with the kernels work's scripts (experiments/gpu/):
        # build the sm_90 binaries, pack them, run the suite + benchmark + Nsight Compute, and unpack
        # the tidy CSVs into a new tag under <out>/results/h200/ (the committed results stay as they
        # are; the plots read <out>/results first, and the newest tag wins a duplicate point).
        script = REPO / "experiments" / "gpu" / "run_h200.sh"
        if not script.is_file():
            print(f"make figures: error: GPU=1 but {script.relative_to(REPO)} does not exist", file=sys.stderr)
            return 1
        if shutil.which("nvidia-smi") is None:
            print("make figures: error: GPU=1 but no nvidia-smi on PATH (no NVIDIA GPU here?)", file=sys.stderr)
            return 1
        gpu_build = REPO / "build-gpu"
        run_dir = out / "gpu-run"
        tag = "local-" + time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        dest = out / "results" / "h200" / tag
        steps.append(("GPU: configure and build build-gpu (sm_90)",
                      ["sh", "-c", f"cmake -S . -B {gpu_build} -DCMAKE_BUILD_TYPE=Release >/dev/null && "
                                   f"cmake --build {gpu_build} -j --target ioattn ioattn_capi gpu_kernels"]))
        steps.append(("GPU: experiments/gpu/pack.sh", ["bash", str(REPO / "experiments" / "gpu" / "pack.sh")]))
        steps.append(("GPU: experiments/gpu/run_h200.sh",
                      ["sh", "-c", f"mkdir -p {run_dir} && OUT={run_dir} bash {script}"]))
        steps.append((f"GPU: unpack results to {dest.relative_to(out)}",
                      ["sh", "-c", f"mkdir -p {dest} && tar xzf {run_dir}/h200_results.tar.gz -C {run_dir} && "
                                   f"cp {run_dir}/h200/*.csv {dest}/ && "
                                   f"(cp {run_dir}/h200/*.json {run_dir}/h200/context.txt {dest}/ 2>/dev/null; true) && "
                                   f"printf '# written by make figures GPU=1: the fresh run is canonical here\\n"
                                   f"bench {tag}\\nncu {tag}\\ntiles {tag}\\n' > {dest.parent}/CANONICAL; ls {dest}"]))
    for d in DRIVERS:
        exe = build / "experiments" / d
        extra = ["--h200", str(out / "results" / "h200")] if (d == "exp_h200_model" and args.gpu) else []
        steps.append((f"driver {d}", [str(exe), "--preset", "figure", "--check", "--force",
                                      "--out", str(out / "results")] + extra))
    for fig in sorted((REPO / "plots").glob("fig_*.py")):
        steps.append((f"plot {fig.name}", [PY, str(fig), "--out", str(out / "figures")]))
    if not args.no_paper:
        steps.append(("paper numbers", [PY, str(REPO / "paper" / "gen_numbers.py"), "--out", str(out / "generated")]))
        steps.append(("paper", ["bash", str(REPO / "paper" / "build.sh"), str(out)]))

    t0 = time.monotonic()
    failed, skipped = [], []
    for i, (name, cmd) in enumerate(steps, 1):
        t = time.monotonic()
        print(f"[{i}/{len(steps)}] {name} ...", flush=True)
        r = subprocess.run(cmd, cwd=REPO, env=env)
        dt = time.monotonic() - t
        if r.returncode == 0:
            print(f"[{i}/{len(steps)}] {name}: ok ({dt:.1f} s)", flush=True)
        elif r.returncode == SKIP:
            skipped.append(name)
            print(f"[{i}/{len(steps)}] {name}: SKIPPED (no data; see the message above) ({dt:.1f} s)", flush=True)
        else:
            failed.append(name)
            print(f"[{i}/{len(steps)}] {name}: FAILED with exit code {r.returncode} ({dt:.1f} s)", flush=True)

    print(f"\nmake figures: {len(steps) - len(failed) - len(skipped)} ok, {len(skipped)} skipped, "
          f"{len(failed)} failed in {time.monotonic() - t0:.0f} s")
    for s in skipped:
        print(f"  skipped: {s}")
    for s in failed:
        print(f"  FAILED:  {s}")
    print(f"outputs: {out}/figures (PNG, PDF), {out}/paper.pdf, fresh results in {out}/results")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

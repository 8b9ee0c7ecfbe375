#!/usr/bin/env bash
# experiments/commit_results.sh BUILD: run every CPU-side driver at the figure sizes with --check
# into experiments/results/<machine>/<experiment>-<UTC time>/, ready to `git add`.
#
# Committed results are immutable: each run gets a new tag, and the plots and the paper take the
# newest tag of each experiment (plots/style.py find_csv). The H200 results are committed by the
# GPU work (experiments/gpu/); exp_h200_model is run here so its twin rows match them.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-figures}
stamp=$(date -u +%Y%m%dT%H%MZ)
drivers="machines io_complexity memory_vs_n speedup_vs_n block_size roofline splitkv kernel_ladder cpu_reference fp8_rotation context_parallel"
# The H200 twin only when there are committed H200 results to model.
if ls experiments/results/h200/*/*.csv >/dev/null 2>&1; then drivers="$drivers h200_model"; fi
for d in $drivers; do
  echo "== exp_$d -> tag $d-$stamp"
  "$build/experiments/exp_$d" --preset figure --check --out experiments/results --tag "$d-$stamp"
done
echo "now: git add experiments/results && git commit -m 'experiments/results: run $stamp' -- experiments/results"

#!/usr/bin/env bash
# experiments/gpu/run_h200.sh: everything the kernels need measured on the H200, in ONE call.
#
# Builds nothing: the binaries come prebuilt (sm_90) in build-gpu/carry/ (experiments/gpu/pack.sh,
# run here before the device call, which carries that folder). Stages, each with its own time cap:
#   1. the GPU test suite (verify/kernels/gpu_kernels: every registered variant vs the reference)
#   2. compute-sanitizer memcheck and 3. racecheck over it (IOATTN_GPU_QUICK: small shapes)
#   4. the benchmark vs torch SDPA flash/cuDNN (experiments/gpu/bench_sdpa.py)
#   5. python/example_compare_sdpa.py (the ctypes module on torch tensors, two shapes)
#   6. (full mode) the block-size study: v03_fa2_scalar over (Br, Bc) (bench_tiles.py)
#   7. Nsight Compute DRAM/L2 bytes of every variant at N in {1k, 4k, 16k} (ncu_collect.py)
# then prints a short table last and packs all logs, JSON and CSV into $OUT/h200_results.tar.gz.
#
#   run(command="bash experiments/gpu/run_h200.sh [quick]", carry=["build-gpu/carry"])
# quick: fewer property cases, bench N in {1k, 4k} d = 128 bf16, ncu at N = 1k only.
# recheck: tests + memcheck + racecheck, no bench; ncu only for $NCU_SEQLENS x $NCU_VARIANTS
#          (to re-verify changed kernels within the device budget).
# ncu:     only the Nsight Compute stage, for $NCU_SEQLENS x $NCU_VARIANTS, capped at $NCU_CAP s
#          (default 400): completes a full run whose ncu stage ran out of time. NCU_NAIVE_MAX
#          (default 4096) is the largest N v01 is profiled at, NCU_RUN_CAP (120 s) one profile's cap.
# bench:   only the benchmark (a second sample of a full run's timings: run-to-run spread).
set -u
MODE=${1:-full}
# The stages each mode runs.
case "$MODE" in
  full)    STAGES="tests bench example tiles ncu" ;;
  quick)   STAGES="tests bench example ncu" ;;
  recheck) STAGES="tests ncu" ;;
  ncu)     STAGES="ncu" ;;
  bench)   STAGES="bench" ;;
  *) echo "run_h200.sh: unknown mode '$MODE' (full, quick, recheck, ncu, bench)" >&2; exit 2 ;;
esac
want() { case " $STAGES " in *" $1 "*) return 0 ;; esac; echo "$1 skipped ($MODE)" | tee -a "$R/summary.txt"; return 1; }
ROOT=$(pwd)
C=$ROOT/build-gpu/carry
R=/tmp/h200
rm -rf "$R" && mkdir -p "$R"
export LD_LIBRARY_PATH=$C/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export IOATTN_CAPI=$C/libioattn_capi.so PYTHONPATH=$ROOT/python PYTHONUNBUFFERED=1
T0=$(date +%s)
stage() { echo "== $1 ($(( $(date +%s) - T0 )) s)"; }

stage context
{
  echo "commit: $(cat "$C/COMMIT" 2>/dev/null)"
  echo "built: $(cat "$C/BUILT" 2>/dev/null)"
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "command: bash experiments/gpu/run_h200.sh $MODE (NCU_SEQLENS=${NCU_SEQLENS:-} NCU_VARIANTS=${NCU_VARIANTS:-})"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version())'
  uname -r
} > "$R/context.txt" 2>&1
cat "$R/context.txt"

# Time caps per stage (seconds): the whole call must stay inside the device's 10-minute limit.
if [ "$MODE" = quick ]; then SCALE=0.1; T_TEST=90; T_SAN=60; T_BENCH=60; T_NCU=60
else SCALE=1; T_TEST=150; T_SAN=150; T_BENCH=190; T_NCU=100; fi
TOOLS="memcheck racecheck"
# Stages 1-3 run side by side (correctness only, nothing is timed there); each has its own cap.
stage "gpu tests + memcheck + racecheck (in parallel)"
if want tests; then
IOATTN_RC_SCALE=$SCALE OMP_NUM_THREADS=8 timeout $T_TEST "$C/gpu_kernels" > "$R/test_gpu.log" 2>&1 &
P_TEST=$!
for tool in $TOOLS; do
  IOATTN_GPU_QUICK=1 IOATTN_RC_SCALE=0.02 OMP_NUM_THREADS=4 timeout $T_SAN \
    compute-sanitizer --tool $tool --error-exitcode 9 "$C/gpu_kernels" > "$R/sanitizer_$tool.log" 2>&1 &
  eval "P_$tool=\$!"
done
wait $P_TEST; echo "gpu_kernels rc=$? (0 pass, 1 a check failed, 124 timed out)" | tee -a "$R/summary.txt"
grep -E "FAIL|property |named cases|SKIPPED" "$R/test_gpu.log" | head -30
for tool in $TOOLS; do
  eval "wait \$P_$tool"
  echo "compute-sanitizer $tool rc=$? (0: clean and tests passed; 9: sanitizer errors; 1: a check failed; 124: timed out)" | tee -a "$R/summary.txt"
  grep -E "ERROR SUMMARY|RACECHECK SUMMARY|named cases|property " "$R/sanitizer_$tool.log" | head -5
done
fi

stage bench
if want bench; then
if [ "$MODE" = quick ]; then BQ=--quick; else BQ=; fi
timeout $T_BENCH python3 experiments/gpu/bench_sdpa.py --out "$R" $BQ > "$R/bench.log" 2>&1
echo "bench rc=$?" | tee -a "$R/summary.txt"
fi

stage "python example (ctypes module on torch tensors vs SDPA)"
if want example; then
EX=0
timeout 20 python3 python/example_compare_sdpa.py --seqlen 1000 --head-dim 128 > "$R/example.log" 2>&1 || EX=$?
timeout 20 python3 python/example_compare_sdpa.py --seqlen 777 --head-dim 64 --causal >> "$R/example.log" 2>&1 || EX=$?
echo "python example rc=$EX (0: every kernel within the example's error bound)" | tee -a "$R/summary.txt"
tail -4 "$R/example.log"
fi

stage tiles
if want tiles; then
  timeout 60 python3 experiments/gpu/bench_tiles.py --out "$R" > "$R/tiles.log" 2>&1
  echo "tiles rc=$?" | tee -a "$R/summary.txt"
fi

stage ncu
if want ncu; then
[ "$MODE" = ncu ] && T_NCU=${NCU_CAP:-400}
if [ "$MODE" = quick ]; then NS=1024; else NS=1024,4096,16384; fi
[ "$MODE" = recheck ] || [ "$MODE" = ncu ] && NS=${NCU_SEQLENS:-1024}
timeout $T_NCU python3 experiments/gpu/ncu_collect.py --ioattn "$C/ioattn" --out "$R" --seqlens $NS \
  --variants "${NCU_VARIANTS:-}" --naive-max "${NCU_NAIVE_MAX:-4096}" --timeout "${NCU_RUN_CAP:-120}" > "$R/ncu.log" 2>&1
echo "ncu rc=$?" | tee -a "$R/summary.txt"
tail -3 "$R/ncu.log"
fi

stage pack
python3 experiments/gpu/summarize.py "$R" > "$R/table.txt" 2>&1
tar czf "$OUT/h200_results.tar.gz" -C /tmp h200
cat "$R/summary.txt"
cat "$R/table.txt"

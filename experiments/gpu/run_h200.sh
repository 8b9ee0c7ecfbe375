#!/usr/bin/env bash
# experiments/gpu/run_h200.sh: everything the kernels need checked and measured on the H200.
#
#   bash experiments/gpu/run_h200.sh MODE        (from the repository root)
#
# Needs: build-gpu/carry/ beside the working tree, made by experiments/gpu/pack.sh on the build
# machine (the sm_90 binaries, libioattn_capi.so, the shared libraries the GPU image may lack, the
# commit they were built from); python3 with torch on the GPU machine; ncu and compute-sanitizer
# for the stages that use them. Builds nothing. Writes every log, JSON and CSV to a scratch results
# folder (${TMPDIR:-/tmp}/h200) and packs it into $OUT/h200_results.tar.gz (OUT defaults to that
# folder's parent); prints a short table last.
#
# Stages (each with its own time cap; a stage that would start with too little time left is
# reported as skipped, never silently dropped):
#   smoke     experiments/gpu/smoke.sh: each case of smoke_cases.txt (kernels not yet through the
#             suite) as its own `ioattn run --check` process; a variant with a failed case is
#             disabled (IOATTN_<ID>_DISABLE=1) for the stages after it, so its trap cannot take the
#             other variants' results with it (the suite then fails for it); cap T_SMOKE (150 s)
#   tests     the GPU suite (verify/kernels/gpu_kernels: every registered variant vs the reference;
#             one line `variant NAME: N cases run, M refused` per variant, fails when one ran no
#             case), beside compute-sanitizer memcheck and racecheck over its quick shapes
#   backward  the GPU backward suite (verify/kernels/gpu_backward: every registered backward's
#             dQ, dK, dV vs the float64 reference, determinism, refusals; one `variant NAME: ...`
#             line per backward), beside compute-sanitizer memcheck and racecheck of it
#             (IOATTN_GPU_QUICK=1 IOATTN_RC_SCALE=0.1); cap T_BWD (150 s)
#   pybad     python/test_bad_input.py: bad input to the Python front door (forward and
#             backward) is refused, nothing is written outside the outputs (rc 0 = pass)
#   autograd  python/test_autograd.py: torch.autograd gradients of ioattn.attention vs SDPA under
#             the error rule, torch.compile, opcheck (rc 0 = pass); cap T_AUTOGRAD (120 s)
#   ring      python/test_ring.py: ring and Ulysses context-parallel attention, P = 1, 2, 4, 8
#             simulated ranks on this one GPU (ioattn's kernels per block) vs single-GPU ioattn and
#             float64 under the error rule, forward and backward; log ring.log (rc 0 = pass); cap
#             T_RING (150 s). Mode ring, or RUN_STAGES=ring beside other stages
#   train     experiments/gpu/train_gpt.py: a small GPT trained with ioattn and with SDPA flash
#             from one initialization (loss curves, step time, peak memory); cap T_TRAIN (130 s)
#   example   python/example_compare_sdpa.py on two shapes
#   ncu       Nsight Compute DRAM/L2 bytes of every variant at N in {1k, 4k, 16k} (ncu_collect.py)
#   ceilings  copy bandwidth and bf16/fp16/fp32/fp8 e4m3 GEMM rates (ceilings.py, two samples)
#   bench     ioattn vs SDPA flash/cuDNN, the FA2 grid, two samples (bench_sdpa.py), passes
#             $BENCH_PASSES (default fwd; mode backward: bwd,fwdbwd, --quick grid)
#   tiles     v03_fa2_scalar over (Br, Bc) (bench_tiles.py)
#   v08tiles  every v08_fa3_warpspec configuration of the head dims in V08_DIMS (default
#             "64 96 128 192 256"): one --check on an odd causal GQA shape, then timed at N 2k/8k,
#             causal 0/1 (kernels/dev/v08_tiles.sh; one process per run, rows by IOATTN_V08_CONFIG);
#             writes v08tiles/v08_tiles.csv and .log; cap T_V08TILES (400 s). Mode v08tiles
#   fp8       FP8 forward: v09_fp8_wgmma on per-tensor e4m3 codes of the bf16 inputs beside the best
#             bf16 ioattn forward (v08, else v06) and SDPA cuDNN bf16 (and an SDPA FP8 backend if the
#             probe finds one), FA2 grid N 512-16k at d 64/128/256, causal 0/1, two samples, TFLOP/s
#             and the error on a slice vs float64 (bench_sdpa.py --dtypes fp8_e4m3; FP8_ARGS passed
#             on); its own results folder fp8/ (bench.csv, bench.json, fp8.log); prints the FP8
#             table; cap T_FP8 (170 s)
#   layouts   python/test_layouts.py: forward_varlen and forward_paged vs a per-sequence reference
#             and their refusals (rc 0 = pass); cap 90 s
#   varlen    a packed batch of 16 sequences vs SDPA on the padded batch (bench_varlen.py;
#             VARLEN_ARGS passed on, e.g. --quick); cap T_VARLEN (150 s)
#   decode    few queries vs a long KV cache, GB/s vs SDPA and the run's copy ceiling
#             (bench_decode.py; DECODE_ARGS passed on, e.g. --quick); cap T_DECODE (300 s)
# Modes (first argument) and what they take on the H200:
#   check    tests pybad example ncu              one call, budget 570 s (tests ~150 s, ncu the rest)
#   measure  ceilings bench tiles                 one call, budget 480 s (~20 + ~350 + ~40 s)
#   full     check + measure                      budget 1080 s: more than one 600 s call, for a
#                                                 machine without that limit
#   quick    tests pybad bench example ncu, small (fewer cases, bench N in {1k, 4k} d128 bf16,
#            ncu at N = 1k), budget 400 s
#   recheck  tests, and ncu for $NCU_SEQLENS x $NCU_VARIANTS, budget 400 s
#   ncu      only ncu for $NCU_SEQLENS x $NCU_VARIANTS (default N = 1k, all variants; NCU_PASSES=bwd
#            or fwd,bwd profiles the backward variants too, $NCU_BWD_VARIANTS or all), budget
#            $NCU_CAP (400 s); NCU_NAIVE_MAX (4096) is the largest N v01 is profiled at, NCU_RUN_CAP
#            (120 s) one profile's cap
#   bench    only the benchmark (two samples), budget 400 s
#   decode   only the decode benchmark, budget 400 s
#   fp8      only the FP8 forward benchmark (stage fp8), budget 200 s
#   ring     only the ring attention test (stage ring: python/test_ring.py), budget 180 s
#   core     tests pybad ceilings bench, budget 400 s: the least one call needs for a committed
#            run (T_TEST caps the tests, default 150 s; BENCH_ARGS are passed to bench_sdpa.py)
#   backward backward pybad autograd train bench (bench: --passes bwd,fwdbwd --quick, two
#            samples; the whole grid: BENCH_PASSES=bwd,fwdbwd with mode bench), budget 570 s
#            (caps 150 + 60 + 120 + 130 s, the bench what is left, at least ~90 s)
# NCU_ARGS are passed to ncu_collect.py (e.g. "--preset heldout").
# RUN_BUDGET overrides a mode's budget (seconds); T_BENCH caps the bench stage (default: what is left).
# RUN_STAGES="tests backward ncu" runs those stages under the mode's budget; TILES_ARGS are passed
# to bench_tiles.py (e.g. "--samples 2").
set -u
MODE=${1:-full}
case "$MODE" in
  check)   STAGES="tests pybad example ncu"; BUDGET=570 ;;
  measure) STAGES="ceilings bench tiles"; BUDGET=480 ;;
  full)    STAGES="tests pybad example ncu ceilings bench tiles"; BUDGET=1080 ;;
  quick)   STAGES="tests pybad bench example ncu"; BUDGET=400 ;;
  recheck) STAGES="tests ncu"; BUDGET=400 ;;
  ncu)     STAGES="ncu"; BUDGET=${NCU_CAP:-400} ;;
  bench)   STAGES="bench"; BUDGET=400 ;;
  decode)  STAGES="decode"; BUDGET=400 ;;
  fp8)     STAGES="fp8"; BUDGET=200 ;;
  ring)    STAGES="ring"; BUDGET=180 ;;
  v08tiles) STAGES="v08tiles"; BUDGET=${T_V08TILES:-400} ;;
  core)    STAGES="tests pybad ceilings bench"; BUDGET=400 ;;
  backward) STAGES="backward pybad autograd train bench"; BUDGET=570; BENCH_PASSES=${BENCH_PASSES:-bwd,fwdbwd} ;;
  *) echo "run_h200.sh: unknown mode '$MODE' (check, measure, full, quick, recheck, ncu, bench, decode, fp8, ring, v08tiles, core, backward)" >&2; exit 2 ;;
esac
BENCH_PASSES=${BENCH_PASSES:-fwd}
BUDGET=${RUN_BUDGET:-$BUDGET}
# RUN_STAGES (a space-separated list of the stage names above) replaces the mode's stages.
STAGES=${RUN_STAGES:-$STAGES}
ROOT=$(pwd)
C=$ROOT/build-gpu/carry
# pack.sh also writes build-gpu/carry.tar.xz (the same binaries, compressed): unpack it when only it came.
if [ ! -d "$C" ] && [ -f "$ROOT/build-gpu/carry.tar.xz" ]; then
  tar xJf "$ROOT/build-gpu/carry.tar.xz" -C "$ROOT/build-gpu" || { echo "run_h200.sh: cannot unpack build-gpu/carry.tar.xz" >&2; exit 2; }
fi
if [ ! -x "$C/gpu_kernels" ] || [ ! -f "$C/libioattn_capi.so" ] || [ ! -x "$C/ioattn" ]; then
  echo "run_h200.sh: build-gpu/carry/ lacks gpu_kernels, ioattn or libioattn_capi.so: run experiments/gpu/pack.sh after building (from the repository root)" >&2
  exit 2
fi
R=${TMPDIR:-/tmp}/h200
OUT=${OUT:-$(dirname "$R")}
rm -rf "$R" && mkdir -p "$R"
export LD_LIBRARY_PATH=$C/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export IOATTN_CAPI=$C/libioattn_capi.so PYTHONPATH=$ROOT/python PYTHONUNBUFFERED=1
T0=$(date +%s)
RESERVE=20  # seconds kept for the summary and the packing
stage() { echo "== $1 ($(( $(date +%s) - T0 )) s of $BUDGET)"; }
note() { echo "$1" | tee -a "$R/summary.txt"; }
# cap WANT: the seconds a stage may take: WANT, or what is left of the budget; 0 when under 10 s.
cap() { local left=$(( BUDGET - ($(date +%s) - T0) - RESERVE )); local c=$(( $1 < left ? $1 : left )); [ "$c" -lt 10 ] && c=0; echo "$c"; }
# want STAGE [WANT]: true when this mode runs STAGE and there is time for it (sets CAP).
want() {
  case " $STAGES " in *" $1 "*) ;; *) note "$1 skipped (not in mode $MODE)"; return 1 ;; esac
  CAP=$(cap "${2:-600}")
  if [ "$CAP" -eq 0 ]; then note "$1 NOT RUN: no time left in the $BUDGET s budget"; return 1; fi
  return 0
}

stage context
{
  echo "commit: $(cat "$C/COMMIT" 2>/dev/null)"
  echo "built: $(tr '\n' ' ' 2>/dev/null < "$C/BUILT")"
  # The scripts may be newer than the binaries: SCRIPTS_COMMIT names the tree the scripts came from.
  echo "scripts: ${SCRIPTS_COMMIT:-$(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)}$(git -C "$ROOT" -c core.fileMode=false status --porcelain --untracked-files=no 2>/dev/null | grep -q . && echo " (dirty tree)")"
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "command: bash experiments/gpu/run_h200.sh $MODE (budget $BUDGET s; stages $STAGES; NCU_SEQLENS=${NCU_SEQLENS:-} NCU_VARIANTS=${NCU_VARIANTS:-} NCU_PASSES=${NCU_PASSES:-} NCU_BWD_VARIANTS=${NCU_BWD_VARIANTS:-} BENCH_PASSES=$BENCH_PASSES BENCH_ARGS=${BENCH_ARGS:-} TILES_ARGS=${TILES_ARGS:-} DECODE_ARGS=${DECODE_ARGS:-} VARLEN_ARGS=${VARLEN_ARGS:-} NCU_ARGS=${NCU_ARGS:-} FP8_ARGS=${FP8_ARGS:-})"
  # Kernel selectors in the environment change what a variant runs (e.g. IOATTN_V08P_ORDER): named here.
  echo "environment: $(env | grep -E '^IOATTN_[A-Z0-9_]+=' | grep -v '^IOATTN_CAPI=' | sort | tr '\n' ' ')"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version())'
  uname -r
} > "$R/context.txt" 2>&1
cat "$R/context.txt"

if [ "$MODE" = quick ]; then SCALE=0.1; else SCALE=${TEST_SCALE:-1}; fi

# suite BIN LOG SAN_PREFIX SAN_SCALE: a GPU suite and compute-sanitizer memcheck + racecheck over its
# quick shapes, side by side (correctness only, nothing is timed there), each under the stage's $CAP.
suite() {
  local bin=$1 log=$2 san=$3 san_scale=$4 p_test tool i=0
  local -a p_san=()
  IOATTN_RC_SCALE=$SCALE OMP_NUM_THREADS=8 timeout "$CAP" "$C/$bin" > "$R/$log" 2>&1 &
  p_test=$!
  for tool in memcheck racecheck; do
    IOATTN_GPU_QUICK=1 IOATTN_RC_SCALE=$san_scale OMP_NUM_THREADS=4 timeout "$CAP" \
      compute-sanitizer --tool $tool --error-exitcode 9 "$C/$bin" > "$R/${san}$tool.log" 2>&1 &
    p_san+=($!)
  done
  wait $p_test; note "$bin rc=$? (0 pass, 1 a check failed or a variant ran no case, 124 timed out)"
  grep -E "^variant |FAIL|SKIPPED" "$R/$log" | head -40 | tee -a "$R/summary.txt"
  grep -E "property |named cases" "$R/$log" | head -20
  for tool in memcheck racecheck; do
    wait "${p_san[$i]}"
    note "compute-sanitizer $tool ($bin) rc=$? (0: clean and tests passed; 9: sanitizer errors; 1: a check failed; 124: timed out)"
    grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$R/${san}$tool.log" | head -3 | tee -a "$R/summary.txt"
    i=$((i + 1))
  done
}

stage "smoke: new kernels, one process per case"
if want smoke "${T_SMOKE:-150}"; then
  SMOKE_CAP=60 timeout "$CAP" bash experiments/gpu/smoke.sh "$C/ioattn" "$R" > "$R/smoke.txt" 2>&1
  note "smoke rc=$? (0: every case passed; 1: a case failed, its variant disabled below; 124: timed out)"
  tee -a "$R/summary.txt" < "$R/smoke.txt"
  # shellcheck disable=SC1091
  [ -f "$R/smoke.env" ] && . "$R/smoke.env" && tee -a "$R/summary.txt" < "$R/smoke.env"
fi

stage "gpu tests + memcheck + racecheck (in parallel)"
if want tests "${T_TEST:-150}"; then
  suite gpu_kernels test_gpu.log sanitizer_ 0.02
fi

stage "gpu backward tests + memcheck + racecheck (in parallel)"
if want backward "${T_BWD:-150}"; then
  if [ ! -x "$C/gpu_backward" ]; then
    note "backward NOT RUN: build-gpu/carry/ has no gpu_backward (build the target gpu_backward, then pack.sh)"
  else
    suite gpu_backward test_gpu_backward.log sanitizer_bwd_ 0.02
  fi
fi

stage "python bad-input test"
if want pybad 60; then
  timeout "$CAP" python3 python/test_bad_input.py > "$R/pybad.log" 2>&1
  note "python bad-input test rc=$? (0: every bad input refused, nothing written outside the outputs; 77: skipped, no GPU)"
  tail -1 "$R/pybad.log" | tee -a "$R/summary.txt"
fi

stage "python autograd test (ioattn.attention vs SDPA, torch.compile)"
if want autograd "${T_AUTOGRAD:-120}"; then
  timeout "$CAP" python3 python/test_autograd.py > "$R/autograd.log" 2>&1
  note "python autograd test rc=$? (0: every gradient within the error rule; 1: a case failed; 77: skipped; 124: timed out)"
  grep -E "^FAIL" "$R/autograd.log" | head -20 | tee -a "$R/summary.txt"
  tail -1 "$R/autograd.log" | tee -a "$R/summary.txt"
fi

stage "python ring attention test (simulated ranks on one GPU)"
if want ring "${T_RING:-150}"; then
  timeout "$CAP" python3 python/test_ring.py > "$R/ring.log" 2>&1
  note "python ring test rc=$? (0: every case within the error rule; 1: a case failed; 77: skipped; 124: timed out)"
  grep -E "^FAIL" "$R/ring.log" | head -20 | tee -a "$R/summary.txt"
  tail -1 "$R/ring.log" | tee -a "$R/summary.txt"
fi

stage "train a small GPT (ioattn vs SDPA flash)"
if want train "${T_TRAIN:-130}"; then
  timeout "$CAP" python3 experiments/gpu/train_gpt.py --out "$R" --time-budget-s $(( CAP > 40 ? CAP - 20 : CAP / 2 )) \
    > "$R/train_gpt.log" 2>&1
  note "train_gpt rc=$? (0: loss fell and the curves agree within the tolerance; 1: not; 124: timed out)"
  grep -E "^ioattn kernels|^estimate|^steps cut|^ioattn:|^sdpa:|^train_gpt:" "$R/train_gpt.log" | tee -a "$R/summary.txt"
fi

stage "python example (ctypes module on torch tensors vs SDPA)"
if want example 60; then
  EX=0
  H=$(( CAP / 2 ))
  timeout "$H" python3 python/example_compare_sdpa.py --seqlen 1000 --head-dim 128 > "$R/example.log" 2>&1 || EX=$?
  timeout "$H" python3 python/example_compare_sdpa.py --seqlen 777 --head-dim 64 --causal >> "$R/example.log" 2>&1 || EX=$?
  note "python example rc=$EX (0: every kernel within the example's error bound)"
  tail -4 "$R/example.log"
fi

stage ncu
# ncu takes what is left of the budget, except where later stages follow it (full, quick).
case "$MODE" in full|quick) NCU_WANT=300 ;; *) NCU_WANT=600 ;; esac
if want ncu $NCU_WANT; then
  if [ "$MODE" = quick ]; then NS=1024; else NS=1024,4096,16384; fi
  case "$MODE" in recheck|ncu) NS=${NCU_SEQLENS:-1024} ;; esac
  # NCU_PASSES: fwd (default), bwd or fwd,bwd; NCU_BWD_VARIANTS: the backwards (default: every one).
  note "ncu passes ${NCU_PASSES:-fwd}, N $NS, variants ${NCU_VARIANTS:-all}, backward variants ${NCU_BWD_VARIANTS:-all}"
  timeout "$CAP" python3 experiments/gpu/ncu_collect.py --ioattn "$C/ioattn" --out "$R" --seqlens "$NS" \
    --variants "${NCU_VARIANTS:-}" --passes "${NCU_PASSES:-fwd}" --bwd-variants "${NCU_BWD_VARIANTS:-}" \
    --naive-max "${NCU_NAIVE_MAX:-4096}" --timeout "${NCU_RUN_CAP:-120}" \
    --time-cap $(( CAP > 20 ? CAP - 5 : CAP )) ${NCU_ARGS:-} > "$R/ncu.log" 2>&1
  note "ncu rc=$?"
  tail -3 "$R/ncu.log"
fi

stage ceilings
if want ceilings 60; then
  timeout "$CAP" python3 experiments/gpu/ceilings.py --out "$R" > "$R/ceilings.log" 2>&1
  note "ceilings rc=$? (0: measured and every check passed)"
  tail -8 "$R/ceilings.log"
fi

stage bench
# The bench leaves room for the tiles after it (mode measure/full).
case " $STAGES " in *" tiles "*) BENCH_WANT=$(( $(cap 600) - 60 )) ;; *) BENCH_WANT=600 ;; esac
BENCH_WANT=${T_BENCH:-$BENCH_WANT}  # T_BENCH caps the bench when later stages need time
if want bench "$BENCH_WANT"; then
  case "$MODE" in quick|backward) BQ=--quick ;; *) BQ= ;; esac
  timeout "$CAP" python3 experiments/gpu/bench_sdpa.py --out "$R" $BQ --passes "$BENCH_PASSES" ${BENCH_ARGS:-} --samples 2 \
    --deadline-s $(( CAP > 80 ? CAP - 40 : CAP / 2 )) > "$R/bench.log" 2>&1
  note "bench rc=$?"
  tail -1 "$R/bench.log" | tee -a "$R/summary.txt"
fi

stage "fp8 forward (v09 vs the best bf16 ioattn and cuDNN bf16)"
if want fp8 "${T_FP8:-170}"; then
  mkdir -p "$R/fp8"
  timeout 60 python3 python/test_fp8_cpu.py > "$R/fp8/test_fp8_cpu.log" 2>&1
  note "python FP8 logic test (CPU) rc=$? (0: pass; 1: a check failed; 77: skipped)"
  tail -1 "$R/fp8/test_fp8_cpu.log" | tee -a "$R/summary.txt"
  timeout "$CAP" python3 experiments/gpu/bench_sdpa.py --out "$R/fp8" --dtypes fp8_e4m3 --head-dims 64,128,256 \
    --samples 2 ${FP8_ARGS:-} --deadline-s $(( CAP > 60 ? CAP - 30 : CAP / 2 )) > "$R/fp8/fp8.log" 2>&1
  note "fp8 bench rc=$? (0: ran; rows of a refused or failed implementation say why in bench.csv)"
  grep -A60 "^fp8 summary" "$R/fp8/fp8.log" | tee -a "$R/summary.txt"
  tail -1 "$R/fp8/fp8.log" | tee -a "$R/summary.txt"
fi

stage decode
if want decode "${T_DECODE:-300}"; then
  timeout "$CAP" python3 experiments/gpu/bench_decode.py --out "$R" ${DECODE_ARGS:-} \
    --deadline-s $(( CAP > 60 ? CAP - 30 : CAP / 2 )) > "$R/decode.log" 2>&1
  note "decode rc=$?"
  grep -A60 "^decode summary" "$R/decode.log" | tee -a "$R/summary.txt"
fi

stage "python layouts test (varlen, paged)"
if want layouts 90; then
  timeout "$CAP" python3 python/test_layouts.py > "$R/layouts.log" 2>&1
  note "python layouts test rc=$? (0: pass; 1: a case failed; 77: skipped)"
  tail -1 "$R/layouts.log" | tee -a "$R/summary.txt"
fi

stage varlen
if want varlen "${T_VARLEN:-150}"; then
  timeout "$CAP" python3 experiments/gpu/bench_varlen.py --out "$R" ${VARLEN_ARGS:-} > "$R/varlen.log" 2>&1
  note "varlen rc=$?"
  tail -12 "$R/varlen.log" | tee -a "$R/summary.txt"
fi

stage tiles
if want tiles 60; then
  timeout "$CAP" python3 experiments/gpu/bench_tiles.py --out "$R" ${TILES_ARGS:-} > "$R/tiles.log" 2>&1
  note "tiles rc=$?"
fi

stage "v08 configurations (kernels/dev/v08_tiles.sh)"
if want v08tiles "${T_V08TILES:-400}"; then
  timeout "$CAP" bash kernels/dev/v08_tiles.sh "$C/ioattn" "$R/v08tiles" "${V08_DIMS:-64 96 128 192 256}" \
    > "$R/v08tiles.out" 2>&1
  note "v08tiles rc=$? (0: every configuration passed its check; 124: the cap ended it, rows so far in v08tiles/v08_tiles.csv)"
  grep -c ": FAIL\|check: FAIL" "$R/v08tiles.out" | sed 's/^/v08tiles failed checks: /' | tee -a "$R/summary.txt"
fi

stage pack
python3 experiments/gpu/summarize.py "$R" > "$R/table.txt" 2>&1
# Paths of this machine in logs (Python warnings name their file) become repository-relative.
grep -rlF "$ROOT/" "$R" 2>/dev/null | xargs -r sed -i "s|$ROOT/||g"
echo "total: $(( $(date +%s) - T0 )) s (budget $BUDGET s)" | tee -a "$R/summary.txt"
mkdir -p "$OUT"
tar czf "$OUT/h200_results.tar.gz" -C "$(dirname "$R")" "$(basename "$R")"
ls -l "$OUT/h200_results.tar.gz"
cat "$R/summary.txt"
tail -c 9000 "$R/table.txt"

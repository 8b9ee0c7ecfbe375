#!/usr/bin/env bash
# kernels/dev/racecheck_new.sh: compute-sanitizer racecheck (and memcheck) of the code paths changed in
# one session, each as one small `ioattn run --check` process, for when the whole GPU suite under
# racecheck does not fit a device call (run_h200.sh's tests stage runs the suite's quick shapes).
#   bash kernels/dev/racecheck_new.sh IOATTN_CLI OUT_DIR          (from the repository root)
# TOOLS (default "racecheck"; e.g. "racecheck memcheck"), RC_CAP (seconds per process, 90), ONLY (an
# extended regex: only the cases whose variant matches it, e.g. ONLY='^(v07b|v08p)').
# Writes OUT_DIR/racecheck_new.log (every command and the sanitizer's output) and prints one line per
# case and tool: the summary line and the process's exit status (9: a hazard or error was reported).
set -u
CLI=$1
OUT=$2
mkdir -p "$OUT"
LOG=$OUT/racecheck_new.log
: > "$LOG"
CASES=(
  "v08_fa3_warpspec|--seqlen-q 517 --seqlen-k 403 --heads-q 4 --heads-kv 2 --head-dim 64 --dtype bf16 --causal"
  "v08_fa3_warpspec|--seqlen-q 300 --seqlen-k 700 --heads 2 --head-dim 96 --dtype fp16"
  "v08_fa3_warpspec|--seqlen-q 300 --seqlen-k 301 --heads 2 --head-dim 192 --dtype bf16 --causal"
  "v08_fa3_warpspec|--seqlen-q 257 --seqlen-k 555 --heads-q 3 --heads-kv 1 --head-dim 40 --dtype bf16 --window 37,5"
  "v08p_fa3_persistent|--batch 2 --seqlen-q 517 --seqlen-k 403 --heads-q 32 --heads-kv 8 --head-dim 64 --dtype bf16 --causal"
  "v08p_fa3_persistent|--batch 2 --seqlen-q 300 --seqlen-k 700 --heads 40 --head-dim 128 --dtype fp16"
  "v08p_fa3_persistent|--batch 2 --seqlen-q 300 --seqlen-k 301 --heads 24 --head-dim 256 --dtype bf16 --causal"
  "v08p_fa3_persistent|--batch 2 --seqlen-q 700 --seqlen-k 700 --heads 8 --head-dim 64 --dtype bf16 --window 200,0"
  "v08p_fa3_persistent|--batch 2 --seqlen-q 333 --seqlen-k 333 --heads 8 --head-dim 192 --dtype fp16 --causal"
  "v08_fa3_warpspec|--seqlen-q 300 --seqlen-k 1000 --heads-q 4 --heads-kv 2 --head-dim 128 --dtype bf16 --causal"
  "v08_fa3_warpspec|--seqlen-q 177 --seqlen-k 1000 --heads-q 4 --heads-kv 2 --head-dim 128 --dtype bf16 --bc 176"
  "v08p_fa3_persistent|--batch 2 --seqlen-q 300 --seqlen-k 1000 --heads 24 --head-dim 120 --dtype fp16 --causal --bc 176"
  "v08p_fa3_persistent|--batch 2 --seqlen-q 333 --seqlen-k 500 --heads 8 --head-dim 192 --dtype bf16 --causal --bc 112"
  "v08_fa3_warpspec|--seqlen-q 257 --seqlen-k 555 --heads-q 4 --heads-kv 2 --head-dim 184 --dtype fp16 --window 37,5 --bc 112"
  "v09_fp8_wgmma|--dtype fp8_e4m3 --seqlen-q 200 --seqlen-k 333 --heads 2 --head-dim 256 --causal"
  "v09_fp8_wgmma|--dtype fp8_e4m3 --seqlen-q 200 --seqlen-k 333 --heads 2 --head-dim 128"
  "v10_fp8_warpspec|--dtype fp8_e4m3 --seqlen-q 200 --seqlen-k 333 --heads 2 --head-dim 256 --causal"
  "v10_fp8_warpspec|--dtype fp8_e4m3 --seqlen-q 300 --seqlen-k 701 --heads-q 4 --heads-kv 2 --head-dim 128"
  "v10_fp8_warpspec|--dtype fp8_e4m3 --seqlen-q 257 --seqlen-k 555 --heads-q 3 --heads-kv 1 --head-dim 64 --window 37,5"
  "v07_decode_splitkv|--seqlen-q 4 --seqlens-k 3001,77,1 --page-size 7 --shuffle-pages --heads-q 16 --heads-kv 2 --head-dim 128 --dtype bf16 --causal"
  "v07_decode_splitkv|--seqlen-q 16 --seqlens-k 1500,255 --page-size 256 --shuffle-pages --heads-q 32 --heads-kv 8 --head-dim 128 --dtype fp16"
  "v07_decode_splitkv|--batch 1 --heads-q 32 --heads-kv 8 --seqlen-q 1 --seqlen-k 8192 --head-dim 128 --dtype bf16"
  "v07b_decode_wgmma|--seqlen-q 4 --seqlens-k 3001,77,1,0 --page-size 7 --shuffle-pages --heads-q 16 --heads-kv 2 --head-dim 128 --dtype bf16 --causal"
  "v07b_decode_wgmma|--seqlen-q 16 --seqlens-k 1500,255 --page-size 256 --shuffle-pages --heads-q 32 --heads-kv 8 --head-dim 128 --dtype fp16"
  "v07b_decode_wgmma|--batch 1 --heads-q 32 --heads-kv 8 --seqlen-q 64 --seqlen-k 2000 --head-dim 128 --dtype bf16 --causal"
  "v07b_decode_wgmma|--batch 2 --heads-q 16 --heads-kv 1 --seqlen-q 8 --seqlen-k 999 --head-dim 64 --dtype bf16 --splits 5"
  "v07b_decode_wgmma|--batch 1 --heads-q 32 --heads-kv 8 --seqlen-q 16 --seqlen-k 777 --head-dim 256 --dtype bf16"
)
for tool in ${TOOLS:-racecheck}; do
  for c in "${CASES[@]}"; do
    k=${c%%|*}; a=${c#*|}
    [[ -n ${ONLY:-} && ! $k =~ $ONLY ]] && continue
    one=$OUT/one.txt
    # shellcheck disable=SC2086
    timeout "${RC_CAP:-90}" compute-sanitizer --tool $tool --error-exitcode 9 "$CLI" run --kernel "$k" $a \
      --check --iters 1 --warmup 0 > "$one" 2>&1
    rc=$?
    { echo "== $tool $k $a (rc=$rc)"; cat "$one"; } >> "$LOG"
    s=$(grep -m1 -E "RACECHECK SUMMARY|ERROR SUMMARY" "$one" || echo "no summary")
    chk=$(grep -c -E "check $k (O|LSE) PASS" "$one")
    echo "$tool rc=$rc checks_passed=$chk/2 $k $a :: $s"
  done
done
rm -f "$OUT/one.txt"

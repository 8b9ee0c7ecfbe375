#!/usr/bin/env bash
# kernels/dev/racecheck_shape.sh: the one shape at which the whole-suite racecheck failed at 2aa0ed3
# (B 1, H 1, Nq 72, Nk 140, d 64 bf16 causal: v08 trapped, v08p ran past 45 s; plain runs pass),
# varied one factor at a time under compute-sanitizer, to tell a protocol bug from the tool:
# launches per process, ping-pong off, Br 128, no mask, Nq 130, another shape, synccheck, memcheck,
# and a diagnostic build (IOATTN_WS_DIAG: each bounded wait that gives up prints its barrier).
#   bash kernels/dev/racecheck_shape.sh IOATTN_CLI DIAG_CLI OUT_DIR
# JOBS processes at a time (default 6), CAP seconds each (default 90). Writes OUT_DIR/<n>.txt per case
# and prints one line per case: exit status (124: still running at CAP; 9: a hazard or error
# reported), O/LSE checks passed, the sanitizer's summary, "gave up" lines of the diagnostic build.
set -u
CLI=$1 DIAG=$2 OUT=$3
mkdir -p "$OUT"
S="--batch 1 --heads 1 --seqlen-q 72 --seqlen-k 140 --head-dim 64 --dtype bf16"
R1="--iters 1 --warmup 0"
R4="--iters 4 --warmup 1"
# id|env|tool|binary|kernel|args
CASES=(
  "01||racecheck|$CLI|v08_fa3_warpspec|$S --causal $R1"
  "02||racecheck|$CLI|v08_fa3_warpspec|$S --causal $R4"
  "03|IOATTN_V08_CONFIG=d64_br192_bc128_s2_pp0|racecheck|$CLI|v08_fa3_warpspec|$S --causal $R4"
  "04||racecheck|$CLI|v08_fa3_warpspec|$S --causal --br 128 $R4"
  "05||racecheck|$CLI|v08_fa3_warpspec|$S $R4"
  "06||racecheck|$CLI|v08_fa3_warpspec|${S/--seqlen-q 72/--seqlen-q 130} --causal $R4"
  "07||racecheck|$CLI|v08_fa3_warpspec|--seqlen-q 517 --seqlen-k 403 --heads-q 4 --heads-kv 2 --head-dim 64 --dtype bf16 --causal --iters 8 --warmup 1"
  "08||racecheck|$CLI|v08p_fa3_persistent|$S --causal $R1"
  "09|IOATTN_V08P_ROWS=block|racecheck|$CLI|v08p_fa3_persistent|$S --causal $R4"
  "10|IOATTN_V08_CONFIG=d64_br192_bc128_s2_pp0|racecheck|$CLI|v08p_fa3_persistent|$S --causal $R4"
  "11||racecheck|$CLI|v08p_fa3_persistent|$S --causal --br 128 $R4"
  "12||racecheck|$CLI|v08p_fa3_persistent|$S $R4"
  "13||synccheck|$CLI|v08_fa3_warpspec|$S --causal $R4"
  "14||synccheck|$CLI|v08p_fa3_persistent|$S --causal $R4"
  "15||racecheck|$DIAG|v08_fa3_warpspec|$S --causal $R4"
  "16||racecheck|$DIAG|v08p_fa3_persistent|$S --causal $R4"
  "17||memcheck|$CLI|v08p_fa3_persistent|$S --causal $R4"
  "18||racecheck|$CLI|v08p_fa3_persistent|--batch 2 --seqlen-q 517 --seqlen-k 403 --heads-q 32 --heads-kv 8 --head-dim 64 --dtype bf16 --causal $R4"
)
one() {
  local id=$1 env=$2 tool=$3 bin=$4 k=$5 a=$6
  # shellcheck disable=SC2086
  { echo "== $id env=[$env] $tool $(basename "$bin") $k $a"
    env $env timeout "${CAP:-90}" compute-sanitizer --tool "$tool" --error-exitcode 9 "$bin" run --kernel "$k" $a --check
    echo "rc=$?"; } > "$OUT/$id.txt" 2>&1
}
running=0
for c in "${CASES[@]}"; do
  IFS='|' read -r id env tool bin k a <<< "$c"
  one "$id" "$env" "$tool" "$bin" "$k" "$a" &
  running=$((running + 1))
  if [ "$running" -ge "${JOBS:-6}" ]; then wait -n; running=$((running - 1)); fi
done
wait
for c in "${CASES[@]}"; do
  IFS='|' read -r id env tool bin k a <<< "$c"
  f=$OUT/$id.txt
  rc=$(grep -o '^rc=[0-9]*' "$f" | tail -1)
  chk=$(grep -c -E "check $k (O|LSE) PASS" "$f")
  s=$(grep -m1 -E "SUMMARY" "$f" | sed 's/=* *//' || true)
  gave=$(grep -c "gave up" "$f")
  echo "$id $rc checks=$chk/2 gave_up=$gave [$env] $tool $(basename "$bin") $k :: ${s:-no summary}"
done

#!/usr/bin/env bash
# kernels/dev/v08_tiles.sh: every v08_fa3_warpspec configuration of the asked head dims, checked once
# on an odd shape and then timed on the benchmark shapes, one process per run (a trap ends only its
# own process, as in experiments/gpu/smoke.sh).
#
#   bash kernels/dev/v08_tiles.sh IOATTN_CLI OUT_DIR ["64 96 128 192 256"]     (from the repository root)
#
# The configurations are read from kConfigs in kernels/v08_fa3_warpspec.hip (its V08_CONFIG rows) and
# chosen by name through IOATTN_V08_CONFIG, so the rows that share a tile with another (a different
# stage count, ping-pong off) are measured too; --br/--bc alone reach only the first row of a tile.
# Check shape: Nq 517, Nk 1203, 4 query / 2 K/V heads, causal (bottom-right), fp16, --check.
# Timed shapes: batch x N = 16384, heads = 2048 / d (hidden 2048), bf16, non-causal and causal, N in
# V08_SEQLENS (default "2048 8192"); `ioattn run`'s timing (CUDA events, median of --iters 20, L2 not
# flushed: for comparing configurations with each other, not for the README's tables).
# Env: V08_SEQLENS, V08_DTYPE (bf16), V08_CAP (seconds per process, 60).
# Writes OUT_DIR/v08_tiles.log (each command and its output) and OUT_DIR/v08_tiles.csv with the
# columns config,head_dim,seqlen,causal,status,median_ms,tflops (status: pass / FAIL for the
# check, ok / refused (exit 2) / error for a timed run).
set -u
CLI=$1
OUT=$2
DIMS=${3:-"64 96 128 192 256"}
SEQLENS=${V08_SEQLENS:-"2048 8192"}
DTYPE=${V08_DTYPE:-bf16}
CAP=${V08_CAP:-60}
SRC=kernels/v08_fa3_warpspec.hip
mkdir -p "$OUT"
LOG=$OUT/v08_tiles.log
CSV=$OUT/v08_tiles.csv
: > "$LOG"
echo "config,head_dim,seqlen,causal,status,median_ms,tflops" > "$CSV"

# One field of the JSON object `ioattn run --json` printed last (empty when there is none).
field() { python3 -c 'import json,sys
lines=[l for l in sys.stdin.read().splitlines() if l.startswith("{")]
print(json.loads(lines[-1]).get(sys.argv[1], "") if lines else "")' "$1"; }

# "class name" for every row of kConfigs: V08_CONFIG(d, br, bc, stages, pingpong), V08_CONFIG_PIN
# (the same, softmax pinned: name ..._pin) and V08_CONFIG_FROM(..., keys) (a default from that many
# keys on; by name it runs at any length).
configs=$(grep -oE 'V08_CONFIG(_PIN|_FROM)?\([0-9]+, *[0-9]+, *[0-9]+, *[0-9]+, *[0-9]+(, *[0-9]+)?\)' "$SRC" |
  sed -E 's/V08_CONFIG(_PIN|_FROM)?\(([0-9]+), *([0-9]+), *([0-9]+), *([0-9]+), *([0-9]+)(, *[0-9]+)?\)/\2 d\2_br\3_bc\4_s\5_pp\6\1/; s/_PIN$/_pin/; s/_FROM$//')
[ -n "$configs" ] || { echo "v08_tiles.sh: no V08_CONFIG rows found in $SRC" >&2; exit 2; }

# The head-dim class of d (as head_dim_class() in the kernel file).
class_of() { if [ "$1" -le 64 ]; then echo 64; elif [ "$1" -le 96 ]; then echo 96; elif [ "$1" -le 128 ]; then
  echo 128; elif [ "$1" -le 192 ]; then echo 192; else echo 256; fi; }

rc_all=0
for d in $DIMS; do
  cls=$(class_of "$d")
  heads=$((2048 / d)); [ "$heads" -ge 1 ] || heads=1
  while read -r c name; do
    [ "$c" = "$cls" ] || continue
    args="--seqlen-q 517 --seqlen-k 1203 --heads-q 4 --heads-kv 2 --head-dim $d --dtype fp16 --causal"
    echo "== IOATTN_V08_CONFIG=$name ioattn run --kernel v08_fa3_warpspec $args --check --json" >> "$LOG"
    # shellcheck disable=SC2086
    res=$(IOATTN_V08_CONFIG=$name timeout "$CAP" "$CLI" run --kernel v08_fa3_warpspec $args --check --json 2>&1)
    rc=$?
    echo "$res" >> "$LOG"; echo "rc=$rc" >> "$LOG"
    st=$([ $rc -eq 0 ] && echo pass || echo FAIL)
    [ $rc -eq 0 ] || rc_all=1
    echo "$name,$d,517,1,$st,$(echo "$res" | field median_ms),$(echo "$res" | field tflops)" >> "$CSV"
    echo "v08 $name d=$d check: $st"
    [ $rc -eq 0 ] || continue  # a failing configuration is not timed
    for n in $SEQLENS; do
      batch=$((16384 / n)); [ "$batch" -ge 1 ] || batch=1
      for causal in 0 1; do
        args="--seqlen $n --batch $batch --heads $heads --head-dim $d --dtype $DTYPE"
        [ "$causal" = 1 ] && args="$args --causal"
        echo "== IOATTN_V08_CONFIG=$name ioattn run --kernel v08_fa3_warpspec $args --json" >> "$LOG"
        # shellcheck disable=SC2086
        res=$(IOATTN_V08_CONFIG=$name timeout "$CAP" "$CLI" run --kernel v08_fa3_warpspec $args --json 2>&1)
        rc=$?
        echo "$res" >> "$LOG"; echo "rc=$rc" >> "$LOG"
        st=$([ $rc -eq 0 ] && echo ok || { [ $rc -eq 2 ] && echo refused || echo error; })
        ms=$(echo "$res" | field median_ms); tf=$(echo "$res" | field tflops)
        echo "$name,$d,$n,$causal,$st,$ms,$tf" >> "$CSV"
        echo "v08 $name d=$d N=$n causal=$causal: $st ${tf:+$tf TFLOP/s}"
      done
    done
  done <<< "$configs"
done
exit $rc_all

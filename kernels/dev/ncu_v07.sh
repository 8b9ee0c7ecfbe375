#!/usr/bin/env bash
# kernels/dev/ncu_v07.sh: Nsight Compute DRAM bytes and kernel time of a decode kernel (v07_decode_splitkv
# unless KERNEL= names another, e.g. v07b_decode_wgmma) on decode points (32 query heads over 8 K/V heads,
# d 128, bf16; contiguous and a shuffled cache of 16-key pages).
#   bash kernels/dev/ncu_v07.sh IOATTN_CLI OUT_DIR                  (from the repository root, on the GPU machine)
#   POINTS=grid bash kernels/dev/ncu_v07.sh IOATTN_CLI OUT_DIR      the 14-point grid below (~5 min on the H200)
#   KERNEL=v07b_decode_wgmma POINTS=grid bash kernels/dev/ncu_v07.sh IOATTN_CLI OUT_DIR
# Writes OUT_DIR/ncu_v07.txt: per case a line "== ioattn run ARGS", the launch's config line and ncu's
# per-kernel metrics (CSV rows: the main kernel and the combine). simulator/validate/decode_ncu.py reads it
# and puts the model (`ioattn simulate --kernel KERNEL` with the same flags and the launch's splits) beside it.
#
# POINTS unset (default, as first committed): one query, 128k keys, batch 16 and 1, contiguous and page 16;
# `ioattn run --iters 1 --warmup 0` under ncu's default clock control, so each kernel appears twice (the
# checked launch and the timed one). Batch 16 at 128k keys is refused by `ioattn run` on a 128 GiB host
# (the generated inputs' float64 budget, reference/memory.cpp), so only the batch-1 points give rows.
#
# POINTS=grid: seqlen_q 1/4/16 x batch 1/16 x seqlen_k 16k/128k x page 0/16, 14 points (batch 64 at 16k
# keys for two of them; batch 16 at 128k keys is refused, above). Each point: the config line from
# `ioattn kernels --config` (no inputs generated), then one ncu process over `ioattn run --profile`
# (--profile-from-start off: only the profiled launch, each kernel once; --clock-control none, as
# experiments/gpu/ncu_collect.py: clocks as in the benchmarks), with the sections SpeedOfLight,
# ComputeWorkloadAnalysis and WarpStateStats beside the byte/time metrics (pipe utilization and stall
# reasons, to tell a compute-bound tile loop from a stalled stream); if that ncu call gives no row it is
# repeated with the four metrics alone. Cost per point: the input generation on the host (about 3 s
# per 100M elements of K and V; batch 64 at 16k keys is ~2.1G) plus ncu's start-up (5-15 s). Points are in
# order of use (sixteen queries first); NCU_BUDGET_S (default 540) stops starting new points past it
# (a point already started may run on: one ncu process is capped at 240 s, with no retry after a
# timeout), and the file says which were skipped. Each case ends with "elapsed_s N" (seconds since
# the start). Under a 600 s cap, give NCU_BUDGET_S=300 when the batch-64 points must not start late.
set -u
CLI=$1
OUT=$2
KERNEL=${KERNEL:-v07_decode_splitkv}
POINTS=${POINTS:-}
BUDGET=${NCU_BUDGET_S:-540}
mkdir -p "$OUT"
F=$OUT/ncu_v07.txt
: > "$F"
METRICS=dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,gpu__time_duration.sum
HEADS="--heads-q 32 --heads-kv 8 --head-dim 128 --dtype bf16"
T0=$(date +%s)

if [ -z "$POINTS" ]; then
  for b in 16 1; do
    for page in "" "--page-size 16 --shuffle-pages"; do
      args="--kernel $KERNEL --batch $b --heads-q 32 --heads-kv 8 --seqlen-q 1 --seqlen-k 131072 --head-dim 128 --dtype bf16 $page"
      echo "== ioattn run $args" >> "$F"
      # shellcheck disable=SC2086
      "$CLI" run $args --iters 1 --warmup 0 2>&1 | grep -E "^config|^problem" >> "$F"
      # shellcheck disable=SC2086
      timeout 60 ncu --metrics $METRICS \
        --csv "$CLI" run $args --iters 1 --warmup 0 2>&1 | grep -E '^"' >> "$F"
    done
  done
  echo "wrote $F"
  exit 0
fi

if [ "$POINTS" != grid ]; then
  echo "ncu_v07.sh: POINTS must be unset or grid (got '$POINTS')" >&2
  exit 2
fi

# seqlen_q batch seqlen_k page_size (0: contiguous; else shuffled pages of that many keys)
GRID="16 16 16384 0
16 16 16384 16
16 1 131072 0
16 1 131072 16
16 1 16384 0
1 16 16384 0
1 16 16384 16
1 1 131072 0
1 1 131072 16
4 16 16384 0
4 16 16384 16
4 1 131072 16
1 64 16384 0
16 64 16384 16"

echo "# POINTS=grid KERNEL=$KERNEL NCU_BUDGET_S=$BUDGET" >> "$F"
while read -r q b nk page; do
  now=$(($(date +%s) - T0))
  pflags=""
  [ "$page" != 0 ] && pflags="--page-size $page --shuffle-pages"
  problem="--batch $b $HEADS --seqlen-q $q --seqlen-k $nk $pflags"
  if [ "$now" -gt $((BUDGET - 45)) ]; then
    echo "# skipped (NCU_BUDGET_S $BUDGET, ${now} s used): --kernel $KERNEL $problem" >> "$F"
    continue
  fi
  echo "== ioattn run --kernel $KERNEL $problem" >> "$F"
  # The launch configuration (tile, stages, CTAs per SM, splits) without generating inputs.
  # shellcheck disable=SC2086
  "$CLI" kernels --config $problem 2>&1 | grep -E "^$KERNEL " | sed -E "s/^$KERNEL +/config  /" >> "$F"
  tmp=$OUT/.ncu_point.csv
  # shellcheck disable=SC2086
  # 240 s per ncu process: the batch-64 points generate ~2.1G input elements on the host first.
  timeout 240 ncu --clock-control none --profile-from-start off --print-units base --csv \
    --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --metrics $METRICS \
    "$CLI" run --kernel "$KERNEL" $problem --profile 2>&1 | grep -E '^"' > "$tmp"
  rc=${PIPESTATUS[0]}
  if [ "$rc" = 124 ]; then
    echo "# ncu ran past 240 s (timeout); no retry" >> "$F"
  elif ! grep -q '^"[0-9]' "$tmp"; then
    echo "# sections gave no row (ncu exit $rc); metrics only" >> "$F"
    # shellcheck disable=SC2086
    timeout 240 ncu --clock-control none --profile-from-start off --print-units base --csv --metrics $METRICS \
      "$CLI" run --kernel "$KERNEL" $problem --profile 2>&1 | grep -E '^"' > "$tmp"
  fi
  cat "$tmp" >> "$F"
  rm -f "$tmp"
  echo "elapsed_s $(($(date +%s) - T0))" >> "$F"
done <<< "$GRID"
echo "wrote $F ($(grep -c '^== ' "$F") points, $(($(date +%s) - T0)) s)"

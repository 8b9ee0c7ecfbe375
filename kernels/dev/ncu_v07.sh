#!/usr/bin/env bash
# kernels/dev/ncu_v07.sh: Nsight Compute DRAM bytes and kernel time of v07_decode_splitkv on the decode
# points the simulator's layout model is compared with (batch 16 and 1, one query, 32 query heads over
# 8 K/V heads, d 128, bf16, 128k keys; contiguous and a shuffled cache of 16-key pages).
#   bash kernels/dev/ncu_v07.sh IOATTN_CLI OUT_DIR        (from the repository root, on the GPU machine)
# Writes OUT_DIR/ncu_v07.txt: per case the command and ncu's per-kernel metrics (main kernel and the
# combine; --iters 1 --warmup 0, so each kernel appears once). Model side: ioattn simulate --machine
# h200 --kernel v07_decode_splitkv with the same flags and the launch's splits (`ioattn run` prints them).
set -u
CLI=$1
OUT=$2
mkdir -p "$OUT"
F=$OUT/ncu_v07.txt
: > "$F"
for b in 16 1; do
  for page in "" "--page-size 16 --shuffle-pages"; do
    args="--kernel v07_decode_splitkv --batch $b --heads-q 32 --heads-kv 8 --seqlen-q 1 --seqlen-k 131072 --head-dim 128 --dtype bf16 $page"
    echo "== ioattn run $args" >> "$F"
    # shellcheck disable=SC2086
    "$CLI" run $args --iters 1 --warmup 0 2>&1 | grep -E "^config|^problem" >> "$F"
    # shellcheck disable=SC2086
    timeout 60 ncu --metrics dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,gpu__time_duration.sum \
      --csv "$CLI" run $args --iters 1 --warmup 0 2>&1 | grep -E '^"' >> "$F"
  done
done
echo "wrote $F"

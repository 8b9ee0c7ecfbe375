#!/usr/bin/env bash
# kernels/dev/first_contact.sh: the first GPU run of the rungs written in session 7 (v08p_fa3_persistent,
# v07b_decode_wgmma, v10_fp8_warpspec) and of the FP8 baseline study, in one device call (~9 min).
#   bash kernels/dev/first_contact.sh OUT_DIR      (repository root; binaries in build-gpu/carry)
# See kernels/dev/NEXT_GPU_RUN.md for what each step checks and what counts as a pass.
set -u
C=build-gpu/carry; B=$C/ioattn; O=$1; mkdir -p "$O"
export IOATTN_CAPI=$PWD/$C/libioattn_capi.so PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1
T0=$(date +%s); t() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
cat $C/COMMIT $C/BUILT > "$O/binaries.txt"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> "$O/binaries.txt"
(timeout 300 bash kernels/dev/fp8_promote.sh $B 12 0 > "$O/fp8_promote_baselines.txt" 2>&1; echo "rc=$?" >> "$O/fp8_promote_baselines.txt") &
FP=$!
t smoke; grep -E '^(v07b|v08p|v10|v08_fa3)' experiments/gpu/smoke_cases.txt > "$O/smoke_cases.txt"
SMOKE_CAP=40 timeout 160 bash experiments/gpu/smoke.sh $B "$O/smoke" "$O/smoke_cases.txt" > "$O/smoke_summary.txt" 2>&1
grep -c "rc=0" "$O/smoke_summary.txt"; grep -v "rc=0" "$O/smoke_summary.txt" | head -20
# shellcheck disable=SC1091
source "$O/smoke/smoke.env"; cat "$O/smoke/smoke.env"
t suite; IOATTN_GPU_VARIANTS=v08p_fa3_persistent,v08_fa3_warpspec,v07b_decode_wgmma,v07_decode_splitkv,v10_fp8_warpspec \
  timeout 150 $C/gpu_kernels > "$O/suite.log" 2>&1; echo "suite rc=$?"; grep -E "^variant|FAIL|PARTIAL|PASS|cases run" "$O/suite.log" | tail -25
t ctas3; IOATTN_GPU_QUICK=1 IOATTN_V08P_CTAS=3 IOATTN_GPU_VARIANTS=v08p_fa3_persistent timeout 45 $C/gpu_kernels > "$O/suite_ctas3.log" 2>&1; echo "ctas3 rc=$?"; tail -3 "$O/suite_ctas3.log"
t persist-speed
for d in 64 128; do H=$([ $d = 128 ] && echo 16 || echo 32); for N in 512 1024 2048 8192; do Bt=$((16384 / N)); for c in "" "--causal"; do for k in v08_fa3_warpspec v08p_fa3_persistent; do
  echo "== $k d=$d N=$N B=$Bt H=$H ${c:-noncausal}"; timeout 20 $B run --kernel $k --batch $Bt --seqlen $N --heads $H --head-dim $d --dtype bf16 $c --iters 30 --warmup 5 2>&1 | grep -E "median|TFLOP|error|refused"
done; done; done; done > "$O/persist_speed.txt" 2>&1
t fp8-speed
for d in 128 256; do H=$((2048 / d)); for n in 4096 16384; do Bt=$((16384 / n)); for c in "" --causal; do
  P="--batch $Bt --heads $H --seqlen $n --head-dim $d $c --iters 20 --warmup 5"; echo "== d $d N $n B $Bt $c"
  for kv in "v10_fp8_warpspec fp8_e4m3 " "v10_fp8_warpspec fp8_e4m3 fast" "v09_fp8_wgmma fp8_e4m3 " "v09_fp8_wgmma fp8_e4m3 fast" "v08_fa3_warpspec bf16 "; do
    set -- $kv; echo "-- $1 $2 promote=${3:-default}"
    IOATTN_V10_S_PROMOTE=${3:-} IOATTN_V09_S_PROMOTE=${3:-} timeout 25 $B run --kernel $1 --dtype $2 $P 2>&1 | grep -E "median|TFLOP|error|refused"
  done; done; done; done > "$O/v10_speed.txt" 2>&1
t decode-speed
timeout 60 python3 experiments/gpu/bench_decode.py --out "$O/decode16k" --seqlens-q 16 --seqlens-k 16384 --batches 1,16,64 --page-sizes 0,16 --variants v07_decode_splitkv,v07b_decode_wgmma --samples 1 --reps 20 > "$O/decode16k.log" 2>&1; echo "decode16k rc=$?"; tail -8 "$O/decode16k.log"
timeout 60 python3 experiments/gpu/bench_decode.py --out "$O/decode128k" --seqlens-q 16 --seqlens-k 131072 --batches 1,16 --page-sizes 0,16 --variants v07_decode_splitkv,v07b_decode_wgmma --samples 1 --reps 20 > "$O/decode128k.log" 2>&1; echo "decode128k rc=$?"; tail -8 "$O/decode128k.log"
t wait-fp8; wait $FP; tail -12 "$O/fp8_promote_baselines.txt"
t done

#!/usr/bin/env bash
# kernels/dev/br64_first_run.sh: the first GPU run of v08's Br 64 rows (one consumer warpgroup, two
# CTAs per SM; written in session 14 after its device time was spent), in one device call (~4 min).
#   bash kernels/dev/br64_first_run.sh CARRY OUT_DIR     (repository root; CARRY = build-gpu/carry or a
#                                                         carried copy with ioattn, gpu_kernels, the C ABI)
# In order: the launch configuration of each row (ctas_per_sm must read 2), a --check of each row on
# odd causal GQA shapes, the v08/v08p suite (its tile cases 21/26/27/28 run --br 64; a failure there
# is the new code), racecheck and memcheck of two --br 64 cases, then the speed of each Br 64 row
# beside its class's default under bench_sdpa.py at N 512-4k, two processes per configuration in
# opposite orders. What counts as a pass: kernels/dev/NEXT_GPU_RUN.md, item (1).
set -u
C=$1 O=$2
mkdir -p "$O"
export LD_LIBRARY_PATH=$PWD/$C/lib:${LD_LIBRARY_PATH:-}
CM=$(cat "$C/COMMIT")
CLI=$C/ioattn
T0=$(date +%s); t() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv > "$O/gpu.txt" 2>&1
ROWS="64:d64_br64_bc128_s2_pp0 128:d128_br64_bc64_s2_pp0"
DEFAULTS="64:d64_br192_bc128_s2_pp1 128:d128_br128_bc128_s2_pp0"

t config-and-check
for r in $ROWS; do
  d=${r%%:*} n=${r#*:}
  for k in v08_fa3_warpspec v08p_fa3_persistent; do
    echo "== $n $k"
    IOATTN_V08_CONFIG=$n timeout 30 "$CLI" run --kernel $k --batch 2 --heads-q 8 --heads-kv 2 --seqlen-q 517 \
      --seqlen-k 1003 --head-dim $d --dtype bf16 --causal --check --json 2>&1 | grep -E "PASS|FAIL|config|error" | head -4
  done
done > "$O/config_check.txt" 2>&1
grep -c "\"check_pass\":true" "$O/config_check.txt"; grep -E "check_pass\":false|error" "$O/config_check.txt" | head

t suite
V=v08_fa3_warpspec,v08p_fa3_persistent
IOATTN_GPU_VARIANTS=$V IOATTN_RC_SCALE=1 OMP_NUM_THREADS=8 timeout 230 "$C/gpu_kernels" > "$O/test_gpu.log" 2>&1
echo "suite rc=$?"; grep -E "cases run|named cases|FAIL" "$O/test_gpu.log" | head -12

t sanitizers
for tool in racecheck memcheck; do
  for a in "v08p_fa3_persistent --batch 2 --seqlen-q 517 --seqlen-k 403 --heads-q 32 --heads-kv 8 --head-dim 64 --dtype bf16 --causal --br 64" \
           "v08_fa3_warpspec --seqlen-q 300 --seqlen-k 1000 --heads-q 4 --heads-kv 2 --head-dim 128 --dtype fp16 --br 64"; do
    timeout 90 compute-sanitizer --tool $tool --error-exitcode 9 "$CLI" run --kernel $a --check >> "$O/sanitizers.log" 2>&1
    echo "$tool rc=$? [$a]"
  done
done

t speed
B="python3 experiments/gpu/bench_sdpa.py --passes fwd --samples 2 --seqlens 512,1024,2048,4096 --commit $CM --variants v08p_fa3_persistent --dtypes bf16 --peers sdpa:cudnn --deadline-s 30"
for pair in "$ROWS $DEFAULTS" "$DEFAULTS $ROWS"; do
  for r in $pair; do
    d=${r%%:*} n=${r#*:}
    tag=$n; [ -d "$O/speed/$tag" ] && tag=${n}_again
    IOATTN_V08_CONFIG=$n IOATTN_CAPI=$C/libioattn_capi.so timeout 45 $B --out "$O/speed/$tag" --head-dims $d > "$O/speed_$tag.log" 2>&1
    echo "$tag rc=$?"
  done
done
S=$O/speed
python3 experiments/gpu/compare_builds.py --impl ioattn:v08p_fa3_persistent br64=$S/d64_br64_bc128_s2_pp0 br64b=$S/d64_br64_bc128_s2_pp0_again \
  default=$S/d64_br192_bc128_s2_pp1 defaultb=$S/d64_br192_bc128_s2_pp1_again
python3 experiments/gpu/compare_builds.py --impl ioattn:v08p_fa3_persistent br64=$S/d128_br64_bc64_s2_pp0 br64b=$S/d128_br64_bc64_s2_pp0_again \
  default=$S/d128_br128_bc128_s2_pp0 defaultb=$S/d128_br128_bc128_s2_pp0_again
t done

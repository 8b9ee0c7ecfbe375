#!/usr/bin/env bash
# GPU check of v09_fp8_wgmma's S promotion (issue 14), against kernels/dev/fp8_accum_model.cpp's
# per-seed predictions. Needs a GPU build with sm_90a (IOATTN_CUDA_ARCH 90 adds it for v09).
# Usage: kernels/dev/fp8_promote.sh [path/to/ioattn] [seeds=12]     (from the repository root)
# Part 1 (accuracy): B 1, H 2, N 200, causal, scale 0.1, q/k descale 0.1, fp16 out, logits of std
#   100 (the property's regime: codes near +-448, |LSE| ~ 250), seeds 1..S, every promotion interval
#   v09 has at each d (IOATTN_V09_S_PROMOTE: fast = none, as before; unset = the default, 1).
#   One line per run: d, interval, seed, PASS/FAIL, O error, bound, LSE error. The 13-bit model
#   predicts (fp8_accum_model seeds D 200 100 1 12): fast fails seeds 2 3 6 11 12 at d 256, 6 at
#   d 128, 9 at d 64; every promoted interval passes every seed (O error 0.4-0.9 of the bound; at
#   d 256 interval 1 0.38-0.53); LSE errors: fast 1-3e-1, interval 1 2-5e-2 (fp32 S: 3e-5).
# Part 2 (cost): N 4096, heads 16, d 64/128/256, non-causal, each interval, kernel time.
set -uo pipefail
cd "$(dirname "$0")/../.."
IOATTN=${1:-build-gpu/apps/ioattn}
SEEDS=${2:-12}
declare -A INTERVALS=([64]="fast 1" [128]="fast 2 1" [256]="fast 4 1")
for d in 64 128 256; do
  for iv in ${INTERVALS[$d]}; do
    for seed in $(seq 1 "$SEEDS"); do
      out=$(IOATTN_V09_S_PROMOTE=$iv "$IOATTN" run --kernel v09_fp8_wgmma --dtype fp8_e4m3 --batch 1 --heads 2 \
              --seqlen 200 --head-dim "$d" --causal --scale 0.1 --q-descale 0.1 --k-descale 0.1 --out-dtype fp16 \
              --logit-std 100 --seed "$seed" --check --json --iters 1 --warmup 0 2>&1)
      python3 - "$d" "$iv" "$seed" "$out" <<'PY'
import json, sys
d, iv, seed, txt = sys.argv[1:5]
try:
    j = json.loads(txt[txt.index("{"):])
    verdict = "PASS" if j["check_pass"] else "FAIL"
    ratio = j["o_max_err"] / j["o_bound"]
    print("d %s promote %-4s seed %3s %s O err %.3e bound %.3e ratio %.3f LSE err %.2e"
          % (d, iv, seed, verdict, j["o_max_err"], j["o_bound"], ratio, j["lse_max_err"]))
except Exception:
    print("d %s promote %-4s seed %3s ERROR %s" % (d, iv, seed, txt.strip()[:300]))
PY
    done
  done
done
for d in 64 128 256; do
  for iv in ${INTERVALS[$d]}; do
    echo "== time: d $d promote $iv"
    IOATTN_V09_S_PROMOTE=$iv "$IOATTN" run --kernel v09_fp8_wgmma --dtype fp8_e4m3 --batch 1 --heads 16 --seqlen 4096 \
      --head-dim "$d" --iters 20 2>&1 | tail -4
  done
done

#!/usr/bin/env bash
# kernels/dev/fp8_diag.sh: how v09_fp8_wgmma's error grows with the logits' size and the head dim.
#   bash kernels/dev/fp8_diag.sh [IOATTN_BINARY]      (on the GPU machine; default build-gpu/carry/ioattn)
# Runs `ioattn run --check` (error rule of include/ioattn/tolerance.hpp against the float64 truth and
# the FP8 same-precision baseline) for d in {64, 128, 256}, Nq = Nk in {2, 300, 2048}, causal or not,
# and the softmax scale chosen so that the logits' standard deviation is about L in {1, 10, 100}
# (inputs are unit-variance codes: logit std ~ scale sqrt(d)). One line per case: O and LSE max
# error, bound, baseline error; a case whose error grows with L and d while the baseline's does not
# points at the kernel's S accumulation.
set -u
BIN=${1:-build-gpu/carry/ioattn}
printf "%-4s %-5s %-6s %-5s | %-44s | %s\n" d N causal L "O: max_err bound baseline" "LSE: max_err bound baseline |LSE|"
for d in 64 128 256; do
  for n in 2 300 2048; do
    for c in "" "--causal"; do
      for L in 1 10 100; do
        s=$(python3 -c "print($L / $d ** 0.5)")
        out=$("$BIN" run --kernel v09_fp8_wgmma --dtype fp8_e4m3 --batch 2 --heads 3 --seqlen "$n" --head-dim "$d" \
              $c --scale "$s" --out-dtype fp16 --check 2>&1)
        o=$(echo "$out" | grep " O " | sed -E 's/.*(PASS|FAIL): max_err=([^ ]+) .*bound=([^ ]+) \(baseline max_err=([^,]+),.*/\1 \2 \3 \4/')
        l=$(echo "$out" | grep " LSE " | sed -E 's/.*(PASS|FAIL): max_err=([^ ]+) .*bound=([^ ]+) \(baseline max_err=([^,]+),.*ref ([^)]+)\).*/\1 \2 \3 \4 \5/')
        [ -z "$o" ] && o="(no check line: $(echo "$out" | tail -1 | cut -c1-60))"
        cf=0; [ -n "$c" ] && cf=1
        printf "%-4s %-5s %-6s %-5s | %-44s | %s\n" "$d" "$n" "$cf" "$L" "$o" "$l"
      done
    done
  done
done

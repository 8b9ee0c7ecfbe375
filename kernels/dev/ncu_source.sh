#!/usr/bin/env bash
# kernels/dev/ncu_source.sh: where in one kernel's machine code its warps stall, per SASS instruction:
# Nsight Compute's source counters (PC sampling: the stall reason of each sampled warp, by program
# counter) for one `ioattn run --profile` launch, exported as the source page's SASS view, and the
# kernel's SASS from cuobjdump (for addresses, code size and the loop structure).
#   bash kernels/dev/ncu_source.sh IOATTN_CLI OUT_DIR TAG KERNEL_REGEX -- RUN_ARGS...
#   e.g. bash kernels/dev/ncu_source.sh build-gpu/carry/ioattn out n512_d64_c1 regex:persistent -- \
#          --kernel v08p_fa3_persistent --batch 32 --heads 16 --seqlen 512 --head-dim 64 --dtype bf16 --causal
# Writes OUT_DIR/<TAG>.source.csv (one row per SASS instruction: address, instruction, samples by
# stall reason, instructions executed), <TAG>.details.txt, <TAG>.sass.txt (cuobjdump -sass of the
# profiled kernel: the function ncu names), and <TAG>.log (commands, tool versions). cuobjdump is
# taken from PATH, else from the Triton package's NVIDIA binaries (the H200 image has those).
# kernels/dev/stall_regions.py summarizes the CSV by region of the kernel.
set -u
CLI=$1 OUT=$2 TAG=$3 REGEX=$4
shift 4
[ "${1:-}" = "--" ] && shift
mkdir -p "$OUT"
LOG=$OUT/$TAG.log
{
  echo "== $(date -u +%FT%TZ) ncu_source.sh $TAG $REGEX -- $*"
  ncu --version | tail -1
} > "$LOG" 2>&1
REP=$OUT/$TAG
ncu --clock-control none --profile-from-start off --section SourceCounters --section WarpStateStats \
  --import-source no -k "$REGEX" -c 1 -f -o "$REP" "$CLI" run "$@" --profile >> "$LOG" 2>&1
echo "ncu rc=$?" >> "$LOG"
if [ -f "$REP.ncu-rep" ]; then
  ncu --import "$REP.ncu-rep" --page details > "$OUT/$TAG.details.txt" 2>&1
  ncu --import "$REP.ncu-rep" --page source --csv --print-source sass > "$OUT/$TAG.source.csv" 2>> "$LOG" ||
    ncu --import "$REP.ncu-rep" --page source --csv > "$OUT/$TAG.source.csv" 2>> "$LOG"
  echo "source page rc=$? ($(wc -l < "$OUT/$TAG.source.csv") lines)" >> "$LOG"
  # The profiled kernel's mangled name, for cuobjdump -fun.
  ncu --import "$REP.ncu-rep" --page raw --csv --print-kernel-base mangled --metrics launch__grid_size \
    > "$OUT/$TAG.raw.csv" 2>> "$LOG"
  FUN=$(python3 -c 'import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
h = rows[0]
print(rows[2][h.index("Kernel Name")] if len(rows) > 2 and "Kernel Name" in h else "")' "$OUT/$TAG.raw.csv" 2>> "$LOG")
  echo "kernel: ${FUN:-unknown}" >> "$LOG"
fi
CUOBJ=$(command -v cuobjdump || true)
if [ -z "$CUOBJ" ]; then
  TB=$(python3 -c 'import os, triton; print(os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin"))' 2>/dev/null)
  [ -x "$TB/cuobjdump" ] && CUOBJ=$TB/cuobjdump
fi
echo "cuobjdump: ${CUOBJ:-none}" >> "$LOG"
if [ -n "$CUOBJ" ]; then
  "$CUOBJ" --version | tail -1 >> "$LOG" 2>&1
  # The profiled function only (the listing prints "Function : <mangled name>" before each).
  "$CUOBJ" -sass "$CLI" 2>> "$LOG" | awk -v fun="${FUN:-none}" '
    /^[ \t]*Function : / { keep = ($3 == fun) }
    keep { print }' > "$OUT/$TAG.sass.txt"
  echo "sass: $(grep -c 'Function :' "$OUT/$TAG.sass.txt") functions, $(wc -l < "$OUT/$TAG.sass.txt") lines" >> "$LOG"
fi
rm -f "$REP.ncu-rep"
tail -4 "$LOG"

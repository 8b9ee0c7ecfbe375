#!/usr/bin/env bash
# experiments/gpu/smoke.sh: a new kernel's first run on a GPU, one process per case, before the suite.
#
#   bash experiments/gpu/smoke.sh IOATTN_CLI OUT_DIR [CASES_FILE]     (from the repository root)
#
# A kernel that traps (a bad address, a hang guard) ends its process's CUDA context, so the GPU
# suite, which runs every variant in one process, would lose every later variant's cases with it.
# This runs each case of CASES_FILE (default experiments/gpu/smoke_cases.txt: `variant | ioattn run
# arguments`, # comments) as its own `ioattn run --kernel VARIANT ARGS --check` under a time cap,
# logs each to OUT_DIR/smoke.log, prints one line per case, and writes OUT_DIR/smoke.env: for every
# variant with a failed case, `export IOATTN_<ID>_DISABLE=1` (ID: the variant's name up to its first
# underscore, upper case: v08_fa3_warpspec -> IOATTN_V08_DISABLE), the switch a variant on probation
# reads in supports(). Sourcing it before the suite keeps the other variants' results; the disabled
# variant then runs no case, and the suite fails for it, as it must. Exit status: 0 when every case
# passed, 1 otherwise.
set -u
CLI=$1
OUT=$2
CASES=${3:-experiments/gpu/smoke_cases.txt}
mkdir -p "$OUT"
: > "$OUT/smoke.log"
: > "$OUT/smoke.env"
failed=()
rc_all=0
while IFS='|' read -r variant args; do
  variant=$(echo "$variant" | xargs)
  case "$variant" in ''|'#'*) continue ;; esac
  echo "== ioattn run --kernel $variant $args --check" >> "$OUT/smoke.log"
  # shellcheck disable=SC2086  # args is a list of flags
  timeout "${SMOKE_CAP:-60}" "$CLI" run --kernel "$variant" $args --check >> "$OUT/smoke.log" 2>&1
  rc=$?
  echo "rc=$rc" >> "$OUT/smoke.log"
  echo "smoke $variant [$(echo $args | xargs)]: rc=$rc ($([ $rc -eq 0 ] && echo pass || echo FAIL))"
  if [ $rc -ne 0 ]; then
    rc_all=1
    case " ${failed[*]-} " in *" $variant "*) ;; *) failed+=("$variant") ;; esac
  fi
done < "$CASES"
for v in "${failed[@]-}"; do
  [ -n "$v" ] || continue
  id=$(echo "${v%%_*}" | tr '[:lower:]' '[:upper:]')
  echo "export IOATTN_${id}_DISABLE=1  # $v failed a smoke case" >> "$OUT/smoke.env"
done
exit $rc_all

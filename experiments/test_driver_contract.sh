#!/usr/bin/env bash
# experiments/test_driver_contract.sh BIN_DIR: the contract every driver shares (ctest exp_contract).
#   - a results folder that holds a CSV is never overwritten without --force (exit 2, one line);
#   - bad flags exit 2 with one line; --help exits 0;
#   - a run writes context.json with commit, date, command and seed beside its CSV.
set -u
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
expect() {  # expect RC DESCRIPTION -- command...
  local want=$1 what=$2; shift 3
  "$@" >"$tmp/out" 2>"$tmp/err"; local rc=$?
  if [ "$rc" -eq "$want" ]; then echo "PASS: $what (exit $rc)"; else
    echo "FAIL: $what: exit $rc, expected $want"; cat "$tmp/err"; fail=1; fi
}
expect 0 "first run writes results" -- "$bin/exp_machines" --out "$tmp/r"
for key in commit date_utc command seed machine; do
  grep -q "\"$key\"" "$tmp/r/sim/machines/context.json" && echo "PASS: context.json has $key" \
    || { echo "FAIL: context.json lacks $key"; fail=1; }
done
expect 2 "second run into the same folder is refused" -- "$bin/exp_machines" --out "$tmp/r"
grep -q "immutable" "$tmp/err" && echo "PASS: the refusal names the rule" || { echo "FAIL: no reason printed"; fail=1; }
expect 0 "--force overwrites a scratch folder" -- "$bin/exp_machines" --out "$tmp/r" --force
expect 2 "an unknown preset is bad input" -- "$bin/exp_io_complexity" --out "$tmp/r2" --preset huge
expect 2 "an unknown flag is bad input" -- "$bin/exp_memory_vs_n" --out "$tmp/r2" --no-such-flag
expect 0 "--help" -- "$bin/exp_speedup_vs_n" --help
exit $fail

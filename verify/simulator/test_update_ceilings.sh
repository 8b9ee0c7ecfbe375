#!/usr/bin/env bash
# verify/simulator/test_update_ceilings.sh: simulator/machines/update_h200_ceilings.py on a copy of
# h200.json and a generated ceilings.json in a temporary folder laid out like the repository (the
# numbers are test inputs, never committed). ctest machines_update_ceilings.
set -u
src=$(cd "$(dirname "$0")/../.." && pwd)
script=$src/simulator/machines/update_h200_ceilings.py
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/experiments/results/h200/T1"
cp "$src/simulator/machines/h200.json" "$tmp/h200.json"
/usr/bin/python3 - "$tmp/experiments/results/h200/T1/ceilings.json" <<'PY'
import json, sys
rows = []
for s, (c, b, h, f) in enumerate([(4300.0, 700.0, 710.0, 50.0), (4200.0, 690.0, 705.0, 52.0)]):
    rows.append(dict(name="copy_d2d", dtype="fp32", value=c / 2, unit="GB/s", sample=s, check="copy equals its source"))
    rows.append(dict(name="copy_sm", dtype="fp32", value=c, unit="GB/s", sample=s, check="copy equals -src"))
    for dt, v in (("bf16", b), ("fp16", h), ("fp32", f)):
        rows.append(dict(name="gemm_8192", dtype=dt, value=v, unit="TFLOP/s", sample=s, check="rel_err 1e-3 (ok)"))
    # FP8: the fast-accumulation row is the ceiling; the _nofastacc row (larger here on purpose) must not be read.
    rows.append(dict(name="gemm_8192", dtype="fp8_e4m3", value=1200.0 + 10 * s, unit="TFLOP/s", sample=s, check="rel_err 3e-3 (ok)"))
    rows.append(dict(name="gemm_8192_nofastacc", dtype="fp8_e4m3", value=1500.0, unit="TFLOP/s", sample=s, check="rel_err 1e-3 (ok)"))
json.dump(dict(context=dict(date="2026-12-02T10:00:00Z"), rows=rows), open(sys.argv[1], "w"))
PY
fail=0
run() {  # run WANT_RC WHAT -- cmd...
  local want=$1 what=$2; shift 3
  "$@" >"$tmp/out" 2>&1; local rc=$?
  if [ "$rc" -eq "$want" ]; then echo "PASS: $what (exit $rc)"; else echo "FAIL: $what: exit $rc, expected $want"; cat "$tmp/out"; fail=1; fi
}
m=(--repo "$tmp" --machine "$tmp/h200.json")
run 0 "rewrite from a ceilings file" -- /usr/bin/python3 "$script" "$tmp/experiments/results/h200/T1/ceilings.json" "${m[@]}"
/usr/bin/python3 - "$tmp/h200.json" <<'PY' || fail=1
import json, sys
j = json.load(open(sys.argv[1]))
want = {"measured_bandwidth": 4.3e12, "measured_matrix_bf16": 700e12, "measured_matrix_fp16": 710e12, "measured_vector_fp32": 52e12,
        "measured_matrix_fp8": 1210e12}
for k, v in want.items():
    e = j[k]
    ok = abs(e["value"] - v) < 1e-6 * v and "experiments/results/h200/T1/ceilings.json" in e["source"] and "/tmp" not in e["source"]
    print(("PASS" if ok else "FAIL") + f": {k} = {e['value']:g}, source names the repository path")
    if not ok:
        sys.exit(1)
PY
run 0 "--check agrees after the rewrite" -- /usr/bin/python3 "$script" --check "${m[@]}"
sed -i 's/"value": 700000000000000.0/"value": 1.0/' "$tmp/h200.json"
run 1 "--check finds a catalog value that differs from its file" -- /usr/bin/python3 "$script" --check "${m[@]}"
# A file with GEMM rows only (copy_d2d is not the HBM ceiling): the bandwidth entry is left as it is.
mkdir -p "$tmp/experiments/results/h200/T2"
cp "$src/simulator/machines/h200.json" "$tmp/h200_2.json"
/usr/bin/python3 -c "
import json, sys
j = json.load(open(sys.argv[1]))
j['rows'] = [r for r in j['rows'] if r['name'] != 'copy_sm']
json.dump(j, open(sys.argv[2], 'w'))" "$tmp/experiments/results/h200/T1/ceilings.json" "$tmp/experiments/results/h200/T2/ceilings.json"
run 0 "a file without copy_sm updates the GEMM entries only" -- /usr/bin/python3 "$script" "$tmp/experiments/results/h200/T2/ceilings.json" --repo "$tmp" --machine "$tmp/h200_2.json"
grep -q "measured_bandwidth: left as it is" "$tmp/out" && echo "PASS: the bandwidth entry is left as it is" || { echo "FAIL: bandwidth not reported as left"; fail=1; }
/usr/bin/python3 -c "
import json, sys
j = json.load(open(sys.argv[1]))
orig = json.load(open(sys.argv[2]))
assert j.get('measured_bandwidth') == orig.get('measured_bandwidth'), 'bandwidth changed'
assert 'T2/ceilings.json' in j['measured_matrix_bf16']['source'], 'bf16 not updated'" "$tmp/h200_2.json" "$src/simulator/machines/h200.json" \
  && echo "PASS: GEMM entries cite T2, the bandwidth entry is unchanged" || { echo "FAIL: partial update"; fail=1; }
# FP8 not measurable where ceilings.py ran (rows 'unsupported: ...', no value): the FP8 entry is left
# as it is, the other entries are updated, nothing fails.
mkdir -p "$tmp/experiments/results/h200/T3"
cp "$src/simulator/machines/h200.json" "$tmp/h200_3.json"
/usr/bin/python3 -c "
import json, sys
j = json.load(open(sys.argv[1]))
for r in j['rows']:
    if r['dtype'] == 'fp8_e4m3':
        r.update(value=None, check='unsupported: device sm_80 has no FP8 tensor cores (sm_89 or newer needed)')
json.dump(j, open(sys.argv[2], 'w'))" "$tmp/experiments/results/h200/T1/ceilings.json" "$tmp/experiments/results/h200/T3/ceilings.json"
run 0 "a file whose FP8 rows are unsupported updates the other entries" -- /usr/bin/python3 "$script" "$tmp/experiments/results/h200/T3/ceilings.json" --repo "$tmp" --machine "$tmp/h200_3.json"
grep -q "measured_matrix_fp8: left as it is" "$tmp/out" && echo "PASS: the FP8 entry is left as it is" || { echo "FAIL: FP8 not reported as left"; cat "$tmp/out"; fail=1; }
/usr/bin/python3 -c "
import json, sys
j = json.load(open(sys.argv[1]))
orig = json.load(open(sys.argv[2]))
assert j.get('measured_matrix_fp8') == orig.get('measured_matrix_fp8'), 'fp8 entry changed'
assert 'T3/ceilings.json' in j['measured_matrix_bf16']['source'], 'bf16 not updated'" "$tmp/h200_3.json" "$src/simulator/machines/h200.json" \
  && echo "PASS: unsupported FP8 rows leave the FP8 entry unchanged" || { echo "FAIL: unsupported FP8 rows"; fail=1; }
# --only fp8: the FP8 entry from a later run (T4), every other entry keeps the value and source of the
# earlier one (T1, rewritten into h200_4.json first); --check then passes with entries citing two files.
mkdir -p "$tmp/experiments/results/h200/T4"
/usr/bin/python3 -c "
import json, sys
j = json.load(open(sys.argv[1]))
for r in j['rows']:
    if r['dtype'] == 'fp8_e4m3' and r['name'] == 'gemm_8192':
        r['value'] = 1400.0 + r['sample']
    elif r['dtype'] == 'bf16':
        r['value'] = 1.0  # would replace bf16 if --only were ignored
json.dump(j, open(sys.argv[2], 'w'))" "$tmp/experiments/results/h200/T1/ceilings.json" "$tmp/experiments/results/h200/T4/ceilings.json"
cp "$src/simulator/machines/h200.json" "$tmp/h200_4.json"
m4=(--repo "$tmp" --machine "$tmp/h200_4.json")
run 0 "every entry from T1 first" -- /usr/bin/python3 "$script" "$tmp/experiments/results/h200/T1/ceilings.json" "${m4[@]}"
cp "$tmp/h200_4.json" "$tmp/h200_4_before.json"
run 0 "--only fp8 takes the FP8 entry from a later run" -- /usr/bin/python3 "$script" --only fp8 "$tmp/experiments/results/h200/T4/ceilings.json" "${m4[@]}"
/usr/bin/python3 -c "
import json, sys
j = json.load(open(sys.argv[1]))
before = json.load(open(sys.argv[2]))
assert abs(j['measured_matrix_fp8']['value'] - 1401e12) < 1e-3, j['measured_matrix_fp8']
assert 'T4/ceilings.json' in j['measured_matrix_fp8']['source'], 'fp8 source'
for k in ('measured_bandwidth', 'measured_matrix_bf16', 'measured_matrix_fp16', 'measured_vector_fp32'):
    assert j.get(k) == before.get(k), k + ' changed'
assert 'T1/ceilings.json' in j['measured_matrix_bf16']['source']" "$tmp/h200_4.json" "$tmp/h200_4_before.json" \
  && echo "PASS: --only fp8 changes the FP8 entry alone (T4), the others keep T1's values and sources" || { echo "FAIL: --only fp8"; cat "$tmp/out"; fail=1; }
run 0 "--check passes with entries from two ceilings files" -- /usr/bin/python3 "$script" --check "${m4[@]}"
grep -q "T1/ceilings.json" "$tmp/out" && grep -q "T4/ceilings.json" "$tmp/out" && echo "PASS: --check names both files" || { echo "FAIL: --check files"; cat "$tmp/out"; fail=1; }
cp "$tmp/h200_4.json" "$tmp/h200_5.json"
run 1 "--only with an unknown entry is refused" -- /usr/bin/python3 "$script" --only fp9 "$tmp/experiments/results/h200/T4/ceilings.json" --repo "$tmp" --machine "$tmp/h200_5.json"
grep -q "unknown entry 'fp9'" "$tmp/out" && echo "PASS: the refusal names the entry" || { echo "FAIL: refusal text"; cat "$tmp/out"; fail=1; }
run 1 "--only bandwidth on a file without copy_sm is refused" -- /usr/bin/python3 "$script" --only bf16,bandwidth "$tmp/experiments/results/h200/T2/ceilings.json" --repo "$tmp" --machine "$tmp/h200_5.json"
run 1 "--only fp8 on a file whose FP8 rows are unsupported is refused" -- /usr/bin/python3 "$script" --only fp8 "$tmp/experiments/results/h200/T3/ceilings.json" --repo "$tmp" --machine "$tmp/h200_5.json"
cmp -s "$tmp/h200_4.json" "$tmp/h200_5.json" && echo "PASS: a refused --only leaves the catalog unchanged" || { echo "FAIL: a refused --only wrote the catalog"; fail=1; }
run 2 "--only with --check is a usage error" -- /usr/bin/python3 "$script" --check --only fp8 "${m4[@]}"
outside=$(mktemp -d)
cp "$tmp/experiments/results/h200/T1/ceilings.json" "$outside/"
run 1 "a file outside the repository is refused" -- /usr/bin/python3 "$script" "$outside/ceilings.json" "${m[@]}"
rm -rf "$outside"
sed -i 's/rel_err 1e-3 (ok)/FAILED: rel_err 1/' "$tmp/experiments/results/h200/T1/ceilings.json"
run 1 "a row whose check failed is refused" -- /usr/bin/python3 "$script" "$tmp/experiments/results/h200/T1/ceilings.json" "${m[@]}"
exit $fail

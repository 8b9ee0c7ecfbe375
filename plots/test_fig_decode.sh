#!/usr/bin/env bash
# plots/test_fig_decode.sh IOATTN: fig_decode.py and paper/gen_decode.py end to end on a results root
# written here (ctest plot_fig_decode_synthetic): a CANONICAL naming one decode run whose decode.csv
# has bench_decode.py's columns (the bandwidths are test inputs, not measurements: v07 at 0.9 of the
# copy ceiling and above cuDNN at batch 16, its page-16 rows at half its contiguous bandwidth), then
# the figure with IOATTN's `simulate` as the model and the paper's dec.* values. Checks: the figure
# is drawn, the model CSV has one row per v07 configuration with a positive bandwidth and a paged
# row's block table of batch x ceil(N_k / 16) entries, the targets' verdicts follow the inputs, and a
# root without decode rows skips (exit 77). KEEP=FILE.png keeps a copy of the figure.
set -u
ioattn=$1
py=${IOATTN_PLOT_PYTHON:-/usr/bin/python3}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
h=$tmp/root/h200
mkdir -p "$h/run"
printf 'decode run\n' > "$h/CANONICAL"
{
  echo "impl,study,sample,status,ms,gbps,bytes,dtype,head_dim,causal,batch,heads_q,heads_kv,seqlen_q,seqlen_k,page_size,splits,br,bc,ctas_per_sm"
  echo "copy_sm,decode,0,ok,1.0,4000,4000000000,,,,,,,,,,,,,"
  for b in 1 16; do for nk in 2048 8192; do
    bytes=$(( 2 * b * 8 * nk * 128 * 2 + 2 * b * 32 * 128 * 2 ))
    for s in 0 1; do
      # gbps: v07 contiguous 3600 (0.9 of copy), paged 16 1800, cuDNN 3000, flash 2800; ms = bytes / gbps.
      for x in "ioattn:v07_decode_splitkv 0 3600 8" "ioattn:v07_decode_splitkv 16 1800 8" "sdpa:cudnn 0 3000 " "sdpa:flash 0 2800 "; do
        set -- $x
        ms=$("$py" -c "print($bytes / $3 / 1e6)")
        cfg=",,,"; [ -n "${4:-}" ] && cfg="$4,16,64,2"
        echo "$1,decode,$s,ok,$ms,$3,$bytes,bf16,128,0,$b,32,8,1,$nk,$2,$cfg"
      done
    done
  done; done
} > "$h/run/decode.csv"
fail=0
out=$(IOATTN_RESULTS="$tmp/root" IOATTN_BIN="$ioattn" "$py" "$here/fig_decode.py" --out "$tmp/fig" 2>&1); rc=$?
echo "$out"
if [ $rc -eq 0 ] && [ -s "$tmp/fig/fig_decode.png" ] && [ -s "$tmp/fig/fig_decode.pdf" ]; then
  echo "PASS: the figure is drawn"
else echo "FAIL: fig_decode.py exited $rc or wrote no PNG/PDF"; fail=1; fi
"$py" - "$tmp/fig/fig_decode_model.csv" <<'PY' || fail=1
import csv, math, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) == 8, f"{len(rows)} model rows, expected 8 (2 batches x 2 caches x 2 page sizes)"
assert all(float(r["gbps"]) > 0 and float(r["time_s"]) > 0 for r in rows)
for r in rows:
    b, nk, page = int(r["batch"]), int(r["seqlen_k"]), int(r["page_size"])
    want = b * math.ceil(nk / 16) * 4 if page == 16 else 0
    assert int(r["block_table_hbm_bytes"]) == want, (r, want)
print("PASS: one model row per v07 configuration, block table of batch x ceil(N_k/16) entries")
PY
IOATTN_RESULTS="$tmp/root" IOATTN_BIN="$ioattn" "$py" - "$here/../paper" <<'PY' || fail=1
import sys
sys.path.insert(0, sys.argv[1])
from gen_numbers import Numbers
from gen_decode import decode
nb = Numbers()
decode(nb)
v = nb.vals
want = {"dec.target_copy": "holds", "dec.target_cudnn": "holds", "dec.target_paged": "is missed",
        "dec.big.of_copy": "0.90", "dec.p16.min": "0.50", "dec.big.vs_cudnn": "1.2", "dec.b_max": "16"}
bad = {k: v.get(k) for k, w in want.items() if v.get(k) != w}
assert not bad, f"dec values {bad}, expected {want}"
assert "dec.model.contig.mape" in v and "dec.model.paged.mape" in v, "no model error values"
print("PASS: the dec.* verdicts follow the inputs; the model's error is computed")
PY
[ -n "${KEEP:-}" ] && cp "$tmp/fig/fig_decode.png" "$KEEP"
# Without decode rows: skipped with exit 77.
head -2 "$h/run/decode.csv" > "$h/run/d.tmp" && mv "$h/run/d.tmp" "$h/run/decode.csv"
IOATTN_RESULTS="$tmp/root" IOATTN_BIN="$ioattn" "$py" "$here/fig_decode.py" --out "$tmp/fig2" > "$tmp/skip.log" 2>&1; rc=$?
if [ $rc -eq 77 ] && [ ! -e "$tmp/fig2/fig_decode.png" ]; then echo "PASS: a root without decode rows skips"
else cat "$tmp/skip.log"; echo "FAIL: expected exit 77 without decode rows, got $rc"; fail=1; fi
exit $fail

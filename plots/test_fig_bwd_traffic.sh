#!/usr/bin/env bash
# plots/test_fig_bwd_traffic.sh BIN_DIR: fig_bwd_traffic.py end to end on a results root written
# here (ctest plot_fig_bwd_traffic_synthetic): a CANONICAL naming one ncu run whose ncu.csv has
# backward rows in ncu_collect.py's format (the byte counts are test inputs, not measurements),
# exp_h200_model's twins of them, then the figure. The committed data has no backward ncu rows
# yet, so ctest plot_fig_bwd_traffic skips; this test checks that the figure draws and pairs
# every backward row with its model row once such rows exist, and that a root without them skips.
# KEEP=FILE.png keeps a copy of the drawn figure.
set -u
bin=$1
py=${IOATTN_PLOT_PYTHON:-/usr/bin/python3}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
h=$tmp/root/h200
mkdir -p "$h/run"
printf 'ncu run\n' > "$h/CANONICAL"
{
  echo "impl,dtype,head_dim,causal,seqlen,batch,heads,kernels,dram_read_bytes,dram_write_bytes,l2_bytes,gpu_time_ms,compulsory_read_bytes,compulsory_write_bytes,flops,dram_read_over_compulsory_read,dram_write_over_compulsory_write,flop_per_dram_byte,br,bc,stages,threads,smem_bytes,ctas_per_sm,grid_x,grid_y,grid_z,grid_order,launches,splits,ncu_block,ncu_grid,config_check,error,pass,ncu_kernel_names,dq_mode,deterministic,forward_kernel"
  for n in 1024 4096; do
    b=$((16384 / n))
    echo "ioattn:v05_fa2_fast,bf16,128,0,$n,$b,16,1,2e8,7e7,9e8,0.3,2e8,7e7,1e12,1,1,1000,64,64,2,128,1,2,1,1,1,bh_major,1,0,,,,,fwd,k,,,"
    echo "ioattn:bwd02_fa2_mma,bf16,128,0,$n,$b,16,3,4.0e8,4.5e8,3e9,2.7,3.37e8,2.0e8,2.5e12,1.2,2.2,3000,32,64,1,128,57088,2,4096,1,1,kv_bh_major,3,0,,,matches ncu,,bwd,a|b|c,atomic,0,v04_fa2_mma"
    echo "ioattn:bwd02b_fa2_mma_dqpass,bf16,128,0,$n,$b,16,3,4.2e8,2.0e8,3e9,2.4,3.37e8,2.0e8,2.5e12,1.25,1.0,4000,32,64,1,128,57088,2,4096,1,1,kv_bh_major,3,0,,,matches ncu,,bwd,a|b|c,separate,1,v04_fa2_mma"
  done
} > "$h/run/ncu.csv"
fail=0
"$bin/exp_h200_model" --h200 "$h" --out "$tmp/root" --check > "$tmp/model.log" 2>&1 || { cat "$tmp/model.log"; echo "FAIL: exp_h200_model"; fail=1; }
out=$(IOATTN_RESULTS="$tmp/root" "$py" "$here/fig_bwd_traffic.py" --out "$tmp/fig" 2>&1); rc=$?
echo "$out"
if [ $rc -eq 0 ] && [ -s "$tmp/fig/fig_bwd_traffic.png" ] && [ -s "$tmp/fig/fig_bwd_traffic.pdf" ]; then
  echo "PASS: the figure is drawn from backward ncu rows"
else echo "FAIL: fig_bwd_traffic.py exited $rc or wrote no PNG/PDF"; fail=1; fi
if echo "$out" | grep -q "4 of 4 backward ncu rows paired with a model row"; then
  echo "PASS: every backward ncu row is paired with exp_h200_model's twin (and the forward rows are not drawn)"
else echo "FAIL: the backward rows were not all paired with a model row"; fail=1; fi
[ -n "${KEEP:-}" ] && cp "$tmp/fig/fig_bwd_traffic.png" "$KEEP"
# Without backward rows: skipped with exit 77, nothing drawn.
grep -v ",bwd," "$h/run/ncu.csv" > "$h/run/ncu.tmp" && mv "$h/run/ncu.tmp" "$h/run/ncu.csv"
IOATTN_RESULTS="$tmp/root" "$py" "$here/fig_bwd_traffic.py" --out "$tmp/fig2" > "$tmp/skip.log" 2>&1; rc=$?
if [ $rc -eq 77 ] && grep -q "^SKIPPED: fig_bwd_traffic" "$tmp/skip.log" && [ ! -e "$tmp/fig2/fig_bwd_traffic.png" ]; then
  echo "PASS: no backward ncu rows: SKIPPED (exit 77), nothing drawn"
else echo "FAIL: without backward rows the figure exited $rc"; cat "$tmp/skip.log"; fail=1; fi
exit $fail

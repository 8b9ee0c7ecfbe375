#!/bin/sh
# Runs ncu_sdpa_l2.py for each config on the H200; one CSV per config in ${OUT:-.}.
# Configs "N B H D CAUSAL": N beyond 16k, where one head's K and V (512 N bytes) approach the 50 MB L2.
set -u
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
OUT=${OUT:-.}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$OUT/device.txt" 2>&1
echo "config,dram_read_bytes,dram_write_bytes,gpu_time_ns,lts_bytes,kernel,grid" > "$OUT/summary.csv"
CONFIGS=${CONFIGS:-"16384,1,16,128,0 32768,1,16,128,0 65536,1,16,128,0 131072,1,16,128,0 65536,1,16,128,1 65536,1,8,256,0 131072,1,4,256,0 262144,1,4,128,0 131072,1,8,64,0 32768,1,16,256,0 131072,1,16,128,1"}
for c in $CONFIGS; do
  cfg=$(echo "$c" | tr ',' ' ')
  set -- $cfg
  name="n$1_b$2_h$3_d$4_c$5"
  "$NCU" --clock-control none --profile-from-start off --csv \
    --metrics dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,gpu__time_duration.sum \
    python3 "$(dirname "$0")/ncu_sdpa_l2.py" $cfg > "$OUT/$name.csv" 2>> "$OUT/errors.log"
  echo "$name rc=$?"
  # One summary line per config: name, dram read, dram write, time ns, lts bytes, kernel, grid.
  grep -E 'dram__bytes|lts__t_bytes|gpu__time' "$OUT/$name.csv" | \
    awk -F'","' -v n="$name" '{v=$NF; gsub(/[",]/,"",v); vals=vals","v; k=$5; g=$9} END {print n vals ",\"" k "\",\"" g "\""}' >> "$OUT/summary.csv"
  rm -f "$OUT/$name.csv"
done

#!/usr/bin/env bash
# Build the fast-kernel check driver for the H200 here (no GPU needed): build-fast/kernels/check_fast
# (a CMake target: it runs the kernels under the project's harness and judges them by its error
# rule), plus the device code and ptxas -v report of v04/v05/v06, one file at a time:
# build-fast/<file>.cubin and build-fast/<file>.ptxas.txt (for kernels/dev/sass_compare.py and
# kernels/dev/ptxas_table.py).
# Usage: kernels/dev/build.sh [extra nvcc flags for the single-file compiles]   (from the repository root)
# v04/v05 build for sm_90 (what the project's CMake does); v06 needs sm_90a (wgmma).
set -euo pipefail
cd "$(dirname "$0")/../.."
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
mkdir -p build-fast
FLAGS=(-x cu -std=c++20 -O3 --expt-relaxed-constexpr -I. -Iinclude -diag-suppress 177 -Xptxas -v -cubin)
for f in v04_fa2_mma:sm_90 v05_fa2_fast:sm_90 v06_fa2_wgmma:sm_90a; do
  "$NVCC" "${FLAGS[@]}" -arch="${f#*:}" "kernels/${f%:*}.hip" -o "build-fast/${f%:*}.cubin" "$@" \
    2> "build-fast/${f%:*}.ptxas.txt" &
done
wait
cmake -S . -B build-fast -DCMAKE_BUILD_TYPE=Release -DIOATTN_ENABLE_AMD_CHECK=OFF > build-fast/configure.log
cmake --build build-fast --target check_fast -j"${JOBS:-2}"
grep -ciE "error" build-fast/*.ptxas.txt || true

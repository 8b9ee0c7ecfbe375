#!/usr/bin/env bash
# Build the fast-kernel check driver for the H200 here (no GPU needed): build-fast/check_fast.
# Usage: kernels/dev/build.sh [extra nvcc flags]     (from the repository root)
set -euo pipefail
cd "$(dirname "$0")/../.."
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
mkdir -p build-fast
FLAGS=(-std=c++20 -arch=sm_90 -O3 -lineinfo --expt-relaxed-constexpr -I. -Iinclude -diag-suppress 177)
for v in v04_fa2_mma v05_fa2_fast; do
  "$NVCC" -x cu "${FLAGS[@]}" -Xptxas -v -c kernels/$v.hip -o build-fast/$v.o "$@" 2> build-fast/$v.ptxas.txt &
done
"$NVCC" "${FLAGS[@]}" -Xcompiler -fopenmp -c kernels/dev/check_fast.cu -o build-fast/check_fast.o "$@"
wait
"$NVCC" -arch=sm_90 build-fast/check_fast.o build-fast/v04_fa2_mma.o build-fast/v05_fa2_fast.o \
  -Xcompiler -fopenmp -o build-fast/check_fast
grep -E "error|registers|spill" build-fast/*.ptxas.txt | sed 's/_ZN6ioattn7kernels[^ ]*kernelI//' | paste - - | \
  awk '{print}' | cut -c1-220

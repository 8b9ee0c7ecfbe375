#!/usr/bin/env bash
# Build the fast-kernel check driver for the H200 here (no GPU needed): build-fast/check_fast.
# Usage: kernels/dev/build.sh [extra nvcc flags]     (from the repository root)
# v04/v05 build for sm_90 (what the project's CMake does); v06 needs sm_90a (wgmma).
set -euo pipefail
cd "$(dirname "$0")/../.."
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
mkdir -p build-fast
FLAGS=(-std=c++20 -O3 -lineinfo --expt-relaxed-constexpr -I. -Iinclude -diag-suppress 177)
SM90=(-gencode=arch=compute_90,code=sm_90)
SM90A=(-gencode=arch=compute_90a,code=sm_90a)
"$NVCC" -x cu "${FLAGS[@]}" "${SM90[@]}" -Xptxas -v -c kernels/v04_fa2_mma.hip -o build-fast/v04_fa2_mma.o "$@" 2> build-fast/v04_fa2_mma.ptxas.txt &
"$NVCC" -x cu "${FLAGS[@]}" "${SM90[@]}" -Xptxas -v -c kernels/v05_fa2_fast.hip -o build-fast/v05_fa2_fast.o "$@" 2> build-fast/v05_fa2_fast.ptxas.txt &
wait
"$NVCC" -x cu "${FLAGS[@]}" "${SM90A[@]}" -Xptxas -v -c kernels/v06_fa2_wgmma.hip -o build-fast/v06_fa2_wgmma.o "$@" 2> build-fast/v06_fa2_wgmma.ptxas.txt &
"$NVCC" "${FLAGS[@]}" "${SM90[@]}" -Xcompiler -fopenmp -c kernels/dev/check_fast.cu -o build-fast/check_fast.o "$@"
wait
"$NVCC" "${SM90A[@]}" build-fast/check_fast.o build-fast/v04_fa2_mma.o build-fast/v05_fa2_fast.o \
  build-fast/v06_fa2_wgmma.o -Xcompiler -fopenmp -o build-fast/check_fast
grep -ciE "error" build-fast/*.ptxas.txt || true

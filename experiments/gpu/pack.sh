#!/usr/bin/env bash
# experiments/gpu/pack.sh: copy what run_h200.sh needs into build-gpu/carry/ (git-ignored; also
# as build-gpu/carry.tar.xz, for a GPU machine that takes only a small tree along): the sm_90 binaries, the C ABI library, the shared
# libraries the device image may lack (fmt, gomp, cudart), and the commit they were built from.
# The backward suite (gpu_backward) is copied when it was built; without it run_h200.sh reports
# its stage `backward` as not run.
#   cmake --build build-gpu --target ioattn ioattn_capi gpu_kernels gpu_backward -j2 && experiments/gpu/pack.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
B=build-gpu
C=$B/carry
rm -rf "$C" && mkdir -p "$C/lib"
cp $B/apps/ioattn $B/verify/kernels/gpu_kernels $B/kernels/libioattn_capi.so "$C/"
if [ -x $B/verify/kernels/gpu_backward ]; then
  cp $B/verify/kernels/gpu_backward "$C/"
  strip --strip-unneeded "$C/gpu_backward" || true
else
  echo "pack.sh: $B/verify/kernels/gpu_backward not built: the backward suite will not run (target gpu_backward)" >&2
fi
strip --strip-unneeded "$C/ioattn" "$C/gpu_kernels" "$C/libioattn_capi.so" || true
for lib in libfmt.so.9 libgomp.so.1 libcudart.so.13; do
  p=$(ldd "$C/ioattn" "$C/libioattn_capi.so" | awk -v l=$lib '$1 == l {print $3; exit}')
  [ -n "$p" ] && cp -L "$p" "$C/lib/"
done
git rev-parse HEAD > "$C/COMMIT"
{ git status --porcelain --untracked-files=no | grep -q . && echo "dirty tree"; date -u +%Y-%m-%dT%H:%M:%SZ; } > "$C/BUILT" || true
du -sh "$C"
# The same folder xz-compressed (the binaries embed every kernel's device code and compress ~9x):
# carry build-gpu/carry.tar.xz instead of build-gpu/carry when the folder would push the tree past
# what one GPU call may take along; run_h200.sh unpacks it when the folder is absent. A dictionary
# larger than one binary lets xz find each binary's device code again in the next one: about 7 MB for
# the three, against 16 MB at xz's default.
tar cf - -C "$B" carry | xz -9e --lzma2=preset=9e,dict=192MiB > "$B/carry.tar.xz"
du -sh "$B/carry.tar.xz"

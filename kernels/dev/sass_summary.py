"""kernels/dev/sass_summary.py: is v06's wgmma pipelined? Per bf16 v06 kernel in a SASS listing,
the number of HGMMA instructions and of WARPGROUP.DEPBAR waits (and of `DEPBAR.LE gsb0, 0x1`,
which leaves one group in flight). One wait per HGMMA means ptxas serialized the kernel.

    cuobjdump -sass build-fast/v06_fa2_wgmma.o | python3 kernels/dev/sass_summary.py
"""
import re, sys
t = sys.stdin.read().split('Function :')
for f in t[1:]:
    name = f[:300].split('\n')[0]
    m = re.search(r'V06TileILi(\d+)ELi(\d)ELi(\d+)ELi(\d)ELi(\d)ELb(\d)', name)
    if not m or 'bfloat' not in name: continue
    print(m.groups(), 'HGMMA', len(re.findall(r'HGMMA', f)), 'WG.DEPBAR', len(re.findall(r'WARPGROUP.DEPBAR', f)),
          'le1', len(re.findall(r'DEPBAR.LE gsb0, 0x1', f)))

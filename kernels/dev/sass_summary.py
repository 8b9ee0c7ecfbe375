"""kernels/dev/sass_summary.py: are the wgmma kernels pipelined? Per kernel of v06 (V06Tile), v08
(V08Tile) or v09 (V09Tile) in a SASS listing, the number of HGMMA instructions, of WARPGROUP.DEPBAR
waits (and of `DEPBAR.LE gsb0, 0x1`, which leaves one group in flight) and of WARPGROUP.ARRIVE
fences. One wait per HGMMA means ptxas serialized the kernel (kernels/dev/NOTES.md, run 6: no
warning does not mean pipelined); a pipelined kernel has a few waits for many HGMMAs.

    cuobjdump -sass build-fast/v06_fa2_wgmma.cubin | python3 kernels/dev/sass_summary.py
    cuobjdump -sass <v08 object or cubin> | python3 kernels/dev/sass_summary.py [--all-dtypes]

Columns: tile (template arguments in order: V06Tile<d, warpgroups, Bc, stages, min blocks,
overlap>, V08Tile<d, Br, Bc, stages, ping-pong>, V09Tile<...>), dtype, layout kernel (1/0 where
the kernel has that flag), then the counts and HGMMA per DEPBAR. bf16 only unless --all-dtypes
(the fp16 kernels are the same code with another instruction type).
"""
import re
import sys

TILE = re.compile(r'(V0[689]Tile)I((?:L[ib]\d+E)+)E')


def summarize(text, all_dtypes=False):
    rows = []
    for f in text.split('Function :')[1:]:
        name = f[:600].split('\n')[0].strip()
        m = TILE.search(name)
        if not m:
            continue
        dt = 'bf16' if 'bfloat16' in name else 'fp16' if '__half' in name or '6__half' in name else 'fp8/other'
        if dt != 'bf16' and not all_dtypes:
            continue
        args = ','.join(v for _, v in re.findall(r'L([ib])(\d+)E', m.group(2)))
        rest = name[m.end():]
        lay = re.match(r'ELb(\d)E', rest)  # the kLayout flag after the tile, where the kernel has one
        hg = len(re.findall(r'\bHGMMA\b', f))
        dep = len(re.findall(r'WARPGROUP\.DEPBAR', f))
        arr = len(re.findall(r'WARPGROUP\.ARRIVE', f))
        le1 = len(re.findall(r'DEPBAR\.LE gsb0, 0x1\b', f))
        rows.append((f'{m.group(1)}<{args}>', dt, lay.group(1) if lay else '-', hg, dep, arr, le1))
    return rows


def main():
    rows = summarize(sys.stdin.read(), '--all-dtypes' in sys.argv)
    print(f'{"tile":32s} {"dtype":5s} {"layout":6s} {"HGMMA":>6s} {"WG.DEPBAR":>9s} {"WG.ARRIVE":>9s} '
          f'{"LE1":>4s} {"HGMMA/DEPBAR":>12s}')
    for tile, dt, lay, hg, dep, arr, le1 in rows:
        ratio = f'{hg / dep:.1f}' if dep else '-'
        print(f'{tile:32s} {dt:5s} {lay:6s} {hg:6d} {dep:9d} {arr:9d} {le1:4d} {ratio:>12s}')
    if not rows:
        print('no V06Tile/V08Tile/V09Tile kernel in the listing (is it `cuobjdump -sass` output?)')


if __name__ == '__main__':
    main()

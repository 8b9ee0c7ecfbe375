#!/usr/bin/env python3
"""kernels/dev/ptxas_table.py: registers, spills and stack per compiled configuration of the fast
forwards (v05, v06, v08 with v08p, v09, v10) and of v07b's decode kernel, from the compiler's own
report (nvcc -Xptxas -v), as the Markdown table in kernels/README.md (block PTXAS).

    kernels/dev/ptxas_table.py kernels/dev/ptxas_sm90.txt                  # print the table
    kernels/dev/ptxas_table.py kernels/dev/ptxas_sm90.txt --readme kernels/README.md [--check]

The input is ptxas -v output (any number of files; the lines of other kernels are ignored); the
committed kernels/dev/ptxas_sm90.txt holds the lines of these files from one build (its first
line says which). To remake it: compile each file with the project's CMake flags plus -Xptxas -v
(configure CMake with -DCMAKE_CUDA_FLAGS="-Xptxas -v") and pass the log through `--extract`
(keeps the lines of the kernels of TILES below). Shared memory: these
kernels take all their tiles as dynamic shared memory (the launch's Tl::kSmemBytes, static_asserted
against the platform limit in each file), which ptxas does not see: the table asserts that the
static figure is 0 and points to the launch configuration's smem_bytes for the dynamic one.
A kernel compiled for both sm_90 and sm_90a (the project builds v06, v07b, v08, v09, v10 for both;
their sm_90 kernels are empty stubs) is listed with its sm_90a figures.
"""
import re
import sys

# The tile structs of the fast rungs and the variant each belongs to (V08Tile's instances serve
# v08 and v08p_fa3_persistent alike).
TILES = {'V05Tile': 'v05', 'V06Tile': 'v06', 'V08Tile': 'v08', 'V09Tile': 'v09', 'V10Tile': 'v10', 'WgDecodeTile': 'v07b'}
TILE = re.compile(r'(' + '|'.join(TILES) + r')I((?:L[ib]\d+E)+)E')
ANON = re.compile(r"\d+_GLOBAL__N__[0-9a-f]+_\d+_\w+?_[0-9a-f]{8}")
PARAMS = {'v05': 'd, warps, row tiles, Bc, stages, Q in regs, lazy', 'v06': 'd, warpgroups, Bc, stages, min blocks, overlap',
          'v08': 'd, Br, Bc, stages, ping-pong, then 1 where the softmax is pinned under P V (kPinSoftmax); one kernel instance serves v08 and v08p_fa3_persistent (their grids differ); registers at launch, setmaxnreg then moves them between producer and consumers',
          'v09': 'd, Bc, stages, promotion interval, S column part, eager rescaling; dtype is the output dtype, inputs e4m3',
          'v10': 'd, Br, Bc, stages, promotion interval, S column part, eager rescaling; registers at launch as v08; dtype is the output dtype, inputs e4m3',
          'v07b': 'd, row warpgroups, key warpgroups, Bc, stages (WgDecodeTile); layout kernel 1 = the paged cache'}


def parse(lines):
    """[(variant, tile args, layout flag, dtype, arch, stats)] in input order, one per kernel."""
    out, cur = [], None
    for line in lines:
        m = re.search(r"Compiling entry function '([\w$]+)' for '(sm_\w+)'", line)
        if m:
            name, arch = m.group(1), m.group(2)
            t = TILE.search(name)
            cur = None
            if t:
                args = ','.join(v for _, v in re.findall(r'L([ib])(\d+)E', t.group(2)))
                lay = re.match(r'ELb(\d)E', name[t.end():])
                dt = 'bf16' if 'bfloat16' in name else 'fp16' if '__half' in name else 'fp8' if 'fp8' in name else '?'
                cur = {'variant': TILES[t.group(1)], 'tile': args, 'layout': lay.group(1) if lay else '-',
                       'dtype': dt, 'arch': arch, 'name': name}
                out.append(cur)
            continue
        if cur is None:
            continue
        stat_fields(line, cur)
    return [k for k in out if 'regs' in k]


def stat_fields(line, d):
    """One line of ptxas -v's per-kernel statistics into d: stack, spill_st, spill_ld (the stack
    line), regs, barriers, smem (the "Used N registers" line). Shared with sass_compare.py."""
    m = re.search(r'(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads', line)
    if m:
        d['stack'], d['spill_st'], d['spill_ld'] = map(int, m.groups())
    m = re.search(r'Used (\d+) registers', line)
    if m:
        d['regs'] = int(m.group(1))
        b = re.search(r'used (\d+) barriers', line)
        d['barriers'] = int(b.group(1)) if b else 0
        s = re.search(r'(\d+) bytes smem', line)
        d['smem'] = int(s.group(1)) if s else 0


def extract(lines):
    """The header-and-stats lines of the V0xTile kernels (what the committed file keeps); a kernel
    compiled twice in one log (a file rebuilt after an edit) keeps its last compile."""
    blocks, cur = {}, None
    for line in lines:
        if 'Compiling entry function' in line:
            m = re.search(r"Compiling entry function '([\w$]+)' for '(sm_\w+)'", line)
            cur = (ANON.sub('ANON', m.group(1)), m.group(2)) if m and TILE.search(line) else None
            if cur:
                blocks.pop(cur, None)  # re-inserted last: the latest compile, in log order
                blocks[cur] = []
        if cur and ('ptxas info' in line or 'bytes stack frame' in line) and 'Compile time' not in line:
            blocks[cur].append(ANON.sub('ANON', line.rstrip('\n')))
    return [l for b in blocks.values() for l in b]


def table(kernels):
    # One row per (variant, tile, layout, arch); fp16 and bf16 merged when they agree.
    rows, order = {}, []
    # v06/v08/v09 are also compiled for plain sm_90, where their kernels are empty stubs (wgmma,
    # TMA and setmaxnreg exist only in sm_90a): list a kernel's sm_90a build where it has one.
    has_90a = {(k['variant'], k['tile'], k['layout']) for k in kernels if k['arch'] == 'sm_90a'}
    kernels = [k for k in kernels if k['arch'] != 'sm_90' or (k['variant'], k['tile'], k['layout']) not in has_90a]
    for k in kernels:
        key = (k['variant'], k['tile'], k['layout'], k['arch'])
        if key not in rows:
            rows[key] = {}
            order.append(key)
        rows[key][k['dtype']] = k
    out = ['| variant | tile (template arguments) | layout kernel | arch | dtype | registers | spill stores / loads (bytes) | stack (bytes) |',
           '|---|---|---|---|---|---|---|---|']
    for key in sorted(order, key=lambda k: (k[0], [int(x) for x in k[1].split(',')], k[2], k[3])):
        by = rows[key]
        stats = {dt: (k['regs'], k['spill_st'], k['spill_ld'], k['stack'], k['smem']) for dt, k in by.items()}
        groups = [(sorted(by), stats[next(iter(by))])] if len(set(stats.values())) == 1 else \
                 [([dt], stats[dt]) for dt in sorted(by)]
        for dts, (r, st, ld, stack, smem) in groups:
            v, tile, lay, arch = key
            out.append(f'| {v} | {tile} | {lay} | {arch} | {"/".join(dts)} | {r} | {st} / {ld} | {stack} |')
            assert smem == 0, f'{v} {tile}: static shared memory {smem}: add the column back'
    legend = '; '.join(f'{v}: {p}' for v, p in PARAMS.items())
    return '\n'.join(out) + f'\n\nTemplate arguments in order ({legend}). Layout kernel: 1 = the packed/paged instance, 0 = dense, - = the kernel has no such flag. Shared memory: all dynamic (no kernel has static shared memory; ptxas does not see the dynamic size), per launch as `smem_bytes` in the launch configuration (`ioattn run ... --json`, field `config`).'


def main():
    args = [a for a in sys.argv[1:] if not a.startswith('--')]
    readme = sys.argv[sys.argv.index('--readme') + 1] if '--readme' in sys.argv else None
    if readme:
        args.remove(readme)
    lines = [l for f in args for l in open(f, errors='replace')]
    if '--extract' in sys.argv:
        print('\n'.join(extract(lines)))
        return 0
    src = lines[0].strip().lstrip('# ') if lines and lines[0].startswith('#') else ''
    body = table(parse(lines)) + (f'\n\nSource: {src}.' if src else '')
    if not readme:
        print(body)
        return 0
    text = open(readme).read()
    begin, end = '<!-- PTXAS:BEGIN -->', '<!-- PTXAS:END -->'
    if begin not in text or end not in text:
        sys.exit(f'{readme}: no {begin} ... {end} block')
    new = text[:text.index(begin) + len(begin)] + '\n' + body + '\n' + text[text.index(end):]
    if '--check' in sys.argv:
        if new != text:
            print(f'{readme}: PTXAS block is stale (run kernels/dev/ptxas_table.py ... --readme {readme})')
            return 1
        print('PTXAS block up to date')
        return 0
    open(readme, 'w').write(new)
    return 0


if __name__ == '__main__':
    sys.exit(main())

#!/usr/bin/env python3
"""kernels/dev/sass_compare.py: did a refactor change a kernel's machine code? Compares the kernels
of two builds of one kernel file, function by function, plus ptxas -v's registers, spills, stack,
barriers and shared memory per function. A refactor that only moved code into shared headers
should give identical SASS (kernels/dev/NOTES.md, "v05/v06 onto the shared headers").

Inputs are device ELF files (cubins), which `nvcc -cubin` writes without a SASS tool:

    kernels/dev/sass_compare.py --build BEFORE_TREE AFTER_TREE OUT   # compiles v05 and v06 twice
    kernels/dev/sass_compare.py before.cubin after.cubin [--ptxas before.txt after.txt]
    kernels/dev/sass_compare.py --ptx BEFORE_TREE AFTER_TREE OUT kernels/v08_fa3_warpspec.hip ...

--build compiles kernels/v05_fa2_fast.hip (sm_90) and kernels/v06_fa2_wgmma.hip (sm_90a) of each
source tree (e.g. `git worktree add /some/dir HEAD` for "before") with kernels/dev/build.sh's flags,
-cubin and -Xptxas -v, then compares. Per kernel it reports
  - `identical`: the .text section (every instruction, 16 bytes each, registers included) is
    byte-for-byte the same;
  - otherwise, with cuobjdump on PATH: a diff of the disassembly with register numbers, addresses
    and encodings normalized away, and the opcode histogram's difference; without it: how many
    16-byte instructions differ and the histogram of the low 12 bits of each instruction (the
    opcode and its operand form on sm_70+ encodings), before and after.
Kernel names are matched after removing the anonymous namespace's per-file hash
(`_GLOBAL__N__<hash>_<n>_<file>_<hash>`). Exit status 0 when every kernel is identical and ptxas says
the same for each, 1 otherwise.
"""
import argparse
import collections
import os
import re
import shutil
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ptxas_table import stat_fields  # noqa: E402  (one parser of ptxas -v statistics)

NVCC = os.environ.get('NVCC', 'nvcc' if shutil.which('nvcc') else '/usr/local/cuda/bin/nvcc')
FLAGS = ['-x', 'cu', '-std=c++20', '-O3', '--expt-relaxed-constexpr', '-I.', '-Iinclude',
         '-diag-suppress', '177', '-Xptxas', '-v', '-cubin']
FILES = [('v05', 'kernels/v05_fa2_fast.hip', 'sm_90'), ('v06', 'kernels/v06_fa2_wgmma.hip', 'sm_90a')]
ANON = re.compile(r"\d+_GLOBAL__N__[0-9a-f]+_\d+_\w+?_[0-9a-f]{8}")


def norm_name(n):
    return ANON.sub('ANON', n)


def elf_kernels(path):
    """{normalized kernel name: (text bytes, .nv.shared section bytes)}."""
    data = open(path, 'rb').read()
    if data[:4] != b'\x7fELF' or data[4] != 2:
        sys.exit(f'{path}: not a 64-bit ELF (give a cubin: nvcc -cubin, or cuobjdump -xelf all)')
    shoff, = struct.unpack_from('<Q', data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from('<HHH', data, 0x3A)
    secs = [struct.unpack_from('<IIQQQQIIQQ', data, shoff + k * shentsize) for k in range(shnum)]
    stroff = secs[shstrndx][4]

    def name(s):
        end = data.index(b'\0', stroff + s[0])
        return data[stroff + s[0]:end].decode()

    text, smem = {}, {}
    for s in secs:
        n = name(s)
        if n.startswith('.text.'):
            text[norm_name(n[6:])] = data[s[4]:s[4] + s[5]]
        elif n.startswith('.nv.shared.'):
            smem[norm_name(n[11:])] = s[5]
    return {k: (t, smem.get(k, 0)) for k, t in text.items()}


def ptxas_stats(path):
    """{normalized kernel name: {regs, stack, spill_st, spill_ld, barriers, smem}} from -Xptxas -v."""
    out, cur = {}, None
    for line in open(path, errors='replace'):
        m = re.search(r"(?:Compiling entry function|Function properties for) '?([\w$]+)'?", line)
        if m:
            cur = norm_name(m.group(1))
            out.setdefault(cur, {})
            continue
        if cur is None:
            continue
        stat_fields(line, out[cur])
    return out


def short(n):
    """A readable tag for a v05/v06 kernel: tile parameters, dtype, layout flag."""
    m = re.search(r'(V0\dTile)I((?:L[ib]\d+E)+)', n)
    if not m:
        return n[:90]
    args = re.findall(r'L([ib])(\d+)E', m.group(2))
    tile = ','.join(v for _, v in args)
    dt = 'bf16' if 'bfloat16' in n else 'fp16' if 'half' in n else '?'
    lay = re.search(r'EEELb(\d)E', n)
    return f"{m.group(1)}<{tile}> {dt}{' layout' if lay and lay.group(1) == '1' else ''}"


def low12_hist(text):
    return collections.Counter(struct.unpack_from('<Q', text, k)[0] & 0xFFF for k in range(0, len(text), 16))


SASS_NORM = [(re.compile(r'/\*[0-9a-f]{4,}\*/'), ''), (re.compile(r'/\* 0x[0-9a-f]+ \*/'), ''),
             (re.compile(r'\bU?R\d+\b'), 'R'), (re.compile(r'\bU?P\d\b'), 'P'),
             (re.compile(r'\b0x[0-9a-f]+\b'), 'IMM'), (re.compile(r'\s+'), ' ')]


def cuobjdump_sass(path):
    """{normalized kernel name: [normalized instruction lines]} or None without cuobjdump."""
    if not shutil.which('cuobjdump'):
        return None
    txt = subprocess.run(['cuobjdump', '-sass', path], capture_output=True, text=True).stdout
    out = {}
    for f in txt.split('Function : ')[1:]:
        lines = f.split('\n')
        ins = []
        for l in lines[1:]:
            m = re.match(r'\s*/\*[0-9a-f]{4}\*/\s*(.*?);', l)
            if m:
                s = m.group(1)
                for rx, rep in SASS_NORM:
                    s = rx.sub(rep, s)
                ins.append(s.strip())
        out[norm_name(lines[0].strip())] = ins
    return out


def compare(before, after, ptx_before=None, ptx_after=None, label=''):
    kb, ka = elf_kernels(before), elf_kernels(after)
    pb = ptxas_stats(ptx_before) if ptx_before else {}
    pa = ptxas_stats(ptx_after) if ptx_after else {}
    sb = sa = None
    ok = True
    if set(kb) != set(ka):
        ok = False
        for n in sorted(set(kb) - set(ka)):
            print(f'{label} only before: {short(n)}')
        for n in sorted(set(ka) - set(kb)):
            print(f'{label} only after:  {short(n)}')
    same = 0
    for n in sorted(set(kb) & set(ka), key=short):
        (tb, mb), (ta, ma) = kb[n], ka[n]
        stats_b, stats_a = pb.get(n, {}), pa.get(n, {})
        st = ' '.join(f'{k}={stats_a.get(k)}' for k in ('regs', 'spill_st', 'spill_ld', 'stack', 'smem'))
        ptx_same = stats_b == stats_a
        if tb == ta and mb == ma and ptx_same:
            same += 1
            print(f'{label} identical  {short(n):44s} {len(ta) // 16:6d} instr  {st}')
            continue
        ok = False
        nd = sum(tb[k:k + 16] != ta[k:k + 16] for k in range(0, min(len(tb), len(ta)), 16))
        print(f'{label} DIFFERENT  {short(n)}: instr {len(tb) // 16} -> {len(ta) // 16}, {nd} differ; '
              f'.nv.shared {mb} -> {ma} bytes')
        if not ptx_same:
            print(f'    ptxas before {stats_b}\n    ptxas after  {stats_a}')
        if sb is None:
            sb, sa = cuobjdump_sass(before), cuobjdump_sass(after)
        if sb is not None and n in sb and n in sa:
            import difflib
            d = list(difflib.unified_diff(sb[n], sa[n], lineterm='', n=1))
            print(f'    normalized SASS: {"same" if not d else f"{len(d)} diff lines"}')
            for l in d[:60]:
                print('    ' + l)
            hb = collections.Counter(i.split(' ')[0] for i in sb[n])
            ha = collections.Counter(i.split(' ')[0] for i in sa[n])
        else:
            hb, ha = low12_hist(tb), low12_hist(ta)
        for k in sorted(set(hb) | set(ha), key=str):
            if hb[k] != ha[k]:
                print(f'    opcode {k if isinstance(k, str) else hex(k)}: {hb[k]} -> {ha[k]}')
    print(f'{label} {same} of {len(set(kb) | set(ka))} kernels identical')
    return ok


def compare_ptx(before, after, label=''):
    """PTX of one file from two trees, equal up to the anonymous namespace's hash? Identical PTX
    means identical SASS (ptxas gets the same input): the cheap check for a header change that
    files other than v05/v06 include (v08, v09: kernels/dev/NOTES.md)."""
    hb, ha = (re.sub(r'_GLOBAL__N__[0-9a-f]+_', '_GLOBAL__N__H_', open(f).read()) for f in (before, after))
    if hb == ha:
        print(f'{label} PTX identical ({hb.count(chr(10))} lines, {hb.count(".entry ")} kernels)')
        return True
    import difflib
    d = list(difflib.unified_diff(hb.split('\n'), ha.split('\n'), lineterm='', n=0))
    print(f'{label} PTX DIFFERENT: {sum(l[:1] in "+-" for l in d[2:])} lines differ')
    for l in d[:40]:
        print('    ' + l)
    return False


def build(tree, out):
    os.makedirs(out, exist_ok=True)
    for tag, src, arch in FILES:
        with open(os.path.join(out, tag + '.ptxas.txt'), 'w') as err:
            r = subprocess.run([NVCC] + FLAGS + ['-arch=' + arch, src, '-o', os.path.join(out, tag + '.cubin')],
                               cwd=tree, stderr=err)
        if r.returncode:
            sys.exit(f'{tree}: nvcc failed on {src} (see {out}/{tag}.ptxas.txt)')


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('paths', nargs='+', help='BEFORE.cubin AFTER.cubin, or with --build BEFORE_TREE AFTER_TREE OUT')
    ap.add_argument('--ptxas', nargs=2, metavar=('BEFORE', 'AFTER'), help='the two -Xptxas -v logs')
    ap.add_argument('--build', action='store_true', help='compile v05 and v06 of both trees, then compare')
    ap.add_argument('--ptx', action='store_true',
                    help='BEFORE_TREE AFTER_TREE OUT FILE.hip...: compile each file to sm_90a PTX in both trees, compare')
    a = ap.parse_args()
    if a.ptx:
        before, after, out, *files = a.paths
        ok = True
        for f in files:
            tag = os.path.basename(f).split('.')[0]
            for side, tree in (('before', before), ('after', after)):
                os.makedirs(os.path.join(out, side), exist_ok=True)
                dst = os.path.join(out, side, tag + '.ptx')
                if not os.path.exists(dst):
                    ptx_flags = [x for x in FLAGS if x not in ('-Xptxas', '-v', '-cubin')]
                    if subprocess.run([NVCC] + ptx_flags + ['-arch=sm_90a', '-ptx', f, '-o', dst], cwd=tree).returncode:
                        sys.exit(f'{tree}: nvcc -ptx failed on {f}')
            ok &= compare_ptx(os.path.join(out, 'before', tag + '.ptx'), os.path.join(out, 'after', tag + '.ptx'), tag)
        sys.exit(0 if ok else 1)
    if a.build:
        before, after, out = a.paths
        ok = True
        for side, tree in (('before', before), ('after', after)):
            if not os.path.exists(os.path.join(out, side, 'v06.cubin')):
                build(tree, os.path.join(out, side))
        for tag, _, _ in FILES:
            b, f = os.path.join(out, 'before', tag), os.path.join(out, 'after', tag)
            ok &= compare(b + '.cubin', f + '.cubin', b + '.ptxas.txt', f + '.ptxas.txt', tag)
    else:
        ok = compare(a.paths[0], a.paths[1], *(a.ptxas or (None, None)))
    sys.exit(0 if ok else 1)


if __name__ == '__main__':
    main()

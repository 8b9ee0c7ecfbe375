#!/usr/bin/env python3
"""kernels/dev/sass_local.py: where ptxas put the softmax of a wgmma kernel, read from a cubin built
on a machine whose CUDA install has nvcc and ptxas but no disassembler (no cuobjdump, no nvdisasm).

    nvcc <the CMake flags of kernels/v08_fa3_warpspec.hip> -gencode=arch=compute_90a,code=sm_90a \\
        -cubin -o v08.cubin kernels/v08_fa3_warpspec.hip
    python3 kernels/dev/sass_local.py LISTING v08.cubin [--match V08TileILi128ELi128ELi128ELi2ELb1] [--skeleton]
    python3 kernels/dev/sass_local.py --self-test

LISTING is a `cuobjdump -sass` listing of the same architecture taken on the GPU machine (committed,
e.g. experiments/results/h200/2026-12-02_2732dad_vs_2aa0ed3/sass_2732dad.txt.xz; .xz is read as
is): the mnemonic of each instruction word is learned from it (the low 12 bits of an sm_90 instruction's
first 64-bit word are its opcode: unique per mnemonic in such listings), so the cubin's code is
named without a decoder. Operands are not decoded; WARPGROUP.DEPBAR is told apart from
WARPGROUP.ARRIVE (same opcode) by bit 47 and its count read from the second word's bits 8-15.

Per kernel whose name contains every --match string (bf16 only unless --all-dtypes), it prints the code
size and, per main-loop step (a `DEPBAR.LE gsb0, 0x1` followed by a `DEPBAR.LE gsb0, 0x0`: S
waited for, then P V), how many MUFU (the exponentials) ptxas scheduled between the two waits,
that is under the P V, and how many after the P V wait up to the next branch. --skeleton prints
the kernel as runs of letters (H HGMMA, A WARPGROUP.ARRIVE, W0/W1 the waits, e MUFU, m FMUL, p
F2FP, s SYNCS, z NANOSLEEP, B BAR, > BRA). Opcodes the listing lacks print as ?xxx and count as
nothing: learn from a listing of a build of the same file.
"""
import argparse
import lzma
import re
import struct
import sys

LINE = re.compile(r'/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z0-9_.]+)[^;]*;\s*/\*\s*(0x[0-9a-f]+)\s*\*/')
LETTERS = [('MUFU', 'e'), ('DEPBAR0', 'W0'), ('DEPBAR1', 'W1'), ('HGMMA', 'H'), ('WARPGROUP.ARRIVE', 'A'), ('BAR', 'B'),
           ('F2FP', 'p'), ('SYNCS', 's'), ('NANOSLEEP', 'z'), ('BRA', '>'), ('FMUL', 'm')]


def opcode_table(listing):
    """{opcode bits: mnemonic} from a cuobjdump -sass listing (first mnemonic seen per opcode)."""
    table = {}
    for line in listing.split('\n'):
        m = LINE.search(line)
        if m:
            table.setdefault(int(m.group(2), 16) & 0xfff, m.group(1))
    return table


def sections(elf):
    """(name, bytes) of each section of a 64-bit little-endian ELF."""
    shoff, = struct.unpack_from('<Q', elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from('<HHH', elf, 0x3a)
    heads = [struct.unpack_from('<IIQQQQIIQQ', elf, shoff + i * shentsize) for i in range(shnum)]
    names = heads[shstrndx][4]
    for h in heads:
        start = names + h[0]
        yield elf[start:elf.index(b'\0', start)].decode(), elf[h[4]:h[4] + h[5]]


def mnemonics(code, table):
    out = []
    for k in range(0, len(code) - 15, 16):
        w0, w1 = struct.unpack_from('<QQ', code, k)
        op = table.get(w0 & 0xfff, '?%03x' % (w0 & 0xfff))
        if op.startswith('WARPGROUP') and (w0 >> 47) & 1:
            op = 'DEPBAR%d' % ((w1 >> 8) & 0xff)
        elif op.startswith('WARPGROUP'):
            op = 'WARPGROUP.ARRIVE'
        out.append(op)
    return out


def letters(ops):
    seq = []
    for op in ops:
        for prefix, c in LETTERS:
            if op == prefix or op.startswith(prefix + '.'):
                seq.append(c)
                break
    return seq


def steps(seq):
    """[(MUFU between W1 and the next W0, MUFU after that W0 up to the next branch)]."""
    out, k = [], 0
    while k < len(seq):
        if seq[k] != 'W1':
            k += 1
            continue
        j = k + 1
        while j < len(seq) and seq[j] not in ('W0', 'W1'):
            j += 1
        if j == len(seq) or seq[j] != 'W0':
            k = j
            continue
        under = seq[k + 1:j].count('e')
        e = j + 1
        while e < len(seq) and seq[e] != '>':
            e += 1
        out.append((under, seq[j + 1:e].count('e')))
        k = e
    return out


def skeleton(seq):
    runs, prev, n = [], None, 0
    for c in seq + [None]:
        if c == prev:
            n += 1
            continue
        if prev:
            runs.append(prev + (str(n) if n > 1 else ''))
        prev, n = c, 1
    return ' '.join(runs)


def report(table, elf, match, all_dtypes, show_skeleton):
    lines = []
    for name, code in sections(elf):
        if not name.startswith('.text.') or not all(m in name for m in match):
            continue
        if not all_dtypes and 'bfloat16' not in name:
            continue
        seq = letters(mnemonics(code, table))
        st = steps(seq)
        lines.append(f'{name[len(".text."):]}: {len(code)} bytes, {len(st)} steps')
        for under, after in st:
            lines.append(f'  step: MUFU under P V {under}, after its wait {after}')
        if show_skeleton:
            lines.append('  ' + skeleton(seq))
    return lines


def self_test():
    # A listing naming three opcodes, and an ELF whose one .text section holds a step: W1, two MUFU,
    # W0, one MUFU, BRA (the words' other bits are arbitrary).
    listing = '\n'.join([
        '        /*0000*/                   MUFU.EX2 R3, R3 ;                 /* 0x0000000300037308 */',
        '        /*0010*/                   WARPGROUP.DEPBAR.LE gsb0, 0x1 ;   /* 0x00008000000079c5 */',
        '        /*0020*/               @P0 BRA 0x2650 ;                      /* 0x0000000000000947 */'])
    table = opcode_table(listing)
    assert table == {0x308: 'MUFU.EX2', 0x9c5: 'WARPGROUP.DEPBAR.LE', 0x947: 'BRA'}, table
    words = [(0x00008000000079c5, 0x100), (0x0000000300037308, 0), (0x0000000400047308, 0),
             (0x00008000000079c5, 0x000), (0x0000000500057308, 0), (0x0000000000000947, 0), (0x00000000000079c5, 0)]
    code = b''.join(struct.pack('<QQ', a, b) for a, b in words)
    names = b'\0.shstrtab\0.text.k_bfloat16\0'
    body = code + names
    shoff = 64 + len(body)
    sh = [struct.pack('<IIQQQQIIQQ', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
          struct.pack('<IIQQQQIIQQ', names.index(b'.text'), 1, 0, 0, 64, len(code), 0, 0, 0, 0),
          struct.pack('<IIQQQQIIQQ', names.index(b'.shstrtab'), 3, 0, 0, 64 + len(code), len(names), 0, 0, 0, 0)]
    header = bytearray(64)
    struct.pack_into('<Q', header, 0x28, shoff)
    struct.pack_into('<HHH', header, 0x3a, 64, len(sh), 2)
    elf = bytes(header) + body + b''.join(sh)
    ops = mnemonics(code, table)
    assert ops == ['DEPBAR1', 'MUFU.EX2', 'MUFU.EX2', 'DEPBAR0', 'MUFU.EX2', 'BRA', 'WARPGROUP.ARRIVE'], ops
    out = report(table, elf, [], False, True)
    assert out == ['k_bfloat16: 112 bytes, 1 steps', '  step: MUFU under P V 2, after its wait 1', '  W1 e2 W0 e > A'], out
    assert report(table, elf, ['nomatch'], False, False) == []
    assert steps(['W1', 'e', 'W1', 'e', 'W0', '>']) == [(1, 0)]  # a W1 without its W0 is skipped
    print('sass_local self-test: ok')


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('listing', nargs='?')
    ap.add_argument('cubin', nargs='?')
    ap.add_argument('--match', action='append', default=[], help='a string the kernel name must contain (repeatable)')
    ap.add_argument('--all-dtypes', action='store_true')
    ap.add_argument('--skeleton', action='store_true')
    ap.add_argument('--self-test', action='store_true')
    a = ap.parse_args()
    if a.self_test:
        return self_test()
    if not a.listing or not a.cubin:
        ap.error('LISTING and CUBIN are required (or --self-test)')
    text = lzma.open(a.listing, 'rt').read() if a.listing.endswith('.xz') else open(a.listing).read()
    table = opcode_table(text)
    if not table:
        sys.exit(f'sass_local.py: {a.listing} has no cuobjdump -sass instruction lines')
    with open(a.cubin, 'rb') as f:
        elf = f.read()
    if elf[:4] != b'\x7fELF':
        sys.exit(f'sass_local.py: {a.cubin} is not an ELF file (build it with nvcc -cubin)')
    lines = report(table, elf, a.match, a.all_dtypes, a.skeleton)
    if not lines:
        sys.exit('sass_local.py: no kernel matches ' + ' '.join(a.match or ['(any)']))
    print('\n'.join(lines))


if __name__ == '__main__':
    main()

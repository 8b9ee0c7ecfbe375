"""The measured forward ranking of ioattn.attention(kernel=None), on the CPU (no GPU, no C ABI library).

    python3 python/test_choice_cpu.py

Checks ioattn._measured_forward_order (module docstring, "Kernel choice") on a synthetic table: the
nearest N in log scale (ties to the smaller N), the other 16-bit dtype's cell when this dtype's is
missing, nothing for fp32, FP8, windows, seqlen_q or seqlen_k below 512 or an unmeasured head dim;
and on the committed python/forward_choice.json that every name in it is a forward variant of
kernels/registry.cpp and that its cells are non-empty. One line per check; exit 0 when all pass.
"""
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import ioattn  # noqa: E402

bad = []


def expect(ok, what):
    print(("PASS: " if ok else "FAIL: ") + what, flush=True)
    if not ok:
        bad.append(what)


def cell(dt, d, c, n, *order):
    return dict(dtype=dt, head_dim=d, causal=c, seqlen=n, order=list(order))


CELLS = [cell("bf16", 128, 1, 512, "a"), cell("bf16", 128, 1, 2048, "b"), cell("bf16", 128, 1, 16384, "c", "a"),
         cell("fp16", 64, 0, 1024, "f")]
order = ioattn._measured_forward_order
expect(order(CELLS, "bf16", 128, True, 512, 512, (-1, -1)) == ["a"], "exact N")
expect(order(CELLS, "bf16", 128, True, 1024, 1024, (-1, -1)) == ["a"], "log-scale tie (512 / 2048) to the smaller N")
expect(order(CELLS, "bf16", 128, True, 1100, 1100, (-1, -1)) == ["b"], "nearest N in log scale")
expect(order(CELLS, "bf16", 128, True, 4096, 100000, (-1, -1)) == ["c", "a"], "N from seqlen_k, beyond the grid")
expect(order(CELLS, "bf16", 64, False, 4096, 4096, (-1, -1)) == ["f"], "the other 16-bit dtype's cell")
expect(order(CELLS, "fp16", 128, False, 4096, 4096, (-1, -1)) == [], "no cell of that causality: nothing")
expect(order(CELLS, "fp32", 128, True, 4096, 4096, (-1, -1)) == [], "fp32: nothing")
expect(order(CELLS, "fp8_e4m3", 128, True, 4096, 4096, (-1, -1)) == [], "FP8: nothing")
expect(order(CELLS, "bf16", 128, True, 4096, 4096, (64, 0)) == [], "a window: nothing")
expect(order(CELLS, "bf16", 128, True, 16, 4096, (-1, -1)) == [], "seqlen_q < 512 (decode): nothing")
expect(order(CELLS, "bf16", 128, True, 4096, 500, (-1, -1)) == [], "seqlen_k < 512: nothing")
expect(order(CELLS, "bf16", 96, True, 4096, 4096, (-1, -1)) == [], "an unmeasured head dim: nothing")
expect(order([], "bf16", 128, True, 4096, 4096, (-1, -1)) == [], "no table: nothing")

path = os.path.join(HERE, "forward_choice.json")
table = json.load(open(path))
registry = open(os.path.join(HERE, "..", "kernels", "registry.cpp")).read()
names = set(re.findall(r"^\s*X\((v\w+),", registry, re.M))
used = {n for c in table["cells"] for n in c["order"]}
expect(bool(table["cells"]) and all(c["order"] for c in table["cells"]), "the committed table has non-empty cells")
expect(used <= names, "every name in the committed table is a registered forward"
       + ("" if used <= names else f" (unknown: {sorted(used - names)})"))

print(("PASS" if not bad else "FAIL") + f": {len(bad)} failed")
sys.exit(1 if bad else 0)

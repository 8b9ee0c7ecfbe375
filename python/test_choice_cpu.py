"""The measured forward ranking of ioattn.attention(kernel=None), on the CPU (no GPU, no C ABI library).

    python3 python/test_choice_cpu.py

Checks ioattn._measured_forward_order (module docstring, "Kernel choice") on a synthetic table: the
nearest N in log scale (ties to the smaller N), the other 16-bit dtype's cell when this dtype's is
missing, nothing for fp32, FP8, windows, seqlen_q or seqlen_k below 512 or an unmeasured head dim;
ioattn._measured_decode_order (the decode cells) on synthetic cells: nearest shape, group size,
causality (moot for one query row), cache kind and nearest page size, nothing above the measured
seqlen_q; ioattn.choose_forward / choose_forward_paged with a stand-in registry (no library): the
decode cell first, a refused rung skipped, the forward ladder or v07 when no cell speaks;
experiments/gpu/forward_choice.py's decode ranking on a synthetic decode.csv FIXTURE written here
(made-up times, not results): the order and speeds within one run, no cell from a run without
v06_fa2_wgmma rows nor at a shape without its row, a shape of two runs from the first listed and
never pooled across runs, and the whole file byte-identical to the committed one when no decode
cell is ranked; and on the committed python/forward_choice.json that every name in it is a forward
variant of kernels/registry.cpp and that its cells are non-empty. One line per check; exit 0 when
all pass.
"""
import contextlib
import csv
import io
import json
import os
import re
import subprocess
import sys
import tempfile

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


# ---- decode cells: ioattn's lookup -------------------------------------------------------------------
def dcell(nq, nk, b, page, *order, dt="bf16", d=128, causal=0, hq=32, hkv=8):
    return dict(dtype=dt, head_dim=d, causal=causal, batch=b, heads_q=hq, heads_kv=hkv, seqlen_q=nq, seqlen_k=nk,
                page_size=page, order=list(order))


DCELLS = [dcell(1, 1024, 1, 0, "s"), dcell(1, 131072, 1, 0, "l"), dcell(16, 131072, 16, 0, "q16"),
          dcell(1, 1024, 1, 16, "p16"), dcell(1, 1024, 1, 256, "p256"), dcell(4, 1024, 1, 0, "c4", causal=1)]
dorder = ioattn._measured_decode_order
W = (-1, -1)
expect(dorder(DCELLS, "bf16", 128, False, 1, 32, 8, 1, 1024, W) == ["s"], "decode: exact shape")
expect(dorder(DCELLS, "bf16", 128, False, 1, 32, 8, 1, 100000, W) == ["l"], "decode: nearest seqlen_k in log2")
expect(dorder(DCELLS, "bf16", 128, False, 16, 32, 8, 8, 131072, W) == ["q16"], "decode: nearest over seqlen_q + batch")
expect(dorder(DCELLS, "bf16", 128, False, 1, 64, 16, 1, 1024, W) == ["s"], "decode: the group size, not the head count")
expect(dorder(DCELLS, "bf16", 128, False, 1, 32, 32, 1, 1024, W) == [], "decode: an unmeasured group size: nothing")
expect(dorder(DCELLS, "bf16", 128, False, 1, 32, 8, 32, 1024, W) == [], "decode: seqlen_q above the measured: nothing")
expect(dorder(DCELLS, "bf16", 128, True, 1, 32, 8, 1, 1024, W) == ["s"], "decode: one query row, causal is moot")
expect(dorder(DCELLS, "bf16", 128, True, 1, 32, 8, 4, 1024, W) == ["c4"], "decode: causal with seqlen_q > 1")
expect(dorder(DCELLS, "fp16", 128, False, 1, 32, 8, 1, 1024, W) == ["s"], "decode: the other 16-bit dtype's cell")
expect(dorder(DCELLS, "fp32", 128, False, 1, 32, 8, 1, 1024, W) == [], "decode: fp32: nothing")
expect(dorder(DCELLS, "bf16", 128, False, 1, 32, 8, 1, 1024, (64, 0)) == [], "decode: a window: nothing")
expect(dorder(DCELLS, "bf16", 64, False, 1, 32, 8, 1, 1024, W) == [], "decode: an unmeasured head dim: nothing")
expect(dorder(DCELLS, "bf16", 128, False, 1, 32, 8, 1, 1024, W, 16) == ["p16"], "decode: paged, exact page size")
expect(dorder(DCELLS, "bf16", 128, False, 1, 32, 8, 1, 1024, W, 1) == ["p16"], "decode: paged, nearest page size")
expect(dorder(DCELLS, "bf16", 128, False, 1, 32, 8, 1, 1024, W, 200) == ["p256"], "decode: paged, 200 nearest 256")
expect(dorder([c for c in DCELLS if not c["page_size"]], "bf16", 128, False, 1, 32, 8, 1, 1024, W, 16) == [],
       "decode: paged without a paged cell: nothing (never a contiguous cell)")

# ---- decode cells: the choice, with a stand-in registry (no library) ------------------------------------
saved = (ioattn.kernels, ioattn.workspace_bytes, ioattn._forward_table, ioattn._decode_table)
LADDER = ["v05_fa2_fast", "v06_fa2_wgmma", "v07_decode_splitkv", "v07b_decode_wgmma", "v08_fa3_warpspec"]


def stand_in_workspace(name, b, hq, hkv, nq, nk, d, dtype, causal=False, window=W, br=0, bc=0, splits=0):
    if name.startswith("v07") and (nq > 64 or (name == "v07b_decode_wgmma" and nk > 65536)):
        raise ioattn.IoattnError(2, f"{name}: stand-in refusal")
    return 0


try:
    ioattn.kernels = lambda: {n: {} for n in LADDER}
    ioattn.workspace_bytes = stand_in_workspace
    ioattn._forward_table = []
    ioattn._decode_table = [dcell(1, 8192, 16, 0, "v07b_decode_wgmma", "v07_decode_splitkv", "v06_fa2_wgmma"),
                            dcell(1, 8192, 16, 16, "v06_fa2_wgmma", "v07b_decode_wgmma")]
    ioattn._choice.clear()
    cf, cp = ioattn.choose_forward, ioattn.choose_forward_paged
    expect(cf(16, 32, 8, 1, 8192, 128, "bf16") == "v07b_decode_wgmma", "choice: the decode cell's first rung")
    expect(cf(16, 32, 8, 1, 131072, 128, "bf16") == "v07_decode_splitkv", "choice: a refused rung skipped")
    expect(cf(16, 32, 32, 1, 8192, 128, "bf16") == "v08_fa3_warpspec", "choice: no cell (group 1): the ladder")
    expect(cf(16, 32, 8, 4096, 4096, 128, "bf16") == "v08_fa3_warpspec", "choice: prefill is not decode-shaped")
    expect(cp(16, 32, 8, 1, 8192, 128, "bf16", 16) == "v06_fa2_wgmma", "choice (paged): the paged cell's first rung")
    ioattn._decode_table = ioattn._decode_table[:1]
    ioattn._choice.clear()
    expect(cp(16, 32, 8, 1, 8192, 128, "bf16", 16) == "v07_decode_splitkv", "choice (paged): no paged cell: v07")
    try:
        cp(16, 32, 8, 1, 8192, 128, "bf16", 0)
        expect(False, "choice (paged): page_size 0 refused")
    except ioattn.IoattnError as e:
        expect(e.code == 2 and "page_size" in str(e), "choice (paged): page_size 0 refused, naming page_size")
finally:
    ioattn.kernels, ioattn.workspace_bytes, ioattn._forward_table, ioattn._decode_table = saved
    ioattn._choice.clear()

# ---- decode cells: forward_choice.py's ranking on a synthetic FIXTURE (made-up times, not results) ------
sys.path.insert(0, os.path.join(HERE, "..", "experiments", "gpu"))
import forward_choice  # noqa: E402

COLS = ["impl", "study", "sample", "status", "ms", "dtype", "head_dim", "causal", "batch", "heads_q", "heads_kv",
        "seqlen_q", "seqlen_k", "page_size", "error"]
V06, V07, V07B = "ioattn:v06_fa2_wgmma", "ioattn:v07_decode_splitkv", "ioattn:v07b_decode_wgmma"


def fixture_csv(tmp, run, rows):
    """rows: (impl, sample, status, ms, batch, seqlen_q, seqlen_k, page_size) -> tmp/run/decode.csv."""
    os.makedirs(os.path.join(tmp, run))
    f = os.path.join(tmp, run, "decode.csv")
    with open(f, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(COLS)
        w.writerow(["copy_sm", "decode", 0, "ok", 2.0] + [""] * 10)
        for impl, smp, st, ms, b, nq, nk, page in rows:
            w.writerow([impl, "decode", smp, st, ms if st == "ok" else "", "bf16", 128, 0, b, 32, 8, nq, nk, page,
                        "" if st == "ok" else "fixture refusal"])
    return f


def ranked(csvs):
    with contextlib.redirect_stdout(io.StringIO()):
        cells, used, notes = forward_choice.decode_cells(csvs)
    return {(c["batch"], c["seqlen_q"], c["seqlen_k"], c["page_size"]): c for c in cells}, used, notes


with tempfile.TemporaryDirectory() as tmp:
    a = fixture_csv(tmp, "fixture_a", [
        (V06, 0, "ok", 3.0, 1, 1, 1024, 0), (V06, 1, "ok", 3.2, 1, 1, 1024, 0),       # S1: v07b < v07 < v06
        (V07, 0, "ok", 2.0, 1, 1, 1024, 0), (V07, 1, "ok", 2.0, 1, 1, 1024, 0),
        (V07B, 0, "ok", 1.0, 1, 1, 1024, 0), (V07B, 1, "ok", 1.2, 1, 1, 1024, 0),
        ("sdpa:cudnn", 0, "ok", 0.1, 1, 1, 1024, 0),                                  # a peer: never ranked
        (V06, 0, "refused", 0, 1, 1, 1024, 16),                                        # S2 paged: v06 refuses
        (V07, 0, "ok", 1.0, 1, 1, 1024, 16), (V07B, 0, "ok", 2.0, 1, 1, 1024, 16),
        (V07, 0, "ok", 1.0, 1, 4, 1024, 0), (V07B, 0, "ok", 2.0, 1, 4, 1024, 0),       # S3: no v06 row
        (V06, 0, "ok", 1.0, 1, 16, 1024, 0), (V07, 0, "refused", 0, 1, 16, 1024, 0),   # S4: one rung ok
        (V07, 0, "ok", 1.0, 64, 1, 1024, 0), (V07B, 0, "ok", 0.5, 64, 1, 1024, 0)])    # S6: no v06 row here
    b_ = fixture_csv(tmp, "fixture_b", [
        (V06, 0, "ok", 0.5, 1, 1, 1024, 0), (V07, 0, "ok", 2.0, 1, 1, 1024, 0),        # S1 again, other order
        (V06, 0, "ok", 1.0, 16, 1, 1024, 0), (V07B, 0, "ok", 4.0, 16, 1, 1024, 0),     # S5
        (V06, 0, "ok", 1.0, 64, 1, 1024, 0), (V07, 0, "ok", 2.0, 64, 1, 1024, 0)])     # S6: v06 and v07 only
    c_ = fixture_csv(tmp, "fixture_c", [
        (V07, 0, "ok", 1.0, 1, 1, 1024, 0), (V07B, 0, "ok", 2.0, 1, 1, 1024, 0),       # no v06 at all
        (V06, 0, "refused", 0, 1, 1, 1024, 16), (V07, 0, "ok", 1.0, 1, 1, 1024, 16), (V07B, 0, "ok", 2.0, 1, 1, 1024, 16)])
    got, used, notes = ranked([a, b_])
    s1 = got.get((1, 1, 1024, 0), {})
    expect(s1.get("order") == ["v07b_decode_wgmma", "v07_decode_splitkv", "v06_fa2_wgmma"],
           f"fixture: order by the mean over samples, peers left out (got {s1.get('order')})")
    expect(s1.get("speed") == {"v07b_decode_wgmma": 1.0, "v07_decode_splitkv": 0.55, "v06_fa2_wgmma": 0.355},
           f"fixture: speed = fastest time / the rung's (got {s1.get('speed')})")
    expect(s1.get("run") == "fixture_a", "fixture: a shape of two runs from the first listed")
    expect(got.get((1, 1, 1024, 16), {}).get("order") == ["v07_decode_splitkv", "v07b_decode_wgmma"],
           "fixture: a shape v06 refuses (paged) is ranked among the others")
    expect((1, 4, 1024, 0) not in got, "fixture: no cell at a shape without a v06 row")
    expect((1, 16, 1024, 0) not in got, "fixture: no cell with a single ok rung")
    s6 = got.get((64, 1, 1024, 0), {})
    expect(s6.get("order") == ["v06_fa2_wgmma", "v07_decode_splitkv"] and s6.get("run") == "fixture_b"
           and s6.get("speed", {}).get("v07_decode_splitkv") == 0.5,
           f"fixture: ratios within one run, never pooled across runs (got {s6})")
    expect(got.get((16, 1, 1024, 0), {}).get("speed") == {"v06_fa2_wgmma": 1.0, "v07b_decode_wgmma": 0.25},
           "fixture: the second run's own shape")
    expect(len(got) == 4 and len(used) == 2, f"fixture: 4 cells from 2 runs (got {len(got)}, {len(used)})")
    got, used, notes = ranked([c_])
    expect(not got and not used and any("no ok row of v06_fa2_wgmma" in n for n in notes),
           "fixture: a run without v06 rows gives no decode cell, and says so")
    got, _, _ = ranked([c_, a])
    expect(len(got) == 2 and got[(1, 1, 1024, 0)]["run"] == "fixture_a",
           "fixture: a run without v06 rows does not shadow a later run's shapes")
    out = os.path.join(tmp, "choice.json")
    script = os.path.join(HERE, "..", "experiments", "gpu", "forward_choice.py")
    run = lambda *a: subprocess.run([sys.executable, script, *a], capture_output=True, text=True)  # noqa: E731
    r = run("--decode-csv", c_, "--out", out)
    forward_only = {k: v for k, v in json.load(open(os.path.join(HERE, "forward_choice.json"))).items()
                    if k not in ("decode_cells", "decode_source")}  # the committed file's forward table
    expect(r.returncode == 0 and open(out).read() == json.dumps(forward_only, indent=1, sort_keys=True) + "\n",
           "fixture: without v06 rows the written file is the committed forward table, byte for byte"
           + ("" if r.returncode == 0 else f" ({r.stdout.strip()} {r.stderr.strip()})"))
    r = run("--decode-csv", a, "--out", out)
    t = json.load(open(out))
    expect(r.returncode == 0 and len(t.get("decode_cells", [])) == 2 and t.get("decode_source") == [
        str(forward_choice.results_index.rel(os.path.dirname(a)))],
           "fixture: the script writes the decode cells and their source")
    expect(run("--decode-csv", a, "--out", out, "--check").returncode == 0
           and run("--decode-csv", c_, "--out", out, "--check").returncode == 1,
           "fixture: --check compares with the file (equal: 0, differs: 1)")

path = os.path.join(HERE, "forward_choice.json")
table = json.load(open(path))
registry = open(os.path.join(HERE, "..", "kernels", "registry.cpp")).read()
names = set(re.findall(r"^\s*X\((v\w+),", registry, re.M))
used = {n for c in table["cells"] + table.get("decode_cells", []) for n in c["order"]}
expect(bool(table["cells"]) and all(c["order"] for c in table["cells"]), "the committed table has non-empty cells")
expect(used <= names, "every name in the committed table is a registered forward"
       + ("" if used <= names else f" (unknown: {sorted(used - names)})"))

print(("PASS" if not bad else "FAIL") + f": {len(bad)} failed")
sys.exit(1 if bad else 0)

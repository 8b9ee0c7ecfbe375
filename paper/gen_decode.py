"""paper/gen_decode.py: the split-KV decoding section's numbers (dec.* values) for paper/gen_numbers.py.

decode(nb) reads the canonical decode benchmark (role `decode` of experiments/results/h200/CANONICAL:
experiments/gpu/bench_decode.py's decode.csv) through experiments/decode_model.py (the rows
plots/fig_decode.py draws: one per configuration, median of the samples, and the copy ceiling of the
same run) and sets nb's values: v07's bandwidth against the copy ceiling and SDPA cuDNN/flash at the
largest batch and cache, batch 1 at the largest cache (the split heuristic's case), paged against
contiguous, the issue's targets as words (holds / is missed), and the simulator's error on v07's time
(ioattn simulate --kernel v07_decode_splitkv, $IOATTN_BIN or build-figures/apps/ioattn; the dec.model.*
keys are left out without a binary). Sentences that depend on which page sizes the run has are values
too (dec.paged_text), so main.tex needs no switch. Nothing when role decode has no rows.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "experiments"))
import decode_model as dm  # noqa: E402
import results_index as results  # noqa: E402


# Issue 12's decode targets: >= COPY of the copy ceiling at seqlen_k >= NK and batch >= BATCH (and
# >= 1.0x SDPA cuDNN there); pages of PAGE keys within PAGED of contiguous; B1 of the copy ceiling at
# batch 1 with the longest cache.
TARGETS = {"copy": 0.85, "nk": 8192, "batch": 16, "page": 16, "paged": 0.90, "b1": 0.70}


def decode(nb) -> None:
    from gen_numbers import sig, integer, tex_escape  # the paper's formatting (imported at call time)

    files = results.canonical_csvs("decode")
    if not files:
        return
    for f in files:
        nb.use(f)
    rows, copy = dm.measured(files)
    if not rows or not copy:
        return
    i = lambda r, c: int(float(r[c]))  # noqa: E731

    def at(impl, b, nk, page=0, nq=None):
        sel = [r for r in rows if r["impl"] == impl and i(r, "batch") == b and i(r, "seqlen_k") == nk
               and i(r, "page_size") == page and (nq is None or i(r, "seqlen_q") == nq)]
        return sel[0] if sel else None

    v07 = [r for r in rows if r["impl"] == dm.V07]
    if not v07:
        return
    nq = min(i(r, "seqlen_q") for r in v07)
    bmax, bmin = max(i(r, "batch") for r in v07), min(i(r, "batch") for r in v07)
    nkmax = max(i(r, "seqlen_k") for r in v07)
    r0 = v07[0]
    nb.val("dec.run", tex_escape(", ".join(f.parent.name for f in files)))
    nb.val("dec.copy", sig(copy / 1e3, 3))
    nb.val("dec.dtype", r0["dtype"])
    nb.val("dec.d", str(i(r0, "head_dim")))
    nb.val("dec.hq", str(i(r0, "heads_q")))
    nb.val("dec.hkv", str(i(r0, "heads_kv")))
    nb.val("dec.group", str(i(r0, "heads_q") // i(r0, "heads_kv")))
    nb.val("dec.nq", str(nq))
    nb.val("dec.nk_max", integer(nkmax))
    nb.val("dec.nk_list", ", ".join(integer(x) for x in sorted({i(r, "seqlen_k") for r in v07})))
    nb.val("dec.b_list", ", ".join(str(x) for x in sorted({i(r, "batch") for r in v07})))
    nb.val("dec.b_max", str(bmax))
    big = at(dm.V07, bmax, nkmax, 0, nq)
    if big:
        nb.val("dec.big.v07", sig(big["gbps"] / 1e3, 3))
        nb.val("dec.big.of_copy", sig(big["gbps"] / copy, 2))
        nb.val("dec.big.splits", str(i(big, "splits")))
        for peer, k in (("sdpa:cudnn", "cudnn"), ("sdpa:flash", "flash")):
            p = at(peer, bmax, nkmax, 0, nq)
            if p:
                nb.val(f"dec.big.{k}", sig(p["gbps"] / 1e3, 3))
                nb.val(f"dec.big.{k}_of_copy", sig(p["gbps"] / copy, 2))
                nb.val(f"dec.big.vs_{k}", sig(big["gbps"] / p["gbps"], 2))
    one = at(dm.V07, bmin, nkmax, 0, nq)
    if one:
        nb.val("dec.b1.batch", str(bmin))
        nb.val("dec.b1.of_copy", sig(one["gbps"] / copy, 2))
        nb.val("dec.b1.splits", str(i(one, "splits")))
        p = at("sdpa:cudnn", bmin, nkmax, 0, nq)
        if p:
            nb.val("dec.b1.vs_cudnn", sig(one["gbps"] / p["gbps"], 2))
        nb.val("dec.target_b1", "holds" if one["gbps"] / copy >= TARGETS["b1"] else "is missed")
    contig = [r for r in v07 if i(r, "page_size") == 0]
    fr = [r["gbps"] / copy for r in contig]
    nb.val("dec.of_copy_min", sig(min(fr), 2))
    nb.val("dec.of_copy_max", sig(max(fr), 2))
    # Targets at seqlen_k >= 8k and batch >= 16 (issue 12): >= 0.85 of copy, >= 1.0x cuDNN.
    T = TARGETS
    nb.val("dec.tgt.copy", str(T["copy"]))
    nb.val("dec.tgt.nk", integer(T["nk"]))
    nb.val("dec.tgt.batch", str(T["batch"]))
    nb.val("dec.tgt.page", str(T["page"]))
    nb.val("dec.tgt.paged_pct", str(round(100 * (1 - T["paged"]))))
    nb.val("dec.tgt.b1", f'{T["b1"]:.2f}')
    tgt = [r for r in contig if i(r, "seqlen_k") >= T["nk"] and i(r, "batch") >= T["batch"]]
    if tgt:
        nb.val("dec.target_copy", "holds" if all(r["gbps"] / copy >= T["copy"] for r in tgt) else "is missed")
        vs = [(r, at("sdpa:cudnn", i(r, "batch"), i(r, "seqlen_k"), 0, i(r, "seqlen_q"))) for r in tgt]
        vs = [r["gbps"] / p["gbps"] for r, p in vs if p]
        if vs:
            nb.val("dec.target_cudnn", "holds" if min(vs) >= 1.0 else "is missed")
            nb.val("dec.vs_cudnn_min", sig(min(vs), 2))
            nb.val("dec.vs_cudnn_max", sig(max(vs), 2))
    texts = []
    for page in sorted({i(r, "page_size") for r in v07} - {0}):
        ratios = []
        for r in v07:
            if i(r, "page_size") != page:
                continue
            c = at(dm.V07, i(r, "batch"), i(r, "seqlen_k"), 0, i(r, "seqlen_q"))
            if c:
                ratios.append(r["gbps"] / c["gbps"])
        if ratios:
            nb.val(f"dec.p{page}.min", sig(min(ratios), 2))
            nb.val(f"dec.p{page}.max", sig(max(ratios), 2))
            texts.append(f"with pages of {page} keys it reaches {sig(min(ratios), 2)} to {sig(max(ratios), 2)} "
                         f"of its contiguous bandwidth")
            if page == TARGETS["page"]:
                nb.val("dec.target_paged", "holds" if min(ratios) >= TARGETS["paged"] else "is missed")
    nb.val("dec.paged_text", "; ".join(texts) if texts else "no paged configuration was measured")
    exe = dm.ioattn_bin()
    if exe is None:
        return
    try:
        model = [m for m in dm.model(rows, exe) if m["impl"] == "model:" + dm.V07]  # the paper speaks of v07's twin
    except RuntimeError as e:
        print(f"gen_decode: model left out: {e}", file=sys.stderr)
        return
    for name, sel in (("contig", [m for m in model if m["page_size"] == 0]),
                      ("paged", [m for m in model if m["page_size"] > 0])):
        if not sel:
            continue
        err = [(m["time_s"] * 1e3 - m["measured_ms"]) / m["measured_ms"] for m in sel]
        nb.val(f"dec.model.{name}.points", str(len(err)))
        nb.val(f"dec.model.{name}.mape", sig(100 * sum(abs(e) for e in err) / len(err), 2))
        nb.val(f"dec.model.{name}.min", sig(100 * min(err), 2))
        nb.val(f"dec.model.{name}.max", sig(100 * max(err), 2))
    lookups = max((m for m in model if m["page_size"] > 0), key=lambda m: m["table_lookups"], default=None)
    if lookups:
        nb.val("dec.model.lookups", integer(lookups["table_lookups"]))
        nb.val("dec.model.lookups_page", str(lookups["page_size"]))

"""experiments/decode_model.py: the decode benchmark's rows and the simulator's twin of them, shared by
plots/fig_decode.py and paper/gen_decode.py (issue 12).

measured(files) reads bench_decode.py's CSVs (role decode of h200/CANONICAL): the ok rows of study
decode, one per configuration (median GB/s and ms over its samples), and the copy ceiling of the
same run (median GB/s of the copy_sm rows). model(rows, exe) runs `ioattn simulate --kernel
v07_decode_splitkv --json` for every v07 row (`--kernel v07b_decode_wgmma` for every v07b row) with
the run's own split count, tile (br = packed rows,
bc = keys per stage) and CTAs per SM, on the contiguous or paged cache of that row, and returns one
row per configuration with the expected time and the model's bandwidth (the benchmark's bytes /
expected time). Plain Python; no plotting module.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
from pathlib import Path
from statistics import median

import results_index as results

V07 = "ioattn:v07_decode_splitkv"
V07B = "ioattn:v07b_decode_wgmma"  # v07's plan on wgmma, measured beside v07
MODELED = (V07, V07B)  # the decode rungs model() runs the simulator's twin of
PEERS = ["sdpa:flash", "sdpa:cudnn"]
MODEL_COLS = ["impl", "batch", "heads_q", "heads_kv", "seqlen_q", "seqlen_k", "head_dim", "dtype", "causal",
              "page_size", "splits", "br", "bc", "ctas_per_cu", "bytes", "measured_ms", "time_s", "ceiling_time_s",
              "hbm_read_bytes", "hbm_write_bytes", "block_table_hbm_bytes", "table_lookups", "partials_bytes",
              "gbps"]
KEY = ("impl", "dtype", "head_dim", "causal", "batch", "heads_q", "heads_kv", "seqlen_q", "seqlen_k", "page_size")


def ioattn_bin() -> Path | None:
    """$IOATTN_BIN (make figures sets it), else build-figures/apps/ioattn; None when neither runs."""
    for p in (os.environ.get("IOATTN_BIN"), str(results.REPO / "build-figures" / "apps" / "ioattn")):
        if p and Path(p).is_file() and os.access(p, os.X_OK):
            return Path(p)
    return None


def measured(files) -> tuple[list[dict], float | None]:
    """(one row per configuration of v07, v07b and the SDPA peers, the copy ceiling's GB/s or None)."""
    raw = []
    for f in files:
        raw += [r for r in results.read_csv(f) if r.get("status") == "ok" and r.get("study", "decode") == "decode"]
    copy = [results.num(r, "gbps") for r in raw if r["impl"] == "copy_sm"]
    groups: dict[tuple, list[dict]] = {}
    for r in raw:
        if r["impl"] in [V07, V07B] + PEERS and r.get("seqlen_k"):
            r = dict(r, page_size=str(int(float(r.get("page_size") or 0))))
            groups.setdefault(tuple(r.get(c, "") for c in KEY), []).append(r)
    rows = []
    for rs in groups.values():
        r = dict(rs[0])
        r["gbps"] = median(results.num(x, "gbps") for x in rs)
        r["ms"] = median(results.num(x, "ms") for x in rs)
        rows.append(r)
    return rows, (median(copy) if copy else None)


def model(rows: list[dict], exe: Path, out_csv: Path | None = None, catalog: str | None = None) -> list[dict]:
    """The simulator's expected time of every v07 and v07b row (see the module comment; each row by
    its own variant's twin, `--kernel v07_decode_splitkv` or `v07b_decode_wgmma`); written to out_csv.
    catalog: a machine catalog folder other than the built-in one (a calibration's trial copy)."""
    out = []
    for r in rows:
        if r["impl"] not in MODELED:
            continue
        i = lambda c: str(int(float(r[c])))  # noqa: E731
        page = int(float(r["page_size"] or 0))
        ctas = i("ctas_per_sm") if r.get("ctas_per_sm") else "0"
        cmd = [str(exe), "simulate", "--machine", "h200", "--kernel", r["impl"].split(":", 1)[1], "--batch", i("batch"),
               "--heads-q", i("heads_q"), "--heads-kv", i("heads_kv"), "--seqlen-q", i("seqlen_q"),
               "--seqlen-k", i("seqlen_k"), "--head-dim", i("head_dim"), "--dtype", r["dtype"], "--br", i("br"),
               "--bc", i("bc"), "--splits", i("splits"), "--ctas-per-cu", ctas, "--json"]
        if results.flag(r.get("causal", 0)):
            cmd.append("--causal")
        if page > 0:
            cmd += ["--page-size", str(page)]
        if catalog:
            cmd += ["--catalog", catalog]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd[1:])} failed: {p.stderr.strip()}")
        j = json.loads(p.stdout)
        b = results.num(r, "bytes")
        out.append({"impl": "model:" + r["impl"], "batch": i("batch"), "heads_q": i("heads_q"), "heads_kv": i("heads_kv"),
                    "seqlen_q": i("seqlen_q"), "seqlen_k": i("seqlen_k"), "head_dim": i("head_dim"),
                    "dtype": r["dtype"], "causal": results.flag(r.get("causal", 0)), "page_size": page,
                    "splits": i("splits"), "br": i("br"), "bc": i("bc"), "ctas_per_cu": ctas, "bytes": int(b),
                    "measured_ms": r["ms"], "time_s": j["time_s"], "ceiling_time_s": j["ceiling_time_s"],
                    "hbm_read_bytes": j["hbm_read_bytes"], "hbm_write_bytes": j["hbm_write_bytes"],
                    "block_table_hbm_bytes": j["layout"]["block_table_hbm_bytes"],
                    "table_lookups": j["layout"]["table_lookups"], "partials_bytes": j["layout"]["partials_bytes"],
                    "gbps": b / j["time_s"] / 1e9})
    if out_csv is not None:
        out_csv.parent.mkdir(parents=True, exist_ok=True)
        with open(out_csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=MODEL_COLS)
            w.writeheader()
            w.writerows(out)
    return out

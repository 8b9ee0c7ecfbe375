"""simulator/validate/derived.py: what the validation scripts here share: a derived CSV (one comment
line naming the command that writes it, then the rows) and a generated block of simulator/README.md.

    derived_csv("python3 simulator/validate/claims.py --ioattn <build>/apps/ioattn", rows) -> text
    replace_block(text, begin, end, body, who) -> text with body between the markers
    run_cli(cmd, who) -> the stdout of `ioattn ...` (exits naming `who` and the command on failure)
    write_or_check(out_csv, new_csv, readme, new_readme, what, summary, check, repo) -> exit status:
        writes both files and prints the summary, or (check) compares them with what is committed
    heads_kv(row) -> a measured row's K/V heads (its heads_kv column; heads where absent, as in old CSVs)
    heads_args(heads, heads_kv) -> the CLI's head flags for that problem
    TARGET_MAPE, TARGET_MAX -> issue 11's held-out targets (percent): mean absolute error, worst point
"""
import csv
import io
import os
import subprocess
import sys

# Issue 11's targets for a held-out comparison, in percent: mean absolute error and worst point.
TARGET_MAPE, TARGET_MAX = 15.0, 35.0


def derived_csv(command, rows):
    """The CSV text: '# derived: COMMAND; do not edit', the header, the rows (keys of the first)."""
    out = io.StringIO()
    out.write(f"# derived: {command}; do not edit\n")
    w = csv.DictWriter(out, fieldnames=list(rows[0].keys()), lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    return out.getvalue()


def replace_block(text, begin, end, body, who):
    """text with what lies between the markers begin and end replaced by body; exits naming `who`
    and the missing markers when the text has no such block."""
    if begin not in text or end not in text:
        sys.exit(f"{who}: no generated block ({begin} ... {end})")
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    return head + begin + body + end + tail


def run_cli(cmd, who):
    """stdout of cmd (the ioattn CLI and its arguments); exits with one line naming `who`, the
    command and its stderr when it fails."""
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        sys.exit(f"{who}: {' '.join(cmd)} failed: {res.stderr.strip()}")
    return res.stdout


def write_or_check(out_csv, new_csv, readme, new_readme, what, summary, check, repo):
    """Without check: write new_csv to out_csv and new_readme to readme, print what was written
    (`what`: e.g. "(12 rows) and the decode_ncu block") and the summary; 0. With check: 0 when both
    files already hold exactly that, else 1 (one line each way)."""
    rel = os.path.relpath(out_csv, repo)
    if not check:
        open(out_csv, "w").write(new_csv)
        open(readme, "w").write(new_readme)
        print(f"wrote {rel} {what}")
        print(summary)
        return 0
    ok = (open(out_csv).read() if os.path.exists(out_csv) else "") == new_csv and open(readme).read() == new_readme
    print(f"{rel}: " + ("equal to the model" if ok else "differs from the model; rerun without --check"))
    return 0 if ok else 1


def heads_kv(row):
    """K/V heads of a measured row (bench.csv, ncu.csv, the SDPA anchors): its heads_kv column, which
    bench_sdpa.py and ncu_collect.py append for GQA/MQA rows, or its heads where the column is absent
    or empty (every CSV written before the column existed is multi-head)."""
    return int(row.get("heads_kv") or row["heads"])


def heads_args(heads, kv_heads):
    """`ioattn simulate`'s head flags: --heads H for MHA (H query and H K/V heads), --heads-q H
    --heads-kv HKV for GQA/MQA (--heads alone sets both)."""
    if int(kv_heads) == int(heads):
        return ["--heads", str(heads)]
    return ["--heads-q", str(heads), "--heads-kv", str(kv_heads)]

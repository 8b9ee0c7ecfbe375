"""Mutation check of the reference suite: can the tests fail? Each mutant is one plausible bug put into
a copy of the reference; the suite (at a fraction of its case counts) must catch it.

  python3 verify/reference/mutate.py --out experiments/results/cpu/mutation_reference-<UTC stamp>

Works on a copy of the committed tree (`git archive HEAD`), never on the working tree: configure a
CPU-only build there, build the reference tests, run them unmutated (all must pass), then per mutant:
apply its text replacement (each original text must occur exactly once), rebuild, run
reference_prop_forward, reference_prop_backward, reference_prop_invariants (IOATTN_RC_SCALE, RC_SEED
fixed) and reference_edge_cases, record which properties / tests failed, restore the file.
Writes OUT/mutants.csv, OUT/context.json and OUT/mutate.log (the property lines and the first lines
of each failure). verify/reference/README.md's table is generated from mutants.csv
(scripts/doc_numbers.py).
"""
import argparse
import csv
import datetime
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROPERTY_TESTS = ["reference_prop_forward", "reference_prop_backward", "reference_prop_invariants"]
GTESTS = ["reference_edge_cases"]

# name, what it does, expected to survive (an equivalent mutant), [(file, original, replacement), ...]
MUTANTS = [
    ("no_rescale", "online softmax without the `exp(m_old - m_new)` rescale of O_i", False,
     [("reference/online_softmax.hpp", "      r_o.row(r) *= alpha;\n", "")]),
    ("fa2_last_block", "FA2 skips the last visible key block when it starts at the last visible key "
     "(`j * Bc < ke - 1`)", False,
     [("reference/tiled_fa2.cpp", "j < Tc && j * Bc < ke; ++j", "j < Tc && j * Bc < ke - 1; ++j")]),
    ("splitkv_weight", "split-KV combine weight without l_s", False,
     [("reference/splitkv.cpp", "const float w = std::exp(g_m_part[sp](r) - m) * g_l_part[sp](r) / l;",
       "const float w = std::exp(g_m_part[sp](r) - m) / l;")]),
    ("fa2_gqa_head", "FA2 uses K/V head `h % heads_kv` instead of `h / group` (GQA)", False,
     [("reference/tiled_fa2.cpp", "detail::kv_head(p, in.k, b, p.kv_head_of(h));",
       "detail::kv_head(p, in.k, b, h % p.heads_kv);"),
      ("reference/tiled_fa2.cpp", "detail::kv_head(p, in.v, b, p.kv_head_of(h));",
       "detail::kv_head(p, in.v, b, h % p.heads_kv);")]),
    ("mask_one_row", "masking skipped for one-row tiles (tiled algorithms' S)", False,
     [("reference/online_softmax.hpp", "if (mask.tile_unmasked(r0, r1, c0, c1)) return;",
       "if (mask.tile_unmasked(r0, r1, c0, c1) || r1 - r0 == 1) return;")]),
    ("bwd_skip_tile", "FA2 backward skips a visible tile whose first key is the last visible one "
     "(`c0 >= key_end - 1`)", False,
     [("reference/backward_fa2.cpp", "if (c0 >= mask.block_key_end(r0, r0 + rows) ||",
       "if (c0 >= mask.block_key_end(r0, r0 + rows) - 1 ||")]),
    ("bwd_gqa_overwrite", "FA2 backward overwrites dK per query head instead of adding (GQA)", False,
     [("reference/backward_fa2.cpp", "g_dk.middleRows(c0, cols) += r_dk;", "g_dk.middleRows(c0, cols) = r_dk;")]),
    ("fa1_alpha", "FA1 rescales with `exp(m_i - m~_ij)` instead of `exp(m_i - m_new)`", False,
     [("reference/tiled_fa1.cpp", "const float alpha = std::exp(m_i - m_new);",
       "const float alpha = std::exp(m_i - m_tile);")]),
    ("f64_dk_scale", "float64 backward dK without the softmax scale", False,
     [("reference/naive.cpp", "dk.noalias() += (ds.transpose() * q) * scale;",
       "dk.noalias() += (ds.transpose() * q) * (std::is_same_v<T, double> ? T(1) : scale);")]),
    ("bwd_no_left_skip", "FA2 backward never skips tiles on the left of the visible keys (equivalent: "
     "skipping is only an optimization, masked entries stay masked)", True,
     [("reference/backward_fa2.cpp", " || c0 + cols <= mask.block_key_begin(r0, r0 + rows))\n              continue;",
       ")\n              continue;")]),
]


class Log:
    """The log file, with the temporary copy's path written as <copy> (no machine paths in results)."""

    def __init__(self, path, tmp):
        self.f, self.tmp = open(path, "w"), tmp

    def write(self, text):
        self.f.write(text.replace(self.tmp, "<copy>"))

    def flush(self):
        self.f.flush()

    def close(self):
        self.f.close()


def run(cmd, cwd=None, env=None, log=None, timeout=3600):
    res = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    if log is not None and res.returncode != 0:
        log.write(f"$ {' '.join(cmd)} -> rc {res.returncode}\n{(res.stdout + res.stderr)[-3000:]}\n")
    return res


def run_suite(build, env, log):
    """Runs the tests; returns the names of the failed properties and tests."""
    failed = []
    for t in PROPERTY_TESTS:
        res = run([os.path.join(build, "verify/reference", t)], env=env)
        lines = (res.stdout + res.stderr).splitlines()
        for line in lines:
            if line.startswith("property "):
                log.write(f"  {t}: {line}\n")
        names = [m.group(1) for m in (re.match(r"property (\S+): FAILED", x) for x in lines) if m]
        if res.returncode != 0 and not names:
            names = [f"{t} (exit {res.returncode})"]
        for i, x in enumerate(lines):  # the counterexample and the rule's line of each failure
            if x.startswith("Falsifiable"):
                shown = [y for y in lines[i:i + 40]
                         if y.strip() and not y.startswith(("ioattn::", "double:", "unsigned long:"))][:10]
                log.write("".join(f"    | {y[:200]}\n" for y in shown))
        failed += names
    for t in GTESTS:
        res = run([os.path.join(build, "verify/reference", t)], env=env)
        names = sorted(set(m.group(1) for m in
                           (re.match(r"\[  FAILED  \] (\w+\.\w+)", x) for x in res.stdout.splitlines()) if m))
        log.write(f"  {t}: exit {res.returncode}" + (f", failed {', '.join(names)}" if names else "") + "\n")
        if res.returncode != 0 and not names:
            names = [f"{t} (exit {res.returncode})"]
        failed += names
    return failed


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="results folder (must not exist)")
    ap.add_argument("--scale", type=float, default=0.2, help="IOATTN_RC_SCALE: fraction of the case counts")
    ap.add_argument("--seed", default="20261129", help="RC_SEED")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--only", default="", help="comma-separated mutant names (default: all)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary copy and build")
    args = ap.parse_args()
    if os.path.exists(args.out):
        sys.exit(f"mutate.py: --out {args.out} exists (results are never overwritten)")
    if not 0 < args.scale <= 1:
        sys.exit("mutate.py: --scale must be in (0, 1]")
    chosen = [m for m in MUTANTS if not args.only or m[0] in args.only.split(",")]
    if not chosen:
        sys.exit(f"mutate.py: --only matches no mutant (known: {', '.join(m[0] for m in MUTANTS)})")
    commit = run(["git", "-C", ROOT, "rev-parse", "HEAD"]).stdout.strip()
    started = datetime.datetime.now(datetime.timezone.utc)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("mutate.py: terminated"))  # so the copy is removed
    tmp = tempfile.mkdtemp(prefix="ioattn-mutate-")
    src, build = os.path.join(tmp, "src"), os.path.join(tmp, "build")
    os.makedirs(src)
    os.makedirs(args.out)
    log = Log(os.path.join(args.out, "mutate.log"), tmp)
    try:
        archive = subprocess.run(["git", "-C", ROOT, "archive", "HEAD"], capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", src], input=archive, check=True)
        cfg = run(["cmake", "-S", src, "-B", build, "-DCMAKE_BUILD_TYPE=Release", "-DIOATTN_ENABLE_CUDA=OFF",
                   "-DIOATTN_ENABLE_AMD_CHECK=OFF"], log=log)
        if cfg.returncode != 0:
            sys.exit("mutate.py: configure failed (see mutate.log)")
        targets = PROPERTY_TESTS + GTESTS
        build_cmd = ["cmake", "--build", build, "-j", str(args.jobs), "--target"] + targets
        env = dict(os.environ, IOATTN_RC_SCALE=str(args.scale), RC_SEED=args.seed, OMP_NUM_THREADS="1")
        env.pop("RC_PARAMS", None)
        log.write(f"unmutated (commit {commit}):\n")
        if run(build_cmd, log=log).returncode != 0:
            sys.exit("mutate.py: the unmutated build failed (see mutate.log)")
        base_failed = run_suite(build, env, log)
        if base_failed:
            sys.exit(f"mutate.py: the unmutated suite fails ({', '.join(base_failed)}): no mutant can be judged")
        rows = []
        for name, what, equivalent, edits in chosen:
            t0 = time.time()
            originals = {}
            for path, old, new in edits:
                full = os.path.join(src, path)
                text = open(full).read()
                originals.setdefault(path, text)  # the first read is the unmutated file
                if text.count(old) != 1:
                    sys.exit(f"mutate.py: mutant {name}: the original text occurs {text.count(old)} times in "
                             f"{path} (must be once; the source changed, update MUTANTS)")
                with open(full, "w") as f:
                    f.write(text.replace(old, new))
            log.write(f"mutant {name}: {what}\n")
            built = run(build_cmd, log=log).returncode == 0
            failed = run_suite(build, env, log) if built else []
            for path, text in originals.items():
                with open(os.path.join(src, path), "w") as f:
                    f.write(text)
            status = "build failed" if not built else ("killed" if failed else "survived")
            rows.append(dict(mutant=name, description=what, files=";".join(sorted(originals)),
                             equivalent=int(equivalent), status=status, caught_by=";".join(failed),
                             seconds=round(time.time() - t0, 1)))
            print(f"mutant {name}: {status}" + (f" ({', '.join(failed)})" if failed else ""), flush=True)
            log.flush()
        with open(os.path.join(args.out, "mutants.csv"), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0].keys()), lineterminator="\n")
            w.writeheader()
            w.writerows(rows)
        cxx = run(["c++", "--version"]).stdout.splitlines()[:1]
        ctx = dict(commit=commit, date_utc=started.strftime("%Y-%m-%dT%H:%M:%SZ"),
                   command="python3 verify/reference/mutate.py --out " + os.path.relpath(args.out, ROOT)
                   + (f" --scale {args.scale}" if args.scale != 0.2 else "")
                   + (f" --only {args.only}" if args.only else ""),
                   rc_seed=args.seed, ioattn_rc_scale=args.scale, tests=PROPERTY_TESTS + GTESTS,
                   source="git archive of the commit (the working tree is not used)",
                   build="CMAKE_BUILD_TYPE=Release, IOATTN_ENABLE_CUDA=OFF, IOATTN_ENABLE_AMD_CHECK=OFF",
                   compiler=cxx[0] if cxx else "unknown", host=dict(cpus=os.cpu_count(), machine=platform.machine()),
                   seconds=round(time.time() - started.timestamp(), 1))
        with open(os.path.join(args.out, "context.json"), "w") as f:
            json.dump(ctx, f, indent=1)
            f.write("\n")
    finally:
        log.close()
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""One recorded CPU run of the committed tree: build, the CPU test suite, the simulator sweep benchmark.

  python3 scripts/record_cpu_run.py --out experiments/results/cpu/cpu_run-<UTC stamp>

The numbers the READMEs quote about the CPU suite (generated cases per property, fitted exponents,
test times) and the simulator's speed come from such a folder (scripts/doc_numbers.py reads it).
Steps, on a copy of HEAD (`git archive`; the working tree is not used):
  1. configure CPU-only (-DIOATTN_ENABLE_CUDA=OFF -DIOATTN_ENABLE_AMD_CHECK=OFF), build everything (-j JOBS), timed;
  2. `ctest -LE gpu -j JOBS -V` with RC_SEED as the Makefile sets it, every test's whole output kept (ctest.log);
  3. bench_simulator_sweep pinned to core 0 (taskset), 5 repetitions, Google Benchmark JSON.
Writes OUT/context.json (commit, date, command, host, load averages, build and ctest wall time),
OUT/tests.csv (test, status, seconds), OUT/properties.csv (test, property, cases, seconds),
OUT/fitted_exponents.csv, OUT/ctest.log, OUT/bench_sweep.json. The copy's temporary path is
written as <copy> in every file.
"""
import argparse
import csv
import datetime
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cpu_model():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def write_csv(path, rows, fields):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)


def parse_ctest_log(text):
    """Tests, properties and fitted exponents from `ctest -V -j N` output (lines of test k: "k: ...")."""
    outputs, tests = {}, []
    for line in text.splitlines():
        m = re.match(r"^(\d+): (.*)$", line)
        if m:
            outputs.setdefault(m.group(1), []).append(m.group(2))
        m = re.match(r"^\s*\d+/\d+ Test\s+#(\d+): (\S+) \.+\s*(.+?)\s+([\d.]+) sec", line)
        if m:
            word = m.group(3)
            status = "passed" if word == "Passed" else "skipped" if "Skipped" in word else "failed"
            tests.append(dict(num=m.group(1), test=m.group(2), status=status, seconds=float(m.group(4))))
    props, exps = [], []
    for t in tests:
        out = "\n".join(outputs.get(t["num"], []))
        for m in re.finditer(r"^property (\S+): (\d+) cases passed(?: \(([\d.]+) s\))?", out, re.M):
            props.append(dict(test=t["test"], property=m.group(1), cases=int(m.group(2)), seconds=m.group(3) or ""))
        for m in re.finditer(r"^fitted exponent (.+?): (-?[\d.]+) \(expected (-?[\d.]+) \+- ([\d.]+)\)", out, re.M):
            exps.append(dict(test=t["test"], what=m.group(1), value=m.group(2), expected=m.group(3),
                             tolerance=m.group(4)))
        m = re.search(r"^\[  PASSED  \] (\d+) tests?\.", out, re.M)
        if m:
            props.append(dict(test=t["test"], property="(gtest tests)", cases=int(m.group(1)), seconds=""))
    for t in tests:
        del t["num"]
    return tests, props, exps


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="results folder (must not exist)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--seed", default="20261129", help="RC_SEED (the Makefile's default)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary copy and build")
    args = ap.parse_args()
    if os.path.exists(args.out):
        sys.exit(f"record_cpu_run.py: --out {args.out} exists (results are never overwritten)")
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True, text=True,
                            check=True).stdout.strip()
    started = datetime.datetime.now(datetime.timezone.utc)
    load_start = os.getloadavg()
    tmp = tempfile.mkdtemp(prefix="ioattn-cpu-run-")
    src, build = os.path.join(tmp, "src"), os.path.join(tmp, "build")
    clean = lambda s: s.replace(tmp, "<copy>")  # noqa: E731
    os.makedirs(src)
    try:
        archive = subprocess.run(["git", "-C", ROOT, "archive", "HEAD"], capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", src], input=archive, check=True)
        t0 = time.time()
        for cmd in (["cmake", "-S", src, "-B", build, "-DCMAKE_BUILD_TYPE=Release", "-DIOATTN_ENABLE_CUDA=OFF",
                     "-DIOATTN_ENABLE_AMD_CHECK=OFF"], ["cmake", "--build", build, "-j", str(args.jobs)]):
            res = subprocess.run(cmd, capture_output=True, text=True)
            if res.returncode != 0:
                sys.exit(f"record_cpu_run.py: {' '.join(cmd[:2])} failed:\n{clean(res.stdout + res.stderr)[-3000:]}")
        build_s = time.time() - t0
        env = dict(os.environ, RC_SEED=args.seed)
        env.pop("RC_PARAMS", None)
        env.pop("IOATTN_RC_SCALE", None)
        t0 = time.time()
        ctest = subprocess.run(["ctest", "--test-dir", build, "-LE", "gpu", "-j", str(args.jobs), "-V",
                                "--test-output-size-passed", "10000000", "--test-output-size-failed", "10000000"],
                               capture_output=True, text=True, env=env)
        ctest_s = time.time() - t0
        os.makedirs(args.out)
        log_text = clean(ctest.stdout + ("\n# stderr\n" + ctest.stderr if ctest.stderr else ""))
        with open(os.path.join(args.out, "ctest.log"), "w") as f:  # raw, before anything can fail
            f.write(log_text)
        tests, props, exps = parse_ctest_log(log_text)
        if not tests:
            sys.exit(f"record_cpu_run.py: no test result in {args.out}/ctest.log")
        bench_json = os.path.join(tmp, "bench_sweep.json")
        bench = subprocess.run(["taskset", "-c", "0", os.path.join(build, "simulator/bench_simulator_sweep"),
                                "--benchmark_repetitions=5", "--benchmark_out=" + bench_json,
                                "--benchmark_out_format=json", f"--benchmark_context=commit={commit}"],
                               capture_output=True, text=True)
        if bench.returncode != 0:
            sys.exit(f"record_cpu_run.py: bench_simulator_sweep failed: {clean(bench.stderr)[-2000:]}")
        with open(os.path.join(args.out, "bench_sweep.json"), "w") as f:
            f.write(clean(open(bench_json).read()))
        write_csv(os.path.join(args.out, "tests.csv"), tests, ["test", "status", "seconds"])
        write_csv(os.path.join(args.out, "properties.csv"), props, ["test", "property", "cases", "seconds"])
        write_csv(os.path.join(args.out, "fitted_exponents.csv"), exps,
                  ["test", "what", "value", "expected", "tolerance"])
        cxx = subprocess.run(["c++", "--version"], capture_output=True, text=True).stdout.splitlines()[:1]
        ctx = dict(commit=commit, date_utc=started.strftime("%Y-%m-%dT%H:%M:%SZ"),
                   command="python3 scripts/record_cpu_run.py --out " + os.path.relpath(args.out, ROOT)
                   + f" --jobs {args.jobs}",
                   source="git archive of the commit (the working tree is not used)",
                   configure="-DCMAKE_BUILD_TYPE=Release -DIOATTN_ENABLE_CUDA=OFF -DIOATTN_ENABLE_AMD_CHECK=OFF",
                   ctest=f"RC_SEED={args.seed} ctest -LE gpu -j {args.jobs} -V", ctest_exit=ctest.returncode,
                   bench="taskset -c 0 bench_simulator_sweep --benchmark_repetitions=5",
                   compiler=cxx[0] if cxx else "unknown",
                   host=dict(cpu=cpu_model(), cpus=os.cpu_count(), system=platform.system()),
                   load_average_start=[round(x, 2) for x in load_start],
                   load_average_end=[round(x, 2) for x in os.getloadavg()],
                   build_seconds=round(build_s, 1), ctest_seconds=round(ctest_s, 1),
                   tests=len(tests), tests_passed=sum(t["status"] == "passed" for t in tests),
                   tests_skipped=sum(t["status"] == "skipped" for t in tests),
                   tests_failed=sum(t["status"] == "failed" for t in tests))
        with open(os.path.join(args.out, "context.json"), "w") as f:
            json.dump(ctx, f, indent=1)
            f.write("\n")
        print(f"{args.out}: {ctx['tests_passed']} passed, {ctx['tests_skipped']} skipped, {ctx['tests_failed']} "
              f"failed; build {build_s:.0f} s, ctest {ctest_s:.0f} s")
        return 1 if ctest.returncode != 0 else 0
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

"""paper/test_gen_fp8.py: paper/gen_fp8.py's precision() (the fp8.* values of paper/gen_numbers.py) on a synthetic FP8 results folder (CPU, no torch).

    python3 paper/test_gen_fp8.py

Writes a results root in a temporary folder: h200/CANONICAL naming one `fp8` folder whose bench.csv
has, in the columns bench_sdpa.py --dtypes fp8_e4m3 writes, two configs x two samples of the FP8
kernel, the best bf16 forward and SDPA cuDNN (study fp8), plus rows that must not count (a
refused row, a study-bench row with a faster time, a folder that CANONICAL does not name). Then
IOATTN_RESULTS points at it and precision() must give the hand-computed values: the peak and where
it is, the ms ratios to bf16 and cuDNN (mean over samples, all N and N >= 2k), the slice errors
and their FP8/bf16 ratio, the folder, the bf16 kernel's name. A root without the role gives no
fp8.* key. Exit 0 when every check passes, 1 otherwise.
"""
import csv
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

COLS = ["impl", "study", "pass", "dtype", "head_dim", "causal", "seqlen", "batch", "heads", "sample", "status", "ms",
        "tflops", "heads_kv", "slice_max_abs_err", "slice_rel_l2_err", "slice_max_abs_err_dequant", "error_slice",
        "fp8_descales", "error"]
SLICE = "batch 0, query heads 0-1, all rows and columns"


def row(impl, causal, n, sample, ms, tflops, err, dequant="", study="fp8", status="ok", dtype=None):
    return dict(impl=impl, study=study, **{"pass": "fwd"}, dtype=dtype or ("fp8_e4m3" if "v09" in impl else "bf16"),
                head_dim="128", causal=str(causal), seqlen=str(n), batch=str(16384 // n), heads="16",
                sample=str(sample), status=status, ms=str(ms), tflops=str(tflops), heads_kv="16",
                slice_max_abs_err=str(err), slice_rel_l2_err="0.001", slice_max_abs_err_dequant=str(dequant),
                error_slice=SLICE, fp8_descales="q=0.01;k=0.01;v=0.01" if "v09" in impl else "", error="")


def write(folder, rows):
    folder.mkdir(parents=True)
    with open(folder / "bench.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLS)
        w.writeheader()
        w.writerows(rows)


def main():
    bad = []

    def expect(ok, what):
        print(("PASS: " if ok else "FAIL: ") + what)
        if not ok:
            bad.append(what)

    tmp = Path(tempfile.mkdtemp())
    v09, v08, cu = "ioattn:v09_fp8_wgmma", "ioattn:v08_fa3_warpspec", "sdpa:cudnn"
    rows = [
        # config A: d 128, non-causal, N 1024
        row(v09, 0, 1024, 0, 1.0, 100, 4e-3, 1e-3), row(v09, 0, 1024, 1, 1.2, 80, 5e-3, 2e-3),
        row(v08, 0, 1024, 0, 2.0, 50, 1e-3), row(v08, 0, 1024, 1, 2.4, 40, 1e-3),
        row(cu, 0, 1024, 0, 1.5, 60, 2e-3), row(cu, 0, 1024, 1, 1.5, 60, 2e-3),
        # config B: d 128, causal, N 4096 (the peak)
        row(v09, 1, 4096, 0, 2.0, 500, 8e-3, 3e-3), row(v09, 1, 4096, 1, 2.0, 500, 8e-3, 3e-3),
        row(v08, 1, 4096, 0, 3.0, 333, 2e-3), row(v08, 1, 4096, 1, 3.0, 333, 2e-3),
        row(cu, 1, 4096, 0, 4.0, 250, 1e-3), row(cu, 1, 4096, 1, 4.0, 250, 1e-3),
        # not counted: a refused row, a bench-study row (faster, with a huge error), an SDPA flash row
        row(v09, 1, 8192, 0, 0.1, 9999, 1.0, 1.0, status="refused"),
        row(v09, 0, 1024, 0, 0.01, 9000, 9.0, 9.0, study="bench"),
        row("sdpa:flash", 0, 1024, 0, 0.5, 200, 1e-3),
    ]
    write(tmp / "h200" / "2026-12-01_synth_fp8", rows)
    write(tmp / "h200" / "2026-12-01_other_fp8", [row(v09, 0, 1024, 0, 0.001, 99999, 1e-9, 1e-9)])
    (tmp / "h200" / "CANONICAL").write_text("# synthetic\nfp8 2026-12-01_synth_fp8\n")
    os.environ["IOATTN_RESULTS"] = str(tmp)
    import gen_fp8
    import gen_numbers

    nb = gen_numbers.Numbers()
    gen_fp8.precision(nb)
    v = nb.vals
    want = {
        "fp8.run": "2026-12-01\\_synth\\_fp8", "fp8.kernel": "v09\\_fp8\\_wgmma", "fp8.bf16_kernel": "v08\\_fa3\\_warpspec",
        "fp8.tflops_max": "500", "fp8.tflops_max_d": "128", "fp8.tflops_max_n": "4{,}096",
        "fp8.tflops_max_causal": "causal", "fp8.dims": "128", "fp8.nmin": "1{,}024", "fp8.nmax": "4{,}096",
        "fp8.samples": "2",
        # ms(peer) / ms(fp8), mean over samples: A bf16 (2.0/1.0, 2.4/1.2) = 2.0, cuDNN (1.5, 1.25) = 1.375;
        # B bf16 1.5, cuDNN 2.0
        "fp8.over_bf16_min": "1.5", "fp8.over_bf16_max": "2.0", "fp8.over_bf16_2k_min": "1.5",
        "fp8.over_bf16_2k_max": "1.5", "fp8.over_cudnn_min": "1.4", "fp8.over_cudnn_max": "2.0",
        "fp8.over_cudnn_2k_min": "2.0", "fp8.over_cudnn_2k_max": "2.0",
        # worst slice error per config: FP8 5e-3, 8e-3; bf16 1e-3, 2e-3; cuDNN 2e-3, 1e-3; ratio 5, 4
        "fp8.err_fp8_max": "0.0080", "fp8.err_fp8_min": "0.0050", "fp8.err_bf16_max": "0.0020",
        "fp8.err_bf16_min": "0.0010", "fp8.err_cudnn_max": "0.0020", "fp8.err_cudnn_min": "0.0010",
        "fp8.err_ratio_max": "5.0", "fp8.err_ratio_min": "4.0", "fp8.err_dequant_max": "0.0030",
        "fp8.err_dequant_min": "0.0010", "fp8.slice": SLICE,
    }
    for k, x in want.items():
        expect(v.get(k) == x, f"{k} = {x!r} (got {v.get(k)!r})")
    extra = sorted(k for k in v if k.startswith("fp8.") and k not in want)
    expect(not extra, f"no other fp8.* keys ({extra})")
    expect(any("synth_fp8" in s for s in nb.sources) and not any("other_fp8" in s for s in nb.sources),
           "the canonical folder is a source, the other folder is not read")

    (tmp / "h200" / "CANONICAL").write_text("# no fp8 role\n")
    nb = gen_numbers.Numbers()
    gen_fp8.precision(nb)
    expect(not [k for k in nb.vals if k.startswith("fp8.")], "no fp8 role: no fp8.* key")
    for p in sorted(tmp.rglob("*"), reverse=True):
        p.unlink() if p.is_file() else p.rmdir()
    tmp.rmdir()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

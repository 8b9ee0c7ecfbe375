#!/usr/bin/python3
"""fig_memory_vs_n: extra memory of standard attention vs FlashAttention against N.

Left: extra device memory per attention head (per batch x head pair, so runs with different batch
and head counts compare). Modeled (dashed): the simulator's peak extra memory beyond Q, K, V, O,
forward and forward+backward, for the catalog machines (the curves coincide: the footprint is a
property of the problem; the figure says on how many machines that was checked). Measured (solid):
the H200 benchmark's peak device memory beyond the inputs, forward, minus the output O
(batch x N x heads x d elements of the dtype) so that it counts what the model counts.
Right (measured, solid): the CPU reference's extra heap bytes, naive vs tiled FA2.

Data: sim/memory_vs_n/memory.csv, cpu/cpu_reference/cpu_reference.csv, the canonical H200 bench.csv.
"""

import style
from style import results  # experiments/results_index.py

NAME = "fig_memory_vs_n"
PASS_MARK = {"fwd": "o", "fwdbwd": "^", "bwd": "^"}


def main() -> None:
    args = style.parser(__doc__).parse_args()
    sim_path = results.find_csv("sim", "memory_vs_n", "memory")
    cpu_path = results.find_csv("cpu", "cpu_reference", "cpu_reference")
    h_rows, h_files, h_col, h_scale = results.memory_rows()
    if sim_path is None and cpu_path is None and not h_rows:
        style.skip(NAME, "no memory data (run experiments/exp_memory_vs_n and exp_cpu_reference)")

    fig, (ax_s, ax_c) = style.figure(width=style.COLUMN_WIDTH_IN, height=3.2, ncols=2)
    sources, machines = [], []
    if sim_path is not None:
        rows = results.read_csv(sim_path)
        sources.append(sim_path)
        names = sorted({r["machine"] for r in rows})
        shown = "h200" if "h200" in names else names[0]
        for impl in ("standard", "fa2"):
            for pas in ("fwd", "fwdbwd"):
                pts = sorted((int(r["seqlen"]), results.num(r, "extra_bytes") / (int(r["batch"]) * int(r["heads"])))
                             for r in rows if r["machine"] == shown and r["impl"] == impl and r["pass"] == pas)
                if pts:
                    ax_s.plot([p[0] for p in pts], [p[1] for p in pts], label=f"{impl} {pas} (model)",
                              **style.modeled(style.color_for(impl), PASS_MARK[pas]))
        r0 = rows[0]
        same = all(
            {(r["impl"], r["pass"], r["seqlen"], r["extra_bytes"]) for r in rows if r["machine"] == m}
            == {(r["impl"], r["pass"], r["seqlen"], r["extra_bytes"]) for r in rows if r["machine"] == shown}
            for m in names)
        machines.append(f"model: {'same on all ' + str(len(names)) + ' catalog machines' if same else shown}"
                        f" (batch {r0['batch']}, heads {r0['heads']}, d {r0['head_dim']}, {r0['dtype']})")
    else:
        ax_s.text(0.5, 0.5, "no simulator data", transform=ax_s.transAxes, ha="center")
    if h_rows:
        sources += h_files
        # One configuration of the benchmark: bf16, the larger head dimension, non-causal.
        dims = sorted({int(float(r["head_dim"])) for r in h_rows})
        sel = [r for r in h_rows if r.get("dtype") == "bf16" and int(float(r["head_dim"])) == dims[-1]
               and results.flag(r.get("causal", "0")) == 0]
        # Three measured series keep the panel readable: the naive kernel, the last rung of the
        # ladder (highest variant number) and PyTorch's FlashAttention-2 backend.
        rungs = sorted(v for v in {results.variant(r["impl"]) for r in sel} if v.startswith("ioattn:"))
        keep = {v for v in (rungs[:1] + rungs[-1:])} | {"sdpa:flash"}
        meas_colors = {rungs[0]: "#ff7f0e", rungs[-1]: "#9467bd", "sdpa:flash": "#17becf"} if rungs else {}
        for impl in sorted(keep & {results.variant(r["impl"]) for r in sel}):
            pts = {}
            for r in sel:
                if results.variant(r["impl"]) != impl:
                    continue
                b, h, n, d = (int(float(r[c])) for c in ("batch", "heads", "seqlen", "head_dim"))
                o_bytes = b * n * h * d * 2  # O in bf16
                v = (results.num(r, h_col) * h_scale - o_bytes) / (b * h)
                if v == v:
                    pts[n] = min(pts.get(n, v), v)
            if pts:
                ns = sorted(pts)
                ax_s.plot(ns, [max(pts[n], 1.0) for n in ns], label=f"{impl} (H200, measured)",
                          **style.measured(meas_colors.get(impl) or style.color_for(impl), "*"))
        machines.append(f"H200: bf16, d {dims[-1]}, non-causal, fwd, peak beyond inputs minus O")
    else:
        machines.append("no H200 memory measurement committed")

    if cpu_path is not None:
        rows = results.read_csv(cpu_path)
        sources.append(cpu_path)
        for impl in ("naive", "fa2"):
            for pas in ("fwd", "bwd"):
                pts = sorted((int(r["seqlen"]), results.num(r, "extra_bytes") / (int(r["batch"]) * int(r["heads"])))
                             for r in rows if r["impl"] == impl and r["pass"] == pas)
                if pts:
                    ax_c.plot([p[0] for p in pts], [max(p[1], 1) for p in pts], label=f"{impl} {pas} (measured)",
                              **style.measured(style.color_for(impl), PASS_MARK[pas]))
        r0 = rows[0]
        machines.append(f"CPU: {r0.get('host_cpu', '?')}, {r0['threads']} threads, {r0['dtype']}, "
                        f"heads {r0['heads']}, d {r0['head_dim']}")
    else:
        ax_c.text(0.5, 0.5, "no CPU data", transform=ax_c.transAxes, ha="center")

    ax_s.set_title("device: model" + (" + H200" if h_rows else ""), fontsize=6.5)
    ax_c.set_title("CPU heap (measured)", fontsize=6.5)
    ax_s.set_ylabel("extra memory / head")
    for ax in (ax_s, ax_c):
        ax.set_xlabel("sequence length N")
        ax.set_yscale("log")
        if ax.lines:
            style.pow2_axis(ax, max_ticks=5)
            style.human_bytes_axis(ax, max_ticks=6)
            ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.22), fontsize=5.2)
    style.footer(fig, "; ".join(machines), sources)
    style.save(fig, args.out, NAME)


if __name__ == "__main__":
    main()

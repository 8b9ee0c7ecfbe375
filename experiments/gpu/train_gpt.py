"""Train a small GPT twice from one initialization, attention by ioattn.attention and by SDPA flash.

    PYTHONPATH=python IOATTN_CAPI=... python3 experiments/gpu/train_gpt.py --out DIR
        [--steps 300] [--batch 16] [--time-budget-s 180] [--kernel auto|FWD,BWD]

The check of issue 10's training item: the ioattn autograd op (python/ioattn.py, the forward and
backward ioattn chooses for the problem unless --kernel names them) trains a GPT as SDPA's
FlashAttention-2 does.

Model: GPT-2 style, pre-LayerNorm, --layers 6, --d-model 768, --heads 12 (head_dim 64), --seqlen
1024, learned positions, GELU MLP (4x), tied token embedding and output head, no dropout,
causal attention on BSHD tensors (q, k, v from one Linear, viewed as (B, N, H, d)).
Precision: parameters and AdamW state in float32, forward under torch.autocast(bfloat16): the
matmuls, and so q, k, v and the attention, run in bf16; the loss is computed in float32.
Optimizer: AdamW (betas 0.9, 0.95, weight decay 0.1), --lr with linear warm-up over --warmup
steps then cosine decay to 10%, gradients clipped to norm 1.

Data: a deterministic synthetic token stream made here from --seed (no download): each sample
is 1025 tokens over --vocab symbols; the first 513 come from a fixed random Markov chain (every
symbol has 4 possible successors with fixed random probabilities), the last 512 repeat the
first 512. The chain part has an entropy floor (printed): next-token statistics alone bring the
loss down to it, with or without attention. Below that floor, the repeated half can only be
predicted by attending 512 positions back (an induction pattern): its loss (copy_loss, the mean
over the targets that repeat the chain part) is reported beside the total, as the part of the
curve that depends on attention and its gradients. Step s of both runs sees the same batch.

Runs: the model is built once (torch.manual_seed(--seed)) and its initial state copied; the
ioattn run starts from it, then the SDPA run (F.scaled_dot_product_attention inside
sdpa_kernel(FLASH_ATTENTION), BHSD views of the same q, k, v) from the same state, same data,
same schedule.

Step time: two CUDA events around each whole step (forward, loss, backward, clipping,
optimizer step), recorded on the current stream; the median over the steps after --skip-steps
(warm-up: allocator growth, cuBLAS/cuDNN plans, ioattn's workspace and kernel choice). A
training step is host-inclusive by nature: the GPU waits between the events whenever the host
(Python, the autograd engine, ctypes for ioattn) has not yet enqueued the next kernel, and that
wait is part of the step time. This is not the kernel-only method of experiments/gpu/timing.py
(graph replay), and the JSON says so. Tokens per second = batch * seqlen / median step time.
Peak memory: torch.cuda.max_memory_allocated over each run (parameters, AdamW state,
activations, gradients; reset at the start of the run); ioattn's C ABI workspace is allocated
outside torch's allocator and reported beside it (ioattn_capi_workspace_mib: the forward's and
the backward's workspace_bytes for this problem).

Tolerance (--tolerance 0.02 after --judge-after 50, on --smooth 20-step trailing means): the two
runs differ only in the attention kernels' rounding (bf16 inputs, u = 2^-8 ~ 0.4%; fp32
accumulation in both), which perturbs every step and lets the trajectories drift apart slowly;
with the same data per step, the smoothed losses of two correct implementations stay within a
small multiple of that rounding. 2% is well above it and far below the loss's own fall (from
ln(vocab) ~ 5.5 to under half of that), so a wrong gradient (a missing scale, a wrong mask, a
dK/dV not summed) shows as a gap of many percent. Before step 50 the loss falls steeply and a
lag of a step or two gives large relative gaps that say nothing about correctness, hence the
start of the window. Also reported: the raw per-step max |loss difference|, and whether the loss
fell (last smoothed loss < 0.8 ln(vocab)).

Time: an estimate is printed first (FLOPs of the dense layers at --assume-dense-tflops, the
attention forward at --assume-fwd-tflops, the ioattn backward at --assume-bwd-tflops, 5 for the
scalar backward rungs, and SDPA's backward at --assume-fwd-tflops / 2). After --skip-steps + 5
steps of the ioattn run the measured step time is projected over both runs (SDPA counted as fast
as ioattn, an upper bound); when that exceeds --time-budget-s, --steps is cut for both runs (not
below 80) and the JSON says so.

Writes DIR/train_gpt.csv (step, loss_ioattn, loss_sdpa, step_ms_ioattn, step_ms_sdpa,
copy_loss_ioattn, copy_loss_sdpa) and
DIR/train_gpt.json (summary, per-run numbers, the arguments, and context: GPU, driver, versions,
commit, date, command). Exit 0 when both runs finished, the loss fell and the tolerance holds;
1 otherwise; 2 for bad arguments; 77 without a GPU.
"""
import argparse
import copy
import csv
import json
import math
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

STEP_TIMING = ("two CUDA events around each whole training step (forward, loss, backward, clip, AdamW), "
               "host-inclusive (the GPU waits for the host's launches inside the step); median over the steps "
               "after the warm-up steps; not timing.py's kernel-only graph replay")
FANOUT = 4


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--seqlen", type=int, default=1024)
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--d-model", type=int, default=768)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--vocab", type=int, default=256)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--warmup", type=int, default=30, help="linear learning-rate warm-up steps")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--kernel", default="auto", help="auto, or FORWARD,BACKWARD (either may be empty: chosen)")
    ap.add_argument("--only", choices=["both", "ioattn", "sdpa"], default="both")
    ap.add_argument("--skip-steps", type=int, default=10, help="warm-up steps left out of the step-time median")
    ap.add_argument("--tolerance", type=float, default=0.02, help="relative gap of the smoothed losses")
    ap.add_argument("--judge-after", type=int, default=50, help="first step the tolerance applies to")
    ap.add_argument("--smooth", type=int, default=20, help="trailing-mean window of the judged losses")
    ap.add_argument("--time-budget-s", type=float, default=180, help="cut --steps so both runs fit (0: never)")
    ap.add_argument("--assume-dense-tflops", type=float, default=150)
    ap.add_argument("--assume-fwd-tflops", type=float, default=200)
    ap.add_argument("--assume-bwd-tflops", type=float, default=0, help="ioattn backward (0: 5 if scalar, else 100)")
    ap.add_argument("--commit", default="", help="commit of the binaries (default: build-gpu/carry/COMMIT)")
    a = ap.parse_args(argv)
    if min(a.steps, a.batch, a.seqlen, a.layers, a.d_model, a.heads, a.vocab, a.smooth) < 1:
        ap.error("--steps, --batch, --seqlen, --layers, --d-model, --heads, --vocab, --smooth must be >= 1")
    if a.d_model % a.heads:
        ap.error(f"--d-model {a.d_model} must be divisible by --heads {a.heads}")
    if a.vocab > 32767:
        ap.error("--vocab must be <= 32767 (tokens are stored as int16)")
    if a.seqlen < 2:
        ap.error("--seqlen must be >= 2")
    return a


# ---- data --------------------------------------------------------------------------------------------

def make_data(torch, samples, seqlen, vocab, seed):
    """(samples, seqlen + 1) int16 tokens: a Markov-chain prefix, then a copy of its start; and the
    chain's entropy rate (nats per token) weighted by the symbol frequencies of the generated prefix."""
    g = torch.Generator().manual_seed(seed)
    succ = torch.randint(vocab, (vocab, FANOUT), generator=g)
    prob = torch.rand(vocab, FANOUT, generator=g) ** 2 + 1e-3
    prob /= prob.sum(1, keepdim=True)
    cum = prob.cumsum(1)
    length = seqlen + 1
    copy_len = length // 2
    prefix = length - copy_len
    x = torch.empty(samples, length, dtype=torch.int16)
    cur = torch.randint(vocab, (samples,), generator=g)
    x[:, 0] = cur.to(torch.int16)
    for t in range(1, prefix):
        u = torch.rand(samples, 1, generator=g)
        j = torch.searchsorted(cum[cur], u).clamp_(max=FANOUT - 1).squeeze(1)
        cur = succ[cur, j]
        x[:, t] = cur.to(torch.int16)
    x[:, prefix:] = x[:, :copy_len]
    # Entropy of one step from symbol s: merge the probabilities of equal successors first.
    h = torch.zeros(vocab)
    for s in range(vocab):
        p = {}
        for t_, w in zip(succ[s].tolist(), prob[s].tolist()):
            p[t_] = p.get(t_, 0.0) + w
        h[s] = -sum(w * math.log(w) for w in p.values())
    freq = torch.bincount(x[:, :prefix - 1].reshape(-1).long(), minlength=vocab).double()
    rate = float((freq / freq.sum() * h.double()).sum())
    return x, rate, prefix


# ---- model ----------------------------------------------------------------------------------------------

def build_model_classes(torch):
    nn, F = torch.nn, torch.nn.functional

    class Block(nn.Module):
        def __init__(self, d_model, heads, layers):
            super().__init__()
            self.heads = heads
            self.ln1, self.ln2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
            self.qkv = nn.Linear(d_model, 3 * d_model)
            self.proj = nn.Linear(d_model, d_model)
            self.fc = nn.Linear(d_model, 4 * d_model)
            self.out = nn.Linear(4 * d_model, d_model)
            for lin in (self.proj, self.out):  # GPT-2: residual projections scaled by 1/sqrt(2 layers)
                nn.init.normal_(lin.weight, std=0.02 / math.sqrt(2 * layers))

        def forward(self, x, attn):
            b, n, c = x.shape
            q, k, v = self.qkv(self.ln1(x)).view(b, n, 3, self.heads, c // self.heads).unbind(2)  # BSHD
            y = attn(q, k, v)                                                                     # (B, N, H, d)
            x = x + self.proj(y.reshape(b, n, c))
            return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))

    class GPT(nn.Module):
        def __init__(self, vocab, seqlen, d_model, heads, layers):
            super().__init__()
            self.tok = nn.Embedding(vocab, d_model)
            self.pos = nn.Embedding(seqlen, d_model)
            self.blocks = nn.ModuleList(Block(d_model, heads, layers) for _ in range(layers))
            self.ln_f = nn.LayerNorm(d_model)
            nn.init.normal_(self.tok.weight, std=0.02)
            nn.init.normal_(self.pos.weight, std=0.01)
            for blk in self.blocks:
                for lin in (blk.qkv, blk.fc):
                    nn.init.normal_(lin.weight, std=0.02)
                for lin in (blk.qkv, blk.proj, blk.fc, blk.out):
                    nn.init.zeros_(lin.bias)

        def forward(self, idx, attn):
            n = idx.shape[1]
            x = self.tok(idx) + self.pos(torch.arange(n, device=idx.device))[None]
            for blk in self.blocks:
                x = blk(x, attn)
            return self.ln_f(x) @ self.tok.weight.t()  # tied head: (B, N, vocab)

    return GPT


def param_count(model):
    return sum(p.numel() for p in model.parameters())


# ---- estimate -------------------------------------------------------------------------------------------

def estimate(args, n_params, bwd_scalar):
    """Seconds per step of each run and of both runs, from FLOPs at the assumed rates."""
    tokens = args.batch * args.seqlen
    dense = 6.0 * n_params * tokens + 6.0 * args.vocab * args.d_model * tokens  # + the tied head's matmul
    attn_fwd = args.layers * 2.0 * args.batch * args.seqlen ** 2 * args.d_model  # FA2 convention, causal (half)
    bwd_rate = args.assume_bwd_tflops or (5.0 if bwd_scalar else 100.0)
    t_dense = dense / (args.assume_dense_tflops * 1e12)
    t_io = t_dense + attn_fwd / (args.assume_fwd_tflops * 1e12) + 2.5 * attn_fwd / (bwd_rate * 1e12)
    t_sd = t_dense + 3.5 * attn_fwd / (args.assume_fwd_tflops * 1e12)
    return t_io, t_sd, bwd_rate


# ---- training --------------------------------------------------------------------------------------------

def lr_at(args, step, steps):
    if step < args.warmup:
        return args.lr * (step + 1) / args.warmup
    frac = (step - args.warmup) / max(1, steps - args.warmup)
    return args.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, frac))))


def train(torch, args, model, attn, data, prefix, label, budget):
    """Losses (all targets, and the repeated half's), step times (ms) of one run; budget(step, median_ms)
    may lower args.steps."""
    F = torch.nn.functional
    dev = "cuda"
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.1)
    losses, copy_losses, events = [], [], []
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    t0 = time.monotonic()
    step = 0
    while step < args.steps:
        x = data[step * args.batch:(step + 1) * args.batch].to(dev).long()  # outside the timed step
        inp, tgt = x[:, :-1], x[:, 1:]
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(inp, attn)
        tok = F.cross_entropy(logits.float().reshape(-1, args.vocab), tgt.reshape(-1), reduction="none")
        tok = tok.view(args.batch, args.seqlen)
        loss = tok.mean()
        copy_losses.append(tok[:, prefix - 1:].mean().detach())  # targets that repeat the chain part
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        for grp in opt.param_groups:
            grp["lr"] = lr_at(args, step, args.steps)
        opt.step()
        end.record()
        events.append((start, end))
        losses.append(loss.detach())
        step += 1
        if step == args.skip_steps + 5 and budget is not None:
            torch.cuda.synchronize()
            ms = statistics.median(s.elapsed_time(e) for s, e in events[args.skip_steps:])
            budget(step, ms)
        if step % 50 == 0 or step == args.steps:
            print(f"{label} step {step}/{args.steps} loss {loss.item():.4f} ({time.monotonic() - t0:.0f} s)",
                  flush=True)
    torch.cuda.synchronize()
    ms = [s.elapsed_time(e) for s, e in events]
    return dict(losses=[float(v) for v in torch.stack(losses).float().cpu().tolist()],
                copy_losses=[float(v) for v in torch.stack(copy_losses).float().cpu().tolist()], step_ms=ms,
                peak_mib=torch.cuda.max_memory_allocated() / 2**20, wall_s=time.monotonic() - t0)


def smoothed(xs, w):
    out, acc = [], 0.0
    for i, x in enumerate(xs):
        acc += x
        if i >= w:
            acc -= xs[i - w]
        out.append(acc / min(i + 1, w))
    return out


def compare(args, a, b):
    """The tolerance check of two loss curves (same steps)."""
    n = min(len(a), len(b))
    raw = max((abs(a[i] - b[i]) for i in range(n)), default=float("nan"))
    sa, sb = smoothed(a[:n], args.smooth), smoothed(b[:n], args.smooth)
    start = args.judge_after + args.smooth - 1
    window = range(start, n)
    rel = max((abs(sa[i] - sb[i]) / abs(sb[i]) for i in window), default=None)
    return dict(max_abs_loss_diff=raw, max_rel_smoothed_diff_after=rel, judged_steps=len(window),
                within_tolerance=(rel is not None and math.isfinite(rel) and rel <= args.tolerance),
                finite=all(math.isfinite(x) for x in a[:n] + b[:n]))


def main(argv=None):
    args = parse_args(argv)
    try:
        import torch
        import torch.nn.functional as F
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError as e:
        print(f"SKIPPED: no GPU (torch is not installed: {e})")
        return 77
    if not torch.cuda.is_available():
        print("SKIPPED: no GPU (torch.cuda.is_available() is False)")
        return 77
    import ioattn
    import timing

    os.makedirs(args.out, exist_ok=True)
    d_head = args.d_model // args.heads
    fwd_k, _, bwd_k = args.kernel.partition(",") if args.kernel != "auto" else ("", "", "")
    kernel = None if args.kernel == "auto" else (fwd_k or None, bwd_k or None)
    problem = (args.batch, args.heads, args.heads, args.seqlen, args.seqlen, d_head, "bf16")
    dev = torch.cuda.current_device()
    chosen_fwd = fwd_k or ioattn.choose_forward(*problem, causal=True, device=dev)
    chosen_bwd = bwd_k or ioattn.choose_backward(*problem, causal=True, device=dev)
    ws = (ioattn.workspace_bytes(chosen_fwd, *problem, causal=True)
          + ioattn.backward_workspace_bytes(chosen_bwd, *problem, causal=True))
    print(f"ioattn kernels: forward {chosen_fwd}, backward {chosen_bwd} (C ABI workspace {ws / 2**20:.1f} MiB)",
          flush=True)

    samples = args.steps * args.batch
    t_data = time.monotonic()
    data, rate, prefix = make_data(torch, samples, args.seqlen, args.vocab, args.seed)
    floor = rate * (prefix - 1) / args.seqlen  # mean loss of a model that knows the chain and copies perfectly
    print(f"data: {samples} samples x {args.seqlen + 1} tokens in {time.monotonic() - t_data:.1f} s; chain entropy "
          f"{rate:.3f} nats/token, so the best mean loss is ~{floor:.3f} (ln vocab = {math.log(args.vocab):.3f})",
          flush=True)

    GPT = build_model_classes(torch)
    torch.manual_seed(args.seed)
    model = GPT(args.vocab, args.seqlen, args.d_model, args.heads, args.layers).cuda()
    init = copy.deepcopy(model.state_dict())
    n_params = param_count(model)
    t_io, t_sd, bwd_rate = estimate(args, n_params - args.vocab * args.d_model, "_scalar" in chosen_bwd)
    print(f"model: {args.layers} layers, d_model {args.d_model}, {args.heads} heads (d {d_head}), seqlen "
          f"{args.seqlen}, vocab {args.vocab}, {n_params / 1e6:.1f} M parameters; batch {args.batch} "
          f"({args.batch * args.seqlen} tokens/step)", flush=True)
    print(f"estimate: ioattn ~{t_io * 1e3:.0f} ms/step (backward at {bwd_rate:g} TFLOP/s), SDPA ~{t_sd * 1e3:.0f} "
          f"ms/step; {args.steps} steps: ~{args.steps * t_io:.0f} s + ~{args.steps * t_sd:.0f} s "
          f"(budget {args.time_budget_s:g} s)", flush=True)

    def attn_ioattn(q, k, v):
        return ioattn.attention(q, k, v, causal=True, kernel=kernel)

    def attn_sdpa(q, k, v):
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            return F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                                  is_causal=True).transpose(1, 2)

    t_start = time.monotonic()
    cut = {}

    def budget(step, ms):
        if not args.time_budget_s:
            return
        left = args.time_budget_s - (time.monotonic() - t_start) - 10  # 10 s for the second run's start, files
        per_step = 2 * ms / 1e3                                          # both runs, SDPA as slow as ioattn
        need = (args.steps - step) * per_step
        print(f"measured {ms:.1f} ms/step after {step} steps: {args.steps} steps of both runs need ~"
              f"{need + step * ms / 1e3:.0f} s more", flush=True)
        if need > left:
            new = max(80, step + int(left / per_step))
            if new < args.steps:
                cut.update(requested=args.steps, steps=new, why=f"--time-budget-s {args.time_budget_s:g}: "
                                                                f"{ms:.1f} ms/step measured after {step} steps")
                print(f"steps cut from {args.steps} to {new} ({cut['why']})", flush=True)
                args.steps = new

    runs = {}
    ioattn.register_ops()
    if args.only in ("both", "ioattn"):
        runs["ioattn"] = train(torch, args, model, attn_ioattn, data, prefix, "ioattn", budget)
        ran = (fwd_k or ioattn.choose_forward(*problem, causal=True, device=dev),
               bwd_k or ioattn.choose_backward(*problem, causal=True, device=dev))
        if ran != (chosen_fwd, chosen_bwd):  # a launch refused a first choice: say what really ran
            print(f"ioattn kernels that ran: forward {ran[0]}, backward {ran[1]}", flush=True)
            chosen_fwd, chosen_bwd = ran
    if args.only in ("both", "sdpa"):
        model.load_state_dict(init)  # the same initial state
        for p in model.parameters():
            p.grad = None              # the first run's gradients would count in this run's peak
        runs["sdpa"] = train(torch, args, model, attn_sdpa, data, prefix, "sdpa", budget if not runs else None)

    steps = args.steps
    cols = ["step", "loss_ioattn", "loss_sdpa", "step_ms_ioattn", "step_ms_sdpa", "copy_loss_ioattn",
            "copy_loss_sdpa"]

    def cell(r, key, i, fmt):
        return format(runs[r][key][i], fmt) if r in runs and i < len(runs[r][key]) else ""

    with open(os.path.join(args.out, "train_gpt.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(cols)
        for i in range(steps):
            w.writerow([i] + [cell(r, "losses", i, ".6f") for r in ("ioattn", "sdpa")]
                       + [cell(r, "step_ms", i, ".3f") for r in ("ioattn", "sdpa")]
                       + [cell(r, "copy_losses", i, ".6f") for r in ("ioattn", "sdpa")])

    per_run = {}
    for r, res in runs.items():
        timed = res["step_ms"][args.skip_steps:] or res["step_ms"]
        med = statistics.median(timed)
        sm = smoothed(res["losses"], args.smooth)
        smc = smoothed(res["copy_losses"], args.smooth)
        per_run[r] = dict(copy_loss_first=res["copy_losses"][0], copy_loss_last_smoothed=smc[-1],
                          step_ms_median=med, step_ms_min=min(timed), step_ms_max=max(timed), timed_steps=len(timed),
                          tokens_per_s=args.batch * args.seqlen / (med * 1e-3), peak_mib=res["peak_mib"],
                          wall_s=res["wall_s"], loss_first=res["losses"][0], loss_last_smoothed=sm[-1],
                          loss_fell=sm[-1] < 0.8 * math.log(args.vocab))
    summary = dict(model=f"GPT {args.layers}x{args.d_model}, {args.heads} heads, seqlen {args.seqlen}, vocab "
                         f"{args.vocab}, {n_params / 1e6:.1f} M parameters",
                   precision="fp32 parameters and AdamW state, bf16 autocast (q, k, v and attention in bf16), "
                             "fp32 loss",
                   steps=steps, batch=args.batch, kernels=f"ioattn forward {chosen_fwd}, backward {chosen_bwd}; "
                                                         f"SDPA FLASH_ATTENTION",
                   ioattn_capi_workspace_mib=ws / 2**20, loss_floor_estimate=floor,
                   tolerance=(f"relative gap of {args.smooth}-step trailing means <= {args.tolerance:g} from step "
                              f"{args.judge_after + args.smooth - 1}"), step_timing=STEP_TIMING)
    if cut:
        summary["steps_cut"] = cut
    for key in ("step_ms_median", "tokens_per_s", "peak_mib"):
        summary[key] = {r: round(v[key], 3) for r, v in per_run.items()}
    summary["loss_first"] = {r: round(v["loss_first"], 4) for r, v in per_run.items()}
    summary["loss_last"] = {r: round(v["loss_last_smoothed"], 4) for r, v in per_run.items()}
    summary["copy_loss_first"] = {r: round(v["copy_loss_first"], 4) for r, v in per_run.items()}
    summary["copy_loss_last"] = {r: round(v["copy_loss_last_smoothed"], 4) for r, v in per_run.items()}
    fell = all(v["loss_fell"] for v in per_run.values()) and bool(per_run)
    summary["loss_fell"] = fell
    if len(runs) == 2:
        cmp_ = compare(args, runs["ioattn"]["losses"], runs["sdpa"]["losses"])
        summary.update(cmp_)
        ok = cmp_["within_tolerance"] and cmp_["finite"] and fell
        if not cmp_["judged_steps"]:
            summary["status"] = f"NOT JUDGED: {steps} steps leave no step after {args.judge_after + args.smooth - 1}"
            ok = False
        else:
            summary["status"] = ("PASS" if ok else "FAIL") + (
                f": max relative gap {cmp_['max_rel_smoothed_diff_after']:.4f} (tolerance {args.tolerance:g}), "
                f"loss fell: {fell}, finite: {cmp_['finite']}")
    else:
        ok = fell
        summary["status"] = f"one run only (--only {args.only}): loss fell: {fell}"
    context = timing.run_context(commit=args.commit or None, out_dir=args.out)
    context["timing"] = STEP_TIMING  # this script's method, not the benchmark's
    with open(os.path.join(args.out, "train_gpt.json"), "w") as f:
        json.dump(dict(context=context, summary=summary, runs=per_run,
                       args=dict(vars(args), out="<results>")), f, indent=1)  # no machine path
    for r, v in per_run.items():
        print(f"{r}: median step {v['step_ms_median']:.1f} ms ({v['tokens_per_s']:.0f} tokens/s), peak "
              f"{v['peak_mib']:.0f} MiB, loss {v['loss_first']:.3f} -> {v['loss_last_smoothed']:.3f} (repeated half "
              f"{v['copy_loss_first']:.3f} -> {v['copy_loss_last_smoothed']:.3f})", flush=True)
    print(f"train_gpt: {summary['status']}", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

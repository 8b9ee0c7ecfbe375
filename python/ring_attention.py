"""ring_attention.py: context-parallel exact attention (ring and Ulysses) with ioattn's kernels.

When a sequence is split over P devices along its length, each rank holds a chunk of Q, K, V.
Ring attention passes the K/V chunks around a ring of ranks (point-to-point sends, overlapped with
the kernel on the chunk already there) and merges each block's partial (O, LSE) by log-sum-exp,
the split-KV combine:

    LSE = logaddexp(LSE_a, LSE_b),   O = exp(LSE_a - LSE) O_a + exp(LSE_b - LSE) O_b.

Ulysses swaps the sequence split for a head split with an all-to-all, runs the whole sequence on
Hq / P heads, and swaps back. Both are written once as a rank program (a Python generator that
yields its communication: ("sendrecv", payload, recv_shapes), ("wait", handle), ("all_to_all",
pieces, recv_shapes)), run by one of two communicators:

    run_distributed(program, group)   torch.distributed (NCCL): batch_isend_irecv to rank + 1 and
                                      from rank - 1, all_to_all; NCCL runs the transfers on its
                                      own stream while the kernel runs on the current one, and
                                      `wait` makes the current stream wait for the received data;
    run_simulated(programs)           P rank programs in one process, stepped in lockstep (the
                                      ring as a loop): a send is handed to the next program.

So the single-process test runs exactly the code the ranks run, without several GPUs.

Layouts (chunk_ranges): "contiguous" gives rank r the r-th of P contiguous chunks; "zigzag" (for
causal attention) cuts the sequence into 2P chunks and gives rank r chunks r and 2P - 1 - r, so
every rank has one early and one late chunk and the causal work is balanced. Chunk lengths differ
by at most one (N need not divide). Each rank needs at least one row per chunk: N >= P
(contiguous), N >= 2P (zigzag).

Masks. ioattn's causal mask is bottom-right aligned (query i sees key j when j <= i + Nk - Nq);
the ring's blocks are planned on global positions (block_calls): a key chunk wholly before a
query chunk is attended unmasked, one wholly after is skipped, and the identical chunk (the
diagonal, Nq = Nk, where bottom-right and top-left coincide) is causal. Zigzag's diagonal (two
chunks, same positions on both sides, in increasing order) is one causal call; its off-diagonal
blocks are one unmasked call each (all queries x the early key chunk, or the late query chunk x
all keys). Windows are not supported (refused).

Backward. With the final O and LSE of each query row, the gradient splits over key blocks:
P_ij = exp(S_ij - LSE_i) and D_i = rowsum(dO_i o O_i) are global, so a block's backward called
with the global O and LSE gives that block's exact share of dQ_i and its own dK_j, dV_j
(ioattn.backward takes o and lse as inputs). dQ accumulates at home; dK, dV accumulate (fp32) in
buffers that travel the ring with their K/V chunk and arrive home after P sends.

Block functions (`fns`): forward(q, k, v, causal, scale) -> (o, lse) and backward(q, k, v, o,
lse, d_o, causal, scale) -> (dq, dk, dv), BSHD, lse (B, Hq, Nq) fp32. ioattn_block_fns() runs
ioattn's kernels; dense_block_fns() is the dense softmax in the arrays' own precision (numpy or
torch, any device), which the CPU test uses. The merge and the accumulation run in float32 for
low-precision inputs and in float64 for float64 inputs.

Entry points
  chunk_ranges(n, p, layout) -> [[(start, length), ...] per rank]; rank_indices(n, p, layout, r)
  block_calls(q_segs, k_segs, causal) -> [(q_lo, q_hi, k_lo, k_hi, causal), ...] local rows
  merge(o, lse, o_b, lse_b, rows) in place
  simulated_ring(q, k, v, p, causal, layout, scale, d_o, fns, method) -> (o, lse[, dq, dk, dv])
      whole-sequence tensors in, P simulated ranks, whole-sequence results out (global order)
  ring_attention(q, k, v, seqlen, causal, layout, scale, group) -> o   torch.autograd, distributed
  ring_forward / ring_backward(...): the distributed calls without autograd
  ulysses_attention(...) -> (o, lse, saved), ulysses_backward(saved, d_o, ...): the all-to-all
      variant (Hq and Hkv divisible by P)
"""
import math

LAYOUTS = ("contiguous", "zigzag")


class RingError(ValueError):
    """A refused configuration (one line naming the constraint)."""


# ---- arrays: numpy or torch, the same calls ------------------------------------------------------

def _is_numpy(x):
    return type(x).__module__.split(".")[0] == "numpy"


class _Ops:
    """The few array operations the rank programs need, for numpy arrays or torch tensors."""

    def __init__(self, x):
        self.np = _is_numpy(x)
        if self.np:
            import numpy
            self.m = numpy
        else:
            import torch
            self.m = torch

    def acc_dtype(self, x):
        """float64 stays float64; everything else accumulates in float32."""
        m = self.m
        return m.float64 if x.dtype == m.float64 else m.float32

    def zeros(self, shape, like, dtype):
        if self.np:
            return self.m.zeros(shape, dtype=dtype)
        return self.m.zeros(shape, dtype=dtype, device=like.device)

    def full(self, shape, value, like, dtype):
        if self.np:
            return self.m.full(shape, value, dtype=dtype)
        return self.m.full(shape, value, dtype=dtype, device=like.device)

    def cast(self, x, dtype):
        return x.astype(dtype) if self.np else x.to(dtype)

    def swap12(self, x):
        return self.m.swapaxes(x, 1, 2) if self.np else x.transpose(1, 2)

    def cat(self, xs, axis):
        return self.m.concatenate(xs, axis=axis) if self.np else self.m.cat(xs, dim=axis)

    def take(self, x, idx, axis):
        """Rows idx (a Python list) of x along axis."""
        if self.np:
            return self.m.take(x, idx, axis=axis)
        return x.index_select(axis, self.m.tensor(idx, device=x.device, dtype=self.m.long))

    def contiguous(self, x):
        return self.m.ascontiguousarray(x) if self.np else x.contiguous()


# ---- layouts and the block plan ------------------------------------------------------------------

def _split(n, parts):
    """parts lengths summing to n, differing by at most one (longer first)."""
    base, extra = divmod(n, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def chunk_ranges(n, p, layout="contiguous"):
    """Per rank, its (global start, length) ranges in local order (increasing positions)."""
    if not (isinstance(p, int) and p >= 1):
        raise RingError(f"the number of ranks must be an int >= 1 (got {p!r})")
    if layout not in LAYOUTS:
        raise RingError(f"layout must be one of {', '.join(LAYOUTS)} (got {layout!r})")
    chunks = p if layout == "contiguous" else 2 * p
    if not (isinstance(n, int) and n >= chunks):
        raise RingError(f"seqlen ({n}) must be >= the number of chunks ({chunks}: {layout} layout over {p} ranks)")
    lens = _split(n, chunks)
    starts = [sum(lens[:i]) for i in range(chunks)]
    ranges = [(starts[i], lens[i]) for i in range(chunks)]
    if layout == "contiguous":
        return [[ranges[r]] for r in range(p)]
    return [[ranges[r], ranges[2 * p - 1 - r]] for r in range(p)]


def rank_indices(n, p, layout, rank):
    """Global positions of rank's rows, in its local order."""
    return [s + i for s, ln in chunk_ranges(n, p, layout)[rank] for i in range(ln)]


def _local(segs):
    """(global start, length, local start) of each segment."""
    out, at = [], 0
    for s, ln in segs:
        out.append((s, ln, at))
        at += ln
    return out


def _relation(qs, ks):
    """How key range ks relates to query range qs under a causal mask: full | skip | causal."""
    (q0, qn), (k0, kn) = qs, ks
    if k0 + kn <= q0:
        return "full"       # every key before every query
    if k0 > q0 + qn - 1:
        return "skip"       # every key after every query
    if (q0, qn) == (k0, kn):
        return "causal"     # the diagonal: Nq = Nk, bottom-right = top-left
    if q0 + qn == k0 + kn:
        return "causal"     # ranges ending together: bottom-right alignment is the global mask
    raise RingError(f"query rows [{q0}, {q0 + qn}) and key rows [{k0}, {k0 + kn}) overlap partially: "
                    "no single ioattn mask covers them")


def block_calls(q_segs, k_segs, causal):
    """The kernel calls of one (query chunk set, key chunk set) pair: (q_lo, q_hi, k_lo, k_hi, causal)
    in local rows. Not causal: one unmasked call. Causal: the identical set (the diagonal) is one
    causal call; otherwise the unmasked cells, as one call when they form a rectangle of adjacent
    local rows (contiguous and zigzag always do), else one call per cell."""
    ql, kl = _local(q_segs), _local(k_segs)
    nq, nk = sum(s[1] for s in q_segs), sum(s[1] for s in k_segs)
    if not causal:
        return [(0, nq, 0, nk, False)]
    if list(q_segs) == list(k_segs):
        return [(0, nq, 0, nk, True)]
    cells = {(i, j): _relation((qs, qn), (ks, kn)) for i, (qs, qn, _) in enumerate(ql) for j, (ks, kn, _) in enumerate(kl)}
    calls = []
    full = [c for c, rel in cells.items() if rel == "full"]
    for (i, j), rel in cells.items():
        if rel == "causal":
            calls.append((ql[i][2], ql[i][2] + ql[i][1], kl[j][2], kl[j][2] + kl[j][1], True))
    if full:
        rows = sorted({i for i, _ in full})
        cols = sorted({j for _, j in full})
        rect = (rows == list(range(rows[0], rows[-1] + 1)) and cols == list(range(cols[0], cols[-1] + 1))
                and all(cells[(i, j)] == "full" for i in rows for j in cols))
        if rect:
            calls.append((ql[rows[0]][2], ql[rows[-1]][2] + ql[rows[-1]][1],
                          kl[cols[0]][2], kl[cols[-1]][2] + kl[cols[-1]][1], False))
        else:
            for i, j in sorted(full):
                calls.append((ql[i][2], ql[i][2] + ql[i][1], kl[j][2], kl[j][2] + kl[j][1], False))
    return calls


# ---- the merge -----------------------------------------------------------------------------------

def merge(o, lse, o_b, lse_b, rows):
    """Merge a block's partial (o_b (B, m, H, d), lse_b (B, H, m)) into the accumulators o
    (B, n, H, d) and lse (B, H, n) on local rows [rows[0], rows[1]), in place. A row with
    lse = -inf on both sides stays (0, -inf)."""
    x = _Ops(o)
    lo, hi = rows
    a, b = lse[:, :, lo:hi], x.cast(lse_b, lse.dtype)
    new = x.m.logaddexp(a, b)
    finite = new > -math.inf
    safe = x.m.where(finite, new, x.m.zeros_like(new))
    wa = x.m.where(finite, x.m.exp(a - safe), x.m.zeros_like(new))
    wb = x.m.where(finite, x.m.exp(b - safe), x.m.zeros_like(new))
    o[:, lo:hi] = o[:, lo:hi] * x.swap12(wa)[..., None] + x.cast(o_b, o.dtype) * x.swap12(wb)[..., None]
    lse[:, :, lo:hi] = new


# ---- the rank programs (generators; see the module docstring for the protocol) -------------------

def _kv_shape(k, n_rows):
    return (k.shape[0], n_rows, k.shape[2], k.shape[3])


def ring_forward_program(rank, p, q, k, v, segs, causal, scale, fns):
    """Rank `rank`'s ring forward: returns (o (q's dtype), lse fp32/fp64 (B, Hq, Nq_local))."""
    x = _Ops(q)
    acc = x.acc_dtype(q)
    b, nq, hq, d = q.shape
    o = x.zeros((b, nq, hq, d), q, acc)
    lse = x.full((b, hq, nq), -math.inf, q, acc)
    kv = (k, v)
    for t in range(p):
        src = (rank - t) % p
        handle = None
        if t < p - 1:  # start the next chunk's transfer before this one's kernel: they overlap
            nxt = sum(ln for _, ln in segs[(src - 1) % p])
            handle = yield ("sendrecv", kv, [_kv_shape(k, nxt)] * 2)
        kc, vc = kv
        for q_lo, q_hi, k_lo, k_hi, c in block_calls(segs[rank], segs[src], causal):
            o_b, lse_b = fns.forward(q[:, q_lo:q_hi], kc[:, k_lo:k_hi], vc[:, k_lo:k_hi], c, scale)
            merge(o, lse, o_b, lse_b, (q_lo, q_hi))
        if handle is not None:
            kv = yield ("wait", handle)
    return x.cast(o, q.dtype), lse


def ring_backward_program(rank, p, q, k, v, o, lse, d_o, segs, causal, scale, fns):
    """Rank `rank`'s ring backward (o, lse: its rows' final forward outputs): returns (dq, dk, dv)
    in q's dtype. dK, dV travel (accumulated in fp32 or fp64) with their K/V chunk."""
    x = _Ops(q)
    acc = x.acc_dtype(q)
    dq = x.zeros(tuple(q.shape), q, acc)
    kv, dkv, dkv_handle = (k, v), None, None
    for t in range(p):
        src = (rank - t) % p
        kv_handle = None
        if t < p - 1:
            nxt = sum(ln for _, ln in segs[(src - 1) % p])
            kv_handle = yield ("sendrecv", kv, [_kv_shape(k, nxt)] * 2)
        kc, vc = kv
        dk_s, dv_s = x.zeros(tuple(kc.shape), q, acc), x.zeros(tuple(vc.shape), q, acc)
        for q_lo, q_hi, k_lo, k_hi, c in block_calls(segs[rank], segs[src], causal):
            g = fns.backward(q[:, q_lo:q_hi], kc[:, k_lo:k_hi], vc[:, k_lo:k_hi], o[:, q_lo:q_hi],
                             lse[:, :, q_lo:q_hi], d_o[:, q_lo:q_hi], c, scale)
            dq[:, q_lo:q_hi] = dq[:, q_lo:q_hi] + x.cast(g[0], acc)
            dk_s[:, k_lo:k_hi] = dk_s[:, k_lo:k_hi] + x.cast(g[1], acc)
            dv_s[:, k_lo:k_hi] = dv_s[:, k_lo:k_hi] + x.cast(g[2], acc)
        if dkv_handle is None:
            dkv = (dk_s, dv_s)  # this chunk's buffers start here (t = 0: the rank's own chunk)
        else:
            got = yield ("wait", dkv_handle)  # the buffers of src, from rank - 1
            dkv = (got[0] + dk_s, got[1] + dv_s)
        if p > 1:  # pass src's buffers on; receive those of the chunk that comes next
            nxt = sum(ln for _, ln in segs[(src - 1) % p])
            dkv_handle = yield ("sendrecv", dkv, [_kv_shape(k, nxt)] * 2)
        if kv_handle is not None:
            kv = yield ("wait", kv_handle)
    if dkv_handle is not None:
        dkv = yield ("wait", dkv_handle)  # after P sends: this rank's own chunk, complete
    return x.cast(dq, q.dtype), x.cast(dkv[0], k.dtype), x.cast(dkv[1], v.dtype)


def _heads_split(h, p, what):
    if h % p:
        raise RingError(f"Ulysses needs {what} ({h}) divisible by the number of ranks ({p})")
    return h // p


def ulysses_forward_program(rank, p, q, k, v, segs, causal, scale, fns):
    """Rank `rank`'s Ulysses forward: all-to-all from (its rows, all heads) to (all rows, its
    Hq / P heads) in global order, one kernel call, all-to-all back. Returns (o, lse) of its rows
    and the head-split tensors the backward needs."""
    x = _Ops(q)
    hq, hkv = q.shape[2], k.shape[2]
    gq, gk = _heads_split(hq, p, "heads_q"), _heads_split(hkv, p, "heads_kv")
    lens = [sum(ln for _, ln in s) for s in segs]
    order = _global_order(segs)
    sh = lambda t, g, r: _kv_shape(t, r)[:2] + (g, t.shape[3])  # noqa: E731
    pieces = [(q[:, :, s * gq:(s + 1) * gq], k[:, :, s * gk:(s + 1) * gk], v[:, :, s * gk:(s + 1) * gk])
              for s in range(p)]
    got = yield ("all_to_all", pieces, [[sh(q, gq, lens[s]), sh(k, gk, lens[s]), sh(v, gk, lens[s])]
                                        for s in range(p)])
    qh, kh, vh = (x.take(x.cat([g[i] for g in got], 1), order, 1) for i in range(3))  # (B, N, H/P, d)
    oh, lseh = fns.forward(qh, kh, vh, causal, scale)
    back = _inverse(order)
    oh_l, lseh_l = x.take(oh, back, 1), x.take(lseh, back, 2)  # rows in the ranks' local orders
    starts = [sum(lens[:s]) for s in range(p)]
    out = [(oh_l[:, a:a + n], lseh_l[:, :, a:a + n]) for a, n in zip(starts, lens)]
    got = yield ("all_to_all", out, [[sh(q, gq, lens[rank]), (q.shape[0], gq, lens[rank])]] * p)
    o = x.cat([g[0] for g in got], 2)
    lse = x.cat([g[1] for g in got], 1)
    return o, lse, (qh, kh, vh, oh, lseh, order)


def ulysses_backward_program(rank, p, saved, d_o, segs, causal, scale, fns):
    """Rank `rank`'s Ulysses backward from the forward's saved head-split tensors."""
    x = _Ops(d_o)
    qh, kh, vh, oh, lseh, order = saved
    gq, gk = qh.shape[2], kh.shape[2]
    lens = [sum(ln for _, ln in s) for s in segs]
    sh = lambda n, g: (d_o.shape[0], n, g, d_o.shape[3])  # noqa: E731
    got = yield ("all_to_all", [(d_o[:, :, s * gq:(s + 1) * gq],) for s in range(p)],
                 [[sh(lens[s], gq)] for s in range(p)])
    doh = x.take(x.cat([g[0] for g in got], 1), order, 1)
    dqh, dkh, dvh = fns.backward(qh, kh, vh, oh, lseh, doh, causal, scale)
    back = _inverse(order)
    dqh, dkh, dvh = (x.take(t, back, 1) for t in (dqh, dkh, dvh))
    starts = [sum(lens[:s]) for s in range(p)]
    out = [(dqh[:, a:a + n], dkh[:, a:a + n], dvh[:, a:a + n]) for a, n in zip(starts, lens)]
    got = yield ("all_to_all", out, [[sh(lens[rank], gq), sh(lens[rank], gk), sh(lens[rank], gk)]] * p)
    return tuple(x.cat([g[i] for g in got], 2) for i in range(3))


def _global_order(segs):
    """Positions into the concatenation of every rank's local rows (rank order) that put the rows
    in global order."""
    owner = []
    for s in segs:
        owner += [pos for start, ln in s for pos in range(start, start + ln)]
    where = [0] * len(owner)
    for i, pos in enumerate(owner):
        where[pos] = i
    return where


def _inverse(perm):
    inv = [0] * len(perm)
    for i, j in enumerate(perm):
        inv[j] = i
    return inv


# ---- the communicators ---------------------------------------------------------------------------

def _shape_of(t):
    return tuple(int(s) for s in t.shape)


def run_simulated(programs):
    """Run P rank programs in lockstep in this process; returns their return values. Every program
    must ask for the same communication at the same point (SPMD); a received payload must have
    the shapes its receiver announced (the distributed receive buffers are allocated from them)."""
    p = len(programs)
    results, msgs, alive = [None] * p, [None] * p, [True] * p

    def advance(r, reply, first=False):
        try:
            msgs[r] = next(programs[r]) if first else programs[r].send(reply)
        except StopIteration as e:
            alive[r], results[r] = False, e.value

    for r in range(p):
        advance(r, None, first=True)
    while any(alive):
        if not all(alive):
            raise RingError("simulated ranks disagree: some finished while others still communicate")
        kinds = {m[0] for m in msgs}
        if len(kinds) != 1:
            raise RingError(f"simulated ranks disagree on the next communication ({sorted(kinds)})")
        kind = kinds.pop()
        replies = [None] * p
        for r in range(p):
            if kind == "sendrecv":
                payload, want = msgs[(r - 1) % p][1], msgs[r][2]
                got = [_shape_of(t) for t in payload]
                if got != [tuple(s) for s in want]:
                    raise RingError(f"rank {r} expects {want} from rank {(r - 1) % p}, which sends {got}")
                replies[r] = ("received", payload)
            elif kind == "wait":
                replies[r] = msgs[r][1][1]
            elif kind == "all_to_all":
                recv = [msgs[s][1][r] for s in range(p)]
                for s in range(p):
                    got = [_shape_of(t) for t in recv[s]]
                    if got != [tuple(w) for w in msgs[r][2][s]]:
                        raise RingError(f"rank {r} expects {msgs[r][2][s]} from rank {s} in all_to_all, got {got}")
                replies[r] = recv
            else:
                raise RingError(f"unknown communication {kind!r}")
        for r in range(p):
            advance(r, replies[r])
    return results


def run_distributed(program, group=None):
    """Run this rank's program over torch.distributed (NCCL for CUDA tensors)."""
    import torch
    import torch.distributed as dist

    rank, p = dist.get_rank(group), dist.get_world_size(group)
    nxt, prv = (rank + 1) % p, (rank - 1) % p
    if group is not None:
        nxt, prv = dist.get_global_rank(group, nxt), dist.get_global_rank(group, prv)
    # NCCL needs the ring's sends and receives in one batch (else each rank's send waits for a
    # receive not yet posted); other backends (gloo, the CPU test) take them one by one.
    batched = dist.get_backend(group) == "nccl"
    try:
        msg = next(program)
        while True:
            kind = msg[0]
            if kind == "sendrecv":
                payload, shapes = msg[1], msg[2]
                bufs = [torch.empty(tuple(s), dtype=t.dtype, device=t.device) for t, s in zip(payload, shapes)]
                payload = [t.contiguous() for t in payload]
                if batched:
                    ops = [dist.P2POp(dist.isend, t, nxt, group) for t in payload]
                    ops += [dist.P2POp(dist.irecv, b, prv, group) for b in bufs]
                    reqs = dist.batch_isend_irecv(ops)
                else:
                    reqs = [dist.isend(t, nxt, group) for t in payload] + [dist.irecv(b, prv, group) for b in bufs]
                reply = (reqs, bufs, payload)  # payload kept alive until waited
            elif kind == "wait":
                reqs, bufs, _ = msg[1]
                for req in reqs:
                    req.wait()  # the current stream waits for the transfers (NCCL's stream)
                reply = tuple(bufs)
            elif kind == "all_to_all":
                pieces, shapes = msg[1], msg[2]
                reply = [[None] * len(pieces[0]) for _ in range(p)]
                for i in range(len(pieces[0])):
                    inp = [pieces[s][i].contiguous() for s in range(p)]
                    out = [torch.empty(tuple(shapes[s][i]), dtype=inp[0].dtype, device=inp[0].device)
                           for s in range(p)]
                    dist.all_to_all(out, inp, group=group)
                    for s in range(p):
                        reply[s][i] = out[s]
            else:
                raise RingError(f"unknown communication {kind!r}")
            msg = program.send(reply)
    except StopIteration as e:
        return e.value


# ---- block functions -----------------------------------------------------------------------------

class dense_block_fns:
    """The dense softmax in the arrays' own precision (numpy or torch): S materialized, bottom-right
    causal as ioattn's, GQA by head groups. backward uses the o and lse it is given."""

    @staticmethod
    def _scores(q, k, causal, scale):
        x = _Ops(q)
        hq, hkv, d = q.shape[2], k.shape[2], q.shape[3]
        kk = k if hq == hkv else _repeat_heads(x, k, hq // hkv)
        s = x.m.einsum("bihd,bjhd->bhij", q, kk) * (scale if scale else 1.0 / math.sqrt(d))
        if causal:
            nq, nk = q.shape[1], k.shape[1]
            i = x.m.arange(nq)[:, None]
            j = x.m.arange(nk)[None, :]
            mask = j > i + (nk - nq)
            if not x.np:
                mask = mask.to(q.device)
            s = x.m.where(mask, x.m.full_like(s, -math.inf), s)
        return x, s

    @staticmethod
    def forward(q, k, v, causal, scale):
        x, s = dense_block_fns._scores(q, k, causal, scale)
        hq, hkv = q.shape[2], k.shape[2]
        vv = v if hq == hkv else _repeat_heads(x, v, hq // hkv)
        mx = s.max(axis=-1, keepdims=True) if x.np else s.amax(dim=-1, keepdim=True)
        mx = x.m.where(mx > -math.inf, mx, x.m.zeros_like(mx))
        e = x.m.exp(s - mx)
        l = e.sum(axis=-1, keepdims=True) if x.np else e.sum(dim=-1, keepdim=True)  # noqa: E741
        lse = (x.m.log(l) + mx)[..., 0]
        pr = e / x.m.where(l > 0, l, x.m.ones_like(l))
        o = x.m.einsum("bhij,bjhd->bihd", pr, vv)
        return o, lse

    @staticmethod
    def backward(q, k, v, o, lse, d_o, causal, scale):
        x, s = dense_block_fns._scores(q, k, causal, scale)
        hq, hkv, d = q.shape[2], k.shape[2], q.shape[3]
        g = hq // hkv
        sc = scale if scale else 1.0 / math.sqrt(d)
        kk = k if g == 1 else _repeat_heads(x, k, g)
        vv = v if g == 1 else _repeat_heads(x, v, g)
        pr = x.m.exp(s - lse[..., None])                       # P_ij = exp(S_ij - LSE_i), global LSE
        dv = x.m.einsum("bhij,bihd->bjhd", pr, d_o)
        dp = x.m.einsum("bihd,bjhd->bhij", d_o, vv)
        dd = (d_o * o).sum(axis=-1) if x.np else (d_o * o).sum(dim=-1)  # (B, Nq, H): D_i, global O
        ds = pr * (dp - x.swap12(dd)[..., None])
        dq = x.m.einsum("bhij,bjhd->bihd", ds, kk) * sc
        dk = x.m.einsum("bhij,bihd->bjhd", ds, q) * sc
        if g > 1:
            b, nk = k.shape[0], k.shape[1]
            dk = dk.reshape(b, nk, hkv, g, d).sum(3) if not x.np else dk.reshape(b, nk, hkv, g, d).sum(axis=3)
            dv = dv.reshape(b, nk, hkv, g, d).sum(3) if not x.np else dv.reshape(b, nk, hkv, g, d).sum(axis=3)
        return dq, dk, dv


def _repeat_heads(x, t, g):
    """(B, N, H, d) -> (B, N, H * g, d), each head repeated g times in a row (GQA groups)."""
    if x.np:
        return x.m.repeat(t, g, axis=2)
    return t.repeat_interleave(g, dim=2)


class ioattn_block_fns:
    """ioattn's kernels: forward(q, k, v, causal, scale) -> (o, lse), backward(...) -> (dq, dk, dv).
    kernel / backward_kernel: a variant's name, or None for ioattn's choice for the block's shape
    (the same rule as ioattn.attention's kernel=None, including its fallback on a launch refused
    for this device)."""

    def __init__(self, kernel=None, backward_kernel=None):
        import ioattn
        self.ioattn, self.kernel, self.backward_kernel = ioattn, kernel, backward_kernel
        self.used = set()

    def forward(self, q, k, v, causal, scale):
        io = self.ioattn

        def run(name):
            self.used.add(("fwd", name))
            return io.forward(q, k, v, kernel=name, causal=causal, scale=scale)

        q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
        return run(self.kernel) if self.kernel else io._run_auto("fwd", q, k, causal, (-1, -1), run)

    def backward(self, q, k, v, o, lse, d_o, causal, scale):
        io = self.ioattn

        def run(name):
            self.used.add(("bwd", name))
            return io.backward(q, k, v, o, lse, d_o, kernel=name, causal=causal, scale=scale)

        q, k, v, o, lse, d_o = (t.contiguous() for t in (q, k, v, o, lse, d_o))
        return run(self.backward_kernel) if self.backward_kernel else io._run_auto("bwd", q, k, causal, (-1, -1), run)


# ---- whole-sequence entry: P simulated ranks in one process --------------------------------------

def _check(q, k, v, causal, layout, method):
    if method not in ("ring", "ulysses"):
        raise RingError(f"method must be ring or ulysses (got {method!r})")
    if not (isinstance(causal, bool) or causal in (0, 1)):
        raise RingError(f"causal must be a bool (got {causal!r})")
    if layout not in LAYOUTS:
        raise RingError(f"layout must be one of {', '.join(LAYOUTS)} (got {layout!r})")
    if len(q.shape) != 4 or len(k.shape) != 4 or tuple(k.shape) != tuple(v.shape):
        raise RingError("q, k, v must be BSHD (batch, seqlen, heads, head_dim), k and v of one shape")
    if q.shape[1] != k.shape[1]:
        raise RingError(f"context parallelism splits one sequence: seqlen_q ({q.shape[1]}) must equal seqlen_k "
                        f"({k.shape[1]})")
    if q.shape[2] % k.shape[2]:
        raise RingError(f"heads_q ({q.shape[2]}) must be divisible by heads_kv ({k.shape[2]})")


def simulated_ring(q, k, v, p, causal=False, layout="contiguous", scale=None, d_o=None, fns=None, method="ring"):
    """Context-parallel attention of whole-sequence BSHD q, k, v with p simulated ranks in this
    process: the sequence is cut by `layout`, each rank's program runs (ring or Ulysses), and the
    ranks' results are put back in global order. Returns (o, lse), and with d_o also (dq, dk, dv)."""
    fns = fns or dense_block_fns
    _check(q, k, v, causal, layout, method)
    x = _Ops(q)
    n = int(q.shape[1])
    segs = chunk_ranges(n, p, layout)
    idx = [rank_indices(n, p, layout, r) for r in range(p)]
    local = [[x.contiguous(x.take(t, idx[r], 1)) for t in (q, k, v)] for r in range(p)]
    order = _global_order(segs)

    def gather(parts, axis):
        return x.take(x.cat(parts, axis), order, axis)

    if method == "ring":
        fw = run_simulated([ring_forward_program(r, p, *local[r], segs, bool(causal), scale, fns) for r in range(p)])
    else:
        fw = run_simulated([ulysses_forward_program(r, p, *local[r], segs, bool(causal), scale, fns)
                            for r in range(p)])
    o = gather([f[0] for f in fw], 1)
    lse = gather([f[1] for f in fw], 2)
    if d_o is None:
        return o, lse
    dos = [x.contiguous(x.take(d_o, idx[r], 1)) for r in range(p)]
    if method == "ring":
        bw = run_simulated([ring_backward_program(r, p, *local[r], fw[r][0], fw[r][1], dos[r], segs, bool(causal),
                                                  scale, fns) for r in range(p)])
    else:
        bw = run_simulated([ulysses_backward_program(r, p, fw[r][2], dos[r], segs, bool(causal), scale, fns)
                            for r in range(p)])
    return (o, lse) + tuple(gather([g[i] for g in bw], 1) for i in range(3))


# ---- distributed entry (torch.distributed, one process per GPU) ----------------------------------

def shard(t, seqlen, layout="contiguous", group=None):
    """This rank's rows (dim 1) of a whole-sequence tensor, in its local order."""
    import torch.distributed as dist
    x = _Ops(t)
    return x.contiguous(x.take(t, rank_indices(seqlen, dist.get_world_size(group), layout, dist.get_rank(group)), 1))


def ring_forward(q, k, v, seqlen, causal=False, layout="contiguous", scale=None, group=None, fns=None):
    """This rank's (o, lse) of ring attention; q, k, v its local rows (shard())."""
    import torch.distributed as dist
    p, r = dist.get_world_size(group), dist.get_rank(group)
    segs = chunk_ranges(seqlen, p, layout)
    return run_distributed(ring_forward_program(r, p, q, k, v, segs, bool(causal), scale, fns or ioattn_block_fns()),
                           group)


def ring_backward(q, k, v, o, lse, d_o, seqlen, causal=False, layout="contiguous", scale=None, group=None, fns=None):
    """This rank's (dq, dk, dv) of ring attention."""
    import torch.distributed as dist
    p, r = dist.get_world_size(group), dist.get_rank(group)
    segs = chunk_ranges(seqlen, p, layout)
    return run_distributed(ring_backward_program(r, p, q, k, v, o, lse, d_o, segs, bool(causal), scale,
                                                 fns or ioattn_block_fns()), group)


def ulysses_attention(q, k, v, seqlen, causal=False, layout="contiguous", scale=None, group=None, fns=None):
    """This rank's (o, lse, saved) of Ulysses attention (all-to-all; Hq, Hkv divisible by P)."""
    import torch.distributed as dist
    p, r = dist.get_world_size(group), dist.get_rank(group)
    segs = chunk_ranges(seqlen, p, layout)
    return run_distributed(ulysses_forward_program(r, p, q, k, v, segs, bool(causal), scale,
                                                   fns or ioattn_block_fns()), group)


def ulysses_backward(saved, d_o, seqlen, causal=False, layout="contiguous", scale=None, group=None, fns=None):
    """This rank's (dq, dk, dv) of Ulysses attention from ulysses_attention's `saved`."""
    import torch.distributed as dist
    p, r = dist.get_world_size(group), dist.get_rank(group)
    segs = chunk_ranges(seqlen, p, layout)
    return run_distributed(ulysses_backward_program(r, p, saved, d_o, segs, bool(causal), scale,
                                                    fns or ioattn_block_fns()), group)


def ring_attention(q, k, v, seqlen, causal=False, layout="contiguous", scale=None, group=None, fns=None):
    """Differentiable ring attention of this rank's rows (torch.autograd); returns o."""
    import torch

    fns = fns or ioattn_block_fns()

    class _Ring(torch.autograd.Function):
        @staticmethod
        def forward(ctx, q_, k_, v_):
            o, lse = ring_forward(q_, k_, v_, seqlen, causal, layout, scale, group, fns)
            ctx.save_for_backward(q_, k_, v_, o, lse)
            return o

        @staticmethod
        def backward(ctx, g):
            q_, k_, v_, o, lse = ctx.saved_tensors
            return ring_backward(q_, k_, v_, o, lse, g.contiguous(), seqlen, causal, layout, scale, group, fns)

    return _Ring.apply(q, k, v)

// verify/simulator/trace.cpp: every tile access of every CTA, written down (see trace.hpp).
#include "trace.hpp"

#include <algorithm>
#include <unordered_set>

namespace ioattn::verify::trace {

namespace {

int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

struct Builder {
  KernelTrace k;
  std::map<std::string, int> ids;
  explicit Builder(std::string name, bool tiled) {
    k.name = std::move(name);
    k.tiled = tiled;
  }
  int id(const std::string& n, int64_t rb) {
    auto it = ids.find(n);
    if (it != ids.end()) return it->second;
    k.tensors.push_back({n, rb});
    return ids[n] = static_cast<int>(k.tensors.size() - 1);
  }
  void rd(const std::string& n, int64_t rb, int64_t inst, int64_t r0, int64_t r1, int64_t cta) {
    k.log.push_back({id(n, rb), inst, r0, r1, false, cta});
  }
  void wr(const std::string& n, int64_t rb, int64_t inst, int64_t r0, int64_t r1, int64_t cta) {
    k.log.push_back({id(n, rb), inst, r0, r1, true, cta});
  }
};

// Dispatch position of CTA (head, split s, outer block o) of a tiled kernel with S splits and T
// outer blocks per split over H heads, written from the grid-order definitions in
// simulator.hpp (independently of nest.cpp's wave pieces).
int64_t position(sim::GridOrder order, int64_t head, int64_t s, int64_t o, int64_t H, int64_t S, int64_t T) {
  switch (order) {
    case sim::GridOrder::bh_major: return (head * S + s) * T + o;
    case sim::GridOrder::bh_major_splits: return (head * T + o) * S + s;
    case sim::GridOrder::qblock_major: return (s * T + o) * H + head;
    case sim::GridOrder::qblock_major_rev: return (s * T + (T - 1 - o)) * H + head;
  }
  return -1;
}

struct Ctx {
  const AttnProblem& p;
  const sim::Tiling& t;
  int64_t Nq, Nk, d, e, Br, Bc, Tr, Tc, B, Hq, Hkv, g;
  std::vector<char> vis;  // tile (I, J) has an allowed element, by brute force
  bool tile(int64_t I, int64_t J) const { return vis[I * Tc + J] != 0; }
  int64_t q0(int64_t I) const { return I * Br; }
  int64_t q1(int64_t I) const { return std::min(Nq, (I + 1) * Br); }
  int64_t k0(int64_t J) const { return J * Bc; }
  int64_t k1(int64_t J) const { return std::min(Nk, (J + 1) * Bc); }
  int64_t qi(int64_t b, int64_t h) const { return b * Hq + h; }        // instance of a Q-side tensor
  int64_t ki(int64_t b, int64_t h) const { return b * Hkv + h / g; }   // instance of K, V
  // Dispatch position of a tiled kernel's CTA (b, h, s, o) under the tiling's grid order.
  int64_t pos(int64_t b, int64_t h, int64_t s, int64_t o, int64_t S, int64_t T) const {
    return position(t.grid_order, qi(b, h), s, o, B * Hq, S, T);
  }
};

Ctx make_ctx(const AttnProblem& p, const sim::Tiling& t) {
  Ctx c{p, t, p.seqlen_q, p.seqlen_k, p.head_dim, static_cast<int64_t>(dtype_bytes(p.dtype)), t.Br, t.Bc,
        cdiv(p.seqlen_q, t.Br), cdiv(p.seqlen_k, t.Bc), p.batch, p.heads_q, p.heads_kv, p.group_size(), {}};
  c.vis.assign(c.Tr * c.Tc, 0);
  const MaskSpec m = p.mask();
  for (int64_t i = 0; i < c.Nq; ++i)
    for (int64_t j = 0; j < c.Nk; ++j)
      if (m.allowed(i, j)) c.vis[(i / c.Br) * c.Tc + j / c.Bc] = 1;
  return c;
}

// A streaming kernel: each listed tensor once per (b, query head) (reads) or per instance (writes).
struct StreamItem {
  std::string name;
  char heads;  // 'q', 'k' (kv head), 's' (shared)
  bool write;
  int64_t rows, row_bytes;
};
KernelTrace stream(const Ctx& c, const std::string& name, const std::vector<StreamItem>& items) {
  Builder b(name, false);
  int64_t cta = 0;
  for (int64_t bb = 0; bb < c.B; ++bb)
    for (int64_t h = 0; h < c.Hq; ++h, ++cta)
      for (const auto& it : items) {
        const int64_t inst = it.heads == 'q' ? c.qi(bb, h) : (it.heads == 'k' ? c.ki(bb, h) : 0);
        if (it.write) {
          // A K/V-space output (GQA reduce) is written once per kv head: by the group's first head.
          if (it.heads == 'k' && h % c.g != 0) continue;
          b.wr(it.name, it.row_bytes, inst, 0, it.rows, cta);
        } else {
          b.rd(it.name, it.row_bytes, inst, 0, it.rows, cta);
        }
      }
  b.k.grid = cta;
  return b.k;
}

void standard(const Ctx& c, const sim::Options& o, bool fwd, bool bwd, std::vector<KernelTrace>& out) {
  const int64_t Nq = c.Nq, Nk = c.Nk, dE = c.d * c.e, sE = Nk * c.e;
  if (fwd) {
    out.push_back(stream(c, "qk_gemm", {{"Q", 'q', false, Nq, dE}, {"K", 'k', false, Nk, dE}, {"S", 'q', true, Nq, sE}}));
    if (o.mask_tensor)
      out.push_back(stream(c, "mask_add", {{"S", 'q', false, Nq, sE}, {"Mask", 's', false, Nq, sE}, {"S", 'q', true, Nq, sE}}));
    out.push_back(stream(c, "softmax", {{"S", 'q', false, Nq, sE}, {"P", 'q', true, Nq, sE}}));
    if (o.dropout > 0)
      out.push_back(stream(c, "dropout", {{"P", 'q', false, Nq, sE}, {"P_drop", 'q', true, Nq, sE}}));
    out.push_back(stream(c, "pv_gemm", {{o.dropout > 0 ? "P_drop" : "P", 'q', false, Nq, sE}, {"V", 'k', false, Nk, dE},
                                        {"O", 'q', true, Nq, dE}}));
  }
  if (bwd) {
    const bool gqa = c.g > 1, dr = o.dropout > 0;
    const std::string dK = gqa ? "dK_exp" : "dK", dV = gqa ? "dV_exp" : "dV";
    out.push_back(stream(c, "dv_gemm", {{dr ? "P_drop" : "P", 'q', false, Nq, sE}, {"dO", 'q', false, Nq, dE}, {dV, 'q', true, Nk, dE}}));
    out.push_back(stream(c, "dp_gemm", {{"dO", 'q', false, Nq, dE}, {"V", 'k', false, Nk, dE}, {dr ? "dP_drop" : "dP", 'q', true, Nq, sE}}));
    if (dr) out.push_back(stream(c, "dropout_bwd", {{"dP_drop", 'q', false, Nq, sE}, {"dP", 'q', true, Nq, sE}}));
    out.push_back(stream(c, "softmax_bwd", {{"P", 'q', false, Nq, sE}, {"dP", 'q', false, Nq, sE}, {"dS", 'q', true, Nq, sE}}));
    out.push_back(stream(c, "dq_gemm", {{"dS", 'q', false, Nq, sE}, {"K", 'k', false, Nk, dE}, {"dQ", 'q', true, Nq, dE}}));
    out.push_back(stream(c, "dk_gemm", {{"dS", 'q', false, Nq, sE}, {"Q", 'q', false, Nq, dE}, {dK, 'q', true, Nk, dE}}));
  }
}

// Q-outer forward (fa2; split-KV when splits > 1).
KernelTrace q_outer_fwd(const Ctx& c, const std::string& name, int64_t S, bool partial) {
  Builder b(name, true);
  const int64_t dE = c.d * c.e, per = cdiv(c.Tc, S);
  int64_t ctas = 0;
  for (int64_t bb = 0; bb < c.B; ++bb)
    for (int64_t h = 0; h < c.Hq; ++h)
      for (int64_t s = 0; s < S; ++s)
        for (int64_t I = 0; I < c.Tr; ++I, ++ctas) {
          const int64_t cta = c.pos(bb, h, s, I, S, c.Tr);
          std::vector<int64_t> js;
          for (int64_t J = s * per; J < std::min(c.Tc, (s + 1) * per); ++J)
            if (c.tile(I, J)) js.push_back(J);
          if (!js.empty()) b.rd("Q", dE, c.qi(bb, h), c.q0(I), c.q1(I), cta);
          for (int64_t J : js) {
            b.rd("K", dE, c.ki(bb, h), c.k0(J), c.k1(J), cta);
            b.rd("V", dE, c.ki(bb, h), c.k0(J), c.k1(J), cta);
          }
          if (!partial) {
            b.wr("O", dE, c.qi(bb, h), c.q0(I), c.q1(I), cta);
            b.wr("LSE", 4, c.qi(bb, h), c.q0(I), c.q1(I), cta);
          } else {
            b.wr("O_partial", c.d * 4, c.qi(bb, h), s * c.Nq + c.q0(I), s * c.Nq + c.q1(I), cta);
            b.wr("LSE_partial", 4, c.qi(bb, h), s * c.Nq + c.q0(I), s * c.Nq + c.q1(I), cta);
          }
        }
  b.k.grid = ctas;
  return b.k;
}

KernelTrace fa1_main(const Ctx& c) {
  Builder b("fa1_fwd", true);
  const int64_t dE = c.d * c.e;
  int64_t cta = 0;
  for (int64_t bb = 0; bb < c.B; ++bb)
    for (int64_t h = 0; h < c.Hq; ++h, ++cta)
      for (int64_t J = 0; J < c.Tc; ++J) {
        std::vector<int64_t> is;
        for (int64_t I = 0; I < c.Tr; ++I)
          if (c.tile(I, J)) is.push_back(I);
        if (is.empty()) continue;
        b.rd("K", dE, c.ki(bb, h), c.k0(J), c.k1(J), cta);
        b.rd("V", dE, c.ki(bb, h), c.k0(J), c.k1(J), cta);
        for (int64_t I : is) {
          const int64_t inst = c.qi(bb, h), r0 = c.q0(I), r1 = c.q1(I);
          b.rd("Q", dE, inst, r0, r1, cta);
          b.rd("O", dE, inst, r0, r1, cta);
          b.rd("m", 4, inst, r0, r1, cta);
          b.rd("l", 4, inst, r0, r1, cta);
          b.wr("O", dE, inst, r0, r1, cta);
          b.wr("m", 4, inst, r0, r1, cta);
          b.wr("l", 4, inst, r0, r1, cta);
        }
      }
  b.k.grid = cta;
  return b.k;
}

// K/V-outer backward main kernel (fa2 atomic or separate dK/dV; FA1's sequential one).
KernelTrace kv_outer_bwd(const Ctx& c, const std::string& name, bool fa1, bool atomic) {
  Builder b(name, true);
  const int64_t dE = c.d * c.e;
  const std::string dK = c.g > 1 ? "dK_exp" : "dK", dV = c.g > 1 ? "dV_exp" : "dV";
  int64_t cta = 0;  // FA1: one CTA per head, the same under every order
  for (int64_t bb = 0; bb < c.B; ++bb)
    for (int64_t h = 0; h < c.Hq; ++h) {
      for (int64_t J = 0; J < c.Tc; ++J) {
        if (!fa1) cta = c.pos(bb, h, 0, J, 1, c.Tc);
        std::vector<int64_t> is;
        for (int64_t I = 0; I < c.Tr; ++I)
          if (c.tile(I, J)) is.push_back(I);
        if (!is.empty()) {
          b.rd("K", dE, c.ki(bb, h), c.k0(J), c.k1(J), cta);
          b.rd("V", dE, c.ki(bb, h), c.k0(J), c.k1(J), cta);
        }
        for (int64_t I : is) {
          const int64_t inst = c.qi(bb, h), r0 = c.q0(I), r1 = c.q1(I);
          b.rd("Q", dE, inst, r0, r1, cta);
          b.rd("dO", dE, inst, r0, r1, cta);
          if (fa1) {
            b.rd("O", dE, inst, r0, r1, cta);
            b.rd("m", 4, inst, r0, r1, cta);
            b.rd("l", 4, inst, r0, r1, cta);
          } else {
            b.rd("LSE", 4, inst, r0, r1, cta);
            b.rd("D", 4, inst, r0, r1, cta);
          }
          if (atomic) {
            b.rd("dQ_accum", c.d * 4, inst, r0, r1, cta);
            b.wr("dQ_accum", c.d * 4, inst, r0, r1, cta);
          }
        }
        b.wr(dK, dE, c.qi(bb, h), c.k0(J), c.k1(J), cta);
        b.wr(dV, dE, c.qi(bb, h), c.k0(J), c.k1(J), cta);
      }
      if (fa1) ++cta;
    }
  b.k.grid = fa1 ? cta : c.B * c.Hq * c.Tc;
  return b.k;
}

KernelTrace dq_kernel(const Ctx& c) {
  Builder b("bwd_dq", true);
  const int64_t dE = c.d * c.e;
  for (int64_t bb = 0; bb < c.B; ++bb)
    for (int64_t h = 0; h < c.Hq; ++h)
      for (int64_t I = 0; I < c.Tr; ++I) {
        const int64_t cta = c.pos(bb, h, 0, I, 1, c.Tr);
        std::vector<int64_t> js;
        for (int64_t J = 0; J < c.Tc; ++J)
          if (c.tile(I, J)) js.push_back(J);
        const int64_t inst = c.qi(bb, h), r0 = c.q0(I), r1 = c.q1(I);
        if (!js.empty()) {
          b.rd("Q", dE, inst, r0, r1, cta);
          b.rd("dO", dE, inst, r0, r1, cta);
          b.rd("LSE", 4, inst, r0, r1, cta);
          b.rd("D", 4, inst, r0, r1, cta);
        }
        for (int64_t J : js) {
          b.rd("K", dE, c.ki(bb, h), c.k0(J), c.k1(J), cta);
          b.rd("V", dE, c.ki(bb, h), c.k0(J), c.k1(J), cta);
        }
        b.wr("dQ", dE, inst, r0, r1, cta);
      }
  b.k.grid = c.B * c.Hq * c.Tr;
  return b.k;
}

void flash_bwd(const Ctx& c, bool fa1, std::vector<KernelTrace>& out) {
  const int64_t Nq = c.Nq, Nk = c.Nk, dE = c.d * c.e;
  const bool atomic = fa1 || c.t.dq == sim::DqMode::atomic;
  std::vector<StreamItem> pre;
  if (!fa1) pre = {{"dO", 'q', false, Nq, dE}, {"O", 'q', false, Nq, dE}, {"D", 'q', true, Nq, 4}};
  if (atomic) pre.push_back({"dQ_accum", 'q', true, Nq, c.d * 4});
  out.push_back(stream(c, fa1 ? "bwd_init" : "bwd_preprocess", pre));
  out.push_back(kv_outer_bwd(c, fa1 ? "fa1_bwd" : (atomic ? "bwd_main" : "bwd_dkdv"), fa1, atomic));
  if (atomic) out.push_back(stream(c, "dq_convert", {{"dQ_accum", 'q', false, Nq, c.d * 4}, {"dQ", 'q', true, Nq, dE}}));
  else out.push_back(dq_kernel(c));
  if (c.g > 1)
    out.push_back(stream(c, "dkv_reduce", {{"dK_exp", 'q', false, Nk, dE}, {"dV_exp", 'q', false, Nk, dE},
                                           {"dK", 'k', true, Nk, dE}, {"dV", 'k', true, Nk, dE}}));
}

}  // namespace

std::vector<KernelTrace> trace(const AttnProblem& p, const sim::Tiling& t, Pass pass) {
  const Ctx c = make_ctx(p, t);
  const bool fwd = pass != Pass::bwd, bwd = pass != Pass::fwd;
  std::vector<KernelTrace> out;
  sim::Options o;
  switch (t.strategy) {
    case sim::Strategy::standard:
      standard(c, o, fwd, bwd, out);
      if (bwd && c.g > 1)
        out.push_back(stream(c, "dkv_reduce", {{"dK_exp", 'q', false, c.Nk, c.d * c.e}, {"dV_exp", 'q', false, c.Nk, c.d * c.e},
                                               {"dK", 'k', true, c.Nk, c.d * c.e}, {"dV", 'k', true, c.Nk, c.d * c.e}}));
      break;
    case sim::Strategy::fa1:
      if (fwd) {
        out.push_back(stream(c, "fa1_init", {{"O", 'q', true, c.Nq, c.d * c.e}, {"m", 'q', true, c.Nq, 4}, {"l", 'q', true, c.Nq, 4}}));
        out.push_back(fa1_main(c));
      }
      if (bwd) flash_bwd(c, true, out);
      break;
    case sim::Strategy::fa2:
      if (fwd) out.push_back(q_outer_fwd(c, "fa2_fwd", 1, false));
      if (bwd) flash_bwd(c, false, out);
      break;
    case sim::Strategy::splitkv:
      if (fwd) {
        out.push_back(q_outer_fwd(c, "splitkv_fwd", t.splits, true));
        out.push_back(stream(c, "splitkv_combine", {{"O_partial", 'q', false, t.splits * c.Nq, c.d * 4},
                                                    {"LSE_partial", 'q', false, t.splits * c.Nq, 4},
                                                    {"O", 'q', true, c.Nq, c.d * c.e}, {"LSE", 'q', true, c.Nq, 4}}));
      }
      if (bwd) flash_bwd(c, false, out);
      break;
  }
  return out;
}

std::map<std::string, Counts> count(const KernelTrace& k_in, int64_t W) {
  // Waves follow the dispatch position, not the order in which the trace walked the CTAs.
  KernelTrace k = k_in;
  std::stable_sort(k.log.begin(), k.log.end(), [](const Access& a, const Access& b) { return a.cta < b.cta; });
  std::map<std::string, Counts> out;
  // Distinct (tensor, instance, row) keys, per kernel and per wave.
  auto key = [](const Access& a, int64_t row) {
    return (static_cast<uint64_t>(a.tensor) << 56) ^ (static_cast<uint64_t>(a.instance) << 32) ^
           static_cast<uint64_t>(row);
  };
  std::unordered_set<uint64_t> all_r, all_w, wave_r, wave_w;
  int64_t wave = -1;
  for (const Access& a : k.log) {
    const TensorInfo& ti = k.tensors[a.tensor];
    Counts& c = out[ti.name];
    const int64_t rows = a.row1 - a.row0;
    (a.write ? c.no_l2.write : c.no_l2.read) += rows * ti.row_bytes;
    const int64_t w = a.cta / W;
    if (w != wave) {
      wave = w;
      wave_r.clear();
      wave_w.clear();
    }
    for (int64_t r = a.row0; r < a.row1; ++r) {
      auto& all = a.write ? all_w : all_r;
      auto& wv = a.write ? wave_w : wave_r;
      if (all.insert(key(a, r)).second) (a.write ? c.compulsory.write : c.compulsory.read) += ti.row_bytes;
      if (wv.insert(key(a, r)).second) (a.write ? c.per_wave.write : c.per_wave.read) += ti.row_bytes;
    }
  }
  return out;
}

}  // namespace ioattn::verify::trace

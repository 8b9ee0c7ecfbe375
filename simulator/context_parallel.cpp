// simulator/context_parallel.cpp: the context-parallel (ring) model; see context_parallel.hpp.
#include "simulator/context_parallel.hpp"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
#include <tuple>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace ioattn::sim {

namespace {

std::string lower(std::string_view s) {
  std::string r(s);
  std::transform(r.begin(), r.end(), r.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return r;
}

Sourced read_link_field(const nlohmann::json& j, const std::string& key, const std::string& file,
                        const std::string& machine) {
  if (!j.contains(key))
    throw SimError(fmt::format("machine '{}' has no '{}' in its catalog file {} (the context-parallel model needs it)",
                               machine, key, file));
  const auto& v = j.at(key);
  if (!v.is_object() || !v.contains("value") || !v.at("value").is_number() || !v.contains("source") ||
      !v.at("source").is_string() || v.at("source").get<std::string>().empty() || !(v.at("value").get<double>() > 0))
    throw SimError(fmt::format("machine file {}: field '{}' must be {{\"value\": positive number, \"source\": "
                               "\"non-empty text\"}}", file, key));
  return {v.at("value").get<double>(), v.at("source").get<std::string>()};
}

int64_t len_of(const std::vector<std::pair<int64_t, int64_t>>& segs) {
  int64_t n = 0;
  for (const auto& s : segs) n += s.second;
  return n;
}

double hbm_rate(const Machine& m, const Options& o) {
  return o.measured_ceilings && m.measured_bandwidth ? m.measured_bandwidth->value : m.hbm_bandwidth.value;
}

}  // namespace

std::optional<CpLayout> parse_cp_layout(std::string_view s) {
  if (s == "contiguous") return CpLayout::contiguous;
  if (s == "zigzag") return CpLayout::zigzag;
  return std::nullopt;
}

std::string_view cp_layout_name(CpLayout l) { return l == CpLayout::contiguous ? "contiguous" : "zigzag"; }

CpLink load_cp_link(const std::filesystem::path& catalog_dir, const Machine& m, std::string_view which) {
  const std::string w = lower(which);
  std::string kind;
  if (w == "peer" || (w == "nvlink" && m.vendor == "nvidia") ||
      ((w == "xgmi" || w == "infinity-fabric") && m.vendor == "amd"))
    kind = "peer";
  else if (w == "pcie")
    kind = "pcie";
  else
    throw SimError(fmt::format("--cp-link must be peer, pcie{} (got '{}')",
                               m.vendor == "amd" ? ", xgmi or infinity-fabric" : ", nvlink", which));
  std::error_code ec;
  if (!std::filesystem::is_directory(catalog_dir, ec))
    throw SimError(fmt::format("machine catalog folder {} not found", catalog_dir.string()));
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(catalog_dir))
    if (e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    std::ifstream in(f);
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(in);
    } catch (const nlohmann::json::parse_error&) {
      continue;  // load_catalog reports malformed files; here only m's own file matters
    }
    if (!j.is_object() || !j.contains("name") || !j.at("name").is_string() || j.at("name").get<std::string>() != m.name)
      continue;
    CpLink l;
    l.name = kind;
    l.bandwidth = read_link_field(j, kind == "peer" ? "link_peer_bandwidth" : "link_pcie_bandwidth", f.string(), m.name);
    l.latency_s = read_link_field(j, "link_latency_s", f.string(), m.name);
    return l;
  }
  throw SimError(fmt::format("no catalog file in {} names machine '{}'", catalog_dir.string(), m.name));
}

std::vector<std::vector<std::pair<int64_t, int64_t>>> cp_chunks(int64_t n, int64_t ranks, CpLayout layout) {
  if (ranks < 1) throw SimError(fmt::format("--cp-ranks must be >= 1 (got {})", ranks));
  const int64_t chunks = layout == CpLayout::contiguous ? ranks : 2 * ranks;
  if (n < chunks)
    throw SimError(fmt::format("seqlen ({}) must be >= the number of chunks ({}: {} layout over {} ranks)", n, chunks,
                               cp_layout_name(layout), ranks));
  std::vector<std::pair<int64_t, int64_t>> r;
  int64_t at = 0;
  for (int64_t i = 0; i < chunks; ++i) {
    const int64_t len = n / chunks + (i < n % chunks ? 1 : 0);  // longer first, as python/ring_attention.py
    r.emplace_back(at, len);
    at += len;
  }
  std::vector<std::vector<std::pair<int64_t, int64_t>>> out(static_cast<size_t>(ranks));
  for (int64_t k = 0; k < ranks; ++k) {
    if (layout == CpLayout::contiguous)
      out[k] = {r[k]};
    else
      out[k] = {r[k], r[2 * ranks - 1 - k]};
  }
  return out;
}

CpBlock cp_block(const std::vector<std::vector<std::pair<int64_t, int64_t>>>& chunks, int64_t rank, int64_t src,
                 bool causal) {
  const auto& qs = chunks[static_cast<size_t>(rank)];
  const auto& ks = chunks[static_cast<size_t>(src)];
  if (!causal) return {len_of(qs), len_of(ks), false};
  if (rank == src) return {len_of(qs), len_of(ks), true};  // the diagonal: Nq = Nk, one causal call
  // Off the diagonal every (query chunk, key chunk) cell is wholly visible or wholly hidden; the
  // visible cells form one rectangle (python/ring_attention.py's block_calls).
  int64_t rows = 0, cols = 0;
  std::vector<bool> row_used(qs.size()), col_used(ks.size());
  for (size_t i = 0; i < qs.size(); ++i)
    for (size_t j = 0; j < ks.size(); ++j)
      if (ks[j].first + ks[j].second <= qs[i].first) row_used[i] = col_used[j] = true;
  for (size_t i = 0; i < qs.size(); ++i) rows += row_used[i] ? qs[i].second : 0;
  for (size_t j = 0; j < ks.size(); ++j) cols += col_used[j] ? ks[j].second : 0;
  if (rows == 0 || cols == 0) return {};
  return {rows, cols, false};
}

CpResult simulate_cp(const AttnProblem& p, const Machine& m, const Tiling& t, const Options& o, int64_t ranks,
                     CpLayout layout, const CpLink& link) {
  if (auto e = p.validate()) throw SimError(*e);
  if (p.window_left >= 0 || p.window_right >= 0)
    throw SimError("the context-parallel model takes causal or unmasked attention, not a window");
  if (p.seqlen_q != p.seqlen_k)
    throw SimError(fmt::format("context parallelism splits one sequence: seqlen_q ({}) must equal seqlen_k ({})",
                               p.seqlen_q, p.seqlen_k));
  if (o.pass == Pass::fwdbwd) throw SimError("the context-parallel model takes --pass fwd or bwd (not fwdbwd)");
  const auto chunks = cp_chunks(p.seqlen_q, ranks, layout);
  const bool bwd = o.pass == Pass::bwd;
  const double e = static_cast<double>(dtype_bytes(p.dtype));
  const double bw = hbm_rate(m, o);
  const double d = static_cast<double>(p.head_dim);
  const double bq = static_cast<double>(p.batch * p.heads_q), bk = static_cast<double>(p.batch * p.heads_kv);

  CpResult r;
  r.ranks = ranks;
  r.layout = layout;
  r.pass = o.pass;
  r.link = link.name;
  r.link_bandwidth = link.bandwidth.value;
  r.single_gpu_s = simulate(p, m, t, o).time_s;

  std::map<std::tuple<int64_t, int64_t, bool>, double> cache;
  auto block_time = [&](const CpBlock& b) {
    if (b.nq == 0) return 0.0;
    const auto key = std::make_tuple(b.nq, b.nk, b.causal);
    if (auto it = cache.find(key); it != cache.end()) return it->second;
    AttnProblem q = p;
    q.seqlen_q = b.nq;
    q.seqlen_k = b.nk;
    q.causal = b.causal;
    double s = simulate(q, m, t, o).time_s;
    // The merge (fwd) or the fp32 accumulation of the block's gradients (bwd), streamed through HBM.
    const double nq = static_cast<double>(b.nq), nk = static_cast<double>(b.nk);
    s += bwd ? (bq * nq * d * (8 + e) + 2 * bk * nk * d * (8 + e)) / bw : bq * nq * (d * (8 + e) + 12) / bw;
    cache.emplace(key, s);
    return s;
  };
  auto kv_bytes = [&](int64_t rows, double elem) { return static_cast<int64_t>(2 * bk * static_cast<double>(rows) * d * elem); };
  auto xfer = [&](int64_t bytes) { return bytes > 0 ? static_cast<double>(bytes) / link.bandwidth.value + link.latency_s.value : 0.0; };

  std::vector<double> per_rank(static_cast<size_t>(ranks), 0.0);
  for (int64_t step = 0; step < ranks; ++step) {
    CpStep st;
    st.step = step;
    st.compute_min_s = 1e300;
    int64_t bytes = 0;
    for (int64_t k = 0; k < ranks; ++k) {
      const int64_t src = ((k - step) % ranks + ranks) % ranks;
      const CpBlock b = cp_block(chunks, k, src, p.causal);
      const double c = block_time(b);
      per_rank[static_cast<size_t>(k)] += c;
      st.compute_max_s = std::max(st.compute_max_s, c);
      st.compute_min_s = std::min(st.compute_min_s, c);
      if (b.nq > 0) r.score_pairs += b.causal ? b.nq * (b.nq + 1) / 2 : b.nq * b.nk;
      int64_t in = 0;  // bytes arriving at rank k during this step
      if (step < ranks - 1) {
        const int64_t nxt = ((src - 1) % ranks + ranks) % ranks;
        in += kv_bytes(len_of(chunks[static_cast<size_t>(nxt)]), e);
      }
      if (bwd && step > 0) in += kv_bytes(len_of(chunks[static_cast<size_t>(src)]), 4.0);  // dK, dV of src, from rank k - 1
      bytes = std::max(bytes, in);
    }
    st.transfer_bytes = bytes;
    st.transfer_s = xfer(bytes);
    st.time_s = std::max(st.compute_max_s, st.transfer_s);
    r.compute_bound_s += st.compute_max_s;
    r.time_s += st.time_s;
    r.steps.push_back(st);
  }
  if (bwd && ranks > 1) {  // the last hop of the dK, dV buffers home, after the last block
    int64_t last = 0;
    for (const auto& c : chunks) last = std::max(last, kv_bytes(len_of(c), 4.0));
    r.time_s += xfer(last);
  }
  r.exposed_transfer_s = r.time_s - r.compute_bound_s;
  r.efficiency = r.time_s > 0 ? r.single_gpu_s / (static_cast<double>(ranks) * r.time_s) : 0.0;
  double sum = 0.0, mx = 0.0;
  for (double c : per_rank) {
    sum += c;
    mx = std::max(mx, c);
  }
  r.imbalance = sum > 0 ? mx / (sum / static_cast<double>(ranks)) : 1.0;
  return r;
}

}  // namespace ioattn::sim

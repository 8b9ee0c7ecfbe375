// apps/problem_flags.cpp: parse the shared problem flags into a validated AttnProblem.
#include <algorithm>
#include <charconv>
#include <vector>
#include <string_view>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli.hpp"

namespace ioattn::cli {

void ProblemFlags::add_to(CLI::App& app) {
  auto* g = app.add_option_group("problem", "Attention problem (shared by all subcommands)");
  // Sizes are checked here so that an explicit 0 is an error, not "not given".
  const CLI::Validator positive(
      [](std::string& in) -> std::string {
        int64_t v = 0;
        if (!CLI::detail::lexical_cast(in, v) || v < 1) return "must be an integer >= 1 (got " + in + ")";
        return {};
      },
      "INT>=1");
  g->add_option("--batch", batch, "batch size")->check(positive)->capture_default_str();
  auto* h = g->add_option("--heads", heads, "query and key/value heads (MHA)")->check(positive);
  g->add_option("--heads-q", heads_q, "query heads")->check(positive)->excludes(h);
  g->add_option("--heads-kv", heads_kv, "key/value heads (GQA/MQA: divides --heads-q)")
      ->check(positive)
      ->excludes(h);
  auto* s = g->add_option("--seqlen", seqlen, "query and key sequence length")->check(positive);
  auto* sq = g->add_option("--seqlen-q", seqlen_q, "query sequence length")->check(positive)->excludes(s);
  auto* sk = g->add_option("--seqlen-k", seqlen_k, "key sequence length")->check(positive)->excludes(s);
  if (layout_flags) {
    g->add_option("--seqlens-q", seqlens_q,
                  "packed (varlen) queries: each sequence's query count, e.g. 5,0,17 (sets the batch)")
        ->excludes(s)
        ->excludes(sq);
    g->add_option("--seqlens-k", seqlens_k,
                  "each sequence's key count, e.g. 9,3,17: packed (varlen) keys, or with --page-size the keys "
                  "each sequence holds in the cache")
        ->excludes(s)
        ->excludes(sk);
    g->add_option("--page-size", page_size, "paged KV cache: keys per page (any integer >= 1)");
    g->add_flag("--shuffle-pages", shuffle_pages, "with --page-size: block table a random permutation (from --seed)");
    g->add_option("--spare-pages", spare_pages, "with --page-size: cache pages no sequence uses")->capture_default_str();
  }
  g->add_option("--head-dim", head_dim, "head dimension d")->check(positive)->capture_default_str();
  g->add_option("--dtype", dtype, "input dtype: fp32|fp16|bf16|fp8_e4m3|fp8_e5m2")->capture_default_str();
  g->add_option("--q-descale", q_descale, "fp8: Q descale, one value or one per K/V head (x0,x1,...)");
  g->add_option("--k-descale", k_descale, "fp8: K descale, one value or one per K/V head");
  g->add_option("--v-descale", v_descale, "fp8: V descale, one value or one per K/V head");
  g->add_option("--out-dtype", out_dtype, "fp8: output dtype bf16|fp16 (default bf16)");
  g->add_flag("--causal", causal, "causal mask, bottom-right aligned");
  g->add_option("--window", window, "sliding window L,R (-1 = unbounded side)");
  g->add_option("--scale", scale, "softmax scale (default 1/sqrt(head_dim))");
  g->add_option("--seed", seed, "random seed for generated inputs")->capture_default_str();
}

namespace {

int64_t parse_int(std::string_view text, std::string_view what) {
  int64_t v = 0;
  const auto* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc{} || ptr != end || text.empty())
    throw UsageError(fmt::format("--window must be L,R with integers >= -1 (bad {} '{}')", what, text));
  return v;
}

// "0.5,2" -> {0.5f, 2.0f}; empty text -> {} (descale 1). validate() checks the values.
std::vector<float> parse_descales(const std::string& text, std::string_view flag) {
  std::vector<float> out;
  size_t at = 0;
  while (at < text.size() || (!text.empty() && at == text.size() && text.back() == ',')) {
    const size_t comma = std::min(text.find(',', at), text.size());
    const std::string_view item = std::string_view(text).substr(at, comma - at);
    float v = 0;
    auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (ec != std::errc{} || ptr != item.data() + item.size() || item.empty())
      throw UsageError(fmt::format("{} must be numbers separated by commas (bad '{}')", flag, item));
    out.push_back(v);
    at = comma + 1;
  }
  return out;
}

// "5,0,17" -> {5, 0, 17}; empty text -> {}.
std::vector<int64_t> parse_lengths(const std::string& text, std::string_view flag) {
  std::vector<int64_t> out;
  if (text.empty()) return out;
  int64_t sum = 0;
  size_t at = 0;
  while (true) {
    const size_t comma = text.find(',', at);
    const std::string_view item = std::string_view(text).substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    int64_t v = 0;
    auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc{} || ptr != item.data() + item.size() || v < 0 || v > kMaxSeqlen)
      throw UsageError(fmt::format("{} must be comma-separated integers in [0, {}] (bad entry '{}')", flag, kMaxSeqlen, item));
    sum += v;
    if (sum > kMaxTokens || static_cast<int64_t>(out.size()) >= kMaxBatchHeads)
      throw UsageError(fmt::format("{}: at most {} tokens and {} sequences in all", flag, kMaxTokens, kMaxBatchHeads));
    out.push_back(v);
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return out;
}

int64_t longest(const std::vector<int64_t>& lengths) {
  return std::max<int64_t>(1, *std::max_element(lengths.begin(), lengths.end()));
}

}  // namespace

// --seqlens-q / --seqlens-k / --page-size: the layout (ioattn/layout.hpp) on top of the dense fields.
void ProblemFlags::apply_layout(AttnProblem& p) const {
  const std::vector<int64_t> lq = parse_lengths(seqlens_q, "--seqlens-q");
  const std::vector<int64_t> lk = parse_lengths(seqlens_k, "--seqlens-k");
  if (!lq.empty() && !lk.empty() && lq.size() != lk.size())
    throw UsageError(fmt::format("--seqlens-q has {} entries and --seqlens-k {}: one per sequence in both", lq.size(),
                                 lk.size()));
  const size_t n = std::max(lq.size(), lk.size());
  if (n) {
    if (p.batch != 1 && p.batch != static_cast<int64_t>(n))
      throw UsageError(fmt::format("--batch {} does not match the {} sequences of --seqlens-q/--seqlens-k", p.batch, n));
    p.batch = static_cast<int64_t>(n);
  }
  if (!lq.empty()) {
    p.layout.cu_seqlens_q = cu_seqlens_of(lq);
    p.layout.total_q = p.layout.cu_seqlens_q.back();
    p.seqlen_q = longest(lq);  // max_seqlen_q
  }
  if (page_size == 0 && (shuffle_pages || spare_pages != 0))
    throw UsageError("--shuffle-pages and --spare-pages describe a paged KV cache: they need --page-size");
  if (page_size != 0) {
    if (page_size < 1 || page_size > kMaxTokens)
      throw UsageError(fmt::format("--page-size must be in [1, {}] (got {})", kMaxTokens, page_size));
    if (spare_pages < 0 || spare_pages > kMaxTokens)
      throw UsageError(fmt::format("--spare-pages must be in [0, {}] (got {})", kMaxTokens, spare_pages));
    if (!lk.empty()) p.seqlen_k = longest(lk);  // max_seqlen_k
    const std::vector<int64_t> used = lk.empty() ? std::vector<int64_t>(static_cast<size_t>(p.batch), p.seqlen_k) : lk;
    set_paged(p.layout, used, page_size, spare_pages, shuffle_pages ? std::optional<uint64_t>(seed) : std::nullopt);
  } else if (!lk.empty()) {
    p.layout.cu_seqlens_k = cu_seqlens_of(lk);
    p.layout.total_k = p.layout.cu_seqlens_k.back();
    p.seqlen_k = longest(lk);  // max_seqlen_k
  }
}

AttnProblem ProblemFlags::problem() const {
  AttnProblem p;
  p.batch = batch;
  const int64_t hq = heads ? heads : (heads_q ? heads_q : default_heads);
  p.heads_q = hq;
  p.heads_kv = heads ? heads : (heads_kv ? heads_kv : hq);
  const int64_t sq = seqlen ? seqlen : (seqlen_q ? seqlen_q : default_seqlen);
  p.seqlen_q = sq;
  p.seqlen_k = seqlen ? seqlen : (seqlen_k ? seqlen_k : sq);
  p.head_dim = head_dim;
  const auto dt = parse_dtype(dtype);
  if (!dt) throw UsageError(fmt::format("--dtype must be fp32, fp16, bf16, fp8_e4m3 or fp8_e5m2 (got '{}')", dtype));
  p.dtype = *dt;
  p.fp8.q_descale = parse_descales(q_descale, "--q-descale");
  p.fp8.k_descale = parse_descales(k_descale, "--k-descale");
  p.fp8.v_descale = parse_descales(v_descale, "--v-descale");
  if (!out_dtype.empty()) {
    const auto od = parse_dtype(out_dtype);
    if (!od) throw UsageError(fmt::format("--out-dtype must be bf16 or fp16 (got '{}')", out_dtype));
    p.fp8.out = *od;  // validate() below refuses it for a non-FP8 dtype or a non-16-bit output
  }
  p.causal = causal;
  if (!window.empty()) {
    const auto comma = window.find(',');
    if (comma == std::string::npos)
      throw UsageError(fmt::format("--window must be L,R with integers >= -1 (got '{}')", window));
    p.window_left = parse_int(std::string_view(window).substr(0, comma), "L");
    p.window_right = parse_int(std::string_view(window).substr(comma + 1), "R");
  }
  if (scale != 0.0) p.scale = scale;
  if (layout_flags) apply_layout(p);
  if (auto e = p.validate()) throw UsageError(*e);
  return p;
}

std::string fp8_description(const AttnProblem& p) {
  if (!is_fp8(p.dtype)) return {};
  auto list = [](const std::vector<float>& d) { return d.empty() ? std::string("1") : fmt::format("{}", fmt::join(d, ",")); };
  return fmt::format(" q_descale={} k_descale={} v_descale={} out={}", list(p.fp8.q_descale), list(p.fp8.k_descale),
                     list(p.fp8.v_descale), dtype_name(p.fp8.out));
}

}  // namespace ioattn::cli

// apps/problem_flags.cpp: parse the shared problem flags into a validated AttnProblem.
#include <charconv>
#include <string_view>

#include <fmt/format.h>

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
  g->add_option("--seqlen-q", seqlen_q, "query sequence length")->check(positive)->excludes(s);
  g->add_option("--seqlen-k", seqlen_k, "key sequence length")->check(positive)->excludes(s);
  g->add_option("--head-dim", head_dim, "head dimension d")->check(positive)->capture_default_str();
  g->add_option("--dtype", dtype, "input dtype: fp32|fp16|bf16")->capture_default_str();
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

}  // namespace

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
  if (!dt) throw UsageError(fmt::format("--dtype must be fp32, fp16 or bf16 (got '{}')", dtype));
  p.dtype = *dt;
  p.causal = causal;
  if (!window.empty()) {
    const auto comma = window.find(',');
    if (comma == std::string::npos)
      throw UsageError(fmt::format("--window must be L,R with integers >= -1 (got '{}')", window));
    p.window_left = parse_int(std::string_view(window).substr(0, comma), "L");
    p.window_right = parse_int(std::string_view(window).substr(comma + 1), "R");
  }
  if (scale != 0.0) p.scale = scale;
  if (auto e = p.validate()) throw UsageError(*e);
  return p;
}

}  // namespace ioattn::cli

// verify/kernels/gpu_kernels.cpp: every registered GPU variant against the CPU float64 reference.
//
// Properties (RapidCheck, shapes from verify/support weighted toward seqlen 1, 17, 113 vs 203,
// causal with seqlen_q != seqlen_k, windows, GQA/MQA, fully masked rows, odd head dims, large
// logits), for EVERY variant in kernels/registry.cpp (new variants join automatically):
//   - O and LSE pass the error rule (baseline: the reference's same-precision naive forward);
//   - fully masked rows give exactly O = 0 and LSE = -inf;
//   - unsupported problems are refused with a message, never launched.
// Decode shapes (seqlen_q 1..64 against long seqlen_k, GQA 4 and 8) for the split-KV variants at
// every split count from 1 to their largest (prop_decode_shapes).
// Named cases beside them: seqlen 1023 vs 1024, (1, 1), Nq > Nk causal, window (0, 0), MQA; every
// variant with tile sizes at Br/Bc that do not divide the sequence; at every head dim a variant's
// registry entry lists (a few representative ones for "any" / "any<=N", one of them odd) the same
// inputs 100 times give bit-identical outputs; the check fails on a NaN (so a forgotten element
// cannot pass: the harness NaN-poisons O, LSE and the workspace before each launch).
//
// Coverage, last lines of the output: `variant NAME: N cases run, M refused` for every registered
// variant, and the test FAILS when a variant ran no case (a build whose v06 refuses everything,
// e.g. one without sm_90a code, cannot pass). Counted per variant, over the named cases, the
// determinism check and the properties: N = distinct cases it was launched on (and checked),
// M = distinct cases its supports() refused. A case is (problem, Br, Bc, splits, input seed,
// logit_std, which check); RapidCheck repeats of an identical value (small sizes, shrinking after a
// failure) count once. The deliberately invalid problems of refusals() are not counted.
//
// IOATTN_GPU_QUICK=1 (for compute-sanitizer, which slows kernels 10-100x): small named cases
// in bf16 only, fewer tile sizes; determinism with 3 repeats instead of 100, on one small head and
// small tiles (see determinism()); scale the property case counts with IOATTN_RC_SCALE.
// Without a GPU it prints "SKIPPED: no GPU ..." and exits 77 (ctest reports it as skipped).
//   ./build-gpu/verify/kernels/gpu_kernels           (RC_SEED=random for a fresh seed)
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <span>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "arbitrary.hpp"
#include "compare.hpp"
#include "coverage.hpp"
#include "kernels/harness.hpp"
#include "kernels/launch.hpp"
#include "layouts.hpp"
#include "property.hpp"
#include "suite_start.hpp"

namespace {

using namespace ioattn;
using namespace ioattn::verify;
using kernels::KernelInfo;
using kernels::KernelOptions;

// IOATTN_GPU_VARIANTS=NAME[,NAME...] (optional): the suite runs those registered variants only, e.g.
// a sanitizer pass over the variants a change touched where the whole suite under racecheck does not
// fit one device call. The run then ends with a `PARTIAL:` line naming the variants it left out, and
// the coverage rule (a variant that ran no case fails) applies to the chosen ones. An unregistered
// name ends the run at once with a one-line error (exit 2). Unset or empty: every variant.
std::span<const KernelInfo> suite_variants() {
  static const std::vector<KernelInfo> chosen = [] {
    const auto all = kernels::registry();
    const char* env = std::getenv("IOATTN_GPU_VARIANTS");
    if (env == nullptr || *env == '\0') return std::vector<KernelInfo>(all.begin(), all.end());
    std::set<std::string, std::less<>> want;
    for (std::string_view rest = env; !rest.empty();) {
      const size_t comma = rest.find(',');
      const std::string_view name = rest.substr(0, comma);
      if (!name.empty()) want.emplace(name);
      rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    }
    std::string registered;
    for (const KernelInfo& k : all) {
      if (!registered.empty()) registered += ',';
      registered += k.name;
    }
    for (const std::string& name : want) {
      if (std::none_of(all.begin(), all.end(), [&](const KernelInfo& k) { return k.name == name; })) {
        std::fprintf(stderr, "gpu_kernels: IOATTN_GPU_VARIANTS names '%s', which is not a registered variant (%s)\n",
                     name.c_str(), registered.c_str());
        std::exit(2);
      }
    }
    std::vector<KernelInfo> out;
    for (const KernelInfo& k : all)
      if (want.count(k.name)) out.push_back(k);
    return out;
  }();
  return chosen;
}

// Per-variant coverage (see the header): distinct cases launched and refused.
verify::Coverage& coverage() {
  static verify::Coverage c;
  return c;
}
std::string case_key(std::string_view check, const AttnProblem& p, const KernelOptions& opt, uint64_t seed,
                     double logit_std = 1.0) {
  return fmt::format("{} [{}] Br={} Bc={} splits={} seed={} logit_std={}", check, describe(p), opt.br, opt.bc,
                     opt.splits, seed, logit_std);
}
void count_ran(const KernelInfo& k, std::string key) { coverage().ran(k.name, std::move(key)); }
void count_refused(const KernelInfo& k, std::string key, const std::string& why) {
  coverage().refused(k.name, std::move(key), why);
}

// Runs one variant on one case; RC_FAILs on a launch error. Returns the outputs.
ref::Forward run_on_gpu(const KernelInfo& k, const Case& c, const KernelOptions& opt) {
  kernels::LaunchStatus st;
  auto dev = kernels::DeviceRun::create(k, c.p, opt, st);
  if (!dev) RC_FAIL(fmt::format("{}: create failed: {} [{}]", k.name, st.value_or("?"), describe(c.p)));
  if ((st = dev->upload(c.in.q, c.in.k, c.in.v))) RC_FAIL(fmt::format("{}: upload: {}", k.name, *st));
  if ((st = dev->run())) RC_FAIL(fmt::format("{}: run: {} [{}]", k.name, *st, describe(c.p)));
  kernels::HostOutputs out;
  if ((st = dev->download(out))) RC_FAIL(fmt::format("{}: download: {}", k.name, *st));
  return {std::move(out.o), std::move(out.lse)};
}

void require_masked_rows_empty(const KernelInfo& k, const AttnProblem& p, const ref::Forward& out) {
  const MaskSpec mask = p.mask();
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t h = 0; h < p.heads_q; ++h)
      for (int64_t i = 0; i < p.seqlen_q; ++i) {
        if (!mask.row_fully_masked(i)) continue;
        RC_ASSERT(out.lse[p.lse_offset(b, h, i)] == -std::numeric_limits<float>::infinity());
        for (int64_t x = 0; x < p.head_dim; ++x)
          if (out.o[p.q_offset(b, i, h, x)] != 0.0f)
            RC_FAIL(fmt::format("{}: fully masked row {} has O != 0 [{}]", k.name, i, describe(p)));
      }
}

// Tile options a variant may get: its default, or Br/Bc that do not divide the sequence.
KernelOptions gen_options(const KernelInfo& k, const AttnProblem& p) {
  if (!k.takes_tile_sizes) return {};
  KernelOptions opt{*rc::gen::element(0, 1, 16, 17, 32, 64), *rc::gen::element(0, 1, 16, 17, 64, 128), 0};
  if (k.strategy == "splitkv") opt.splits = *rc::gen::element(0, 1, 2, 3, 7, 64);  // 64: most splits empty
  if (k.supports(p, opt)) return {};  // this variant does not take these sizes: its default
  return opt;
}

// The property body for one problem: every variant that supports it passes.
void all_variants_match(const AttnProblem& p, double logit_std, uint64_t seed) {
  classify(p);
  RC_CLASSIFY(logit_std >= 100, "logit_std>=100");
  const Case c = make_case(p, seed, {.logit_std = logit_std});
  int ran = 0;
  for (const KernelInfo& k : suite_variants()) {
    const KernelOptions opt = gen_options(k, p);
    const std::string key = case_key("property", p, opt, seed, logit_std);
    if (auto why = k.supports(p, opt)) {
      RC_ASSERT(!why->empty());  // refused with a message, never silently
      count_refused(k, key, *why);
      continue;
    }
    count_ran(k, key);  // counted when launched: a failing launch or check still ran
    const ref::Forward out = run_on_gpu(k, c, opt);
    require(check_forward(out, c.ref64, c.baseline, p.output_dtype()),
            fmt::format("{} [{}; Br={} Bc={} logit_std={}]", k.name, describe(p), opt.br, opt.bc, logit_std));
    require_masked_rows_empty(k, p, out);
    ++ran;
  }
  RC_CLASSIFY(ran >= 3, "3+ variants ran");
  RC_TAG(fmt::format("{} variants ran", ran));
}

void prop_all_variants() {
  ProblemLimits lim;
  lim.max_head_dim = 160;
  const AttnProblem p = *gen_problem(lim);
  all_variants_match(p, *gen_logit_std(), *rc::gen::arbitrary<uint64_t>());
}

// Problems the matrix-core variants take (fp16/bf16, d in {32, 64, 96, 128, 256}): without this
// generator most random head dims would leave them out.
void prop_fast_shapes() {
  ProblemLimits lim;
  AttnProblem p = *gen_problem(lim);
  p.dtype = *rc::gen::element(DType::fp16, DType::bf16);
  p.head_dim = *rc::gen::element<int64_t>(64, 128, 64, 128, 32, 96, 256);
  // Keep the work bounded after changing d.
  while (p.batch * p.heads_q * p.seqlen_q * p.seqlen_k * p.head_dim > int64_t{8000000} && p.seqlen_k > 1)
    p.seqlen_k /= 2;
  all_variants_match(p, *gen_logit_std(), *rc::gen::arbitrary<uint64_t>());
}

// ---- named cases ----------------------------------------------------------------------------

AttnProblem shape(int64_t b, int64_t hq, int64_t hkv, int64_t nq, int64_t nk, int64_t d, DType dt,
                  bool causal = false, int64_t wl = -1, int64_t wr = -1) {
  AttnProblem p;
  p.batch = b; p.heads_q = hq; p.heads_kv = hkv; p.seqlen_q = nq; p.seqlen_k = nk; p.head_dim = d;
  p.dtype = dt; p.causal = causal; p.window_left = wl; p.window_right = wr;
  return p;
}

struct Totals { int ran = 0, failed = 0; };
const bool kQuick = std::getenv("IOATTN_GPU_QUICK") != nullptr;

// `tiles`: more (Br, Bc) to try on every variant with tile sizes (those it refuses are counted as refused).
void named_case(const AttnProblem& p, uint64_t seed, Totals& t, const std::vector<KernelOptions>& tiles = {}) {
  const Case c = make_case(p, seed);
  for (const KernelInfo& k : suite_variants()) {
    std::vector<KernelOptions> opts{{}};
    if (k.takes_tile_sizes) opts.push_back({17, 13, 0});
    if (k.takes_tile_sizes) opts.insert(opts.end(), tiles.begin(), tiles.end());
    if (k.takes_tile_sizes && !kQuick) opts.push_back({1, 1, 0}), opts.push_back({32, 128, 0});
    if (k.strategy == "splitkv") opts.push_back({0, 0, 5}), opts.push_back({16, 16, 64});
    for (const KernelOptions& opt : opts) {
      const std::string key = case_key("named", p, opt, seed);
      if (auto why = k.supports(p, opt)) {
        count_refused(k, key, *why);
        continue;
      }
      count_ran(k, key);
      kernels::LaunchStatus st;
      auto dev = kernels::DeviceRun::create(k, p, opt, st);
      kernels::HostOutputs out;
      if (dev && !(st = dev->upload(c.in.q, c.in.k, c.in.v)) && !(st = dev->run())) st = dev->download(out);
      ++t.ran;
      const std::string what = fmt::format("case {} [{}; Br={} Bc={}]", k.name, describe(p), opt.br, opt.bc);
      if (st) {
        ++t.failed;
        fmt::print("FAIL {}: {}\n", what, *st);
        continue;
      }
      const ForwardCheck chk = check_forward({out.o, out.lse}, c.ref64, c.baseline, p.output_dtype());
      if (!chk.pass()) {
        ++t.failed;
        fmt::print("FAIL {}\n", chk.describe(what, seed));
      }
    }
  }
}

// The same inputs 100 times: bit-identical O and LSE (no race, no order-dependent reduction), at
// every head dim the variant lists; the first run also passes the error rule. A listed head dim
// the variant refuses in every dtype is a failure (the registry and supports() disagree).
void determinism(Totals& t) {
  const int reps = kQuick ? 3 : 100;
  for (const KernelInfo& k : suite_variants()) {
    const std::vector<int64_t> dims = head_dims_to_check(k.head_dims);
    if (dims.empty()) {
      ++t.ran, ++t.failed;
      fmt::print("FAIL determinism {}: cannot read head_dims \"{}\" from the registry\n", k.name, k.head_dims);
    }
    for (const int64_t d : dims) {
      AttnProblem p = shape(2, 4, 2, 203, 113, d, DType::fp32, true);
      kernels::LaunchStatus why;
      for (DType dt : {DType::fp32, DType::bf16, DType::fp16, DType::fp8_e4m3}) {
        p.dtype = dt;
        if (!(why = k.supports(p, {}))) break;
      }
      // Quick (under compute-sanitizer, whose cost grows with the serial work of one block: key
      // tiles x Bc x d x threads): one head, and Br = Bc = 16 on 40 x 40 where the variant takes
      // them (3 query and 3 key tiles, the last of each partial), else its own tiles on 72 x 140.
      KernelOptions opt{};
      if (kQuick && !why) {
        p.batch = p.heads_q = p.heads_kv = 1;
        const bool small_tiles = k.takes_tile_sizes && !k.supports(p, {16, 16, 0});
        if (small_tiles) opt = {16, 16, 0};
        p.seqlen_q = small_tiles ? 40 : 72;
        p.seqlen_k = small_tiles ? 40 : 140;
      }
      const uint64_t seed = 7;
      const std::string key = case_key("determinism", p, opt, seed);
      ++t.ran;
      if (why) {
        count_refused(k, key, *why);
        ++t.failed;
        fmt::print("FAIL determinism {}: head_dims \"{}\" lists d={}, but every dtype is refused: {}\n", k.name,
                   k.head_dims, d, *why);
        continue;
      }
      count_ran(k, key);
      const Case c = make_case(p, seed);
      kernels::LaunchStatus st;
      auto dev = kernels::DeviceRun::create(k, p, opt, st);
      kernels::HostOutputs first, next;
      if (!dev || (st = dev->upload(c.in.q, c.in.k, c.in.v)) || (st = dev->run()) || (st = dev->download(first))) {
        ++t.failed;
        fmt::print("FAIL determinism {}: {} [{}]\n", k.name, st.value_or("create failed"), describe(p));
        continue;
      }
      const ForwardCheck chk = check_forward({first.o, first.lse}, c.ref64, c.baseline, p.output_dtype());
      if (!chk.pass()) {
        ++t.failed;
        fmt::print("FAIL {}\n", chk.describe(fmt::format("determinism {} [{}]", k.name, describe(p)), seed));
        continue;
      }
      int differing = 0;
      for (int rep = 1; rep < reps; ++rep) {
        if ((st = dev->run()) || (st = dev->download(next))) break;
        if (std::memcmp(first.o.data(), next.o.data(), first.o.size() * sizeof(float)) != 0 ||
            std::memcmp(first.lse.data(), next.lse.data(), first.lse.size() * sizeof(float)) != 0)
          ++differing;
      }
      if (st || differing) {
        ++t.failed;
        fmt::print("FAIL determinism {}: {} of {} repeats differ {} [{}]\n", k.name, differing, reps - 1,
                   st.value_or(""), describe(p));
      } else {
        fmt::print("determinism {}: {} runs bit-identical [{}; Br={} Bc={}]\n", k.name, reps, describe(p), opt.br,
                   opt.bc);
      }
    }
  }
}

// ---- decode shapes: the split-KV variants at every split count -----------------------------
// Few query rows (seqlen_q 1..64) against many keys (up to ~9k, not multiples of a tile), GQA
// groups of 4 and 8 beside MHA and MQA, causal (bottom-right: matters when seqlen_q > 1) and
// windows, d 64/128/256, fp16/bf16; sometimes the benchmark's decode shape (32 query heads over 8
// K/V heads, 1 query, 8192 keys, d 128; not under IOATTN_GPU_QUICK). Every variant of strategy `splitkv` runs each case at its
// default split count, 1, 2, 3, 7 and the largest its supports() takes (beyond the key blocks:
// most splits empty, weight 0 in the combine): each passes the error rule against the float64
// reference, so any two split counts agree within the sum of their bounds; fully masked rows give
// O = 0 and LSE = -inf exactly.
// Paged KV caches (prop_paged_kv, after the decode shapes): for the variants whose registry entry
// declares paged_kv, generated batches of 1..6 sequences with ragged key counts (0, 1, 2..17, 33..113,
// 500..5000), dense queries (1, 2, 4, 7 or 16 per sequence), page sizes 1, 16, 7, 2..70 (rarely
// dividing the lengths), shuffled block tables with spare pages and unused slots holding -1 or a
// page index (never to be read), GQA 1/4/8, causal, windows, d 64/128/256, fp16/bf16: at the same
// split counts as the decode shapes, O and LSE pass the error rule against the float64 reference of
// the paged problem (which gathers the keys through the table: reference/by_sequence.hpp), and
// every fully masked row (all rows of a sequence with 0 keys) is exactly O = 0, LSE = -inf.
// Variants that do not declare paged_kv must refuse these problems. The suite FAILS when a
// variant that declares paged_kv ran no paged case.
std::vector<int> decode_split_counts(const KernelInfo& k, const AttnProblem& p) {
  std::vector<int> counts{0, 1, 2, 3, 7};
  for (const int n : {256, 128, 64, 32, 16})
    if (!k.supports(p, {0, 0, n})) {
      counts.push_back(n);
      break;
    }
  return counts;
}

rc::Gen<AttnProblem> gen_decode_problem() {
  return rc::gen::exec([] {
    AttnProblem p;
    if (!kQuick && *rc::gen::element(0, 0, 0, 1)) {  // the benchmark's decode shape (batch 1)
      p.heads_q = 32, p.heads_kv = 8, p.seqlen_q = 1, p.seqlen_k = 8192, p.head_dim = 128;
      p.dtype = DType::bf16;
      return p;
    }
    p.batch = *rc::gen::inRange<int64_t>(1, 3);
    p.heads_kv = *rc::gen::element<int64_t>(1, 2);
    p.heads_q = p.heads_kv * *rc::gen::element<int64_t>(4, 8, 4, 8, 1);
    p.seqlen_q = *rc::gen::element<int64_t>(1, 1, 1, 2, 4, 7, 16, 33, 64);
    p.seqlen_k = *rc::gen::weightedOneOf<int64_t>(
        {{2, rc::gen::element<int64_t>(1, 5, 63, 64, 65, 1000, 4133, 8191)}, {3, rc::gen::inRange<int64_t>(1, 9000)}});
    p.head_dim = *rc::gen::element<int64_t>(128, 128, 64, 256);
    p.dtype = *rc::gen::element(DType::bf16, DType::fp16);
    p.causal = *rc::gen::element(false, false, true);
    if (*rc::gen::element(0, 0, 0, 1)) {
      p.window_left = *rc::gen::element<int64_t>(0, 1, 100, 300);
      if (!p.causal) p.window_right = *rc::gen::element<int64_t>(-1, 0, 5);
    }
    // Keep the float64 reference's work bounded (and a sanitizer's run short: IOATTN_GPU_QUICK).
    const int64_t max_work = kQuick ? 2000000 : 40000000;
    while (p.batch * p.heads_q * p.seqlen_q * p.seqlen_k * p.head_dim > max_work && p.seqlen_k > 1)
      p.seqlen_k = p.seqlen_k * 2 / 3;
    return p;
  });
}

void prop_decode_shapes() {
  const AttnProblem p = *gen_decode_problem();
  classify(p);
  RC_CLASSIFY(p.group_size() == 4, "GQA group 4");
  RC_CLASSIFY(p.group_size() == 8, "GQA group 8");
  RC_CLASSIFY(p.seqlen_k >= 4096, "seqlen_k>=4096");
  const uint64_t seed = *rc::gen::arbitrary<uint64_t>();
  const Case c = make_case(p, seed);
  int ran = 0;
  for (const KernelInfo& k : suite_variants()) {
    if (k.strategy != "splitkv") continue;
    for (const int splits : decode_split_counts(k, p)) {
      const KernelOptions opt{0, 0, splits};
      const std::string key = case_key("decode", p, opt, seed);
      if (auto why = k.supports(p, opt)) {
        RC_ASSERT(!why->empty());
        count_refused(k, key, *why);
        continue;
      }
      count_ran(k, key);
      const ref::Forward out = run_on_gpu(k, c, opt);
      require(check_forward(out, c.ref64, c.baseline, p.dtype),
              fmt::format("{} [{}; splits={}]", k.name, describe(p), splits));
      require_masked_rows_empty(k, p, out);
      ++ran;
    }
  }
  RC_CLASSIFY(ran > 0, "a split-KV variant ran");
}

// ---- paged KV caches: the variants that declare them ----------------------------------------
std::map<std::string, int>& paged_ran() {  // variant -> distinct paged cases run
  static std::map<std::string, int> m;
  return m;
}
std::set<std::string>& paged_keys() {
  static std::set<std::string> s;
  return s;
}

rc::Gen<AttnProblem> gen_paged_problem() {
  return rc::gen::exec([] {
    AttnProblem p;
    p.batch = *rc::gen::inRange<int64_t>(1, 7);
    p.heads_kv = *rc::gen::element<int64_t>(1, 1, 2);
    p.heads_q = p.heads_kv * *rc::gen::element<int64_t>(1, 4, 8, 4, 8);
    p.seqlen_q = *rc::gen::element<int64_t>(1, 1, 1, 2, 4, 7, 16);  // dense queries
    p.head_dim = *rc::gen::element<int64_t>(128, 128, 64, 256);
    p.dtype = *rc::gen::element(DType::bf16, DType::fp16);
    p.causal = *rc::gen::element(false, false, true);
    if (*rc::gen::element(0, 0, 0, 1)) {
      p.window_left = *rc::gen::element<int64_t>(0, 1, 20, 300);
      if (!p.causal) p.window_right = *rc::gen::element<int64_t>(-1, 0, 5);
    }
    std::vector<int64_t> lk(static_cast<size_t>(p.batch));
    for (int64_t& n : lk)
      n = *rc::gen::weightedOneOf<int64_t>({{2, rc::gen::just<int64_t>(0)},
                                            {3, rc::gen::just<int64_t>(1)},
                                            {3, rc::gen::inRange<int64_t>(2, 18)},
                                            {2, rc::gen::inRange<int64_t>(33, 114)},
                                            {2, rc::gen::inRange<int64_t>(500, 5001)}});
    // Keep the float64 reference's work bounded (and a sanitizer's run short: IOATTN_GPU_QUICK).
    const double max_work = kQuick ? 2e6 : 4e7;
    auto work = [&] {
      double w = 0;
      for (int64_t n : lk) w += double(n);
      return w * double(p.heads_q * p.seqlen_q * p.head_dim);
    };
    while (work() > max_work)
      for (int64_t& n : lk) n = n * 2 / 3;
    const int64_t longest = std::max<int64_t>(1, *std::max_element(lk.begin(), lk.end()));
    p.seqlen_k = longest + *rc::gen::element<int64_t>(0, 0, 0, 5);  // max_seqlen_k, sometimes above the longest
    const int64_t page = *rc::gen::weightedOneOf<int64_t>({{2, rc::gen::just<int64_t>(1)},
                                                           {3, rc::gen::just<int64_t>(16)},
                                                           {1, rc::gen::just<int64_t>(7)},
                                                           {2, rc::gen::inRange<int64_t>(2, 71)}});
    const int64_t spare = *rc::gen::inRange<int64_t>(0, 4);
    const auto shuffle_seed = *rc::gen::arbitrary<uint64_t>();
    const bool shuffle = *rc::gen::element(true, true, true, false);
    set_paged(p.layout, lk, page, spare, shuffle ? std::optional<uint64_t>(shuffle_seed) : std::nullopt);
    // Unused slots (past a sequence's pages) holding a page index instead of -1: never read.
    if (*rc::gen::element(false, true)) {
      BatchLayout& l = p.layout;
      for (int64_t b = 0; b < p.batch; ++b)
        for (int64_t i = l.pages_used(b); i < l.max_pages; ++i)
          l.block_table[b * l.max_pages + i] = static_cast<int32_t>((shuffle_seed + b + i) % l.num_pages);
    }
    return p;
  });
}

void require_layout_rows(const KernelInfo& k, const AttnProblem& p, ref::Forward& out, const std::string& what);

void prop_paged_kv() {
  const AttnProblem p = *gen_paged_problem();
  if (auto e = p.validate()) RC_FAIL("generated paged problem is invalid: " + *e + " [" + describe_layout(p) + "]");
  classify_layout(p);
  RC_CLASSIFY(p.seqlen_k >= 1000, "seqlen_k>=1000");
  const uint64_t seed = *rc::gen::arbitrary<uint64_t>();
  const Case c = make_case(p, seed);  // the reference reads K/V through the block table
  const std::string what = describe_layout(p);
  int ran = 0;
  for (const KernelInfo& k : suite_variants()) {
    if (!k.layouts.paged_kv) {
      if (!k.supports(p, {})) RC_FAIL(fmt::format("{} accepts a paged problem but does not declare paged_kv [{}]", k.name, what));
      continue;
    }
    for (const int splits : decode_split_counts(k, p)) {
      const KernelOptions opt{0, 0, splits};
      const std::string key = fmt::format("paged [{}] splits={} seed={}", what, splits, seed);
      if (auto why = k.supports(p, opt)) {
        RC_ASSERT(!why->empty());
        count_refused(k, key, *why);
        continue;
      }
      count_ran(k, key);
      if (paged_keys().insert(std::string(k.name) + " " + key).second) ++paged_ran()[std::string(k.name)];
      ref::Forward out = run_on_gpu(k, c, opt);
      require(check_forward(out, c.ref64, c.baseline, p.dtype), fmt::format("{} [{}; splits={}]", k.name, what, splits));
      require_layout_rows(k, p, out, fmt::format("{}; splits={}", what, splits));
      ++ran;
    }
  }
  RC_CLASSIFY(ran > 0, "a paged variant ran");
}

// One line per variant whose layout table line sets `declared` (paged_kv, varlen): the distinct
// cases of `kind` it ran; false when one of them ran none.
bool report_layout_cases(bool kernels::LayoutSupport::*declared, const std::map<std::string, int>& ran, const char* kind,
                         const char* flag) {
  bool ok = true;
  for (const KernelInfo& k : suite_variants()) {
    if (!(k.layouts.*declared)) continue;
    const auto it = ran.find(std::string(k.name));
    const int n = it == ran.end() ? 0 : it->second;
    std::printf("variant %.*s: %d %s cases run%s\n", static_cast<int>(k.name.size()), k.name.data(), n, kind,
                n ? "" : fmt::format(" (FAIL: declares {} but ran no such case)", flag).c_str());
    ok &= n > 0;
  }
  return ok;
}
bool report_paged_coverage() {
  return report_layout_cases(&kernels::LayoutSupport::paged_kv, paged_ran(), "paged KV", "paged_kv");
}

// ---- packed (varlen) and paged prefill batches: the variants that declare them --------------
// Generated batches of 1..8 sequences, weighted toward where layout code breaks: query and key
// lengths 0, 1, 2..17, 60..300, 500..1500 (prefill: one query tile and several), keys equal to the
// queries (self-attention), or a longer prefix before them, or independent; queries packed
// (cu_seqlens_q, sometimes trailing rows no sequence owns) or dense; keys packed (cu_seqlens_k),
// a paged cache (page size 1, 16, 7, 256 or 2..70: rarely dividing the lengths; shuffled tables,
// spare pages, unused slots holding -1 or a page index) or dense; max lengths sometimes above the
// longest; GQA 1/4/8, causal (each sequence's own bottom-right diagonal), windows, d 64/128 (and
// 32/96/256, which v05 takes), fp16/bf16. Every variant whose layout table line declares the layout runs it (its default tile
// and a generated one) and passes the error rule against the float64 reference of the layout
// problem (the reference gathers by definition: reference/by_sequence.hpp); fully masked rows
// (every row of a sequence with 0 keys) are exactly O = 0, LSE = -inf; rows of a packed Q no
// sequence owns are left as the harness poisoned them (NaN) or hold the reference's O = 0,
// LSE = -inf. Variants that do not declare it must refuse. The suite FAILS when a variant that
// declares varlen ran no packed case (report_layout_coverage).
std::map<std::string, int>& layout_ran() {  // variant -> distinct packed/paged prefill cases run
  static std::map<std::string, int> m;
  return m;
}
std::set<std::string>& layout_keys() {
  static std::set<std::string> s;
  return s;
}

rc::Gen<AttnProblem> gen_prefill_layout_problem() {
  return rc::gen::exec([] {
    AttnProblem p;
    p.batch = *rc::gen::inRange<int64_t>(1, 9);
    p.heads_kv = *rc::gen::element<int64_t>(1, 1, 2);
    p.heads_q = p.heads_kv * *rc::gen::element<int64_t>(1, 4, 8, 4, 8);
    p.head_dim = *rc::gen::element<int64_t>(128, 128, 128, 64, 64, 32, 96, 256);
    p.dtype = *rc::gen::element(DType::bf16, DType::fp16);
    p.causal = *rc::gen::element(false, true, true);
    if (*rc::gen::element(0, 0, 0, 1)) {
      p.window_left = *rc::gen::element<int64_t>(0, 1, 20, 300);
      if (!p.causal) p.window_right = *rc::gen::element<int64_t>(-1, 0, 5);
    }
    // 0 packed Q, 1 dense Q; keys 0 packed, 1 paged, 2 dense (only with packed Q: not all dense).
    const int q_mode = *rc::gen::element(0, 0, 0, 1);
    const int k_mode = q_mode == 1 ? *rc::gen::element(0, 1, 1) : *rc::gen::element(0, 1, 1, 2);
    auto gen_len = [] {
      return *rc::gen::weightedOneOf<int64_t>({{2, rc::gen::just<int64_t>(0)},
                                               {2, rc::gen::just<int64_t>(1)},
                                               {3, rc::gen::inRange<int64_t>(2, 18)},
                                               {3, rc::gen::inRange<int64_t>(60, 301)},
                                               {2, rc::gen::inRange<int64_t>(500, 1501)}});
    };
    std::vector<int64_t> lq(static_cast<size_t>(p.batch)), lk(lq.size());
    const int64_t dense_q = *rc::gen::element<int64_t>(1, 17, 128, 200);  // queries per sequence when dense
    const int k_rel = *rc::gen::element(0, 0, 1, 2);  // 0: keys = queries, 1: a prefix before them, 2: independent
    for (size_t b = 0; b < lq.size(); ++b) {
      lq[b] = q_mode == 1 ? dense_q : gen_len();
      lk[b] = k_rel == 0 ? lq[b] : k_rel == 1 ? lq[b] + gen_len() : gen_len();
    }
    if (k_mode == 2) std::fill(lk.begin(), lk.end(), std::max<int64_t>(1, lk[0]));  // dense keys
    // Keep the float64 reference's work bounded (and a sanitizer's run short: IOATTN_GPU_QUICK).
    const double max_work = kQuick ? 2e6 : 4e7;
    auto work = [&] {
      double w = 0;
      for (size_t b = 0; b < lq.size(); ++b) w += double(lq[b]) * double(lk[b]);
      return w * double(p.heads_q * p.head_dim);
    };
    while (work() > max_work) {
      for (int64_t& n : lk) n = k_mode == 2 ? std::max<int64_t>(1, n * 2 / 3) : n * 2 / 3;
      if (q_mode == 0)
        for (int64_t& n : lq) n = n * 2 / 3;
    }
    const int64_t extra = *rc::gen::element<int64_t>(0, 0, 0, 3);  // max lengths above the longest
    p.seqlen_q = (q_mode == 1 ? lq[0] : std::max<int64_t>(1, *std::max_element(lq.begin(), lq.end()))) +
                 (q_mode == 1 ? 0 : extra);
    p.seqlen_k = k_mode == 2 ? lk[0] : std::max<int64_t>(1, *std::max_element(lk.begin(), lk.end())) + extra;
    BatchLayout& l = p.layout;
    if (q_mode == 0) {
      l.cu_seqlens_q = cu_seqlens_of(lq);
      l.total_q = l.cu_seqlens_q.back() + *rc::gen::element<int64_t>(0, 0, 0, 5);  // trailing rows no sequence owns
    }
    if (k_mode == 0) {
      l.cu_seqlens_k = cu_seqlens_of(lk);
      l.total_k = l.cu_seqlens_k.back() + *rc::gen::element<int64_t>(0, 0, 3);
    } else if (k_mode == 1) {
      const int64_t page = *rc::gen::weightedOneOf<int64_t>({{2, rc::gen::just<int64_t>(1)},
                                                             {3, rc::gen::just<int64_t>(16)},
                                                             {1, rc::gen::just<int64_t>(7)},
                                                             {1, rc::gen::just<int64_t>(256)},
                                                             {2, rc::gen::inRange<int64_t>(2, 71)}});
      const auto shuffle_seed = *rc::gen::arbitrary<uint64_t>();
      const bool shuffle = *rc::gen::element(true, true, true, false);
      set_paged(l, lk, page, *rc::gen::inRange<int64_t>(0, 4), shuffle ? std::optional<uint64_t>(shuffle_seed) : std::nullopt);
      if (*rc::gen::element(false, true))  // unused slots holding a page index instead of -1: never read
        for (int64_t b = 0; b < p.batch; ++b)
          for (int64_t i = l.pages_used(b); i < l.max_pages; ++i)
            l.block_table[b * l.max_pages + i] = static_cast<int32_t>((shuffle_seed + b + i) % l.num_pages);
    }
    return p;
  });
}

// Fully masked rows of a layout problem are exactly O = 0, LSE = -inf; rows of a packed Q that no
// sequence owns are untouched (NaN, the harness's poison) or O = 0, LSE = -inf, and are then set
// to the reference's values so the error rule judges the owned rows.
void require_layout_rows(const KernelInfo& k, const AttnProblem& p, ref::Forward& out, const std::string& what) {
  const float inf = std::numeric_limits<float>::infinity();
  for (int64_t b = 0; b < p.batch; ++b) {
    const MaskSpec mask = p.mask_of(b);
    for (int64_t h = 0; h < p.heads_q; ++h)
      for (int64_t i = 0; i < p.seqlen_q_of(b); ++i) {
        if (!mask.row_fully_masked(i)) continue;
        if (out.lse[p.lse_index(b, h, i)] != -inf)
          RC_FAIL(fmt::format("{}: fully masked row (b {}, h {}, i {}) has LSE != -inf [{}]", k.name, b, h, i, what));
        for (int64_t x = 0; x < p.head_dim; ++x)
          if (out.o[(p.q_row(b, i) * p.heads_q + h) * p.head_dim + x] != 0.0f)
            RC_FAIL(fmt::format("{}: fully masked row (b {}, h {}, i {}) has O != 0 [{}]", k.name, b, h, i, what));
      }
  }
  const BatchLayout& l = p.layout;
  if (!l.varlen_q()) return;
  for (int64_t row = l.cu_seqlens_q.back(); row < l.total_q; ++row)
    for (int64_t h = 0; h < p.heads_q; ++h) {
      float& lse = out.lse[h * l.total_q + row];
      if (!std::isnan(lse) && lse != -inf)
        RC_FAIL(fmt::format("{}: LSE of row {} (no sequence owns it) was written: {} [{}]", k.name, row, lse, what));
      lse = -inf;
      for (int64_t x = 0; x < p.head_dim; ++x) {
        float& o = out.o[(row * p.heads_q + h) * p.head_dim + x];
        if (!std::isnan(o) && o != 0.0f)
          RC_FAIL(fmt::format("{}: O of row {} (no sequence owns it) was written: {} [{}]", k.name, row, o, what));
        o = 0.0f;
      }
    }
}

void prop_prefill_layouts() {
  const AttnProblem p = *gen_prefill_layout_problem();
  if (auto e = p.validate()) RC_FAIL("generated layout problem is invalid: " + *e + " [" + describe_layout(p) + "]");
  classify_layout(p);
  RC_CLASSIFY(p.seqlen_q >= 500, "seqlen_q>=500");
  const uint64_t seed = *rc::gen::arbitrary<uint64_t>();
  const Case c = make_case(p, seed);
  const std::string what = describe_layout(p);
  const bool varlen = p.layout.varlen_q() || p.layout.varlen_k();
  int ran = 0;
  for (const KernelInfo& k : suite_variants()) {
    if ((varlen && !k.layouts.varlen) || (p.layout.paged() && !k.layouts.paged_kv)) {
      if (!k.supports(p, {})) RC_FAIL(fmt::format("{} accepts a {} problem it does not declare [{}]", k.name, p.layout.describe(), what));
      continue;
    }
    std::vector<KernelOptions> opts{{}};
    if (const KernelOptions o = gen_options(k, p); o.br || o.bc || o.splits) opts.push_back(o);
    for (const KernelOptions& opt : opts) {
      const std::string key = fmt::format("prefill layout [{}] Br={} Bc={} splits={} seed={}", what, opt.br, opt.bc, opt.splits, seed);
      if (auto why = k.supports(p, opt)) {
        RC_ASSERT(!why->empty());
        count_refused(k, key, *why);
        continue;
      }
      count_ran(k, key);
      if (layout_keys().insert(std::string(k.name) + " " + key).second) ++layout_ran()[std::string(k.name)];
      ref::Forward out = run_on_gpu(k, c, opt);
      const std::string at = fmt::format("{}; Br={} Bc={} splits={}", what, opt.br, opt.bc, opt.splits);
      require_layout_rows(k, p, out, at);
      require(check_forward(out, c.ref64, c.baseline, p.dtype), fmt::format("{} [{}]", k.name, at));
      ++ran;
    }
  }
  RC_CLASSIFY(ran > 0, "a layout variant ran");
}

bool report_layout_coverage() {
  return report_layout_cases(&kernels::LayoutSupport::varlen, layout_ran(), "packed/paged prefill", "varlen");
}

// ---- FP8 (e4m3) inputs: the variants whose registry line declares fp8_e4m3 ------------------
// The error rule for FP8 (ioattn/tolerance.hpp): truth = forward_f64 on the dequantized inputs,
// baseline = forward_naive's FP8 emulation (P~ rounded to e4m3, descales as a kernel applies
// them), floor of the OUTPUT dtype (bf16 or fp16); inputs from make_inputs (N(0, a^2) / descale,
// rounded to e4m3). Every non-FP8 variant must refuse these problems (registry_precheck).
AttnProblem fp8(AttnProblem p, std::vector<float> qd, std::vector<float> kd, std::vector<float> vd,
                DType out = DType::bf16) {
  p.dtype = DType::fp8_e4m3;
  p.fp8.q_descale = std::move(qd);
  p.fp8.k_descale = std::move(kd);
  p.fp8.v_descale = std::move(vd);
  p.fp8.out = out;
  return p;
}

// Named FP8 shapes: a single element, odd lengths (113 vs 203, 1023 vs 1024), causal with
// Nq > Nk (leading rows fully masked) and Nq < Nk, MQA/GQA, window (0, 0) and a wide window,
// d 64/128/256, descales none / per tensor / per K/V head, bf16 and fp16 output.
void fp8_named_cases(Totals& t) {
  using V = std::vector<float>;
  named_case(fp8(shape(1, 1, 1, 1, 1, 64, DType::bf16), {}, {}, {}), 11, t);
  named_case(fp8(shape(2, 4, 2, 113, 203, 128, DType::bf16, true), {0.25f}, {0.5f}, {0.125f}), 12, t);
  named_case(fp8(shape(1, 4, 1, 203, 113, 64, DType::bf16, true), {1.5f}, {0.75f}, {2.f}, DType::fp16), 13, t);
  named_case(fp8(shape(1, 8, 2, 130, 300, 128, DType::bf16, false, 20, 5), V{0.5f, 0.25f}, V{1.f, 0.125f},
                 V{0.0625f, 0.5f}), 14, t);  // per-K/V-head descales
  named_case(fp8(shape(1, 2, 2, 17, 113, 256, DType::bf16, false, 0, 0), {0.5f}, {0.5f}, {0.5f}), 15, t);
  named_case(fp8(shape(1, 2, 1, 129, 257, 256, DType::bf16, true), {}, {}, {0.25f}, DType::fp16), 16, t);
  if (!kQuick) {
    named_case(fp8(shape(1, 2, 2, 1023, 1024, 128, DType::bf16), {0.03125f}, {0.0625f}, {0.25f}), 17, t);
    named_case(fp8(shape(1, 2, 2, 1024, 1023, 64, DType::bf16, true), {}, {}, {}), 18, t);
    named_case(fp8(shape(2, 16, 2, 700, 700, 128, DType::bf16, true), {0.125f}, {0.125f}, {0.125f}), 19, t);
  }
}

// Property: generated shapes as prop_all_variants (lengths 1, 17, 113, ..., causal, windows, GQA,
// fully masked rows, logits up to ~100) in fp8_e4m3 at d 64/128/256, with generated descales
// (none, per tensor, or per K/V head, powers of two and not) and output dtype.
void prop_fp8_shapes() {
  ProblemLimits lim;
  AttnProblem p = *gen_problem(lim);
  p.dtype = DType::fp8_e4m3;
  p.head_dim = *rc::gen::element<int64_t>(64, 128, 128, 256);
  while (p.batch * p.heads_q * p.seqlen_q * p.seqlen_k * p.head_dim > int64_t{8000000} && p.seqlen_k > 1)
    p.seqlen_k /= 2;
  const int mode = *rc::gen::element(0, 1, 1, 2);  // none, per tensor, per K/V head
  auto gen_descales = [&] {
    std::vector<float> d;
    const int64_t n = mode == 0 ? 0 : mode == 1 ? 1 : p.heads_kv;
    for (int64_t i = 0; i < n; ++i) d.push_back(*rc::gen::element(1.f, 0.5f, 0.1f, 2.f, 0.03125f));
    return d;
  };
  p.fp8.q_descale = gen_descales();
  p.fp8.k_descale = gen_descales();
  p.fp8.v_descale = gen_descales();
  p.fp8.out = *rc::gen::element(DType::bf16, DType::fp16);
  RC_CLASSIFY(mode == 2, "per-head descales");
  all_variants_match(p, *gen_logit_std(), *rc::gen::arbitrary<uint64_t>());
}

// One line per registered variant; false when one ran no case at all.
bool report_coverage() {
  std::vector<std::string_view> names;
  for (const KernelInfo& k : suite_variants()) names.push_back(k.name);
  return coverage().report(names);
}

// The check itself can fail: a single NaN (an element a kernel forgot, left poisoned) and a
// single perturbed value are caught. Guards against a comparison that always passes.
void check_can_fail(Totals& t) {
  const AttnProblem p = shape(1, 2, 1, 17, 33, 32, DType::fp16, true);
  const Case c = make_case(p, 3);
  ref::Forward nan_out = c.baseline, bad_out = c.baseline;
  nan_out.o[5] = std::numeric_limits<float>::quiet_NaN();
  bad_out.o[7] += 0.25f;
  ++t.ran;
  const bool base_ok = check_forward(c.baseline, c.ref64, c.baseline, p.dtype).pass();
  const bool nan_caught = !check_forward(nan_out, c.ref64, c.baseline, p.dtype).pass();
  const bool bad_caught = !check_forward(bad_out, c.ref64, c.baseline, p.dtype).pass();
  if (!(base_ok && nan_caught && bad_caught)) {
    ++t.failed;
    fmt::print("FAIL check_can_fail: baseline passes {}, NaN caught {}, perturbation caught {}\n", base_ok,
               nan_caught, bad_caught);
  }
}

// v08/v08p's default tile at d 192 depends on the keys (kConfigs: Bc 112 from 8k keys, Bc 64 below;
// --bc picks either at any length): the launch configuration says which one runs.
void v08_key_dependent_default(Totals& t) {
  for (const KernelInfo& k : suite_variants()) {
    if (k.name != "v08_fa3_warpspec" && k.name != "v08p_fa3_persistent") continue;
    const struct {
      int64_t seqlen_k;
      int bc_opt, want;
    } cases[] = {{8191, 0, 64}, {8192, 0, 112}, {16384, 64, 64}, {300, 112, 112}};
    for (const auto& c : cases) {
      ++t.ran;
      const AttnProblem p = shape(1, 2, 2, 256, c.seqlen_k, 192, DType::bf16);
      kernels::LaunchConfig cfg;
      const auto st = k.config(p, {0, c.bc_opt, 0}, cfg);
      if (st || cfg.bc != c.want) {
        ++t.failed;
        fmt::print("FAIL tile choice {}: d 192, {} keys, --bc {}: {} (want Bc {})\n", k.name, c.seqlen_k, c.bc_opt,
                   st ? *st : "Bc " + std::to_string(cfg.bc), c.want);
      }
    }
  }
}

// Unsupported problems: refused by supports() and by launch() with a message, never run.
void refusals(Totals& t) {
  const AttnProblem too_wide = shape(1, 1, 1, 8, 8, 1024, DType::fp16);
  AttnProblem invalid = shape(1, 3, 2, 8, 8, 64, DType::fp16);  // heads_q not divisible by heads_kv
  for (const KernelInfo& k : suite_variants()) {
    for (const AttnProblem& p : {too_wide, invalid}) {
      if (p.head_dim == too_wide.head_dim && k.head_dims == "any") continue;  // d = 1024 is valid for v01
      ++t.ran;
      const auto why = k.supports(p, {});
      const auto launch = k.launch(p, {}, {}, nullptr, nullptr);  // null tensors: must not reach the GPU
      if (!why || why->empty() || !launch) {
        ++t.failed;
        fmt::print("FAIL refusal {}: [{}] supports: {}, launch: {}\n", k.name, describe(p),
                   why.value_or("accepted"), launch.value_or("accepted"));
      }
    }
  }
}

}  // namespace

int main() {
  if (auto rc = start_gpu_suite()) return *rc;
  const size_t chosen = suite_variants().size();  // an unregistered name in IOATTN_GPU_VARIANTS ends here
  Totals t;
  check_can_fail(t);
  refusals(t);
  v08_key_dependent_default(t);
  const std::vector<DType> dtypes = kQuick ? std::vector<DType>{DType::bf16}
                                           : std::vector<DType>{DType::fp32, DType::fp16, DType::bf16};
  for (DType dt : dtypes) {
    named_case(shape(1, 1, 1, 1, 1, 64, dt), 1, t);
    if (!kQuick) named_case(shape(1, 2, 2, 1023, 1024, 64, dt), 2, t);
    named_case(shape(2, 4, 2, 113, 203, 128, dt, true), 3, t);
    named_case(shape(1, 4, 1, 203, 113, 64, dt, true), 4, t);   // MQA, leading rows fully masked
    named_case(shape(1, 2, 2, 17, 113, 96, dt, false, 0, 0), 5, t);  // window (0, 0): one key per row
    named_case(shape(1, 2, 1, 113, 17, 32, dt, false, 5, 3), 6, t);
    // Head dims padded inside v08 (40 -> 64, 136 -> 192, 200 -> 256) and its 96/192 classes, with
    // odd lengths, causal (Nq > Nk: fully masked rows), GQA/MQA, a window; outside the quick mode
    // every (Br, Bc) v08 lists at d 64/96/128 (kernels/v08_fa3_warpspec.hip, kConfigs; Bc 176: d 128 only; Br 64: two CTAs per SM).
    const std::vector<KernelOptions> v08_tiles =
        kQuick ? std::vector<KernelOptions>{}
               : std::vector<KernelOptions>{{64, 64, 0},   {64, 128, 0},  {128, 64, 0}, {128, 128, 0},
                                            {128, 176, 0}, {128, 192, 0}, {192, 64, 0}, {192, 128, 0}};
    // d 192: Bc 112 (the default from 8k keys) on short shapes too; the quick mode keeps it.
    const std::vector<KernelOptions> d192_tiles{{128, 112, 0}};
    named_case(shape(2, 4, 2, 113, 203, 40, dt, true), 21, t, v08_tiles);
    named_case(shape(1, 6, 2, 203, 113, 96, dt, true), 22, t, v08_tiles);
    named_case(shape(2, 4, 1, 113, 203, 192, dt, true), 23, t, d192_tiles);
    named_case(shape(1, 4, 2, 257, 203, 200, dt, true), 24, t);
    named_case(shape(1, 2, 2, 203, 113, 136, dt, false, 37, 5), 25, t, d192_tiles);
    if (!kQuick) named_case(shape(2, 4, 2, 113, 203, 64, dt, true), 26, t, v08_tiles);
    if (!kQuick) named_case(shape(1, 4, 2, 300, 1000, 128, dt, true), 27, t, v08_tiles);
    if (!kQuick) named_case(shape(1, 2, 2, 177, 1000, 128, dt), 28, t, v08_tiles);  // last key tile partial
  }
  fp8_named_cases(t);
  determinism(t);
  std::printf("named cases: %d ran, %d failed\n", t.ran, t.failed);
  const int props = ioattn::verify::run_properties({
      {"gpu_variants_equal_reference", 150, prop_all_variants},
      {"gpu_fast_shapes_equal_reference", 150, prop_fast_shapes},
      {"gpu_fp8_shapes_equal_reference", 100, prop_fp8_shapes},
      {"gpu_decode_shapes_equal_reference", 60, prop_decode_shapes},
      {"gpu_paged_kv_equal_reference", 60, prop_paged_kv},
      {"gpu_prefill_layouts_equal_reference", 60, prop_prefill_layouts},
  });
  const bool every_variant_ran = report_coverage();
  const bool every_paged_variant_ran = report_paged_coverage();
  const bool every_layout_variant_ran = report_layout_coverage();
  if (chosen < kernels::registry().size()) {
    std::string left_out;
    for (const KernelInfo& k : kernels::registry())
      if (std::none_of(suite_variants().begin(), suite_variants().end(),
                       [&](const KernelInfo& c) { return c.name == k.name; }))
        left_out += std::string(left_out.empty() ? "" : ", ").append(k.name);
    std::printf("PARTIAL: IOATTN_GPU_VARIANTS ran %zu of %zu registered variants; left out: %s\n", chosen,
                kernels::registry().size(), left_out.c_str());
  }
  return (t.failed || props || !every_variant_ran || !every_paged_variant_ran || !every_layout_variant_ran) ? 1 : 0;
}

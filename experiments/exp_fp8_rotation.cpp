// experiments/exp_fp8_rotation.cpp: what FlashAttention-3's incoherent processing (a random
// orthogonal rotation of Q and K along d before FP8 quantization, reference/hadamard.hpp) does to
// attention's error on inputs with outlier features, in the reference's exact FP8 emulation (CPU).
//
// Inputs (a "model's activations"): Q, K, V drawn per (seed, generator, magnitude M), rounded to
// bf16. Two generators:
//   channels  LLM-style outlier features: in every head, n = 4 channels (the same ones for Q and
//             K, drawn from the seed) have standard deviation M a, the other d - n channels a;
//             V ~ N(0, 1) has none
//   entries   FlashAttention-3's test (paper section 4.3): each entry of Q, K and V is, with
//             probability 0.1 %, drawn with standard deviation M a instead of a (V: M instead of 1)
//   entries_qk  the same with outlier entries in Q and K only (V ~ N(0, 1)): what the rotation can
//             reach, since V is not rotated
// a is set so that the logits scale q.k keep the standard deviation --logit-std whatever M is
// (var(q.k) = sum over channels of var(q_c) var(k_c)): M changes the shape of the inputs, not the
// sharpness of the softmax. M = 1 is the same Gaussian input without outliers.
//
// Truth: forward_f64 of those bf16 values (float64, no rounding). Per input, three computations:
//   bf16          forward_naive of the bf16 problem (the 16-bit baseline)
//   fp8           per-tensor e4m3 quantization, descale = amax / 448 (as ioattn.quantize_fp8), of
//                 Q, K, V, then forward_naive of the FP8 problem (S accumulated in fp32, P~ rounded to
//                 e4m3, O in bf16: reference/README.md, "FP8")
//   fp8_rotated   the same after Q and K are rotated by R = H_d D_s (float64, one seed for Q and K;
//                 V is not rotated), amax and descales taken after the rotation
// The FP8 rows' error includes the quantization of the inputs (the error rule of the FP8 suite
// excludes it; here it is the point). Errors (ioattn/tolerance.hpp's error_stats, plus the RMS):
// O's max, mean and RMS absolute error and max|O| of the truth; LSE's max and mean error (S's
// error shows in LSE directly, O also carries P~'s and V's rounding, which the rotation does not
// touch).
//
// Config: batch 1, 2 heads (one per OpenMP thread), non-causal, softmax scale 1/sqrt(d). Sizes:
//   tiny   (ctest)  N 64, d 64, the three generators, M in {1, 100}, 1 seed
//   figure          N 512, d in {64, 128, 256}, the three generators, M in {1, 10, 30, 100}, 4 seeds
//
//   exp_fp8_rotation [--preset tiny|figure] [--out DIR] [--tag T] [--check] [--seed S]
//
// Writes cpu/fp8_rotation/fp8_rotation.csv (one row per input and computation),
// fp8_rotation_scores.csv (per FP8 row, S's RMS and max error by pair class: whether the query row,
// the key row, both with a channel in common or both in different channels hold outlier entries;
// it shows where the rotation adds error) and context.json.
// --check: the float64 truth of the rotated inputs equals the unrotated one (the rotation keeps
// Q K^T), bf16 is more accurate than FP8, the rotation changes FP8's error by less than a factor
// (0.8, 1.25) (tiny: (0.5, 2)) without outliers, and lowers FP8's LSE error at the largest M of the
// channel generator for every d.
#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <random>
#include <span>
#include <tuple>

#include <Eigen/Core>
#include <omp.h>

#include "driver.hpp"
#include "hadamard.hpp"
#include "ioattn/fp8.hpp"
#include "ioattn/tolerance.hpp"
#include "reference.hpp"

using namespace ioattn;

namespace {

constexpr int64_t kOutlierChannels = 4;   // "channels": outlier features per head
constexpr double kOutlierFraction = 1e-3;  // "entries": FlashAttention-3's 0.1 %
constexpr double kE4m3Max = 448.0;

struct RealInputs {
  std::vector<float> q, k, v;     // BSHD, bf16 values
  std::vector<char> q_big, k_big;  // like q, k: 1 where the entry was drawn as an outlier
};

// The inputs of one point (header comment). Deterministic in (seed, generator, M, problem).
RealInputs make_outlier_inputs(const AttnProblem& p, const std::string& gen, double m, double logit_std,
                               uint64_t seed) {
  const int64_t d = p.head_dim;
  const double n = double(kOutlierChannels), f = kOutlierFraction;
  // Solve scale * sqrt(sum_c var(q_c) var(k_c)) = logit_std for a.
  const double sum_var2 = gen == "channels" ? (double(d) - n) + n * std::pow(m, 4.0)
                                            : double(d) * std::pow(1.0 + f * (m * m - 1.0), 2.0);
  const double a = std::sqrt(logit_std / (p.softmax_scale() * std::sqrt(sum_var2)));
  const uint32_t gen_id = gen == "channels" ? 1u : gen == "entries" ? 2u : 3u;
  std::seed_seq seq{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32), gen_id,
                    static_cast<uint32_t>(m * 1000)};
  std::mt19937_64 rng(seq);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> unif(0.0, 1.0);
  // Outlier channels per head (distinct), shared by Q and K.
  std::vector<std::vector<char>> is_outlier(static_cast<size_t>(p.heads_q), std::vector<char>(size_t(d), 0));
  if (gen == "channels")
    for (auto& row : is_outlier) {
      std::vector<int64_t> cols(static_cast<size_t>(d));
      for (int64_t c = 0; c < d; ++c) cols[size_t(c)] = c;
      std::shuffle(cols.begin(), cols.end(), rng);
      for (int64_t c = 0; c < kOutlierChannels; ++c) row[size_t(cols[size_t(c)])] = 1;
    }
  auto draw = [&](int64_t elems, double base, bool qk, std::vector<char>* mask) {
    std::vector<float> x(static_cast<size_t>(elems));
    if (mask) mask->assign(x.size(), 0);
    for (size_t e = 0; e < x.size(); ++e) {
      const int64_t c = int64_t(e) % d, h = (int64_t(e) / d) % p.heads_q;
      bool big = false;
      if (gen == "channels") big = qk && is_outlier[size_t(h)][size_t(c)];
      else if (gen == "entries" || qk) big = unif(rng) < f;
      x[e] = ref::round_to(DType::bf16, static_cast<float>(normal(rng) * base * (big ? m : 1.0)));
      if (mask && big && m != 1.0) (*mask)[e] = 1;
    }
    return x;
  };
  RealInputs in;
  in.q = draw(p.q_elems(), a, true, &in.q_big);
  in.k = draw(p.kv_elems(), a, true, &in.k_big);
  in.v = draw(p.kv_elems(), 1.0, false, nullptr);  // outliers for "entries" only
  return in;
}

double amax(const std::vector<double>& x) {
  double m = 0;
  for (double v : x) m = std::max(m, std::fabs(v));
  return m;
}

// Per-tensor e4m3 codes of x and the descale amax / 448 (0 -> 1).
std::pair<std::vector<float>, float> quantize(const std::vector<double>& x) {
  const double mx = amax(x);
  const float descale = mx > 0 ? static_cast<float>(mx / kE4m3Max) : 1.0f;
  std::vector<float> codes(x.size());
  for (size_t e = 0; e < x.size(); ++e)
    codes[e] = fp8_round(static_cast<float>(x[e] / double(descale)), Fp8Format::e4m3);
  return {codes, descale};
}

struct Errors {
  ErrorStats o, lse;
  double o_rms = 0, o_ref_max = 0;
};

Errors errors(const ref::Forward& out, const ref::Forward64& truth) {
  Errors e;
  e.o = error_stats(std::span<const float>(out.o), std::span<const double>(truth.o));
  e.lse = error_stats(std::span<const float>(out.lse), std::span<const double>(truth.lse));
  double s = 0;
  for (size_t i = 0; i < out.o.size(); ++i) s += std::pow(double(out.o[i]) - truth.o[i], 2.0);
  e.o_rms = std::sqrt(s / double(std::max<size_t>(out.o.size(), 1)));
  e.o_ref_max = max_abs(std::span<const double>(truth.o));
  return e;
}

// S's error by pair class: (query row i, key row j) of a head fall in one class by where the
// generator put outliers: neither row has one, only q_i, only k_j, both with a channel in common, or
// both in different channels (the "channels" generator puts every pair in both_shared).
constexpr std::array<const char*, 5> kPairClasses = {"neither", "q_only", "k_only", "both_shared", "both_different"};
struct PairError {
  int64_t pairs = 0;
  double sum2 = 0, max = 0;
};

// Per class, |S8 - S| over every head's pairs: S = scale Q K^T of the bf16 values and
// S8 = scale (qd Q8)(kd K8)^T of the codes (in float64: the codes' products are exact, and the
// emulation's fp32 sum differs from this one by fp32 rounding only).
std::array<PairError, 5> score_errors(const AttnProblem& p, const RealInputs& x, const std::vector<float>& q8,
                                      float qd, const std::vector<float>& k8, float kd) {
  using Mat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const int64_t nq = p.seqlen_q, nk = p.seqlen_k, d = p.head_dim;
  std::array<PairError, 5> out{};
  for (int64_t h = 0; h < p.heads_q; ++h) {
    const int64_t hk = p.kv_head_of(h);
    Mat q(nq, d), k(nk, d), q_c(nq, d), k_c(nk, d), q_b(nq, d), k_b(nk, d);
    for (int64_t i = 0; i < nq; ++i)
      for (int64_t c = 0; c < d; ++c) {
        const auto e = static_cast<size_t>(p.q_offset(0, i, h, c));
        q(i, c) = x.q[e];
        q_c(i, c) = double(q8[e]) * double(qd);
        q_b(i, c) = x.q_big[e];
      }
    for (int64_t j = 0; j < nk; ++j)
      for (int64_t c = 0; c < d; ++c) {
        const auto e = static_cast<size_t>(p.kv_offset(0, j, hk, c));
        k(j, c) = x.k[e];
        k_c(j, c) = double(k8[e]) * double(kd);
        k_b(j, c) = x.k_big[e];
      }
    const Mat s = (q * k.transpose()) * p.softmax_scale();      // (Nq, Nk)
    const Mat s8 = (q_c * k_c.transpose()) * p.softmax_scale();  // (Nq, Nk)
    const Mat shared = q_b * k_b.transpose();                    // > 0: an outlier channel in common
    const Eigen::VectorXd q_rows = q_b.rowwise().sum(), k_rows = k_b.rowwise().sum();  // outliers per row
    for (int64_t i = 0; i < nq; ++i)
      for (int64_t j = 0; j < nk; ++j) {
        const bool qo = q_rows(i) > 0, ko = k_rows(j) > 0;
        const size_t cls = qo ? (ko ? (shared(i, j) > 0 ? 3 : 4) : 1) : (ko ? 2 : 0);
        const double e = std::fabs(s8(i, j) - s(i, j));
        out[cls].pairs += 1;
        out[cls].sum2 += e * e;
        out[cls].max = std::max(out[cls].max, e);
      }
  }
  return out;
}

double max_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"FP8 error with and without FA3's Hadamard rotation of Q and K, on inputs with outlier features "
               "(CPU, exact emulation)", "exp_fp8_rotation"};
  exp::DriverArgs a;
  exp::add_common_flags(app, a, "fp8_rotation");
  double logit_std = 2.0;
  app.add_option("--logit-std", logit_std, "standard deviation of the logits scale * q.k (kept for every M)")
      ->check(CLI::Range(1e-3, 1e3))
      ->capture_default_str();
  if (auto rc = exp::parse_args(app, argc, argv)) return *rc;

  return exp::run_driver("exp_fp8_rotation", [&] {
    exp::Checker check(a.check);
    const auto dir = exp::results_dir(a, "cpu");
    const bool fig = a.figure();
    const std::vector<int64_t> dims = fig ? std::vector<int64_t>{64, 128, 256} : std::vector<int64_t>{64};
    const std::vector<double> mags = fig ? std::vector<double>{1, 10, 30, 100} : std::vector<double>{1, 100};
    const std::vector<std::string> gens = {"channels", "entries", "entries_qk"};
    const int seeds = fig ? 4 : 1;
    const int64_t n = fig ? 512 : 64, heads = 2;

    exp::Csv csv(dir / "fp8_rotation.csv",
                 {"kind", "machine", "generator", "magnitude", "head_dim", "seqlen", "heads", "seed", "rotation_seed",
                  "logit_std", "impl", "q_amax", "k_amax", "q_descale", "k_descale", "v_descale", "o_max_err",
                  "o_mean_err", "o_rms_err", "o_ref_max", "lse_max_err", "lse_mean_err"});
    exp::Csv scores(dir / "fp8_rotation_scores.csv",
                    {"kind", "machine", "generator", "magnitude", "head_dim", "seqlen", "heads", "seed", "impl",
                     "pair_class", "pairs", "s_rms_err", "s_max_err"});
    // (generator, M, d, impl) -> sum over seeds of LSE mean error, for the checks.
    std::map<std::tuple<std::string, double, int64_t, std::string>, double> lse_sum, o_sum;
    for (int64_t d : dims)
      for (const std::string& gen : gens)
        for (double m : mags)
          for (int s = 0; s < seeds; ++s) {
            const uint64_t seed = a.seed + uint64_t(s);
            const uint64_t rot_seed = seed ^ 0x9E3779B97F4A7C15ull;
            AttnProblem p;
            p.heads_q = p.heads_kv = heads;
            p.seqlen_q = p.seqlen_k = n;
            p.head_dim = d;
            p.dtype = DType::fp32;
            if (auto e = p.validate()) throw std::invalid_argument(*e);
            const RealInputs x = make_outlier_inputs(p, gen, m, logit_std, seed);
            const ref::Inputs in32{x.q, x.k, x.v, {}};
            const ref::Forward64 truth = ref::forward_f64(p, in32);

            AttnProblem pb = p;
            pb.dtype = DType::bf16;
            const ref::Forward bf16 = ref::forward_naive(pb, in32);

            ref::Inputs64 rot{std::vector<double>(x.q.begin(), x.q.end()), std::vector<double>(x.k.begin(), x.k.end()),
                              std::vector<double>(x.v.begin(), x.v.end()), {}};
            const ref::Inputs64 plain = rot;
            ref::hadamard_rotate(std::span<double>(rot.q), d, rot_seed);
            ref::hadamard_rotate(std::span<double>(rot.k), d, rot_seed);
            if (s == 0 && check.enabled()) {  // the rotation keeps Q K^T: the truth does not move
              const ref::Forward64 t_rot = ref::forward_f64(p, rot);
              const double tol = 1e-9 * std::max(1.0, max_abs(std::span<const double>(truth.o)));
              const double ltol = 1e-9 * std::max(1.0, max_abs(std::span<const double>(truth.lse)));
              check.expect(max_diff(t_rot.o, truth.o) <= tol && max_diff(t_rot.lse, truth.lse) <= ltol,
                           fmt::format("float64 attention of rotated Q, K equals the unrotated one ({}, M {}, d {}: "
                                       "max |dO| {:.2e}, max |dLSE| {:.2e})",
                                       gen, m, d, max_diff(t_rot.o, truth.o), max_diff(t_rot.lse, truth.lse)));
            }
            auto emit = [&](const std::string& impl, const ref::Forward& out, double qa, double ka, float qd,
                            float kd, float vd) {
              const Errors e = errors(out, truth);
              csv.row({"measured", "cpu", gen, exp::cell(m), exp::cell(d), exp::cell(n), exp::cell(heads),
                       exp::cell(int64_t(seed)), impl == "fp8_rotated" ? exp::cell(std::to_string(rot_seed)) : "",
                       exp::cell(logit_std), impl, exp::cell(qa), exp::cell(ka), exp::cell(double(qd)),
                       exp::cell(double(kd)), exp::cell(double(vd)), exp::cell(e.o.max_err),
                       exp::cell(e.o.mean_err), exp::cell(e.o_rms), exp::cell(e.o_ref_max),
                       exp::cell(e.lse.max_err), exp::cell(e.lse.mean_err)});
              lse_sum[{gen, m, d, impl}] += e.lse.mean_err;
              o_sum[{gen, m, d, impl}] += e.o.mean_err;
            };
            emit("bf16", bf16, amax(plain.q), amax(plain.k), 1, 1, 1);
            for (const bool rotated : {false, true}) {
              const ref::Inputs64& src = rotated ? rot : plain;
              const auto [q8, qd] = quantize(src.q);
              const auto [k8, kd] = quantize(src.k);
              const auto [v8, vd] = quantize(src.v);
              AttnProblem p8 = p;
              p8.dtype = DType::fp8_e4m3;
              p8.fp8.out = DType::bf16;
              p8.fp8.q_descale = {qd};
              p8.fp8.k_descale = {kd};
              p8.fp8.v_descale = {vd};
              const std::string impl = rotated ? "fp8_rotated" : "fp8";
              emit(impl, ref::forward_naive(p8, ref::Inputs{q8, k8, v8, {}}), amax(src.q), amax(src.k), qd, kd, vd);
              const auto se = score_errors(p, x, q8, qd, k8, kd);
              for (size_t c = 0; c < se.size(); ++c)
                scores.row({"measured", "cpu", gen, exp::cell(m), exp::cell(d), exp::cell(n), exp::cell(heads),
                            exp::cell(int64_t(seed)), impl, kPairClasses[c], exp::cell(se[c].pairs),
                            se[c].pairs ? exp::cell(std::sqrt(se[c].sum2 / double(se[c].pairs))) : "",
                            se[c].pairs ? exp::cell(se[c].max) : ""});
            }
          }

    // Checks over the seeds' sums (each a mean error over the point's elements).
    const double lo = fig ? 0.8 : 0.5, hi = fig ? 1.25 : 2.0;
    for (int64_t d : dims) {
      for (const std::string& gen : gens)
        for (double m : mags)
          check.expect(lse_sum[{gen, m, d, "bf16"}] < lse_sum[{gen, m, d, "fp8"}] &&
                           o_sum[{gen, m, d, "bf16"}] < o_sum[{gen, m, d, "fp8"}],
                       fmt::format("bf16 more accurate than fp8 in O and LSE ({}, M {}, d {})", gen, m, d));
      for (const std::string& gen : gens) {
        const double r = lse_sum[{gen, 1.0, d, "fp8_rotated"}] / lse_sum[{gen, 1.0, d, "fp8"}];
        check.expect(r > lo && r < hi, fmt::format("without outliers ({}, M 1, d {}) the rotation changes FP8's LSE "
                                                   "error by {:.3f}x, within ({}, {})", gen, d, r, lo, hi));
      }
      const double r = lse_sum[{"channels", mags.back(), d, "fp8_rotated"}] / lse_sum[{"channels", mags.back(), d, "fp8"}];
      check.expect(r < 1.0, fmt::format("with outlier channels (M {}, d {}) the rotation lowers FP8's LSE error "
                                        "({:.3f}x)", mags.back(), d, r));
    }
    exp::write_context(dir, "cpu", a,
                       {{"threads", omp_get_max_threads()}, {"seeds", seeds}, {"seqlen", n}, {"heads", heads},
                        {"logit_std", logit_std}, {"outlier_channels", kOutlierChannels},
                        {"outlier_fraction", kOutlierFraction},
                        {"generators", "channels: 4 channels per head of Q and K (same ones) with std M*a, V N(0,1); "
                                       "entries: each entry of Q, K, V with probability 1e-3 std M*a (V: M); entries_qk: the same in Q and K only; "
                                       "a keeps the logit std at logit_std; values rounded to bf16"},
                        {"truth", "forward_f64 of the bf16 values (float64)"},
                        {"quantization", "per tensor e4m3, descale = amax / 448, after the rotation for fp8_rotated"},
                        {"rotation", "reference/hadamard.hpp: R = H_d D_s on Q and K (float64), V not rotated"},
                        {"fp8_baseline", "forward_naive: S in fp32, P~ e4m3, O bf16"},
                        {"scores", "fp8_rotation_scores.csv: |S8 - S| in float64 per pair class (neither row, q only, "
                                   "k only, both with a shared outlier channel, both in different channels)"}});
    return check.failures();
  });
}

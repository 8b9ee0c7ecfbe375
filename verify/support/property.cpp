// verify/support/property.cpp: the property runner (see property.hpp).
#include "property.hpp"

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <random>

#include <fmt/format.h>
#include <rapidcheck/detail/TestListenerAdapter.h>

namespace ioattn::verify {

namespace {

// Hands the seed to RapidCheck's own configuration too (before it is first read), so that its
// "Using configuration: seed=..." line, when printed, names the seed that is actually used.
uint64_t tell_rapidcheck(uint64_t seed) {
  const char* old = std::getenv("RC_PARAMS");
  const std::string params = (old ? std::string(old) + " " : std::string{}) + "seed=" + std::to_string(seed);
  setenv("RC_PARAMS", params.c_str(), 1);
  return seed;
}

}  // namespace

uint64_t run_seed() {
  static const uint64_t seed = [] {
    const char* env = std::getenv("RC_SEED");
    if (env && std::string(env) == "random") {
      std::random_device rd;
      const uint64_t s = (uint64_t(rd()) << 32) ^ rd();
      fmt::print("RC_SEED=random: this run uses seed {} (replay with RC_SEED={})\n", s, s);
      return tell_rapidcheck(s);
    }
    if (env && *env) {
      char* end = nullptr;
      const uint64_t s = std::strtoull(env, &end, 10);
      if (end && *end == '\0') return tell_rapidcheck(s);
      fmt::print(stderr, "RC_SEED must be a number or 'random' (got '{}'); using the default\n", env);
    }
    const char* params = std::getenv("RC_PARAMS");
    if (params && std::string(params).find("seed=") != std::string::npos)
      return rc::detail::configuration().testParams.seed;
    return tell_rapidcheck(20261129);
  }();
  return seed;
}

int run_properties(const std::vector<Property>& props) {
  const uint64_t seed = run_seed();  // first: it may set RC_PARAMS before RapidCheck reads it
  const auto& config = rc::detail::configuration();
  const bool cases_overridden = config.testParams.maxSuccess != rc::detail::TestParams{}.maxSuccess;
  double scale = 1.0;
  if (const char* s = std::getenv("IOATTN_RC_SCALE")) scale = std::max(0.0, std::atof(s));
  fmt::print("ioattn: every property below runs with seed {} (RC_SEED)\n", seed);
  int failed = 0;
  for (const auto& prop : props) {
    rc::detail::TestParams params = config.testParams;
    params.seed = seed;
    params.maxSuccess = cases_overridden ? config.testParams.maxSuccess
                                         : std::max(1, static_cast<int>(prop.cases * scale));
    rc::detail::TestMetadata meta;
    meta.id = prop.name;
    meta.description = prop.name;
    std::cout << "- " << prop.name << std::endl;
    rc::detail::TestListenerAdapter listener;
    const auto t0 = std::chrono::steady_clock::now();
    const auto result = rc::detail::checkProperty(rc::detail::toProperty(prop.body), meta, params,
                                                  listener, config.reproduce);
    rc::detail::printResultMessage(result, std::cout);
    std::cout << std::endl;
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    rc::detail::SuccessResult success;
    if (result.match(success)) {
      fmt::print("property {}: {} cases passed ({:.1f} s)\n", prop.name, success.numSuccess, secs);
    } else {
      ++failed;
      fmt::print("property {}: FAILED (replay with RC_SEED={})\n", prop.name, seed);
    }
    std::fflush(stdout);
  }
  return failed ? 1 : 0;
}

void require(const RuleResult& r, std::string_view what) {
  if (!r.pass) RC_FAIL(r.describe(what, run_seed()));
}

}  // namespace ioattn::verify

// verify/support/property.hpp: run RapidCheck properties with ioattn's seed and case-count policy.
//
//   int main() {
//     return ioattn::verify::run_properties({
//         {"fa2_equals_reference", 1500, [] { ... RC_ASSERT(...); }},
//     });
//   }
//
// Seed: env RC_SEED (the Makefile sets it): a number is a fixed seed; `random` draws a fresh one
// and prints it so the run can be replayed with RC_SEED=<it>. Without RC_SEED, a seed given in
// RapidCheck's own RC_PARAMS ("seed=N") is used, else the fixed default 20261129.
// Cases: each property names its count; RC_PARAMS="max_success=N" overrides all of them (e.g. for
// a quick local run), env IOATTN_RC_SCALE=x multiplies them.
// Output per property: RapidCheck's report, then one line `property NAME: N cases passed` (or a
// FAILED line with the seed). The exit status is 1 when any property failed.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <rapidcheck.h>

#include "ioattn/tolerance.hpp"

namespace ioattn::verify {

struct Property {
  std::string name;
  int cases;
  std::function<void()> body;
};

// The seed of this run (RC_SEED policy above); printed once by run_properties.
uint64_t run_seed();

int run_properties(const std::vector<Property>& props);

// Fails the current RapidCheck case (RC_FAIL) with the rule's one-line description and the seed.
void require(const RuleResult& r, std::string_view what);

}  // namespace ioattn::verify

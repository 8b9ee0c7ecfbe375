// experiments/sim_common.hpp: small helpers the simulator drivers share.
#pragma once

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "simulator/simulator.hpp"

namespace ioattn::exp {

// The six accelerators the paper compares (catalog names are matched by prefix, case-insensitive:
// "h200" finds "h200-sxm"). The other catalog machines appear where a driver takes all of them.
inline const std::vector<std::string> kPaperMachines = {"mi210", "mi250x", "mi300x", "a100", "h100", "h200"};

inline std::string lower(std::string_view s) {
  std::string r(s);
  std::transform(r.begin(), r.end(), r.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return r;
}

// A short label for figures and paper macros: "h200-sxm" -> "H200", "a100-80gb" -> "A100".
inline std::string machine_label(const sim::Machine& m) {
  std::string r;
  for (char c : m.name) {
    if (c == '-' || c == '_' || c == ' ') break;
    r += char(std::toupper(static_cast<unsigned char>(c)));
  }
  return r;
}

// The catalog entry whose name starts with `key`; throws SimError naming the catalog otherwise.
inline const sim::Machine& pick_machine(const std::vector<sim::Machine>& catalog, std::string_view key) {
  const std::string k = lower(key);
  for (const auto& m : catalog)
    if (lower(m.name).rfind(k, 0) == 0) return m;
  return sim::find_machine(catalog, key);  // throws with the list of known names
}

// 2^lo, 2^(lo+1), ..., 2^hi.
inline std::vector<int64_t> powers_of_two(int lo, int hi) {
  std::vector<int64_t> v;
  for (int e = lo; e <= hi; ++e) v.push_back(int64_t{1} << e);
  return v;
}

}  // namespace ioattn::exp

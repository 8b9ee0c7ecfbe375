#include "coverage.hpp"

#include <fmt/format.h>

namespace ioattn::verify {

bool Coverage::report(const std::vector<std::string_view>& variants) {
  bool ok = true;
  for (std::string_view v : variants) {
    const Counts& c = at(v);
    fmt::print("variant {}: {} cases run, {} refused\n", v, c.ran.size(), c.refused.size());
    if (c.ran.empty()) {
      ok = false;
      fmt::print("FAIL variant {} ran no case (first refusal: {})\n", v,
                 c.first_refusal.empty() ? "none: it was offered no case" : c.first_refusal);
    }
  }
  return ok;
}

}  // namespace ioattn::verify

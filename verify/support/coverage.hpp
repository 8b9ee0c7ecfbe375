// verify/support/coverage.hpp: how many distinct cases each registered kernel variant ran or
// refused in a GPU suite, and the closing report that fails a variant which ran none (so a build
// that lacks a variant's device code cannot pass with the variant never run).
//
//   Coverage cov;
//   cov.ran(k.name, key);  cov.refused(k.name, key, why);   // key: one distinct case
//   bool ok = cov.report(names);   // "variant NAME: N cases run, M refused" per name, in order
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace ioattn::verify {

class Coverage {
 public:
  void ran(std::string_view variant, std::string key) { at(variant).ran.insert(std::move(key)); }
  void refused(std::string_view variant, std::string key, const std::string& why) {
    Counts& c = at(variant);
    if (c.first_refusal.empty()) c.first_refusal = why;
    c.refused.insert(std::move(key));
  }
  // One line per variant; false when one ran no case at all (printed as a FAIL line with the
  // first refusal, which says why).
  bool report(const std::vector<std::string_view>& variants);

 private:
  struct Counts {
    std::set<std::string> ran, refused;
    std::string first_refusal;
  };
  Counts& at(std::string_view v) { return counts_[std::string(v)]; }
  std::map<std::string, Counts> counts_;
};

}  // namespace ioattn::verify

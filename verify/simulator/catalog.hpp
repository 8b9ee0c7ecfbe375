// verify/simulator/catalog.hpp: the built-in machine catalog, loaded once per test binary, and its H200
// entry (the machine the calibrated terms were fitted on), for the simulator's unit tests.
#pragma once

#include <vector>

#include "simulator/simulator.hpp"

namespace ioattn::sim::test {

inline const std::vector<Machine>& catalog() {
  static const std::vector<Machine> c = load_catalog(default_catalog_dir());
  return c;
}

inline const Machine& h200() { return find_machine(catalog(), "h200"); }

}  // namespace ioattn::sim::test

// apps/ioattn.cpp: the `ioattn` command line, one front door to reference, simulator and kernels.
//
//   ioattn reference  [problem flags] [--check] [--backward]     CPU definition and tiled algorithms
//   ioattn simulate   --machine M --strategy S [problem flags]   IO-cost model of one problem
//   ioattn sweep      ...                                        tidy CSV over machines x strategies x N
//   ioattn machines                                              the machine catalog
//   ioattn run        --kernel K [problem flags] [--check]       a GPU kernel variant
//   ioattn kernels                                               the kernel ladder
//   ioattn cp         --machine M --cp-ranks P [problem flags]   context-parallel (ring) model
//
// Exit codes: 0 success, 1 a check failed, 2 bad input (one line on stderr naming the constraint).
#include <cstdio>
#include <exception>

#include <fmt/format.h>

#include "cli.hpp"

int main(int argc, char** argv) {
  using namespace ioattn::cli;
  CLI::App app{"ioattn: IO-aware exact attention testbed", "ioattn"};
  app.require_subcommand(1);
  Commands commands;
  add_reference_commands(app, commands);
  add_simulator_commands(app, commands);
  add_kernel_commands(app, commands);
  add_cp_commands(app, commands);
  try {
    app.parse(argc, argv);
    for (const auto& c : commands)
      if (c.app->parsed()) return c.run();
    return 0;
  } catch (const CLI::Success& e) {  // --help and friends
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    fmt::print(stderr, "ioattn: error: {}\n", e.what());
    return kUsageExit;
  } catch (const UsageError& e) {
    fmt::print(stderr, "ioattn: error: {}\n", e.what());
    return kUsageExit;
  } catch (const std::bad_alloc&) {
    fmt::print(stderr, "ioattn: error: out of host memory for this problem\n");
    return kUsageExit;
  } catch (const std::exception& e) {
    fmt::print(stderr, "ioattn: internal error: {}\n", e.what());
    return 3;
  }
}

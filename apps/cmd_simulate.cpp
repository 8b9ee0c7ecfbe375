// placeholder, replaced by the simulate work in this session
#include "cli.hpp"
namespace ioattn::cli {
void add_simulator_commands(CLI::App&, Commands&) {}
}  // namespace ioattn::cli

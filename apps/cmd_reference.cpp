// placeholder, replaced by the reference work in this session
#include "cli.hpp"
namespace ioattn::cli {
void add_reference_commands(CLI::App&, Commands&) {}
}  // namespace ioattn::cli

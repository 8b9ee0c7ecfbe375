// experiments/driver.hpp: what every experiment driver shares.
//
// A driver turns one question ("how does HBM traffic grow with N?") into tidy CSV files (one row
// per modeled or measured point, one column per variable) and a context.json saying where the
// numbers came from: commit, date, machine, the exact command, the seed. Results go to
//
//     <out>/<machine>/<tag>/<name>.csv  and  <out>/<machine>/<tag>/context.json
//
// with <machine> = "sim" for the simulator's numbers and "cpu" for measurements on this host.
// Raw results are immutable: a folder that already holds a CSV is refused unless --force is given
// (`make figures` writes to out/results, never to the committed experiments/results).
//
// Every driver has a tiny default size (seconds, for ctest) and --preset figure for the sizes the
// figures use; --check then asserts the properties the figure relies on and exits 1 when one
// fails. Bad flags or an impossible problem exit 2 with one line, like the ioattn CLI.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace ioattn::exp {

struct DriverArgs {
  std::string out;            // results root
  std::string tag;            // results sub-folder
  std::string preset = "tiny";  // "tiny" (ctest) or "figure" (make figures)
  bool check = false;
  bool force = false;
  uint64_t seed = 20261129;
  bool figure() const { return preset == "figure"; }
};

// Parses argv (and remembers it for context.json); returns an exit code when the driver should
// stop: 0 after --help, 2 after bad flags (one line on stderr).
std::optional<int> parse_args(CLI::App& app, int argc, char** argv);

// Adds --out, --tag, --preset, --check, --force, --seed with `default_tag`.
void add_common_flags(CLI::App& app, DriverArgs& a, std::string_view default_tag);

// <out>/<machine>/<tag>, created; throws UsageError-like std::invalid_argument when it already
// holds a CSV and --force was not given.
std::filesystem::path results_dir(const DriverArgs& a, std::string_view machine);

// context.json beside the CSVs. `extra` adds driver-specific fields (sizes, sources, ...). Paths
// are recorded relative to the repository: every occurrence of the source folder's absolute path
// in a string of the context (the command, a catalog or input folder) is written as a relative
// path (e.g. "simulator/machines"); paths outside the repository stay as they are.
void write_context(const std::filesystem::path& dir, std::string_view machine, const DriverArgs& a,
                   nlohmann::json extra = {});

// `p` relative to the repository when it lies inside it ("experiments/results/h200"; "." for the
// root), else `p` as given.
std::string repo_path(const std::filesystem::path& p);

// A tidy CSV written row by row; a row with the wrong number of cells is a bug and throws.
class Csv {
 public:
  Csv(const std::filesystem::path& file, std::vector<std::string> columns);
  ~Csv();
  Csv(const Csv&) = delete;
  Csv& operator=(const Csv&) = delete;
  void row(const std::vector<std::string>& cells);
  int64_t rows() const { return rows_; }

 private:
  std::filesystem::path file_;
  std::vector<std::string> columns_;
  std::FILE* f_ = nullptr;
  int64_t rows_ = 0;
};

// Cell formatting: integers as is, reals with enough digits to round-trip.
inline std::string cell(int64_t v) { return std::to_string(v); }
inline std::string cell(int v) { return std::to_string(v); }
inline std::string cell(bool v) { return v ? "1" : "0"; }
inline std::string cell(double v) { return fmt::format("{:.9g}", v); }
inline std::string cell(std::string_view v) { return std::string(v); }
inline std::string cell(const char* v) { return std::string(v); }
inline std::string cell(const std::string& v) { return v; }

// --check assertions: each prints one PASS/FAIL line naming what was checked.
class Checker {
 public:
  explicit Checker(bool enabled) : enabled_(enabled) {}
  void expect(bool ok, std::string_view what);
  int failures() const { return failures_; }
  bool enabled() const { return enabled_; }

 private:
  bool enabled_;
  int failures_ = 0;
};

// The CPU model name from /proc/cpuinfo ("unknown" elsewhere).
std::string cpu_model();

// Least-squares slope of log(y) against log(x): y ~ c * x^slope.
double fit_exponent(const std::vector<double>& x, const std::vector<double>& y);

// Runs `body` with error handling shared by all drivers: std::invalid_argument (bad input, the
// simulator's SimError, the reference's ReferenceError) -> one line, exit 2; other exceptions ->
// exit 3. `body` returns the number of failed checks (exit 1 when > 0).
int run_driver(std::string_view name, const std::function<int()>& body);

}  // namespace ioattn::exp

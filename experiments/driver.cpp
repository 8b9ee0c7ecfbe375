// experiments/driver.cpp: shared driver plumbing (flags, results folder, context, CSV, checks).
#include "driver.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <stdexcept>
#include <thread>

#include <unistd.h>

namespace ioattn::exp {

namespace {

std::vector<std::string> g_argv;  // the command, for context.json

// First line of a shell command's stdout, or "" when it fails.
std::string first_line(const std::string& cmd) {
  std::string line;
  if (std::FILE* p = popen(cmd.c_str(), "r")) {
    char buf[512];
    if (std::fgets(buf, sizeof buf, p)) line = buf;
    pclose(p);
  }
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
  return line;
}

std::string git_commit() {
  const std::string src = IOATTN_SOURCE_DIR;
  std::string head = first_line("git -C '" + src + "' rev-parse HEAD 2>/dev/null");
  if (head.empty()) return "unknown";
  // '+dirty' when tracked files differ from HEAD: the numbers may not be reproducible from it.
  const std::string dirty =
      first_line("git -C '" + src + "' status --porcelain --untracked-files=no 2>/dev/null | head -n1");
  return dirty.empty() ? head : head + "+dirty";
}

}  // namespace

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown";
}

namespace {

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

}  // namespace

void add_common_flags(CLI::App& app, DriverArgs& a, std::string_view default_tag) {
  a.tag = std::string(default_tag);
  a.out = std::string(IOATTN_SOURCE_DIR) + "/out/results";
  app.add_option("--out", a.out, "results root; writes <out>/<machine>/<tag>/")->capture_default_str();
  app.add_option("--tag", a.tag, "results sub-folder")->capture_default_str();
  app.add_option("--preset", a.preset, "problem sizes: tiny (ctest) or figure (make figures)")
      ->check(CLI::IsMember({"tiny", "figure"}))
      ->capture_default_str();
  app.add_flag("--check", a.check, "assert the properties the figure relies on (exit 1 if not)");
  app.add_flag("--force", a.force, "overwrite an existing results folder (scratch runs only)");
  app.add_option("--seed", a.seed, "seed for generated inputs")->capture_default_str();
}

std::filesystem::path results_dir(const DriverArgs& a, std::string_view machine) {
  const std::filesystem::path d = std::filesystem::path(a.out) / machine / a.tag;
  if (std::filesystem::exists(d) && !a.force) {
    for (const auto& e : std::filesystem::directory_iterator(d))
      if (e.path().extension() == ".csv")
        throw std::invalid_argument(fmt::format(
            "{} already holds results; raw results are immutable (use a new --tag, or --force "
            "for a scratch folder)", d.string()));
  }
  std::filesystem::create_directories(d);
  return d;
}

std::string repo_path(const std::filesystem::path& p) {
  std::error_code ec;
  const auto root = std::filesystem::weakly_canonical(IOATTN_SOURCE_DIR, ec);
  const auto abs = std::filesystem::weakly_canonical(std::filesystem::absolute(p), ec);
  const auto rel = abs.lexically_relative(root);
  if (ec || rel.empty() || *rel.begin() == "..") return p.string();
  return rel.string();
}

namespace {

// Every string of `j`, with the repository's absolute path written relative ("<root>/x" -> "x",
// "<root>" alone -> ".").
void relativize(nlohmann::json& j, const std::string& root) {
  if (j.is_string()) {
    std::string s = j.get<std::string>();
    const std::string pre = root + "/";
    for (size_t at = s.find(pre); at != std::string::npos; at = s.find(pre, at)) s.erase(at, pre.size());
    if (s == root) s = ".";
    j = s;
  } else if (j.is_array() || j.is_object()) {
    for (auto& v : j) relativize(v, root);
  }
}

}  // namespace

void write_context(const std::filesystem::path& dir, std::string_view machine, const DriverArgs& a,
                   nlohmann::json extra) {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  std::string command;
  for (const auto& s : g_argv) command += (command.empty() ? "" : " ") + s;
  nlohmann::json ctx = {
      {"commit", git_commit()},
      {"date_utc", utc_now()},
      {"machine", machine},
      {"host", {{"name", host}, {"cpu", cpu_model()},
                {"hardware_threads", std::thread::hardware_concurrency()}}},
      {"command", command},
      {"preset", a.preset},
      {"seed", a.seed},
  };
  if (!extra.is_null())
    for (auto& [k, v] : extra.items()) ctx[k] = v;
  std::error_code ec;
  for (const std::string& root : {std::string(IOATTN_SOURCE_DIR),
                                  std::filesystem::weakly_canonical(IOATTN_SOURCE_DIR, ec).string()})
    if (!root.empty() && root != "/") relativize(ctx, root);
  std::ofstream(dir / "context.json") << ctx.dump(1) << "\n";
}

Csv::Csv(const std::filesystem::path& file, std::vector<std::string> columns)
    : file_(file), columns_(std::move(columns)) {
  f_ = std::fopen(file.c_str(), "w");
  if (!f_) throw std::runtime_error("cannot write " + file.string());
  for (size_t i = 0; i < columns_.size(); ++i) fmt::print(f_, "{}{}", i ? "," : "", columns_[i]);
  fmt::print(f_, "\n");
}

Csv::~Csv() {
  if (f_) std::fclose(f_);
  fmt::print("  wrote {} ({} rows)\n", file_.string(), rows_);
}

void Csv::row(const std::vector<std::string>& cells) {
  if (cells.size() != columns_.size())
    throw std::logic_error(fmt::format("{}: row has {} cells for {} columns", file_.string(),
                                       cells.size(), columns_.size()));
  for (size_t i = 0; i < cells.size(); ++i) {
    const std::string& c = cells[i];
    if (c.find_first_of(",\"\n") == std::string::npos) {
      fmt::print(f_, "{}{}", i ? "," : "", c);
    } else {  // RFC 4180: quote the field, double the quotes inside
      std::string q;
      for (char ch : c) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
      fmt::print(f_, "{}\"{}\"", i ? "," : "", q);
    }
  }
  fmt::print(f_, "\n");
  ++rows_;
}

void Checker::expect(bool ok, std::string_view what) {
  if (!enabled_) return;
  fmt::print("  check {}: {}\n", ok ? "PASS" : "FAIL", what);
  if (!ok) ++failures_;
}

double fit_exponent(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() != y.size() || x.size() < 2) return std::nan("");
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  const double n = double(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double lx = std::log(x[i]), ly = std::log(y[i]);
    sx += lx; sy += ly; sxx += lx * lx; sxy += lx * ly;
  }
  return (n * sxy - sx * sy) / (n * sxx - sx * sx);
}

int run_driver(std::string_view name, const std::function<int()>& body) {
  try {
    const int failed = body();
    if (failed > 0) {
      fmt::print(stderr, "{}: {} check(s) failed\n", name, failed);
      return 1;
    }
    return 0;
  } catch (const std::invalid_argument& e) {
    fmt::print(stderr, "{}: error: {}\n", name, e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}: internal error: {}\n", name, e.what());
    return 3;
  }
}

std::optional<int> parse_args(CLI::App& app, int argc, char** argv) {
  g_argv.assign(argv, argv + argc);
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    fmt::print(stderr, "{}: error: {}\n", app.get_name(), e.what());
    return 2;
  }
  return std::nullopt;
}

}  // namespace ioattn::exp

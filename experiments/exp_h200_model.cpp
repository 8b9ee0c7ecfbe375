// experiments/exp_h200_model.cpp: the simulator's prediction for every ioattn kernel run that the
// committed H200 benchmark measured, so a figure can set modeled HBM bytes and time beside the
// measured DRAM bytes (Nsight Compute) and time of the same run.
//
// Input: the committed H200 CSV files (experiments/results/h200/<tag>/*.csv with at least
// impl,dtype,head_dim,causal,seqlen,batch,heads; br and bc are used when present). For each
// distinct ioattn run (impl `ioattn:vNN...`), the variant's strategy comes from the kernel registry
// and the tile from the row's br/bc, else from the simulator's block-size search; SDPA rows are
// skipped (their tiles are not ours to know). With no H200 CSV the driver writes a header-only
// CSV and says so (exit 0: nothing to model is not an error).
//
//   exp_h200_model [--h200 DIR] [--out DIR] [--check]
//
// Writes sim/h200_model/model.csv.
#include <csv.h>

#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <set>

#include "driver.hpp"
#include "kernels/launch.hpp"
#include "sim_common.hpp"

using namespace ioattn;

namespace {

// One CSV file as header -> column index and rows of cells, parsed by libcsv (RFC 4180: quoted
// fields, e.g. an error message with commas in it, are one cell).
struct Table {
  std::map<std::string, size_t> col;
  std::vector<std::vector<std::string>> rows;
};

Table read_table(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  struct Acc {
    std::vector<std::vector<std::string>> records;
    std::vector<std::string> cells;
  } acc;
  csv_parser parser;
  if (csv_init(&parser, CSV_APPEND_NULL) != 0) throw std::runtime_error("libcsv: csv_init failed");
  auto on_field = [](void* s, size_t len, void* data) {
    static_cast<Acc*>(data)->cells.emplace_back(static_cast<const char*>(s), len);
  };
  auto on_record = [](int /*terminator*/, void* data) {
    auto* a = static_cast<Acc*>(data);
    a->records.push_back(std::move(a->cells));
    a->cells.clear();
  };
  const size_t used = csv_parse(&parser, text.data(), text.size(), on_field, on_record, &acc);
  const bool ok = used == text.size() && csv_fini(&parser, on_field, on_record, &acc) == 0;
  const std::string why = ok ? "" : csv_strerror(csv_error(&parser));
  csv_free(&parser);
  if (!ok) throw std::invalid_argument(file.string() + ": malformed CSV (" + why + ")");
  Table t;
  if (acc.records.empty()) return t;
  for (size_t i = 0; i < acc.records[0].size(); ++i) t.col[acc.records[0][i]] = i;
  t.rows.assign(std::make_move_iterator(acc.records.begin() + 1), std::make_move_iterator(acc.records.end()));
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Simulator predictions for the committed H200 ioattn runs", "exp_h200_model"};
  exp::DriverArgs a;
  exp::add_common_flags(app, a, "h200_model");
  std::string h200_dir = std::string(IOATTN_SOURCE_DIR) + "/experiments/results/h200";
  app.add_option("--h200", h200_dir, "folder of committed H200 results (<tag>/*.csv)")->capture_default_str();
  if (auto rc = exp::parse_args(app, argc, argv)) return *rc;

  return exp::run_driver("exp_h200_model", [&] {
    exp::Checker check(a.check);
    const auto catalog = sim::load_catalog(sim::default_catalog_dir());
    const auto& m = exp::pick_machine(catalog, "h200");
    const auto dir = exp::results_dir(a, "sim");
    exp::Csv csv(dir / "model.csv",
                 {"kind", "machine", "impl", "variant", "strategy", "dtype", "head_dim", "causal", "seqlen", "batch",
                  "heads", "br", "bc", "tile_source", "hbm_read_bytes", "hbm_write_bytes", "hbm_no_l2_bytes",
                  "hbm_compulsory_bytes", "l2_bytes", "time_s", "bound", "l2_regime", "source"});

    const std::regex variant_re("ioattn:(v[0-9]+[a-z]*)");  // v03b is its own rung, not v03
    std::set<std::string> seen;
    int64_t modeled = 0, files = 0;
    std::vector<std::filesystem::path> inputs;
    if (std::filesystem::is_directory(h200_dir))
      for (const auto& tag : std::filesystem::directory_iterator(h200_dir))
        if (tag.is_directory())
          for (const auto& f : std::filesystem::directory_iterator(tag.path()))
            if (f.path().extension() == ".csv") inputs.push_back(f.path());
    std::sort(inputs.begin(), inputs.end());
    for (const auto& file : inputs) {
      const auto t = read_table(file);
      bool usable = true;
      for (const char* c : {"impl", "dtype", "head_dim", "causal", "seqlen", "batch", "heads"})
        usable &= t.col.count(c) > 0;
      if (!usable) continue;
      ++files;
      auto get = [&](const std::vector<std::string>& r, const std::string& c) -> std::string {
        const auto it = t.col.find(c);
        return it != t.col.end() && it->second < r.size() ? r[it->second] : std::string{};
      };
      for (const auto& r : t.rows) {
        std::smatch mm;
        const std::string impl = get(r, "impl");
        if (!std::regex_search(impl, mm, variant_re)) continue;
        const kernels::KernelInfo* k = nullptr;
        for (const auto& info : kernels::registry()) {
          const std::string name(info.name), rung = mm[1].str();
          if (name == rung || name.rfind(rung + "_", 0) == 0) k = &info;  // "v03" is not "v03b_..."
        }
        if (!k) continue;  // a variant this build's registry does not know
        const auto strategy = sim::parse_strategy(k->strategy);
        if (!strategy) continue;
        AttnProblem p;
        const auto dt = parse_dtype(get(r, "dtype"));
        if (!dt) continue;
        p.dtype = *dt;
        p.head_dim = std::stoll(get(r, "head_dim"));
        const std::string c = get(r, "causal");
        p.causal = c == "1" || c == "True" || c == "true";
        p.seqlen_q = p.seqlen_k = std::stoll(get(r, "seqlen"));
        p.batch = std::stoll(get(r, "batch"));
        p.heads_q = p.heads_kv = std::stoll(get(r, "heads"));
        if (p.validate()) continue;
        sim::Tiling tl{.strategy = *strategy};
        std::string tile_source = "none";
        const std::string br = get(r, "br"), bc = get(r, "bc");
        if (*strategy != sim::Strategy::standard) {
          if (!br.empty() && !bc.empty() && std::stoll(br) > 0 && std::stoll(bc) > 0) {
            tl.Br = std::stoll(br);
            tl.Bc = std::stoll(bc);
            tile_source = "measured run";
          } else {
            const auto choice = sim::search_block_sizes(p, m, tl, {});
            tl.Br = choice.Br > 0 ? choice.Br : 64;
            tl.Bc = choice.Bc > 0 ? choice.Bc : 64;
            tile_source = "simulator search";
          }
        }
        const std::string key = fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}", impl, get(r, "dtype"), p.head_dim,
                                            p.causal, p.seqlen_q, p.batch, p.heads_q, tl.Br, tl.Bc);
        if (!seen.insert(key).second) continue;
        const auto res = sim::simulate_unchecked(p, m, tl, {});
        csv.row({"modeled", m.name, impl, mm[1].str(), std::string(k->strategy), get(r, "dtype"),
                 exp::cell(p.head_dim), exp::cell(p.causal), exp::cell(p.seqlen_q), exp::cell(p.batch),
                 exp::cell(p.heads_q), exp::cell(tile_source == "none" ? int64_t{0} : tl.Br),
                 exp::cell(tile_source == "none" ? int64_t{0} : tl.Bc), tile_source, exp::cell(res.hbm.read),
                 exp::cell(res.hbm.write), exp::cell(res.hbm_no_l2.total()), exp::cell(res.hbm_compulsory.total()),
                 exp::cell(res.l2.total()), exp::cell(res.time_s), res.bound, res.l2_regime,
                 file.lexically_relative(IOATTN_SOURCE_DIR).string()});
        ++modeled;
      }
    }
    if (files == 0) fmt::print("  no committed H200 CSV under {}: nothing to model (header-only CSV)\n", h200_dir);
    check.expect(files == 0 || modeled > 0, "every committed H200 result with ioattn runs yields modeled rows");
    exp::write_context(dir, "sim", a, {{"h200_dir", h200_dir}, {"files", files}, {"rows", modeled}});
    return check.failures();
  });
}

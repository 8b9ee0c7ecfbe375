// experiments/exp_h200_model.cpp: the simulator's prediction for every ioattn kernel run of the
// canonical H200 measurement, made with the launch configuration that run recorded, so a figure
// can set modeled HBM bytes and time beside the measured DRAM bytes (Nsight Compute) and time.
//
// Input: the H200 results folder (--h200, default experiments/results/h200). The runs modeled are
// the tags named in its CANONICAL file (one `<role> <tag>` line per role: bench, ncu, tiles;
// `--runs all` takes every tag instead). Each CSV of those tags with at least
// impl,dtype,head_dim,causal,seqlen,batch,heads is read; each distinct ioattn row (impl
// `ioattn:vNN...`, one row per tag x run x launch configuration) becomes one output row. The
// variant's strategy comes from the kernel registry; everything else from the measured row:
//   br, bc         the tile (Tiling::Br, Bc)
//   ctas_per_sm    resident CTAs per SM (Tiling::ctas_per_cu: the occupancy of the wave model)
//   grid_order     the CTA dispatch order (Tiling::grid_order; bh_major, bh_major_splits,
//                  qblock_major, qblock_major_rev are modeled)
//   splits         split-KV's key splits (Tiling::splits)
//   stages         copied to the output; the model ignores it (its LDS footprints are
//                  single-buffered, and the occupancy is taken from ctas_per_sm instead: where
//                  the model's own footprint admits fewer CTAs, model_note says so)
// Nothing is filled in: a row without these columns (runs made before the benchmark recorded the
// launch configuration) gets no prediction. `model_status` says for every row why:
//   ok                                          modeled
//   no launch config in the measured row (...)  the row lacks (or has empty) config columns
//   grid order X not modeled by the simulator   e.g. v02's bh_major_chunks (the simulator's FA1
//                                               nest is one CTA per (batch, head)), rows_strided
//   not measured: ...                           the row records an error or a status other than ok
//   not in this build's kernel registry, invalid problem: ...
// The unfused strategy (v01, `standard`) has no tile and no dispatch order in the model: its
// rows are modeled without a launch configuration (config_source says so). SDPA rows are skipped
// (their tiles are not ours to know). With no H200 CSV the driver writes a header-only CSV and
// says so (exit 0: nothing to model is not an error).
//
// Backward rows (impl `ioattn:bwdNN...`, from bench.csv with pass bwd or ncu.csv with pass bwd)
// are modeled with `--pass bwd` (Options::pass): the strategy and the dQ mode (Tiling::dq,
// atomic | separate) come from the backward registry (kernels/backward.hpp: strategy, dq_mode),
// the tile, occupancy and order from the row (the backward_config the benchmark and ncu_collect
// recorded: br, bc of the K/V-outer kernel, its ctas_per_sm). The backward's order kv_bh_major
// (one CTA per (batch, head, K/V block), the blocks of one head together) is the simulator's
// bh_major over the K/V-outer nest. Output columns `pass` (fwd | bwd) and `dq_mode` ('' for a
// forward) say which model a row got. Forward+backward rows (pass fwdbwd) are not modeled: the
// forward and the backward of such a row use two different tiles, and each pass has its own row.
//
// --check: every modeled row lies within [compulsory, no-L2] (read and write); a row without a
// launch configuration carries no prediction; an unmasked MHA fa2 row under a block-major order
// predicts at least what bh_major would (verify/simulator's grid_orders property, on the real
// rows); when any row carries a launch configuration, at least one is modeled.
//
//   exp_h200_model [--h200 DIR] [--runs canonical|all] [--out DIR] [--check]
//
// Writes sim/h200_model/model.csv.
#include <csv.h>

#include <cmath>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "driver.hpp"
#include "kernels/backward.hpp"
#include "kernels/design.hpp"
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

// The tags named by <h200>/CANONICAL ("<role> <tag>" per line, '#' comments), in file order.
std::vector<std::string> canonical_tags(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::vector<std::string> tags;
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (const auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    std::istringstream ss(line);
    std::string role, tag, extra;
    if (!(ss >> role)) continue;
    if (!(ss >> tag) || (ss >> extra))
      throw std::invalid_argument(fmt::format("{}:{}: expected '<role> <tag>'", file.string(), n));
    if (std::find(tags.begin(), tags.end(), tag) == tags.end()) tags.push_back(tag);
  }
  return tags;
}

bool positive_int(const std::string& s, int64_t& v) {
  if (s.empty()) return false;
  try {
    size_t used = 0;
    const double x = std::stod(s, &used);  // "128" and "128.0" alike
    if (used != s.size() || x != std::floor(x) || x < 1) return false;
    v = static_cast<int64_t>(x);
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

bool unmasked_mha(const AttnProblem& p) {
  return !p.causal && p.window_left < 0 && p.window_right < 0 && p.heads_q == p.heads_kv;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Simulator predictions for the canonical H200 ioattn runs, with each run's launch config",
               "exp_h200_model"};
  exp::DriverArgs a;
  exp::add_common_flags(app, a, "h200_model");
  std::string h200_dir = std::string(IOATTN_SOURCE_DIR) + "/experiments/results/h200";
  std::string runs = "canonical";
  app.add_option("--h200", h200_dir, "folder of H200 results (<tag>/*.csv, CANONICAL)")->capture_default_str();
  app.add_option("--runs", runs, "canonical: the tags named in <h200>/CANONICAL (every tag if it is absent); all")
      ->check(CLI::IsMember({"canonical", "all"}))
      ->capture_default_str();
  if (auto rc = exp::parse_args(app, argc, argv)) return *rc;

  return exp::run_driver("exp_h200_model", [&] {
    exp::Checker check(a.check);
    const auto catalog = sim::load_catalog(sim::default_catalog_dir());
    const auto& m = exp::pick_machine(catalog, "h200");
    const auto dir = exp::results_dir(a, "sim");
    exp::Csv csv(dir / "model.csv",
                 {"kind", "machine", "run", "impl", "variant", "strategy", "pass", "dq_mode", "dtype", "head_dim", "causal", "seqlen",
                  "batch", "heads", "br", "bc", "stages", "ctas_per_sm", "grid_order", "splits", "config_source",
                  "model_status", "hbm_read_bytes", "hbm_write_bytes", "hbm_no_l2_bytes", "hbm_compulsory_read_bytes",
                  "hbm_compulsory_write_bytes", "hbm_compulsory_bytes", "hbm_read_bytes_bh_major", "l2_bytes",
                  "ctas_per_cu_model", "waves", "time_s", "bound", "l2_regime", "model_note", "source",
                  "ceiling_time_s", "design"});

    // The runs to model.
    const std::filesystem::path root(h200_dir);
    std::vector<std::string> tags;
    std::string runs_from = "every tag";
    if (std::filesystem::is_directory(root)) {
      if (runs == "canonical" && std::filesystem::is_regular_file(root / "CANONICAL")) {
        tags = canonical_tags(root / "CANONICAL");
        runs_from = "CANONICAL";
        for (const auto& t : tags)
          if (!std::filesystem::is_directory(root / t))
            throw std::invalid_argument(fmt::format("{}/CANONICAL names run {}, which has no folder", h200_dir, t));
      } else {
        for (const auto& e : std::filesystem::directory_iterator(root))
          if (e.is_directory()) tags.push_back(e.path().filename().string());
        std::sort(tags.begin(), tags.end());
      }
    }

    const std::regex variant_re("ioattn:(v[0-9]+[a-z]*)");  // v03b is its own rung, not v03
    const std::regex backward_re("ioattn:(bwd[0-9]+[a-z]*)");  // bwd01b is its own rung, not bwd01
    std::set<std::string> seen;
    std::map<std::string, int64_t> by_status;
    int64_t modeled = 0, files = 0, with_config = 0, nocfg_with_prediction = 0;
    bool all_within = true, order_bound = true;
    for (const auto& tag : tags) {
      std::vector<std::filesystem::path> inputs;
      for (const auto& f : std::filesystem::directory_iterator(root / tag))
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
          std::string pass_col = get(r, "pass");
          if (pass_col.empty()) pass_col = "fwd";  // a file without the column is all forward
          const bool is_bwd = std::regex_search(impl, mm, backward_re);
          if (!is_bwd && !std::regex_search(impl, mm, variant_re)) continue;
          if (is_bwd ? pass_col != "bwd" : pass_col != "fwd") continue;  // fwdbwd: see the header
          const Pass pass = is_bwd ? Pass::bwd : Pass::fwd;
          const std::string rung = mm[1].str();
          const std::string br = get(r, "br"), bc = get(r, "bc"), stages = get(r, "stages"),
                            ctas = get(r, "ctas_per_sm"), order = get(r, "grid_order"), splits = get(r, "splits");
          const std::string key = fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}", tag, pass_col, impl,
                                              get(r, "dtype"),
                                              get(r, "head_dim"), get(r, "causal"), get(r, "seqlen"),
                                              get(r, "batch"), get(r, "heads"), br, bc, ctas, order, splits);
          if (!seen.insert(key).second) continue;  // samples and the other files of a run repeat a row

          std::string status = "ok", config_source, strategy_name, note, dq_name, design_name;
          bool found = false;
          std::optional<sim::DqMode> dq;
          if (!is_bwd) {
            for (const auto& info : kernels::registry()) {
              const std::string name(info.name);
              if (name == rung || name.rfind(rung + "_", 0) == 0) {  // "v03" is not "v03b_..."
                found = true;
                strategy_name = std::string(info.strategy);
                design_name = std::string(kernels::design(info.name));  // kernels/design.hpp
              }
            }
          } else {
            for (const auto& info : kernels::backward_registry()) {
              const std::string name(info.name);
              if (name == rung || name.rfind(rung + "_", 0) == 0) {  // "bwd01" is not "bwd01b_..."
                found = true;
                strategy_name = std::string(info.strategy);
                design_name = std::string(kernels::design(info.name));
                dq_name = std::string(info.dq_mode);
                for (auto v : {sim::DqMode::atomic, sim::DqMode::separate})
                  if (sim::dq_mode_name(v) == info.dq_mode) dq = v;
              }
            }
          }
          std::optional<sim::Strategy> strategy;
          if (found) strategy = sim::parse_strategy(strategy_name);
          AttnProblem p;
          if (!found) status = is_bwd ? "not in this build's backward registry" : "not in this build's kernel registry";
          else if (!strategy) status = "registry strategy " + strategy_name + " unknown to the simulator";
          else if (is_bwd && !sim::strategy_info(*strategy).bwd)
            status = "registry strategy " + strategy_name + " has no backward model";
          else if (is_bwd && !dq) status = "registry dq_mode " + dq_name + " unknown to the simulator";
          if (status == "ok") {
            const auto dt = parse_dtype(get(r, "dtype"));
            int64_t d = 0, n = 0, b = 0, h = 0;
            if (!dt || !positive_int(get(r, "head_dim"), d) || !positive_int(get(r, "seqlen"), n) ||
                !positive_int(get(r, "batch"), b) || !positive_int(get(r, "heads"), h)) {
              status = "invalid problem: unreadable dtype, head_dim, seqlen, batch or heads";
            } else {
              p.dtype = *dt;
              p.head_dim = d;
              const std::string c = get(r, "causal");
              p.causal = c == "1" || c == "True" || c == "true" || c == "1.0";  // as the causal column below
              p.seqlen_q = p.seqlen_k = n;
              p.batch = b;
              p.heads_q = p.heads_kv = h;
              if (auto e = p.validate()) status = "invalid problem: " + *e;
            }
          }
          const std::string err = get(r, "error"), st = get(r, "status");
          if (status == "ok" && (!err.empty() || (!st.empty() && st != "ok")))
            status = "not measured: " + (err.empty() ? "status " + st : err.substr(0, 120));

          sim::Tiling tl{.strategy = strategy.value_or(sim::Strategy::fa2)};
          if (status == "ok" && !sim::strategy_info(*strategy).takes_tiles) {
            config_source = "none (the unfused model uses no tile or dispatch order)";
          } else if (status == "ok") {
            std::vector<std::string> missing;
            int64_t vbr = 0, vbc = 0, vctas = 0, vsplits = 0;
            if (!positive_int(br, vbr)) missing.push_back("br");
            if (!positive_int(bc, vbc)) missing.push_back("bc");
            if (!positive_int(ctas, vctas)) missing.push_back("ctas_per_sm");
            if (order.empty()) missing.push_back("grid_order");
            if (sim::strategy_info(*strategy).takes_splits && !positive_int(splits, vsplits)) missing.push_back("splits");
            if (!missing.empty()) {
              std::string list;
              for (const auto& s : missing) list += (list.empty() ? "" : ", ") + s;
              status = "no launch config in the measured row (" + list + ")";
            } else {
              ++with_config;
              config_source = "measured row";
              // The backward's K/V-outer kernel in key-block order is bh_major over the K/V-outer nest.
              const auto go = is_bwd && order == "kv_bh_major" ? std::optional(sim::GridOrder::bh_major)
                              : is_bwd                         ? std::nullopt
                                                               : sim::parse_grid_order(order);
              if (*strategy == sim::Strategy::fa1)
                status = "grid order " + order + " not modeled by the simulator (its fa1 nest is one CTA per "
                         "(batch, head) walking every block)";
              else if (!go)
                status = "grid order " + order + " not modeled by the simulator";
              else {
                tl.Br = vbr;
                tl.Bc = vbc;
                tl.ctas_per_cu = vctas;
                tl.grid_order = *go;
                tl.splits = sim::strategy_info(*strategy).takes_splits ? vsplits : 1;
                if (dq) tl.dq = *dq;
                if (auto d = sim::parse_design(design_name)) tl.design = *d;  // the expected time's design
                // The measured occupancy wins where the model's footprint disagrees (the note says so).
                if (auto e = sim::check_fits(p, m, tl, pass))
                  note = "the simulator's footprint admits fewer CTAs per SM; modeled at the measured "
                         "ctas_per_sm (" + *e + ")";
              }
            }
          }

          // hbm_read_bytes .. l2_regime: empty without a prediction.
          std::vector<std::string> pred(13);
          double ceiling = 0.0;
          if (status == "ok") {
            sim::Options opt;
            opt.pass = pass;
            const auto res = sim::simulate_unchecked(p, m, tl, opt);
            ceiling = res.ceiling_time_s;
            sim::Tiling bh = tl;
            bh.grid_order = sim::GridOrder::bh_major;
            const auto res_bh = sim::simulate_unchecked(p, m, bh, opt);
            // waves: of the main kernel (the forward's first; the backward's K/V-outer bwd_main or bwd_dkdv).
            const sim::KernelResult* mk = &res.kernels.front();
            for (const auto& kr : res.kernels)
              if (is_bwd && (kr.name == "bwd_main" || kr.name == "bwd_dkdv")) mk = &kr;
            const sim::KernelResult& main_kernel = *mk;
            pred = {exp::cell(res.hbm.read), exp::cell(res.hbm.write), exp::cell(res.hbm_no_l2.total()),
                    exp::cell(res.hbm_compulsory.read), exp::cell(res.hbm_compulsory.write),
                    exp::cell(res.hbm_compulsory.total()), exp::cell(res_bh.hbm.read), exp::cell(res.l2.total()),
                    exp::cell(res.ctas_per_cu), exp::cell(main_kernel.waves), exp::cell(res.time_s),
                    res.bound, res.l2_regime};
            all_within &= res.hbm.read >= res.hbm_compulsory.read && res.hbm.write >= res.hbm_compulsory.write &&
                          res.hbm.read <= res.hbm_no_l2.read && res.hbm.write <= res.hbm_no_l2.write;
            if (!is_bwd && *strategy == sim::Strategy::fa2 && unmasked_mha(p) &&
                (tl.grid_order == sim::GridOrder::qblock_major || tl.grid_order == sim::GridOrder::qblock_major_rev))
              order_bound &= res.hbm.total() >= res_bh.hbm.total();
            ++modeled;
          }
          if (config_source.empty())
            for (const auto& c : pred) nocfg_with_prediction += c.empty() ? 0 : 1;
          ++by_status[status.substr(0, std::min(status.find(" ("), status.find(": ")))];
          const std::string causal = get(r, "causal");
          const bool is_causal = causal == "1" || causal == "True" || causal == "true" || causal == "1.0";
          std::vector<std::string> row = {"modeled", m.name, tag, impl, rung, strategy_name, pass_col, dq_name,
                                          get(r, "dtype"),
                                          get(r, "head_dim"), is_causal ? "1" : "0", get(r, "seqlen"), get(r, "batch"),
                                          get(r, "heads"), br, bc, stages, ctas, order, splits, config_source,
                                          status};
          row.insert(row.end(), pred.begin(), pred.end());
          row.push_back(note);
          row.push_back(exp::repo_path(file));
          // time_s is the expected time of the variant's design; ceiling_time_s the roofline.
          row.push_back(status == "ok" ? exp::cell(ceiling) : std::string{});
          row.push_back(status == "ok" ? design_name : std::string{});
          csv.row(row);
        }
      }
    }
    if (files == 0) fmt::print("  no H200 CSV in the runs of {} ({}): nothing to model (header-only CSV)\n", h200_dir, runs_from);
    for (const auto& [s, n] : by_status) fmt::print("  {} row(s): {}\n", n, s);
    check.expect(all_within, "every modeled row lies within [compulsory, no-L2] (read and write)");
    check.expect(nocfg_with_prediction == 0, "a row without a launch configuration carries no prediction");
    check.expect(order_bound, "unmasked MHA fa2 rows under a block-major order predict at least bh_major's bytes");
    check.expect(with_config == 0 || modeled > 0, "when rows carry a launch configuration, at least one is modeled");
    nlohmann::json st = nlohmann::json::object();
    for (const auto& [s, n] : by_status) st[s] = n;
    exp::write_context(dir, "sim", a,
                       {{"h200_dir", exp::repo_path(root)}, {"runs", tags}, {"runs_from", runs_from},
                        {"files", files}, {"rows", csv.rows()}, {"modeled", modeled}, {"model_status", st}});
    return check.failures();
  });
}

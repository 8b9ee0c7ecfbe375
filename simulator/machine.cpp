// simulator/machine.cpp: the machine catalog, read from machines/*.json.
//
// Each number in a machine file is an object {"value": number, "source": "where it came from"};
// a number without a source is a malformed file. Optional fields may be absent (fp8 rate,
// Infinity Cache, measured ceilings).
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "simulator/simulator.hpp"

#ifndef IOATTN_MACHINES_DIR
#define IOATTN_MACHINES_DIR "simulator/machines"
#endif

namespace ioattn::sim {

namespace {

using nlohmann::json;

Sourced read_sourced(const json& j, const std::string& key, const std::string& file) {
  if (!j.contains(key)) throw SimError(fmt::format("machine file {}: missing field '{}'", file, key));
  const json& v = j.at(key);
  if (!v.is_object() || !v.contains("value") || !v.at("value").is_number() || !v.contains("source") ||
      !v.at("source").is_string() || v.at("source").get<std::string>().empty())
    throw SimError(fmt::format("machine file {}: field '{}' must be {{\"value\": number, \"source\": "
                               "\"non-empty text\"}}", file, key));
  Sourced s{v.at("value").get<double>(), v.at("source").get<std::string>()};
  if (!(s.value > 0.0))
    throw SimError(fmt::format("machine file {}: field '{}' must be positive (got {})", file, key, s.value));
  return s;
}

std::optional<Sourced> read_optional(const json& j, const std::string& key, const std::string& file) {
  if (!j.contains(key)) return std::nullopt;
  return read_sourced(j, key, file);
}

std::string read_string(const json& j, const std::string& key, const std::string& file, bool required) {
  if (!j.contains(key)) {
    if (required) throw SimError(fmt::format("machine file {}: missing field '{}'", file, key));
    return {};
  }
  if (!j.at(key).is_string()) throw SimError(fmt::format("machine file {}: field '{}' must be a string", file, key));
  return j.at(key).get<std::string>();
}

std::string lower(std::string_view s) {
  std::string r(s);
  std::transform(r.begin(), r.end(), r.begin(), [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  return r;
}

}  // namespace

int64_t Machine::llc_bytes() const {
  return static_cast<int64_t>(infinity_cache_bytes ? infinity_cache_bytes->value : l2_bytes.value);
}
std::string Machine::llc_name() const { return infinity_cache_bytes ? "Infinity Cache" : "L2"; }

Machine load_machine(const std::filesystem::path& file) {
  const std::string f = file.string();
  std::ifstream in(file);
  if (!in) throw SimError(fmt::format("cannot open machine file {}", f));
  json j;
  try {
    j = json::parse(in);
  } catch (const json::parse_error& e) {
    throw SimError(fmt::format("machine file {}: malformed JSON ({})", f, e.what()));
  }
  if (!j.is_object()) throw SimError(fmt::format("machine file {}: top level must be an object", f));
  Machine m;
  m.name = read_string(j, "name", f, true);
  m.display_name = read_string(j, "display_name", f, true);
  m.vendor = read_string(j, "vendor", f, true);
  m.arch = read_string(j, "arch", f, true);
  m.notes = read_string(j, "notes", f, false);
  m.compute_units = read_sourced(j, "compute_units", f);
  m.wave_size = read_sourced(j, "wave_size", f);
  m.clock_hz = read_sourced(j, "clock_hz", f);
  m.lds_bytes_per_cu = read_sourced(j, "lds_bytes_per_cu", f);
  m.lds_bytes_per_cta = read_sourced(j, "lds_bytes_per_cta", f);
  m.register_bytes_per_cu = read_sourced(j, "register_bytes_per_cu", f);
  m.max_ctas_per_cu = read_sourced(j, "max_ctas_per_cu", f);
  m.l2_bytes = read_sourced(j, "l2_bytes", f);
  m.infinity_cache_bytes = read_optional(j, "infinity_cache_bytes", f);
  m.hbm_capacity_bytes = read_sourced(j, "hbm_capacity_bytes", f);
  m.hbm_bandwidth = read_sourced(j, "hbm_bandwidth", f);
  m.matrix_fp16 = read_sourced(j, "matrix_fp16", f);
  m.matrix_bf16 = read_sourced(j, "matrix_bf16", f);
  m.matrix_fp8 = read_optional(j, "matrix_fp8", f);
  m.matrix_fp32 = read_sourced(j, "matrix_fp32", f);
  m.vector_fp32 = read_sourced(j, "vector_fp32", f);
  m.launch_overhead_s = read_sourced(j, "launch_overhead_s", f);
  m.sfu_per_cu_per_clock = read_sourced(j, "sfu_per_cu_per_clock", f);
  m.lds_bytes_per_cu_per_clock = read_sourced(j, "lds_bytes_per_cu_per_clock", f);
  m.l2_bandwidth = read_sourced(j, "l2_bandwidth", f);
  m.calibrated_mma_sync_efficiency = read_optional(j, "calibrated_mma_sync_efficiency", f);
  m.calibrated_wgmma_efficiency = read_optional(j, "calibrated_wgmma_efficiency", f);
  m.calibrated_mfma_efficiency = read_optional(j, "calibrated_mfma_efficiency", f);
  m.calibrated_lds_scalar_efficiency = read_optional(j, "calibrated_lds_scalar_efficiency", f);
  m.calibrated_cta_fixed_s = read_optional(j, "calibrated_cta_fixed_s", f);
  m.calibrated_ws_wgmma_efficiency = read_optional(j, "calibrated_ws_wgmma_efficiency", f);
  m.calibrated_ws_wgmma_head_dim_exponent = read_optional(j, "calibrated_ws_wgmma_head_dim_exponent", f);
  m.calibrated_ring_stage_latency_s = read_optional(j, "calibrated_ring_stage_latency_s", f);
  if (m.calibrated_ring_stage_latency_s && !(m.calibrated_ring_stage_latency_s->value >= 0.0))
    throw SimError(fmt::format("machine file {}: calibrated_ring_stage_latency_s must be >= 0 (got {})", f,
                               m.calibrated_ring_stage_latency_s->value));
  m.calibrated_inline_kv_exposed = read_optional(j, "calibrated_inline_kv_exposed", f);
  if (m.calibrated_inline_kv_exposed &&
      !(m.calibrated_inline_kv_exposed->value >= 0.0 && m.calibrated_inline_kv_exposed->value <= 1.0))
    throw SimError(fmt::format("machine file {}: calibrated_inline_kv_exposed must be in [0, 1] (got {})", f,
                               m.calibrated_inline_kv_exposed->value));
  m.calibrated_page_visit_s = read_optional(j, "calibrated_page_visit_s", f);
  if (m.calibrated_page_visit_s && !(m.calibrated_page_visit_s->value >= 0.0))
    throw SimError(fmt::format("machine file {}: calibrated_page_visit_s must be >= 0 (got {})", f,
                               m.calibrated_page_visit_s->value));
  m.calibrated_bwd_mma_sync_efficiency = read_optional(j, "calibrated_bwd_mma_sync_efficiency", f);
  m.calibrated_bwd_wgmma_efficiency = read_optional(j, "calibrated_bwd_wgmma_efficiency", f);
  m.calibrated_atomic_adds_per_cu_per_clock = read_optional(j, "calibrated_atomic_adds_per_cu_per_clock", f);
  m.calibrated_cta_drift_tiles_per_tile = read_optional(j, "calibrated_cta_drift_tiles_per_tile", f);
  if (m.calibrated_cta_drift_tiles_per_tile && !(m.calibrated_cta_drift_tiles_per_tile->value >= 0.0))
    throw SimError(fmt::format("machine file {}: calibrated_cta_drift_tiles_per_tile must be >= 0 (got {})", f,
                               m.calibrated_cta_drift_tiles_per_tile->value));
  if (m.calibrated_atomic_adds_per_cu_per_clock && !(m.calibrated_atomic_adds_per_cu_per_clock->value > 0.0))
    throw SimError(fmt::format("machine file {}: calibrated_atomic_adds_per_cu_per_clock must be > 0 (got {})", f,
                               m.calibrated_atomic_adds_per_cu_per_clock->value));
  for (const auto* c : {&m.calibrated_mma_sync_efficiency, &m.calibrated_wgmma_efficiency,
                        &m.calibrated_mfma_efficiency, &m.calibrated_lds_scalar_efficiency, &m.calibrated_ws_wgmma_efficiency,
                        &m.calibrated_bwd_mma_sync_efficiency, &m.calibrated_bwd_wgmma_efficiency})
    if (*c && (*c)->value > 1.0)
      throw SimError(fmt::format("machine file {}: a calibrated efficiency must be in (0, 1] (got {})", f, (*c)->value));
  m.measured_bandwidth = read_optional(j, "measured_bandwidth", f);
  m.measured_matrix_bf16 = read_optional(j, "measured_matrix_bf16", f);
  m.measured_matrix_fp16 = read_optional(j, "measured_matrix_fp16", f);
  m.measured_matrix_fp8 = read_optional(j, "measured_matrix_fp8", f);
  m.measured_vector_fp32 = read_optional(j, "measured_vector_fp32", f);
  if (m.lds_bytes_per_cta.value > m.lds_bytes_per_cu.value)
    throw SimError(fmt::format("machine file {}: lds_bytes_per_cta exceeds lds_bytes_per_cu", f));
  return m;
}

std::vector<Machine> load_catalog(const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    throw SimError(fmt::format("machine catalog folder {} not found (set IOATTN_MACHINES)", dir.string()));
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    if (entry.path().extension() == ".json") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  std::vector<Machine> out;
  for (const auto& f : files) out.push_back(load_machine(f));
  if (out.empty()) throw SimError(fmt::format("machine catalog folder {} has no *.json", dir.string()));
  return out;
}

std::filesystem::path default_catalog_dir() {
  if (const char* env = std::getenv("IOATTN_MACHINES"); env && *env) return env;
  return IOATTN_MACHINES_DIR;
}

const Machine& find_machine(const std::vector<Machine>& catalog, std::string_view name) {
  const std::string want = lower(name);
  for (const auto& m : catalog)
    if (lower(m.name) == want) return m;
  std::string known;
  for (const auto& m : catalog) known += (known.empty() ? "" : ", ") + m.name;
  throw SimError(fmt::format("unknown machine '{}' (known: {})", name, known));
}

}  // namespace ioattn::sim

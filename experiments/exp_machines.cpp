// experiments/exp_machines.cpp: the simulator's machine catalog as tidy CSV, for the paper's table
// and for every number the paper quotes about a device.
//
//   exp_machines [--out DIR] [--check]
//
// Writes sim/machines/machines.csv (one row per catalog machine, derived units: TB/s, TFLOP/s,
// KiB, MiB, GB, and the bf16 ridge point = matrix_bf16 / hbm_bandwidth in FLOP/byte), and
// sim/machines/sources.csv (machine, field, value, source): every number with where it came from.
// The paper's block sizes (Bc = ceil(M/4d), Br = min(Bc, d), M = LDS per CU in elements) are
// included for bf16 at d = 64 and 128. Catalog numbers are data, so --preset does not matter here.
#include <cmath>

#include "driver.hpp"
#include "sim_common.hpp"

using namespace ioattn;

int main(int argc, char** argv) {
  CLI::App app{"Machine catalog as CSV (machines.csv, sources.csv)", "exp_machines"};
  exp::DriverArgs a;
  exp::add_common_flags(app, a, "machines");
  if (auto rc = exp::parse_args(app, argc, argv)) return *rc;

  return exp::run_driver("exp_machines", [&] {
    exp::Checker check(a.check);
    const auto catalog = sim::load_catalog(sim::default_catalog_dir());
    const auto dir = exp::results_dir(a, "sim");

    exp::Csv csv(dir / "machines.csv",
                 {"machine", "label", "display_name", "vendor", "arch", "units", "wave", "clock_ghz",
                  "smem_kib", "smem_kib_per_cta", "regs_kib", "l2_mib", "llc", "llc_mib", "hbm_gb",
                  "hbm_tbs", "bf16_tflops", "fp16_tflops", "fp32_tflops", "vector_fp32_tflops",
                  "measured_bw_tbs", "measured_bf16_tflops", "ridge", "rule_br_d64", "rule_bc_d64",
                  "rule_br_d128", "rule_bc_d128"});
    exp::Csv src(dir / "sources.csv", {"machine", "field", "value", "source"});
    auto opt_cell = [](const std::optional<sim::Sourced>& s, double unit) {
      return s ? exp::cell(s->value / unit) : std::string{};
    };
    for (const auto& m : catalog) {
      AttnProblem p;
      p.dtype = DType::bf16;
      p.seqlen_q = p.seqlen_k = 4096;
      p.head_dim = 64;
      const auto r64 = sim::paper_block_sizes(p, m);
      p.head_dim = 128;
      const auto r128 = sim::paper_block_sizes(p, m);
      const double ridge = m.matrix_bf16.value / m.hbm_bandwidth.value;
      csv.row({m.name, exp::machine_label(m), m.display_name, m.vendor, m.arch,
               exp::cell(int64_t(m.compute_units.value)), exp::cell(int64_t(m.wave_size.value)),
               exp::cell(m.clock_hz.value / 1e9), exp::cell(m.lds_bytes_per_cu.value / 1024),
               exp::cell(m.lds_bytes_per_cta.value / 1024), exp::cell(m.register_bytes_per_cu.value / 1024),
               exp::cell(m.l2_bytes.value / 1048576), m.llc_name(),
               exp::cell(double(m.llc_bytes()) / 1048576), exp::cell(m.hbm_capacity_bytes.value / 1e9),
               exp::cell(m.hbm_bandwidth.value / 1e12), exp::cell(m.matrix_bf16.value / 1e12),
               exp::cell(m.matrix_fp16.value / 1e12), exp::cell(m.matrix_fp32.value / 1e12),
               exp::cell(m.vector_fp32.value / 1e12), opt_cell(m.measured_bandwidth, 1e12),
               opt_cell(m.measured_matrix_bf16, 1e12), exp::cell(ridge), exp::cell(r64.Br),
               exp::cell(r64.Bc), exp::cell(r128.Br), exp::cell(r128.Bc)});
      auto s = [&](std::string_view field, const sim::Sourced& v) {
        std::string source = v.source;
        std::replace(source.begin(), source.end(), ',', ';');  // keep the CSV unquoted
        src.row({m.name, std::string(field), exp::cell(v.value), source});
      };
      s("compute_units", m.compute_units);
      s("wave_size", m.wave_size);
      s("lds_bytes_per_cu", m.lds_bytes_per_cu);
      s("l2_bytes", m.l2_bytes);
      s("hbm_capacity_bytes", m.hbm_capacity_bytes);
      s("hbm_bandwidth", m.hbm_bandwidth);
      s("matrix_bf16", m.matrix_bf16);
      if (m.measured_bandwidth) s("measured_bandwidth", *m.measured_bandwidth);
      if (m.measured_matrix_bf16) s("measured_matrix_bf16", *m.measured_matrix_bf16);

      check.expect(m.hbm_bandwidth.value > 0 && m.matrix_bf16.value > 0 && m.lds_bytes_per_cu.value > 0,
                   m.name + ": bandwidth, bf16 rate and LDS are positive");
      check.expect(ridge > 1.0, fmt::format("{}: bf16 ridge point {:.0f} FLOP/byte > 1 (matrix units outrun HBM)",
                                            m.name, ridge));
      check.expect(!m.hbm_bandwidth.source.empty() && !m.matrix_bf16.source.empty(),
                   m.name + ": bandwidth and bf16 rate carry a source");
    }
    for (const auto& key : exp::kPaperMachines) {
      bool found = false;
      for (const auto& m : catalog) found |= exp::lower(m.name).rfind(key, 0) == 0;
      check.expect(found, "the catalog has the paper's machine " + key);
    }
    exp::write_context(dir, "sim", a, {{"catalog", sim::default_catalog_dir().string()}});
    return check.failures();
  });
}

#include "analysis/export.h"

#include <fmt/format.h>

namespace tunebench::exporter {

using nlohmann::json;

namespace {

// RFC 4180: quote every field that needs it, doubling inner quotes.
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += (c == '"') ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

}  // namespace

// Long (~80 lines) because the three formats (json, csv, gbench) sit side by side over the same
// rows, so that a column added to one is seen beside the others.
std::string export_run(const storage::Database& db, const std::string& run_uuid,
                       const std::string& format) {
  const auto run = db.run(run_uuid);
  const auto trials = db.trials(run_uuid);
  if (format == "json") {
    // The run record `export --format records` writes a line of, indented: the run (its
    // fingerprints included), its status and its trials.
    return storage::run_record(db, run_uuid).dump(2) + "\n";
  }
  if (format == "csv") {
    std::string out =
        "run,experiment,knob,arm,model,preset,mode,batch,process_index,trial_status,sample_index,"
        "seconds_per_iteration\n";
    for (const auto& t : trials) {
      const auto& s = t.spec;
      const std::string prefix = fmt::format(
          "{},{},{},{},{},{},{},{},{},{}", run_uuid, csv_field(s.experiment), csv_field(s.knob),
          csv_field(s.arm), csv_field(s.model.model), csv_field(s.model.preset), to_string(s.mode),
          s.batch, s.process_index, t.result.status);
      if (t.result.sample_seconds.empty()) out += prefix + ",,\n";
      for (size_t i = 0; i < t.result.sample_seconds.size(); ++i) {
        out += fmt::format("{},{},{:.9g}\n", prefix, i, t.result.sample_seconds[i]);
      }
    }
    return out;
  }
  if (format == "gbench") {
    // One "iteration" entry per sample, named experiment/arm, times in nanoseconds per iteration.
    std::map<std::string, int> repetitions;
    for (const auto& t : trials) {
      if (t.result.status == "ok")
        repetitions[t.spec.experiment + "/" + t.spec.arm] += t.result.sample_seconds.size();
    }
    std::map<std::string, int> next_index;
    json benchmarks = json::array();
    int family = 0;
    std::map<std::string, int> families;
    bool all_cpu = true;
    for (const auto& t : trials) {
      if (t.result.status != "ok") continue;
      const std::string name = t.spec.experiment + "/" + t.spec.arm;
      if (!families.count(name)) families[name] = family++;
      // Process CPU time where the run measured it (schema version 4 on); wall time otherwise,
      // and the context says which (tunebench_cpu_time).
      const auto& cpu = t.result.sample_cpu_seconds;
      const bool has_cpu = cpu.size() == t.result.sample_seconds.size();
      all_cpu = all_cpu && has_cpu;
      for (size_t i = 0; i < t.result.sample_seconds.size(); ++i) {
        const double seconds = t.result.sample_seconds[i];
        benchmarks.push_back({{"name", name},
                              {"family_index", families[name]},
                              {"per_family_instance_index", 0},
                              {"run_name", name},
                              {"run_type", "iteration"},
                              {"repetitions", repetitions[name]},
                              {"repetition_index", next_index[name]++},
                              {"threads", 1},
                              {"iterations", t.spec.iterations},
                              {"real_time", seconds * 1e9},
                              {"cpu_time", (has_cpu ? cpu[i] : seconds) * 1e9},
                              {"time_unit", "ns"}});
      }
    }
    const auto& r = run.record;
    json context = {{"date", r.started_at},
                    {"host_name", r.host.value("hostname", "")},
                    {"executable", "tunebench run " + r.suite_name},
                    {"num_cpus", r.host.value("cores", 0)},
                    {"mhz_per_cpu", 0},
                    {"cpu_scaling_enabled", false},
                    {"caches", json::array()},
                    {"load_avg", r.host_state.value("load_average", json::array())},
                    {"library_build_type", "release"},
                    {"tunebench_run", r.uuid},
                    {"libtorch", r.software.value("libtorch_build", "")},
                    {"tunebench_cpu_time",
                     all_cpu ? "process CPU time per iteration, all threads"
                             : "wall time where the run did not measure CPU time (older runs, "
                               "multi-process trials)"}};
    return json{{"context", context}, {"benchmarks", benchmarks}}.dump(2) + "\n";
  }
  throw std::invalid_argument("export format must be json, csv or gbench, got '" + format + "'");
}

}  // namespace tunebench::exporter

// Run records: runs as JSON Lines for `export --format records` and `import` (storage.h).
#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <istream>
#include <ostream>

#include "store/storage.h"

namespace tunebench::storage {

using nlohmann::json;

namespace {

RunRecord run_record_from_json(const json& j) {
  RunRecord r;
  r.uuid = j.at("uuid").get<std::string>();
  r.suite_name = j.at("suite_name").get<std::string>();
  r.suite_hash = j.at("suite_hash").get<std::string>();
  r.suite = j.at("suite");
  r.label = j.value("label", "");
  r.git_revision = j.value("git_revision", "");
  r.command_line = j.value("command_line", "");
  r.started_at = j.at("started_at").get<std::string>();
  r.host = j.at("host");
  r.software = j.at("software");
  r.host_state = j.value("host_state", json::object());
  r.host_quiet = j.value("host_quiet", true);
  return r;
}

struct Parsed {
  RunRecord run;
  std::string status, ended_at;
  std::vector<std::pair<TrialSpec, TrialResult>> trials;
};

// A header from a newer tunebench is refused before anything is stored.
void check_records_header(const json& header, const std::string& name) {
  const int version = header.value("version", 0), schema = header.value("schema_version", 0);
  if (version > kRecordsVersion || schema > kSchemaVersion) {
    throw StorageError(fmt::format(
        "{}: written by a newer tunebench ({} with records version {}, schema {}); this build "
        "reads records version {} and schema {} at most: import it with a tunebench at least as "
        "new as the one that wrote it",
        name, header.value("tunebench", "?"), version, schema, kRecordsVersion, kSchemaVersion));
  }
}

}  // namespace

json run_record(const Database& db, const std::string& uuid) {
  const auto run = db.run(uuid);
  const auto& r = run.record;
  json trials = json::array();
  for (const auto& t : db.trials(uuid)) {
    trials.push_back({{"spec", to_json(t.spec)}, {"result", to_json(t.result)}});
  }
  return {{"run",
           {{"uuid", r.uuid},
            {"suite_name", r.suite_name},
            {"suite_hash", r.suite_hash},
            {"suite", r.suite},
            {"label", r.label},
            {"git_revision", r.git_revision},
            {"command_line", r.command_line},
            {"started_at", r.started_at},
            {"host", r.host},
            {"software", r.software},
            {"host_state", r.host_state},
            {"host_quiet", r.host_quiet}}},
          {"status", run.status},
          {"ended_at", run.ended_at},
          {"trials", trials}};
}

int write_records(const Database& db, const std::vector<std::string>& uuids, std::ostream& out) {
  std::vector<std::string> finished;
  for (const auto& uuid : uuids) {
    if (db.run(uuid).status != "running") finished.push_back(uuid);
  }
  out << json{{"tunebench_records",
               {{"version", kRecordsVersion},
                {"schema_version", kSchemaVersion},
                {"tunebench", "0.1.0"},
                {"runs", finished.size()}}}}
             .dump()
      << "\n";
  for (const auto& uuid : finished) out << run_record(db, uuid).dump() << "\n";
  return static_cast<int>(finished.size());
}

ImportResult import_records(Database& db, std::istream& lines, const std::string& name) {
  std::vector<Parsed> runs;
  int number = 0;
  std::string line;
  while (std::getline(lines, line)) {
    ++number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    json j;
    try {
      j = json::parse(line);
    } catch (const std::exception& e) {
      throw StorageError(fmt::format("{}: line {}: not JSON: {}", name, number, e.what()));
    }
    if (j.is_object() && j.contains("tunebench_records")) {
      check_records_header(j["tunebench_records"], name);
      continue;
    }
    try {
      Parsed p;
      p.run = run_record_from_json(j.at("run"));
      p.status = j.at("status").get<std::string>();
      p.ended_at = j.value("ended_at", "");
      for (const auto& t : j.at("trials")) {
        p.trials.emplace_back(trial_spec_from_json(t.at("spec")),
                              trial_result_from_json(t.at("result")));
      }
      runs.push_back(std::move(p));
    } catch (const std::exception& e) {
      throw StorageError(fmt::format("{}: line {}: not a run record: {}", name, number, e.what()));
    }
    // Checked as a worker's answer is: no trial a worker cannot have measured enters an effect.
    for (const auto& [spec, result] : runs.back().trials) {
      if (const std::string why = impossible_result(spec, result); !why.empty()) {
        throw StorageError(fmt::format(
            "{}: line {}: run {}, trial {} ({} [{}]): stored as ok, but {}; no worker measures "
            "that: correct or remove the trial (or the run)",
            name, number, runs.back().run.uuid, spec.sequence + 1, spec.experiment, spec.arm, why));
      }
    }
  }
  ImportResult result;
  result.records = static_cast<int>(runs.size());
  // The scratch database beside the target (same file system, same free space), removed
  // whatever happens.
  const std::string scratch = fmt::format("{}.import-{}.sqlite", db.path(), getpid());
  struct Remove {
    std::string path;
    ~Remove() {
      std::error_code ec;
      for (const char* suffix : {"", "-wal", "-shm", "-journal"})
        std::filesystem::remove(path + suffix, ec);
    }
  } remove{scratch};
  {
    Database staged(scratch);
    for (const auto& p : runs) {
      staged.begin_run(p.run);
      for (const auto& [spec, result] : p.trials) staged.store_trial(p.run.uuid, spec, result);
      if (p.status != "running") staged.finish_run(p.run.uuid, p.status, p.ended_at);
    }
  }
  result.merged = db.merge_from(scratch);
  return result;
}

}  // namespace tunebench::storage

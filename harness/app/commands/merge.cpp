// `tunebench merge`: other machines' databases imported into this one.
#include <fmt/format.h>

#include <filesystem>
#include <map>
#include <optional>
#include <set>

#include "app/commands.h"
#include "core/hardware.h"
#include "core/liveness.h"

namespace tunebench::cli {

namespace {

// What one file's merge did, a line per run that needs a word; true when every run of it was
// readable.
bool say(const std::string& file, const storage::Database::MergeResult& result,
         const std::string& db) {
  fmt::print(
      "{}: imported {} run(s), {} already here, {} still running there (skipped), {} new "
      "host(s), {} held unfinished here completed\n",
      file, result.imported.size(), result.already_here.size(), result.still_running.size(),
      result.hosts_added, result.completed.size());
  // Stored "running" there, but their orchestrator is gone: imported as interrupted.
  for (const auto& uuid : result.interrupted) {
    fmt::print(
        "{}: run {} was running there, its orchestrator is gone: imported as interrupted; "
        "resume with: {}\n",
        file, uuid, liveness::resume_command(uuid, db));
  }
  for (const auto& uuid : result.completed) {
    fmt::print(
        "{}: run {} was unfinished here: completed from this copy (its missing trials "
        "added, its effects computed again)\n",
        file, uuid);
  }
  for (const auto& uuid : result.updated) {
    fmt::print("{}: run {} was unfinished here: gained the trials it lacked; still unfinished\n",
               file, uuid);
  }
  for (const auto& [uuid, why] : result.damaged) {
    fmt::print(stderr,
               "tunebench: error: {}: run {} not imported: {}; the file is damaged: the other "
               "runs were imported; restore it from a backup and merge again for this one\n",
               file, uuid, why);
  }
  return result.damaged.empty();
}

}  // namespace

std::map<std::string, std::map<std::string, std::string>> machines_by_hostname(
    const storage::Database& db) {
  std::map<std::string, std::map<std::string, std::string>> out;
  for (const auto& uuid : db.run_uuids()) {
    const auto host = db.run(uuid).record.host;
    out[host.value("hostname", "?")][hardware::machine_id(host)] = hardware::describe(host);
  }
  return out;
}

void say_other_hardware(const storage::Database& db, const std::string& file,
                        const std::vector<std::string>& imported,
                        const std::map<std::string, std::map<std::string, std::string>>& before) {
  std::set<std::string> said;
  for (const auto& uuid : imported) {
    const auto host = db.run(uuid).record.host;
    const std::string name = host.value("hostname", "?"), machine = hardware::machine_id(host);
    const auto known = before.find(name);
    if (known == before.end() || known->second.count(machine) || !said.insert(machine).second) {
      continue;
    }
    std::string here;
    for (const auto& [id, text] : known->second) here += (here.empty() ? "" : "; ") + text;
    fmt::print(
        "{}: host '{}' has other hardware there than the runs of that name here (here: {}; "
        "there: {}): its runs are another machine, with a history of their own\n",
        file, name, here, hardware::describe(host));
  }
}

namespace {

// The LibTorch build of a run, as the software fingerprint names it.
std::string libtorch_of(const nlohmann::json& software) {
  return software.value("libtorch_build", software.value("libtorch_version", std::string("?")));
}

// One message per suite whose hosts' latest runs merged here ran on different LibTorch builds (a
// fleet node built against another LibTorch): their numbers are another software's, which check
// and compare keep apart; said, so that a fleet's table is not read as one software's. One host
// whose history spans a LibTorch upgrade is not this.
void say_other_libtorch(const storage::Database& db, const std::vector<std::string>& merged) {
  // suite → host → (started_at, build) of its latest run merged here
  std::map<std::string, std::map<std::string, std::pair<std::string, std::string>>> latest;
  for (const auto& uuid : merged) {
    const auto run = db.run(uuid);
    auto& slot = latest[run.record.suite_name][run.record.host.value("hostname", "?")];
    if (run.record.started_at >= slot.first) {
      slot = {run.record.started_at, libtorch_of(run.record.software)};
    }
  }
  for (const auto& [suite, hosts] : latest) {
    std::map<std::string, std::set<std::string>> by_build;
    for (const auto& [host, run] : hosts) by_build[run.second].insert(host);
    if (by_build.size() < 2) continue;
    std::string list;
    for (const auto& [build, names] : by_build) {
      std::string joined;
      for (const auto& h : names) joined += (joined.empty() ? "" : ", ") + h;
      list += fmt::format("{}{} on {}", list.empty() ? "" : "; ", build, joined);
    }
    fmt::print(stderr,
               "tunebench: warning: suite '{}': the hosts' latest runs merged here ran on {} "
               "LibTorch builds ({}): different software, which check and compare --hosts keep "
               "apart; build every node against the same LibTorch to compare them\n",
               suite, by_build.size(), list);
  }
}

}  // namespace

// A target this merge created is removed again when nothing was stored in it (every source
// refused or empty of new runs): no empty database is left behind.
int merge_command(const MergeOptions& options) {
  std::error_code ec;
  const bool created = !std::filesystem::exists(options.db, ec);
  std::optional<storage::Database> db(std::in_place, options.db);
  size_t stored = 0;
  bool clean = true;
  auto remove_if_unused = [&] {
    if (!created || stored > 0) return;
    db.reset();
    for (const char* suffix : {"", "-wal", "-shm"})
      std::filesystem::remove(options.db + suffix, ec);
    fmt::print(stderr, "nothing was imported: {} was not created\n", options.db);
  };
  try {
    std::vector<std::string> merged;
    for (const auto& file : options.files) {
      const auto before = machines_by_hostname(*db);
      const auto result = db->merge_from(file);
      say_other_hardware(*db, file, result.imported, before);
      stored += result.imported.size() + result.completed.size() + result.updated.size();
      clean = say(file, result, options.db) && clean;
      merged.insert(merged.end(), result.imported.begin(), result.imported.end());
      merged.insert(merged.end(), result.completed.begin(), result.completed.end());
    }
    say_other_libtorch(*db, merged);
  } catch (...) {
    remove_if_unused();
    throw;
  }
  remove_if_unused();
  return clean ? 0 : 1;
}

}  // namespace tunebench::cli

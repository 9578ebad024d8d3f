#include "analysis/run_selection.h"

#include <fmt/format.h>

#include <map>
#include <set>
#include <stdexcept>

#include "core/hardware.h"

namespace tunebench::check {

using nlohmann::json;

namespace {

std::string fingerprint(const json& j) { return sha256_hex(j.dump()); }

// The software a run measured — LibTorch, its build, the compiler — without the harness's git
// revision: a nightly's history spans tunebench's own commits (a change there is what the check
// is looking for, and stage 2 compares the builds), while another LibTorch starts a new history
// unless --across-software. The noise floors are found the same way (store/calibration.cpp).
std::string stack_fingerprint(json software) {
  software.erase("git_revision");
  return fingerprint(software);
}

std::string hostname_of(const storage::Database::StoredRun& run) {
  return run.record.host.value("hostname", std::string("?"));
}

}  // namespace

bool finished(const storage::Database::StoredRun& run) {
  return run.status == "completed" || run.status == "completed with failures";
}

bool same_stack(const json& a, const json& b) {
  return stack_fingerprint(a) == stack_fingerprint(b);
}

bool same_host(const json& a, const json& b) { return fingerprint(a) == fingerprint(b); }

std::string resolve_checked_run(const storage::Database& db, const std::string& what) {
  if (what != "latest") return storage::resolve_run(db, what);
  const auto uuids = db.run_uuids();
  for (auto it = uuids.rbegin(); it != uuids.rend(); ++it) {
    if (db.run(*it).record.suite_name != kConfirmSuite) return *it;
  }
  throw storage::StorageError(fmt::format("{} has no runs yet (besides stage-2 A/Bs)", db.path()));
}

std::vector<std::string> comparable_runs(const storage::Database& db,
                                         const storage::Database::StoredRun& run,
                                         bool across_software) {
  std::vector<std::string> out;
  for (const auto& uuid : db.run_uuids()) {
    if (uuid == run.record.uuid) break;  // only runs before this one
    const auto other = db.run(uuid);
    if (other.record.suite_name != run.record.suite_name || !finished(other)) continue;
    if (hardware::machine_id(other.record.host) != hardware::machine_id(run.record.host)) continue;
    if (!across_software && !same_stack(other.record.software, run.record.software)) continue;
    out.push_back(uuid);
  }
  return out;
}

std::optional<storage::Database::StoredRun> previous_machine_run(
    const storage::Database& db, const storage::Database::StoredRun& run) {
  std::optional<storage::Database::StoredRun> previous;
  const std::string name = run.record.host.value("hostname", "");
  for (const auto& uuid : db.run_uuids()) {
    if (uuid == run.record.uuid) break;
    auto other = db.run(uuid);
    if (other.record.suite_name != run.record.suite_name || !finished(other) ||
        other.record.host.value("hostname", "") != name ||
        hardware::machine_id(other.record.host) == hardware::machine_id(run.record.host)) {
      continue;
    }
    previous = std::move(other);
  }
  return previous;
}

std::vector<std::string> baseline_runs(const storage::Database& db,
                                       const storage::Database::StoredRun& run,
                                       const std::string& spec, bool across_software) {
  const auto colon = spec.find(':');
  const std::string kind = spec.substr(0, colon),
                    value = colon == std::string::npos ? "" : spec.substr(colon + 1);
  if (colon == std::string::npos || value.empty() ||
      (kind != "last" && kind != "run" && kind != "label")) {
    throw std::invalid_argument("--baseline must be last:N, run:ID or label:X, got '" + spec + "'");
  }
  if (kind == "run") return {storage::resolve_run(db, value)};
  size_t wanted = 0;
  if (kind == "last") {
    try {
      wanted = std::stoul(value);
    } catch (const std::exception&) {
      throw std::invalid_argument("--baseline last:N needs a number, got '" + value + "'");
    }
    if (wanted == 0) throw std::invalid_argument("--baseline last:N needs N of at least 1");
  }
  std::vector<std::string> out;
  for (const auto& uuid : comparable_runs(db, run, across_software)) {
    if (kind == "label" && db.run(uuid).record.label != value) continue;
    out.push_back(uuid);
  }
  if (kind == "last" && out.size() > wanted) out.erase(out.begin(), out.end() - long(wanted));
  return out;
}

namespace {

// Each named host's finished runs, newest first, by suite: the newest run of each suite, and
// the suites in the order of their newest run.
struct HostRuns {
  std::map<std::string, std::map<std::string, std::string>> latest;  // host → suite → run
  std::map<std::string, std::vector<std::string>> suite_order;       // host → suites newest first
  std::set<std::string> hostnames;                                   // every host with a run
};

HostRuns runs_by_host(const storage::Database& db, const std::vector<std::string>& hosts) {
  HostRuns out;
  const auto uuids = db.run_uuids();
  for (auto it = uuids.rbegin(); it != uuids.rend(); ++it) {
    const auto r = db.run(*it);
    if (!finished(r)) continue;
    const std::string name = hostname_of(r), id = fingerprint(r.record.host);
    out.hostnames.insert(name);
    for (const auto& wanted : hosts) {
      const bool match = name == wanted || (wanted.size() >= 4 && id.rfind(wanted, 0) == 0);
      if (!match) continue;
      auto& by_suite = out.latest[wanted];
      if (!by_suite.count(r.record.suite_name)) {
        by_suite[r.record.suite_name] = *it;
        out.suite_order[wanted].push_back(r.record.suite_name);
      }
    }
  }
  return out;
}

std::string quoted_list(const std::vector<std::string>& hosts) {
  std::string listed;
  for (const auto& h : hosts) listed += (listed.empty() ? "'" : ", '") + h + "'";
  return listed;
}

// Every host has a run and is named once.
void check_hosts_named(const HostRuns& runs, const std::vector<std::string>& hosts) {
  std::string known;
  for (const auto& h : runs.hostnames) known += (known.empty() ? "" : ", ") + h;
  for (size_t i = 0; i < hosts.size(); ++i) {
    if (!runs.latest.count(hosts[i])) {
      throw std::invalid_argument(
          fmt::format("no finished run on host '{}'; hosts with runs: {} (give a hostname or 4+ "
                      "characters of a host id)",
                      hosts[i], known.empty() ? "none" : known));
    }
    for (size_t j = 0; j < i; ++j) {
      if (hosts[j] == hosts[i]) {
        throw std::invalid_argument(fmt::format(
            "host '{}' is named twice in {}; name each host once", hosts[i], quoted_list(hosts)));
      }
    }
  }
}

// The newest suite of the first host that every host ran.
std::string common_suite(HostRuns& runs, const std::vector<std::string>& hosts) {
  for (const auto& s : runs.suite_order[hosts.front()]) {
    bool everywhere = true;
    for (const auto& h : hosts) everywhere = everywhere && runs.latest[h].count(s);
    if (everywhere) return s;
  }
  std::string ran;
  for (const auto& h : hosts) {
    std::string suites;
    for (const auto& s : runs.suite_order[h]) suites += (suites.empty() ? "" : ", ") + s;
    ran += fmt::format("{}'{}' ran {}", ran.empty() ? "" : "; ", h, suites);
  }
  throw std::invalid_argument(
      fmt::format("hosts {} have no suite in common ({}); run one suite on every host",
                  quoted_list(hosts), ran));
}

}  // namespace

std::vector<std::string> latest_runs_of_hosts(const storage::Database& db,
                                              const std::vector<std::string>& hosts,
                                              const std::string& suite) {
  HostRuns by_host = runs_by_host(db, hosts);
  check_hosts_named(by_host, hosts);
  const std::string chosen = suite.empty() ? common_suite(by_host, hosts) : suite;
  std::vector<std::string> runs;
  for (const auto& h : hosts) {
    if (!by_host.latest[h].count(chosen)) {
      throw std::invalid_argument(
          fmt::format("host '{}' has no finished run of suite '{}'", h, chosen));
    }
    const std::string& run = by_host.latest[h][chosen];
    for (size_t j = 0; j < runs.size(); ++j) {
      if (runs[j] == run) {
        throw std::invalid_argument(fmt::format(
            "'{}' and '{}' name the same host (run {}); name each host once", hosts[j], h, run));
      }
    }
    runs.push_back(run);
  }
  return runs;
}

}  // namespace tunebench::check

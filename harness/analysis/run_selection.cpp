#include "analysis/run_selection.h"

#include <fmt/format.h>

#include <algorithm>
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

// A host as `compare --hosts` names it matches a run: its hostname, 4+ hex digits of its host id,
// or hostname@PREFIX with PREFIX the start (4+ hex digits) of its hardware class id or host id.
bool names_run(const std::string& wanted, const storage::Database::StoredRun& r) {
  const std::string name = hostname_of(r), id = fingerprint(r.record.host);
  const auto at = wanted.find('@');
  if (at == std::string::npos) {
    return name == wanted || (wanted.size() >= 4 && id.rfind(wanted, 0) == 0);
  }
  const std::string prefix = wanted.substr(at + 1);
  return wanted.substr(0, at) == name && prefix.size() >= 4 &&
         (hardware::class_id(r.record.host).rfind(prefix, 0) == 0 || id.rfind(prefix, 0) == 0);
}

// Each named host's finished runs, newest first, by suite, with the suites in the order of their
// newest run.
struct HostRuns {
  std::map<std::string, std::map<std::string, std::vector<storage::Database::StoredRun>>>
      by_suite;                                                 // host → suite → runs
  std::map<std::string, std::vector<std::string>> suite_order;  // host → suites newest first
  std::set<std::string> hostnames;                              // every host with a run
};

HostRuns runs_by_host(const storage::Database& db, const std::vector<std::string>& hosts) {
  HostRuns out;
  const auto uuids = db.run_uuids();
  for (auto it = uuids.rbegin(); it != uuids.rend(); ++it) {
    const auto r = db.run(*it);
    if (!finished(r)) continue;
    out.hostnames.insert(hostname_of(r));
    for (const auto& wanted : hosts) {
      if (!names_run(wanted, r)) continue;
      auto& runs = out.by_suite[wanted][r.record.suite_name];
      if (runs.empty()) out.suite_order[wanted].push_back(r.record.suite_name);
      runs.push_back(r);
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
    if (!runs.by_suite.count(hosts[i])) {
      throw std::invalid_argument(
          fmt::format("no finished run on host '{}'; hosts with runs: {} (give a hostname, "
                      "HOSTNAME@CLASS with 4+ hex digits of its hardware class, or 4+ characters "
                      "of a host id)",
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
    for (const auto& h : hosts) everywhere = everywhere && runs.by_suite[h].count(s);
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

std::string short_class(const json& host) {
  const std::string id = hardware::class_id(host);
  return (id.empty() ? fingerprint(host) : id).substr(0, 8);
}

std::vector<HostRunSet> runs_of_hosts(const storage::Database& db,
                                      const std::vector<std::string>& hosts,
                                      const std::string& suite) {
  HostRuns by_host = runs_by_host(db, hosts);
  check_hosts_named(by_host, hosts);
  const std::string chosen = suite.empty() ? common_suite(by_host, hosts) : suite;
  std::vector<HostRunSet> out;
  std::map<std::string, size_t> named_by;  // run → the host that holds it
  for (size_t i = 0; i < hosts.size(); ++i) {
    const auto& h = hosts[i];
    const auto found = by_host.by_suite[h].find(chosen);
    if (found == by_host.by_suite[h].end()) {
      throw std::invalid_argument(
          fmt::format("host '{}' has no finished run of suite '{}'", h, chosen));
    }
    // Newest first: the machine of the latest run, and the others of its hostname.
    const auto& runs = found->second;
    const std::string machine = hardware::machine_id(runs.front().record.host);
    HostRunSet set;
    std::vector<std::string> others;
    for (auto it = runs.rbegin(); it != runs.rend(); ++it) {
      if (hardware::machine_id(it->record.host) == machine) {
        set.runs.push_back(it->record.uuid);
        continue;
      }
      const std::string other = hostname_of(*it) + "@" + short_class(it->record.host);
      if (std::find(others.begin(), others.end(), other) == others.end()) others.push_back(other);
    }
    if (!others.empty()) {
      std::string listed;
      for (const auto& o : others) listed += (listed.empty() ? "" : ", ") + o;
      set.note = fmt::format(
          "'{}' ran suite '{}' on {} machines: compared is the one of its latest run, {}@{}; name "
          "another as {}",
          h, chosen, others.size() + 1, hostname_of(runs.front()),
          short_class(runs.front().record.host), listed);
    }
    for (const auto& run : set.runs) {
      if (auto held = named_by.find(run); held != named_by.end()) {
        throw std::invalid_argument(
            fmt::format("'{}' and '{}' name the same host (run {}); name each host once",
                        hosts[held->second], h, run));
      }
    }
    for (const auto& run : set.runs) named_by[run] = i;
    out.push_back(std::move(set));
  }
  return out;
}

}  // namespace tunebench::check

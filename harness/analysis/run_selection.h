// Which stored runs a reading command looks at, in one place: the run `check` and `calibrate`
// take for "latest", the runs that make one history (same suite, machine and software stack),
// the baseline window `--baseline` names, the machine a hostname ran on before, and each host's
// finished runs of one suite (`compare --hosts`, analysis/hosts.h).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "store/storage.h"

namespace tunebench::check {

// The suite stage 2 stores its A/Bs under (app/confirm.cpp), in the checked run's database right
// after it: "latest" passes over its runs in check and calibrate.
inline constexpr const char* kConfirmSuite = "confirm";

// A run that ended and can be compared: "completed" or "completed with failures".
bool finished(const storage::Database::StoredRun& run);

// A run to check or calibrate from: "latest" is the newest run that is not a stage-2 A/B;
// anything else as storage::resolve_run. StorageError when there is none.
std::string resolve_checked_run(const storage::Database& db, const std::string& what);

// Whether two runs' software is one stack, whose runs make one history and one noise floor: the
// same LibTorch, build and compiler, whatever tunebench's own git revision.
bool same_stack(const nlohmann::json& a, const nlohmann::json& b);

// Whether two runs ran on one host fingerprint (a noise floor is measured on one).
bool same_host(const nlohmann::json& a, const nlohmann::json& b);

// Finished runs before `run` of the same suite on the same machine (hostname and hardware class,
// core/hardware.h) and, unless `across_software`, the same software stack; oldest first.
std::vector<std::string> comparable_runs(const storage::Database& db,
                                         const storage::Database::StoredRun& run,
                                         bool across_software);

// When `run` has no earlier run of its suite on its machine but its hostname had some on other
// hardware (or before the hardware was recorded): the newest of those runs. Empty when the
// hostname is new to the suite.
std::optional<storage::Database::StoredRun> previous_machine_run(
    const storage::Database& db, const storage::Database::StoredRun& run);

// The baseline window `spec` names (last:N | run:ID | label:X): earlier finished runs of the
// same suite on the same machine (and software, unless `across_software`), oldest first; run:ID
// is that run whatever it is. Throws std::invalid_argument for a bad spec.
std::vector<std::string> baseline_runs(const storage::Database& db,
                                       const storage::Database::StoredRun& run,
                                       const std::string& spec, bool across_software);

// Each host's finished runs of one suite (`compare --hosts`, analysis/hosts.h), in the order the
// hosts are given; the suite is `suite` or, when empty, the newest suite every host ran. A host is
// a hostname, 4+ hex digits of a host id, or HOSTNAME@PREFIX: the hostname's runs whose hardware
// class id or host id starts with PREFIX (4+ hex digits). A host's runs are those of one machine
// (hostname and hardware class, core/hardware.h): a hostname that ran the suite on several keeps
// the machine of its latest run, and `note` says so and how to name the others. Throws
// std::invalid_argument for an unknown host, a host named twice, two names of one machine, or
// no common suite.
struct HostRunSet {
  std::vector<std::string> runs;  // oldest first
  std::string note;               // "" unless the hostname ran on other machines too
};
std::vector<HostRunSet> runs_of_hosts(const storage::Database& db,
                                      const std::vector<std::string>& hosts,
                                      const std::string& suite);

// How a machine is told from another of its hostname: the first 8 hex digits of its hardware
// class id, or of its host id where the hardware is not recorded.
std::string short_class(const nlohmann::json& host);

}  // namespace tunebench::check

// The subcommands of `tunebench`, one function each (app/commands/<name>.cpp). app/cli.cpp wires
// their options to CLI11 (names, help texts, defaults, checks) and dispatches; each function
// returns the process's exit code: 0 success, 1 a failure while running (or, for check, a
// regression), 2 bad input.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "analysis/check.h"
#include "analysis/reporter.h"
#include "run/orchestrator.h"
#include "run/tune.h"
#include "store/storage.h"

namespace tunebench::cli {

inline constexpr int kExitBadInput = 2;
// The results database every subcommand uses unless --db says otherwise.
inline constexpr const char* kDefaultDatabase = "results/tunebench.sqlite";

// A database that does not exist yet is not created by a read-only command: StorageError. Opened
// to read only (storage::Database::Access::kRead: never written, no file left beside it) unless
// `access` says the command writes to it (check storing its findings).
storage::Database open_existing(
    const std::string& path, storage::Database::Access access = storage::Database::Access::kRead);

// The reporter of a reading command's text: `format` as given (table, md, json, junit), else the
// table with --verbose, else the record at a glance, in colour on a terminal unless NO_COLOR is
// set (no-color.org), never in a pipe or a file. Throws std::invalid_argument for a format `what`
// does not offer.
const reporters::Reporter& text_reporter(const std::string& format, bool verbose,
                                         reporters::Output what);

struct ModelsOptions {
  bool json = false;
  std::string model, preset;
  std::vector<std::string> option_pairs;  // key=value
};
int models_command(const ModelsOptions& options);

int run_command(const orchestrator::RunOptions& options);
int tune_command(orchestrator::TuneOptions options);

struct ShowOptions {
  std::string db = kDefaultDatabase;
  std::string run = "latest";
  bool json = false;
  bool verbose = false;  // every experiment's arms, spreads and evidence
};
int show_command(const ShowOptions& options);

// format "table": the knobs on this host and the suites; "md": the knob reference (sources and
// every knob), the same on every host.
int list_command(const std::string& suites_dir, const std::string& format);

int env_command(bool as_json);

struct ExportOptions {
  std::string db = kDefaultDatabase;
  std::string run = "latest";
  std::string format = "json";
  std::string output;  // empty: stdout
};
int export_command(const ExportOptions& options);

struct CheckOptions {
  std::string db = kDefaultDatabase;
  std::string format;    // empty: at a glance (the table with --verbose)
  bool verbose = false;  // the table: each benchmark's basis, flag, floor and detectable slowdown
  check::Options check;  // threshold and false_alarm are set from the per-cent values
  double threshold_pct = 5;
  double false_alarm_pct = 1;
  double flag_level_pct = 20;  // stage 1's lenient level (check::Options::flag_level)
  bool no_store = false;
  // Stage 2 (app/confirm.h): the last-good build to confirm flags against; empty: stage 1 only.
  std::string confirm_with;
  double confirm_budget_s = 480;
  int confirm_workers = 4;
  bool quiet = false;
  std::string command_line;
};
// Exit codes: 0 no regression, 1 regression, 2 bad input, 3 unknown (stage 2 could not decide).
inline constexpr int kExitUnknown = 3;
int check_command(CheckOptions options);

struct CalibrateOptions {
  std::string db = kDefaultDatabase;
  std::string suite;  // make A/A runs of this suite, or
  std::string from;   // use stored runs: label:X or last:N
  std::string label = "calibration";
  int runs = 5;
  double false_alarm_pct = 1, power_pct = 80;
  check::FloorSettings floors;  // false_alarm and power are set from the per-cent values
  orchestrator::RunOptions run;
};
int calibrate_command(CalibrateOptions options);

struct MergeOptions {
  std::string db = kDefaultDatabase;
  std::vector<std::string> files;
};
int merge_command(const MergeOptions& options);
// Per hostname, the machines (core/hardware.h) its runs in `db` ran on, each described.
std::map<std::string, std::map<std::string, std::string>> machines_by_hostname(
    const storage::Database& db);
// One line per imported run's machine whose hostname `before` knew on other hardware: kept
// apart (another history), said rather than silently mixed.
void say_other_hardware(const storage::Database& db, const std::string& file,
                        const std::vector<std::string>& imported,
                        const std::map<std::string, std::map<std::string, std::string>>& before);

struct ImportOptions {
  std::string db = kDefaultDatabase;
  std::string file;
};
int import_command(const ImportOptions& options);

struct CompareOptions {
  std::string db = kDefaultDatabase;
  std::string format;  // empty: two runs at a glance (the table with --verbose; --hosts: the table)
  bool verbose = false;            // two runs: the table with each benchmark's medians
  std::string suite;               // with hosts: the suite (empty: the newest all ran)
  std::string prices;              // with hosts: JSON object of hostname to price per hour
  std::vector<std::string> runs;   // two runs, or
  std::vector<std::string> hosts;  // two or more hosts (analysis/hosts.h)
};
int compare_command(const CompareOptions& options);

struct ReportOptions {
  std::string db = kDefaultDatabase;
  std::string out = "reports/out";
  std::string run = "latest";
  std::string prices;  // JSON object of hostname to price per hour
  std::vector<std::string> hosts;
  double timeout_s = 600;  // the renderer's deadline; its process group is killed after it
};
int report_command(const ReportOptions& options);

}  // namespace tunebench::cli

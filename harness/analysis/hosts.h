// The procurement comparison (`tunebench compare --hosts H1 H2 [H3 …]`, and the report's "hosts
// side by side"): every finished run of one suite on each host, and per workload (model, preset,
// mode, batch) the benchmark that ran there with default settings — every knob off, the glibc
// allocator, one thread per core — as throughput per host, per core and per price, energy per
// item where it was measured, every figure with its interval; the ratio between every two hosts
// with an unpaired interval, how many runs would separate them, and a ranking in which hosts
// that cannot be told apart share a rank.
//
// What separates two machines is how much a machine's runs differ from one another (another
// day, another boot, another instance of one type), not the samples inside one run: a host's
// figure is the geometric mean of its runs' medians with a Student t interval from the spread of
// the log run medians, and the ratio between two hosts is Welch's t on those (unequal variances,
// Welch–Satterthwaite degrees of freedom). A host with one run takes the between-run noise floor
// `calibrate` stored for its machine and software as that spread; without one its spread is
// unknown: it has no interval, is never told apart from another host, and shares its rank.
// Computed once here, printed by `compare` through the reporters (analysis/reporter.h) and handed
// to the report as their JSON (reports/render.py draws it and computes nothing).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "analysis/stats.h"
#include "store/storage.h"

namespace tunebench::hosts {

// Price per hour of each host, by hostname (any currency; for a bought machine, its price over
// the hours it will serve). The file is a JSON object of hostname to a positive number, e.g.
// {"box-a": 3.20, "box-b": 1.45}. Throws std::invalid_argument naming the file, what is wrong
// and what would be valid.
using Prices = std::map<std::string, double>;
Prices load_prices(const std::string& path);

struct Options {
  // Hostnames, HOSTNAME@PREFIX (4+ hex digits of its hardware class or host id) or host id
  // prefixes (4+ hex digits).
  std::vector<std::string> hosts;
  std::string suite;  // empty: the newest suite every host ran
  Prices prices;
  size_t min_hosts = 2;             // compare needs two; the report shows one host's figures too
  double target_half_width = 0.02;  // the precision the samples-needed figure aims at (±2 %)
  double confidence = 0.95;
};

// Every knob off, the glibc allocator and omp_threads equal to the host's cores (the device a
// workload runs on is part of the workload, not a setting): the configuration hosts are compared
// in. Empty settings are not default settings (a trial stored without its settings says nothing).
bool is_default_settings(const nlohmann::json& settings, int cores);

// A figure with its interval (NaN where there is none), and how tunebench prints it:
// "812 [799, 826]", "812 [no interval]", "not measured".
struct Figure {
  double value = NAN, lo = NAN, hi = NAN;
  std::string text;
};

struct Host {
  std::string given;     // as named on the command line
  std::string hostname;  // from the run's host fingerprint
  // How rows name it: the hostname, or "hostname (CLASS8)" where two compared hosts share the
  // hostname (the first 8 hex digits of its hardware class, or of its host id where the classes
  // are one or not recorded).
  std::string name;
  std::string host_id;               // sha256 of the latest run's fingerprint
  std::vector<std::string> runs;     // its finished runs of the suite, oldest first
  std::string run_uuid, started_at;  // its latest run
  std::string cpu_model;
  std::string hardware;        // hardware::describe: the CPU, its flags, memory, GPUs
  std::string hardware_class;  // hardware::class_id, "" when not recorded
  int cores = 0;
  double price_per_hour = NAN;  // NaN: no price given
};

// Where a host's run-to-run spread comes from: two or more runs, the noise floor `calibrate`
// stored for its one run's machine and software, or nowhere.
inline constexpr const char* kSpreadRuns = "runs";
inline constexpr const char* kSpreadFloor = "calibrated floor";
inline constexpr const char* kSpreadUnknown = "unknown";
// What a host with one run and no floor, or a pair with such a host, says.
inline constexpr const char* kSpreadUnknownText =
    "run-to-run spread unknown (one run: run it again on another day or instance, or calibrate)";

// One host on one workload.
struct HostFigures {
  size_t host = 0;                 // index into Comparison::hosts
  int runs = 0;                    // of its runs, those with the benchmark's ok trials
  int processes = 0, samples = 0;  // over those runs
  // The mean and standard deviation of ln(run median seconds), and the degrees of freedom of
  // that deviation (runs − 1, or the floor's A/A runs − 1); NaN sd and df where unknown.
  double mean_log = NAN, sd_log = NAN, df = NAN;
  std::string spread = kSpreadUnknown;  // kSpreadRuns, kSpreadFloor or kSpreadUnknown
  Figure seconds;                       // geometric mean of the runs' median time per iteration
  Figure items_per_second;              // batch / that
  Figure per_core;                      // items/s / cores
  Figure items_per_unit;                // items per currency unit: items/s · 3600 / price per hour
  Figure cost_per_million;              // currency units per million items
  Figure energy_per_item;  // joules, median of the trials' measurement ("not measured")
};

// Two hosts on one workload: faster / slower in throughput (by the point estimate).
struct Pair {
  size_t faster = 0, slower = 0;
  // Throughput faster / slower: the ratio of the geometric means, Welch's t interval on the log
  // run medians (NaN ends where a host's spread is unknown, the note then says so).
  stats::Effect ratio;
  std::string text;                     // "1.98x [1.93, 2.03]", "1.20x [no interval]"
  std::string spread = kSpreadUnknown;  // the weaker of the two hosts' sources
  double df = NAN;                      // Welch–Satterthwaite degrees of freedom
  bool distinguishable = false;         // the interval excludes 1 (never without an interval)
  double runs_now = 0;                  // mean runs per host behind the interval
  double samples_now = 0;  // mean samples per host behind it (within runs: they do not narrow it)
  // Runs per host for the interval to exclude 1 at the observed ratio (NaN at a ratio of exactly
  // 1 or without an interval; runs_now when it already does), and to reach ±target_half_width.
  double runs_to_separate = NAN, runs_for_target = NAN;
  // Kept for readers of the earlier samples-based figures: NaN, since more samples inside the
  // runs do not narrow a run-to-run interval.
  double samples_to_separate = NAN, samples_for_target = NAN;
  // In words: "box-a / box-b 1.98x [1.93, 2.03] distinguishable; ±2 % takes ~9 runs per host;
  // now 3 runs per host (run-to-run spread from the runs)".
  std::string line;
};

// Hosts ranked by one figure: a host's rank is 1 + the hosts distinguishably better than it, so
// hosts whose pairwise interval contains 1 can share a rank ("1= H1, H2").
struct Rank {
  int rank = 0;
  std::vector<size_t> hosts;  // best first
  std::string text;           // "1= H1, H2 (not distinguishable: 1.02x [0.97, 1.08])"
};

struct Workload {
  std::string model, preset, mode, device;
  int64_t batch = 0;
  std::string experiment, arm;  // the benchmark compared: the same on every host
  std::vector<HostFigures> hosts;
  std::vector<Pair> pairs;          // every two hosts
  std::vector<Rank> ranking;        // by items/s
  std::vector<Rank> price_ranking;  // by items per currency unit; empty unless 2+ hosts have prices
  std::string label() const;        // "gpt tiny infer b8" (+ " cuda" off the CPU)
};

struct Comparison {
  std::string suite;
  double confidence = 0.95, target_half_width = 0.02;
  std::vector<Host> hosts;
  std::vector<Workload> workloads;
  std::vector<std::string> notes;  // workloads left out and why, prices of hosts not compared
};

// Throws std::invalid_argument (one message: what, where, what would be valid) for fewer hosts
// than options.min_hosts, an unknown host, a host named twice, no suite every host ran, or no
// workload with default settings on every host; storage::StorageError for a broken database.
Comparison compare_hosts(const storage::Database& db, const Options& options);

// Hostnames with a finished run, in the order of their first run (the report's default hosts).
std::vector<std::string> hosts_with_runs(const storage::Database& db);

}  // namespace tunebench::hosts

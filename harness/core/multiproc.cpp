#include "core/multiproc.h"

#include <fmt/format.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <thread>

namespace tunebench::multiproc {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

std::string cpu_list(const json& cpus) {
  std::string out;
  for (const auto& c : cpus) out += (out.empty() ? "" : ",") + std::to_string(c.get<int>());
  return out;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  if (v.empty()) return 0;
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

}  // namespace

std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
    }
  }
  if (cpus.empty()) {
    for (long c = 0; c < std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)); ++c) cpus.push_back(int(c));
  }
  return cpus;
}

Rendezvous::Rendezvous() {
  // The owner's pid in the name (seven digits), so that a later run knows the folder of one that
  // was killed (run/leftovers.h).
  std::string pattern =
      (fs::temp_directory_path() / fmt::format("tunebench-trial-{:07}-XXXXXX", getpid())).string();
  if (!mkdtemp(pattern.data())) {
    throw std::runtime_error("cannot create a rendezvous directory under " +
                             fs::temp_directory_path().string());
  }
  dir_ = pattern;
}

Rendezvous::~Rendezvous() {
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

std::vector<TrialSpec> split(const TrialSpec& trial, const Layout& l, const std::vector<int>& cpus,
                             const std::string& rendezvous_dir, size_t gpus) {
  if (l.role.empty()) return {trial};
  if (size_t(l.count) > cpus.size()) {
    throw std::invalid_argument(fmt::format("{}: {} {}s need {} CPUs, this process may use {}",
                                            trial.experiment, l.count, l.role, l.count,
                                            cpus.size()));
  }
  if (l.gpu_each && size_t(l.count) > gpus) {
    throw std::invalid_argument(fmt::format("{}: {} ranks need a GPU each, this host has {}",
                                            trial.experiment, l.count, gpus));
  }
  std::vector<TrialSpec> parts;
  for (int i = 0; i < l.count; ++i) {
    TrialSpec part = trial;
    json group = json::array();
    for (int c = 0; c < l.threads; ++c) group.push_back(cpus[size_t(i * l.threads + c)]);
    part.settings[kProcessSetting] = {{"role", l.role},
                                      {"index", i},
                                      {"count", l.count},
                                      {"cpus", group},
                                      {"dir", rendezvous_dir}};
    if (l.gpu_each) part.settings[kProcessSetting]["gpu"] = i;
    parts.push_back(std::move(part));
  }
  return parts;
}

// Long (~110 lines) because it is one pass over the processes' results that both decides the
// trial's status (any failed, disagreeing or non-overlapping process makes it failed or invalid,
// with every problem named) and pools what they measured; the two share the same per-process
// facts, so splitting them would walk the results twice with the same checks.
TrialResult combine(const TrialSpec& trial, const std::vector<TrialSpec>& parts,
                    std::vector<TrialResult> results) {
  if (parts.size() == 1 && !parts[0].settings.contains(kProcessSetting)) return results.front();
  const std::string role = parts[0].settings[kProcessSetting]["role"];
  TrialResult r;
  std::vector<std::string> problems;
  bool failed = false;
  for (size_t i = 0; i < results.size(); ++i) {
    if (results[i].status != "ok") {
      problems.push_back(fmt::format("{} {}: {}", role, i, results[i].error));
      failed |= results[i].status == "failed";
      if (r.worker_stderr.empty()) r.worker_stderr = results[i].worker_stderr;
    }
  }
  auto fail = [&](const std::string& status) {
    r.status = failed ? "failed" : status;
    for (const auto& p : problems) r.error += (r.error.empty() ? "" : "; ") + p;
    return r;
  };
  if (!problems.empty()) return fail("invalid");

  // Per-sample combination; every process took the same number of samples.
  const size_t samples = results[0].sample_seconds.size();
  for (size_t s = 0; s < samples; ++s) {
    double rate = 0, slowest = 0;
    for (const auto& p : results) {
      rate += 1.0 / p.sample_seconds.at(s);
      slowest = std::max(slowest, p.sample_seconds.at(s));
    }
    r.sample_seconds.push_back(role == "instance" ? 1.0 / rate : slowest);
  }
  const double m = median(r.sample_seconds);
  r.items_per_second = m > 0 ? double(trial.batch) / m : 0;

  json processes = json::array();
  int64_t window_start = 0, window_end = 0, overlap_start = 0, overlap_end = 0;
  std::vector<std::string> checksums;
  double check_sum = 0;
  for (size_t i = 0; i < results.size(); ++i) {
    const TrialResult& p = results[i];
    const json& e = p.evidence;
    json summary = {
        {"index", i},
        {"cpus", parts[i].settings[kProcessSetting].value("cpus", json::array())},
        {"cpu_affinity", e.value("cpu_affinity", "")},
        {"torch_threads", e.value("torch_threads", 0)},
        // A rank processes its shard of the batch, an instance the whole batch.
        {"items_per_second", double(trial.batch) / double(role == "rank" ? parts.size() : 1) /
                                 median(p.sample_seconds)},
        {"sample_seconds", p.sample_seconds},
        {"check_value", p.check_value},
        {"peak_rss_bytes", p.peak_rss_bytes},
        {"measured_start_ns", e.value("measured_start_ns", int64_t(0))},
        {"measured_end_ns", e.value("measured_end_ns", int64_t(0))}};
    if (e.contains("ddp")) summary["ddp"] = e["ddp"];
    if (parts[i].settings[kProcessSetting].contains("node")) {
      summary["node"] = parts[i].settings[kProcessSetting]["node"];
    }
    processes.push_back(summary);
    const int64_t s = summary["measured_start_ns"], t = summary["measured_end_ns"];
    window_start = i ? std::min(window_start, s) : s;
    window_end = i ? std::max(window_end, t) : t;
    overlap_start = i ? std::max(overlap_start, s) : s;
    overlap_end = i ? std::min(overlap_end, t) : t;
    r.peak_rss_bytes += p.peak_rss_bytes;
    r.page_faults_per_iteration += p.page_faults_per_iteration;
    r.probe_seconds += p.probe_seconds / double(results.size());
    check_sum += p.check_value;
    if (e.contains("ddp")) checksums.push_back(e["ddp"].value("parameter_checksum", ""));
  }
  // The first process's own evidence stays at the top level (threads, environment, libraries);
  // what differs between processes is under "processes".
  r.evidence = results[0].evidence;
  r.evidence["processes"] = processes;
  r.evidence["process_count"] = results.size();
  r.evidence["process_role"] = role;
  const double overlap = window_end > window_start
                             ? double(std::max<int64_t>(0, overlap_end - overlap_start)) /
                                   double(window_end - window_start)
                             : 0;
  r.evidence["measured_overlap"] = overlap;

  if (role == "instance") {
    // Every instance computes the same function on the same batch.
    r.check_value = results[0].check_value;
    for (size_t i = 1; i < results.size(); ++i) {
      if (results[i].check_value != r.check_value) {
        problems.push_back(fmt::format("instance {} computes {:.9g}, instance 0 {:.9g}", i,
                                       results[i].check_value, r.check_value));
      }
    }
    // Throughput is only summed when the instances really ran at the same time.
    if (results.size() > 1 && overlap < 0.5) {
      problems.push_back(
          fmt::format("the instances' measured regions overlapped for {:.0f} % of the time only",
                      100 * overlap));
    }
  } else {
    // Data parallel: the ranks' mean loss is the loss over the whole batch (equal shards), and
    // after the all-reduced steps every rank holds the same parameters.
    r.check_value = check_sum / double(results.size());
    for (size_t i = 1; i < checksums.size(); ++i) {
      if (checksums[i] != checksums[0] || checksums[i].empty()) {
        problems.push_back(fmt::format(
            "rank {} ends with parameter checksum {}, rank 0 with {}: the ranks diverged", i,
            checksums[i], checksums[0]));
      }
    }
    r.evidence["parameters_identical"] = problems.empty();
  }
  if (!problems.empty()) return fail("invalid");
  r.status = "ok";
  return r;
}

void enter(const TrialSpec& spec) {
  // Ranks started by srun (run/slurm.h) have no "cpus": Slurm binds them.
  if (!spec.settings.contains(kProcessSetting) ||
      !spec.settings[kProcessSetting].contains("cpus")) {
    return;
  }
  cpu_set_t set;
  CPU_ZERO(&set);
  for (const auto& c : spec.settings[kProcessSetting]["cpus"]) CPU_SET(c.get<int>(), &set);
  if (sched_setaffinity(0, sizeof(set), &set) != 0) {
    throw std::runtime_error("cannot pin the worker to CPUs " +
                             cpu_list(spec.settings[kProcessSetting]["cpus"]));
  }
}

void wait_for_all(const TrialSpec& spec, double timeout_s) {
  if (!spec.settings.contains(kProcessSetting)) return;
  const json& p = spec.settings[kProcessSetting];
  // Ranks on several hosts share no directory: they meet in their process group's barrier
  // (worker/ddp.h, Rank::barrier) instead.
  if (p.contains("store")) return;
  const fs::path dir = p["dir"].get<std::string>();
  const int count = p["count"];
  // Arrival is a file created under a temporary name and renamed: another process never sees a
  // half-made one. There is one barrier per trial (its directory is the trial's own).
  const std::string name = fmt::format("arrived.{}", p["index"].get<int>());
  std::ofstream(dir / (name + ".tmp")).put('1');
  fs::rename(dir / (name + ".tmp"), dir / name);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (;;) {
    int arrived = 0;
    for (const auto& e : fs::directory_iterator(dir)) {
      arrived +=
          e.path().filename().string().rfind("arrived.", 0) == 0 && e.path().extension() != ".tmp";
    }
    if (arrived >= count) return;
    if (std::chrono::steady_clock::now() > deadline) {
      throw std::runtime_error(fmt::format(
          "only {} of {} processes reached the start of the measurement within {:.0f} s", arrived,
          count, timeout_s));
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

int64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace tunebench::multiproc

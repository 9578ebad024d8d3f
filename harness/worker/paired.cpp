#include "worker/paired.h"

#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "core/multiproc.h"
#include "core/reference.h"
#include "knobs/knobs.h"
#include "worker/trial.h"
#include "worker/worker.h"

namespace tunebench::worker {

namespace {

double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

int64_t involuntary_switches() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_nivcsw;
}

// Microseconds in which some task on the host has waited for a CPU since boot
// (/proc/pressure/cpu, "some ... total="); −1 where the kernel has no pressure accounting.
int64_t cpu_pressure_total_us() {
  std::ifstream in("/proc/pressure/cpu");
  std::string kind, field;
  while (in >> kind) {
    for (int f = 0; f < 4 && in >> field; ++f) {
      if (kind == "some" && field.rfind("total=", 0) == 0) return std::stoll(field.substr(6));
    }
  }
  return -1;
}

// One sample of `arm`: spec.iterations timed iterations, per iteration.
PairedSample take_sample(Arm& arm, double slow) {
  PairedSample s;
  s.start_ns = multiproc::monotonic_ns();
  const double cpu = process_cpu_seconds(), wait = run_queue_wait_seconds();
  const int64_t switches = involuntary_switches(), pressure = cpu_pressure_total_us();
  const double seconds =
      stretch(arm.device->time_iterations(arm.iteration, arm.spec.iterations), slow);
  const double n = arm.spec.iterations;
  s.seconds = seconds / n;
  s.cpu_seconds = (process_cpu_seconds() - cpu) / n;
  s.wait_seconds = (run_queue_wait_seconds() - wait) / n;
  s.involuntary_switches = involuntary_switches() - switches;
  const int64_t wall_ns = multiproc::monotonic_ns() - s.start_ns;
  if (pressure >= 0 && wall_ns > 0) {
    s.cpu_pressure =
        std::clamp(double(cpu_pressure_total_us() - pressure) * 1e3 / double(wall_ns), 0.0, 1.0);
  }
  return s;
}

// Runs of the reference kernel an arm keeps (core/reference.h): one after each of its first blocks.
constexpr size_t kReferenceRuns = 8;

// Block `b` of `arm`: `count` samples appended to `out`, each with its arm, block and position,
// then, for its first kReferenceRuns blocks, one run of the reference kernel appended to
// `references` (core/reference.h); returns the page faults the block's samples took.
int64_t take_block(Arm& arm, bool on, int b, int count, double slow, std::vector<PairedSample>& out,
                   std::vector<double>& references) {
  const int64_t faults = page_faults();
  for (int p = 0; p < count; ++p) {
    PairedSample s = take_sample(arm, slow);
    s.on = on;
    s.block = b;
    s.position = p;
    out.push_back(s);
  }
  const int64_t taken = page_faults() - faults;
  // The host's speed beside the samples: a few runs an arm say it (~10 ms each), one a block
  // would cost a one-step block most of its own time again.
  if (references.size() < kReferenceRuns) references.push_back(reference::kernel_seconds());
  return taken;
}

// The process's peak RSS since the last reset, without the reference kernel's buffers.
int64_t peak_rss_bytes() { return status_kb("VmHWM") - reference::resident_bytes(); }

// What a paired arm's evidence says of its pairing: blocks, samples per block, which arm went
// first and whether both arms shared one process (processes 1) or each had its own (2).
nlohmann::json pairing_evidence(int blocks, int block_samples, bool on_first, int processes) {
  return {{"blocks", blocks},
          {"block_samples", block_samples},
          {"on_first", on_first},
          {"processes", processes}};
}

// One arm's result from its samples (in the order taken): their times, CPU times and the samples
// themselves, as a trial alone would report them.
TrialResult arm_result(const Arm& arm, std::vector<PairedSample> samples, int64_t faults,
                       int64_t peak_rss, std::vector<double> references) {
  std::vector<double> seconds;
  TrialResult r;
  for (const PairedSample& sample : samples) {
    seconds.push_back(sample.seconds);
    r.sample_cpu_seconds.push_back(sample.cpu_seconds);
  }
  r.paired_samples = std::move(samples);
  r.reference_seconds = std::move(references);
  r.status = "ok";
  r.check_value = arm.check_value;
  r.sample_seconds = seconds;
  r.peak_rss_bytes = peak_rss;
  r.device_peak_bytes = arm.device->peak_memory_bytes();
  r.page_faults_per_iteration =
      seconds.empty() ? 0 : double(faults) / double(seconds.size() * size_t(arm.spec.iterations));
  r.evidence = arm.evidence;
  if (!seconds.empty()) r.items_per_second = double(arm.spec.batch) / median_seconds(seconds);
  return r;
}

// Nanoseconds the threads of this process other than the caller have run or waited on a run queue
// to run (schedstat's first two fields, summed over /proc/self/task/*). A thread that wants a CPU
// is busy even while another process holds the cores: counting its run time alone, a spinning
// thread starved for a window looked idle (seen under ctest -j2).
int64_t other_threads_busy_ns() {
  const std::string self = std::to_string(gettid());
  std::error_code ec;
  int64_t total = 0;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    if (task.path().filename() == self) continue;
    std::ifstream in(task.path() / "schedstat");
    int64_t run_ns = 0, wait_ns = 0;
    if (in >> run_ns >> wait_ns) total += run_ns + wait_ns;
  }
  return total;
}

// Before block `b`: at the start of a pair (b even) wait for a quiet host, counted in `waits`.
// Where the host was quiet through the pair just taken (some task waited for a CPU under 10 % of
// its wall time, this process's threads included) it is quiet enough now: no window to sleep
// through, which cost a one-step pair 50 ms. Otherwise (another process, or this arm's own
// threads outnumbering the cores) the wait measures the host with this process idle.
void before_block(int b, nlohmann::json& waits) {
  if (b % 2 != 0) return;
  // Where the last pair ended (a worker process takes one trial: its blocks are these).
  static int64_t last_pressure = -1, last_ns = 0;
  const int64_t pressure = cpu_pressure_total_us(), now = multiproc::monotonic_ns();
  const bool quiet_since = b > 0 && last_pressure >= 0 && pressure >= 0 && now > last_ns &&
                           double(pressure - last_pressure) * 1e3 < 0.10 * double(now - last_ns);
  if (quiet_since) {
    waits["quiet_since_pairs"] = waits.value("quiet_since_pairs", 0) + 1;
  } else {
    // Each wait may take up to a second while the worker has waited less than it has sampled
    // (and for its first 3 s of waiting): a worker of a few pairs waits as long as a busy
    // host needs, one of 64 one-step pairs beside a build does not spend a minute waiting (it
    // looks once, one window, and the contamination rule drops what a burst reached).
    static int64_t first_ns = 0;
    static double waited = 0;
    if (b == 0) first_ns = now, waited = 0;
    const double sampled = double(now - first_ns) * 1e-9 - waited;
    const QuietWait w = wait_for_quiet_host(waited < std::max(3.0, sampled) ? 1.0 : 0.05);
    waited += w.seconds;
    waits["waited_pairs"] = waits.value("waited_pairs", 0) + 1;
    waits["quiet_wait_seconds"] = waits.value("quiet_wait_seconds", 0.0) + w.seconds;
    waits["busy_pairs"] = waits.value("busy_pairs", 0) + (w.quiet ? 0 : 1);
  }
  last_pressure = cpu_pressure_total_us();
  last_ns = multiproc::monotonic_ns();
}

}  // namespace

QuietWait wait_for_quiet_host(double limit_s) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto window = std::chrono::milliseconds(50);
  QuietWait w;
  for (;;) {
    const int64_t before = cpu_pressure_total_us();
    if (before < 0) return w;
    std::this_thread::sleep_for(window);
    const double busy = double(cpu_pressure_total_us() - before) * 1e-3 / double(window.count());
    w.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    if (busy < 0.10) return w;
    if (w.seconds >= limit_s) {
      w.quiet = false;
      return w;
    }
  }
}

bool write_line(int fd, const std::string& line) {
  const std::string out = line + "\n";
  size_t written = 0;
  while (written < out.size()) {
    const ssize_t n = write(fd, out.data() + written, out.size() - written);
    if (n <= 0) return false;
    written += size_t(n);
  }
  return true;
}

double wait_until_threads_idle(double limit_s) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto window = std::chrono::milliseconds(10);
  int64_t before = other_threads_busy_ns();
  for (;;) {
    std::this_thread::sleep_for(window);
    const int64_t now = other_threads_busy_ns();
    const double waited = std::chrono::duration<double>(Clock::now() - start).count();
    if (now - before < 500'000 || waited >= limit_s) return waited;
    before = now;
  }
}

int run_resident(const TrialSpec& spec, bool on, std::istream& in, int out_fd) {
  using nlohmann::json;
  const double probe = cpu_probe_seconds();
  reference::kernel_seconds();  // faults the reference kernel's buffers in, outside any block
  auto arm = prepare_arm(spec);
  warm_up(*arm);
  double settle_seconds = wait_until_threads_idle();
  if (!write_line(out_fd, json{{"ready", true}}.dump())) return 1;

  std::ofstream("/proc/self/clear_refs") << "5";  // resets VmHWM to the current RSS
  for (auto& hooks : arm->hooks) hooks->begin_measurement(*arm);
  arm->device->begin_measurement();
  const double slow = step_slowdown(spec);
  std::vector<PairedSample> samples;
  std::vector<double> references;
  int64_t faults = 0;
  int blocks = 0;
  json waits = json::object();  // before the pairs this process began: quiet-host waits
  std::string line;
  while (std::getline(in, line)) {
    const json request = json::parse(line);
    if (request.value(kResidentEnd, false)) break;
    const int b = request.at(kResidentBlock).get<int>();
    before_block(b, waits);
    faults += take_block(*arm, on, b, spec.pairing.block_samples, slow, samples, references);
    ++blocks;
    settle_seconds += wait_until_threads_idle();
    if (!write_line(out_fd, json{{kResidentBlock, b}}.dump())) return 1;
  }
  if (!in) return 1;  // the orchestrator went away without ending the pair: no result to give
  const int64_t peak_rss = peak_rss_bytes();
  arm->device->end_measurement(int64_t(blocks) * spec.pairing.block_samples * spec.iterations,
                               spec.batch);
  for (auto& hooks : arm->hooks) hooks->end_measurement(*arm);
  read_back(*arm);
  arm->evidence["paired"] =
      pairing_evidence(spec.pairing.blocks, spec.pairing.block_samples, spec.pairing.on_first, 2);
  arm->evidence["paired"]["settle_seconds"] = settle_seconds;
  arm->evidence["paired"].update(waits);
  TrialResult result =
      arm_result(*arm, std::move(samples), faults, peak_rss, std::move(references));
  result.probe_seconds = probe;
  return write_line(out_fd, to_json(result).dump()) ? 0 : 1;
}

double run_queue_wait_seconds() {
  std::error_code ec;
  double total = 0;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    std::ifstream in(task.path() / "schedstat");
    double run_ns = 0, wait_ns = 0;
    if (in >> run_ns >> wait_ns) total += wait_ns * 1e-9;
  }
  return total;
}

PairedResult run_paired(const PairedSpec& spec) {
  PairedResult result;
  result.probe_seconds = cpu_probe_seconds();
  reference::kernel_seconds();  // faults the reference kernel's buffers in, outside any block
  // The first arm is built first (and owns the shared model), then warmed first.
  const TrialSpec& first_spec = spec.on_first ? spec.on : spec.off;
  const TrialSpec& second_spec = spec.on_first ? spec.off : spec.on;
  auto first = prepare_arm(first_spec);
  auto second =
      prepare_arm(second_spec, can_share_model(first_spec, second_spec) ? first->model : nullptr);
  Arm& on = spec.on_first ? *first : *second;
  Arm& off = spec.on_first ? *second : *first;
  warm_up(*first);
  warm_up(*second);

  std::ofstream("/proc/self/clear_refs") << "5";  // resets VmHWM to the current RSS
  for (Arm* arm : {first.get(), second.get()}) {
    for (auto& hooks : arm->hooks) hooks->begin_measurement(*arm);
    arm->device->begin_measurement();
  }
  std::vector<PairedSample> samples_off, samples_on;
  std::vector<double> references_off, references_on;
  int64_t faults_off = 0, faults_on = 0;
  const double slow_off = step_slowdown(spec.off), slow_on = step_slowdown(spec.on);
  const std::vector<bool> order = abba_order(spec.blocks, spec.on_first);
  nlohmann::json waits = nlohmann::json::object();
  for (int b = 0; b < spec.blocks; ++b) {
    before_block(b, waits);
    const bool is_on = order[size_t(b)];
    (is_on ? faults_on : faults_off) +=
        take_block(is_on ? on : off, is_on, b, spec.block_samples, is_on ? slow_on : slow_off,
                   is_on ? samples_on : samples_off, is_on ? references_on : references_off);
    auto& taken = is_on ? samples_on : samples_off;
    result.samples.insert(result.samples.end(), taken.end() - spec.block_samples, taken.end());
  }
  const int64_t peak_rss = peak_rss_bytes();
  for (Arm* arm : {first.get(), second.get()}) {
    const int64_t n = int64_t(spec.blocks / 2) * spec.block_samples * arm->spec.iterations;
    arm->device->end_measurement(n, arm->spec.batch);
    for (auto& hooks : arm->hooks) hooks->end_measurement(*arm);
    read_back(*arm);
    arm->evidence["paired"] = pairing_evidence(spec.blocks, spec.block_samples, spec.on_first, 1);
    arm->evidence["paired"]["shared_model"] = first->model == second->model;
    arm->evidence["paired"].update(waits);
  }
  result.off =
      arm_result(off, std::move(samples_off), faults_off, peak_rss, std::move(references_off));
  result.on = arm_result(on, std::move(samples_on), faults_on, peak_rss, std::move(references_on));
  result.off.probe_seconds = result.on.probe_seconds = result.probe_seconds;
  result.status = "ok";
  return result;
}

}  // namespace tunebench::worker

#include "worker/trial.h"

#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <thread>

#include "core/multiproc.h"
#include "core/reference.h"
#include "knobs/cuda.h"
#include "knobs/evidence.h"
#include "knobs/knobs.h"
#include "models/build.h"
#include "worker/heap_offset.h"
#include "worker/worker.h"

namespace tunebench::worker {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

// Collects the seconds per iteration of each repetition; prints nothing.
class SampleCollector : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const auto& run : runs) {
      if (run.run_type != Run::RT_Iteration) continue;
      if (run.error_occurred) error = run.error_message;
      if (run.iterations > 0) {
        const double per = double(run.iterations) * double(steps);
        seconds.push_back(run.real_accumulated_time / per);
        cpu_seconds.push_back(run.cpu_accumulated_time / per);
      }
    }
  }
  std::vector<double> seconds;
  std::vector<double> cpu_seconds;  // process CPU time (MeasureProcessCPUTime), per iteration
  std::string error;
  int steps = 1;  // model iterations in one of Google Benchmark's iterations
};

}  // namespace

// "VmHWM:   123456 kB" → bytes.
int64_t status_kb(const std::string& field) {
  std::ifstream file("/proc/self/status");
  std::istringstream in(std::string(std::istreambuf_iterator<char>(file), {}));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::atoll(line.c_str() + field.size() + 1) * 1024;
  }
  return -1;
}

int64_t page_faults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt + usage.ru_majflt;
}

double median_seconds(std::vector<double> seconds) {
  if (seconds.empty()) return 0;
  std::sort(seconds.begin(), seconds.end());
  const size_t n = seconds.size();
  return n % 2 ? seconds[n / 2] : (seconds[n / 2 - 1] + seconds[n / 2]) / 2;
}

double stretch(double seconds, double fraction) {
  if (fraction <= 0) return seconds;
  // Busy-wait: exact to the microsecond, unlike a sleep.
  const auto until = Clock::now() + std::chrono::duration<double>(seconds * fraction);
  while (Clock::now() < until) {
  }
  return seconds * (1 + fraction);
}

namespace {

double injected_slowdown(const TrialSpec& spec) {
  const char* env = std::getenv("TUNEBENCH_TEST_SLOWDOWN");
  if (!env) return 0;
  const std::string name = spec.experiment + "/" + spec.arm;
  std::istringstream entries(env);
  std::string entry;
  while (std::getline(entries, entry, ',')) {
    const size_t eq = entry.rfind('=');
    if (eq == std::string::npos || eq == 0 || name.rfind(entry.substr(0, eq), 0) != 0) continue;
    const double pct = std::atof(entry.c_str() + eq + 1);
    if (pct > 0 && pct <= 100) return pct / 100;
  }
  return 0;
}

}  // namespace

double step_slowdown(const TrialSpec& spec) {
  return knobs::slowdown_fraction(spec.settings) + injected_slowdown(spec);
}

namespace {

// The test-only faults that act inside a trial (knobs.h, kFaultSetting): "slow" makes every step
// 1 ms slower; "slow:PCT" stretches every measured step by PCT % (0.1 for "slow:10"), a
// regression of known relative size for the detector's tests.
bool slow_steps(const TrialSpec& spec) {
  return spec.settings.value(knobs::kFaultSetting, "") == "slow";
}

// The stages no action has replaced: the model's own forward, loss + the device's backward, SGD
// with momentum.
void default_stages(Arm& arm) {
  arm.forward = [model = arm.model.get()](const models::Batch& b) { return model->forward(b); };
  arm.forward_backward = [a = &arm] {
    auto loss = a->loss(a->batch);
    a->backward(loss);
    return loss;
  };
}
void default_optimizer(Arm& arm) {
  if (arm.optimizer_step) return;
  auto sgd = std::make_shared<torch::optim::SGD>(arm.module().parameters(),
                                                 torch::optim::SGDOptions(1e-3).momentum(0.9));
  arm.optimizer_step = [sgd] { sgd->step(); };
  arm.optimizer_name = "sgd";
}

// Google Benchmark's samples of the arm's timed iteration; manual time from the device's timer.
// One benchmark iteration is one sample of spec.iterations model iterations, timed as one span
// (DeviceTrial::time_iterations: one device drain per sample); the collector divides by them.
SampleCollector run_samples(Arm& arm) {
  static bool initialized = false;
  if (!initialized) {
    int argc = 1;
    char name[] = "tunebench-worker";
    char* argv[] = {name, nullptr};
    benchmark::Initialize(&argc, argv);
    initialized = true;
  }
  const TrialSpec& spec = arm.spec;
  const double slow = step_slowdown(spec);
  benchmark::ClearRegisteredBenchmarks();
  benchmark::RegisterBenchmark(
      spec.experiment.c_str(),
      [&arm, slow, n = spec.iterations](benchmark::State& state) {
        for (auto _ : state)
          state.SetIterationTime(stretch(arm.device->time_iterations(arm.iteration, n), slow));
      })
      ->UseManualTime()
      ->MeasureProcessCPUTime()  // all threads (OpenMP's too), as a paired sample measures it
      ->Iterations(1)
      ->Repetitions(spec.samples);
  SampleCollector collector;
  collector.steps = spec.iterations;
  arm.device->begin_measurement();
  benchmark::RunSpecifiedBenchmarks(&collector);
  arm.device->end_measurement(int64_t(spec.samples) * spec.iterations, spec.batch);
  return collector;
}

}  // namespace

std::unique_ptr<Arm> set_up(const TrialSpec& spec, std::shared_ptr<models::BenchModel> shared) {
  auto arm = std::make_unique<Arm>();
  arm->spec = spec;
  arm->train = spec.mode == Mode::train;
  models::ModelSpec model_spec = spec.model;
  for (const KnobAction* action : actions()) action->configure(spec.settings, model_spec);
  // The device side (worker/device_trial.h): the CPU, or CUDA with its knobs and timer.
  arm->device = device_trial::make(spec);
  arm->model = shared ? std::move(shared) : models::build_model(model_spec, spec.seed);
  arm->batch = arm->model->make_batch(spec.batch, spec.seed);
  for (const KnobAction* action : actions()) {
    if (auto hooks = action->prepare(*arm)) arm->hooks.push_back(std::move(hooks));
  }
  arm->module().train(arm->train);
  arm->device->prepare(arm->module(), arm->batch);
  default_stages(*arm);
  for (auto& hooks : arm->hooks) hooks->on_device(*arm);
  default_optimizer(*arm);
  std::function<void()> slow;
  if (slow_steps(spec)) slow = [] { std::this_thread::sleep_for(std::chrono::milliseconds(1)); };
  arm->step = build_step(*arm, slow);
  // The timed iteration: the step with the device's input pipeline and per-step knobs around it.
  arm->iteration = arm->device->wrap(arm->step, arm->batch);
  return arm;
}

void guard(Arm& arm) {
  for (auto& hooks : arm.hooks) hooks->begin(arm);
  if (arm.train) {
    arm.step();
    {
      const auto scopes = arm.enter_forward();
      arm.check_value = arm.model->loss(arm.batch).item<double>();
    }
    arm.step();
    return;
  }
  torch::NoGradGuard no_grad;
  const auto scopes = arm.enter_forward();
  const auto output = arm.forward(arm.batch);
  arm.evidence["output_dtype"] = std::string(c10::toString(output.scalar_type()));
  arm.check_value = output.to(torch::kDouble).abs().mean().item<double>();
}

std::unique_ptr<Arm> prepare_arm(const TrialSpec& spec,
                                 std::shared_ptr<models::BenchModel> shared) {
  auto arm = set_up(spec, std::move(shared));
  guard(*arm);
  return arm;
}

bool can_share_model(const TrialSpec& a, const TrialSpec& b) {
  if (a.mode != Mode::infer || b.mode != Mode::infer) return false;
  if (a.seed != b.seed || a.batch != b.batch) return false;
  if (knobs::cuda::device_of(a.settings) != knobs::cuda::device_of(b.settings)) {
    return false;
  }
  models::ModelSpec ma = a.model, mb = b.model;
  for (const KnobAction* action : actions()) {
    if (action->changes_model(a.settings) || action->changes_model(b.settings)) return false;
    action->configure(a.settings, ma);
    action->configure(b.settings, mb);
  }
  return ma.model == mb.model && ma.preset == mb.preset && ma.options == mb.options;
}

ArmPair prepare_pair(const TrialSpec& off, const TrialSpec& on) {
  ArmPair pair;
  pair.shared_model = can_share_model(off, on);
  pair.off = prepare_arm(off);
  pair.on = prepare_arm(on, pair.shared_model ? pair.off->model : nullptr);
  return pair;
}

void warm_up(Arm& arm) {
  for (int i = 0; i < arm.spec.warmup; ++i) arm.iteration();
}

Measurement measure(Arm& arm) {
  const TrialSpec& spec = arm.spec;
  Measurement m;
  // The reference kernel (core/reference.h) just before and just after the measured region:
  // samples of a trial alone are taken by Google Benchmark in one go.
  for (int r = 0; r < 2; ++r) m.reference_seconds.push_back(reference::kernel_seconds());
  // The processes of a multi-process trial start measuring together.
  multiproc::wait_for_all(spec, spec.timeout_s);
  arm.evidence[knobs::evidence::kMeasuredStartNs] = multiproc::monotonic_ns();
  std::ofstream("/proc/self/clear_refs") << "5";  // resets VmHWM to the current RSS
  arm.evidence["rss_at_measurement_start_bytes"] = status_kb("VmRSS") - reference::resident_bytes();
  const int64_t faults_before = page_faults();
  for (auto& hooks : arm.hooks) hooks->begin_measurement(arm);
  const auto start = Clock::now();
  const SampleCollector collector = run_samples(arm);
  const double wall = std::chrono::duration<double>(Clock::now() - start).count();
  arm.evidence[knobs::evidence::kMeasuredEndNs] = multiproc::monotonic_ns();

  const int64_t iterations = int64_t(spec.samples) * spec.iterations;
  m.page_faults_per_iteration = double(page_faults() - faults_before) / double(iterations);
  // Without the reference kernel's buffers, resident since before the region began.
  m.peak_rss_bytes = status_kb("VmHWM") - reference::resident_bytes();
  m.device_peak_bytes = arm.device->peak_memory_bytes();
  m.sample_seconds = collector.seconds;
  m.sample_cpu_seconds = collector.cpu_seconds;
  m.error = collector.error;
  // What Google Benchmark's machinery and our timing added beyond the timed steps, per sample.
  double timed = 0;
  for (double s : collector.seconds) timed += s * spec.iterations;
  arm.evidence["harness_seconds_per_sample"] = (wall - timed) / std::max(1, spec.samples);
  for (auto& hooks : arm.hooks) hooks->end_measurement(arm);
  for (int r = 0; r < 2; ++r) m.reference_seconds.push_back(reference::kernel_seconds());
  return m;
}

void read_back(Arm& arm) {
  if (const double slow = knobs::slowdown_fraction(arm.spec.settings); slow > 0)
    arm.evidence["slowdown_fraction"] = slow;
  if (const double injected = step_slowdown(arm.spec) - knobs::slowdown_fraction(arm.spec.settings);
      injected > 0)
    arm.evidence["injected_slowdown_fraction"] = injected;
  if (const HeapOffset& heap = heap_offset(); heap.bytes > 0) {
    // Where the model's first parameter lies inside its page: what the random offset moves.
    json where = nullptr;
    if (arm.model && !arm.device->device().is_cuda()) {  // on a GPU it is a device address
      const auto parameters = arm.module().parameters();
      if (!parameters.empty() && parameters.front().data_ptr() != nullptr) {
        where = reinterpret_cast<uintptr_t>(parameters.front().data_ptr()) % 4096;
      }
    }
    arm.evidence["heap_offset"] = {{"bytes", heap.bytes}, {"first_parameter_page_offset", where}};
  }
  for (auto& hooks : arm.hooks) hooks->read_back(arm, arm.evidence);
  arm.evidence[knobs::evidence::kDevice] = arm.device->device().str();
  // evidence() returns a temporary: merged by update(), which holds it for the call. A range-for
  // over `evidence().items()` iterated it after its destruction (the proxy outlives it, the json
  // does not), which crashed or hung every CUDA trial on the first GPU run (the CPU's is empty).
  arm.evidence.update(arm.device->evidence());
}

namespace {

TrialResult result_of(const Arm& arm, const Measurement& m) {
  const TrialSpec& spec = arm.spec;
  TrialResult result;
  result.check_value = arm.check_value;
  result.page_faults_per_iteration = m.page_faults_per_iteration;
  result.peak_rss_bytes = m.peak_rss_bytes;
  result.device_peak_bytes = m.device_peak_bytes;
  result.sample_seconds = m.sample_seconds;
  result.sample_cpu_seconds = m.sample_cpu_seconds;
  result.reference_seconds = m.reference_seconds;
  result.evidence = arm.evidence;
  if (!m.error.empty()) {
    result.status = "failed";
    result.error = "benchmark error: " + m.error;
  } else if (int(m.sample_seconds.size()) != spec.samples) {
    result.status = "failed";
    result.error = "expected " + std::to_string(spec.samples) + " samples, got " +
                   std::to_string(m.sample_seconds.size());
  } else {
    result.status = "ok";
    const double median = median_seconds(m.sample_seconds);
    result.items_per_second = median > 0 ? double(spec.batch) / median : 0;
  }
  return result;
}

}  // namespace

TrialResult run_trial(const TrialSpec& spec) {
  multiproc::enter(spec);  // a process of a multi-process trial: onto its own cores
  const double probe = cpu_probe_seconds();
  reference::kernel_seconds();  // faults the reference kernel's buffers in before anything else
  auto arm = prepare_arm(spec);
  warm_up(*arm);
  const Measurement m = measure(*arm);
  read_back(*arm);
  TrialResult result = result_of(*arm, m);
  result.probe_seconds = probe;
  return result;
}

}  // namespace tunebench::worker

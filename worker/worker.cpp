#include "worker/worker.h"

#include <benchmark/benchmark.h>
#include <numaif.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <torch/csrc/autograd/anomaly_mode.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <optional>
#include <sstream>
#include <thread>

#include "core/multiproc.h"
#include "knobs/knobs.h"
#include "models/common.h"
#include "models/registry.h"
#include "models/resnet.h"
#include "platform/compat.h"
#include "platform/device.h"
#include "worker/ddp.h"
#include "worker/device_trial.h"
#include "worker/exec_steps.h"
#include "worker/loader.h"
#include "worker/script_forward.h"

namespace tunebench::worker {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

bool setting(const TrialSpec& spec, const char* knob) {
  return spec.settings.contains(knob) && spec.settings[knob] == true;
}

// Collects the seconds per iteration of each repetition; prints nothing.
class SampleCollector : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const auto& run : runs) {
      if (run.run_type != Run::RT_Iteration) continue;
      if (run.error_occurred) error = run.error_message;
      if (run.iterations > 0) seconds.push_back(run.real_accumulated_time / double(run.iterations));
    }
  }
  std::vector<double> seconds;
  std::string error;
};

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// "VmHWM:   123456 kB" → bytes.
int64_t status_kb(const std::string& field) {
  std::istringstream in(read_file("/proc/self/status"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::atoll(line.c_str() + field.size() + 1) * 1024;
  }
  return -1;
}

std::string status_text(const std::string& field) {
  std::istringstream in(read_file("/proc/self/status"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) {
      auto value = line.substr(field.size() + 1);
      value.erase(0, value.find_first_not_of(" \t"));
      return value;
    }
  }
  return "";
}

int64_t page_faults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt + usage.ru_majflt;
}

// Allocator, OpenMP and BLAS libraries actually mapped into this process.
json mapped_libraries() {
  std::istringstream maps(read_file("/proc/self/maps"));
  std::vector<std::string> found;
  std::string line;
  static const char* kInteresting[] = {"jemalloc", "tcmalloc", "libgomp", "libomp", "libiomp",
                                       "openblas", "libblas",  "libmkl",  "libdnnl"};
  while (std::getline(maps, line)) {
    const auto slash = line.rfind('/');
    if (slash == std::string::npos) continue;
    const std::string name = line.substr(slash + 1);
    for (const char* key : kInteresting) {
      if (name.find(key) != std::string::npos &&
          std::find(found.begin(), found.end(), name) == found.end()) {
        found.push_back(name);
      }
    }
  }
  return found;
}

std::string cpu_affinity() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return "unknown";
  std::string out;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) out += (out.empty() ? "" : ",") + std::to_string(cpu);
  }
  return out;
}

// The process's NUMA memory policy, as the kernel applies it (numactl --membind shows as "bind").
std::string numa_policy() {
  int mode = 0;
  if (get_mempolicy(&mode, nullptr, 0, nullptr, 0) != 0) return "unknown";
  switch (mode) {
    case MPOL_DEFAULT:
      return "default";
    case MPOL_BIND:
      return "bind";
    case MPOL_INTERLEAVE:
      return "interleave";
    case MPOL_PREFERRED:
      return "preferred";
    default:
      return "mode " + std::to_string(mode);
  }
}

json environment_evidence() {
  json env = json::object();
  for (const char* name :
       {"OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OMP_PROC_BIND",
        "OMP_SCHEDULE", "GOMP_CPU_AFFINITY", "KMP_AFFINITY", "KMP_BLOCKTIME", "LD_PRELOAD",
        "MALLOC_CONF", "MALLOC_MMAP_MAX_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_"}) {
    if (const char* v = std::getenv(name)) env[name] = v;
  }
  return env;
}

// Puts every 4-D parameter and buffer of the module in channels-last layout.
void to_channels_last(torch::nn::Module& module) {
  torch::NoGradGuard no_grad;
  for (auto& p : module.parameters()) {
    if (p.dim() == 4) p.set_data(p.data().contiguous(at::MemoryFormat::ChannelsLast));
  }
}

torch::Tensor first_conv_weight(torch::nn::Module& module) {
  for (const auto& m : module.modules(/*include_self=*/false)) {
    if (auto* conv = m->as<torch::nn::Conv2d>()) return conv->weight;
  }
  return {};
}

// The test-only faults (knobs.h, kFaultSetting) that happen before the trial runs; "slow" acts
// inside the measured step.
void fail_on_purpose(const TrialSpec& spec, int result_fd) {
  if (!spec.settings.contains(knobs::kFaultSetting)) return;
  const std::string fault = spec.settings[knobs::kFaultSetting];
  if (fault == "segfault") raise(SIGSEGV);
  if (fault == "abort") std::abort();
  if (fault == "killed") raise(SIGKILL);
  if (fault == "garbage") {
    const char text[] = "this is not JSON\n";
    (void)!write(result_fd, text, sizeof(text) - 1);
    _exit(0);
  }
  if (fault == "silent") _exit(0);
  if (fault == "hang") {
    for (;;) pause();
  }
}

// The test-only "slow:PCT" fault: the fraction by which every measured step is stretched (0.1
// for "slow:10"), a regression of known relative size for the detector's tests.
double slow_fraction(const TrialSpec& spec) {
  const std::string fault = spec.settings.value(knobs::kFaultSetting, "");
  if (fault.rfind("slow:", 0) != 0) return 0;
  return std::stod(fault.substr(5)) / 100.0;  // validated by knobs::fault_setting_error
}

}  // namespace

double cpu_probe_seconds() {
  // A fixed dependent chain of floating-point work: no memory traffic, no threads.
  const auto start = Clock::now();
  volatile double sink = 0;
  double x = 1.0;
  for (int i = 0; i < 2'000'000; ++i) x = x * 1.0000001 + 1e-9;
  sink = x;
  (void)sink;
  return std::chrono::duration<double>(Clock::now() - start).count();
}

TrialResult run_trial(const TrialSpec& spec) {
  TrialResult result;
  json evidence = json::object();
  multiproc::enter(spec);  // a process of a multi-process trial: onto its own cores
  result.probe_seconds = cpu_probe_seconds();

  if (spec.settings.contains("omp_threads")) {
    torch::set_num_threads(static_cast<int>(spec.settings["omp_threads"].get<int64_t>()));
  }
  // The device side (worker/device_trial.h): the CPU, or CUDA with its knobs and timer.
  const auto dev = device_trial::make(spec);
  const torch::Device device = dev->device();
  // Build-time switches (conv_bias_off, inplace_act, causal_mask_fly, …) become model options.
  models::ModelSpec model_spec = spec.model;
  model_spec.options = knobs::model_options(spec.settings, model_spec.options);
  auto model = models::build_model(model_spec, spec.seed);
  auto batch = model->make_batch(spec.batch, spec.seed);
  // Distributed knobs: this process is a rank and keeps its shard of the batch.
  const auto rank = ddp::Rank::join(spec, batch);
  // dataloader_workers: each step's images come from a data loader.
  const auto feed = loader::Feed::make(spec, batch);
  torch::nn::Module& module = model->module();
  const bool train = spec.mode == Mode::train;
  module.train(train);
  dev->prepare(module, batch);

  if (setting(spec, "channels_last")) {
    to_channels_last(module);
    batch.inputs[0] = batch.inputs[0].contiguous(at::MemoryFormat::ChannelsLast);
  }
  // jit_fusion, quantize_linear, freeze_script: the arm's own inference forward.
  const auto scripted = script_forward::prepare(spec.settings, *model, batch);
  evidence.update(scripted.evidence);
  auto forward = [&] { return scripted.forward ? scripted.forward(batch) : model->forward(batch); };
  if (spec.model.model == "resnet50") {
    evidence["input_channels_last"] = batch.inputs[0].is_contiguous(at::MemoryFormat::ChannelsLast);
    evidence["weight_channels_last"] =
        first_conv_weight(module).is_contiguous(at::MemoryFormat::ChannelsLast);
  }

  // The optimizer: SGD with momentum, or for fused_adamw per-parameter AdamW (OFF) against one
  // fused AdamW kernel (ON) with the same hyper-parameters.
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  std::unique_ptr<compat::FusedAdamW> fused_adamw;
  std::string optimizer_name = "sgd";
  if (spec.settings.contains("fused_adamw") && train) {
    if (setting(spec, "fused_adamw")) {
      fused_adamw =
          std::make_unique<compat::FusedAdamW>(module.parameters(), 1e-3, 0.9, 0.999, 1e-8, 1e-2);
      optimizer_name = "adamw_fused";
    } else {
      optimizer = std::make_unique<torch::optim::AdamW>(
          module.parameters(),
          torch::optim::AdamWOptions(1e-3).betas({0.9, 0.999}).eps(1e-8).weight_decay(1e-2));
      optimizer_name = "adamw";
    }
  } else {
    optimizer = std::make_unique<torch::optim::SGD>(module.parameters(),
                                                    torch::optim::SGDOptions(1e-3).momentum(0.9));
  }
  // amp: autocast around forward and loss, bf16 on the CPU, fp16 (or bf16) on CUDA.
  const bool amp = spec.settings.contains("amp") && spec.settings["amp"] != false;
  const c10::ScalarType amp_dtype = dev->amp_dtype(spec.settings.value("amp", json(true)));
  bool autocast_in_step = false;
  auto enter_autocast = [&](std::optional<compat::AutocastGuard>& guard) {
    if (amp) guard.emplace(device.type(), amp_dtype);
  };
  const bool set_to_none = setting(spec, "zero_grad_none");
  const bool no_grad = setting(spec, "no_grad");
  // inference_mode's OFF arm is no-grad (the catalog: no-grad → inference mode).
  const bool inference_mode = setting(spec, "inference_mode");
  const bool no_grad_for_inference = spec.settings.contains("inference_mode") && !inference_mode;
  // anomaly_off's OFF arm runs with anomaly detection on.
  const bool anomaly = spec.settings.contains("anomaly_off") && !setting(spec, "anomaly_off");
  torch::autograd::AnomalyMode::set_enabled(anomaly);
  bool inference_mode_in_step = false;
  bool anomaly_mode_in_step = false;
  bool grad_mode_in_step = false;
  bool grads_defined_after_zero = false;
  bool read_back_zeroing = false;  // set for the step whose zeroing is read back

  // profiler_off, grad_accum, preallocate: how a step runs (exec_steps.h).
  exec_steps::StepPlan plan(spec, *model, batch);
  auto loss_of = [&](const models::Batch& b) {
    std::optional<compat::AutocastGuard> cast;
    enter_autocast(cast);
    autocast_in_step = compat::autocast_enabled(device.type());
    return model->loss(b);
  };

  // The test-only "slow" fault: a known slowdown of every step, for the regression tests.
  const bool slow = spec.settings.value(knobs::kFaultSetting, "") == "slow";
  // One iteration of the measured work.
  auto step = [&]() -> torch::Tensor {
    const auto profiling = plan.profile_step();
    if (slow) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (feed) feed->next(batch);
    if (!train) {
      std::optional<torch::NoGradGuard> guard;
      std::optional<c10::InferenceMode> inference;
      if (no_grad || no_grad_for_inference) guard.emplace();
      if (inference_mode) inference.emplace();
      std::optional<compat::AutocastGuard> cast;
      enter_autocast(cast);
      autocast_in_step = compat::autocast_enabled(device.type());
      grad_mode_in_step = torch::GradMode::is_enabled();
      inference_mode_in_step = c10::InferenceMode::is_enabled();
      return forward();
    }
    for (auto& p : module.parameters()) {
      if (!p.grad().defined()) continue;
      if (set_to_none) {
        p.mutable_grad().reset();
      } else {
        p.mutable_grad().detach_();
        p.mutable_grad().zero_();
      }
    }
    if (read_back_zeroing) {
      bool any_defined = false;
      for (const auto& p : module.parameters()) any_defined |= p.grad().defined();
      grads_defined_after_zero = any_defined;
      read_back_zeroing = false;
    }
    grad_mode_in_step = torch::GradMode::is_enabled();
    anomaly_mode_in_step = torch::autograd::AnomalyMode::is_enabled();
    torch::Tensor loss;
    auto optimizer_step = [&] {
      if (fused_adamw) {
        fused_adamw->step();
      } else {
        optimizer->step();
      }
    };
    // Each backward and the optimizer step go through the device (fp16 loss scaling on CUDA).
    const auto backward = [&](const torch::Tensor& l) { dev->backward(l); };
    if (rank) {
      loss = rank->forward_backward(*model, batch, loss_of, backward);  // with the all-reduces
    } else {
      loss = plan.forward_backward(loss_of, backward);  // profiler_off, grad_accum, preallocate
    }
    dev->step(module.parameters(), optimizer_step);
    return loss;
  };

  // Correctness guard: the function this arm computes, on the fixed batch. Inference: mean
  // |output|. Training: the loss after one step from the seeded weights.
  if (train) {
    plan.before_first_step(loss_of);
    step();
    {
      std::optional<compat::AutocastGuard> cast;
      enter_autocast(cast);
      result.check_value = model->loss(batch).item<double>();
    }
    read_back_zeroing = true;  // the next step zeroes the gradients the guard step left
    step();
  } else {
    torch::NoGradGuard guard;
    std::optional<compat::AutocastGuard> cast;
    enter_autocast(cast);
    const auto output = forward();
    evidence["output_dtype"] = std::string(c10::toString(output.scalar_type()));
    result.check_value = output.to(torch::kDouble).abs().mean().item<double>();
  }

  // The measured iteration: the step with the device's input pipeline and per-step knobs around it.
  const device_trial::Step measured_step = dev->wrap(step, batch);
  for (int i = 0; i < spec.warmup; ++i) measured_step();

  // The measured region: peak RSS from a reset high-water mark, page faults, samples.
  // The processes of a multi-process trial start measuring together.
  multiproc::wait_for_all(spec, spec.timeout_s);
  evidence["measured_start_ns"] = multiproc::monotonic_ns();
  std::ofstream("/proc/self/clear_refs") << "5";  // resets VmHWM to the current RSS
  const int64_t rss_at_start = status_kb("VmRSS");
  const int64_t faults_before = page_faults();
  plan.begin_measurement();
  SampleCollector collector;
  static bool initialized = false;
  if (!initialized) {
    int argc = 1;
    char name[] = "tunebench-worker";
    char* argv[] = {name, nullptr};
    benchmark::Initialize(&argc, argv);
    initialized = true;
  }
  const double stretch = slow_fraction(spec);
  benchmark::ClearRegisteredBenchmarks();
  benchmark::RegisterBenchmark(
      spec.experiment.c_str(),
      [&](benchmark::State& state) {
        for (auto _ : state) {
          double seconds = dev->time(measured_step);
          if (stretch > 0) {  // busy-wait: exact to the microsecond, unlike a sleep
            const auto until = Clock::now() + std::chrono::duration<double>(seconds * stretch);
            while (Clock::now() < until) {
            }
            seconds *= 1 + stretch;
          }
          state.SetIterationTime(seconds);
        }
      })
      ->UseManualTime()
      ->Iterations(spec.iterations)
      ->Repetitions(spec.samples);
  dev->begin_measurement();
  const auto measured_start = Clock::now();
  benchmark::RunSpecifiedBenchmarks(&collector);
  dev->end_measurement(int64_t(spec.samples) * spec.iterations, spec.batch);
  const double measured_wall = std::chrono::duration<double>(Clock::now() - measured_start).count();
  evidence["measured_end_ns"] = multiproc::monotonic_ns();
  const int64_t iterations = int64_t(spec.samples) * spec.iterations;
  result.page_faults_per_iteration = double(page_faults() - faults_before) / double(iterations);
  result.peak_rss_bytes = status_kb("VmHWM");
  result.device_peak_bytes = dev->peak_memory_bytes();

  evidence["torch_threads"] = torch::get_num_threads();
  evidence["env"] = environment_evidence();
  evidence["mapped_libraries"] = mapped_libraries();
  std::string allocator = "glibc";
  for (const auto& lib : evidence["mapped_libraries"]) {
    const std::string name = lib;
    if (name.find("jemalloc") != std::string::npos) allocator = "jemalloc";
    if (name.find("tcmalloc") != std::string::npos) allocator = "tcmalloc";
  }
  evidence["allocator"] = allocator;
  evidence["cpu_affinity"] = cpu_affinity();
  evidence["mems_allowed"] = status_text("Mems_allowed_list");
  evidence["numa_policy"] = numa_policy();
  evidence["grad_mode_in_step"] = grad_mode_in_step;
  plan.measure_tensor_peak([&] { step(); });
  evidence["model"] = model->describe();
  plan.add_evidence(evidence, loss_of);
  evidence["autocast_in_step"] = autocast_in_step;
  evidence["autocast_dtype"] = !amp ? "none" : amp_dtype == torch::kHalf ? "fp16" : "bf16";
  evidence["device"] = device.str();
  for (const auto& [key, value] : dev->evidence().items()) evidence[key] = value;
  if (train) evidence["optimizer"] = optimizer_name;
  if (!train) evidence["inference_mode_in_step"] = inference_mode_in_step;
  if (train) evidence["anomaly_mode_in_step"] = anomaly_mode_in_step;
  if (train) evidence["grads_defined_after_zero"] = grads_defined_after_zero;
  evidence["rss_at_measurement_start_bytes"] = rss_at_start;
  if (rank) evidence["ddp"] = rank->evidence(module);
  if (feed) evidence["loader"] = feed->evidence();
  if (scripted.read_back) scripted.read_back(evidence);

  result.sample_seconds = collector.seconds;
  // What Google Benchmark's machinery and our timing added beyond the timed steps, per sample.
  double timed = 0;
  for (double s : collector.seconds) timed += s * spec.iterations;
  evidence["harness_seconds_per_sample"] = (measured_wall - timed) / std::max(1, spec.samples);
  result.evidence = evidence;
  if (!collector.error.empty()) {
    result.status = "failed";
    result.error = "benchmark error: " + collector.error;
  } else if (int(result.sample_seconds.size()) != spec.samples) {
    result.status = "failed";
    result.error = "expected " + std::to_string(spec.samples) + " samples, got " +
                   std::to_string(result.sample_seconds.size());
  } else {
    result.status = "ok";
    auto sorted = result.sample_seconds;
    std::sort(sorted.begin(), sorted.end());
    const double median = sorted.size() % 2
                              ? sorted[sorted.size() / 2]
                              : (sorted[sorted.size() / 2 - 1] + sorted[sorted.size() / 2]) / 2;
    result.items_per_second = median > 0 ? double(spec.batch) / median : 0;
  }
  return result;
}

int main_worker() {
  // Only the result goes to the real stdout; whatever a library prints goes to stderr.
  const int result_fd = dup(STDOUT_FILENO);
  dup2(STDERR_FILENO, STDOUT_FILENO);
  TrialResult result;
  int code = 0;
  try {
    const std::string input(std::istreambuf_iterator<char>(std::cin), {});
    const TrialSpec spec = trial_spec_from_json(json::parse(input));
    fail_on_purpose(spec, result_fd);
    result = run_trial(spec);
  } catch (const std::exception& e) {
    result.status = "failed";
    result.error = std::string("worker: ") + e.what();
    code = 1;
  }
  const std::string out = to_json(result).dump() + "\n";
  size_t written = 0;
  while (written < out.size()) {
    const ssize_t n = write(result_fd, out.data() + written, out.size() - written);
    if (n <= 0) return 1;
    written += size_t(n);
  }
  close(result_fd);
  return code;
}

}  // namespace tunebench::worker

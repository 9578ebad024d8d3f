// One trial's arms and phases. run_trial (worker/worker.h) is
//   set_up → guard → warm_up → measure → read_back
// and each phase is a function here, so that a worker can prepare two arms of one experiment
// side by side (prepare_pair) and run either on any iteration. Nothing measures in pairs yet:
// the orchestrator runs one arm per worker.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/records.h"
#include "worker/arm.h"

namespace tunebench::worker {

// The arm of `spec`: its device side, model (built from the spec's seed, or `shared`), batch,
// the actions' hooks and stage functions, and its step. Throws what the device or an action throws
// (std::invalid_argument for settings that do not fit the batch or model, std::runtime_error for
// what this build or device cannot run).
std::unique_ptr<Arm> set_up(const TrialSpec& spec,
                            std::shared_ptr<models::BenchModel> shared = nullptr);

// The correctness guard: the function the arm computes, as arm.check_value. Inference: mean
// |output| on the fixed batch under no-grad. Training: the loss after one step from the seeded
// weights; then one more step, whose zeroing of the guard step's gradients is read back.
void guard(Arm& arm);

// set_up, then guard.
std::unique_ptr<Arm> prepare_arm(const TrialSpec& spec,
                                 std::shared_ptr<models::BenchModel> shared = nullptr);

// Two arms of one experiment in one process.
struct ArmPair {
  std::unique_ptr<Arm> off, on;
  bool shared_model = false;  // one model serves both
};
// Whether arms `a` and `b` can share one model: inference (no step changes the weights), the
// same model, options, seed, batch and device, and no action changes either arm's model.
bool can_share_model(const TrialSpec& a, const TrialSpec& b);
// Both arms prepared from their specs (the same seed gives both the same weights and batch), with
// one model where can_share_model.
ArmPair prepare_pair(const TrialSpec& off, const TrialSpec& on);

// spec.warmup iterations of the arm.
void warm_up(Arm& arm);

// The measured region's figures.
struct Measurement {
  std::vector<double> sample_seconds;      // one per repetition: seconds per iteration
  std::vector<double> sample_cpu_seconds;  // process CPU time per iteration, per repetition
  std::vector<double> reference_seconds;   // the reference kernel, twice before, twice after
  std::string error;                       // Google Benchmark's, if any
  double page_faults_per_iteration = 0;
  int64_t peak_rss_bytes = -1, device_peak_bytes = -1;
};
// spec.samples repetitions of spec.iterations timed iterations (Google Benchmark, manual time
// from the device's timer), the processes of a multi-process trial starting together; peak RSS
// from a reset high-water mark and page faults around it. Adds the region's timestamps and
// harness overhead to arm.evidence.
Measurement measure(Arm& arm);

// What the arm's settings did, from every hook and the device, into arm.evidence.
void read_back(Arm& arm);

// Shared by the measured phases of a single and a paired trial (worker/paired.h):
// a field of /proc/self/status in bytes ("VmHWM", "VmRSS"); −1 when absent.
int64_t status_kb(const std::string& field);
// The median of a trial's sample times (0 for none): items per second come from it.
double median_seconds(std::vector<double> seconds);
// Minor + major page faults of this process so far.
int64_t page_faults();
// The fraction every measured step of `spec` is stretched by: its settings' (knobs.h,
// slowdown_fraction) plus the study hook's. TUNEBENCH_TEST_SLOWDOWN="NAME=PCT[,NAME=PCT…]" in the
// worker's environment slows by PCT % the trials whose "experiment/arm" begins with NAME: a build
// made slower on purpose, for bench/'s regression studies (the orchestrator passes the variable to
// its own workers only, never to another build's: run/orchestrator.h). Malformed entries are
// ignored; the evidence says what was injected ("injected_slowdown_fraction").
double step_slowdown(const TrialSpec& spec);
// `seconds` of a timed iteration stretched by `fraction` by busy-waiting the difference; returns
// the stretched time.
double stretch(double seconds, double fraction);

}  // namespace tunebench::worker

// The records that flow between the suite, the orchestrator, the worker, the statistics and the
// database. Plain data with JSON conversions; no torch.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/model_spec.h"

namespace tunebench {

// Hex SHA-256 of some bytes (suite hashes, fingerprint ids).
std::string sha256_hex(std::string_view bytes);

// The current time in UTC as ISO 8601 to the second, e.g. "2026-11-29T13:05:00Z".
std::string now_iso8601();

enum class Mode { infer, train };
std::string to_string(Mode mode);
Mode mode_from_string(const std::string& text);  // throws std::invalid_argument

// One timed sample of a paired trial.
struct PairedSample {
  bool on = false;                   // the arm: false OFF, true ON
  int block = 0;                     // the block's index in the worker's sequence, 0, 1, 2, …
  int position = 0;                  // the sample's index inside its block
  double seconds = 0;                // wall time per iteration
  double cpu_seconds = 0;            // process CPU time per iteration (all threads)
  double wait_seconds = 0;           // run-queue wait per iteration, all threads (schedstat)
  int64_t involuntary_switches = 0;  // context switches forced on the process over the sample
  int64_t start_ns = 0;              // CLOCK_MONOTONIC at the sample's start
  // The fraction of the sample's wall time in which some task on the host waited for a CPU
  // (/proc/pressure/cpu, "some"): the host's pressure, this process's own threads included;
  // −1 where the kernel does not report it (and for samples stored before schema version 5).
  double cpu_pressure = -1;
};
nlohmann::json to_json(const PairedSample& sample);
PairedSample paired_sample_from_json(const nlohmann::json& j);  // throws std::invalid_argument

// Where a trial's arm sits in a paired trial: both arms of one paired worker carry the same
// pairing and the same process_index. blocks 0: the trial ran alone in its process. resident
// false: both arms in one process (PairedSpec); true: each arm in a process of its own, both kept
// alive and alternating blocks (a resident pair, for knobs that act at process start; the
// protocol is below). The resident flag travels with the spec but is not a column: the run's
// suite gives it again on resume, and each arm's evidence says "processes": 2.
struct Pairing {
  int blocks = 0;
  int block_samples = 0;
  bool on_first = false;
  bool resident = false;
  bool paired() const { return blocks > 0; }
  bool operator==(const Pairing& o) const {
    return blocks == o.blocks && block_samples == o.block_samples && on_first == o.on_first &&
           resident == o.resident;
  }
};

// One trial: one fresh worker process measuring one arm of one experiment. The orchestrator
// sends it to the worker as JSON on stdin.
struct TrialSpec {
  std::string run_uuid;
  std::string experiment;  // the suite's name for the experiment, e.g. "no_grad.resnet50"
  std::string knob;        // catalog id, or "factorial" for a factorial experiment
  std::string arm;         // "off", "on", or a factorial cell "channels_last=on,amp=off"
  nlohmann::json settings = nlohmann::json::object();  // knob id -> value for this arm
  models::ModelSpec model;
  Mode mode = Mode::infer;
  int64_t batch = 1;
  int warmup = 2;          // iterations before the first sample
  int samples = 5;         // Google Benchmark repetitions: one sample each
  int iterations = 1;      // iterations per sample
  double timeout_s = 300;  // the orchestrator kills the worker after this
  int process_index = 0;   // which process of this arm, 0 … processes−1
  int sequence = 0;        // position in the run's interleaved order
  uint64_t seed = 1;       // weights and batch
  Pairing pairing;         // set for the two arms of a paired trial
};
nlohmann::json to_json(const TrialSpec& spec);
TrialSpec trial_spec_from_json(const nlohmann::json& j);  // throws std::invalid_argument

// What a trial produced. status: "ok"; "invalid" (its evidence contradicts its settings: not a
// result); "failed" (crashed, timed out, bad output; `error` says how).
struct TrialResult {
  std::string status = "failed";
  std::string error;
  std::vector<double> sample_seconds;  // seconds per iteration, one per sample
  // Process CPU time per iteration (all threads) of each sample, where measured; empty otherwise.
  std::vector<double> sample_cpu_seconds;
  double probe_seconds = 0;  // the fixed CPU probe timed just before the trial
  // The reference kernel (core/reference.h) timed beside the samples, seconds per run: after
  // each block of a paired arm, or twice before and twice after the measured region of a trial
  // alone. Empty for trials stored before schema version 6.
  std::vector<double> reference_seconds;
  int64_t peak_rss_bytes = 0;            // peak resident memory of the measured region
  double page_faults_per_iteration = 0;  // minor + major, measured region
  int64_t device_peak_bytes = -1;        // device allocator peak; −1 without a device
  double items_per_second = 0;           // batch / median sample time
  double check_value = 0;  // correctness guard: output checksum or loss after one step
  nlohmann::json evidence = nlohmann::json::object();  // settings read back inside the worker
  std::string worker_stderr;                           // the tail of the worker's stderr
  // A paired trial's samples of this arm, each with its block, position and contamination
  // figures, in the order taken (sample_seconds holds the same times); empty for a trial alone.
  std::vector<PairedSample> paired_samples;
};
nlohmann::json to_json(const TrialResult& result);
TrialResult trial_result_from_json(const nlohmann::json& j);  // throws std::invalid_argument
// Why an "ok" result of `spec` cannot be what a worker measured, "" when it can: every sample
// (and a paired sample's time) finite and above 0, none longer per iteration than the worker's
// whole timeout_s; as many samples as the spec asks of a trial alone (one per paired sample for
// a paired trial), CPU times one per sample where there are any; items/s, memory and page faults
// finite and not negative. `import` refuses such a trial; results of another status are not
// measurements and are not checked.
std::string impossible_result(const TrialSpec& spec, const TrialResult& result);
// The part of impossible_result about the samples themselves: why an "ok" result's samples (and
// paired samples) cannot be times a worker measured, "" when each is finite, above 0 and no
// longer per iteration than the worker's timeout_s allows. The readers leave such a stored trial
// out of every figure (storage::Database::measured_trials).
std::string impossible_samples(const TrialSpec& spec, const TrialResult& result);

// A paired trial: one worker process holding the OFF and the ON arm of an experiment and
// alternating them in ABBA blocks of samples (worker/paired.h; analysis/paired.h estimates the
// effect). Each arm's spec is a whole TrialSpec (same experiment, model, batch and seed); their
// samples, warmup and iterations say how long one sample is.
struct PairedSpec {
  TrialSpec off, on;
  int blocks = 16;        // ABBA blocks, alternating arms
  int block_samples = 4;  // samples per block; the estimator drops the first (carry-over)
  bool on_first = false;  // which arm is built, warmed and measured first (counterbalancing)
};
nlohmann::json to_json(const PairedSpec& spec);
// The ABBA order of `blocks` blocks: for on_first false OFF ON ON OFF OFF ON ON OFF …, for true
// the mirror image. Element b is true when block b is the ON arm's. Blocks 2j and 2j+1 always
// hold one block of each arm: the pairs of analysis/paired.h.
std::vector<bool> abba_order(int blocks, bool on_first);
PairedSpec paired_spec_from_json(const nlohmann::json& j);  // throws std::invalid_argument

// A resident worker, one arm of a resident pair (Pairing::resident), is spoken to one JSON line at
// a time on its stdin and answers one line each on its stdout:
//   {"resident": true, "on": B, "trial": TrialSpec}  → {"ready": true} once prepared and warmed
//   {"block": b}                                      → {"block": b} after its block_samples
//   samples
//   {"end": true}                                     → its TrialResult (paired_samples with their
//                                                       blocks), then it exits
// It answers only once its other threads have stopped running (OpenMP workers spin on after a
// parallel region), so the other process of the pair times its block on a quiet host. A failure
// is answered with a TrialResult whose status is "failed", and the worker exits non-zero.
inline constexpr const char* kResidentRequest = "resident";
inline constexpr const char* kResidentBlock = "block";
inline constexpr const char* kResidentEnd = "end";

// What a paired trial produced: each arm's result as a trial of its own would give it (status,
// guard value, evidence, page faults; sample_seconds are that arm's samples in order) and every
// sample in the order taken (on the wire each sample is written once, in its arm's
// paired_samples; `samples` is formed again when read). status "failed" with `error` when the
// pair could not run.
struct PairedResult {
  std::string status = "failed";
  std::string error;
  TrialResult off, on;
  std::vector<PairedSample> samples;
  double probe_seconds = 0;
};
nlohmann::json to_json(const PairedResult& result);
PairedResult paired_result_from_json(const nlohmann::json& j);  // throws std::invalid_argument

// One execution of a suite.
struct RunRecord {
  std::string uuid;
  std::string suite_name;
  std::string suite_hash;  // sha256 of the suite file's bytes
  nlohmann::json suite;    // the parsed suite as run
  std::string label;       // e.g. "nightly"
  std::string git_revision;
  std::string command_line;
  std::string started_at;                                // ISO 8601 UTC
  nlohmann::json host = nlohmann::json::object();        // HostFingerprint fields
  nlohmann::json software = nlohmann::json::object();    // SoftwareFingerprint fields
  nlohmann::json host_state = nlohmann::json::object();  // load, governor, … at the start
  bool host_quiet = true;
};

}  // namespace tunebench

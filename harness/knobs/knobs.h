// What the rest of tunebench asks of the knobs: the catalog (knobs/catalog.cpp, one row per knob)
// and the questions every caller asks of a trial's settings, each answered by the rules of the
// families the settings' knobs belong to (knobs/families.cpp loops; the rules are in
// knobs/<family>.cpp). Nothing here tests a knob's id.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/model_spec.h"
#include "core/records.h"
#include "knobs/distributed.h"
#include "knobs/knob.h"

namespace tunebench::knobs {

// The model options a trial's settings imply (build-time switches), merged over `options`.
nlohmann::json model_options(const nlohmann::json& settings, nlohmann::json options);

// Every catalog id, in catalog order.
const std::vector<Knob>& catalog();
const Knob* find(const std::string& id);
// Whether two arms with these settings can alternate inside one worker process (a paired trial,
// worker/paired.h): every catalog knob whose value differs between them acts in_process. Settings
// both arms share (a baseline environment, the device) do not matter; neither do reserved keys.
bool pairable(const nlohmann::json& off, const nlohmann::json& on);
// The id of a knob in `settings` that runs an arm as several processes (the distributed family:
// instances or ranks) at a value other than its OFF; "" when the arm is one process. Such arms
// cannot be a resident pair (two processes, one per arm).
std::string several_processes(const nlohmann::json& settings);
// Up to `n` catalog ids within a typo of `id` (edit distance), closest first, for "did you mean".
std::vector<std::string> nearest(const std::string& id, size_t n = 3);

// Cores and NUMA nodes only; host::capabilities() adds what LibTorch and the devices offer.
HostCaps probe_host();

// Empty when the knob applies to this model and mode on this host's `device` ("cpu" or
// "cuda"); otherwise why not.
std::string not_applicable_reason(const Knob& knob, const std::string& model, Mode mode,
                                  const HostCaps& host, const std::string& device = "cpu");
// The same for a model read from a file (models::ModelDescriptor::from_file), whose `offer` (what
// reading the file found; null where it was not read) decides in place of the catalog's model
// names: a knob that needs the built-in models' code does not apply, one that needs a 2-D
// convolution applies where the file has one.
std::string not_applicable_to_file_model(const Knob& knob, const std::string& model,
                                         const models::ModelOffer* offer, Mode mode,
                                         const HostCaps& host, const std::string& device = "cpu");

// Throws std::invalid_argument ("must be …, got …") when `value` is not a valid setting of the
// knob.
void validate_value(const Knob& knob, const nlohmann::json& value);

// What every trial sets unless its arm says otherwise, so that thread count and allocator are
// always explicit and recorded.
nlohmann::json base_settings(const HostCaps& host);
// What a program that sets nothing runs of the base settings' knobs: LibTorch's own thread count
// (HostCaps::unset_threads, all cores where not read) and the glibc allocator.
nlohmann::json unset_settings(const HostCaps& host);
// What a program that does not set `knob` runs on `host`: its unset setting above (omp_threads,
// allocator), its ON value where Knob::on_when_unset, Knob::unset_runs where that is neither arm,
// otherwise its OFF value.
nlohmann::json unset_value(const Knob& knob, const HostCaps& host);

// The environment, preloads and launcher of a trial's process-start settings.
ProcessSetup process_setup(const nlohmann::json& settings);
// The Python worker (models/python/worker.py), and `setup` made to start it under the Python
// whose torch is this build's LibTorch (build_paths::torch_python(): the pypi build's): for
// worker_build "python" and for a model from a Python file.
std::string python_worker_script();
void run_in_python_worker(ProcessSetup& setup);

// The settings as a worker is sent them: a worker_build path becomes "self" (the worker is that
// build; the orchestrator started it and checks its evidence against the path). Both arms of a
// software A/B then send requests of one length that a worker parses alike: a request that named
// the other build by path moved that arm's heap layout, and its time by 1-3 %.
nlohmann::json settings_for_worker(const nlohmann::json& settings);

// The shared libraries each allocator setting preloads (absolute paths), from a fixed list.
std::optional<std::string> allocator_library(const std::string& allocator);

// What contradicts the settings in the worker's read-back evidence; empty when all took effect.
std::vector<std::string> check_evidence(const nlohmann::json& settings, Mode mode,
                                        const nlohmann::json& evidence);

// One short line of what the worker read back, for `show` ("threads=4 OMP_NUM_THREADS=4
// allocator=glibc grad_mode=off cpus=0,1"): each family's parts in family order; "none" for no
// evidence. `settings` are the trial's (may be empty: the line shows what the evidence holds).
std::string summarise_evidence(const nlohmann::json& settings, const nlohmann::json& evidence);

// Why one arm's merged settings cannot be a trial of `batch` samples in `mode` (any family's
// KnobRules::arm_error, e.g. grad_accum's batch split, cuda_graphs' capture conflicts); "" when
// they can.
std::string arm_error(const nlohmann::json& settings, Mode mode, int64_t batch);
// Why one arm's merged settings cannot run with `batch` samples on this host (the batch does not
// split into its ranks); "" when they can.
std::string arm_not_applicable(const nlohmann::json& settings, int64_t batch, const HostCaps& host);
// The value `knob` = `value` runs with on `host` (omp_threads "all" → the host's cores).
nlohmann::json resolve(const Knob& knob, const nlohmann::json& value, const HostCaps& host);

// The test-only setting that makes a worker fail on purpose, so that the tests can prove how
// each kind of failure is stored: "segfault", "abort", "killed" (SIGKILL, as the kernel's
// out-of-memory killer sends), "garbage" (prints something that is not a result), "silent"
// (prints nothing), "hang" (runs past any timeout), "slow" (each step 1 ms slower: a known
// regression), "slow:PCT" (each measured step PCT % slower: a regression of known relative size).
// Accepted only when the orchestrator's environment has TUNEBENCH_TEST_FAULTS=1.
inline constexpr const char* kFaultSetting = "fault";
// Empty when `value` may be used here; otherwise why not.
std::string fault_setting_error(const nlohmann::json& value);

// The positive control's setting (a suite's "slowdown": PCT): the arm busy-waits PCT %
// of every measured step after it (worker/trial.h: stretch), a slowdown of known size that every
// run can check its intervals against. Not test-only, unlike "fault": slow:PCT, which acts alike.
// The worker's evidence confirms it ("slowdown_fraction").
inline constexpr const char* kSlowdownSetting = "slowdown";
// The knob recorded for a positive control's trials (as "aa" is for an A/A control's).
inline constexpr const char* kPositiveControl = "positive_control";
// Empty when `value` is a whole percentage from 1 to 100; otherwise why not.
std::string slowdown_setting_error(const nlohmann::json& value);
// The fraction each measured step of an arm with these settings is stretched by: "slowdown": PCT
// or the test-only "fault": "slow:PCT" (PCT / 100); 0 without either.
double slowdown_fraction(const nlohmann::json& settings);
// The harness's own settings beside the knobs: "fault" and "slowdown".
bool is_harness_setting(const std::string& id);
// Why `value` cannot be harness setting `id` here (fault_setting_error, slowdown_setting_error).
std::string harness_setting_error(const std::string& id, const nlohmann::json& value);

// Relative tolerance of the correctness guard for an experiment of this knob (its row's; 1e-3 for
// an id that is no knob, "aa" or "factorial"): both arms' check values (output checksum, or loss
// after one step) must agree within it.
double guard_tolerance(const std::string& knob_id);
// The tolerance for a trial with these settings: the loosest of its knob's and of every catalog
// knob its settings switch on (a factorial cell with amp on computes in bf16).
double guard_tolerance(const std::string& knob_id, const nlohmann::json& settings);

}  // namespace tunebench::knobs

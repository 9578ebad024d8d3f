// The catalog's experiments as knobs. Each knob is one self-contained unit:
//   - what it is and the claim it tests (CATALOG.md, seeds/), carried into the database;
//   - which values it takes and what its OFF and ON arms set;
//   - whether it applies to a model, mode and host, and if not, why;
//   - for knobs that act at process start: the environment variables and preloads it sets;
//   - how to check, from what the worker reads back, that the setting really took effect.
// The in-process part (changing the model, inputs or step) lives with the worker, which has torch.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/records.h"

namespace tunebench::knobs {

enum class Phase { process_start, in_process };

struct Knob {
  std::string id;
  std::string group;   // the catalog's section
  std::string change;  // "grad-enabled forward → forward under no-grad"
  std::string where;   // "cpu", "cuda" or "both"
  std::string
      claim;  // what the sources say, with the seed file, e.g. "faster and less memory (000)"
  std::string false_claim;   // non-empty when a source's statement about it is false
  bool implemented = false;  // false: listed, reported as not implemented yet
  Phase phase = Phase::in_process;
  nlohmann::json off, on;           // the default arms' values
  std::vector<std::string> models;  // models it applies to; empty = all
  std::vector<Mode> modes;          // modes it applies to; empty = both
  bool memory_effect = false;       // report the effect on peak memory beside time
  // For a knob that is a build-time switch of the model: the model option it sets, and whether
  // ON means the option false (conv_bias_off: ON builds without conv bias).
  std::string model_option;
  bool option_inverted = false;
};

// The model options a trial's settings imply (build-time switches), merged over `options`.
nlohmann::json model_options(const nlohmann::json& settings, nlohmann::json options);

// Every catalog id, in catalog order.
const std::vector<Knob>& catalog();
const Knob* find(const std::string& id);
// Up to `n` catalog ids within a typo of `id` (edit distance), closest first, for "did you mean".
std::vector<std::string> nearest(const std::string& id, size_t n = 3);

// Facts about this host that decide applicability.
struct HostCaps {
  int cores = 1;
  int numa_nodes = 1;
  bool cuda = false;
  std::string cuda_reason;  // why not, when !cuda
  int gpus = 0;             // CUDA devices this process sees
  // Knobs this build's LibTorch lacks on each device, with the reason: on the CPU (e.g.
  // fused_adamw on 1.13, TorchScript's CPU fuser, c10d Gloo), on CUDA (c10d NCCL).
  std::map<std::string, std::string> unsupported_on_cpu;
  std::map<std::string, std::string> unsupported_on_cuda;
};
// Cores and NUMA nodes only; host::capabilities() adds what LibTorch and the devices offer.
HostCaps probe_host();

// Empty when the knob applies to this model and mode on this host's `device` ("cpu" or
// "cuda"); otherwise why not.
std::string not_applicable_reason(const Knob& knob, const std::string& model, Mode mode,
                                  const HostCaps& host, const std::string& device = "cpu");

// Throws std::invalid_argument ("must be …, got …") when `value` is not a valid setting of the
// knob.
void validate_value(const Knob& knob, const nlohmann::json& value);

// What every trial sets unless its arm says otherwise, so that thread count and allocator are
// always explicit and recorded.
nlohmann::json base_settings(const HostCaps& host);

// The environment and preloads of the process-start settings (omp_threads, allocator).
struct ProcessSetup {
  std::map<std::string, std::string> env;
  std::vector<std::string> preload;   // absolute library paths for LD_PRELOAD
  std::vector<std::string> launcher;  // a program the worker runs under (numactl), absolute path
};
ProcessSetup process_setup(const nlohmann::json& settings);

// The shared libraries each allocator setting preloads (absolute paths), from a fixed list.
std::optional<std::string> allocator_library(const std::string& allocator);

// What contradicts the settings in the worker's read-back evidence; empty when all took effect.
std::vector<std::string> check_evidence(const nlohmann::json& settings, Mode mode,
                                        const nlohmann::json& evidence);

// The test-only setting that makes a worker fail on purpose, so that the tests can prove how
// each kind of failure is stored: "segfault", "abort", "killed" (SIGKILL, as the kernel's
// out-of-memory killer sends), "garbage" (prints something that is not a result), "silent"
// (prints nothing), "hang" (runs past any timeout), "slow" (each step 1 ms slower: a known
// regression), "slow:PCT" (each measured step PCT % slower: a regression of known relative size).
// Accepted only when the orchestrator's environment has TUNEBENCH_TEST_FAULTS=1.
inline constexpr const char* kFaultSetting = "fault";
// Empty when `value` may be used here; otherwise why not.
std::string fault_setting_error(const nlohmann::json& value);

// Relative tolerance of the correctness guard for an experiment of this knob: both arms' check
// values (output checksum, or loss after one step) must agree within it.
double guard_tolerance(const std::string& knob_id);
// The tolerance for a trial with these settings: the loosest of its knob's and of every catalog
// knob its settings switch on (a factorial cell with amp on computes in bf16).
double guard_tolerance(const std::string& knob_id, const nlohmann::json& settings);

}  // namespace tunebench::knobs

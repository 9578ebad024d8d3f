// A knob is one row of the catalog (knobs/catalog.cpp: what it is, the claim it tests, where and
// to what it applies, its default arms and the guard's tolerance) and the rules of its family
// (knobs/<family>.cpp, no torch: which values it takes, whether it applies on a host, what it sets
// when the worker process starts, what the suite must refuse, and how to check from the worker's
// read-back that the setting took effect). What a knob does inside the worker lives with the
// worker, which has torch.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/records.h"

namespace tunebench::knobs {

// When a knob takes effect. process_start: the worker's environment, preloads or launcher, or
// several processes. in_process: inside the worker, per arm (guards, the model, the step), so the
// two arms of an experiment can live side by side in one process and alternate (worker/paired.h).
// process_wide: inside the worker, but as state of the whole process (a global kernel or fuser
// flag, a thread pool), so one process cannot hold both arms.
enum class Phase { process_start, in_process, process_wide };

// The families, in the order their rules run and their evidence is summarised. A new family is a
// value here, a rules file knobs/<family>.{h,cpp} and one line in knobs/families.cpp.
enum class Family {
  process,      // knobs/process.h: environment, preloads and launcher of the worker process
  autograd,     // knobs/autograd.h: autograd state around the step
  build,        // knobs/build.h: build-time options of the model
  execution,    // knobs/execution.h: how the step executes (profiler, recompute, micro-batches)
  precision,    // knobs/precision.h: autocast, memory format, conv kernel library, fused AdamW
  script,       // knobs/script.h: TorchScript and quantized parts of the model
  input,        // knobs/input.h: how batches reach the step
  cuda,         // knobs/cuda.h: CUDA runtime settings, and the reserved device settings
  distributed,  // knobs/distributed.h: trials of several worker processes
  compile,      // knobs/compile.h: the model compiled ahead of time by Inductor
};
const char* to_string(Family family);

// What a knob asks of a model beyond its catalog row's model names (Knob::needs).
enum class Needs {
  nothing,
  conv2d,  // a 2-D convolution fed a 4-D floating input (channels_last, onednn)
  twin,    // the model's Python twin (models/python/twins.py): the built-in models only (compile)
};

// One row of the catalog: plain data, no behaviour.
struct Knob {
  std::string id{};
  Family family = Family::autograd;
  Phase phase = Phase::in_process;
  std::string group{};   // the catalog's section
  std::string where{};   // "cpu", "cuda" or "both"
  std::string change{};  // "grad-enabled forward → forward under no-grad"
  // What the sources say, with their names (knobs/sources.h), e.g. "faster and less memory
  // (PyTorch Performance Tuning Guide)".
  std::string claim{};
  std::vector<std::string> models{};      // models it applies to; empty = all
  std::vector<Mode> modes{};              // modes it applies to; empty = both
  nlohmann::json off = false, on = true;  // the default arms' values
  // Relative tolerance of the correctness guard: both arms' check values (output checksum, or
  // loss after one step) must agree within it.
  double tolerance = 1e-3;
  bool memory_effect = false;  // report the effect on peak memory beside time
  // For a knob that is a build-time switch of the model: the model option it sets, and whether
  // ON means the option false (conv_bias_off: ON builds without conv bias).
  std::string model_option{};
  bool option_inverted = false;
  std::string false_claim{};  // non-empty when a source's statement about it is false
  bool implemented = true;    // false: listed, reported as not implemented yet
  // What a model read from a file must offer for the knob to apply to it (ModelOffer, read from
  // the file); a knob that lists models or sets a model option needs the built-in models' code.
  Needs needs = Needs::nothing;
  // A trial that does not set the knob runs its ON state (profiler_off, anomaly_off: the
  // debugging API is only switched on by an explicit OFF). knobs::unset_value says what a trial
  // without the setting runs, for every knob.
  bool on_when_unset = false;
  // What a trial that does not set the knob runs where that is neither arm, in words
  // (fused_adamw: both arms are AdamW, a trial without it trains with SGD); empty: one of the arms.
  std::string unset_runs{};
  // The memory effect on a CUDA device compares the caching allocator's reserved peak (what
  // emptyCache() gives back; allocated bytes never show it) instead of the allocated peak.
  bool reserved_device_memory = false;
};

// Facts about this host that decide applicability.
struct HostCaps {
  int cores = 1;
  // LibTorch's intra-op threads in a process that sets none (no OMP_NUM_THREADS, no
  // set_num_threads), as this build's LibTorch counts them (host::capabilities); 0: not read, taken
  // as `cores`. Debian's LibTorch 1.13 counts 1 on a 2-core AMD EPYC VM where the PyPI wheel's
  // counts 2: a program that sets nothing runs what this says.
  int unset_threads = 0;
  int numa_nodes = 1;
  bool cuda = false;
  std::string cuda_reason;  // why not, when !cuda
  int gpus = 0;             // CUDA devices this process sees
  // Knobs this build's LibTorch lacks on each device, with the reason: on the CPU (e.g.
  // fused_adamw on 1.13, TorchScript's CPU fuser, c10d Gloo), on CUDA (c10d NCCL).
  std::map<std::string, std::string> unsupported_on_cpu;
  std::map<std::string, std::string> unsupported_on_cuda;
};

// The environment and preloads of the process-start settings (omp_threads, allocator, ...).
struct ProcessSetup {
  std::map<std::string, std::string> env;
  std::vector<std::string> preload;   // absolute library paths for LD_PRELOAD
  std::vector<std::string> launcher;  // a program the worker runs under (numactl), absolute path
  // The tunebench executable that runs `worker` (worker_build): a path, or "self" for this run's
  // own executable started by its real path; empty: this run's own, started as the orchestrator
  // starts every worker (/proc/self/exe). A software A/B launches both arms alike, by path.
  std::string executable;
};

// The rules of one family of knobs. Every function gets the catalog row it is asked about (or the
// trial's merged settings, for the hooks that look at a whole arm) and has a default that fits a
// boolean knob with nothing to add, so a family overrides only what it has.
class KnobRules {
 public:
  virtual ~KnobRules() = default;

  // The catalog ids of this family; the catalog's test checks that every row's
  // family lists it and that no other family does.
  virtual std::vector<std::string> ids() const = 0;

  // Throws std::invalid_argument ("must be …") when `value` is not a valid setting of `knob`.
  // Default: true or false.
  virtual void validate_value(const Knob& knob, const nlohmann::json& value) const;

  // The value a trial on `host` runs with, for a value already validated (omp_threads "all" →
  // the host's cores). Default: the value itself.
  virtual nlohmann::json resolve(const Knob& knob, const nlohmann::json& value,
                                 const HostCaps& host) const;

  // Why `knob` does not apply to `model` in `mode` on `host`'s `device`, beyond what its row
  // says (models, modes, where) and what the host lists as unsupported; "" when it applies.
  // Default: "".
  virtual std::string not_applicable_reason(const Knob& knob, const std::string& model, Mode mode,
                                            const HostCaps& host, const std::string& device) const;

  // Adds the environment, preloads and launcher that a trial's `settings` ask of this family's
  // knobs when the worker starts. Default: nothing.
  virtual void process_setup(const nlohmann::json& settings, ProcessSetup& setup) const;

  // Why one arm's merged `settings` (the device under cuda's kDevice) cannot be a trial of `batch`
  // samples in `mode` on any host: a suite error ("grad_accum=4 … the batch is 6 samples"); ""
  // when they can. Default: "".
  virtual std::string arm_error(const nlohmann::json& settings, Mode mode, int64_t batch) const;

  // Why one arm's merged `settings` cannot run as a trial of `batch` samples on this `host`
  // although the suite is valid (the batch does not split into this host's ranks); "" when they
  // can. Default: "".
  virtual std::string arm_not_applicable(const nlohmann::json& settings, int64_t batch,
                                         const HostCaps& host) const;

  // Appends to `wrong` what in the worker's read-back `evidence` contradicts `knob` = `value`
  // (`settings` are the trial's, merged, for knobs whose evidence depends on others). Default:
  // nothing is checked.
  virtual void check_evidence(const Knob& knob, const nlohmann::json& value,
                              const nlohmann::json& settings, Mode mode,
                              const nlohmann::json& evidence,
                              std::vector<std::string>& wrong) const;

  // Appends short "name=value" parts for `show`'s one-line summary of what `evidence` says about
  // this family (whatever `settings` are: the line shows what was read back). Default: nothing.
  virtual void summarise_evidence(const nlohmann::json& settings, const nlohmann::json& evidence,
                                  std::vector<std::string>& parts) const;
};

// The rules of `family` (knobs/families.cpp holds the one list).
const KnobRules& rules_of(Family family);
// Every family, in the order of the enum.
const std::vector<Family>& families();

// Small helpers the families share.
// evidence[key], or null when evidence is not an object or lacks it.
nlohmann::json fact(const nlohmann::json& evidence, const char* key);
// settings[key] when settings is an object holding it, otherwise `fallback`.
nlohmann::json setting(const nlohmann::json& settings, const char* key,
                       const nlohmann::json& fallback = nullptr);
// An integer from `low` to `high`; otherwise throws std::invalid_argument(`must`).
void expect_integer(const nlohmann::json& value, int64_t low, int64_t high, const char* must);

}  // namespace tunebench::knobs

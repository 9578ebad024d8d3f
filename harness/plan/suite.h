// Suites as data: a JSON file of experiments, parsed once and validated up front into typed
// structs. Parsing needs no host: whether an experiment can run here, and the trials it becomes,
// are the plan's (plan/plan.h: suite × host). A malformed suite is reported with the file, the
// JSON path (and line and column where the parser knows it), the offending value and what would
// be valid; nothing runs and nothing is written.
//
//   {
//     "name": "smoke",
//     "description": "…",
//     "defaults": {"processes": 2, "warmup": 2, "samples": 5, "iterations": 1,
//                  "timeout_s": 120, "batch": 8},
//     "experiments": [
//       {"knob": "no_grad", "model": "resnet50", "preset": "tiny", "mode": "infer"},
//       {"knob": "omp_threads", "model": "gpt", "preset": "tiny", "mode": "infer",
//        "arms": {"off": {"omp_threads": 1}, "on": {"omp_threads": 2}}},
//       {"factorial": ["channels_last", "no_grad"], "model": "resnet50", "preset": "tiny",
//        "mode": "infer"}
//     ]
//   }
//
// Per experiment (each may also be given in "defaults"): name (default knob.model-preset-mode),
// options (model options), settings (applied to every arm), batch, processes (worker processes
// per arm), warmup (iterations), samples (per process), iterations (per sample), timeout_s,
// device ("cpu" or "cuda"; default "cuda" for a CUDA-only knob, else "cpu"), design ("processes",
// "paired", "paired_processes" or "auto"; default "processes"), workers, blocks and block_samples
// (a paired design's worker processes and their shape), budget_s and max_workers (how far a paired
// experiment may sample beyond its workers to reach its target), target_pct (the half-width a
// paired experiment samples on to, in per cent; default 2), worker_s (the seconds a worker's blocks
// should take: later workers sized to the first worker's step; default 0, off). "aa": true makes an
// experiment an A/A control: both arms run the knob's ON setting, so its effect measures the noise
// floor and should come out as "no measurable effect". "slowdown": PCT makes it a positive control:
// both arms run the knob's ON setting and the ON arm busy-waits PCT % of every measured step
// (knobs::kSlowdownSetting), so its effect should come out as PCT % slower, inside its interval:
// the run's own check of its intervals. Its trials' knob is knobs::kPositiveControl and its default
// name begins "slowPCT.".
#pragma once

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/records.h"

namespace tunebench::suite {

class SuiteError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Arm {
  std::string name;  // "off", "on", "channels_last=on,no_grad=off"
  nlohmann::json settings = nlohmann::json::object();  // knob id -> value (arm's own only)
};

// The most workers an experiment may ask for (`workers`, `max_workers`).
inline constexpr int kMostWorkers = 1000;

struct Experiment {
  std::string name;
  std::string knob;                  // catalog id, "factorial", or "aa" (an A/A control)
  std::vector<std::string> factors;  // the knobs of a factorial experiment
  std::vector<std::string> varied;  // the catalog ids it varies: its knob (an A/A's too) or factors
  models::ModelSpec model;
  Mode mode = Mode::infer;
  int64_t batch = 8;
  // Shared by every arm, as the suite gives them: host-dependent values stay symbolic
  // (omp_threads "all") until the plan resolves them.
  nlohmann::json settings = nlohmann::json::object();
  std::vector<Arm> arms;
  int processes = 2;
  int warmup = 2;
  int samples = 5;
  int iterations = 1;
  double timeout_s = 300;
  // How the arms are measured (the "design" field), after parsing one of: "processes", each arm
  // in `processes` worker processes of its own, one after another; "paired", `workers` workers
  // each holding both arms and alternating them in ABBA blocks (worker/paired.h), where the arms
  // differ only in knobs that switch inside a process (knobs::pairable); "paired_processes",
  // `workers` resident pairs: each arm in a process of its own with its own start-time setup, both
  // kept alive and alternating ABBA blocks (run/resident.h), for knobs that act at process start or
  // on the whole process. The suite's "paired" becomes whichever of the two fits, "auto" too or
  // "processes" where neither can (factorials, arms of several processes). A paired arm takes
  // blocks / 2 · block_samples samples; "samples" is not used.
  std::string design = "processes";
  // paired: workers (one process holding both arms, or a resident pair of processes); at least 3
  // (the interval has workers − 1 degrees of freedom), and an even count balances which arm each
  // worker builds and times first.
  int workers = 4;
  int blocks = 16;        // paired: ABBA blocks per worker (even: blocks 2j and 2j+1 pair)
  int block_samples = 4;  // paired: samples per block; the first of each is discarded
  // paired: the seconds a worker's blocks should take (the "worker_s" field; 0, the default: the
  // blocks, block_samples and iterations as given). From an experiment's second worker on, its
  // shape is sized to its step as its first worker measured it (run/sizing.h): more blocks where
  // a step is short, one step a sample, fewer samples per block and fewer blocks where it is
  // long, so that a worker samples for about worker_s everywhere.
  double worker_s = 0;
  // paired: sampling until the effect is settled. After its `workers`, an experiment whose
  // interval is wider than the target (±2 %, stats::paired::Options) gets two more workers at a
  // time (one of each order) until it is settled, its workers have taken `budget_s` seconds in
  // all, or it has `max_workers` (at least `workers`; default the larger of 32 and workers).
  // budget_s 0: the planned workers only. The rule looks at the width only (settled()).
  double budget_s = 60;
  int max_workers = 32;  // at most kMostWorkers
  // paired: the half-width sampling on aims for, as a fraction (the "target_pct" field, a
  // percentage from 0.1 to 50; default 2: ±2 %). `tunebench check`'s confirmation sets it so that
  // a settled interval always decides its question (analysis/detect.h, confirm_target).
  double target = 0.02;
  // paired: the level of the interval the stopping rule measures against the target (the
  // "confidence_pct" field, 50 to 99.9999; default 95). Stage 2 of `tunebench check` raises it to
  // split the run's false-alarm rate over its A/Bs (detect::confirm_confidence). The run's stored
  // effects stay 95 % intervals.
  double confidence = 0.95;
  // paired: stop as soon as the interval decides whether ON is slower by this fraction (the
  // "decide_pct" field, a percentage up to 50; 0, the default: off). Sampling then looks at
  // 16, 32, 64, … workers and at its last, with every interval at the experiment's confidence
  // split over those looks (detect::decision_looks), and stops at the first look whose interval
  // decides (detect::decide). `tunebench check` sets it to its threshold for stage 2.
  double decide = 0;
  // paired_processes: whether the two processes of a resident pair start their heaps at one
  // offset (the "heap_offset" field: "per_pair", the default, or "per_process"). Each draws it
  // afresh per pair either way (worker/heap_offset.h); shared, what the layout does to a process's
  // speed is common to both arms and cancels in the pair's ratio (A/As of stage 2's software A/B
  // here: the workers' spread of GPT tiny training fell from 15.9 to 12.9 %,
  // bench/offset_study.py).
  bool heap_offset_per_pair = true;
  bool aa = false;   // an A/A control: both arms run the knob's ON setting
  int slowdown = 0;  // a positive control: the ON arm PCT % slower (knobs.h)
  // The run's controls come first and keep their own budget_s, whatever the run's budget.
  bool is_control() const { return aa || slowdown > 0; }
  std::string device = "cpu";  // "cpu" or "cuda" (the "device" field; CUDA-only knobs imply it)
};

struct Suite {
  std::string path, name, description;
  std::string hash;     // sha256 of the file's bytes
  nlohmann::json json;  // as read
  std::vector<Experiment> experiments;
};

// Reads and validates; throws SuiteError with one clear message. A name without a folder that is
// no file here (`smoke`, `cpu-nightly.json`) names a suite tunebench ships: suites/NAME.json of
// the checkout, or of the installed prefix (core/build_paths.h).
Suite load(const std::string& path);
// The path of the shipped suite `name` names, as load() finds it; empty if none.
std::string shipped_suite(const std::string& name);
Suite parse(const std::string& text, const std::string& path);

}  // namespace tunebench::suite

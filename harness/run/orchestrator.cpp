// `tunebench run`: a new run's checked preamble (the suite and its plan, the refusals, the
// database, the host's state), its record, then its loop (run/run_loop.h); a resume is handed to
// run/resume.h. Spawning is in spawn.cpp, a worker's command line and environment in
// worker_launch.cpp, what its outcome means in worker_result.cpp, one unit of the loop in
// trial_unit.cpp, what a run and a resume share before measuring in run_start.cpp.
#include "run/orchestrator.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <iostream>
#include <memory>
#include <random>
#include <set>

#include "core/liveness.h"
#include "knobs/knobs.h"
#include "models/registry.h"
#include "plan/plan.h"
#include "plan/suite.h"
#include "run/host.h"
#include "run/resume.h"
#include "run/run_loop.h"
#include "run/run_start.h"
#include "run/slurm.h"
#include "store/storage.h"

namespace tunebench::orchestrator {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

std::string new_uuid() {
  std::random_device rd;
  std::mt19937_64 gen((uint64_t(rd()) << 32) ^ rd() ^
                      uint64_t(Clock::now().time_since_epoch().count()));
  uint64_t hi = gen(), lo = gen();
  hi = (hi & ~0xF000ULL) | 0x4000ULL;              // version 4
  lo = (lo & ~(0xC0ULL << 56)) | (0x80ULL << 56);  // variant 1
  const std::string h = fmt::format("{:016x}{:016x}", hi, lo);
  return h.substr(0, 8) + "-" + h.substr(8, 4) + "-" + h.substr(12, 4) + "-" + h.substr(16, 4) +
         "-" + h.substr(20);
}

namespace {

// Bytes of memory the kernel says can be had now without swapping (MemAvailable).
double available_memory_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  double kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit) {
    if (key == "MemAvailable:") return kb * 1024;
  }
  return 0;
}

// Empty when every experiment's estimated memory fits in what is available; otherwise the
// message that refuses the run before anything starts.
std::string memory_refusal(const std::vector<TrialSpec>& trials) {
  const double available = available_memory_bytes();
  if (available <= 0) return "";
  std::set<std::string> seen;
  for (const auto& t : trials) {
    if (!seen.insert(t.experiment).second) continue;
    // A resident pair holds both arms' processes at once.
    const double need = models::estimate_trial_bytes(t.model, t.batch, t.mode == Mode::train) *
                        (t.pairing.resident ? 2 : 1);
    if (need > available) {
      return fmt::format(
          "experiment {} ({}/{} {}, batch {}) needs an estimated {:.1f} GiB (weights, gradients "
          "and "
          "optimizer state, activations, LibTorch), more than the {:.1f} GiB available now: lower "
          "the batch or use a smaller preset",
          t.experiment, t.model.model, t.model.preset, to_string(t.mode), t.batch, need / (1 << 30),
          available / (1 << 30));
    }
  }
  return "";
}

// Empty when the run may start; otherwise why it is refused before anything starts: more trials
// than kLargeRunTrials without `large`, or an experiment that needs more memory than there is.
std::string refusal(const std::vector<TrialSpec>& trials, const plan::Plan& plan, bool large) {
  if (trials.size() > kLargeRunTrials && !large) {
    // Each trial is a worker process of its own: a second of start-up each is a lower bound.
    return fmt::format(
        "{} trials ({} experiments); each starts a worker process, so this run takes more than {} "
        "before measuring anything. Pass --large to run it anyway, or --filter REGEX to run part "
        "of it",
        trials.size(), plan.experiments.size(),
        fmt::format("{:.1f} hours", double(trials.size()) / 3600));
  }
  return memory_refusal(trials);
}

// The plan of a suite, before it runs (`run --model`, and `--dry-run`): what each model from a
// file offers, each experiment that runs with its design, and each that does not with why.
void print_plan(const suite::Suite& suite, const plan::Plan& plan, const plan::ModelOffers& offers,
                size_t trials) {
  for (const auto& [path, o] : offers) {
    const std::string what = !o.format.empty()        ? " (" + o.format + " archive"
                             : !o.model_class.empty() ? " (class " + o.model_class
                                                      : "";
    std::cerr << fmt::format(
        "model {}{}: {} parameters{}, output a {}, sha256 {}; 2-D convolution: {}{}\n", path,
        what.empty() ? "" : what + ", in the Python worker)", models::with_commas(o.parameters),
        o.trainable ? " (trainable)" : "", o.output, o.sha256.substr(0, 12),
        o.conv2d ? "yes" : "no", o.note.empty() ? "" : "; " + o.note);
  }
  size_t runs = 0;
  for (const auto& p : plan.experiments) runs += p.not_applicable.empty() ? 1 : 0;
  std::cerr << fmt::format(
      "suite {}: {} experiments to run ({} trials planned), {} not "
      "applicable\n",
      suite.name, runs, trials, plan.experiments.size() - runs);
  // In the order the run takes them: the controls first (plan::trials).
  for (const bool controls : {true, false}) {
    for (const auto& p : plan.experiments) {
      const suite::Experiment& x = p.experiment;
      if (!p.not_applicable.empty() || x.is_control() != controls) continue;
      std::string how;
      if (x.is_control())
        how += fmt::format(", a control: runs first, sampling on within its own budget_s of {:g} s",
                           x.budget_s);
      if (x.design != "processes" && x.worker_s > 0)
        how +=
            fmt::format(", sized to the step from its second worker (worker_s {:g} s)", x.worker_s);
      std::cerr << fmt::format("  run             {} ({}){}\n", x.name, x.design,
                               how.empty() ? "" : ":" + how.substr(1));
    }
  }
  for (const auto& p : plan.experiments) {
    if (!p.not_applicable.empty()) {
      std::cerr << fmt::format("  not applicable  {}: {}\n", p.experiment.name, p.not_applicable);
    }
  }
}

// What a run stores of its file models: each one's offer beside the suite, and each file's hash
// in the software fingerprint, so that a changed file is different software (check compares
// only runs of the same software unless told otherwise).
void record_file_models(const plan::ModelOffers& offers, RunRecord& run) {
  if (offers.empty()) return;
  for (const auto& [path, offer] : offers) {
    run.suite["models"][path] = models::to_json(offer);
    run.software["model_files"][path] = offer.sha256;
  }
}

// The catalog's claim for every knob the suite uses, so that reports show claim and measurement
// side by side from the database alone.
json knob_claims(const suite::Suite& suite) {
  json claims = json::object();
  for (const auto& x : suite.experiments) {
    std::vector<std::string> ids = x.factors;
    for (const auto& arm : x.arms) {
      for (const auto& [id, value] : arm.settings.items()) ids.push_back(id);
    }
    for (const auto& id : ids) {
      if (const knobs::Knob* k = knobs::find(id)) {
        claims[id] = {{"change", k->change},
                      {"claim", k->claim},
                      {"false_claim", k->false_claim},
                      {"where", k->where},
                      {"memory_effect", k->memory_effect}};
      }
    }
  }
  return claims;
}

// A new run as begin_run stores it, but for the host's state: the suite with the experiments not
// applicable here (and why), its filter and its knobs' claims; who started it, when, on what host
// and software, with its models from files.
RunRecord run_record(const RunOptions& options, const suite::Suite& suite, const plan::Plan& plan,
                     const plan::ModelOffers& offers) {
  RunRecord run;
  run.uuid = options.uuid.empty() ? new_uuid() : options.uuid;
  run.suite_name = suite.name;
  run.suite_hash = suite.hash;
  json not_applicable = json::array();
  for (const auto& [x, why] : plan.experiments) {
    if (!why.empty()) not_applicable.push_back({{"experiment", x.name}, {"reason", why}});
  }
  run.suite = {{"path", suite.path},
               {"suite", suite.json},
               {"not_applicable", not_applicable},
               {"filter", options.filter},
               {"claims", knob_claims(suite)}};
  run.label = options.label;
  run.git_revision = host::git_revision();
  run.command_line = options.command_line;
  run.started_at = now_iso8601();
  run.host = host::host_fingerprint();
  run.software = host::software_fingerprint();
  record_file_models(offers, run);
  return run;
}

}  // namespace

// The checked preamble of a run (suite, plan, filter, refusals, database, host state) in the
// order a user meets its errors, each with its own message; then its record and its loop.
int run(const RunOptions& given) {
  RunOptions options = given;  // with the allocation found once, for the run and its loop
  if (options.ranks_over_srun) {
    try {
      options.allocation = slurm::current_allocation();
    } catch (const std::exception& e) {
      std::cerr << "tunebench: error: " << e.what() << "\nNothing was run or written.\n";
      return 2;
    }
  }
  if (!options.resume.empty()) return resume(options);
  if (!ready_to_run(options)) return 2;
  const knobs::HostCaps caps = host::capabilities();
  suite::Suite suite;
  plan::Plan plan;
  std::vector<TrialSpec> trials;
  plan::ModelOffers offers;
  const bool from_model = !options.model.path.empty() || !options.model.builtin.empty();
  const std::string source = options.suite ? options.suite->path
                             : from_model  ? "--model " + options.model.name()
                                           : options.suite_path;
  try {
    suite = options.suite ? *options.suite
            : from_model  ? plan::model_suite(options.model)
                          : suite::load(options.suite_path);
    offers = read_file_models(suite);
    plan = plan::make(suite, caps, offers);
    trials = plan::trials(plan, options.filter);
  } catch (const suite::SuiteError& e) {
    std::cerr << "tunebench: error: " << e.what() << "\nNothing was run or written.\n";
    return 2;
  } catch (const models::InvalidSpec& e) {
    std::cerr << "tunebench: error: " << (from_model ? "" : options.suite_path + ": ") << e.what()
              << "\nNothing was run or written.\n";
    return 2;
  }
  if ((from_model && !options.quiet) || options.dry_run)
    print_plan(suite, plan, offers, trials.size());
  if (options.dry_run) return 0;
  if (const std::string why = refusal(trials, plan, options.large); !why.empty()) {
    std::cerr << "tunebench: error: " << source << ": " << why
              << ".\nNothing was run or written.\n";
    return 2;
  }
  std::unique_ptr<storage::Database> db;
  try {
    db = std::make_unique<storage::Database>(options.db_path);
    interrupt_gone_runs(*db, options);
  } catch (const storage::StorageError& e) {
    std::cerr << "tunebench: error: " << e.what() << "\n";
    return 2;
  }

  RunRecord run = run_record(options, suite, plan, offers);
  const json& not_applicable = run.suite.at("not_applicable");
  json waited;
  if (options.wait_quiet_s > 0) {
    if (!options.quiet) {
      std::cerr << fmt::format(
          "waiting up to {:g}s for a quiet host (CPU pressure under {:g}% over 10 s)\n",
          options.wait_quiet_s, 100 * host::kQuietPressure);
    }
    bool quiet = false;
    const double seconds = host::wait_until_quiet(options.wait_quiet_s, quiet);
    waited = {{"seconds", std::round(seconds)}, {"quiet", quiet}};
    if (!options.quiet) {
      std::cerr << (quiet ? fmt::format("the host was quiet after {:.0f}s\n", seconds)
                          : fmt::format("the host was still busy after {:.0f}s: the run starts "
                                        "anyway, and says so\n",
                                        seconds));
    }
  }
  const host::HostState state = host::host_state();
  run.host_state = state.facts;
  if (!waited.is_null()) run.host_state["waited_for_quiet"] = waited;
  run.host_state["warnings"] = state.warnings;
  run.host_quiet = state.warnings.empty();
  for (auto& t : trials) t.run_uuid = run.uuid;
  db->begin_run(run, liveness::to_json(liveness::this_process()));

  if (!options.quiet) {
    std::cerr << fmt::format("run {} of suite {} ({} trials, {} not applicable) into {}\n",
                             run.uuid, suite.name, trials.size(), not_applicable.size(),
                             options.db_path);
    for (const auto& w : state.warnings) std::cerr << "warning: host is not quiet: " << w << "\n";
    for (const auto& na : from_model ? json::array() : not_applicable) {
      std::cerr << "not applicable: " << na["experiment"].get<std::string>() << ": "
                << na["reason"].get<std::string>() << "\n";
    }
  }
  RunLoop loop(*db, run.uuid, options, caps.gpus, {}, 0, 0, sampling_of(plan));
  return execute_or_interrupt(loop, *db, run.uuid, trials, options);
}

}  // namespace tunebench::orchestrator

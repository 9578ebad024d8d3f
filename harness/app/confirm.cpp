#include "app/confirm.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "analysis/effects.h"
#include "app/commands.h"
#include "knobs/cuda.h"
#include "plan/suite.h"
#include "run/orchestrator.h"

namespace tunebench::cli {

namespace {

using nlohmann::json;

// The flagged benchmark's A/B: its model, mode, batch, shape and settings, the last-good build
// against this one.
json ab_experiment(const storage::Database::StoredTrial& t, const std::string& last_good,
                   const check::Report& report, const ConfirmOptions& options) {
  json settings = t.spec.settings;
  std::string device = "cpu";
  if (settings.value(knobs::cuda::kDevice, "cpu") == "cuda") device = "cuda";
  settings.erase(knobs::cuda::kDevice);  // given as the experiment's "device"
  settings.erase("worker_build");        // the arms say which build runs
  json x = {{"name", t.spec.experiment + "/" + t.spec.arm},
            {"knob", "worker_build"},
            {"model", t.spec.model.model},
            {"preset", t.spec.model.preset},
            {"options", t.spec.model.options},
            {"mode", to_string(t.spec.mode)},
            {"batch", t.spec.batch},
            {"warmup", std::max(t.spec.warmup, 2)},
            {"iterations", t.spec.iterations},
            {"timeout_s", t.spec.timeout_s},
            {"device", device},
            {"settings", settings},
            {"arms", {{"off", {{"worker_build", last_good}}}, {"on", {{"worker_build", "self"}}}}},
            {"design", "auto"},
            {"workers", options.workers},
            {"budget_s", options.budget_s},
            // Its budget or its target stops it, not a count of workers: the default 32 pairs of
            // a tiny benchmark took ~60 s, so a 240-s budget never came into play.
            {"max_workers", suite::kMostWorkers},
            {"target_pct", 100 * detect::confirm_target(report.threshold)},
            // and stops at the first of its looks that decides (detect::decision_looks)
            {"decide_pct", 100 * report.threshold}};
  if (t.spec.pairing.paired()) {
    x["blocks"] = t.spec.pairing.blocks;
    x["block_samples"] = t.spec.pairing.block_samples;
  } else {
    x["blocks"] = 8;
    x["block_samples"] = std::max(3, std::min(t.spec.samples, 6));
  }
  return x;
}

// The newest run labelled `label`.
std::string newest_run_labelled(const storage::Database& db, const std::string& label) {
  const auto uuids = db.run_uuids();
  for (auto it = uuids.rbegin(); it != uuids.rend(); ++it) {
    if (db.run(*it).record.label == label) return *it;
  }
  return "";
}

}  // namespace

namespace {

// The flagged benchmarks of the report, each with the A/B experiment that confirms it (from its
// first ok trial); unflagged ones are marked unchanged.
std::vector<check::BenchmarkCheck*> flagged_with_experiments(check::Report& report,
                                                             const ConfirmOptions& options,
                                                             const std::string& last_good,
                                                             json& experiments) {
  std::vector<check::BenchmarkCheck*> flagged;
  const storage::Database db(options.db);
  for (auto& b : report.benchmarks) {
    if (!b.flagged) {
      if (b.status != "no baseline") b.status = "unchanged";
      continue;
    }
    for (const auto& t : db.measured_trials(report.run_uuid, b.experiment)) {
      if (t.spec.arm != b.arm || t.result.status != "ok") continue;
      experiments.push_back(ab_experiment(t, last_good, report, options));
      flagged.push_back(&b);
      break;
    }
  }
  return flagged;
}

// Runs the A/B experiments as one suite (a temporary file), labelled `label`, into the database.
void run_ab_suite(const json& experiments, const std::string& label, const std::string& last_good,
                  const check::Report& report, const ConfirmOptions& options,
                  const detect::Looks& looks, int ab_count) {
  const json suite = {
      {"name", check::kConfirmSuite},
      {"description", fmt::format("tunebench check, stage 2: the benchmarks of run {} flagged "
                                  "against their history, this build against {}",
                                  report.run_uuid, last_good)},
      {"experiments", experiments}};
  std::string path = (std::filesystem::temp_directory_path() / "tunebench-confirm-XXXXXX").string();
  const int fd = mkstemp(path.data());
  if (fd < 0) throw std::runtime_error("cannot create a temporary suite file in " + path);
  close(fd);
  std::ofstream(path) << suite.dump(2) << "\n";
  if (!options.quiet) {
    fmt::print(stderr,
               "[check] stage 2: {} flagged benchmark(s), a paired A/B each against {}, decided "
               "at {:g} % ({:g} % false alarms per run over {} A/B(s) and {} looks each: {} "
               "workers and every doubling, and the last)\n",
               ab_count, last_good, 100 * looks.confidence, 100 * report.false_alarm, ab_count,
               looks.count, detect::kFirstLook);
  }
  orchestrator::RunOptions run;
  run.suite_path = path;
  run.db_path = options.db;
  run.label = label;
  run.quiet = options.quiet;
  run.command_line = options.command_line;
  const int rc = orchestrator::run(run);
  std::error_code ec;
  std::filesystem::remove(path, ec);
  if (rc == kExitBadInput) {
    throw std::invalid_argument("the stage-2 A/B run could not start (see the message above)");
  }
}

// Each flagged benchmark's confirmation from the A/B run labelled `label`: its paired estimate at
// the level of its looks, and the decision on it.
void judge(const std::vector<check::BenchmarkCheck*>& flagged, const std::string& label,
           const std::string& last_good, const check::Report& report, const ConfirmOptions& options,
           const detect::Looks& looks, int ab_count) {
  const storage::Database db(options.db);
  const std::string ab_run = newest_run_labelled(db, label);
  stats::paired::Options level;
  level.confidence = looks.confidence;
  for (auto* b : flagged) {
    check::Confirmation c;
    c.run_uuid = ab_run;
    c.last_good = last_good;
    c.confidence = looks.confidence;
    c.ab_count = ab_count;
    c.looks = looks.count;
    const std::string name = b->experiment + "/" + b->arm;
    if (!ab_run.empty()) {
      // The A/B's paired estimate (the run's stored effect is the same at 95 %), at the level
      // of its looks.
      const auto p = analysis::paired_time_estimate(db.measured_trials(ab_run, name), name, level);
      if (p.workers > 0) {
        c.ratio = p.ratio;
        c.lo = p.lo;
        c.hi = p.hi;
        c.half_width = p.half_width;
      }
      c.workers = p.workers;
      c.pairs = p.pairs;
      c.dropped = p.dropped;
    }
    c.decision = detect::decide(c.ratio, c.lo, c.hi, report.threshold, looks.confidence);
    b->status = c.decision.status;
    b->unconfirmed = false;
    b->confirmation = c;
  }
}

}  // namespace

void confirm(check::Report& report, const ConfirmOptions& options) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(options.last_good, ec) ||
      access(options.last_good.c_str(), X_OK) != 0) {
    throw std::invalid_argument(
        fmt::format("--confirm-with '{}' is not an executable file: give the kept last-good "
                    "tunebench binary (ci/nightly.sh keeps it in --last-good)",
                    options.last_good));
  }
  const std::string last_good =
      std::filesystem::absolute(options.last_good).lexically_normal().string();
  report.confirmed = true;
  json experiments = json::array();
  const auto flagged = flagged_with_experiments(report, options, last_good, experiments);
  if (flagged.empty()) return;
  // Stage 2 spends the run's false-alarm rate on its A/Bs, and each A/B's share on its looks:
  // each samples on until an interval at that level decides at a look or is narrow enough to
  // decide, and decides on it.
  const int ab_count = static_cast<int>(flagged.size());
  const double confidence = detect::confirm_confidence(report.false_alarm, ab_count);
  const detect::Looks looks = detect::decision_looks(confidence, suite::kMostWorkers);
  for (auto& x : experiments) x["confidence_pct"] = 100 * confidence;
  const std::string label = "confirm " + report.run_uuid.substr(0, 8);
  run_ab_suite(experiments, label, last_good, report, options, looks, ab_count);
  judge(flagged, label, last_good, report, options, looks, ab_count);
}

}  // namespace tunebench::cli

// Resuming a run (run/resume.h).
#include "run/resume.h"

#include <fmt/format.h>

#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>

#include "core/liveness.h"
#include "plan/plan.h"
#include "plan/suite.h"
#include "run/host.h"
#include "run/run_loop.h"
#include "run/run_start.h"
#include "store/storage.h"

namespace tunebench::orchestrator {

using nlohmann::json;

namespace {

// The stored suite (`saved`: RunRecord::suite) planned again on this host, as the run planned it.
// Throws when it no longer parses or plans, or when a model file has changed since the run
// started (its sha256 then is stored beside the suite).
plan::Plan plan_again(const json& saved, const knobs::HostCaps& caps) {
  const suite::Suite s =
      suite::parse(saved.at("suite").dump(), saved.value("path", "stored suite"));
  const plan::ModelOffers offers = read_file_models(s);
  for (const auto& [path, offer] : offers) {
    const std::string was = saved.value("models", json::object())
                                .value(path, json::object())
                                .value("sha256", std::string());
    if (was != offer.sha256) {
      throw std::runtime_error(fmt::format(
          "{} has changed since the run started (sha256 {} then, {} now): its trials would "
          "measure two models; start a new run",
          path, was.substr(0, 12), offer.sha256.substr(0, 12)));
    }
  }
  return plan::make(s, caps, offers);
}

}  // namespace

int resume(const RunOptions& options) {
  if (!ready_to_run(options)) return 2;
  const knobs::HostCaps caps = host::capabilities();
  std::unique_ptr<storage::Database> db;
  std::string uuid;
  storage::Database::StoredRun stored;
  try {
    db = std::make_unique<storage::Database>(options.db_path);
    uuid = storage::resolve_run(*db, options.resume);
    interrupt_gone_runs(*db, options, uuid);
    stored = db->run(uuid);
  } catch (const storage::StorageError& e) {
    std::cerr << "tunebench: error: " << e.what() << "\n";
    return 2;
  }
  std::vector<TrialSpec> all;
  plan::Plan resumed_plan;
  try {
    const json& saved = stored.record.suite;
    resumed_plan = plan_again(saved, caps);
    all = plan::trials(resumed_plan, saved.value("filter", ""));
  } catch (const std::exception& e) {
    std::cerr << "tunebench: error: cannot resume run " << uuid << ": " << e.what() << "\n";
    return 2;
  }
  std::set<int> done;
  std::map<std::string, double> guard_reference;
  int failed = 0, invalid = 0;
  for (const auto& t : db->trials(uuid)) {
    done.insert(t.spec.sequence);
    if (t.result.status == "failed") ++failed;
    if (t.result.status == "invalid") ++invalid;
    if (t.result.status == "ok") guard_reference.emplace(t.spec.experiment, t.result.check_value);
  }
  std::vector<TrialSpec> missing;
  for (auto& t : all) {
    t.run_uuid = uuid;
    if (!done.count(t.sequence)) missing.push_back(t);
  }
  // A finished run given a budget beyond what it has taken samples its open verdicts on.
  const double spent_s = stored.sampling.is_object() ? stored.sampling.value("elapsed_s", 0.0) : 0;
  const bool more_budget = options.budget_s > spent_s;
  if (missing.empty() && stored.status != "running" && stored.status != "interrupted" &&
      !more_budget) {
    if (!options.quiet) {
      std::cerr << fmt::format(
          "nothing to resume: the run is {}; a --budget above the {:.0f}s it has taken samples "
          "its open verdicts on\n",
          stored.status, spent_s);
    }
    return stored.status == "completed" ? 0 : 1;
  }
  // The experiments whose planned trials are all stored: their last planned worker, for the
  // budget's sampling and the controls at the end (RunLoop::carry_on).
  std::set<std::string> unfinished;
  for (const auto& t : missing) unfinished.insert(t.experiment);
  std::map<std::string, std::pair<TrialSpec, TrialSpec>> last_planned;
  for (size_t i = 0; i + 1 < all.size(); ++i) {
    const TrialSpec &off = all[i], &on = all[i + 1];
    if (!off.pairing.paired() || off.arm != "off" || on.arm != "on" ||
        on.experiment != off.experiment || on.process_index != off.process_index ||
        unfinished.count(off.experiment)) {
      continue;
    }
    auto [it, added] = last_planned.try_emplace(off.experiment, off, on);
    if (!added && it->second.first.process_index < off.process_index) it->second = {off, on};
  }
  std::vector<std::pair<TrialSpec, TrialSpec>> finished;
  for (const auto& t : all) {  // in the plan's order
    auto it = last_planned.find(t.experiment);
    if (it == last_planned.end()) continue;
    finished.push_back(it->second);
    last_planned.erase(it);
  }
  // Who runs it now; refused while its orchestrator is alive here (two would write one run).
  // The host as it is now, after leftovers were cleared, is stored beside the start's.
  const host::HostState state = host::host_state();
  json resumed_state = state.facts;
  resumed_state["warnings"] = state.warnings;
  resumed_state["at"] = now_iso8601();
  try {
    db->reopen_run(uuid, liveness::to_json(liveness::this_process()), resumed_state,
                   state.warnings.empty());
  } catch (const storage::StorageError& e) {
    std::cerr << "tunebench: error: " << e.what() << "\n";
    return 2;
  }
  if (!options.quiet) {
    std::string was = stored.status;
    if (stored.status == "running") {
      // Not alive here (refused above): on another host, or stored before schema 7.
      was += ": " + liveness::judge(liveness::orchestrator_from_json(stored.orchestrator),
                                    liveness::this_machine())
                        .why;
    } else if (stored.orchestrator.contains("gone")) {
      was += ": " + stored.orchestrator["gone"].value("why", "its orchestrator is gone");
    }
    std::cerr << fmt::format("resuming run {} ({}): {} of {} trials stored, {} to run\n", uuid, was,
                             done.size(), all.size(), missing.size());
    for (const auto& w : state.warnings) std::cerr << "warning: host is not quiet: " << w << "\n";
  }
  // The run's budget and clock go on where they were (RunLoop restores the clock): a budget given
  // again replaces the stored one, and is said.
  RunOptions resumed = options;
  const json& was = stored.sampling;
  if (was.is_object()) {
    const double stored_budget =
        was.value("budget_s", json()).is_number() ? was["budget_s"].get<double>() : 0;
    const double spent = was.value("elapsed_s", 0.0);
    if (options.budget_s <= 0) resumed.budget_s = stored_budget;
    if (was.contains("controls_again_after_s") && was["controls_again_after_s"].is_number())
      resumed.controls_again_after_s = was["controls_again_after_s"];
    resumed.fit_plan = options.fit_plan || was.value("fit_plan", false);
    // The planned workers --fit-plan left out stay out.
    if (was.contains("plan_fit") && was["plan_fit"].is_object()) {
      const json& fit = was["plan_fit"];
      const auto cut = std::remove_if(missing.begin(), missing.end(), [&](const TrialSpec& t) {
        return fit.contains(t.experiment) && t.process_index >= fit[t.experiment].get<int>();
      });
      if (!options.quiet && cut != missing.end()) {
        std::cerr << fmt::format("{} of them left out: --fit-plan cut the plan to its budget\n",
                                 missing.end() - cut);
      }
      missing.erase(cut, missing.end());
    }
    if (!options.quiet && (stored_budget > 0 || options.budget_s > 0)) {
      std::cerr << fmt::format(
          "the run's budget: {}; {:.0f}s of it spent before{}\n",
          resumed.budget_s > 0 ? fmt::format("{:g}s", resumed.budget_s) : "none", spent,
          options.budget_s > 0 && stored_budget > 0 && options.budget_s != stored_budget
              ? fmt::format(" (it started with {:g}s; --budget {:g} now)", stored_budget,
                            options.budget_s)
              : "");
    }
  }
  RunLoop loop(*db, uuid, resumed, caps.gpus, guard_reference, failed, invalid,
               sampling_of(resumed_plan));
  loop.carry_on(finished);
  return execute_or_interrupt(loop, *db, uuid, missing, resumed);
}

}  // namespace tunebench::orchestrator

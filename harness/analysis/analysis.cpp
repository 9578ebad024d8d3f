#include "analysis/analysis.h"

#include <fmt/format.h>

namespace tunebench::analysis {

using nlohmann::json;

RunState run_state(const storage::Database::StoredRun& run, const liveness::Here& here,
                   const std::string& db_path) {
  RunState state{run.status, run.status, "", "", ""};
  const json& record = run.orchestrator;
  if (run.status == "running") {
    const auto verdict = liveness::judge(liveness::orchestrator_from_json(record), here);
    state.detail = verdict.why;
    switch (verdict.state) {
      case liveness::State::kAlive:
        state.liveness = "alive";
        break;
      case liveness::State::kGone:
        state.liveness = "gone";
        state.status = "interrupted";
        state.shown = "interrupted (orchestrator gone)";
        break;
      case liveness::State::kElsewhere:
        state.liveness = "elsewhere";
        state.shown = verdict.why;
        state.detail.clear();
        break;
      case liveness::State::kUnrecorded:
        state.liveness = "unrecorded";
        break;
    }
  } else if (run.status == "interrupted" && record.is_object() && record.contains("gone")) {
    // Marked by a writer that found its orchestrator gone (Database::interrupt_gone_runs).
    const json& gone = record.at("gone");
    state.shown = "interrupted (orchestrator gone)";
    state.detail = fmt::format("{} (found {})", gone.value("why", "its orchestrator is gone"),
                               gone.value("found_at", "?"));
  }
  if (state.status == "interrupted")
    state.resume = liveness::resume_command(run.record.uuid, db_path);
  return state;
}

std::string certification_line(const std::string& certification) {
  if (certification.empty()) return "";
  const auto why = certification.substr(certification.find(": ") + 2);
  return not_certified(certification)
             ? "NOT CERTIFIED by its controls, nor any verdict of this run: " + why
             : "certified by its controls: " + why;
}

}  // namespace tunebench::analysis

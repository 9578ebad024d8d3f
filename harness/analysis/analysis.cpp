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

std::string control_words(const ExperimentReport& x, const NamedEffect& e) {
  const stats::Effect& f = e.effect;
  if (!is_control(x) || e.metric != "time" || !std::isfinite(f.lo) || !std::isfinite(f.hi) ||
      !(f.lo > 0)) {
    return "";
  }
  if (x.knob == "aa") {
    return f.lo <= 1 && 1 <= f.hi ? fmt::format("holds 1 (±{:.1f}%)", 100 * half_width(f))
                                  : "shows an effect: the host was noisy";
  }
  return f.lo > 1 ? "detected" : "missed";
}

std::string effect_text(const ExperimentReport& x, const NamedEffect& e) {
  const std::string words = control_words(x, e);
  return words.empty() ? stats::format_effect(e.effect)
                       : stats::format_ratio(e.effect) + " " + words;
}

std::string certification_line(const std::string& certification) {
  if (certification.empty()) return "";
  const auto why = certification.substr(certification.find(": ") + 2);
  return not_certified(certification)
             ? "NOT CERTIFIED by its controls, nor any verdict of this run: " + why
             : "certified by its controls: " + why;
}

}  // namespace tunebench::analysis

// A worker's outcome read as a trial's result, and its evidence checked (run/worker_result.h).
#include "run/worker_result.h"

#include <fmt/format.h>
#include <signal.h>

#include <cstring>

#include "knobs/evidence.h"
#include "knobs/knobs.h"

namespace tunebench::orchestrator {

using nlohmann::json;

namespace {

// Why what the worker left is no result ("" when it printed one: then `parsed` holds it).
std::string unusable(const WorkerOutcome& w, double timeout_s, json& parsed) {
  if (w.timed_out)
    return fmt::format("timed out after {:.0f} s; its process group was killed", timeout_s);
  parsed = json::parse(w.out, nullptr, /*allow_exceptions=*/false);
  if (w.signal) {
    return fmt::format("worker killed by signal {} ({}){}", w.signal, strsignal(w.signal),
                       w.signal == SIGKILL ? ": killed from outside, e.g. by the kernel's "
                                             "out-of-memory killer"
                                           : "");
  }
  if (parsed.is_discarded() || !parsed.is_object()) {
    return fmt::format("worker exited with code {} and printed no result{}", w.exit_code,
                       w.out.empty() ? "" : ": " + w.out.substr(0, 200));
  }
  return "";
}

}  // namespace

TrialResult failed_result(const WorkerOutcome& w, const std::string& why) {
  TrialResult r;
  r.status = "failed";
  r.error = why;
  r.worker_stderr = w.err_tail;
  return r;
}

TrialResult interpret(const WorkerOutcome& w, const TrialSpec& spec) {
  json parsed;
  if (const std::string why = unusable(w, spec.timeout_s, parsed); !why.empty()) {
    return failed_result(w, why);
  }
  TrialResult r;
  try {
    r = trial_result_from_json(parsed);
  } catch (const std::exception& e) {
    return failed_result(w, std::string("worker printed a malformed result: ") + e.what());
  }
  r.worker_stderr = w.err_tail;
  if (w.exit_code != 0 && r.status == "ok")
    return failed_result(w, fmt::format("worker exited with code {}", w.exit_code));
  return r;
}

std::vector<TrialResult> interpret_paired(const WorkerOutcome& w, const TrialSpec& off) {
  json parsed;
  if (const std::string why = unusable(w, off.timeout_s, parsed); !why.empty()) {
    return {failed_result(w, why), failed_result(w, why)};
  }
  PairedResult p;
  try {
    p = paired_result_from_json(parsed);
  } catch (const std::exception& e) {
    const std::string why = std::string("worker printed a malformed result: ") + e.what();
    return {failed_result(w, why), failed_result(w, why)};
  }
  if (p.status != "ok" || w.exit_code != 0) {
    const std::string why =
        p.status != "ok" ? p.error : fmt::format("worker exited with code {}", w.exit_code);
    return {failed_result(w, why), failed_result(w, why)};
  }
  p.off.worker_stderr = p.on.worker_stderr = w.err_tail;
  return {std::move(p.off), std::move(p.on)};
}

void check_evidence(const TrialSpec& spec, Mode mode, TrialResult& r, const LaunchPaths& links) {
  if (auto it = r.evidence.find(knobs::evidence::kExecutable);
      it != r.evidence.end() && it->is_string()) {
    *it = links.original_of(it->get<std::string>());
  }
  if (r.status != "ok") return;
  const auto wrong = knobs::check_evidence(spec.settings, mode, r.evidence);
  if (wrong.empty()) return;
  r.status = "invalid";
  for (const auto& why : wrong) r.error += (r.error.empty() ? "" : "; ") + why;
}

}  // namespace tunebench::orchestrator

// Numbers once: a run's arm summaries, effects, intervals, verdicts and factorial contrasts are
// computed here, from its trials, once, and stored (storage::Database::store_effects) when the
// run finishes, when an older file is migrated to schema version 3 and when runs are merged
// (this file registers store_effects as the database's effects writer). `tunebench show`,
// `export` and reports/render.py read the stored rows. No torch.
#pragma once

#include <string>
#include <vector>

#include "analysis/analysis.h"
#include "analysis/paired.h"

namespace tunebench::analysis {

// The report of a run computed from its trials (what analyze() returns once it is stored).
RunReport compute_report(const storage::Database& db, const std::string& run_uuid);

// The report's numbers as the rows of arm_summaries and effects, and back.
storage::Database::RunEffects to_stored(const RunReport& report);
void apply_stored(RunReport& report, const storage::Database::RunEffects& stored);

// Whether the run's controls certify it, from their time effects: every A/A control's interval
// covers 1 and is within ±kCertifiedWidth (the "no effect beyond ±2 %" margin, which an A/A
// wider than it cannot support), and every positive control's excludes 1 (detected). "certified:
// …" with the controls' intervals, "not certified: …" with what failed, or empty for a run
// without controls.
inline constexpr double kCertifiedWidth = 0.02;
std::string certify(const RunReport& report);

// Computes the run's numbers and stores them, replacing earlier ones.
void store_effects(storage::Database& db, const std::string& run_uuid);

// The carry-over between the arms of paired experiment `experiment` (stats::paired::carry_over)
// over its workers whose two arms are both ok: what decides whether its estimate drops the first
// sample of every block, and whether sampling gives its later workers one-step blocks.
stats::paired::CarryOver paired_carry_over(
    const std::vector<storage::Database::StoredTrial>& trials, const std::string& experiment);

// The time effect of paired experiment `experiment` from a run's stored trials, exactly as
// compute_report computes it (the workers whose two arms are both ok): what the orchestrator's
// stopping rule (stats::paired::settled) looks at after each worker, at `options`' confidence
// (stage 2 of `tunebench check` decides on it at its own level, detect::confirm_confidence).
stats::paired::Effect paired_time_estimate(
    const std::vector<storage::Database::StoredTrial>& trials, const std::string& experiment,
    const stats::paired::Options& options = {});

// Main effects and two-factor interactions of a 2^k factorial experiment (k >= 2), as contrasts
// of the cells' medians (stats::contrast): main effect of factor i, weights s_i / 2^(k−1) (the
// geometric mean of its on/off ratios over the other factors' levels); interaction of i and j,
// weights s_i·s_j / 2^(k−2) ((AB · base) / (A · B) for two factors), with s = +1 where the
// factor is on and −1 where it is off. cells are arm names "a=on,b=off" (same factor order in
// each), groups their samples by process. None when the cells are not all 2^k of them or a cell
// has no samples.
std::vector<NamedEffect> factorial_effects(const std::vector<std::string>& cells,
                                           const std::vector<stats::Groups>& groups);

}  // namespace tunebench::analysis

// What analysis computed for a run (schema version 3): the arm_summaries and effects tables.
#include "store/internal.h"

namespace tunebench::storage {

using internal::bind_number_or_null;
using internal::guarded;
using internal::number_or_nan;

namespace {

constexpr const char* kArmColumns =
    "run_uuid, position, experiment, arm, trials_ok, trials_failed, trials_invalid, samples, "
    "median_seconds, mad_seconds, cv, trial_median_seconds, trial_median_low_seconds, "
    "trial_median_high_seconds, peak_rss_bytes, probe_seconds, page_faults_per_iteration, "
    "items_per_second";
constexpr const char* kEffectColumns =
    "run_uuid, position, experiment, kind, metric, compared, ratio, lo, hi, confidence, "
    "resamples, verdict, note, text";

void insert_arm(SQLite::Statement& st, const std::string& run_uuid, int position,
                const Database::ArmSummary& a) {
  st.bind(1, run_uuid);
  st.bind(2, position);
  st.bind(3, a.experiment);
  st.bind(4, a.arm);
  st.bind(5, a.ok);
  st.bind(6, a.failed);
  st.bind(7, a.invalid);
  st.bind(8, a.samples);
  int index = 9;
  for (double v : {a.median_seconds, a.mad_seconds, a.cv, a.trial_median_seconds,
                   a.trial_median_low_seconds, a.trial_median_high_seconds, a.peak_rss_bytes,
                   a.probe_seconds, a.page_faults_per_iteration, a.items_per_second}) {
    bind_number_or_null(st, index++, v);
  }
  st.exec();
  st.reset();
}

void insert_effect(SQLite::Statement& st, const std::string& run_uuid, int position,
                   const Database::StoredEffect& e) {
  st.bind(1, run_uuid);
  st.bind(2, position);
  st.bind(3, e.experiment);
  st.bind(4, e.kind);
  st.bind(5, e.metric);
  st.bind(6, e.compared);
  bind_number_or_null(st, 7, e.ratio);
  bind_number_or_null(st, 8, e.lo);
  bind_number_or_null(st, 9, e.hi);
  st.bind(10, e.confidence);
  st.bind(11, e.resamples);
  st.bind(12, e.verdict);
  st.bind(13, e.note);
  st.bind(14, e.text);
  st.exec();
  st.reset();
}

}  // namespace

void Database::store_effects(const std::string& run_uuid, const RunEffects& effects) {
  guarded(path_, "cannot store the effects of run " + run_uuid, [&] {
    internal::in_transaction(*db_, [&] {
      SQLite::Statement exists(*db_, "SELECT 1 FROM runs WHERE uuid = ?");
      exists.bind(1, run_uuid);
      if (!exists.executeStep()) throw internal::unknown_run(path_, run_uuid);
      for (const char* table : {"arm_summaries", "effects"}) {
        SQLite::Statement clear(*db_, fmt::format("DELETE FROM {} WHERE run_uuid = ?", table));
        clear.bind(1, run_uuid);
        clear.exec();
      }
      SQLite::Statement arms(*db_, fmt::format("INSERT INTO arm_summaries ({}) VALUES ({})",
                                               kArmColumns, internal::placeholders(18)));
      for (size_t i = 0; i < effects.arms.size(); ++i)
        insert_arm(arms, run_uuid, int(i), effects.arms[i]);
      SQLite::Statement rows(*db_, fmt::format("INSERT INTO effects ({}) VALUES ({})",
                                               kEffectColumns, internal::placeholders(14)));
      for (size_t i = 0; i < effects.effects.size(); ++i)
        insert_effect(rows, run_uuid, int(i), effects.effects[i]);
    });
  });
}

Database::RunEffects Database::effects(const std::string& run_uuid) const {
  return guarded(path_, "cannot read the effects of run " + run_uuid, [&] {
    RunEffects out;
    SQLite::Statement arms(*db_, fmt::format("SELECT {} FROM arm_summaries WHERE run_uuid = ? "
                                             "ORDER BY position",
                                             kArmColumns));
    arms.bind(1, run_uuid);
    while (arms.executeStep()) {
      ArmSummary a;
      a.experiment = arms.getColumn(2).getString();
      a.arm = arms.getColumn(3).getString();
      a.ok = arms.getColumn(4).getInt();
      a.failed = arms.getColumn(5).getInt();
      a.invalid = arms.getColumn(6).getInt();
      a.samples = arms.getColumn(7).getInt64();
      double* numbers[] = {&a.median_seconds,
                           &a.mad_seconds,
                           &a.cv,
                           &a.trial_median_seconds,
                           &a.trial_median_low_seconds,
                           &a.trial_median_high_seconds,
                           &a.peak_rss_bytes,
                           &a.probe_seconds,
                           &a.page_faults_per_iteration,
                           &a.items_per_second};
      for (int i = 0; i < 10; ++i) *numbers[i] = number_or_nan(arms.getColumn(8 + i));
      out.arms.push_back(std::move(a));
    }
    SQLite::Statement rows(
        *db_,
        fmt::format("SELECT {} FROM effects WHERE run_uuid = ? ORDER BY position", kEffectColumns));
    rows.bind(1, run_uuid);
    while (rows.executeStep()) {
      StoredEffect e;
      e.experiment = rows.getColumn(2).getString();
      e.kind = rows.getColumn(3).getString();
      e.metric = rows.getColumn(4).getString();
      e.compared = rows.getColumn(5).getString();
      e.ratio = number_or_nan(rows.getColumn(6));
      e.lo = number_or_nan(rows.getColumn(7));
      e.hi = number_or_nan(rows.getColumn(8));
      e.confidence = rows.getColumn(9).getDouble();
      e.resamples = rows.getColumn(10).getInt();
      e.verdict = rows.getColumn(11).getString();
      e.note = rows.getColumn(12).getString();
      e.text = rows.getColumn(13).getString();
      out.effects.push_back(std::move(e));
    }
    return out;
  });
}

}  // namespace tunebench::storage

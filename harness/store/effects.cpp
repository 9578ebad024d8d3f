// What analysis computed for a run (schema version 3): the arm_summaries and effects tables, each
// by its column list (columns.h).
#include "store/columns.h"
#include "store/internal.h"

namespace tunebench::storage {

using internal::bind_number_or_null;
using internal::guarded;
using internal::number_or_nan;

namespace {

using St = SQLite::Statement;
using Col = SQLite::Column;
using Arm = Database::ArmSummary;
using Effect = Database::StoredEffect;

// The bind and read of a REAL column that NaN leaves NULL and that reads back as NaN: the row's
// `part` (arm, effect) holds `field`, as the stored row does.
#define TB_NUMBER(part, field)                                                            \
  [](St& st, const char* p, const auto& r) { bind_number_or_null(st, p, r.part.field); }, \
      [](const Col& c, auto& s) { s.field = number_or_nan(c); }

// The list itself, one entry per column in table order: long because it is the whole table.
std::vector<ArmColumn> make_arm_columns() {
  // clang-format off
  return {
    {"run_uuid", "TEXT NOT NULL REFERENCES runs (uuid) ON DELETE CASCADE", 3,
     [](St& st, const char* p, const ArmRow& r) { st.bind(p, r.run_uuid); }, nullptr},
    // order of the arm's first trial in the run
    {"position", "INTEGER NOT NULL", 3,
     [](St& st, const char* p, const ArmRow& r) { st.bind(p, r.position); }, nullptr},
    {"experiment", "TEXT NOT NULL", 3,
     [](St& st, const char* p, const ArmRow& r) { st.bind(p, r.arm.experiment); },
     [](const Col& c, Arm& a) { a.experiment = c.getString(); }},
    {"arm", "TEXT NOT NULL", 3,
     [](St& st, const char* p, const ArmRow& r) { st.bind(p, r.arm.arm); },
     [](const Col& c, Arm& a) { a.arm = c.getString(); }},
    {"trials_ok", "INTEGER NOT NULL", 3,
     [](St& st, const char* p, const ArmRow& r) { st.bind(p, r.arm.ok); },
     [](const Col& c, Arm& a) { a.ok = c.getInt(); }},
    {"trials_failed", "INTEGER NOT NULL", 3,
     [](St& st, const char* p, const ArmRow& r) { st.bind(p, r.arm.failed); },
     [](const Col& c, Arm& a) { a.failed = c.getInt(); }},
    {"trials_invalid", "INTEGER NOT NULL", 3,
     [](St& st, const char* p, const ArmRow& r) { st.bind(p, r.arm.invalid); },
     [](const Col& c, Arm& a) { a.invalid = c.getInt(); }},
    // samples of the ok trials, pooled
    {"samples", "INTEGER NOT NULL", 3,
     [](St& st, const char* p, const ArmRow& r) { st.bind(p, r.arm.samples); },
     [](const Col& c, Arm& a) { a.samples = c.getInt64(); }},
    // Of the pooled samples; NULL without an ok trial. mad: unscaled; cv: stddev / mean.
    {"median_seconds", "REAL", 3, TB_NUMBER(arm, median_seconds)},
    {"mad_seconds", "REAL", 3, TB_NUMBER(arm, mad_seconds)},
    {"cv", "REAL", 3, TB_NUMBER(arm, cv)},
    // Median, lowest and highest of the ok trials' medians.
    {"trial_median_seconds", "REAL", 3, TB_NUMBER(arm, trial_median_seconds)},
    {"trial_median_low_seconds", "REAL", 3, TB_NUMBER(arm, trial_median_low_seconds)},
    {"trial_median_high_seconds", "REAL", 3, TB_NUMBER(arm, trial_median_high_seconds)},
    // Medians over the ok trials.
    {"peak_rss_bytes", "REAL", 3, TB_NUMBER(arm, peak_rss_bytes)},
    {"probe_seconds", "REAL", 3, TB_NUMBER(arm, probe_seconds)},
    {"page_faults_per_iteration", "REAL", 3, TB_NUMBER(arm, page_faults_per_iteration)},
    {"items_per_second", "REAL", 3, TB_NUMBER(arm, items_per_second)},
  };
  // clang-format on
}

// The list itself, one entry per column in table order: long because it is the whole table.
std::vector<EffectColumn> make_effect_columns() {
  // clang-format off
  return {
    {"run_uuid", "TEXT NOT NULL REFERENCES runs (uuid) ON DELETE CASCADE", 3,
     [](St& st, const char* p, const EffectRow& r) { st.bind(p, r.run_uuid); }, nullptr},
    // order within the run: experiments, then their effects
    {"position", "INTEGER NOT NULL", 3,
     [](St& st, const char* p, const EffectRow& r) { st.bind(p, r.position); }, nullptr},
    {"experiment", "TEXT NOT NULL", 3,
     [](St& st, const char* p, const EffectRow& r) { st.bind(p, r.effect.experiment); },
     [](const Col& c, Effect& e) { e.experiment = c.getString(); }},
    {"kind", "TEXT NOT NULL CHECK (kind IN ('effect', 'main effect', 'interaction', 'none'))", 3,
     [](St& st, const char* p, const EffectRow& r) { st.bind(p, r.effect.kind); },
     [](const Col& c, Effect& e) { e.kind = c.getString(); }},
    // time, peak memory, peak RSS
    {"metric", "TEXT NOT NULL", 3,
     [](St& st, const char* p, const EffectRow& r) { st.bind(p, r.effect.metric); },
     [](const Col& c, Effect& e) { e.metric = c.getString(); }},
    // on vs off, CELL vs BASE, main effect of X, interaction X x Y
    {"compared", "TEXT NOT NULL", 3,
     [](St& st, const char* p, const EffectRow& r) { st.bind(p, r.effect.compared); },
     [](const Col& c, Effect& e) { e.compared = c.getString(); }},
    // on / off of the medians, or the contrast; the bootstrap interval; NULL when undefined
    {"ratio", "REAL", 3, TB_NUMBER(effect, ratio)},
    {"lo", "REAL", 3, TB_NUMBER(effect, lo)},
    {"hi", "REAL", 3, TB_NUMBER(effect, hi)},
    {"confidence", "REAL NOT NULL", 3,
     [](St& st, const char* p, const EffectRow& r) { st.bind(p, r.effect.confidence); },
     [](const Col& c, Effect& e) { e.confidence = c.getDouble(); }},
    {"resamples", "INTEGER NOT NULL", 3,
     [](St& st, const char* p, const EffectRow& r) { st.bind(p, r.effect.resamples); },
     [](const Col& c, Effect& e) { e.resamples = c.getInt(); }},
    // helps, hurts, no measurable effect, insufficient data ('' for none)
    {"verdict", "TEXT NOT NULL", 3,
     [](St& st, const char* p, const EffectRow& r) { st.bind(p, r.effect.verdict); },
     [](const Col& c, Effect& e) { e.verdict = c.getString(); }},
    // caveats; for kind 'none', why no effect was computed
    {"note", "TEXT NOT NULL", 3,
     [](St& st, const char* p, const EffectRow& r) { st.bind(p, r.effect.note); },
     [](const Col& c, Effect& e) { e.note = c.getString(); }},
    // as tunebench show prints it: "0.62x [0.58, 0.66] helps"
    {"text", "TEXT NOT NULL", 3,
     [](St& st, const char* p, const EffectRow& r) { st.bind(p, r.effect.text); },
     [](const Col& c, Effect& e) { e.text = c.getString(); }},
  };
  // clang-format on
}

#undef TB_NUMBER

}  // namespace

const std::vector<ArmColumn>& arm_columns() {
  static const std::vector<ArmColumn> columns = make_arm_columns();
  return columns;
}

const std::vector<EffectColumn>& effect_columns() {
  static const std::vector<EffectColumn> columns = make_effect_columns();
  return columns;
}

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
      SQLite::Statement arms(*db_, insert_sql("arm_summaries", arm_columns()));
      for (size_t i = 0; i < effects.arms.size(); ++i) {
        bind_row(arms, arm_columns(), ArmRow{run_uuid, int(i), effects.arms[i]});
        arms.exec();
        arms.reset();
      }
      SQLite::Statement rows(*db_, insert_sql("effects", effect_columns()));
      for (size_t i = 0; i < effects.effects.size(); ++i) {
        bind_row(rows, effect_columns(), EffectRow{run_uuid, int(i), effects.effects[i]});
        rows.exec();
        rows.reset();
      }
      SQLite::Statement certification(*db_, "UPDATE runs SET certification = ? WHERE uuid = ?");
      if (effects.certification.empty()) {
        certification.bind(1);
      } else {
        certification.bind(1, effects.certification);
      }
      certification.bind(2, run_uuid);
      certification.exec();
    });
  });
}

Database::RunEffects Database::effects(const std::string& run_uuid) const {
  return guarded(path_, "cannot read the effects of run " + run_uuid, [&] {
    RunEffects out;
    SQLite::Statement arms(*db_, fmt::format("SELECT {} FROM arm_summaries WHERE run_uuid = ? "
                                             "ORDER BY position",
                                             column_names(arm_columns())));
    arms.bind(1, run_uuid);
    while (arms.executeStep()) {
      ArmSummary a;
      read_row(arms, arm_columns(), a);
      out.arms.push_back(std::move(a));
    }
    SQLite::Statement rows(
        *db_, fmt::format("SELECT {} FROM effects WHERE run_uuid = ? ORDER BY position",
                          column_names(effect_columns())));
    rows.bind(1, run_uuid);
    while (rows.executeStep()) {
      StoredEffect e;
      read_row(rows, effect_columns(), e);
      out.effects.push_back(std::move(e));
    }
    SQLite::Statement run(*db_, "SELECT certification FROM runs WHERE uuid = ?");
    run.bind(1, run_uuid);
    if (run.executeStep() && !run.getColumn(0).isNull())
      out.certification = run.getColumn(0).getString();
    return out;
  });
}

}  // namespace tunebench::storage

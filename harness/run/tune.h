// `tunebench tune`: what to set for one model on this host, measured as a whole.
//   1. screen: every catalog knob that can run on the CPU, on the model, paired where it can
//      (the suite of `run --model`, plan/model_suite.h, with its A/A and +3 % controls), each
//      experiment sampling on towards ±2 % within its share of the budget;
//   2. ladder: the knobs that helped (the interval below 1), best first; the first is taken as
//      screened, each next one is measured as a paired experiment against the configuration so
//      far and kept only where it still helps there (a knob that helps alone but not with the
//      others is dropped, with its figure);
//   3. final: the configuration against the defaults and against the best single knob alone.
// Each stage is a run of its own in the database (label "tune UUID …"); the recommendation
// (settings, the effects with their intervals, the ladder with its cumulative figure, how to
// apply it, the runs) is printed and stored (storage::Database::store_tuning).
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "analysis/analysis.h"
#include "run/orchestrator.h"

namespace tunebench::orchestrator {

struct TuneOptions {
  RunOptions run;  // its model (a file or a built-in), db_path, label, quiet, command_line
  // Seconds for the whole of it: each stage samples on within its share (about half for the
  // screen, then 60 % of what is left for the ladder, the rest for the final measurement). The
  // planned workers of each stage run whatever the budget.
  double budget_s = 900;
  // The catalog knobs to screen (--knobs); empty: every knob the model offers. The controls are
  // screened either way, and the recommendation says which knobs it chose among.
  std::vector<std::string> knobs;
};

// Exit codes: 0 a recommendation was stored (possibly "keep the defaults"); 1 a stage failed or
// was interrupted (the runs so far are kept); 2 bad input (nothing run or written).
// Prints a recommendation as tune stores it (storage: tunings.recommendation): the ladder, the
// configuration against the defaults with the ladder's product beside it, how to apply it, and
// whether its stages' controls certify it. `tune` prints it at its end; `show TUNING` again.
void print_recommendation(std::ostream& out, const std::string& uuid, const nlohmann::json& r);

int tune(const TuneOptions& options);

// What a ladder step's time effect decides: keep it (helps on top of the configuration), drop it
// (hurts, or no effect beyond ±2 %: shown not to help), or open (neither: its interval holds 1
// and reaches beyond ±2 %, or it has none). An open step is sampled on while the ladder's share
// of the budget holds another round for it (`round_s` of the `left_s` seconds left), and left
// out as undecided, with its interval, only when it does not: never dropped for being imprecise.
enum class StepCall { keep, drop, sample_on, undecided };
StepCall step_call(const stats::Effect& e, double left_s, double round_s);

// A knob the screen found helping: its id, the value tried and its time effect.
struct Candidate {
  std::string knob;
  nlohmann::json value;
  stats::Effect effect;
};
// The screen's helping knobs, best (lowest ratio) first: catalog knobs whose "on vs off" time
// effect helps; the controls (A/A, positive) are not candidates. Helping knobs that are no
// setting to add to this host's defaults go to `left_out` with why: an ON value a trial that
// sets nothing already runs (knobs::unset_value: omp_threads at all cores, where the screen
// compared it with one thread; profiler_off and anomaly_off, against a debugging API switched
// on), and knobs that run the step in several processes (multi_instance: summed throughput, a
// deployment rather than a setting).
struct LeftOut {
  std::string knob, effect, why;
};
std::vector<Candidate> helping_knobs(const analysis::RunReport& screen, const knobs::HostCaps& host,
                                     std::vector<LeftOut>* left_out = nullptr);

}  // namespace tunebench::orchestrator

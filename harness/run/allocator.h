// One run budget spent on the verdicts still open. Once every experiment has its planned workers,
// the time left of the run's --budget goes, two workers at a time, where a verdict is most likely
// to be decided per second of machine time. A verdict is decided when the interval excludes 1
// (helps, hurts) or lies within ±equivalence at the target width (no effect beyond ±2 %); it is
// open while the interval straddles one of those boundaries. An effect at 0.30x [0.25, 0.36] is
// decided, and more workers there buy nothing the verdict needs; one at 0.98x [0.94, 1.02] is
// open, and a worker there has value: the probability that the workers it would take to its next
// look move its interval past a boundary (from its estimate now, its between-worker spread and
// the width that many workers give), divided by their machine time.
//
// Looking at an interval each time two workers are added and treating it as decided the first
// time it excludes 1 would decide null effects far more often than the interval's level says. So
// whether a verdict is decided is looked at only at a few counts fixed in advance — its planned
// workers, then each doubling up to most_workers, and the last — and every look is at the level
// 1 − (1 − confidence) / looks (a union bound, as stage 2 of the check does): an experiment with
// no effect is taken for decided at some look with probability at most 1 − confidence. Between
// looks a verdict keeps what its last look said.
//
// Nothing open is stopped while budget is left: an experiment that cannot reach its next look in
// the time left gets what brings it closest to a decision by the end; once no open verdict can
// use a worker, decided verdicts wider than their target narrow toward it. A run ends when its
// budget cannot pay for two more workers anywhere, or every verdict is decided within its target.
//
// Pure functions of what each experiment has measured: the run loop (run/run_loop.h) runs what
// they choose, and a simulation (tests/test_allocator.cpp) compares them with the allocator
// that spent on widths alone and stopped what could not reach ±2 %.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace tunebench::orchestrator::allocation {

// Where one paired experiment stands, from its stored workers.
struct Standing {
  std::string experiment;
  int workers = 0;            // workers run so far
  int planned = 0;            // its planned workers
  int most_workers = 0;       // it may not go beyond (max_workers)
  int settles_from = 0;       // it may settle only from this many workers on (detect::settles_from)
  double seconds = 0;         // machine time its workers took, start-up included
  double half_width = 0;      // of its interval now, a fraction; NaN or ∞ without one
  double log_sd = 0;          // between-worker sd of the workers' log ratios; 0 without one
  double log_ratio = 0;       // mean of the workers' log ratios: the estimate now
  double target = 0.02;       // the half-width to reach
  double equivalence = 0.02;  // "no effect beyond ±equivalence"
  double confidence = 0.95;
  bool settled = false;  // at its target (and allowed to stop there)
  // Its verdict at its last look (Looks): decided there, and what it said ("helps", "hurts",
  // "no effect beyond ±2%"); kept by the caller between looks (look()).
  bool decided = false;
  std::string verdict;
};

// The counts at which an experiment's verdict is looked at: planned, then each doubling up to
// most_workers, and most_workers itself; every look at `confidence` (the level of each).
struct Looks {
  std::vector<int> at;
  double confidence = 0.95;
};
Looks looks_of(int planned, int most_workers, double confidence);

// Whether going from `before` to `workers` workers passed one of `looks` (or reached the first).
bool passed_look(const Looks& looks, int before, int workers);

// The verdict of an interval of `workers` workers around `log_ratio` with spread `log_sd`, at
// `confidence`: "helps", "hurts" (the interval excludes 1; lower is better), "no effect beyond
// ±x%" (within `target` wide and ±equivalence by two one-sided tests), or "" (open). As the paired
// estimator decides (stats::paired::estimate).
std::string verdict_at(double log_ratio, double log_sd, int workers, double confidence,
                       double target, double equivalence);

// `s`'s verdict looked at now, at its look level: sets decided and verdict.
void look(Standing& s);

// The probability that `s`, at `workers` workers, has a decided verdict at `confidence`: its
// future mean drawn from what its workers so far predict (mean log_ratio, variance
// log_sd² · k / (n · (n + k)) for k more workers on its n), its width from log_sd.
double probability_decided(const Standing& s, int workers, double confidence);

// The interval's relative half-width expected at `workers` workers when their log ratios spread
// by `log_sd` (the paired estimate's t interval: stats::paired::estimate).
double predicted_half_width(double log_sd, int workers, double confidence);

// What more workers, and all that is left, would do for `s`.
struct Outlook {
  bool has_interval = false;
  double cost_per_worker = 0;  // seconds
  int affordable = 0;          // the most workers it can have: most_workers and the time left
  double reachable = 0;        // half-width expected at `affordable`
  // Open: the best probability per second of deciding, over its next looks within reach and
  // `affordable`; `decide_at` the count where that is, `p_decide` its probability.
  double decide_per_second = 0;
  int decide_at = 0;
  double p_decide = 0;
  double gain_per_second = 0;  // decided but wide: width taken off toward the target, per second
};
Outlook outlook(const Standing& s, double seconds_left);

// The next step: the experiment to give two more workers, or why each is done.
struct Decision {
  std::optional<size_t> next;  // index into the standings
  // Experiments that stop now, with why in words ("decided: helps at its look of 8 workers",
  // "not decided: max_workers 40 reached"). Each stops once.
  std::vector<std::pair<size_t, std::string>> stopped;
  // Why `next` was chosen ("open: 31% to decide by 16 workers, 60 s"), for the progress line.
  std::string why;
};

// Chooses among the experiments not yet `done` (same indices as `standings`): stops those decided
// within their target, those without an interval after twice their planned workers, those at
// most_workers and those two more workers of which do not fit in `seconds_left`; of the rest, the
// open verdict most likely to be decided per second, else the decided but wide one that narrows
// most per second.
Decision decide(const std::vector<Standing>& standings, const std::vector<bool>& done,
                double seconds_left);

// The stop rule of an experiment sampling on toward its target width within its own budget (a
// run without --budget, the controls at the start and at the end): why it stops now, or "" to
// give it two more workers. `settled`: at its target and allowed to stop there; `spent`: the
// seconds its workers have taken (of this sampling); `budget_s`, `max_workers`: its own.
std::string width_stop(bool settled, double budget_s, double spent, int workers, int max_workers);

// A plan bounded by the budget (run --fit-plan): once the planned trials' pace is known and the
// rest of them would end beyond the budget, each experiment not yet finished keeps the share of
// its planned workers that fits, `fraction` = the seconds left / the seconds the rest would take,
// but never fewer than kFitPlanFloor (a between-worker spread needs a few workers) or than it
// has already run, and never more than it planned.
inline constexpr int kFitPlanFloor = 4;
int fitted_workers(int planned, int started, double fraction);

}  // namespace tunebench::orchestrator::allocation

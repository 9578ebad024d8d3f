// The regression detector behind `tunebench calibrate` and `tunebench check`, as pure functions
// so that the simulation test drives exactly what the command line runs. No torch, no database.
//
// Why three tests and not one. A run's own bootstrap interval (stats::effect) knows the noise
// between a run's processes and samples, but not the noise between nights: the same code on the
// same host is a few per cent faster or slower from one run to the next (frequency, page
// placement, neighbours). An alert on the interval alone fires on that drift. So a benchmark has
// regressed only when all three hold:
//   1. the bootstrap interval of run / baseline lies above 1 (the run is slower, within-run
//      noise accounted for);
//   2. the ratio exceeds the calibrated noise floor: exp(t · σ · sqrt(1 + 1/B)), with σ the
//      standard deviation of ln(run median) over repeated A/A runs of the suite on this host
//      and software, B the baseline runs compared with, t Student's quantile for the false-alarm
//      rate with (calibration runs − 1) degrees of freedom (σ is itself estimated);
//   3. the slowdown is at least the minimum effect (--threshold) a user cares about.
// Without a calibration, test 2 is skipped and the output says so.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/stats.h"

namespace tunebench::detect {

struct Floor {
  double sigma_log = 0;  // standard deviation of ln(run median) across A/A runs
  int runs = 0;          // A/A runs it was measured on (>= 3)
};

// σ of the logs of run medians (one per A/A run); throws std::invalid_argument for fewer than 3
// runs or a non-positive median.
double sigma_of_runs(const std::vector<double>& run_medians);

// The ratio run / baseline beyond which a slowdown is outside the A/A noise at `false_alarm`
// (one-sided), with `baseline_runs` runs in the baseline window.
double critical_ratio(const Floor& floor, int baseline_runs, double false_alarm);

// The smallest slowdown (fraction: 0.05 = 5 %) that the floor test detects with probability
// `power`, at `false_alarm`, against `baseline_runs` runs.
double min_detectable(const Floor& floor, int baseline_runs, double false_alarm, double power);

struct Options {
  double threshold = 0.05;    // minimum slowdown that counts, fraction
  double false_alarm = 0.01;  // one-sided, for the floor test
  stats::EffectOptions effect{};
};

struct Judgement {
  stats::Effect effect;          // ratio run / baseline of seconds per iteration
  double critical = 0;           // the floor test's critical ratio; NaN without a floor
  std::string status;            // "regression", "improvement", "unchanged", "no baseline"
  std::vector<std::string> why;  // which tests held or failed, for the output
};

// One benchmark of a run against its baseline window (each group: one process's samples;
// baseline groups from all baseline runs).
Judgement judge(const stats::Groups& baseline, const stats::Groups& run, int baseline_runs,
                const std::optional<Floor>& floor, const Options& options);

// The two-stage check. Stage 1 compares a run with its history and flags leniently;
// stage 2 confirms a flag the same night with a paired A/B of the last-good build (OFF) against
// this build (ON), sampling on until its interval decides (Chromium Pinpoint answers SAME /
// DIFFERENT / UNKNOWN the same way).

// Stage 1: whether the ratio run / baseline is flagged. With a noise floor (calibrated, or the
// baseline window's spread): beyond its critical ratio at `flag_level` (one-sided). Without one:
// beyond 1 + threshold / 2.
bool flag(double ratio, const std::optional<Floor>& floor, int baseline_runs, double flag_level,
          double threshold);
// The ratio beyond which flag() flags.
double flag_ratio(const std::optional<Floor>& floor, int baseline_runs, double flag_level,
                  double threshold);

// Stage 2's verdict from the A/B's effect (this build / last-good) and its interval:
//   "no regression"  the interval's upper end is below 1 + threshold: slower by less than the
//                    threshold, if at all;
//   "regression"     otherwise, when the interval lies above 1: slower, possibly by the
//                    threshold or more;
//   "unknown"        the interval holds both 1 and 1 + threshold, or there is none.
// `confidence` is the interval's level, said in `why`.
struct Decision {
  std::string status;  // "regression", "no regression", "unknown"
  std::string why;
};
Decision decide(double ratio, double lo, double hi, double threshold, double confidence = 0.95);
// The half-width at which every interval decides: one that holds both 1 and 1 + threshold is
// at least sqrt(1 + threshold) − 1 wide on each side, so sampling on to a little less (2 % less)
// ends undecided only when its budget runs out. Sampling looks at the width only, never at the
// answer (stats::paired::settled), which keeps the interval's coverage.
double confirm_target(double threshold);
// Stage 2's interval level: the run's false-alarm rate (`check --false-alarm`, 1 % by default)
// split evenly over the run's A/Bs (Bonferroni), 1 − 2·false_alarm/ab_count. An A/B calls a
// regression only when that interval's lower end is above 1, which an unchanged build's A/B does
// with probability false_alarm/ab_count (if the interval is honest), so an unchanged build raises
// a false alarm in at most `false_alarm` of the runs however many benchmarks stage 2 measures. At
// 95 % per A/B, a run of four A/Bs alarmed in up to ~10 % of unchanged nights. A wider level
// needs more pairs to reach confirm_target: (z_level / z_95 %)², 1.41× for one A/B at 1 %, 2.05×
// for four.
double confirm_confidence(double false_alarm, int ab_count);

// Stage 2 decides as soon as it can (a sequential design with a union bound). Stopping when an
// interval first decides would, at a fixed level, raise the error rates with every look; so an
// A/B looks at a few counts fixed in advance — kFirstLook workers, then each doubling up to
// max_workers — and at its last worker (when its target, budget or max_workers stops it), and
// every interval it looks at is at 1 − (1 − confidence) / looks. All of them then hold the truth
// together with probability at least `confidence`, so the decision at whichever look stops is as
// sure as a single one at `confidence`. An A/B whose answer is clear (an unchanged build, a
// slowdown well beyond the threshold) stops at 16–128 workers where sampling to confirm_target
// took 170–480; one near the threshold samples on to the target at the wider level
// ((z_look / z)²: ~1.4× the pairs for one A/B at 1 %).
inline constexpr int kFirstLook = 16;
struct Looks {
  std::vector<int> at;       // worker counts: 16, 32, 64, … up to max_workers
  int count = 1;             // at.size() + 1: the last worker is a look too
  double confidence = 0.95;  // of every interval looked at
};
Looks decision_looks(double confidence, int max_workers);
// Whether sampling that went from `before` to `workers` workers passed a look (every look passed
// counts once, so a resumed run that skips some still looks at most `count` times).
bool at_look(const Looks& looks, int before, int workers);
// From how many workers an experiment may stop on its interval's width alone ("settled"): from
// its first look (kFirstLook) on when it decides at looks; from kResidentSettleFrom when its arms
// are resident pairs (each arm a process of its own, run/resident.h); from any count otherwise.
// The width is itself an estimate: with a few workers it is narrow when they happen to agree, and
// then the interval is narrower than the truth's distance from the estimate allows. Where the
// arms share a process the workers' ratios agree closely and a few give a fair width; two
// processes add a per-process offset between the arms (several per cent), and stopping on the
// width of 4–14 workers then held a simulated unchanged ratio less often than the level (the
// PairedSimulation tests "StageTwoSettlingOnlyFromTheFirstLook…" and "ResidentPairsSettle…"
// count it). For resident pairs at 95 %, 3 % between the arms' processes, 1000 A/As: settling
// from any count held 1 in 92–93 %, from 8 workers in 93.5 %, from 12 in 94.5 % (mean 17.9
// workers against 16.4), from 16 in 94.8 % (19.3 workers); 12 is the smallest of those within a
// standard error of the level.
inline constexpr int kResidentSettleFrom = 12;
int settles_from(const std::optional<Looks>& looks, bool resident);
bool may_settle(const std::optional<Looks>& looks, int workers, bool resident = false);

// The most likely single step change in a series of run medians (oldest first): the split that
// maximises the t statistic of the difference of mean log medians, with a permutation p-value
// (the same statistic maximised over splits of shuffled series) and a bootstrap interval of the
// step's ratio (each side resampled). Needs at least 6 points with 3 on each side of a split.
struct Step {
  bool found = false;  // p_value < alpha and |ratio - 1| >= min_effect
  size_t index = 0;    // first point after the step
  double ratio = 1, lo = 1, hi = 1, p_value = 1;
};
Step find_step(const std::vector<double>& run_medians, double alpha, double min_effect,
               uint64_t seed = 42, int permutations = 999);

}  // namespace tunebench::detect

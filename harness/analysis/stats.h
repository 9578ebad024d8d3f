// The statistics of tunebench: summaries of one benchmark's samples, and the effect of a knob as a
// ratio of medians with a hierarchical bootstrap interval and a verdict drawn from that interval.
// Small pure functions over vectors, after google/benchmark's src/statistics.cc; no torch.
//
// Samples are positive quantities in the benchmark's own unit (seconds per step, bytes,
// items per second); the functions never convert units, and ratios are unitless.
//
// Errors: every function throws std::invalid_argument for NaN or infinite samples, for an empty
// input where a number is required, and for an off arm whose median is not positive (a ratio to
// it would be undefined or would flip the verdict).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tunebench::stats {

// Spread and centre of one set of samples, in the samples' unit (cv is unitless).
struct Summary {
  size_t n;
  double median;
  double mad;     // median absolute deviation from the median, unscaled (not x1.4826)
  double q1, q3;  // 25th and 75th percentiles, linear interpolation (type 7, numpy's default)
  double iqr;     // q3 - q1
  double mean;
  double stddev;  // sample standard deviation (n - 1); 0 when n < 2
  double cv;      // stddev / mean; 0 when n < 2 or mean == 0
  double min, max;
};

// The median; for an even count the mean of the two middle values.
// Throws std::invalid_argument when empty or when a value is NaN or infinite.
double median(std::vector<double> values);

// Quantile at p in [0, 1] by linear interpolation between order statistics (type 7).
// Throws std::invalid_argument when empty, when p is outside [0, 1], or for non-finite values.
double quantile(std::vector<double> values, double p);

// One element: median = q1 = q3 = min = max, mad = iqr = stddev = cv = 0.
// Throws std::invalid_argument when empty or when a value is NaN or infinite.
Summary summarize(const std::vector<double>& values);

// Samples of one arm, grouped by the worker process that took them (processes, then samples).
// Empty processes are ignored everywhere.
using Groups = std::vector<std::vector<double>>;

// What an interval says. The first four are the bootstrap's (effect(), contrast()); the paired
// estimator (analysis/paired.h) decides between helps, hurts and the last four.
enum class Verdict {
  helps,         // the interval lies on the better side of 1
  hurts,         // on the worse side
  no_effect,     // the bootstrap interval contains 1
  insufficient,  // too few samples (or workers) for an interval
  equivalent,  // the 1 − 2α interval lies inside ±margin: no effect beyond it (two one-sided tests)
  inconclusive,   // precise enough, but neither better, worse nor equivalent
  not_precise,    // the half-width is above the target (the budget ran out first)
  host_too_busy,  // too many samples dropped as contaminated by other processes
};
// "helps", "hurts", "no measurable effect", "insufficient data", "no effect beyond ±2%" (the
// margin), "inconclusive", "not precise enough (±3.4%)" (the half-width, when finite; without it
// "not precise enough"), "host too busy".
std::string to_string(Verdict verdict, double margin = 0.02, double half_width = NAN);
// The inverse of to_string (stored verdicts; the numbers in the last texts are not parsed back);
// std::invalid_argument for another text.
Verdict verdict_from_string(const std::string& text);

struct Effect {
  double ratio;       // median(on) / median(off), pooling all samples of each arm; NaN if an arm
                      // has no samples
  double lo, hi;      // bootstrap percentile interval of the ratio; NaN when insufficient
  double confidence;  // of the interval, e.g. 0.95
  int resamples;      // bootstrap resamples drawn
  Verdict verdict;
  std::string note;      // caveats, "; "-separated, e.g. "1 process per arm: the interval ignores
                         // between-process variance"; empty when there are none
  double margin = 0.02;  // of "no effect beyond ±margin" (Verdict::equivalent)
};

struct EffectOptions {
  double confidence = 0.95;     // of the interval, in (0, 1)
  int resamples = 2000;         // bootstrap resamples, >= 1
  uint64_t seed = 42;           // same seed and inputs -> same interval, on every platform
  bool lower_is_better = true;  // true for time and memory, false for throughput
  double min_effect = 0.0;      // fraction in [0, 1): effects smaller than this are no_effect even
                                // when the interval excludes 1 (e.g. 0.01 ignores changes < 1 %)
};

// Median of all samples of `on` over median of all samples of `off`.
// Throws std::invalid_argument when an arm has no samples, for non-finite samples, and when the
// off median is 0 or negative.
double ratio_of_medians(const Groups& off, const Groups& on);

// The effect of switching a knob from off to on, by a hierarchical bootstrap: each resample draws,
// for each arm independently, processes with replacement from that arm's groups, then within each
// drawn process as many samples as it has, with replacement; pools them and takes the median; the
// resample's ratio is median_on / median_off. The interval is the percentile interval of those
// ratios at options.confidence. Resampling processes first keeps between-process variance (one
// process may land on a faster core or a luckier memory layout) in the interval.
//
// Verdict, for lower_is_better (time, memory): hi < 1 - min_effect -> helps,
// lo > 1 + min_effect -> hurts, otherwise no_effect; mirrored when higher is better.
//
// Edge cases:
// - An arm with fewer than 2 samples in total: verdict insufficient, lo = hi = NaN; the ratio is
//   still computed when both arms have a sample (NaN otherwise).
// - One process in an arm: samples are still resampled, and the note says that the interval
//   ignores that arm's between-process variance (and so is too narrow).
// - Zero spread (all samples of each arm equal): every resample gives the same ratio, so the
//   interval collapses to [ratio, ratio] and the verdict follows the ratio; the note says so.
// - Off median 0 or negative, or NaN/infinite samples: throws std::invalid_argument.
// - Some resample has an off median <= 0 (only possible with samples <= 0): verdict
//   insufficient, lo = hi = NaN, and the note says why.
// - Few processes: with 3 per arm and between-process variance well above the within-process
//   variance, the interval is too narrow (about 14 % false helps/hurts at 95 % in simulation; 8 %
//   with 5 processes, 5 % with 10): 3 processes say little about how much processes differ.
// - Invalid options (confidence outside (0, 1), resamples < 1, min_effect outside [0, 1)):
//   throws std::invalid_argument.
Effect effect(const Groups& off, const Groups& on, const EffectOptions& options = {});

// "0.62x [0.58, 0.66] helps": the ratio, its interval and the verdict, never one without the
// others. 2 decimals, up to 4 where fewer would merge distinct numbers or print an end of an
// interval that excludes 1 as 1.00 (e.g. "0.9950x [0.9946, 0.9955] helps"). Without an interval:
// "1.05x [no interval] insufficient data". The note is not included.
std::string format_effect(const Effect& effect);
// format_effect's ratio and interval without its verdict: "0.62x [0.58, 0.66]".
std::string format_ratio(const Effect& effect);

// The product of independent ratios (the steps of `tunebench tune`'s ladder, each measured in a
// run of its own against the configuration before it) with an interval read off theirs: each
// interval taken as normal on the log scale at its `confidence`, the product's
// exp(Σ ln rᵢ ± z·√Σ sᵢ²) with sᵢ = (ln hiᵢ − ln loᵢ) / 2z. Verdict helps, hurts or no effect
// as the interval lies below 1, above it or across it (lower is better); lo and hi NaN and the
// verdict insufficient where a step has no interval. Throws std::invalid_argument for no steps or
// a non-positive ratio.
Effect chained(const std::vector<Effect>& steps);

// A contrast of several arms' medians, exp(Σ wᵢ · log medianᵢ), with the same hierarchical
// bootstrap interval and verdict as effect() (each arm resampled independently). The main effect
// of a factor in a 2^k factorial experiment is the contrast with weights +1/2^(k−1) on the cells
// where it is on and −1/2^(k−1) where it is off (the geometric mean of its ratios across the other
// factors' settings); the interaction of two factors is (AB · base) / (A · B): weights +1, +1,
// −1, −1. An interaction ratio of 1 means the two effects multiply independently. Every arm
// needs at least 2 samples, otherwise the verdict is insufficient.
Effect contrast(const std::vector<Groups>& arms, const std::vector<double>& weights,
                const EffectOptions& options = {});

// Samples (per arm) an interval [lo, hi] of a positive ratio, measured with `samples` samples per
// arm, would need for its half-width on the log scale, h = ln(hi / lo) / 2, to shrink to
// `log_half_width`: samples · (h / log_half_width)², rounded up, at least 2 (the fewest an
// interval takes). Assumes the interval narrows as 1 / √samples, as a bootstrap or t interval does
// when processes and samples per process grow alike; the observed spread is taken as the true one,
// so the answer is an estimate. E.g. [0.97, 1.08] from 10 samples reaches ±2 % (log 1.02) with
// 10 · (0.0537 / 0.0198)² → 74 samples.
// Edge cases: NaN when lo or hi is not finite, lo <= 0 or hi < lo (no interval to scale); an
// interval without width gives 2. Throws std::invalid_argument for samples or log_half_width not
// positive.
double samples_for_half_width(double lo, double hi, double samples, double log_half_width);

}  // namespace tunebench::stats

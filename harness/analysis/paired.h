// Paired measurement: the effect of a knob from workers that each hold both arms and alternate
// them in ABBA blocks of samples (why: docs/user-guide.md, "Paired measurement"). Pure functions
// over vectors, no torch; the worker takes the samples (worker/paired.h), this file turns them into
// an effect, an interval and a verdict.
//
// The levels, after Kalibera & Jones ("Rigorous Benchmarking in Reasonable Time", 2013):
//   sample  `iterations` timed steps of one arm
//   block   consecutive samples of one arm; the first `discard` samples of a block (carry-over
//           from the other arm: caches, allocator, OpenMP threads) are dropped
//   pair    two adjacent blocks, one of each arm: ABBA order makes blocks 2j and 2j+1 a pair
//           whichever arm runs first, so each pair is taken seconds apart and a drifting host
//           slows both of its arms alike
//   worker  one process holding both arms; its estimate is a robust mean of its pairs' log ratios
//   effect  across workers: a t interval with (workers − 1) degrees of freedom. Workers differ by
//           a per-process offset (memory layout, page placement) that no amount of pairs inside
//           one worker averages out; the interval's degrees of freedom come from this top level.
//
// Errors: std::invalid_argument for non-finite or non-positive sample times, for invalid options,
// and for a pair of blocks (2j, 2j+1) that does not hold both arms.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/stats.h"
#include "core/records.h"

namespace tunebench::stats::paired {

// One timed sample as a worker records it (core/records.h; worker/paired.h takes them).
using Sample = PairedSample;

// The contamination rule: a block is contaminated when any of its kept samples spent more than
// `max_wait_fraction` of its wall time waiting for a CPU beyond what that arm of that worker
// usually waits (the 10th percentile of its kept samples' wait fractions), and a pair is dropped
// when either block is. The baseline matters: an arm whose own threads outnumber the cores (seen:
// quantize_linear's engine beside OpenMP, waiting ~100 % of its wall time in every sample) waits
// in every sample alike, which pairing cancels; what it cannot cancel is a burst that hits one
// block of a pair and not the other. More than `max_dropped_fraction` of the pairs dropped over
// all workers and the host was too busy to say anything.
struct ContaminationRule {
  double max_wait_fraction = 0.05;
  double max_dropped_fraction = 0.5;
};

struct Options {
  double confidence = 0.95;   // of the interval
  double target = 0.02;       // the half-width to reach, as a fraction (±2 %)
  double equivalence = 0.02;  // "no effect beyond ±equivalence" (two one-sided tests)
  double trim = 0.1;          // fraction of each worker's pair log ratios cut from each end
  int discard = 1;            // samples dropped at the start of every block
  // Drop them only in workers whose blocks hold more than one sample (a worker of one-sample
  // blocks keeps them all rather than every pair being lost): estimate_guarded's.
  bool discard_only_longer_blocks = false;
  int min_workers = 3;          // fewer: no interval
  bool lower_is_better = true;  // time: true
  ContaminationRule contamination{};
};

// One worker's pairs: log(median ON block / median OFF block), in the order taken.
struct WorkerPairs {
  std::vector<double> log_ratios;  // kept pairs
  int dropped = 0;                 // pairs dropped as contaminated
  double estimate = 0;             // trimmed mean of log_ratios (NaN when none kept)
};

// Splits one worker's samples into blocks (by Sample::block, in order), checks that blocks 2j and
// 2j+1 are of different arms, drops the first `discard` samples of each block, pairs blocks 2j and
// 2j+1 (an unpaired last block is ignored) and applies the contamination rule.
WorkerPairs pair_up(const std::vector<Sample>& samples, const Options& options = {});

// The mean of `values` with floor(trim · n) values cut from each end (trim in [0, 0.5)).
double trimmed_mean(std::vector<double> values, double trim);

// helps, hurts, equivalent ("no effect beyond ±2%"), inconclusive, not precise, host too busy,
// insufficient (stats::Verdict, whose to_string prints them).
using Verdict = stats::Verdict;

struct Effect {
  double ratio = 0;              // exp(mean of the workers' estimates): ON time / OFF time
  double lo = 0, hi = 0;         // t interval at Options::confidence; NaN when insufficient
  double half_width = 0;         // (hi / lo)^(1/2) − 1: the interval's relative half-width
  int workers = 0;               // workers with at least one kept pair
  int pairs = 0;                 // kept pairs, all workers
  int dropped = 0;               // pairs dropped as contaminated, all workers
  double between_worker_sd = 0;  // sd of the workers' log estimates: the per-process offset
  double within_worker_sd = 0;   // pooled sd of the pair log ratios inside workers
  int discard = 0;               // samples dropped at the start of every block (Options)
  Verdict verdict = Verdict::insufficient;
  std::string text;  // "0.9812x [0.9701, 0.9924] helps", never the ratio without its interval
};

// The effect from each worker's samples. Verdict order: insufficient, host too busy, then
// helps/hurts (the interval excludes 1), then not precise (half-width above target), then
// equivalent (TOST at 1 − confidence), otherwise inconclusive. A significant effect is reported
// even when wider than the target: it is decided, only less precisely.
Effect estimate(const std::vector<std::vector<Sample>>& workers, const Options& options = {});

// The stopping rule: sampling may stop when the effect is decided precisely enough — at least
// min_workers workers and a half-width at or below the target. It looks at the width only, never
// at the estimate, so stopping does not bias the interval towards any answer.
bool settled(const Effect& effect, const Options& options = {});

// Carry-over between the arms, measured from an experiment's own samples. Dropping the first
// sample of every block guards against one arm leaving state (caches, freed pages, allocator bins)
// that slows or speeds the other's next step; it costs a third to half of the samples at 2-3 a
// block, and ABBA order already cancels a carry-over that is the same both ways. What biases the
// estimate is a carry-over that differs between the arms, and that is what this measures.
//
// In ABBA order the first block of every pair follows a block of its own arm and the second
// follows the other arm (OFF ON | ON OFF | OFF ON …): so block 2j+1's first step runs after a
// switch and block 2j+2's, of the same arm, after a block of its own arm. Their difference is
// that arm's switch penalty: in log seconds, x(2j+1) − x(2j+2), with x a block's first sample,
// less the mean of the block's later samples where it has them (which takes out the block's own
// level and the host's drift within it). Consecutive such differences are of alternate arms, and
// each pair of them makes one unit, ON's penalty less OFF's, in which a linear drift cancels.
// Across every unit of every worker, a t interval: the carry-over shows where it excludes 0.
struct CarryOver {
  double ratio = 1;       // exp(mean unit): ON's switch penalty over OFF's, as a ratio
  double lo = 0, hi = 0;  // its t interval; NaN with fewer than 3 units
  int units = 0;          // pairs of penalties, all workers
  bool shows = false;     // the interval excludes 1
  std::string text;       // "carry-over 1.004x [0.997, 1.011] (24 units): none measured"
};
CarryOver carry_over(const std::vector<std::vector<Sample>>& workers, double confidence = 0.95);

// The paired estimate with the first sample of each block kept unless `carry` shows a carry-over
// (then dropped: options.discard is 1) in the workers whose blocks have more than one sample; a
// worker of one-sample blocks has nothing to drop, and its pairs are as taken.
Effect estimate_guarded(const std::vector<std::vector<Sample>>& workers, const CarryOver& carry,
                        Options options = {});

// The ABBA order of the blocks (core/records.h).
using tunebench::abba_order;

}  // namespace tunebench::stats::paired

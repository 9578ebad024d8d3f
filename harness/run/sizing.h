// Samples sized to the step. An experiment's first worker runs with the suite's shape (blocks,
// samples per block, steps per sample); from its second worker on, where the suite gives
// worker_s, the shape is sized from the step time that first worker measured so that a worker's
// blocks take about worker_s seconds whatever the step, in the shortest blocks the step allows:
// a short step gets more blocks of the given samples (the alternation stays as fine as given,
// up to kMostSizedBlocks); a long one one step a sample, then fewer samples per block (at least
// 2: the estimator drops each block's first), then fewer blocks (at least 4: two pairs, one of
// each order). Longer samples were measured and rejected: on the nightly's ResNet-50 A/A, 3 steps
// a sample needed 28-38 workers to ±2 % where 1 step needed 10-20
// (docs/studies/engine-vs-probe.md). A pure function of what the first worker stored, so a resumed
// run sizes its missing workers alike.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "store/storage.h"

namespace tunebench::orchestrator::sizing {

// The most blocks sizing gives a worker (unless the suite gives more): 32 pairs.
inline constexpr int kMostSizedBlocks = 64;
// The most one-step blocks it gives a worker: 64 pairs of one step of each arm.
inline constexpr int kMostOneStepBlocks = 128;

// How a paired worker samples.
struct Shape {
  int blocks = 0;
  int block_samples = 0;
  int iterations = 0;  // steps per sample
  bool operator==(const Shape& o) const {
    return blocks == o.blocks && block_samples == o.block_samples && iterations == o.iterations;
  }
};

// The shape sized from `given` for a step of `step_s` seconds (the mean of the two arms' median
// step), a worker's blocks taking about `worker_s`; `given` where worker_s or step_s is not
// positive. Never fewer blocks than given for a short step, never more samples per block or
// steps per sample than given.
Shape size(const Shape& given, double step_s, double worker_s);

// The shape sized from `given` with one sample a block, for an experiment whose samples show no
// carry-over between its arms (stats::paired::carry_over): the arms alternate every sample in ABBA
// order and nothing is dropped, so a pair of blocks is one sample of each arm; as many blocks as
// fill `worker_s` (at least 4, at most kMostOneStepBlocks), the given steps a sample where they
// fit, fewer for a long step. `given` where worker_s or step_s is not positive.
Shape one_step(const Shape& given, double step_s, double worker_s);

// Seconds one pair of blocks of `shape` takes at `step_s` a step, and all of a worker's blocks.
double pair_seconds(const Shape& shape, double step_s);
double worker_seconds(const Shape& shape, double step_s);

// The step time of an experiment's first worker (process_index 0) among `stored`: the mean of
// its two arms' median seconds per step; nothing where it has no ok arm with samples.
std::optional<double> first_worker_step(const std::vector<storage::Database::StoredTrial>& stored);

}  // namespace tunebench::orchestrator::sizing

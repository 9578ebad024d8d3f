// Samples sized to the step. An experiment's first worker runs with the suite's shape (blocks,
// samples per block, steps per sample); from its second worker on, where the suite gives pair_s,
// the shape is sized from the step time that first worker measured so that one OFF/ON pair of
// blocks costs about pair_s seconds whatever the step: a short step gets more steps per sample, a
// long one fewer samples per block (at least 2: the estimator drops each block's first) and, where
// even that pair outlasts pair_s, fewer blocks (at least 4: two pairs, one of each order), so a
// worker samples for about as long as the suite's blocks of pair_s would take. A pure function of
// what the first worker stored, so a resumed run sizes its missing workers alike.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "store/storage.h"

namespace tunebench::orchestrator::sizing {

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
// step), one pair of blocks costing about `pair_s`; `given` where pair_s or step_s is not
// positive. Never more blocks or samples per block than given.
Shape size(const Shape& given, double step_s, double pair_s);

// Seconds one pair of blocks of `shape` takes at `step_s` a step.
double pair_seconds(const Shape& shape, double step_s);

// The step time of an experiment's first worker (process_index 0) among `stored`: the mean of
// its two arms' median seconds per step; nothing where it has no ok arm with samples.
std::optional<double> first_worker_step(const std::vector<storage::Database::StoredTrial>& stored);

}  // namespace tunebench::orchestrator::sizing

// Samples sized to the step (run/sizing.h).
#include "run/sizing.h"

#include <algorithm>
#include <cmath>

#include "worker/trial.h"

namespace tunebench::orchestrator::sizing {

double pair_seconds(const Shape& shape, double step_s) {
  return 2.0 * shape.block_samples * shape.iterations * step_s;
}

double worker_seconds(const Shape& shape, double step_s) {
  return shape.blocks / 2 * pair_seconds(shape, step_s);
}

Shape size(const Shape& given, double step_s, double worker_s) {
  if (!(worker_s > 0) || !(step_s > 0) || !std::isfinite(step_s)) return given;
  // Blocks 2j and 2j+1 pair: an even count, and as many as fill worker_s at this pair's cost.
  const auto blocks_for = [&](const Shape& s, int fewest, int most) {
    const int pairs = int(std::lround(worker_s / pair_seconds(s, step_s)));
    return std::clamp(2 * pairs, fewest, most);
  };
  Shape s = given;
  if (worker_seconds(given, step_s) <= worker_s) {
    // A short step: more blocks of the same samples, the alternation as fine as given.
    s.blocks = blocks_for(s, given.blocks, std::max(kMostSizedBlocks, given.blocks));
    return s;
  }
  // A long step: one step a sample first, then as few as 2 samples a block (the estimator drops
  // each block's first), then as few as 4 blocks (two pairs, one of each order).
  s.iterations =
      std::clamp(int(std::lround(given.iterations * worker_s / worker_seconds(given, step_s))), 1,
                 given.iterations);
  if (worker_seconds(s, step_s) > worker_s) {
    const double per_sample = s.blocks * s.iterations * step_s;
    s.block_samples =
        std::clamp(int(std::lround(worker_s / per_sample)), 2, std::max(2, given.block_samples));
  }
  if (worker_seconds(s, step_s) > worker_s)
    s.blocks = blocks_for(s, std::min(4, given.blocks), given.blocks);
  return s;
}

Shape one_step(const Shape& given, double step_s, double worker_s) {
  if (!(worker_s > 0) || !(step_s > 0) || !std::isfinite(step_s)) return given;
  Shape s{0, 1, given.iterations};
  // A long step: fewer steps a sample until 4 blocks fit (one step at the least).
  while (s.iterations > 1 && worker_seconds({4, 1, s.iterations}, step_s) > worker_s)
    s.iterations = std::max(1, s.iterations / 2);
  const int pairs = int(std::lround(worker_s / pair_seconds(s, step_s)));
  s.blocks = std::clamp(2 * pairs, 4, kMostOneStepBlocks);
  return s;
}

std::optional<double> first_worker_step(const std::vector<storage::Database::StoredTrial>& stored) {
  double sum = 0;
  int arms = 0;
  for (const auto& t : stored) {
    if (t.spec.process_index != 0 || t.result.status != "ok" || t.result.sample_seconds.empty())
      continue;
    sum += worker::median_seconds(t.result.sample_seconds);
    ++arms;
  }
  if (arms == 0) return std::nullopt;
  return sum / arms;
}

}  // namespace tunebench::orchestrator::sizing

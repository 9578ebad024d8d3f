// Samples sized to the step (run/sizing.h).
#include "run/sizing.h"

#include <algorithm>
#include <cmath>

#include "worker/trial.h"

namespace tunebench::orchestrator::sizing {

double pair_seconds(const Shape& shape, double step_s) {
  return 2.0 * shape.block_samples * shape.iterations * step_s;
}

Shape size(const Shape& given, double step_s, double pair_s) {
  if (!(pair_s > 0) || !(step_s > 0) || !std::isfinite(step_s)) return given;
  Shape s = given;
  // A short step: as many steps per sample as bring the given blocks' pair to about pair_s.
  s.iterations = std::max(1, int(std::lround(pair_s / (2.0 * given.block_samples * step_s))));
  if (s.iterations > 1) return s;
  // A long step: one step per sample and fewer samples per block ...
  s.block_samples =
      std::clamp(int(std::lround(pair_s / (2.0 * step_s))), 2, std::max(2, given.block_samples));
  // ... and where a pair of the fewest samples still outlasts pair_s, fewer blocks: the worker
  // samples for about as long as the given blocks' pairs of pair_s would, in at least two pairs.
  const double pair = pair_seconds(s, step_s);
  if (s.block_samples == 2 && pair > pair_s) {
    const double pairs = given.blocks / 2.0 * pair_s / pair;
    s.blocks = std::clamp(2 * int(std::lround(pairs)), std::min(4, given.blocks), given.blocks);
  }
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

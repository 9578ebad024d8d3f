#include "analysis/detect.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/math/distributions/students_t.hpp>
#include <cmath>
#include <numeric>
#include <random>
#include <stdexcept>

namespace tunebench::detect {

namespace {

double t_quantile(double p, int degrees_of_freedom) {
  return boost::math::quantile(boost::math::students_t(degrees_of_freedom), p);
}

void require_floor(const Floor& floor, int baseline_runs) {
  if (floor.runs < 3 || !(floor.sigma_log >= 0) || !std::isfinite(floor.sigma_log)) {
    throw std::invalid_argument(
        fmt::format("a noise floor needs σ >= 0 from at least 3 runs, got σ = {} from {} runs",
                    floor.sigma_log, floor.runs));
  }
  if (baseline_runs < 1) throw std::invalid_argument("the baseline needs at least 1 run");
}

// max over splits (3..n-3) of |mean(right) - mean(left)| / (s_pooled * sqrt(1/k + 1/(n-k)));
// returns the statistic and the split.
std::pair<double, size_t> best_split(const std::vector<double>& x) {
  const size_t n = x.size();
  double best = 0;
  size_t where = 0;
  for (size_t k = 3; k + 3 <= n; ++k) {
    double left = 0, right = 0;
    for (size_t i = 0; i < k; ++i) left += x[i];
    for (size_t i = k; i < n; ++i) right += x[i];
    left /= double(k);
    right /= double(n - k);
    double ss = 0;
    for (size_t i = 0; i < n; ++i) {
      const double d = x[i] - (i < k ? left : right);
      ss += d * d;
    }
    const double s = std::sqrt(ss / double(n - 2));
    const double se = s * std::sqrt(1.0 / double(k) + 1.0 / double(n - k));
    // Identical points on each side: a perfect step is infinitely significant.
    const double t = se > 0 ? std::abs(right - left) / se : (right != left ? INFINITY : 0);
    if (t > best) {
      best = t;
      where = k;
    }
  }
  return {best, where};
}

}  // namespace

double sigma_of_runs(const std::vector<double>& run_medians) {
  if (run_medians.size() < 3) {
    throw std::invalid_argument(fmt::format(
        "a noise floor needs at least 3 A/A runs, got {}: run calibrate with --runs 3 or more",
        run_medians.size()));
  }
  std::vector<double> logs;
  for (double m : run_medians) {
    if (!(m > 0) || !std::isfinite(m)) {
      throw std::invalid_argument(fmt::format("a run median must be positive, got {}", m));
    }
    logs.push_back(std::log(m));
  }
  return stats::summarize(logs).stddev;
}

double flag_ratio(const std::optional<Floor>& floor, int baseline_runs, double flag_level,
                  double threshold) {
  if (!(flag_level > 0 && flag_level < 0.5)) {
    throw std::invalid_argument(
        fmt::format("the flag level must be above 0 and below 0.5, got {}", flag_level));
  }
  if (!floor) return 1 + threshold / 2;
  return critical_ratio(*floor, baseline_runs, flag_level);
}

bool flag(double ratio, const std::optional<Floor>& floor, int baseline_runs, double flag_level,
          double threshold) {
  return std::isfinite(ratio) && ratio > flag_ratio(floor, baseline_runs, flag_level, threshold);
}

Decision decide(double ratio, double lo, double hi, double threshold, double confidence) {
  const std::string limit = fmt::format("{:.1f} %", 100 * threshold);
  if (!(std::isfinite(lo) && std::isfinite(hi) && lo > 0 && std::isfinite(ratio))) {
    return {"unknown", "no interval (too few workers with pairs kept)"};
  }
  const std::string shown =
      fmt::format("{:.4f}x [{:.4f}, {:.4f}] ({:g} % interval)", ratio, lo, hi, 100 * confidence);
  if (hi < 1 + threshold) {
    return {"no regression", lo > 1 ? fmt::format("{}: slower, but by less than {}", shown, limit)
                                    : fmt::format("{}: not slower by {} or more", shown, limit)};
  }
  if (lo > 1) return {"regression", fmt::format("{}: slower than the last-good build", shown)};
  return {"unknown", fmt::format("{}: holds both no change and a slowdown of {}", shown, limit)};
}

double confirm_target(double threshold) {
  if (!(threshold > 0 && threshold < 1)) {
    throw std::invalid_argument(
        fmt::format("the threshold must be above 0 and below 1, got {}", threshold));
  }
  return 0.98 * (std::sqrt(1 + threshold) - 1);
}

double confirm_confidence(double false_alarm, int ab_count) {
  if (!(false_alarm > 0 && false_alarm < 0.5)) {
    throw std::invalid_argument(
        fmt::format("the false-alarm rate must lie in (0, 0.5), got {}", false_alarm));
  }
  if (ab_count < 1) {
    throw std::invalid_argument(fmt::format("stage 2 needs at least one A/B, got {}", ab_count));
  }
  return 1 - 2 * false_alarm / ab_count;
}

Looks decision_looks(double confidence, int max_workers) {
  if (!(confidence > 0 && confidence < 1)) {
    throw std::invalid_argument(
        fmt::format("the confidence must lie in (0, 1), got {}", confidence));
  }
  Looks looks;
  for (int n = kFirstLook; n <= max_workers; n *= 2) looks.at.push_back(n);
  looks.count = static_cast<int>(looks.at.size()) + 1;
  looks.confidence = 1 - (1 - confidence) / looks.count;
  return looks;
}

bool at_look(const Looks& looks, int before, int workers) {
  return std::any_of(looks.at.begin(), looks.at.end(),
                     [&](int n) { return before < n && n <= workers; });
}

int settles_from(const std::optional<Looks>& looks, bool resident) {
  if (looks) return kFirstLook;
  return resident ? kResidentSettleFrom : 0;
}

bool may_settle(const std::optional<Looks>& looks, int workers, bool resident) {
  return workers >= settles_from(looks, resident);
}

double critical_ratio(const Floor& floor, int baseline_runs, double false_alarm) {
  require_floor(floor, baseline_runs);
  const double t = t_quantile(1 - false_alarm, floor.runs - 1);
  return std::exp(t * floor.sigma_log * std::sqrt(1 + 1.0 / baseline_runs));
}

double min_detectable(const Floor& floor, int baseline_runs, double false_alarm, double power) {
  require_floor(floor, baseline_runs);
  const double t = t_quantile(1 - false_alarm, floor.runs - 1) + t_quantile(power, floor.runs - 1);
  return std::exp(t * floor.sigma_log * std::sqrt(1 + 1.0 / baseline_runs)) - 1;
}

Judgement judge(const stats::Groups& baseline, const stats::Groups& run, int baseline_runs,
                const std::optional<Floor>& floor, const Options& options) {
  if (!(options.threshold >= 0 && options.threshold < 1)) {
    throw std::invalid_argument("the threshold must be a fraction in [0, 1)");
  }
  if (!(options.false_alarm > 0 && options.false_alarm < 0.5)) {
    throw std::invalid_argument("the false-alarm rate must lie in (0, 0.5)");
  }
  Judgement j;
  j.critical = floor ? critical_ratio(*floor, baseline_runs, options.false_alarm) : NAN;
  stats::EffectOptions eo = options.effect;
  eo.min_effect = 0;
  j.effect = stats::effect(baseline, run, eo);
  if (j.effect.verdict == stats::Verdict::insufficient) {
    j.status = "unchanged";
    j.why.push_back("too few samples for an interval");
    return j;
  }
  const double r = j.effect.ratio;
  const bool slower = j.effect.lo > 1, faster = j.effect.hi < 1;
  const bool beyond_floor_up = !floor || r > j.critical;
  const bool beyond_floor_down = !floor || r < 1 / j.critical;
  const bool big_up = r >= 1 + options.threshold, big_down = r <= 1 / (1 + options.threshold);
  if (slower && beyond_floor_up && big_up) {
    j.status = "regression";
  } else if (faster && beyond_floor_down && big_down) {
    j.status = "improvement";
  } else {
    j.status = "unchanged";
    if (r > 1) {
      if (!slower) j.why.push_back("interval includes 1");
      if (!beyond_floor_up) j.why.push_back(fmt::format("within noise floor {:.3f}x", j.critical));
      if (!big_up)
        j.why.push_back(fmt::format("below threshold {:.0f} %", 100 * options.threshold));
    }
  }
  if (!floor) j.why.push_back("not calibrated: night-to-night noise unknown");
  return j;
}

Step find_step(const std::vector<double>& run_medians, double alpha, double min_effect,
               uint64_t seed, int permutations) {
  Step step;
  if (run_medians.size() < 6) return step;
  std::vector<double> x;
  for (double m : run_medians) {
    if (!(m > 0) || !std::isfinite(m)) return step;
    x.push_back(std::log(m));
  }
  const auto [observed, where] = best_split(x);
  if (where == 0) return step;
  std::mt19937_64 rng(seed);
  std::vector<double> shuffled = x;
  int as_large = 0;
  for (int i = 0; i < permutations; ++i) {
    // Fisher-Yates with the generator's raw output: the same on every standard library.
    for (size_t k = shuffled.size() - 1; k > 0; --k)
      std::swap(shuffled[k], shuffled[rng() % (k + 1)]);
    if (best_split(shuffled).first >= observed) ++as_large;
  }
  step.p_value = (as_large + 1.0) / (permutations + 1.0);
  step.index = where;
  const std::vector<double> left(x.begin(), x.begin() + long(where)),
      right(x.begin() + long(where), x.end());
  auto mean = [](const std::vector<double>& v) {
    return std::accumulate(v.begin(), v.end(), 0.0) / double(v.size());
  };
  step.ratio = std::exp(mean(right) - mean(left));
  std::vector<double> ratios;
  std::vector<double> a(left.size()), b(right.size());
  for (int i = 0; i < 2000; ++i) {
    for (auto& v : a) v = left[rng() % left.size()];
    for (auto& v : b) v = right[rng() % right.size()];
    ratios.push_back(std::exp(mean(b) - mean(a)));
  }
  step.lo = stats::quantile(ratios, 0.025);
  step.hi = stats::quantile(ratios, 0.975);
  step.found = step.p_value < alpha && std::abs(step.ratio - 1) >= min_effect &&
               (step.lo > 1 || step.hi < 1);
  return step;
}

}  // namespace tunebench::detect

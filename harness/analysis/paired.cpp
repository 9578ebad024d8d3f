#include "analysis/paired.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/math/distributions/students_t.hpp>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>

#include "analysis/stats.h"

namespace tunebench::stats::paired {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

void check_options(const Options& o) {
  if (!(o.confidence > 0 && o.confidence < 1)) {
    throw std::invalid_argument(fmt::format("confidence must be in (0, 1), got {}", o.confidence));
  }
  if (!(o.target > 0) || !(o.equivalence > 0)) {
    throw std::invalid_argument("target and equivalence must be positive fractions");
  }
  if (!(o.trim >= 0 && o.trim < 0.5)) {
    throw std::invalid_argument(fmt::format("trim must be in [0, 0.5), got {}", o.trim));
  }
  if (o.discard < 0 || o.min_workers < 2) {
    throw std::invalid_argument("discard must be >= 0 and min_workers >= 2");
  }
}

double t_quantile(double p, int degrees_of_freedom) {
  return boost::math::quantile(boost::math::students_t(degrees_of_freedom), p);
}

struct Block {
  bool on = false;
  std::vector<const Sample*> kept;
};

// `baseline`: the arm's usual wait fraction in this worker (ContaminationRule).
bool contaminated(const Block& block, double baseline, const ContaminationRule& rule) {
  return std::any_of(block.kept.begin(), block.kept.end(), [&](const Sample* s) {
    return s->wait_seconds > (baseline + rule.max_wait_fraction) * s->seconds;
  });
}

// The 10th percentile of the wait fractions of one arm's kept samples (0 without any).
double usual_wait(const std::vector<Block>& blocks, bool on) {
  std::vector<double> fractions;
  for (const Block& b : blocks) {
    if (b.on != on) continue;
    for (const Sample* s : b.kept) fractions.push_back(s->wait_seconds / s->seconds);
  }
  return fractions.empty() ? 0 : quantile(fractions, 0.1);
}

double block_median(const Block& block) {
  std::vector<double> seconds;
  for (const Sample* s : block.kept) seconds.push_back(s->seconds);
  return median(seconds);
}

std::string number(double x) { return fmt::format("{:.4f}", x); }

// "0.9812x [0.9701, 0.9924] <verdict>": the ratio never without its interval.
std::string effect_text(const Effect& e, const std::string& verdict) {
  return fmt::format("{}x [{}, {}] {}", number(e.ratio), number(e.lo), number(e.hi), verdict);
}

}  // namespace

double trimmed_mean(std::vector<double> values, double trim) {
  if (values.empty()) throw std::invalid_argument("trimmed_mean of no values");
  if (!(trim >= 0 && trim < 0.5)) throw std::invalid_argument("trim must be in [0, 0.5)");
  std::sort(values.begin(), values.end());
  const size_t cut = size_t(std::floor(trim * double(values.size())));
  const auto first = values.begin() + long(cut), last = values.end() - long(cut);
  return std::accumulate(first, last, 0.0) / double(last - first);
}

WorkerPairs pair_up(const std::vector<Sample>& samples, const Options& options) {
  check_options(options);
  std::vector<Block> blocks;
  int current = std::numeric_limits<int>::min();
  for (const Sample& s : samples) {
    if (!std::isfinite(s.seconds) || s.seconds <= 0) {
      throw std::invalid_argument(
          fmt::format("sample time must be positive and finite, got {}", s.seconds));
    }
    if (s.block != current) {
      if (!blocks.empty() && s.block < current) {
        throw std::invalid_argument(fmt::format("block {} after block {}", s.block, current));
      }
      // Blocks 2j and 2j+1 form a pair: one of each arm (ABBA: OFF ON, ON OFF, …).
      if (blocks.size() % 2 == 1 && blocks.back().on == s.on) {
        throw std::invalid_argument(fmt::format(
            "blocks {} and {} are both of the {} arm: each pair of blocks needs both arms", current,
            s.block, s.on ? "ON" : "OFF"));
      }
      blocks.push_back({s.on, {}});
      current = s.block;
    } else if (blocks.back().on != s.on) {
      throw std::invalid_argument(fmt::format("block {} holds samples of both arms", s.block));
    }
    if (s.position >= options.discard) blocks.back().kept.push_back(&s);
  }
  WorkerPairs out;
  const double usual_on = usual_wait(blocks, true), usual_off = usual_wait(blocks, false);
  for (size_t b = 0; b + 1 < blocks.size(); b += 2) {
    const Block& x = blocks[b];
    const Block& y = blocks[b + 1];
    if (x.kept.empty() || y.kept.empty()) continue;  // blocks no longer than the discard
    if (contaminated(x, x.on ? usual_on : usual_off, options.contamination) ||
        contaminated(y, y.on ? usual_on : usual_off, options.contamination)) {
      ++out.dropped;
      continue;
    }
    const Block& on = x.on ? x : y;
    const Block& off = x.on ? y : x;
    out.log_ratios.push_back(std::log(block_median(on) / block_median(off)));
  }
  out.estimate = out.log_ratios.empty() ? kNaN : trimmed_mean(out.log_ratios, options.trim);
  return out;
}

Effect estimate(const std::vector<std::vector<Sample>>& workers, const Options& options) {
  check_options(options);
  Effect e;
  std::vector<double> estimates;
  double within_ss = 0;
  int within_df = 0;
  for (const auto& samples : workers) {
    const WorkerPairs w = pair_up(samples, options);
    e.dropped += w.dropped;
    e.pairs += int(w.log_ratios.size());
    if (w.log_ratios.empty()) continue;
    estimates.push_back(w.estimate);
    const double mean = std::accumulate(w.log_ratios.begin(), w.log_ratios.end(), 0.0) /
                        double(w.log_ratios.size());
    for (double r : w.log_ratios) within_ss += (r - mean) * (r - mean);
    within_df += int(w.log_ratios.size()) - 1;
  }
  e.workers = int(estimates.size());
  e.within_worker_sd = within_df > 0 ? std::sqrt(within_ss / within_df) : 0;
  e.lo = e.hi = kNaN;
  const int all_pairs = e.pairs + e.dropped;
  const bool busy =
      all_pairs > 0 && double(e.dropped) > options.contamination.max_dropped_fraction * all_pairs;
  const bool too_few = e.workers < options.min_workers;
  e.verdict = busy ? Verdict::host_too_busy : Verdict::insufficient;
  if (e.workers == 0) {
    e.ratio = kNaN;
    e.text = fmt::format("no pairs [no interval] {}", to_string(e.verdict));
    return e;
  }
  const double n = double(e.workers);
  const double mean = std::accumulate(estimates.begin(), estimates.end(), 0.0) / n;
  e.ratio = std::exp(mean);
  if (e.workers < 2) {
    e.text = fmt::format("{}x [no interval] {}", number(e.ratio), to_string(e.verdict));
    return e;
  }
  double ss = 0;
  for (double x : estimates) ss += (x - mean) * (x - mean);
  e.between_worker_sd = std::sqrt(ss / (n - 1));
  const double se = e.between_worker_sd / std::sqrt(n);
  const double alpha = 1 - options.confidence;
  const double h = t_quantile(1 - alpha / 2, e.workers - 1) * se;
  e.lo = std::exp(mean - h);
  e.hi = std::exp(mean + h);
  e.half_width = std::exp(h) - 1;
  if (busy || too_few) {
    e.text = effect_text(e, to_string(e.verdict));
    return e;
  }
  const bool better = options.lower_is_better ? e.hi < 1 : e.lo > 1;
  const bool worse = options.lower_is_better ? e.lo > 1 : e.hi < 1;
  // Two one-sided tests at level alpha: the 1 − 2·alpha interval inside ±equivalence.
  const double h_tost = t_quantile(1 - alpha, e.workers - 1) * se;
  const double bound = std::log1p(options.equivalence);
  const bool equivalent = mean - h_tost > -bound && mean + h_tost < bound;
  if (better) {
    e.verdict = Verdict::helps;
  } else if (worse) {
    e.verdict = Verdict::hurts;
  } else if (e.half_width > options.target) {
    e.verdict = Verdict::not_precise;
  } else if (equivalent) {
    e.verdict = Verdict::equivalent;
  } else {
    e.verdict = Verdict::inconclusive;
  }
  e.text = effect_text(e, to_string(e.verdict, options.equivalence, e.half_width));
  if ((better || worse) && e.half_width > options.target) {
    e.text += fmt::format(" (±{:.1f}%, wider than the ±{:g}% target)", e.half_width * 100,
                          options.target * 100);
  }
  return e;
}

bool settled(const Effect& effect, const Options& options) {
  return effect.workers >= options.min_workers && std::isfinite(effect.half_width) &&
         effect.half_width <= options.target;
}

}  // namespace tunebench::stats::paired

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
  const bool single =
      std::none_of(samples.begin(), samples.end(), [](const Sample& s) { return s.position > 0; });
  const int discard = options.discard_only_longer_blocks && single ? 0 : options.discard;
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
    if (s.position >= discard) blocks.back().kept.push_back(&s);
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
  e.discard = options.discard;
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

CarryOver carry_over(const std::vector<std::vector<Sample>>& workers, double confidence) {
  std::vector<double> units;
  for (const auto& samples : workers) {
    // Blocks in order: arm, first sample's log seconds less the mean of the later ones' logs.
    struct First {
      bool on;
      double x;
    };
    std::vector<First> blocks;
    std::vector<double> later;
    int current = std::numeric_limits<int>::min();
    bool have = false;
    double first = 0;
    bool on = false;
    auto close = [&] {
      if (!have) return;
      double level = 0;
      for (double y : later) level += y;
      blocks.push_back({on, first - (later.empty() ? 0 : level / double(later.size()))});
    };
    for (const Sample& s : samples) {
      if (!(s.seconds > 0) || !std::isfinite(s.seconds)) continue;
      if (s.block != current) {
        close();
        current = s.block;
        have = false;
        later.clear();
      }
      if (s.position == 0) {
        have = true;
        first = std::log(s.seconds);
        on = s.on;
      } else if (have) {
        later.push_back(std::log(s.seconds));
      }
    }
    close();
    // Penalties: a block after the other arm's, less the next block, of its own arm.
    std::vector<std::pair<bool, double>> penalties;
    for (size_t b = 1; b + 1 < blocks.size(); ++b) {
      if (blocks[b].on != blocks[b - 1].on && blocks[b + 1].on == blocks[b].on)
        penalties.emplace_back(blocks[b].on, blocks[b].x - blocks[b + 1].x);
    }
    for (size_t k = 0; k + 1 < penalties.size(); k += 2) {
      const auto& [a_on, a] = penalties[k];
      const auto& [b_on, b] = penalties[k + 1];
      if (a_on == b_on) continue;
      units.push_back(a_on ? a - b : b - a);
    }
  }
  CarryOver c;
  c.units = int(units.size());
  c.lo = c.hi = kNaN;
  if (units.empty()) {
    c.text = "carry-over: no units to measure it from";
    return c;
  }
  const double n = double(units.size());
  const double mean = std::accumulate(units.begin(), units.end(), 0.0) / n;
  c.ratio = std::exp(mean);
  if (units.size() < 3) {
    c.text = fmt::format("carry-over {}x [no interval] ({} units): not measurable", number(c.ratio),
                         c.units);
    return c;
  }
  double ss = 0;
  for (double u : units) ss += (u - mean) * (u - mean);
  const double h = t_quantile(1 - (1 - confidence) / 2, c.units - 1) * std::sqrt(ss / (n - 1) / n);
  c.lo = std::exp(mean - h);
  c.hi = std::exp(mean + h);
  c.shows = c.lo > 1 || c.hi < 1;
  c.text = fmt::format("carry-over {}x [{}, {}] ({} units): {}", number(c.ratio), number(c.lo),
                       number(c.hi), c.units, c.shows ? "measured" : "none measured");
  return c;
}

Effect estimate_guarded(const std::vector<std::vector<Sample>>& workers, const CarryOver& carry,
                        Options options) {
  options.discard = carry.shows ? 1 : 0;
  options.discard_only_longer_blocks = true;
  Effect e = estimate(workers, options);
  // What was dropped: nothing where no worker had blocks longer than one sample.
  const bool longer = std::any_of(workers.begin(), workers.end(), [](const auto& samples) {
    return std::any_of(samples.begin(), samples.end(),
                       [](const Sample& s) { return s.position > 0; });
  });
  if (!longer) e.discard = 0;
  return e;
}

bool settled(const Effect& effect, const Options& options) {
  return effect.workers >= options.min_workers && std::isfinite(effect.half_width) &&
         effect.half_width <= options.target;
}

}  // namespace tunebench::stats::paired

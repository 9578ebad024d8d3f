#include "analysis/stats.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/math/distributions/normal.hpp>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace tunebench::stats {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

void require_finite(const std::vector<double>& values, const std::string& what) {
  for (double value : values) {
    if (!std::isfinite(value)) {
      throw std::invalid_argument(what + " contains a non-finite value (" + std::to_string(value) +
                                  "); samples must be finite numbers");
    }
  }
}

void require_nonempty(const std::vector<double>& values, const std::string& what) {
  if (values.empty()) throw std::invalid_argument(what + ": no samples");
}

// Median of a non-empty vector whose order it may change; O(n).
double median_in_place(std::vector<double>& values) {
  const size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + mid, values.end());
  const double upper = values[mid];
  if (values.size() % 2 == 1) return upper;
  const double lower = *std::max_element(values.begin(), values.begin() + mid);
  // Exact when lower == upper, so an arm without spread keeps its value bit for bit.
  return lower + (upper - lower) / 2;
}

// Type 7 quantile of a sorted, non-empty vector, p in [0, 1].
double quantile_of_sorted(const std::vector<double>& sorted, double p) {
  const double position = p * static_cast<double>(sorted.size() - 1);
  const size_t below = static_cast<size_t>(std::floor(position));
  if (below + 1 >= sorted.size()) return sorted.back();
  const double fraction = position - static_cast<double>(below);
  return sorted[below] + fraction * (sorted[below + 1] - sorted[below]);
}

// An index in [0, n) from the generator's raw output, unbiased by rejection. Not
// std::uniform_int_distribution: its algorithm differs between standard libraries, and the same
// seed should give the same interval with libstdc++ and libc++ alike.
size_t uniform_index(std::mt19937_64& rng, size_t n) {
  const uint64_t bound = n;
  const uint64_t threshold = (0 - bound) % bound;  // 2^64 mod n: the biased low values to reject
  uint64_t draw = rng();
  while (draw < threshold) draw = rng();
  return static_cast<size_t>(draw % bound);
}

// One arm's non-empty processes, validated.
struct Arm {
  std::vector<std::vector<double>> processes;
  size_t samples = 0;

  std::vector<double> pooled() const {
    std::vector<double> all;
    all.reserve(samples);
    for (const auto& process : processes) all.insert(all.end(), process.begin(), process.end());
    return all;
  }
  bool has_spread() const {
    for (const auto& process : processes) {
      for (double value : process) {
        if (value != processes.front().front()) return true;
      }
    }
    return false;
  }
};

Arm collect_arm(const Groups& groups, const std::string& name) {
  Arm arm;
  for (size_t i = 0; i < groups.size(); ++i) {
    if (groups[i].empty()) continue;
    require_finite(groups[i], "the " + name + " arm's process " + std::to_string(i));
    arm.processes.push_back(groups[i]);
    arm.samples += groups[i].size();
  }
  return arm;
}

double ratio_of_arms(const Arm& off, const Arm& on) {
  std::vector<double> off_samples = off.pooled();
  std::vector<double> on_samples = on.pooled();
  const double off_median = median_in_place(off_samples);
  if (!(off_median > 0)) {
    throw std::invalid_argument("the off arm's median is " + std::to_string(off_median) +
                                ": a ratio of medians needs a positive off median");
  }
  return median_in_place(on_samples) / off_median;
}

// Median of one hierarchical resample of the arm: processes with replacement, then each drawn
// process's samples with replacement. `buffer` is reused between resamples to avoid allocations.
double resampled_median(const Arm& arm, std::mt19937_64& rng, std::vector<double>& buffer) {
  buffer.clear();
  const size_t process_count = arm.processes.size();
  for (size_t draw = 0; draw < process_count; ++draw) {
    const std::vector<double>& process = arm.processes[uniform_index(rng, process_count)];
    for (size_t sample = 0; sample < process.size(); ++sample) {
      buffer.push_back(process[uniform_index(rng, process.size())]);
    }
  }
  return median_in_place(buffer);
}

Verdict verdict_of_interval(double lo, double hi, const EffectOptions& options) {
  const bool below_one = hi < 1 - options.min_effect;
  const bool above_one = lo > 1 + options.min_effect;
  const bool smaller_is_better = options.lower_is_better;
  if (below_one) return smaller_is_better ? Verdict::helps : Verdict::hurts;
  if (above_one) return smaller_is_better ? Verdict::hurts : Verdict::helps;
  return Verdict::no_effect;
}

// The percentile interval of bootstrap ratios, and the verdict it gives.
void set_interval(Effect& result, std::vector<double> ratios, const EffectOptions& options) {
  std::sort(ratios.begin(), ratios.end());
  const double tail = (1 - options.confidence) / 2;
  result.lo = quantile_of_sorted(ratios, tail);
  result.hi = quantile_of_sorted(ratios, 1 - tail);
  result.resamples = options.resamples;
  result.verdict = verdict_of_interval(result.lo, result.hi, options);
}

void validate(const EffectOptions& options) {
  if (!(options.confidence > 0 && options.confidence < 1)) {
    throw std::invalid_argument("confidence must lie in (0, 1), got " +
                                std::to_string(options.confidence));
  }
  if (options.resamples < 1) {
    throw std::invalid_argument("resamples must be at least 1, got " +
                                std::to_string(options.resamples));
  }
  if (!(options.min_effect >= 0 && options.min_effect < 1)) {
    throw std::invalid_argument("min_effect must lie in [0, 1), got " +
                                std::to_string(options.min_effect));
  }
}

void add_note(std::string& notes, const std::string& note) {
  if (!notes.empty()) notes += "; ";
  notes += note;
}

std::string samples_phrase(size_t count) {
  return std::to_string(count) + (count == 1 ? " sample" : " samples");
}

}  // namespace

double median(std::vector<double> values) {
  require_nonempty(values, "median");
  require_finite(values, "median's input");
  return median_in_place(values);
}

double quantile(std::vector<double> values, double p) {
  require_nonempty(values, "quantile");
  require_finite(values, "quantile's input");
  if (!(p >= 0 && p <= 1)) {
    throw std::invalid_argument("quantile: p must lie in [0, 1], got " + std::to_string(p));
  }
  std::sort(values.begin(), values.end());
  return quantile_of_sorted(values, p);
}

Summary summarize(const std::vector<double>& values) {
  require_nonempty(values, "summarize");
  require_finite(values, "summarize's input");
  std::vector<double> sorted = values;
  std::sort(sorted.begin(), sorted.end());

  Summary summary{};
  summary.n = sorted.size();
  summary.median = quantile_of_sorted(sorted, 0.5);
  summary.q1 = quantile_of_sorted(sorted, 0.25);
  summary.q3 = quantile_of_sorted(sorted, 0.75);
  summary.iqr = summary.q3 - summary.q1;
  summary.min = sorted.front();
  summary.max = sorted.back();

  std::vector<double> deviations;
  deviations.reserve(sorted.size());
  for (double value : sorted) deviations.push_back(std::abs(value - summary.median));
  summary.mad = median_in_place(deviations);

  double sum = 0;
  for (double value : sorted) sum += value;
  summary.mean = sum / static_cast<double>(summary.n);
  if (summary.n >= 2) {
    double squares = 0;
    for (double value : sorted) squares += (value - summary.mean) * (value - summary.mean);
    summary.stddev = std::sqrt(squares / static_cast<double>(summary.n - 1));
  }
  summary.cv = (summary.n >= 2 && summary.mean != 0) ? summary.stddev / summary.mean : 0.0;
  return summary;
}

std::string to_string(Verdict verdict, double margin, double half_width) {
  switch (verdict) {
    case Verdict::helps:
      return "helps";
    case Verdict::hurts:
      return "hurts";
    case Verdict::no_effect:
      return "no measurable effect";
    case Verdict::insufficient:
      return "insufficient data";
    case Verdict::equivalent:
      return fmt::format("no effect beyond ±{:g}%", margin * 100);
    case Verdict::inconclusive:
      return "inconclusive";
    case Verdict::not_precise:
      return std::isfinite(half_width)
                 ? fmt::format("not precise enough (±{:.1f}%)", half_width * 100)
                 : "not precise enough";
    case Verdict::host_too_busy:
      return "host too busy";
  }
  throw std::invalid_argument("unknown Verdict " + std::to_string(static_cast<int>(verdict)));
}

Verdict verdict_from_string(const std::string& text) {
  for (Verdict v : {Verdict::helps, Verdict::hurts, Verdict::no_effect, Verdict::insufficient,
                    Verdict::inconclusive, Verdict::host_too_busy}) {
    if (to_string(v) == text) return v;
  }
  if (text.rfind("no effect beyond ", 0) == 0) return Verdict::equivalent;
  if (text.rfind("not precise enough", 0) == 0) return Verdict::not_precise;
  throw std::invalid_argument("unknown verdict \"" + text + "\"");
}

double ratio_of_medians(const Groups& off, const Groups& on) {
  const Arm off_arm = collect_arm(off, "off");
  const Arm on_arm = collect_arm(on, "on");
  if (off_arm.samples == 0) throw std::invalid_argument("ratio_of_medians: the off arm is empty");
  if (on_arm.samples == 0) throw std::invalid_argument("ratio_of_medians: the on arm is empty");
  return ratio_of_arms(off_arm, on_arm);
}

Effect effect(const Groups& off, const Groups& on, const EffectOptions& options) {
  validate(options);
  const Arm off_arm = collect_arm(off, "off");
  const Arm on_arm = collect_arm(on, "on");

  Effect result{kNaN, kNaN, kNaN, options.confidence, 0, Verdict::insufficient, ""};
  if (off_arm.samples > 0 && on_arm.samples > 0) result.ratio = ratio_of_arms(off_arm, on_arm);

  // Below 2 samples an arm has no spread to resample: any interval would be a false certainty.
  for (const auto& [name, arm] : {std::pair{"off", &off_arm}, std::pair{"on", &on_arm}}) {
    if (arm->samples < 2) {
      add_note(result.note, std::string("the ") + name + " arm has " +
                                samples_phrase(arm->samples) +
                                "; an interval needs at least 2 per arm");
    }
  }
  if (!result.note.empty()) return result;

  if (off_arm.processes.size() == 1 && on_arm.processes.size() == 1) {
    add_note(result.note, "1 process per arm: the interval ignores between-process variance");
  } else {
    for (const auto& [name, arm] : {std::pair{"off", &off_arm}, std::pair{"on", &on_arm}}) {
      if (arm->processes.size() == 1) {
        add_note(result.note, std::string("1 process in the ") + name +
                                  " arm: the interval ignores its between-process variance");
      }
    }
  }

  std::mt19937_64 rng(options.seed);
  std::vector<double> buffer;
  buffer.reserve(std::max(off_arm.samples, on_arm.samples) * 2);
  std::vector<double> ratios;
  ratios.reserve(static_cast<size_t>(options.resamples));
  for (int resample = 0; resample < options.resamples; ++resample) {
    const double off_median = resampled_median(off_arm, rng, buffer);
    const double on_median = resampled_median(on_arm, rng, buffer);
    if (!(off_median > 0)) {
      add_note(result.note,
               "some bootstrap resamples have an off median <= 0, so the ratio has no interval");
      return result;
    }
    ratios.push_back(on_median / off_median);
  }
  set_interval(result, std::move(ratios), options);
  if (!off_arm.has_spread() && !on_arm.has_spread()) {
    add_note(result.note, "no spread in either arm: the interval collapses to the ratio");
  }
  return result;
}

Effect contrast(const std::vector<Groups>& arms, const std::vector<double>& weights,
                const EffectOptions& options) {
  validate(options);
  if (arms.size() != weights.size() || arms.empty()) {
    throw std::invalid_argument("contrast: one weight per arm is needed");
  }
  std::vector<Arm> collected;
  for (size_t i = 0; i < arms.size(); ++i)
    collected.push_back(collect_arm(arms[i], "arm " + std::to_string(i)));
  Effect result{kNaN, kNaN, kNaN, options.confidence, 0, Verdict::insufficient, ""};
  auto combine = [&](const std::vector<double>& medians) {
    double log_ratio = 0;
    for (size_t i = 0; i < medians.size(); ++i) log_ratio += weights[i] * std::log(medians[i]);
    return std::exp(log_ratio);
  };
  std::vector<double> medians;
  for (const auto& arm : collected) {
    if (arm.samples < 2) {
      add_note(result.note, "an arm has " + samples_phrase(arm.samples) +
                                "; an interval needs at least 2 per arm");
      return result;
    }
    std::vector<double> pooled = arm.pooled();
    medians.push_back(median_in_place(pooled));
    if (!(medians.back() > 0))
      throw std::invalid_argument("contrast: every arm's median must be positive");
  }
  result.ratio = combine(medians);
  std::mt19937_64 rng(options.seed);
  std::vector<double> buffer, ratios;
  ratios.reserve(static_cast<size_t>(options.resamples));
  for (int resample = 0; resample < options.resamples; ++resample) {
    for (size_t i = 0; i < collected.size(); ++i)
      medians[i] = resampled_median(collected[i], rng, buffer);
    ratios.push_back(combine(medians));
  }
  set_interval(result, std::move(ratios), options);
  bool one_process = true;
  for (const auto& arm : collected) one_process &= arm.processes.size() == 1;
  if (one_process)
    add_note(result.note, "1 process per arm: the interval ignores between-process variance");
  return result;
}

double samples_for_half_width(double lo, double hi, double samples, double log_half_width) {
  if (!(samples > 0) || !(log_half_width > 0)) {
    throw std::invalid_argument(
        "samples_for_half_width: samples and the target half-width must be positive");
  }
  if (!std::isfinite(lo) || !std::isfinite(hi) || !(lo > 0) || hi < lo) return kNaN;
  const double half_width = std::log(hi / lo) / 2;
  return std::max(2.0, std::ceil(samples * std::pow(half_width / log_half_width, 2)));
}

std::string format_effect(const Effect& effect) {
  const bool has_interval = std::isfinite(effect.lo) && std::isfinite(effect.hi);
  auto number = [](double value, int decimals) {
    char text[64];
    std::snprintf(text, sizeof text, "%.*f", decimals, value);
    return std::string(text);
  };
  // The fewest decimals (2 to 4) at which rounding hides nothing the numbers say: values that
  // differ print differently, and an interval that excludes 1 does not print an end as 1.
  int decimals = 2;
  if (has_interval && std::isfinite(effect.ratio)) {
    for (; decimals < 4; ++decimals) {
      const std::string lo = number(effect.lo, decimals);
      const std::string ratio = number(effect.ratio, decimals);
      const std::string hi = number(effect.hi, decimals);
      const std::string one = number(1.0, decimals);
      const bool merges = (effect.lo < effect.ratio && lo == ratio) ||
                          (effect.ratio < effect.hi && ratio == hi) ||
                          (effect.lo < effect.hi && lo == hi);
      const bool excludes_one = effect.hi < 1 || effect.lo > 1;
      if (!merges && !(excludes_one && (lo == one || hi == one))) break;
    }
  }
  const std::string ratio =
      std::isfinite(effect.ratio) ? number(effect.ratio, decimals) + "x" : "n/a";
  const std::string interval =
      has_interval ? "[" + number(effect.lo, decimals) + ", " + number(effect.hi, decimals) + "]"
                   : "[no interval]";
  const double half_width =
      has_interval && effect.lo > 0 ? std::sqrt(effect.hi / effect.lo) - 1 : NAN;
  return ratio + " " + interval + " " + to_string(effect.verdict, effect.margin, half_width);
}

std::string format_ratio(const Effect& effect) {
  const std::string text = format_effect(effect);
  return text.substr(0, text.find(']') + 1);
}

Effect chained(const std::vector<Effect>& steps) {
  if (steps.empty()) throw std::invalid_argument("chained: no steps");
  const double confidence = steps.front().confidence;
  const double z = boost::math::quantile(boost::math::normal(), 0.5 + confidence / 2);
  double log_ratio = 0, variance = 0;
  bool intervals = true;
  for (const Effect& e : steps) {
    if (!(e.ratio > 0)) throw std::invalid_argument("chained: a ratio is not positive");
    log_ratio += std::log(e.ratio);
    if (std::isfinite(e.lo) && std::isfinite(e.hi) && e.lo > 0) {
      const double s = (std::log(e.hi) - std::log(e.lo)) / (2 * z);
      variance += s * s;
    } else {
      intervals = false;
    }
  }
  Effect out{};
  out.ratio = std::exp(log_ratio);
  out.lo = intervals ? std::exp(log_ratio - z * std::sqrt(variance)) : NAN;
  out.hi = intervals ? std::exp(log_ratio + z * std::sqrt(variance)) : NAN;
  out.confidence = confidence;
  out.resamples = 0;
  out.verdict = !intervals   ? Verdict::insufficient
                : out.hi < 1 ? Verdict::helps
                : out.lo > 1 ? Verdict::hurts
                             : Verdict::no_effect;
  return out;
}

}  // namespace tunebench::stats

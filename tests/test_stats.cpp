// Tests of analysis/stats: hand-computed summaries, and effects on simulated arms whose truth is
// known (a 2x speedup, A/A, between-process offsets).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

#include "analysis/effects.h"
#include "analysis/stats.h"

namespace tunebench::stats {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Samples ~ N(mean, sd) for `processes` worker processes of `samples` each; each process adds its
// own offset ~ N(0, between_sd), as a process pinned to a slower core would.
Groups simulate_arm(std::mt19937_64& rng, int processes, int samples, double mean, double sd,
                    double between_sd = 0.0) {
  std::normal_distribution<double> offset(0.0, between_sd);
  std::normal_distribution<double> noise(0.0, sd);
  Groups groups(processes);
  for (auto& process : groups) {
    const double process_mean = mean + (between_sd > 0 ? offset(rng) : 0.0);
    for (int i = 0; i < samples; ++i) process.push_back(process_mean + noise(rng));
  }
  return groups;
}

EffectOptions seeded(uint64_t seed) {
  EffectOptions options;
  options.seed = seed;
  return options;
}

template <typename Change>
EffectOptions options_where(Change change) {
  EffectOptions options;
  change(options);
  return options;
}

TEST(StatsMedian, HandComputed) {
  EXPECT_DOUBLE_EQ(median({3, 1, 2}), 2.0);
  EXPECT_DOUBLE_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(median({7}), 7.0);
  EXPECT_THROW(median({}), std::invalid_argument);
  EXPECT_THROW(median({1, kNaN, 3}), std::invalid_argument);
  EXPECT_THROW(median({1, std::numeric_limits<double>::infinity()}), std::invalid_argument);
}

TEST(StatsQuantile, LinearInterpolationType7) {
  // h = p * (n - 1): p = 0.1 over 5 values -> position 0.4 -> 10 + 0.4 * 10.
  EXPECT_DOUBLE_EQ(quantile({50, 10, 40, 20, 30}, 0.1), 14.0);
  EXPECT_DOUBLE_EQ(quantile({50, 10, 40, 20, 30}, 0.0), 10.0);
  EXPECT_DOUBLE_EQ(quantile({50, 10, 40, 20, 30}, 1.0), 50.0);
  EXPECT_THROW(quantile({1, 2}, 1.5), std::invalid_argument);
  EXPECT_THROW(quantile({}, 0.5), std::invalid_argument);
}

TEST(StatsSummarize, OddCount) {
  const Summary s = summarize({4, 100, 1, 3, 2});
  EXPECT_EQ(s.n, 5u);
  EXPECT_DOUBLE_EQ(s.median, 3.0);
  EXPECT_DOUBLE_EQ(s.mad, 1.0);  // |x - 3| = 2, 1, 0, 1, 97 -> median 1
  EXPECT_DOUBLE_EQ(s.q1, 2.0);   // position 1
  EXPECT_DOUBLE_EQ(s.q3, 4.0);   // position 3
  EXPECT_DOUBLE_EQ(s.iqr, 2.0);
  EXPECT_DOUBLE_EQ(s.mean, 22.0);
  EXPECT_DOUBLE_EQ(s.stddev, std::sqrt(7610.0 / 4));  // squares 441 + 400 + 361 + 324 + 6084
  EXPECT_DOUBLE_EQ(s.cv, std::sqrt(7610.0 / 4) / 22);
  EXPECT_DOUBLE_EQ(s.min, 1.0);
  EXPECT_DOUBLE_EQ(s.max, 100.0);
}

TEST(StatsSummarize, EvenCount) {
  const Summary s = summarize({3, 1, 4, 2});
  EXPECT_EQ(s.n, 4u);
  EXPECT_DOUBLE_EQ(s.median, 2.5);
  EXPECT_DOUBLE_EQ(s.mad, 1.0);  // |x - 2.5| = 1.5, 0.5, 0.5, 1.5 -> median 1
  EXPECT_DOUBLE_EQ(s.q1, 1.75);  // position 0.75, as numpy.percentile([1, 2, 3, 4], 25)
  EXPECT_DOUBLE_EQ(s.q3, 3.25);  // position 2.25
  EXPECT_DOUBLE_EQ(s.iqr, 1.5);
  EXPECT_DOUBLE_EQ(s.mean, 2.5);
  EXPECT_DOUBLE_EQ(s.stddev, std::sqrt(5.0 / 3));
  EXPECT_DOUBLE_EQ(s.cv, std::sqrt(5.0 / 3) / 2.5);
  EXPECT_DOUBLE_EQ(s.min, 1.0);
  EXPECT_DOUBLE_EQ(s.max, 4.0);
}

TEST(StatsSummarize, OneElement) {
  const Summary s = summarize({5});
  EXPECT_EQ(s.n, 1u);
  EXPECT_DOUBLE_EQ(s.median, 5.0);
  EXPECT_DOUBLE_EQ(s.q1, 5.0);
  EXPECT_DOUBLE_EQ(s.q3, 5.0);
  EXPECT_DOUBLE_EQ(s.min, 5.0);
  EXPECT_DOUBLE_EQ(s.max, 5.0);
  EXPECT_DOUBLE_EQ(s.mean, 5.0);
  EXPECT_EQ(s.mad, 0.0);
  EXPECT_EQ(s.iqr, 0.0);
  EXPECT_EQ(s.stddev, 0.0);
  EXPECT_EQ(s.cv, 0.0);
}

TEST(StatsSummarize, EdgeCases) {
  EXPECT_THROW(summarize({}), std::invalid_argument);
  EXPECT_THROW(summarize({1, kNaN}), std::invalid_argument);
  EXPECT_EQ(summarize({-1, 1}).cv, 0.0);  // mean 0: cv undefined, reported as 0
}

TEST(StatsVerdict, ToString) {
  EXPECT_EQ(to_string(Verdict::helps), "helps");
  EXPECT_EQ(to_string(Verdict::hurts), "hurts");
  EXPECT_EQ(to_string(Verdict::no_effect), "no measurable effect");
  EXPECT_EQ(to_string(Verdict::insufficient), "insufficient data");
}

TEST(StatsRatioOfMedians, PoolsProcesses) {
  // off pools to {1, 2, 3} (median 2), on to {1, 1, 2} (median 1); empty processes are ignored.
  EXPECT_DOUBLE_EQ(ratio_of_medians({{1, 3}, {}, {2}}, {{1}, {1, 2}}), 0.5);
  EXPECT_THROW(ratio_of_medians({{}}, {{1}}), std::invalid_argument);
  EXPECT_THROW(ratio_of_medians({{1}}, {}), std::invalid_argument);
  EXPECT_THROW(ratio_of_medians({{0, 0, 1}}, {{1}}), std::invalid_argument);
}

TEST(StatsEffect, KnownSpeedupHelps) {
  std::mt19937_64 rng(7);
  const Groups off = simulate_arm(rng, 4, 20, 100, 2);
  const Groups on = simulate_arm(rng, 4, 20, 50, 1);
  const Effect e = effect(off, on);
  EXPECT_NEAR(e.ratio, 0.5, 0.01);
  EXPECT_LE(e.lo, 0.5);
  EXPECT_GE(e.hi, 0.5);
  EXPECT_LT(e.hi, 1.0);
  EXPECT_LE(e.lo, e.ratio);
  EXPECT_GE(e.hi, e.ratio);
  EXPECT_EQ(e.verdict, Verdict::helps);
  EXPECT_EQ(e.confidence, 0.95);
  EXPECT_EQ(e.resamples, 2000);
  EXPECT_EQ(e.note, "");
}

TEST(StatsEffect, KnownSlowdownHurts) {
  std::mt19937_64 rng(7);
  const Groups fast = simulate_arm(rng, 4, 20, 100, 2);
  const Groups slow = simulate_arm(rng, 4, 20, 200, 4);
  const Effect e = effect(fast, slow);
  EXPECT_NEAR(e.ratio, 2.0, 0.04);
  EXPECT_LE(e.lo, 2.0);
  EXPECT_GE(e.hi, 2.0);
  EXPECT_GT(e.lo, 1.0);
  EXPECT_EQ(e.verdict, Verdict::hurts);
}

TEST(StatsEffect, AaHasNoEffect) {
  for (uint64_t seed : {1, 2, 3, 4, 5}) {
    std::mt19937_64 rng(seed);
    const Groups off = simulate_arm(rng, 4, 20, 100, 2);
    const Groups on = simulate_arm(rng, 4, 20, 100, 2);
    const Effect e = effect(off, on, seeded(seed));
    EXPECT_EQ(e.verdict, Verdict::no_effect) << "seed " << seed << ": " << format_effect(e);
    EXPECT_LE(e.lo, 1.0) << "seed " << seed;
    EXPECT_GE(e.hi, 1.0) << "seed " << seed;
  }
}

TEST(StatsEffect, HigherIsBetterMirrorsTheVerdict) {
  std::mt19937_64 rng(11);
  const Groups off = simulate_arm(rng, 4, 20, 100, 2);
  const Groups on = simulate_arm(rng, 4, 20, 50, 1);
  EffectOptions throughput;
  throughput.lower_is_better = false;
  EXPECT_EQ(effect(off, on, throughput).verdict, Verdict::hurts);  // half the items per second
  EXPECT_EQ(effect(on, off, throughput).verdict, Verdict::helps);
  EXPECT_EQ(effect(on, off).verdict, Verdict::hurts);
}

TEST(StatsEffect, HierarchyWidensTheIntervalUnderBetweenProcessVariance) {
  // Within a process the noise is small (sd 1); each process is shifted by ~N(0, 5). Resampling
  // processes sees that shift; treating all samples as one process does not.
  std::mt19937_64 rng(3);
  const Groups off = simulate_arm(rng, 4, 20, 100, 1, 5);
  const Groups on = simulate_arm(rng, 4, 20, 100, 1, 5);
  auto pool = [](const Groups& groups) {
    std::vector<double> all;
    for (const auto& process : groups) all.insert(all.end(), process.begin(), process.end());
    return Groups{all};
  };
  const Effect hierarchical = effect(off, on);
  const Effect flat = effect(pool(off), pool(on));
  EXPECT_DOUBLE_EQ(hierarchical.ratio, flat.ratio);
  EXPECT_GT(hierarchical.hi - hierarchical.lo, 2 * (flat.hi - flat.lo))
      << "hierarchical " << format_effect(hierarchical) << ", flat " << format_effect(flat);
  EXPECT_NE(flat.note.find("1 process per arm"), std::string::npos);
}

TEST(StatsEffect, DeterministicForASeed) {
  std::mt19937_64 rng(5);
  const Groups off = simulate_arm(rng, 3, 10, 100, 2, 1);
  const Groups on = simulate_arm(rng, 3, 10, 98, 2, 1);
  const Effect first = effect(off, on, seeded(9));
  const Effect second = effect(off, on, seeded(9));
  EXPECT_EQ(first.lo, second.lo);
  EXPECT_EQ(first.hi, second.hi);
  const Effect other = effect(off, on, seeded(10));
  EXPECT_TRUE(other.lo != first.lo || other.hi != first.hi);
}

TEST(StatsEffect, InsufficientData) {
  const Effect one_off = effect({{100}}, {{50, 51, 52}});
  EXPECT_EQ(one_off.verdict, Verdict::insufficient);
  EXPECT_DOUBLE_EQ(one_off.ratio, 0.51);
  EXPECT_TRUE(std::isnan(one_off.lo));
  EXPECT_TRUE(std::isnan(one_off.hi));
  EXPECT_NE(one_off.note.find("off arm has 1 sample"), std::string::npos) << one_off.note;

  const Effect empty_on = effect({{100, 101}}, {{}, {}});
  EXPECT_EQ(empty_on.verdict, Verdict::insufficient);
  EXPECT_TRUE(std::isnan(empty_on.ratio));
  EXPECT_EQ(format_effect(empty_on), "n/a [no interval] insufficient data");

  // Empty processes are ignored; two samples in two processes are enough.
  EXPECT_NE(effect({{}, {100}, {101}}, {{50}, {}, {51}}).verdict, Verdict::insufficient);
}

TEST(StatsEffect, OneProcessPerArmIsNoted) {
  std::mt19937_64 rng(13);
  const Effect both = effect(simulate_arm(rng, 1, 20, 100, 2), simulate_arm(rng, 1, 20, 50, 1));
  EXPECT_EQ(both.verdict, Verdict::helps);
  EXPECT_EQ(both.note, "1 process per arm: the interval ignores between-process variance");
  const Effect one = effect(simulate_arm(rng, 3, 20, 100, 2), simulate_arm(rng, 1, 20, 50, 1));
  EXPECT_NE(one.note.find("1 process in the on arm"), std::string::npos) << one.note;
}

TEST(StatsEffect, ZeroSpreadCollapsesTheInterval) {
  const Effect e = effect({{2, 2}, {2, 2}}, {{1, 1}, {1}});
  EXPECT_EQ(e.ratio, 0.5);
  EXPECT_EQ(e.lo, 0.5);
  EXPECT_EQ(e.hi, 0.5);
  EXPECT_EQ(e.verdict, Verdict::helps);
  EXPECT_NE(e.note.find("no spread"), std::string::npos) << e.note;

  const Effect same = effect({{3, 3}, {3}}, {{3, 3}, {3}});
  EXPECT_EQ(same.lo, 1.0);
  EXPECT_EQ(same.hi, 1.0);
  EXPECT_EQ(same.verdict, Verdict::no_effect);
}

TEST(StatsEffect, RejectsBadInput) {
  EXPECT_THROW(effect({{0, 0, 1}}, {{1, 2}}), std::invalid_argument);  // off median 0
  EXPECT_THROW(effect({{1, kNaN}}, {{1, 2}}), std::invalid_argument);
  EXPECT_THROW(effect({{1, 2}}, {{1, kNaN}}), std::invalid_argument);
  EXPECT_THROW(
      effect({{1, 2}}, {{1, 2}}, options_where([](EffectOptions& o) { o.confidence = 1.0; })),
      std::invalid_argument);
  EXPECT_THROW(effect({{1, 2}}, {{1, 2}}, options_where([](EffectOptions& o) { o.resamples = 0; })),
               std::invalid_argument);
  EXPECT_THROW(
      effect({{1, 2}}, {{1, 2}}, options_where([](EffectOptions& o) { o.min_effect = -0.1; })),
      std::invalid_argument);
  try {
    effect({{0, 0, 1}}, {{1, 2}});
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("off arm's median"), std::string::npos);
  }
}

TEST(StatsEffect, ResampledOffMedianAtZeroIsInsufficient) {
  // The pooled off median is 1, but resamples that draw mostly zeros have an off median of 0.
  const Effect e = effect({{0, 1, 1}}, {{1, 2}});
  EXPECT_EQ(e.verdict, Verdict::insufficient);
  EXPECT_DOUBLE_EQ(e.ratio, 1.5);
  EXPECT_TRUE(std::isnan(e.lo));
  EXPECT_NE(e.note.find("off median <= 0"), std::string::npos) << e.note;
}

TEST(StatsEffect, MinEffectIgnoresNegligibleEffects) {
  // 0.5 % faster, with little noise: statistically clear, practically negligible.
  std::mt19937_64 rng(17);
  const Groups off = simulate_arm(rng, 4, 20, 100, 0.1);
  const Groups on = simulate_arm(rng, 4, 20, 99.5, 0.1);
  const Effect clear = effect(off, on);
  EXPECT_EQ(clear.verdict, Verdict::helps) << format_effect(clear);
  EffectOptions ignoring_below_1_percent;
  ignoring_below_1_percent.min_effect = 0.01;
  EXPECT_EQ(effect(off, on, ignoring_below_1_percent).verdict, Verdict::no_effect);
  EXPECT_EQ(effect(on, off, ignoring_below_1_percent).verdict, Verdict::no_effect);
}

TEST(StatsEffect, AaFalsePositiveRateIsNearNominal) {
  // 200 A/A experiments, 3 processes x 10 samples per arm, with a between-process shift as real
  // workers have (sd 1 between, 2 within). At 95 % confidence about 5 % should say helps or hurts;
  // allow up to 10 %. (With the between-process sd well above the within, 3 processes give ~14 %:
  // see the header.)
  constexpr int kReplications = 200;
  int false_verdicts = 0;
  std::mt19937_64 rng(2024);
  for (int replication = 0; replication < kReplications; ++replication) {
    const Groups off = simulate_arm(rng, 3, 10, 100, 2, 1);
    const Groups on = simulate_arm(rng, 3, 10, 100, 2, 1);
    EffectOptions options;
    options.resamples = 500;  // enough for a 95 % percentile interval's decision, and fast
    options.seed = static_cast<uint64_t>(replication);
    const Effect e = effect(off, on, options);
    if (e.verdict == Verdict::helps || e.verdict == Verdict::hurts) ++false_verdicts;
  }
  EXPECT_LE(false_verdicts, kReplications / 10) << false_verdicts << " false verdicts";
}

TEST(StatsFormat, RatioIntervalVerdict) {
  Effect e{0.62, 0.58, 0.66, 0.95, 2000, Verdict::helps, ""};
  EXPECT_EQ(format_effect(e), "0.62x [0.58, 0.66] helps");
  // A narrow interval gets the decimals to show it.
  e = {0.996, 0.9951, 0.9972, 0.95, 2000, Verdict::helps, ""};
  EXPECT_EQ(format_effect(e), "0.996x [0.995, 0.997] helps");
  // Two decimals would print "0.50x [0.49, 0.50]", hiding that hi is above the ratio.
  e = {0.4998, 0.4949, 0.5049, 0.95, 2000, Verdict::helps, ""};
  EXPECT_EQ(format_effect(e), "0.500x [0.495, 0.505] helps");
  // An interval below 1 never prints its upper end as 1.
  e = {0.995, 0.99, 0.9996, 0.95, 2000, Verdict::helps, ""};
  EXPECT_EQ(format_effect(e), "0.9950x [0.9900, 0.9996] helps");
  e = {1.0, 1.0, 1.0, 0.95, 2000, Verdict::no_effect, ""};
  EXPECT_EQ(format_effect(e), "1.00x [1.00, 1.00] no measurable effect");
  e = {1.05, kNaN, kNaN, 0.95, 0, Verdict::insufficient, ""};
  EXPECT_EQ(format_effect(e), "1.05x [no interval] insufficient data");
}

TEST(StatsContrast, FactorialMainEffectsAndInteractionFromKnownCells) {
  // Cells of a 2×2 factorial with known medians: base 100, A on 50, B on 80, both 40.
  // Main effect of A (geometric mean of its ratios): √(50/100 · 40/80) = 0.5; of B: √(0.8·0.8).
  // Interaction: (40·100)/(50·80) = 1: the effects multiply independently.
  auto cell = [](double m) {
    Groups g;
    for (int p = 0; p < 3; ++p) g.push_back({m * 0.99, m, m * 1.01});
    return g;
  };
  const std::vector<Groups> cells{cell(100), cell(80), cell(50), cell(40)};  // A off/on × B off/on
  const Effect main_a = contrast(cells, {-0.5, -0.5, 0.5, 0.5});
  EXPECT_NEAR(main_a.ratio, 0.5, 1e-12);
  EXPECT_EQ(main_a.verdict, Verdict::helps);
  const Effect main_b = contrast(cells, {-0.5, 0.5, -0.5, 0.5});
  EXPECT_NEAR(main_b.ratio, 0.8, 1e-12);
  const Effect interaction = contrast(cells, {1, -1, -1, 1});
  EXPECT_NEAR(interaction.ratio, 1.0, 1e-12);
  EXPECT_LE(interaction.lo, 1.0);
  EXPECT_GE(interaction.hi, 1.0);
  EXPECT_EQ(interaction.verdict, Verdict::no_effect);
  // A real interaction: with both on, 25 instead of 40.
  const Effect synergy = contrast({cell(100), cell(80), cell(50), cell(25)}, {1, -1, -1, 1});
  EXPECT_NEAR(synergy.ratio, 0.625, 1e-12);
  EXPECT_EQ(synergy.verdict, Verdict::helps);
  // Two arms with weights −1, +1 are exactly effect().
  const Effect two = contrast({cell(100), cell(50)}, {-1, 1});
  const Effect direct = effect(cell(100), cell(50));
  EXPECT_NEAR(two.ratio, direct.ratio, 1e-12);
  EXPECT_THROW(contrast({cell(1)}, {1, 2}), std::invalid_argument);
}

// analysis::factorial_effects, the contrasts a factorial run stores, on a 2^3 experiment with a
// known answer: cell medians 100 · 0.5^a · 0.8^b · 0.9^c, times 1.2 where a and b are both on
// (zero spread, so every contrast is exact). Main effect of a: the geometric mean of its ratios,
// 0.5 · √1.2; of b: 0.8 · √1.2; of c: 0.9. Interaction a × b: 1.2; a × c and b × c: 1.
TEST(StatsContrast, FactorialEffectsOfThreeFactorsFromKnownCells) {
  std::vector<std::string> cells;
  std::vector<Groups> groups;
  for (int a = 0; a < 2; ++a) {
    for (int b = 0; b < 2; ++b) {
      for (int c = 0; c < 2; ++c) {
        cells.push_back(
            fmt::format("a={},b={},c={}", a ? "on" : "off", b ? "on" : "off", c ? "on" : "off"));
        const double m =
            100 * std::pow(0.5, a) * std::pow(0.8, b) * std::pow(0.9, c) * (a && b ? 1.2 : 1.0);
        groups.push_back({{m, m}, {m, m}});
      }
    }
  }
  const auto effects = analysis::factorial_effects(cells, groups);
  ASSERT_EQ(effects.size(), 6u);  // 3 main effects, 3 interactions
  const std::vector<std::pair<std::string, double>> want{{"main effect of a", 0.5 * std::sqrt(1.2)},
                                                         {"main effect of b", 0.8 * std::sqrt(1.2)},
                                                         {"main effect of c", 0.9},
                                                         {"interaction a x b", 1.2},
                                                         {"interaction a x c", 1.0},
                                                         {"interaction b x c", 1.0}};
  for (size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE(want[i].first);
    EXPECT_EQ(effects[i].compared, want[i].first);
    EXPECT_EQ(effects[i].metric, "time");
    EXPECT_NEAR(effects[i].effect.ratio, want[i].second, 1e-12);
    EXPECT_NEAR(effects[i].effect.lo, want[i].second, 1e-12);  // zero spread: collapsed
    EXPECT_NEAR(effects[i].effect.hi, want[i].second, 1e-12);
  }
  EXPECT_EQ(effects[3].effect.verdict, Verdict::hurts);  // together they do worse
  EXPECT_EQ(effects[0].effect.verdict, Verdict::helps);
  // Not all 2^k cells, or a cell without samples: no contrasts.
  EXPECT_TRUE(
      analysis::factorial_effects({cells[0], cells[1], cells[2]}, {groups[0], groups[1], groups[2]})
          .empty());
  groups[5].clear();
  EXPECT_TRUE(analysis::factorial_effects(cells, groups).empty());
}

// A ladder's steps multiply, and their log-scale half-widths add in quadrature: two steps of
// 0.8 [0.8/1.1, 0.8·1.1] and 0.9 [0.9/1.1, 0.9·1.1] at 95 % chain to 0.72 with a half-width of
// √2 · ln 1.1 on the log scale.
TEST(Stats, ChainedStepsMultiplyAndTheirLogHalfWidthsAddInQuadrature) {
  auto step = [](double ratio, double factor) {
    Effect e{};
    e.ratio = ratio;
    e.lo = ratio / factor;
    e.hi = ratio * factor;
    e.confidence = 0.95;
    return e;
  };
  const Effect both = chained({step(0.8, 1.1), step(0.9, 1.1)});
  EXPECT_NEAR(both.ratio, 0.72, 1e-12);
  EXPECT_NEAR(std::log(both.hi / both.ratio), std::sqrt(2.0) * std::log(1.1), 1e-9);
  EXPECT_NEAR(std::log(both.ratio / both.lo), std::sqrt(2.0) * std::log(1.1), 1e-9);
  EXPECT_EQ(both.verdict, Verdict::helps);  // 0.72 · 1.1^√2 = 0.82 < 1
  // One step is itself; a step without an interval leaves the product without one.
  const Effect one = chained({step(1.02, 1.01)});
  EXPECT_NEAR(one.lo, 1.02 / 1.01, 1e-9);
  EXPECT_EQ(one.verdict, Verdict::hurts);
  Effect bare = step(0.9, 1.1);
  bare.lo = bare.hi = NAN;
  const Effect none = chained({step(0.8, 1.1), bare});
  EXPECT_NEAR(none.ratio, 0.72, 1e-12);
  EXPECT_TRUE(std::isnan(none.lo));
  EXPECT_EQ(none.verdict, Verdict::insufficient);
  EXPECT_EQ(chained({step(0.9, 1.2), step(1.05, 1.2)}).verdict, Verdict::no_effect);
  EXPECT_THROW(chained({}), std::invalid_argument);
}

}  // namespace
}  // namespace tunebench::stats

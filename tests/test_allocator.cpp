// The run budget's allocator (run/allocator.h) on simulated experiments with known costs and
// noise: it settles more of them than today's fixed caps within the same budget, never spends
// beyond it, and says why each experiment stopped. And the samples sized to the step
// (run/sizing.h) that decide what a worker costs: known shapes for known step times.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <random>
#include <tuple>

#include "run/allocator.h"
#include "run/sizing.h"

namespace tunebench::orchestrator::allocation {
namespace {

TEST(Allocator, PredictsThePairedTIntervalsHalfWidth) {
  // t(0.975, 3) = 3.18245: exp(3.18245 · 0.02 / 2) − 1.
  EXPECT_NEAR(predicted_half_width(0.02, 4, 0.95), 0.032336, 1e-5);
  // t(0.975, 15) = 2.13145: exp(2.13145 · 0.02 / 4) − 1.
  EXPECT_NEAR(predicted_half_width(0.02, 16, 0.95), 0.010714, 1e-5);
  EXPECT_TRUE(std::isinf(predicted_half_width(0.02, 1, 0.95)));
}

TEST(Allocator, DecidesAsThePairedEstimatorDoes) {
  // 0.90x, workers spread by 2 %: helps at 4 workers.
  EXPECT_EQ(verdict_at(std::log(0.9), 0.02, 4, 0.95, 0.02, 0.02), "helps");
  EXPECT_EQ(verdict_at(std::log(1.1), 0.02, 4, 0.95, 0.02, 0.02), "hurts");
  // 1.00x at 1 % spread, 8 workers: ±0.84 %, and the 90 % interval (±0.67 %) inside ±2 %.
  EXPECT_EQ(verdict_at(0, 0.01, 8, 0.95, 0.02, 0.02), "no effect beyond ±2%");
  // 1.01x at 5 % spread, 4 workers: ±8 %, open …
  EXPECT_EQ(verdict_at(std::log(1.01), 0.05, 4, 0.95, 0.02, 0.02), "");
  // … 0.99x at 2.4 % spread, 16 workers: ±1.3 %, holds 1, and its 90 % interval reaches 0.980,
  // below −2 %: open.
  EXPECT_EQ(verdict_at(std::log(0.99), 0.024, 16, 0.95, 0.02, 0.02), "");
  // Fewer than 3 workers: no verdict (the estimator's min_workers).
  EXPECT_EQ(verdict_at(std::log(0.5), 0.01, 2, 0.95, 0.02, 0.02), "");
}

TEST(Allocator, LooksAtThePlannedCountThenEachDoublingAtAUnionBoundLevel) {
  const Looks l = looks_of(4, 40, 0.95);
  EXPECT_EQ(l.at, (std::vector<int>{4, 8, 16, 32, 40}));
  EXPECT_NEAR(l.confidence, 0.99, 1e-12);
  EXPECT_TRUE(passed_look(l, -1, 4));
  EXPECT_FALSE(passed_look(l, 4, 6));
  EXPECT_TRUE(passed_look(l, 6, 8));
  EXPECT_TRUE(passed_look(l, 10, 18));  // a resumed run that skipped 16 still looks once
}

// The probability of a decided verdict k workers on, against a simulation of its own model: the
// true mean drawn from what n workers say of it (N(m, sd²/n)), k more workers from N(true, sd²),
// the verdict of all n + k at the known spread.
TEST(Allocator, TheProbabilityOfDecidingMatchesASimulationOfItsModel) {
  std::mt19937_64 rng(11);
  for (const auto& [m, sd, n, k] :
       std::vector<std::tuple<double, double, int, int>>{{std::log(0.97), 0.03, 4, 4},
                                                         {std::log(1.00), 0.02, 4, 12},
                                                         {std::log(0.985), 0.015, 8, 8},
                                                         {std::log(1.05), 0.08, 4, 28}}) {
    Standing s;
    s.workers = n;
    s.log_ratio = m;
    s.log_sd = sd;
    const double p = probability_decided(s, n + k, 0.99);
    int decided = 0;
    constexpr int kDraws = 20000;
    std::normal_distribution<double> unit(0, 1);
    for (int i = 0; i < kDraws; ++i) {
      const double truth = m + sd / std::sqrt(double(n)) * unit(rng);
      const double more = truth + sd / std::sqrt(double(k)) * unit(rng);
      const double mean = (n * m + k * more) / (n + k);
      decided += !verdict_at(mean, sd, n + k, 0.99, 0.02, 0.02).empty();
    }
    const double simulated = double(decided) / kDraws;
    EXPECT_NEAR(p, simulated, 0.015) << "m " << m << " sd " << sd << " n " << n << " k " << k;
  }
}

// One simulated experiment: each worker costs `cost` seconds and its log ratio is drawn from
// N(effect, sd) (sd: the between-worker spread that sets a paired interval's width).
struct Simulated {
  double cost, sd, effect = 0;
  std::vector<double> draws;
  double seconds = 0;
  void add_worker(std::mt19937_64& rng) {
    draws.push_back(std::normal_distribution<double>(effect, sd)(rng));
    seconds += cost;
  }
  double mean() const {
    return std::accumulate(draws.begin(), draws.end(), 0.0) / double(draws.size());
  }
  double log_sd() const {
    const double n = double(draws.size());
    if (n < 2) return 0;
    double ss = 0;
    for (double x : draws) ss += (x - mean()) * (x - mean());
    return std::sqrt(ss / (n - 1));
  }
  double half_width() const { return predicted_half_width(log_sd(), int(draws.size()), 0.95); }
  bool settled() const { return draws.size() >= 3 && half_width() <= 0.02; }
  // Its verdict as the paired estimator states it: at 95 %, whatever the looks.
  std::string verdict() const {
    return verdict_at(mean(), log_sd(), int(draws.size()), 0.95, 0.02, 0.02);
  }
};

// A night's mix: cheap inference (3 s a worker), medium (10 s) and costly training (60 s)
// experiments, each at a spread from easy to hopeless for ±2 %, with effects from clear to none.
std::vector<Simulated> night() {
  std::vector<Simulated> out;
  const double effects[] = {std::log(0.7), std::log(0.97), 0,   std::log(1.05), std::log(0.99),
                            std::log(1.3), std::log(0.94), 0.0, std::log(1.02), std::log(0.8)};
  int e = 0;
  auto add = [&](double cost, double sd) { out.push_back({cost, sd, effects[e++ % 10], {}, 0}); };
  for (double sd : {0.015, 0.02, 0.03, 0.04, 0.05, 0.03}) add(3, sd);
  for (double sd : {0.02, 0.025, 0.04, 0.02}) add(10, sd);
  for (double sd : {0.05, 0.1, 0.03}) add(60, sd);
  for (double sd : {0.02, 0.035, 0.015, 0.045}) add(3, sd);
  return out;
}

constexpr int kPlanned = 4;

// The allocator before this one, kept here as the baseline to beat: once the planned workers have
// run, two workers at a time to the experiment whose interval shrinks most toward ±2 % per second;
// an experiment settled at ±2 %, or that cannot reach it within the time left, stops.
std::vector<Simulated> widths_alone(std::vector<Simulated> xs, double budget, std::mt19937_64& rng,
                                    double& spent) {
  double elapsed = 0;
  for (auto& x : xs)
    for (int k = 0; k < kPlanned; ++k) x.add_worker(rng), elapsed += x.cost;
  std::vector<bool> done(xs.size(), false);
  for (;;) {
    std::optional<size_t> next;
    double best = -1;
    for (size_t i = 0; i < xs.size(); ++i) {
      const Simulated& x = xs[i];
      const int n = int(x.draws.size());
      if (done[i] || x.settled() || n + 2 > 64 || 2 * x.cost > budget - elapsed) {
        done[i] = true;
        continue;
      }
      int needed = 0;
      for (int w = n + 2; w <= 64 && !needed; w += 2)
        if (predicted_half_width(x.log_sd(), w, 0.95) <= 0.02) needed = w;
      if (!needed || (needed - n) * x.cost > budget - elapsed) {
        done[i] = true;  // "stopped early: cannot reach ±2 %"
        continue;
      }
      const double shrink =
          x.half_width() - std::max(predicted_half_width(x.log_sd(), n + 2, 0.95), 0.02);
      if (shrink / (2 * x.cost) > best) best = shrink / (2 * x.cost), next = i;
    }
    if (!next) break;
    for (int k = 0; k < 2; ++k) xs[*next].add_worker(rng), elapsed += xs[*next].cost;
  }
  spent = elapsed;
  return xs;
}

// This allocator: every experiment's planned workers first, then two workers at a time where
// decide() says, each verdict looked at only at its looks, until it chooses none. `spent` the
// seconds.
std::vector<Simulated> on_verdicts(std::vector<Simulated> xs, double budget, std::mt19937_64& rng,
                                   double& spent, std::vector<std::string>* reasons = nullptr) {
  double elapsed = 0;
  for (auto& x : xs)
    for (int k = 0; k < kPlanned; ++k) x.add_worker(rng), elapsed += x.cost;
  std::vector<bool> done(xs.size(), false);
  std::vector<Standing> looked(xs.size());
  for (;;) {
    std::vector<Standing> standings;
    for (size_t i = 0; i < xs.size(); ++i) {
      const auto& x = xs[i];
      Standing s;
      s.workers = int(x.draws.size());
      s.planned = kPlanned;
      s.most_workers = 64;
      s.seconds = x.seconds;
      s.half_width = x.half_width();
      s.log_sd = x.log_sd();
      s.log_ratio = x.mean();
      s.settled = x.settled();
      const Looks looks = looks_of(s.planned, s.most_workers, s.confidence);
      if (passed_look(looks, looked[i].workers ? looked[i].workers : -1, s.workers)) {
        look(s);
        looked[i] = s;
      } else {
        s.decided = looked[i].decided;
        s.verdict = looked[i].verdict;
      }
      standings.push_back(s);
    }
    const Decision d = decide(standings, done, budget - elapsed);
    for (const auto& [i, why] : d.stopped) {
      done[i] = true;
      if (reasons) reasons->push_back(why);
    }
    if (!d.next) break;
    for (int k = 0; k < 2; ++k) xs[*d.next].add_worker(rng), elapsed += xs[*d.next].cost;
  }
  spent = elapsed;
  return xs;
}

int decided(const std::vector<Simulated>& xs) {
  int n = 0;
  for (const auto& x : xs) n += !x.verdict().empty();
  return n;
}

TEST(Allocator, SpendsTheWholeBudgetAndDecidesMoreVerdictsThanSpendingOnWidths) {
  double planned = 0, costliest = 0;
  for (const auto& x : night())
    planned += kPlanned * x.cost, costliest = std::max(costliest, x.cost);
  const double budget = planned + 600;  // ten minutes beyond the planned workers
  int by_widths = 0, by_verdicts = 0;
  double spent_widths = 0, spent_verdicts = 0;
  constexpr int kNights = 20;
  for (int seed = 1; seed <= kNights; ++seed) {
    std::mt19937_64 a(seed), b(seed);
    double spent = 0;
    by_widths += decided(widths_alone(night(), budget, a, spent));
    spent_widths += spent;
    by_verdicts += decided(on_verdicts(night(), budget, b, spent));
    spent_verdicts += spent;
    EXPECT_LE(spent, budget) << "night " << seed;
    // It stops only when two more workers of the cheapest experiment still open no longer fit.
    EXPECT_GT(spent, budget - 2 * costliest) << "night " << seed;
  }
  std::cerr << "verdicts decided over " << kNights << " simulated nights of " << night().size()
            << " experiments: spending on widths " << by_widths << " (" << spent_widths / kNights
            << " s a night), on open verdicts " << by_verdicts << " (" << spent_verdicts / kNights
            << " s a night, budget " << budget << " s)\n";
  EXPECT_GT(by_verdicts, by_widths);
}

// Spending on verdicts looks at the estimate, so it must not decide null effects more often than
// an interval's level allows: 2,000 experiments with no effect (the simulated night's costs and
// spreads), each decided "helps" or "hurts" at most as often as a single 95 % interval would
// (5 %), within the simulation's own error (3 standard errors of 2,000 draws: 1.5 %).
TEST(Allocator, NullEffectsAreNotDecidedMoreOftenThanTheIntervalsLevel) {
  int wrong = 0, experiments = 0;
  for (int seed = 1; experiments < 2000; ++seed) {
    std::vector<Simulated> xs = night();
    for (auto& x : xs) x.effect = 0;
    std::mt19937_64 rng(1000 + seed);
    double planned = 0, spent = 0;
    for (const auto& x : xs) planned += kPlanned * x.cost;
    for (const auto& x : on_verdicts(xs, planned + 600, rng, spent)) {
      const std::string v = x.verdict();
      wrong += v == "helps" || v == "hurts";
      ++experiments;
    }
  }
  const double rate = double(wrong) / experiments;
  std::cerr << "null effects decided helps or hurts: " << wrong << " of " << experiments << " ("
            << 100 * rate << " %)\n";
  EXPECT_LE(rate, 0.05 + 3 * std::sqrt(0.05 * 0.95 / experiments));
}

TEST(Allocator, ABudgetAlreadySpentStopsEveryExperimentAndSaysWhy) {
  std::mt19937_64 rng(7);
  double spent = 0;
  std::vector<std::string> reasons;
  const auto xs = night();
  on_verdicts(xs, 0, rng, spent, &reasons);
  ASSERT_EQ(reasons.size(), xs.size());
  for (const auto& why : reasons) {
    const bool decided =
        why.rfind("decided: ", 0) == 0 && why.find("within its") != std::string::npos;
    const bool no_room =
        why.find("do not fit in the 0s left of the run's budget") != std::string::npos;
    EXPECT_TRUE(decided || no_room) << why;
  }
}

TEST(Allocator, AnOpenVerdictThatCannotReachTheTargetStillGetsTheBudget) {
  // The old allocator stopped this at once: ±2 % at sd 0.05 takes 28 workers (1,440 s more at
  // 60 s a worker), and only 10 more fit in 600 s. Its verdict is open (0.98x, ±8 %), and ten
  // more workers may still decide it: it gets them.
  Standing s;
  s.experiment = "costly";
  s.workers = 4;
  s.planned = 4;
  s.most_workers = 64;
  s.seconds = 4 * 60;
  s.log_sd = 0.05;
  s.log_ratio = std::log(0.93);
  s.half_width = predicted_half_width(s.log_sd, 4, 0.95);
  look(s);
  ASSERT_FALSE(s.decided);
  const Decision d = decide({s}, {false}, 600);
  EXPECT_TRUE(d.stopped.empty());
  ASSERT_TRUE(d.next);
  EXPECT_NE(d.why.find("to decide by"), std::string::npos) << d.why;
  const Outlook o = outlook(s, 600);
  EXPECT_EQ(o.affordable, 14);
  EXPECT_GT(o.p_decide, 0.3);
}

TEST(Allocator, OpenVerdictsComeBeforeDecidedOnesWiderThanTheTarget) {
  Standing clear;  // 0.30x [0.25, 0.36]: decided, wider than ±2 %
  clear.experiment = "clear";
  clear.workers = 4;
  clear.planned = 4;
  clear.most_workers = 40;
  clear.seconds = 12;
  clear.log_sd = 0.1;
  clear.log_ratio = std::log(0.3);
  clear.half_width = predicted_half_width(clear.log_sd, 4, 0.95);
  look(clear);
  ASSERT_TRUE(clear.decided);
  Standing open = clear;  // 0.98x at the same spread: open
  open.experiment = "open";
  open.log_ratio = std::log(0.98);
  look(open);
  ASSERT_FALSE(open.decided);
  const Decision d = decide({clear, open}, {false, false}, 300);
  ASSERT_TRUE(d.next);
  EXPECT_EQ(*d.next, 1u);
  // With the open one done, the decided one narrows toward its target.
  const Decision then = decide({clear, open}, {false, true}, 300);
  ASSERT_TRUE(then.next);
  EXPECT_EQ(*then.next, 0u);
  EXPECT_NE(then.why.find("narrowing toward ±2%"), std::string::npos) << then.why;
}

// Samples sized to the step, on the step times of the nightly's models (a worker of 8 blocks of
// 3 samples of one step given, its blocks to take about 4 s).
TEST(Sizing, AShortStepGetsMoreBlocksALongOneFewerSamplesThenFewerBlocks) {
  using sizing::Shape;
  const Shape given{8, 3, 1};
  // Off: the suite's shape, whatever the step.
  EXPECT_EQ(sizing::size(given, 0.065, 0), given);
  EXPECT_EQ(sizing::size(given, 0, 4.0), given);
  // ResNet-50 96² inference, 65 ms a step: a pair of blocks takes 0.39 s, so 10 pairs.
  EXPECT_EQ(sizing::size(given, 0.065, 4.0), (Shape{20, 3, 1}));
  // GPT-2 small inference, 0.3 s: 2 samples a block (a pair 1.2 s), and 3 pairs.
  EXPECT_EQ(sizing::size(given, 0.3, 4.0), (Shape{6, 2, 1}));
  // GPT-2 small training, 1.1 s, and grad_accum's 3.9 s: the fewest, 2 pairs of 2-sample blocks.
  EXPECT_EQ(sizing::size(given, 1.1, 4.0), (Shape{4, 2, 1}));
  EXPECT_EQ(sizing::size(given, 3.9, 4.0), (Shape{4, 2, 1}));
  // DLRM inference, 8 steps of 4.9 ms a sample: the samples as given, 17 pairs of them.
  EXPECT_EQ(sizing::size(Shape{8, 3, 8}, 0.0049, 4.0), (Shape{34, 3, 8}));
  // A long step given several steps a sample: one first, then 2 samples a block, then blocks.
  EXPECT_EQ(sizing::size(Shape{16, 4, 2}, 0.4, 4.0), (Shape{6, 2, 1}));
  // A tiny step: at most kMostSizedBlocks.
  EXPECT_EQ(sizing::size(Shape{4, 2, 1}, 0.001, 4.0), (Shape{sizing::kMostSizedBlocks, 2, 1}));
}

TEST(Sizing, AWorkersBlocksTakeAboutWorkerSecondsWhereverTheStepAllows) {
  const sizing::Shape given{8, 3, 1};
  for (double worker_s : {1.0, 4.0, 16.0}) {
    for (double step = 1e-4; step <= 20; step *= 1.07) {
      const sizing::Shape s = sizing::size(given, step, worker_s);
      const double worker = sizing::worker_seconds(s, step);
      const std::string at = fmt::format("step {} s, worker_s {} s", step, worker_s);
      EXPECT_GE(s.blocks, 4) << at;
      EXPECT_LE(s.blocks, sizing::kMostSizedBlocks) << at;
      EXPECT_EQ(s.blocks % 2, 0) << at;
      EXPECT_GE(s.block_samples, 2) << at;
      EXPECT_LE(s.block_samples, given.block_samples) << at;
      EXPECT_EQ(s.iterations, 1) << at;
      if (sizing::worker_seconds(given, step) <= worker_s) {
        // A short step: the given samples, more blocks; within half a pair of worker_s unless
        // the most blocks cap it.
        EXPECT_EQ(s.block_samples, given.block_samples) << at;
        EXPECT_GE(s.blocks, given.blocks) << at;
        if (s.blocks < sizing::kMostSizedBlocks) {
          EXPECT_NEAR(worker, worker_s, sizing::pair_seconds(s, step) / 2 + 1e-12) << at;
        }
      } else {
        // A long step: never more than given, and no longer than 1.5 worker_s unless at the
        // fewest: 2 pairs of 2-sample blocks.
        EXPECT_LE(s.blocks, given.blocks) << at;
        EXPECT_LE(worker, std::max(1.5 * worker_s, 8 * step) + 1e-12) << at;
      }
    }
  }
}

// One-step blocks, where no carry-over shows: one sample of each arm a turn, as many as fill
// worker_s, nothing dropped.
TEST(Sizing, OneStepBlocksFillWorkerSecondsWithOneSampleOfEachArmATurn) {
  using sizing::Shape;
  const Shape given{4, 3, 1};
  EXPECT_EQ(sizing::one_step(given, 0.065, 0), given);
  // ResNet-50 96², 65 ms: a pair 0.13 s, 31 pairs in 4 s.
  EXPECT_EQ(sizing::one_step(given, 0.065, 4.0), (Shape{62, 1, 1}));
  // GPT-2 small training, 1.1 s: the fewest, 2 pairs.
  EXPECT_EQ(sizing::one_step(given, 1.1, 4.0), (Shape{4, 1, 1}));
  // DLRM inference, 8 steps of 4.9 ms a sample: the samples as given, 51 pairs.
  EXPECT_EQ(sizing::one_step(Shape{4, 3, 8}, 0.0049, 4.0), (Shape{102, 1, 8}));
  // A long step given several steps a sample: halved until 4 blocks fit (2 steps: 3.2 s), then
  // the blocks that fill 4 s (a pair 1.6 s: 2.5 pairs, rounded to 3).
  EXPECT_EQ(sizing::one_step(Shape{4, 3, 8}, 0.4, 4.0), (Shape{6, 1, 2}));
  // A tiny step: at most kMostOneStepBlocks.
  EXPECT_EQ(sizing::one_step(given, 1e-4, 4.0), (Shape{sizing::kMostOneStepBlocks, 1, 1}));
  for (double step = 1e-4; step <= 20; step *= 1.07) {
    const Shape s = sizing::one_step(given, step, 4.0);
    EXPECT_EQ(s.block_samples, 1) << step;
    EXPECT_EQ(s.blocks % 2, 0) << step;
    EXPECT_GE(s.blocks, 4) << step;
    if (s.blocks > 4 && s.blocks < sizing::kMostOneStepBlocks) {
      EXPECT_NEAR(sizing::worker_seconds(s, step), 4.0, sizing::pair_seconds(s, step) / 2 + 1e-12);
    }
  }
}

TEST(Allocator, FittedWorkersKeepTheShareThatFitsButNoFewerThanTheFloorOrThanRan) {
  EXPECT_EQ(allocation::fitted_workers(16, 2, 0.5), 8);
  EXPECT_EQ(allocation::fitted_workers(16, 2, 0.01), allocation::kFitPlanFloor);
  EXPECT_EQ(allocation::fitted_workers(16, 6, 0.01), 6);  // what ran stays
  EXPECT_EQ(allocation::fitted_workers(3, 0, 0.0), 3);    // fewer than the floor planned
  EXPECT_EQ(allocation::fitted_workers(16, 0, 2.0), 16);  // never more than planned
  EXPECT_EQ(allocation::fitted_workers(16, 0, -1.0), allocation::kFitPlanFloor);
}

}  // namespace
}  // namespace tunebench::orchestrator::allocation

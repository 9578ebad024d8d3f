// The run budget's allocator (run/allocator.h) on simulated experiments with known costs and
// noise: it settles more of them than today's fixed caps within the same budget, never spends
// beyond it, and says why each experiment stopped. And the samples sized to the step
// (run/sizing.h) that decide what a worker costs: known shapes for known step times.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <random>

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

// One simulated experiment: each worker costs `cost` seconds and its log ratio is drawn from
// N(0, sd) (the between-worker spread that sets a paired interval's width).
struct Simulated {
  double cost, sd;
  std::vector<double> draws;
  double seconds = 0;
  void add_worker(std::mt19937_64& rng) {
    draws.push_back(std::normal_distribution<double>(0, sd)(rng));
    seconds += cost;
  }
  double log_sd() const {
    const double n = double(draws.size());
    if (n < 2) return 0;
    const double mean = std::accumulate(draws.begin(), draws.end(), 0.0) / n;
    double ss = 0;
    for (double x : draws) ss += (x - mean) * (x - mean);
    return std::sqrt(ss / (n - 1));
  }
  double half_width() const { return predicted_half_width(log_sd(), int(draws.size()), 0.95); }
  bool settled() const { return draws.size() >= 3 && half_width() <= 0.02; }
};

// A night's mix: cheap inference (3 s a worker), medium (10 s) and costly training (60 s)
// experiments, each at a spread from easy to hopeless for ±2 %.
std::vector<Simulated> night() {
  std::vector<Simulated> out;
  for (double sd : {0.015, 0.02, 0.03, 0.04, 0.05, 0.03}) out.push_back({3, sd, {}, 0});
  for (double sd : {0.02, 0.025, 0.04, 0.02}) out.push_back({10, sd, {}, 0});
  for (double sd : {0.05, 0.1, 0.03}) out.push_back({60, sd, {}, 0});
  for (double sd : {0.02, 0.035, 0.015, 0.045}) out.push_back({3, sd, {}, 0});
  return out;
}

constexpr int kPlanned = 4;

// Today's rule: in suite order, each experiment's planned workers, then two more at a time until
// it is settled, its workers have taken budget_s (40 s), it has max_workers (12), or the run's
// budget is spent.
int fixed_caps(std::vector<Simulated> xs, double budget, std::mt19937_64& rng) {
  double elapsed = 0;
  for (auto& x : xs) {
    for (int k = 0; k < kPlanned; ++k) x.add_worker(rng), elapsed += x.cost;
    while (!x.settled() && x.seconds < 40 && x.draws.size() + 2 <= 12 && elapsed < budget) {
      for (int k = 0; k < 2; ++k) x.add_worker(rng), elapsed += x.cost;
    }
  }
  int settled = 0;
  for (const auto& x : xs) settled += x.settled();
  return settled;
}

// The allocator: every experiment's planned workers first, then two workers at a time where
// decide() says, until it chooses none. Returns the experiments settled; `spent` the seconds.
int allocated(std::vector<Simulated> xs, double budget, std::mt19937_64& rng, double& spent,
              std::vector<std::string>* reasons = nullptr) {
  double elapsed = 0;
  for (auto& x : xs)
    for (int k = 0; k < kPlanned; ++k) x.add_worker(rng), elapsed += x.cost;
  std::vector<bool> done(xs.size(), false);
  for (;;) {
    std::vector<Standing> standings;
    for (const auto& x : xs) {
      Standing s;
      s.workers = int(x.draws.size());
      s.planned = kPlanned;
      s.most_workers = 64;
      s.seconds = x.seconds;
      s.half_width = x.half_width();
      s.log_sd = x.log_sd();
      s.settled = x.settled();
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
  int settled = 0;
  for (const auto& x : xs) settled += x.settled();
  return settled;
}

TEST(Allocator, SettlesMoreSimulatedExperimentsThanFixedCapsWithinTheSameBudget) {
  double planned = 0;
  for (const auto& x : night()) planned += kPlanned * x.cost;
  const double budget = planned + 600;  // ten minutes beyond the planned workers
  int by_caps = 0, by_allocator = 0;
  constexpr int kNights = 20;
  for (int seed = 1; seed <= kNights; ++seed) {
    std::mt19937_64 a(seed), b(seed);
    double spent = 0;
    by_caps += fixed_caps(night(), budget, a);
    by_allocator += allocated(night(), budget, b, spent);
    EXPECT_LE(spent, budget) << "night " << seed;
  }
  std::cerr << "settled over " << kNights << " simulated nights of " << night().size()
            << " experiments: fixed caps " << by_caps << ", allocator " << by_allocator << "\n";
  EXPECT_GT(by_allocator, by_caps);
}

TEST(Allocator, ABudgetAlreadySpentStopsEveryExperimentAndSaysWhy) {
  std::mt19937_64 rng(7);
  double spent = 0;
  std::vector<std::string> reasons;
  const auto xs = night();
  allocated(xs, 0, rng, spent, &reasons);
  ASSERT_EQ(reasons.size(), xs.size());
  for (const auto& why : reasons) {
    const bool settled = why == "settled";
    const bool no_room =
        why.find("do not fit in the 0s left of the run's budget") != std::string::npos;
    EXPECT_TRUE(settled || no_room) << why;
  }
}

TEST(Allocator, AnExperimentThatCannotSettleInTheTimeLeftStopsEarlyWithWhatItWouldNeed) {
  Standing s;
  s.experiment = "costly";
  s.workers = 4;
  s.planned = 4;
  s.most_workers = 64;
  s.seconds = 4 * 60;  // 60 s a worker
  s.log_sd = 0.05;
  s.half_width = predicted_half_width(s.log_sd, 4, 0.95);
  const Decision d = decide({s}, {false}, 600);
  EXPECT_FALSE(d.next);
  ASSERT_EQ(d.stopped.size(), 1u);
  // ±2 % at sd 0.05 takes 28 workers (±1.96 %): 24 more at 60 s, 1,440 s; 10 more fit in 600 s.
  EXPECT_NE(d.stopped[0].second.find("it would need 28 workers, 1440s more"), std::string::npos)
      << d.stopped[0].second;
  EXPECT_NE(d.stopped[0].second.find(
                fmt::format("would reach ±{:.1f}%", 100 * predicted_half_width(0.05, 14, 0.95))),
            std::string::npos)
      << d.stopped[0].second;
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

}  // namespace
}  // namespace tunebench::orchestrator::allocation

// The procurement comparison (analysis/hosts.h) on databases of synthetic runs with known
// answers: a 20 % faster host is ranked apart with an interval covering 1.2, hosts drawn from one
// distribution share a rank, more spread asks for more runs, prices scale the per-price figures
// exactly, every run of a host makes its figure (Welch's t on the log run medians), a host of one
// run takes its calibrated floor or is never told apart, one hostname on two hardware classes is
// named by class, and bad input gets one clear error.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <boost/math/distributions/students_t.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include "analysis/hosts.h"
#include "analysis/reporter.h"
#include "core/hardware.h"
#include "tests/synthetic_db.h"

namespace tunebench::hosts {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The comparison as the reporter of `format` prints it.
std::string printed(const Comparison& comparison, const std::string& format) {
  return reporters::reporter(format, reporters::Output::hosts).hosts(comparison);
}

class HostsTest : public test_db::SyntheticDbTest {
 protected:
  // One finished run of `suite` on `host` (`cores` cores): GPT tiny inference at batch 8, the
  // no_grad experiment's off arm (default settings) and on arm, `processes` processes x 8
  // samples each of seconds = `seconds` x (1 + `spread` noise); the on arm 10 % faster. With
  // `energy`, each trial says it measured `energy` joules per item, as a CUDA worker does.
  std::string add_run(const std::string& host, int cores, double seconds, double spread,
                      const std::string& suite = "smoke", int processes = 4, double energy = NAN) {
    return add_run_on({{"hostname", host}, {"cores", cores}, {"cpu_model", "synthetic " + host}},
                      seconds, spread, suite, processes, energy);
  }
  // The same on a host fingerprint given whole (its hardware, for a hardware class).
  std::string add_run_on(const json& host, double seconds, double spread,
                         const std::string& suite = "smoke", int processes = 4,
                         double energy = NAN) {
    const int cores = host.value("cores", 4);
    RunRecord run = next_run(suite, "", host, {{"libtorch_version", "1.13.1"}});
    const std::string uuid = run.uuid;
    db_->begin_run(run);
    std::normal_distribution<double> noise(0, spread);
    int sequence = 0;
    for (const auto& [arm, on, factor] : {std::tuple{"off", false, 1.0}, {"on", true, 0.9}}) {
      for (int p = 0; p < processes; ++p) {
        TrialSpec spec;
        spec.experiment = "no_grad.gpt";
        spec.knob = "no_grad";
        spec.arm = arm;
        spec.settings = {{"omp_threads", cores}, {"allocator", "glibc"}, {"no_grad", on}};
        spec.model = {"gpt", "tiny", json::object()};
        spec.batch = 8;
        spec.process_index = p;
        spec.sequence = sequence++;
        TrialResult result;
        result.status = "ok";
        result.evidence = json::object();
        if (std::isfinite(energy))
          result.evidence["gpu_energy_joules_per_item"] = energy * (1 + p * 0.01);
        for (int k = 0; k < 8; ++k)
          result.sample_seconds.push_back(seconds * factor * (1 + (spread > 0 ? noise(rng_) : 0)));
        db_->store_trial(uuid, spec, result);
      }
    }
    db_->finish_run(uuid, "completed", run.started_at);
    return uuid;
  }

  Comparison compare(std::vector<std::string> hosts, Prices prices = {}) {
    Options options;
    options.hosts = std::move(hosts);
    options.prices = std::move(prices);
    return compare_hosts(*db_, options);
  }

  // Runs of `host` whose every sample is `seconds[r]` in run r: each run's median is exact, so
  // the comparison's figures have known answers.
  void add_exact_runs(const std::string& host, const std::vector<double>& seconds) {
    for (double s : seconds) add_run(host, 4, s, 0.0);
  }

  // The message of the std::invalid_argument `f` throws, "" when it throws none.
  template <class F>
  static std::string error_of(F&& f) {
    try {
      f();
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "";
  }

  std::mt19937_64 rng_{11};
};

TEST(HostsPure, DefaultSettingsAreEveryKnobOffGlibcAndOneThreadPerCore) {
  EXPECT_TRUE(
      is_default_settings({{"allocator", "glibc"}, {"omp_threads", 8}, {"no_grad", false}}, 8));
  EXPECT_TRUE(is_default_settings(
      {{"allocator", "glibc"}, {"omp_threads", 8}, {"device", "cuda"}, {"amp", false}}, 8));
  EXPECT_FALSE(is_default_settings({{"allocator", "glibc"}, {"omp_threads", 1}}, 8));
  EXPECT_FALSE(is_default_settings({{"allocator", "jemalloc"}, {"omp_threads", 8}}, 8));
  EXPECT_FALSE(is_default_settings({{"omp_threads", 8}, {"no_grad", true}}, 8));
  EXPECT_FALSE(is_default_settings(json::object(), 8));
  // profiler_off OFF records with the profiler: not what a program that sets nothing runs.
  EXPECT_FALSE(is_default_settings({{"omp_threads", 8}, {"profiler_off", false}}, 8));
  EXPECT_TRUE(is_default_settings({{"omp_threads", 8}, {"profiler_off", true}}, 8));
  EXPECT_FALSE(is_default_settings({{"omp_threads", 8}, {"not_a_knob", false}}, 8));
}

TEST(HostsPure, SamplesForHalfWidthScalesAsOneOverRootN) {
  // [0.97, 1.08] from 10 samples: h = ln(1.08 / 0.97) / 2 = 0.05371; ±2 % is ln 1.02 = 0.01980;
  // 10 x (0.05371 / 0.01980)^2 = 73.56 → 74.
  EXPECT_EQ(stats::samples_for_half_width(0.97, 1.08, 10, std::log(1.02)), 74);
  // Four times the samples halve the width: an interval already twice as wide as the target
  // needs four times the samples.
  const double h = std::log(1.02);
  EXPECT_EQ(stats::samples_for_half_width(std::exp(-2 * h), std::exp(2 * h), 10, h), 40);
  EXPECT_EQ(stats::samples_for_half_width(1.1, 1.1, 10, h), 2);  // no width
  EXPECT_TRUE(std::isnan(stats::samples_for_half_width(NAN, 1.1, 10, h)));
  EXPECT_TRUE(std::isnan(stats::samples_for_half_width(1.2, 1.1, 10, h)));
  EXPECT_THROW(stats::samples_for_half_width(0.9, 1.1, 0, h), std::invalid_argument);
  EXPECT_THROW(stats::samples_for_half_width(0.9, 1.1, 10, 0), std::invalid_argument);
}

TEST_F(HostsTest, TwentyPercentFasterHostIsRankedApartWithAnIntervalCovering1Point2) {
  for (int r = 0; r < 3; ++r) {
    add_run("slow", 4, 0.012, 0.01);
    add_run("fast", 8, 0.010, 0.01);
  }
  const auto c = compare({"slow", "fast"});
  EXPECT_EQ(c.suite, "smoke");
  ASSERT_EQ(c.workloads.size(), 1u);
  const auto& w = c.workloads.front();
  EXPECT_EQ(w.label(), "gpt tiny infer b8");
  EXPECT_EQ(w.experiment, "no_grad.gpt");
  EXPECT_EQ(w.arm, "off");  // the default-settings arm, not the no_grad one
  // items/s = batch / median seconds, per core / cores.
  const auto& fast = w.hosts[1];
  EXPECT_NEAR(fast.items_per_second.value, 8 / 0.010, 8 / 0.010 * 0.01);
  EXPECT_LT(fast.items_per_second.lo, fast.items_per_second.value);
  EXPECT_GT(fast.items_per_second.hi, fast.items_per_second.value);
  EXPECT_DOUBLE_EQ(fast.per_core.value, fast.items_per_second.value / 8);
  EXPECT_DOUBLE_EQ(fast.per_core.lo, fast.items_per_second.lo / 8);
  EXPECT_EQ(fast.runs, 3);
  EXPECT_EQ(fast.samples, 96);
  EXPECT_EQ(fast.processes, 12);
  EXPECT_EQ(fast.spread, kSpreadRuns);
  EXPECT_EQ(fast.energy_per_item.text, "not measured");
  EXPECT_TRUE(fast.items_per_unit.text.empty());  // no prices

  ASSERT_EQ(w.pairs.size(), 1u);
  const auto& p = w.pairs.front();
  EXPECT_EQ(c.hosts[p.faster].hostname, "fast");
  EXPECT_LE(p.ratio.lo, 1.2);
  EXPECT_GE(p.ratio.hi, 1.2);
  EXPECT_GT(p.ratio.lo, 1.0);
  EXPECT_TRUE(p.distinguishable);
  EXPECT_EQ(p.runs_to_separate, p.runs_now);
  EXPECT_EQ(p.runs_now, 3);
  EXPECT_EQ(p.samples_now, 96);
  ASSERT_EQ(w.ranking.size(), 2u);
  EXPECT_EQ(w.ranking[0].text, "1 fast");
  EXPECT_EQ(w.ranking[1].text, "2 slow");
  const std::string table = printed(c, "table");
  EXPECT_NE(table.find("ranking by items/s: 1 fast; 2 slow"), std::string::npos) << table;
  EXPECT_NE(table.find("fast / slow 1.2"), std::string::npos) << table;
  EXPECT_NE(table.find("not measured"), std::string::npos) << table;
  const auto j = json::parse(printed(c, "json"));
  EXPECT_EQ(j["workloads"][0]["pairs"][0]["faster"], "fast");
  EXPECT_EQ(j["workloads"][0]["hosts"][1]["items_per_second"]["value"].get<double>(),
            fast.items_per_second.value);
  EXPECT_TRUE(j["workloads"][0]["hosts"][1]["items_per_currency_unit"]["value"].is_null());
  EXPECT_NE(printed(c, "md").find("| host | items/s |"), std::string::npos);
}

TEST_F(HostsTest, HostsFromOneDistributionShareARank) {
  for (int r = 0; r < 3; ++r) {
    add_run("twin-a", 4, 0.010, 0.02);
    add_run("twin-b", 4, 0.010, 0.02);
    add_run("slow", 4, 0.015, 0.02);
  }
  const auto c = compare({"twin-a", "twin-b", "slow"});
  const auto& w = c.workloads.front();
  ASSERT_EQ(w.pairs.size(), 3u);
  const Pair* twins = nullptr;
  for (const auto& p : w.pairs) {
    if (c.hosts[p.slower].hostname != "slow" && c.hosts[p.faster].hostname != "slow") twins = &p;
  }
  ASSERT_NE(twins, nullptr);
  EXPECT_FALSE(twins->distinguishable) << twins->text;
  EXPECT_LE(twins->ratio.lo, 1.0);
  ASSERT_EQ(w.ranking.size(), 2u);
  EXPECT_EQ(w.ranking[0].rank, 1);
  EXPECT_EQ(w.ranking[0].hosts.size(), 2u);
  EXPECT_EQ(w.ranking[0].text.rfind("1= twin-", 0), 0u) << w.ranking[0].text;
  EXPECT_NE(w.ranking[0].text.find("(not distinguishable: twin-"), std::string::npos)
      << w.ranking[0].text;
  EXPECT_EQ(w.ranking[1].text, "3 slow");  // two hosts are distinguishably faster
  // Separating twins that differ by a hair takes many runs; both figures are finite here.
  EXPECT_GT(twins->runs_to_separate, twins->runs_now);
  EXPECT_TRUE(std::isfinite(twins->runs_for_target));
}

TEST_F(HostsTest, MoreSpreadAsksForMoreRuns) {
  // Run medians spread 1 % and 5 % from run to run.
  add_exact_runs("quiet-a", {0.0100, 0.0101, 0.0099});
  add_exact_runs("quiet-b", {0.0105, 0.0106, 0.0104});
  add_exact_runs("noisy-a", {0.0100, 0.0105, 0.0095});
  add_exact_runs("noisy-b", {0.0105, 0.0110, 0.0100});
  const auto quiet = compare({"quiet-a", "quiet-b"}).workloads.front().pairs.front();
  const auto noisy = compare({"noisy-a", "noisy-b"}).workloads.front().pairs.front();
  EXPECT_GT(noisy.runs_for_target, quiet.runs_for_target);
  EXPECT_GT(noisy.runs_for_target, 2 * quiet.runs_for_target);  // 5x the spread
  EXPECT_GT(noisy.ratio.hi / noisy.ratio.lo, quiet.ratio.hi / quiet.ratio.lo);
  // From the standard error of the log ratio at the normal quantile: n x (1.96 se / ln 1.02)^2.
  const double se = std::log(noisy.ratio.hi / noisy.ratio.lo) / 2 /
                    boost::math::quantile(boost::math::students_t(noisy.df), 0.975);
  const double wanted = 3 * std::pow(1.959964 * se / std::log(1.02), 2);
  EXPECT_GE(noisy.runs_for_target, wanted);
  EXPECT_LT(noisy.runs_for_target, wanted + 1);
  // More samples inside the runs would not narrow it: there is no samples figure.
  EXPECT_TRUE(std::isnan(noisy.samples_for_target));
}

TEST_F(HostsTest, PricesScaleThePerPriceFiguresExactly) {
  for (int r = 0; r < 3; ++r) {
    add_run("slow", 4, 0.012, 0.01);
    add_run("fast", 8, 0.010, 0.01);
  }
  // fast: 1.2x the throughput at 2x the price per hour, so slow gives more items per unit.
  const auto c = compare({"slow", "fast"}, {{"slow", 1.5}, {"fast", 3.0}, {"elsewhere", 1.0}});
  const auto& w = c.workloads.front();
  for (const auto& f : w.hosts) {
    const double price = c.hosts[f.host].price_per_hour;
    EXPECT_DOUBLE_EQ(f.items_per_unit.value, f.items_per_second.value * 3600 / price);
    EXPECT_DOUBLE_EQ(f.items_per_unit.lo, f.items_per_second.lo * 3600 / price);
    EXPECT_DOUBLE_EQ(f.items_per_unit.hi, f.items_per_second.hi * 3600 / price);
    EXPECT_DOUBLE_EQ(f.cost_per_million.value, 1e6 * price / 3600 / f.items_per_second.value);
    EXPECT_DOUBLE_EQ(f.cost_per_million.lo, 1e6 * price / 3600 / f.items_per_second.hi);
  }
  EXPECT_EQ(c.hosts[0].price_per_hour, 1.5);
  ASSERT_EQ(w.price_ranking.size(), 2u);
  EXPECT_EQ(w.price_ranking[0].text, "1 slow");
  EXPECT_EQ(w.ranking[0].text, "1 fast");
  ASSERT_EQ(c.notes.size(), 1u);
  EXPECT_NE(c.notes[0].find("'elsewhere'"), std::string::npos);
  // Doubling one host's price halves its items per unit and doubles its cost, exactly.
  const auto doubled = compare({"slow", "fast"}, {{"slow", 3.0}, {"fast", 3.0}});
  EXPECT_DOUBLE_EQ(doubled.workloads[0].hosts[0].items_per_unit.value,
                   w.hosts[0].items_per_unit.value / 2);
  EXPECT_DOUBLE_EQ(doubled.workloads[0].hosts[0].cost_per_million.value,
                   w.hosts[0].cost_per_million.value * 2);
  EXPECT_EQ(doubled.workloads[0].price_ranking[0].text, "1 fast");
  EXPECT_NE(printed(c, "table").find("ranking by items per currency unit: 1 slow"),
            std::string::npos);
}

TEST_F(HostsTest, EnergyIsShownWhereItWasMeasured) {
  add_run("gpu-a", 4, 0.010, 0.01, "smoke", 4, 0.5);
  add_run("cpu-b", 4, 0.010, 0.01);
  const auto c = compare({"gpu-a", "cpu-b"});
  const auto& f = c.workloads[0].hosts;
  EXPECT_NEAR(f[0].energy_per_item.value, 0.5 * 1.015, 1e-9);  // median of 0.5 x 1.00 … 1.03
  EXPECT_GE(f[0].energy_per_item.hi, f[0].energy_per_item.value);
  EXPECT_EQ(f[1].energy_per_item.text, "not measured");
}

TEST_F(HostsTest, EveryRunOfTheNewestCommonSuite) {
  add_run("a", 4, 0.020, 0.01, "smoke");
  add_run("b", 4, 0.010, 0.01, "smoke");
  add_run("a", 4, 0.010, 0.01, "full");
  const std::string latest = add_run("a", 4, 0.012, 0.01, "smoke");
  const auto c = compare({"a", "b"});
  EXPECT_EQ(c.suite, "smoke");
  EXPECT_EQ(c.hosts[0].run_uuid, latest);
  EXPECT_EQ(c.hosts[0].runs.size(), 2u);  // both of its smoke runs, not the full one
  EXPECT_EQ(c.workloads[0].hosts[0].runs, 2);
  // A host id prefix names a host too.
  const auto by_id = compare({c.hosts[0].host_id.substr(0, 6), "b"});
  EXPECT_EQ(by_id.hosts[0].hostname, "a");
}

TEST_F(HostsTest, BadInputGetsOneClearError) {
  add_run("a", 4, 0.010, 0.01, "smoke");
  add_run("b", 4, 0.010, 0.01, "full");
  add_run("c", 4, 0.010, 0.01, "smoke");
  EXPECT_NE(error_of([&] {
              compare({"a", "nosuch"});
            }).find("no finished run on host 'nosuch'; hosts with runs: a, b, c"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              compare({"a"});
            }).find("--hosts needs at least 2 hosts to compare, got 1; hosts with runs: a, b, c"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              compare({"a", "b"});
            }).find("have no suite in common"),
            std::string::npos);
  EXPECT_NE(error_of([&] { compare({"a", "a"}); }).find("named twice"), std::string::npos);
  Options options;
  options.hosts = {"a", "c"};
  options.suite = "full";
  EXPECT_NE(error_of([&] {
              compare_hosts(*db_, options);
            }).find("host 'a' has no finished run of suite 'full'"),
            std::string::npos);

  const auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream((dir_ / name).string()) << text;
    return (dir_ / name).string();
  };
  EXPECT_NE(error_of([&] { load_prices(write("bad.json", "{oops")); }).find("not valid JSON"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              load_prices(write("list.json", "[1, 2]"));
            }).find("expected a JSON object of hostname to price per hour"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              load_prices(write("neg.json", R"({"a": -3})"));
            }).find("the price of 'a' is -3; prices are positive numbers"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              load_prices(write("text.json", R"({"a": "cheap"})"));
            }).find("prices are positive numbers"),
            std::string::npos);
  EXPECT_NE(error_of([&] { load_prices((dir_ / "missing.json").string()); }).find("cannot read"),
            std::string::npos);
  EXPECT_EQ(load_prices(write("ok.json", R"({"a": 1.5, "b": 2})")), (Prices{{"a", 1.5}, {"b", 2}}));
}

TEST_F(HostsTest, RunsWithoutDefaultSettingsCannotBeCompared) {
  // A run whose every arm switched a knob on has nothing to compare hosts on.
  for (const std::string host : {"x", "y"}) {
    RunRecord run = next_run("odd", "", {{"hostname", host}, {"cores", 4}}, json::object());
    const std::string uuid = run.uuid;
    db_->begin_run(run);
    TrialSpec spec;
    spec.experiment = "jemalloc.gpt";
    spec.knob = "allocator";
    spec.arm = "on";
    spec.settings = {{"omp_threads", 4}, {"allocator", "jemalloc"}};
    spec.model = {"gpt", "tiny", json::object()};
    TrialResult result;
    result.status = "ok";
    result.sample_seconds = {0.01, 0.011, 0.012};
    db_->store_trial(uuid, spec, result);
    db_->finish_run(uuid, "completed", run.started_at);
  }
  EXPECT_NE(error_of([&] {
              compare({"x", "y"});
            }).find("ran with default settings"),
            std::string::npos);
}

// The mean and sample standard deviation of the logs of `values`.
std::pair<double, double> log_mean_sd(const std::vector<double>& values) {
  double mean = 0, ss = 0;
  for (double v : values) mean += std::log(v) / double(values.size());
  for (double v : values) ss += (std::log(v) - mean) * (std::log(v) - mean);
  return {mean, std::sqrt(ss / double(values.size() - 1))};
}

double t975(double df) { return boost::math::quantile(boost::math::students_t(df), 0.975); }

// Each host's figure is every run's, not its latest's: the geometric mean of the run medians
// with a t interval from their spread, and the ratio Welch's t on the log run medians.
TEST_F(HostsTest, SeveralRunsPerHostGiveWelchsIntervalOnTheRunMedians) {
  const std::vector<double> fast{0.0100, 0.0103, 0.0097, 0.0101};
  const std::vector<double> slow{0.0120, 0.0126, 0.0117, 0.0121, 0.0123};
  add_exact_runs("fast", fast);
  add_exact_runs("slow", slow);
  const auto c = compare({"slow", "fast"});
  const auto& w = c.workloads.front();
  const auto [mf, sf] = log_mean_sd(fast);
  const auto [ms, ss] = log_mean_sd(slow);
  // The fast host's items/s: batch / geometric mean, interval from t with 3 degrees of freedom.
  const auto& f = w.hosts[1];
  EXPECT_NEAR(f.items_per_second.value, 8 / std::exp(mf), 1e-9);
  EXPECT_NEAR(f.items_per_second.lo, 8 / std::exp(mf + t975(3) * sf / 2), 1e-9);
  EXPECT_NEAR(f.items_per_second.hi, 8 / std::exp(mf - t975(3) * sf / 2), 1e-9);
  // The ratio: Welch–Satterthwaite degrees of freedom on the two hosts' log run medians.
  const double va = sf * sf / 4, vb = ss * ss / 5;
  const double df = (va + vb) * (va + vb) / (va * va / 3 + vb * vb / 4);
  const double half = t975(df) * std::sqrt(va + vb);
  const auto& p = w.pairs.front();
  EXPECT_EQ(c.hosts[p.faster].hostname, "fast");
  EXPECT_NEAR(p.ratio.ratio, std::exp(ms - mf), 1e-9);
  EXPECT_NEAR(p.ratio.lo, std::exp(ms - mf - half), 1e-9);
  EXPECT_NEAR(p.ratio.hi, std::exp(ms - mf + half), 1e-9);
  EXPECT_LE(p.ratio.lo, 1.2);  // the true ratio, 0.012 / 0.010
  EXPECT_GE(p.ratio.hi, 1.2);
  EXPECT_TRUE(p.distinguishable);
  EXPECT_EQ(w.ranking[0].text, "1 fast");
  const auto j = json::parse(printed(c, "json"));
  EXPECT_EQ(j["workloads"][0]["pairs"][0]["spread"], "runs");
  EXPECT_EQ(j["workloads"][0]["hosts"][1]["runs"], 4);
  EXPECT_EQ(j["workloads"][0]["hosts"][1]["spread"], "runs");
  EXPECT_EQ(j["hosts"][0]["runs"].size(), 5u);
  EXPECT_NEAR(j["workloads"][0]["pairs"][0]["degrees_of_freedom"].get<double>(), df, 1e-9);
  EXPECT_NE(printed(c, "table").find("run-to-run spread from the runs"), std::string::npos);
}

// Two instances of one type whose runs overlap are not told apart, however many samples each
// run holds.
TEST_F(HostsTest, TwoInstancesOfOneTypeWhoseRunsOverlapShareARank) {
  add_exact_runs("vm-a", {0.0100, 0.0108, 0.0095});
  add_exact_runs("vm-b", {0.0104, 0.0097, 0.0110});
  const auto c = compare({"vm-a", "vm-b"});
  const auto& p = c.workloads.front().pairs.front();
  EXPECT_FALSE(p.distinguishable) << p.line;
  EXPECT_LT(p.ratio.lo, 1);
  EXPECT_GT(p.ratio.hi, 1);
  EXPECT_EQ(c.workloads.front().ranking.size(), 1u);
  EXPECT_EQ(c.workloads.front().ranking[0].text.rfind("1= ", 0), 0u);
}

// One run per host and no floor: the spread from run to run is unknown, so the pair is never
// distinguishable, the hosts share a rank, and the words say why.
TEST_F(HostsTest, OneRunEachWithoutAFloorIsNotDistinguishableAndSharesARank) {
  add_run("slow", 4, 0.012, 0.01);
  add_run("fast", 8, 0.010, 0.01);
  const auto c = compare({"slow", "fast"});
  const auto& w = c.workloads.front();
  const auto& p = w.pairs.front();
  EXPECT_EQ(c.hosts[p.faster].hostname, "fast");
  EXPECT_NEAR(p.ratio.ratio, 1.2, 0.02);
  EXPECT_FALSE(p.distinguishable);
  EXPECT_TRUE(std::isnan(p.ratio.lo));
  const std::string unknown =
      "run-to-run spread unknown (one run: run it again on another day or instance, or "
      "calibrate)";
  EXPECT_NE(p.line.find(unknown), std::string::npos) << p.line;
  ASSERT_EQ(w.ranking.size(), 1u);
  EXPECT_EQ(w.ranking[0].text.rfind("1= fast, slow", 0), 0u) << w.ranking[0].text;
  EXPECT_TRUE(std::isnan(w.hosts[1].items_per_second.lo));
  EXPECT_NE(w.hosts[1].items_per_second.text.find("[no interval]"), std::string::npos);
  const auto j = json::parse(printed(c, "json"));
  EXPECT_EQ(j["workloads"][0]["pairs"][0]["spread"], "unknown");
  EXPECT_EQ(j["workloads"][0]["hosts"][0]["spread"], "unknown");
  EXPECT_FALSE(j["workloads"][0]["pairs"][0]["distinguishable"].get<bool>());
  EXPECT_NE(printed(c, "table").find(unknown), std::string::npos);
}

// One run per host with the between-run floor `calibrate` stored for each: the floor is the
// spread, the floor's A/A runs its degrees of freedom.
TEST_F(HostsTest, OneRunWithACalibratedFloorUsesTheFloor) {
  const std::string slow = add_run("slow", 4, 0.012, 0.0);
  const std::string fast = add_run("fast", 4, 0.010, 0.0);
  add_run("other", 4, 0.010, 0.0);  // no floor
  for (const auto& run : {slow, fast}) {
    storage::Database::NoiseFloor floor;
    floor.experiment = "no_grad.gpt";
    floor.arm = "off";
    floor.run_uuids = {run, run, run, run, run};  // five A/A runs: 4 degrees of freedom
    floor.sigma_log = 0.02;
    floor.false_alarm = 0.01;
    floor.power = 0.8;
    floor.baseline_runs = 5;
    floor.min_detectable = 0.05;
    floor.calibrated_at = "2026-01-09T00:00:00Z";
    db_->store_noise_floors(run, {floor});
  }
  const auto c = compare({"slow", "fast"});
  const auto& p = c.workloads.front().pairs.front();
  // SE = sqrt(2 x 0.02^2); Welch df = (2v)^2 / (2 v^2 / 4) = 8.
  const double half = t975(8) * std::sqrt(2 * 0.02 * 0.02);
  EXPECT_NEAR(p.ratio.ratio, 1.2, 1e-9);
  EXPECT_NEAR(p.ratio.lo, 1.2 * std::exp(-half), 1e-9);
  EXPECT_NEAR(p.ratio.hi, 1.2 * std::exp(half), 1e-9);
  EXPECT_TRUE(p.distinguishable);
  const auto j = json::parse(printed(c, "json"));
  EXPECT_EQ(j["workloads"][0]["pairs"][0]["spread"], "calibrated floor");
  EXPECT_EQ(j["workloads"][0]["hosts"][0]["spread"], "calibrated floor");
  EXPECT_NE(p.line.find("run-to-run spread from a calibrated floor"), std::string::npos) << p.line;
  // A host without a floor next to one with: the pair's spread is unknown.
  const auto mixed = compare({"fast", "other"});
  EXPECT_FALSE(mixed.workloads.front().pairs.front().distinguishable);
  EXPECT_EQ(json::parse(printed(mixed, "json"))["workloads"][0]["pairs"][0]["spread"], "unknown");
}

// One hostname on two hardware classes: the default host list and the rows name each with its
// class, and HOSTNAME@PREFIX picks one.
TEST_F(HostsTest, OneHostnameOnTwoClassesIsNamedByItsClassAndPickedByPrefix) {
  const json small = {{"hostname", "vm"},
                      {"cores", 4},
                      {"cpu_model", "synthetic"},
                      {"hardware", {{"cpu", {{"model", "Type S"}}}}}};
  json large = small;
  large["hardware"]["cpu"]["model"] = "Type L";
  for (double s : {0.0120, 0.0123, 0.0118}) add_run_on(small, s, 0.0);
  for (double s : {0.0100, 0.0102}) add_run_on(large, s, 0.0);
  const std::string small8 = hardware::class_id(small).substr(0, 8);
  const std::string large8 = hardware::class_id(large).substr(0, 8);
  EXPECT_EQ(hosts_with_runs(*db_), (std::vector<std::string>{"vm@" + small8, "vm@" + large8}));
  const auto c = compare(hosts_with_runs(*db_));
  const auto j = json::parse(printed(c, "json"));
  EXPECT_EQ(j["hosts"][0]["name"], "vm (" + small8 + ")");
  EXPECT_EQ(j["hosts"][1]["name"], "vm (" + large8 + ")");
  EXPECT_EQ(j["hosts"][0]["runs"].size(), 3u);
  EXPECT_EQ(j["hosts"][1]["runs"].size(), 2u);
  EXPECT_EQ(j["workloads"][0]["pairs"][0]["faster"], "vm (" + large8 + ")");
  const std::string table = printed(c, "table");
  EXPECT_NE(table.find("vm (" + large8 + ") / vm (" + small8 + ") 1.1"), std::string::npos)
      << table;
  // A prefix of the class picks that machine's runs; the bare hostname takes its latest run's
  // machine and says which others it has.
  const auto picked = compare({"vm@" + small8.substr(0, 6), "vm@" + large8});
  EXPECT_EQ(json::parse(printed(picked, "json"))["hosts"][0]["runs"].size(), 3u);
  add_run("box", 4, 0.011, 0.0);
  const auto bare = compare({"vm", "box"});
  EXPECT_EQ(json::parse(printed(bare, "json"))["hosts"][0]["runs"].size(), 2u);
  ASSERT_FALSE(bare.notes.empty());
  EXPECT_NE(bare.notes[0].find("name another as vm@" + small8), std::string::npos) << bare.notes[0];
}

}  // namespace
}  // namespace tunebench::hosts

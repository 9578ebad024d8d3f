// tunebench check, calibrate and compare on a database of synthetic runs: the baseline window,
// calibrated floors, stored findings, step changes, and two hosts side by side.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <random>

#include "analysis/check.h"
#include "analysis/compare_runs.h"
#include "analysis/effects.h"
#include "analysis/reporter.h"
#include "core/hardware.h"
#include "tests/synthetic_db.h"

namespace tunebench::check {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// A check report, or two runs compared, as the reporter of `format` prints it.
std::string printed(const Report& report, const std::string& format) {
  return reporters::reporter(format, reporters::Output::check).check(report);
}
std::string printed(const Comparison& comparison, const std::string& format) {
  return reporters::reporter(format, reporters::Output::comparison).comparison(comparison);
}

class CheckTest : public test_db::SyntheticDbTest {
 protected:
  // One finished run of suite "nightly": two benchmarks, 2 processes x 5 samples each, with
  // seconds = base x shift x phase x (1 + 1 % noise). `phase` is how fast the host was that
  // night (this VM: 1 or about 2); with `reference`, each trial also times the reference kernel,
  // 10 ms x phase x (1 + 0.5 % noise), four times.
  std::string add_run(const std::string& host, double shift_gpt, double shift_resnet = 1.0,
                      double phase = 1.0, bool reference = false) {
    json fingerprint = {{"hostname", host}, {"cores", host == "big" ? 64 : 2}};
    if (!hardware_.is_null()) fingerprint["hardware"] = hardware_;
    RunRecord run = next_run("nightly", "nightly", fingerprint, software_);
    const std::string uuid = run.uuid;
    db_->begin_run(run);
    std::normal_distribution<double> noise(0, 0.01);
    int sequence = 0;
    for (const auto& [experiment, base, shift] :
         {std::tuple{"gpt.infer", 0.010, shift_gpt},
          std::tuple{"resnet.infer", 0.020, shift_resnet}}) {
      for (int p = 0; p < 2; ++p) {
        TrialSpec spec;
        spec.experiment = experiment;
        spec.knob = "aa";
        spec.arm = "off";
        spec.settings = json::object();
        spec.model = {"gpt", "tiny", json::object()};
        spec.process_index = p;
        spec.sequence = sequence++;
        TrialResult result;
        result.status = "ok";
        result.evidence = json::object();
        for (int k = 0; k < 5; ++k)
          result.sample_seconds.push_back(base * shift * phase * (1 + noise(rng_)));
        std::normal_distribution<double> kernel_noise(0, 0.005);
        for (int k = 0; reference && k < 4; ++k)
          result.reference_seconds.push_back(0.01 * phase * (1 + kernel_noise(rng_)));
        db_->store_trial(uuid, spec, result);
      }
    }
    db_->finish_run(uuid, "completed", run.started_at);
    return uuid;
  }

  json software_ = {{"libtorch_version", "1.13.1"}, {"git_revision", "a1"}};
  json hardware_ = nullptr;  // the fingerprint's "hardware"; null: not recorded (older runs)
  std::mt19937_64 rng_{5};
};

json epyc(const json& flags) {
  return {{"cpu",
           {{"vendor", "AuthenticAMD"},
            {"family", 25},
            {"model", 17},
            {"stepping", 1},
            {"model_name", "AMD EPYC"},
            {"flags", flags}}},
          {"cores", 2},
          {"memory_bytes", int64_t(24) << 30}};
}

// A cloud VM keeps its name and moves to another CPU: the history restarts with a message that
// names both, whatever tonight's timings (here 30 % slower: not a regression, not silence); the
// next night compares with the new hardware's runs only. Runs stored before the hardware was
// recorded are another machine too, said as such.
TEST_F(CheckTest, AnotherCpuUnderTheSameHostnameRestartsTheHistoryAndSaysSo) {
  for (int i = 0; i < 3; ++i) add_run("vm", 1.0);  // hardware not recorded
  hardware_ = epyc({"avx", "avx2"});
  const std::string first = add_run("vm", 1.0);
  Options options;
  auto report = check(*db_, options);
  ASSERT_TRUE(report.machine_changed);
  EXPECT_NE(report.machine_changed->text().find("was hardware not recorded, now AMD EPYC"),
            std::string::npos)
      << report.machine_changed->text();
  add_run("vm", 1.0);
  report = check(*db_, options);
  EXPECT_FALSE(report.machine_changed);
  EXPECT_EQ(report.baseline_uuids, std::vector<std::string>{first});

  hardware_ = epyc({"avx", "avx2", "avx512f", "avx512_bf16"});
  const std::string moved = add_run("vm", 1.3);
  report = check(*db_, options);
  ASSERT_TRUE(report.machine_changed);
  EXPECT_FALSE(report.regressed());
  EXPECT_TRUE(report.benchmarks.empty());
  const std::string text = printed(report, "table");
  EXPECT_NE(text.find("the machine changed (was AMD EPYC (AuthenticAMD family 25 model 17 "
                      "stepping 1), 2 cores, 24 GiB, avx avx2, now AMD EPYC (AuthenticAMD "
                      "family 25 model 17 stepping 1), 2 cores, 24 GiB, avx avx2 avx512f "
                      "avx512_bf16): history restarts"),
            std::string::npos)
      << text;
  EXPECT_EQ(json::parse(printed(report, "json"))["machine_changed"]["now"],
            hardware::describe({{"hardware", hardware_}}));
  EXPECT_NE(printed(report, "junit").find("<skipped message=\"the machine changed"),
            std::string::npos);
  // A baseline given by run id is the user's choice: compared, no restart.
  options.baseline = "run:" + first;
  EXPECT_FALSE(check(*db_, options).machine_changed);

  options.baseline = "last:5";
  add_run("vm", 1.3);
  report = check(*db_, options);
  EXPECT_FALSE(report.machine_changed);
  EXPECT_EQ(report.baseline_uuids, std::vector<std::string>{moved});
  EXPECT_FALSE(report.regressed());
}

TEST_F(CheckTest, CalibratedCheckPassesAaAndFlagsASlowdownAndAStep) {
  std::vector<std::string> aa;
  for (int i = 0; i < 6; ++i) aa.push_back(add_run("small", 1.0));
  const auto floors = calibrate(*db_, aa, {}, "2026-01-07T00:00:00Z");
  ASSERT_EQ(floors.size(), 2u);
  for (const auto& f : floors) {
    EXPECT_GT(f.sigma_log, 0);
    EXPECT_LT(f.sigma_log, 0.05);  // 1 % sample noise, medians of 10 samples
    EXPECT_GT(f.min_detectable, 0);
  }
  db_->store_noise_floors(aa.back(), floors);

  add_run("small", 1.0);
  Options options;
  auto report = check(*db_, options);
  EXPECT_TRUE(report.calibrated);
  EXPECT_FALSE(report.regressed());
  EXPECT_DOUBLE_EQ(report.per_benchmark_false_alarm, 0.005);  // 1 % over 2 benchmarks

  // GPT 30 % slower: a regression with its interval above 1; ResNet unchanged.
  add_run("small", 1.3);
  report = check(*db_, options);
  ASSERT_TRUE(report.regressed());
  for (const auto& b : report.benchmarks) {
    EXPECT_EQ(b.judgement.status, b.experiment == "gpt.infer" ? "regression" : "unchanged");
    EXPECT_TRUE(std::isfinite(b.min_detectable));
  }
  EXPECT_EQ(report.findings().front().kind, "regression");
  EXPECT_GT(report.findings().front().lo, 1.0);

  // Four more slow nights: the step in GPT's history is found, starting at the first slow run
  // (with 5 points after a step in 12, a permutation p-value can reach 2 / C(12, 5) = 0.25 %).
  add_run("small", 1.3);
  add_run("small", 1.3);
  add_run("small", 1.3);
  const std::string third = add_run("small", 1.3);
  options.baseline = "last:3";
  report = check(*db_, options);
  ASSERT_EQ(report.steps.size(), 1u) << printed(report, "table");
  EXPECT_EQ(report.steps[0].experiment, "gpt.infer");
  EXPECT_NEAR(report.steps[0].step.ratio, 1.3, 0.05);
  EXPECT_EQ(report.steps[0].first_run, db_->run_uuids()[7]);

  // Calibration refuses runs of another host, and too few runs.
  const std::string other = add_run("big", 1.0);
  EXPECT_THROW(calibrate(*db_, {aa[0], aa[1], other}, {}, "x"), std::invalid_argument);
  EXPECT_THROW(calibrate(*db_, {aa[0], aa[1]}, {}, "x"), std::invalid_argument);
  (void)third;
}

// Without a calibrated floor and without stage 2 a slowdown cannot be told from a slow night:
// the check says "unknown" (exit 3), never "regression" (exit 1), and gives the commands that
// settle it. The drift the baseline window shows between its runs is the floor then: a night 12 %
// slower on a history that moves by ±8 % from run to run is within it, not even unknown.
TEST_F(CheckTest, WithoutACalibratedFloorOrStageTwoASlowdownIsUnknownAndItsDriftCounts) {
  for (int i = 0; i < 5; ++i) add_run("quiet", 1.0);
  add_run("quiet", 1.3);  // 30 % slower on a history without drift
  Options options;
  auto report = check(*db_, options);
  EXPECT_FALSE(report.calibrated);
  EXPECT_FALSE(report.regressed());
  EXPECT_TRUE(report.unknown());
  EXPECT_TRUE(report.unconfirmed());
  for (const auto& b : report.benchmarks) {
    const bool slower = b.experiment == "gpt.infer";  // ResNet unchanged
    EXPECT_EQ(b.judgement.status, slower ? "regression" : "unchanged") << b.experiment;
    EXPECT_EQ(b.status, slower ? "unknown" : "unchanged") << b.experiment;
    EXPECT_EQ(b.unconfirmed, slower);
    EXPECT_EQ(b.flagged, slower);
  }
  const std::string text = printed(report, "table");
  EXPECT_NE(text.find("UNKNOWN: slower than the baseline"), std::string::npos) << text;
  EXPECT_NE(text.find("tunebench calibrate --suite SUITE_FILE --runs 5` (A/A runs of suite "
                      "'nightly'"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("--confirm-with LAST_GOOD_BUILD"), std::string::npos) << text;
  ASSERT_EQ(report.findings().size(), 1u);  // stored as unconfirmed, not as a regression
  EXPECT_EQ(report.findings().front().kind, "unconfirmed");
  const json out = json::parse(printed(report, "json"));
  EXPECT_FALSE(out.at("regressed").get<bool>());
  EXPECT_TRUE(out.at("unconfirmed").get<bool>());
  EXPECT_NE(printed(report, "junit")
                .find("<error message=\"slower than the baseline, "
                      "unconfirmed"),
            std::string::npos)
      << printed(report, "junit");
  const std::string glance = reporters::glance_reporter(false).check(report);
  EXPECT_NE(glance.find("unconfirmed: no calibrated noise floor"), std::string::npos) << glance;

  // A calibrated floor decides alone: the same slowdown is a regression.
  std::vector<std::string> aa;
  for (int i = 0; i < 5; ++i) aa.push_back(add_run("calibrated", 1.0));
  db_->store_noise_floors(aa.back(), calibrate(*db_, aa, {}, "2026-01-07T00:00:00Z"));
  add_run("calibrated", 1.3);
  report = check(*db_, options);
  EXPECT_TRUE(report.regressed()) << printed(report, "table");
  EXPECT_FALSE(report.unconfirmed());

  // A drifting history: its own spread is the floor the night is set against.
  for (double phase : {1.0, 1.1, 0.92, 1.08, 0.95}) add_run("drifting", 1.0, 1.0, phase);
  add_run("drifting", 1.12);
  report = check(*db_, options);
  EXPECT_FALSE(report.unknown()) << printed(report, "table");
  for (const auto& b : report.benchmarks) {
    if (b.experiment != "gpt.infer") continue;
    EXPECT_EQ(b.basis.source, "baseline window");
    EXPECT_EQ(b.judgement.status, "unchanged") << printed(report, "table");
    EXPECT_TRUE(std::isfinite(b.judgement.critical));
    EXPECT_GT(b.judgement.critical, 1.12);
  }
}

// A nightly's history and floors span tunebench's own commits (what the check looks for) but
// not another LibTorch (a new history, unless --across-software).
TEST_F(CheckTest, HistoryAndFloorsSpanHarnessCommitsButNotAnotherLibTorch) {
  std::vector<std::string> aa;
  for (int i = 0; i < 6; ++i) aa.push_back(add_run("small", 1.0));
  db_->store_noise_floors(aa.back(), calibrate(*db_, aa, {}, "2026-01-07T00:00:00Z"));

  software_["git_revision"] = "b2";  // tonight's commit
  add_run("small", 1.3);
  Options options;
  auto report = check(*db_, options);
  EXPECT_EQ(report.baseline_uuids.size(), 5u);
  EXPECT_TRUE(report.calibrated);
  EXPECT_TRUE(report.regressed());
  // A calibration may mix commits; a later one is the one used.
  aa.push_back(add_run("small", 1.0));
  const auto again = calibrate(*db_, {aa[4], aa[5], aa[6]}, {}, "2026-01-09T00:00:00Z");
  db_->store_noise_floors(aa.back(), again);
  const auto floors = db_->noise_floors(aa.back());
  ASSERT_EQ(floors.size(), 2u);
  EXPECT_EQ(floors[0].calibrated_at, "2026-01-09T00:00:00Z");
  EXPECT_EQ(floors[1].calibrated_at, "2026-01-09T00:00:00Z");

  software_["libtorch_version"] = "2.15.0";  // another LibTorch: no history, no floors
  const std::string upgraded = add_run("small", 1.0);
  EXPECT_THROW(check(*db_, options), std::invalid_argument);
  options.across_software = true;
  report = check(*db_, options);
  EXPECT_FALSE(report.calibrated);
  EXPECT_TRUE(db_->noise_floors(upgraded).empty());
  EXPECT_THROW(calibrate(*db_, {aa[5], aa[6], upgraded}, {}, "x"), std::invalid_argument);
}

TEST_F(CheckTest, CompareHostsUsesEachHostsRunsOfACommonSuite) {
  const std::string small_first = add_run("small", 1.0);
  const std::string small_latest = add_run("small", 1.0);
  const std::string big = add_run("big", 0.5, 0.25);  // twice and four times as fast
  const auto runs = runs_of_hosts(*db_, {"small", "big"}, "");
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].runs, (std::vector<std::string>{small_first, small_latest}));
  EXPECT_EQ(runs[1].runs, std::vector<std::string>{big});
  EXPECT_TRUE(runs[0].note.empty());
  const auto c = compare(*db_, runs[0].runs.back(), runs[1].runs.back());
  EXPECT_EQ(c.host_a, "small");
  EXPECT_EQ(c.host_b, "big");
  ASSERT_EQ(c.rows.size(), 2u);
  for (const auto& row : c.rows) {
    const double expected = row.experiment == "gpt.infer" ? 0.5 : 0.25;
    EXPECT_NEAR(row.effect.ratio, expected, 0.02);
    EXPECT_LT(row.effect.hi, 1.0);
    EXPECT_EQ(row.effect.verdict, stats::Verdict::helps);
  }
  EXPECT_NE(printed(c, "table").find("x [0.4"), std::string::npos) << printed(c, "table");
  EXPECT_THROW(runs_of_hosts(*db_, {"small", "tiny"}, ""), std::invalid_argument);
  EXPECT_THROW(runs_of_hosts(*db_, {"small", "big"}, "cpu-full"), std::invalid_argument);
}

// A recorded drifting history: nights in the host's fast or ~2x slower phase. In
// absolute time the night-to-night noise is the phase's; relative to the reference kernel timed
// in the same processes it is the samples'. Calibration measures both, check uses the quieter,
// and a 5 % slowdown that absolute time cannot see is caught; an unchanged night is not.
TEST_F(CheckTest, ReferenceRelativeHistoryIsUsedWhereItIsQuieterAndCatchesFivePercent) {
  const std::vector<double> phases{1.0, 1.9, 1.0, 2.1, 1.0, 1.8, 1.0, 2.0};
  std::vector<std::string> aa;
  for (double phase : phases) aa.push_back(add_run("small", 1.0, 1.0, phase, true));
  const auto floors = calibrate(*db_, aa, {}, "2026-01-09T00:00:00Z");
  ASSERT_EQ(floors.size(), 2u);
  for (const auto& f : floors) {
    EXPECT_GT(f.sigma_log, 0.2);  // the phases: ln 2 apart
    ASSERT_TRUE(std::isfinite(f.sigma_log_relative));
    EXPECT_LT(f.sigma_log_relative, 0.02);
    EXPECT_LT(f.min_detectable, 0.05);  // on the quieter history
  }
  db_->store_noise_floors(aa.back(), floors);
  const auto stored = db_->noise_floors(aa.back());
  ASSERT_EQ(stored.size(), 2u);
  EXPECT_DOUBLE_EQ(stored[0].sigma_log_relative, floors[0].sigma_log_relative);

  // GPT 5 % slower on a slow-phase night: flagged for stage 2 on the relative history, at its
  // size. (Stage 1's strict test also wants the ratio beyond the threshold, a coin toss at
  // exactly 5 %: stage 2 decides.) 10 % slower: a regression by stage 1 alone.
  add_run("small", 1.05, 1.0, 1.95, true);
  Options options;
  options.baseline = "last:5";
  auto report = check(*db_, options);
  for (const auto& b : report.benchmarks) {
    EXPECT_EQ(b.basis.name, "relative") << b.experiment;
    EXPECT_EQ(b.basis.source, "calibration");
    EXPECT_LT(b.basis.sigma_log, b.basis.other_sigma_log);
    if (b.experiment == "gpt.infer") {
      EXPECT_TRUE(b.flagged) << printed(report, "table");
      EXPECT_NEAR(b.judgement.effect.ratio, 1.05, 0.015);
    }
  }
  EXPECT_NE(printed(report, "table").find("relative ("), std::string::npos);
  add_run("small", 1.10, 1.0, 1.0, true);
  report = check(*db_, options);
  for (const auto& b : report.benchmarks) {
    EXPECT_EQ(b.status, b.experiment == "gpt.infer" ? "regression" : "unchanged")
        << printed(report, "table");
  }

  // An unchanged night in the fast phase after it: nothing.
  add_run("small", 1.0, 1.0, 1.0, true);
  report = check(*db_, options);
  EXPECT_FALSE(report.regressed()) << printed(report, "table");

  // The same history without reference times: only absolute time is there, and 5 % drowns in
  // the phases: not even flagged.
  std::vector<std::string> bare;
  for (double phase : phases) bare.push_back(add_run("bare", 1.0, 1.0, phase, false));
  db_->store_noise_floors(bare.back(), calibrate(*db_, bare, {}, "2026-01-20T00:00:00Z"));
  add_run("bare", 1.05, 1.0, 1.95, false);
  report = check(*db_, options);
  for (const auto& b : report.benchmarks) {
    EXPECT_EQ(b.basis.name, "absolute");
    EXPECT_FALSE(std::isfinite(b.basis.other_sigma_log));
    EXPECT_NE(b.status, "regression");
    if (b.experiment == "gpt.infer") {
      EXPECT_FALSE(b.flagged) << printed(report, "table");
    }
  }
  // --confirm-all sends every benchmark to stage 2, and the report still says what stage 1 made
  // of each on its own (the studies count stage 1's flags from it).
  options.flag_all = true;
  report = check(*db_, options);
  const json out = json::parse(printed(report, "json"));
  ASSERT_EQ(out.at("benchmarks").size(), report.benchmarks.size());
  for (size_t i = 0; i < report.benchmarks.size(); ++i) {
    const auto& b = report.benchmarks[i];
    EXPECT_TRUE(b.flagged) << b.experiment;
    if (b.experiment == "gpt.infer") {
      EXPECT_FALSE(b.stage1_flagged) << printed(report, "table");
    }
    EXPECT_EQ(out["benchmarks"][i].at("stage1_flagged").get<bool>(), b.stage1_flagged);
    EXPECT_TRUE(out["benchmarks"][i].at("flagged").get<bool>());
  }
}

}  // namespace
}  // namespace tunebench::check

namespace tunebench::analysis {
namespace {

// A run report of controls only, each with a time effect (ratio, lo, hi).
RunReport controls(std::vector<std::tuple<std::string, double, double, double, double>> xs) {
  RunReport report;
  for (const auto& [knob, slowdown, ratio, lo, hi] : xs) {
    ExperimentReport x;
    x.name = knob == "aa" ? "aa.no_grad" : "slow3.no_grad";
    x.knob = knob;
    x.slowdown = slowdown;
    x.effects.push_back({"time", "on vs off",
                         stats::Effect{ratio, lo, hi, 0.95, 0, stats::Verdict::equivalent, ""}});
    report.experiments.push_back(std::move(x));
  }
  return report;
}

TEST(Certify, ARunIsCertifiedOnlyWhenItsAANarrowAndCoveringOneAndItsPositiveControlDetected) {
  // A/A 1.00 [0.99, 1.01] (±1.0 %), +3 % control [1.01, 1.05]: certified.
  const std::string good = certify(controls({{"no_grad_aa", 0, 1, 1, 1}}));
  EXPECT_EQ(good, "") << "a run without controls says nothing";
  const std::string both =
      certify(controls({{"aa", 0, 1.0, 0.99, 1.0101}, {"slow", 0.03, 1.03, 1.01, 1.05}}));
  EXPECT_EQ(both.rfind("certified: A/A aa.no_grad 1.000x [0.990, 1.010] ±1.0%", 0), 0u) << both;
  // An A/A wider than ±2 %: 1.00 [0.97, 1.03] is ±3.0 %.
  const std::string wide = certify(controls({{"aa", 0, 1.0, 0.97, 1.03}}));
  EXPECT_EQ(wide.rfind("not certified: A/A aa.no_grad", 0), 0u) << wide;
  EXPECT_NE(wide.find("wider than ±2%"), std::string::npos) << wide;
  // An A/A that misses 1, however narrow.
  const std::string misses = certify(controls({{"aa", 0, 1.02, 1.012, 1.028}}));
  EXPECT_NE(misses.find("shows an effect: the host was noisy"), std::string::npos) << misses;
  // A positive control whose interval includes 1: not detected.
  const std::string missed =
      certify(controls({{"aa", 0, 1.0, 0.99, 1.0101}, {"slow", 0.03, 1.02, 0.99, 1.05}}));
  EXPECT_EQ(missed.rfind("not certified: +3% control slow3.no_grad", 0), 0u) << missed;
  EXPECT_NE(missed.find("missed"), std::string::npos) << missed;
  // A control without an interval cannot certify anything.
  const std::string none = certify(controls({{"aa", 0, NAN, NAN, NAN}}));
  EXPECT_EQ(none, "not certified: A/A aa.no_grad has no interval");
  RunReport report = controls({{"aa", 0, 1.0, 0.97, 1.03}});
  report.certification = certify(report);
  EXPECT_TRUE(not_certified(report));
  // A long run's controls once more at the end: the whole-night intervals hold, but the end's
  // A/A misses 1, so the night is not certified, and says where.
  RunReport ended = controls({{"aa", 0, 1.0, 0.99, 1.0101}, {"slow", 0.03, 1.03, 1.01, 1.05}});
  ended.run.sampling = {{"controls_at_end",
                         {{{"experiment", "aa.no_grad"},
                           {"ratio", 1.03},
                           {"lo", 1.01},
                           {"hi", 1.05},
                           {"holds", false},
                           {"verdict", "shows an effect: the host was noisy"}},
                          {{"experiment", "slow3.no_grad"},
                           {"ratio", 1.03},
                           {"lo", 1.01},
                           {"hi", 1.05},
                           {"holds", true},
                           {"verdict", "detected"}}}}};
  EXPECT_EQ(certify(ended),
            "not certified: aa.no_grad at the end 1.030x [1.010, 1.050] shows an effect: the host "
            "was noisy");
  ended.run.sampling["controls_at_end"][0]["holds"] = true;
  EXPECT_EQ(certify(ended).rfind("certified: A/A aa.no_grad", 0), 0u) << certify(ended);
}

}  // namespace
}  // namespace tunebench::analysis

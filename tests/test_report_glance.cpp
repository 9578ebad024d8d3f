// The reporters' default text, a record at a glance (analysis/report_glance.cpp), on records built
// by hand: show, check and compare RUN_A RUN_B, one line per effect or finding with its interval,
// grouped by verdict or status; colour only when asked for.
#include <gtest/gtest.h>

#include <cmath>
#include <regex>

#include "analysis/reporter.h"

namespace tunebench::reporters {
namespace {

// Lines of `text` in order: each of `wanted` is a whole line of it, after the one before.
void expect_lines_in_order(const std::string& text, const std::vector<std::string>& wanted) {
  const std::string lines = "\n" + text;
  size_t at = 0;
  for (const auto& line : wanted) {
    const size_t found = lines.find("\n" + line + "\n", at);
    ASSERT_NE(found, std::string::npos) << "no line '" << line << "' after the line before in:\n"
                                        << text;
    at = found + line.size() + 1;
  }
}

stats::Effect effect_of(double ratio, double lo, double hi, stats::Verdict verdict) {
  return stats::Effect{ratio, lo, hi, 0.95, 2000, verdict, ""};
}

// A check at a glance (the default text): one line per benchmark and finding, grouped by status
// with regressions first, each ratio with its interval; stage 2's answer beside what it
// confirmed; the --verbose table's columns left out; colour only when asked for.
TEST(CheckGlance, OneLinePerBenchmarkGroupedByStatusEachWithItsInterval) {
  check::Report r;
  r.run_uuid = "0123456789abcdef";
  r.baseline_uuids = {"a", "b", "c"};
  r.threshold = 0.05;
  r.false_alarm = 0.01;
  r.confirmed = true;
  auto benchmark = [&](const std::string& experiment, const std::string& status,
                       stats::Effect effect) -> check::BenchmarkCheck& {
    check::BenchmarkCheck b;
    b.experiment = experiment;
    b.arm = "on";
    b.status = status;
    b.judgement.effect = effect;
    b.judgement.status = status;
    r.benchmarks.push_back(b);
    return r.benchmarks.back();
  };
  benchmark("steady.gpt", "unchanged", effect_of(1.02, 0.99, 1.05, stats::Verdict::no_effect))
      .judgement.why = {"interval includes 1"};
  benchmark("faster.gpt", "improvement", effect_of(0.8, 0.75, 0.85, stats::Verdict::helps));
  benchmark("new.gpt", "no baseline", effect_of(NAN, NAN, NAN, stats::Verdict::insufficient));
  auto& slow =
      benchmark("slow.resnet", "regression", effect_of(1.3, 1.25, 1.35, stats::Verdict::hurts));
  slow.flagged = true;
  slow.confirmation = check::Confirmation{};
  slow.confirmation->decision = {"regression",
                                 "1.2900x [1.2500, 1.3300] (99 % interval): slower than the "
                                 "last-good build"};
  check::StepChange step;
  step.experiment = "slow.resnet";
  step.arm = "on";
  step.first_run = "fedcba9876543210";
  step.first_started_at = "2026-01-09T00:00:00Z";
  step.step = {true, 3, 1.3, 1.2, 1.4, 0.002};
  r.steps.push_back(step);

  const std::string text = glance_reporter(false).check(r);
  expect_lines_in_order(
      text,
      {"check of run 01234567 against 3 baseline run(s): threshold 5 %, 1.0 % false alarms per run",
       "regression (1):",
       "  slow.resnet/on  1.30x [1.25, 1.35] hurts                 A/B this build / last-good: "
       "1.2900x [1.2500, 1.3300] (99 % interval): slower than the last-good build",
       "step change (1):",
       "  slow.resnet/on  1.300x [1.200, 1.400]                    from run fedcba98 "
       "(2026-01-09T00:00:00Z), p = 0.002",
       "improvement (1):", "  faster.gpt/on   0.80x [0.75, 0.85] helps", "unchanged (1):",
       "  steady.gpt/on   1.02x [0.99, 1.05] no measurable effect  (interval includes 1)",
       "no baseline (1):", "  new.gpt/on",
       "REGRESSION: confirmed by a paired A/B against the last-good build"});
  EXPECT_EQ(text.find("basis (σ)"), std::string::npos) << text;
  EXPECT_EQ(text.find('\033'), std::string::npos) << text;
  // No ratio without its interval.
  EXPECT_FALSE(std::regex_search(text, std::regex(R"([0-9]\.[0-9]+x(?! \[))"))) << text;
  // On a terminal the regression is red, the improvement green.
  const std::string coloured = glance_reporter(true).check(r);
  EXPECT_NE(coloured.find("\033[31m1.30x [1.25, 1.35] hurts\033[0m"), std::string::npos)
      << coloured;
  EXPECT_NE(coloured.find("\033[32m0.80x [0.75, 0.85] helps\033[0m"), std::string::npos)
      << coloured;
  // The table (--verbose, --format table) is another reporter, with the columns.
  EXPECT_NE(table_reporter().check(r).find("basis (σ)"), std::string::npos);
}

// Two runs compared at a glance: B slower first, then faster, then the rest by verdict, and the
// benchmarks only one run has, without an effect.
TEST(CompareGlance, OneLinePerBenchmarkSlowerFirst) {
  check::Comparison c;
  c.run_a = "aaaaaaaa-1";
  c.run_b = "bbbbbbbb-2";
  c.host_a = c.host_b = "vm";
  auto row = [&](const std::string& experiment, double a, double b, stats::Effect effect) {
    c.rows.push_back({experiment, "off", a, b, effect});
  };
  row("same.gpt", 0.01, 0.01, effect_of(1.0, 0.98, 1.02, stats::Verdict::no_effect));
  row("quick.gpt", 0.01, 0.008, effect_of(0.8, 0.78, 0.82, stats::Verdict::helps));
  row("gone.gpt", 0.01, NAN, effect_of(NAN, NAN, NAN, stats::Verdict::insufficient));
  row("slow.gpt", 0.01, 0.012, effect_of(1.2, 1.18, 1.22, stats::Verdict::hurts));
  const std::string text = glance_reporter(false).comparison(c);
  expect_lines_in_order(text, {"A = run aaaaaaaa-1 on vm", "B = run bbbbbbbb-2 on vm",
                               "B slower than A (1):", "  slow.gpt/off   1.20x [1.18, 1.22] hurts",
                               "B faster than A (1):", "  quick.gpt/off  0.80x [0.78, 0.82] helps",
                               "no measurable effect (1):",
                               "  same.gpt/off   1.00x [0.98, 1.02] no measurable effect",
                               "only in A (1):", "  gone.gpt/off",
                               "`tunebench compare aaaaaaaa bbbbbbbb --verbose`: each "
                               "benchmark's median times"});
  EXPECT_EQ(text.find(" ms"), std::string::npos) << text;  // the medians are --verbose's
  EXPECT_NE(table_reporter().comparison(c).find("12.000 ms"), std::string::npos);
}

// A factorial experiment's effects are its contrasts: at a glance each says which cells it
// compares, beside its interval (without it, three lines of the same name said nothing apart).
TEST(ShowGlance, FactorialContrastsSayWhatTheyCompare) {
  analysis::RunReport report;
  report.run.record.uuid = "0123456789abcdef";
  report.run.record.suite_name = "smoke";
  report.run.record.host = {{"hostname", "vm"}};
  report.run.record.software = {{"libtorch_build", "LibTorch 1.13.0"}};
  report.run.status = "completed";
  analysis::ExperimentReport x;
  x.name = "channels_last+no_grad.resnet50-tiny-infer";
  x.knob = "factorial";
  x.effects = {
      {"time", "main effect of channels_last", effect_of(0.8, 0.69, 0.97, stats::Verdict::helps)},
      {"time", "interaction channels_last x no_grad",
       effect_of(0.98, 0.75, 1.46, stats::Verdict::no_effect)}};
  report.experiments.push_back(x);
  const std::string text = glance_reporter(false).run(report);
  expect_lines_in_order(
      text,
      {"helps (1):",
       "  channels_last+no_grad.resnet50-tiny-infer  0.80x [0.69, 0.97] helps                 "
       "main effect of channels_last",
       "no measurable effect (1):",
       "  channels_last+no_grad.resnet50-tiny-infer  0.98x [0.75, 1.46] no measurable effect  "
       "interaction channels_last x no_grad"});
}

// The controls in their own words, not the estimator's verdict: an A/A's interval holds 1 (with
// its width) or shows an effect, a positive control is detected or missed; the JSON and the
// stored text say the same (analysis::effect_text).
TEST(ShowGlance, ControlsSayWhetherTheyHeld) {
  analysis::RunReport report;
  report.run.record.uuid = "0123456789abcdef";
  report.run.record.suite_name = "smoke";
  report.run.status = "completed";
  auto control = [&](const std::string& name, double slowdown, stats::Effect e) {
    analysis::ExperimentReport x;
    x.name = name;
    x.knob = slowdown > 0 ? "positive_control" : "aa";
    x.slowdown = slowdown;
    x.effects = {{"time", "on vs off", e}};
    report.experiments.push_back(x);
  };
  control("aa.held", 0, effect_of(0.99, 0.97, 1.01, stats::Verdict::inconclusive));
  control("aa.noisy", 0, effect_of(0.95, 0.93, 0.97, stats::Verdict::helps));
  control("slow3.detected", 0.03, effect_of(1.03, 1.01, 1.05, stats::Verdict::hurts));
  control("slow3.missed", 0.03, effect_of(1.03, 0.99, 1.07, stats::Verdict::not_precise));
  control("aa.no_interval", 0, effect_of(1.0, NAN, NAN, stats::Verdict::insufficient));
  const std::string text = glance_reporter(false).run(report);
  expect_lines_in_order(
      text,
      {"controls:",
       "  aa.held                                      0.99x [0.97, 1.01] holds 1 (±2.0%)  "
       "(expect 1 inside)",
       "  aa.noisy                                     0.95x [0.93, 0.97] shows an effect: "
       "the host was noisy  (expect 1 inside)",
       "  slow3.detected                               1.03x [1.01, 1.05] detected  (expect "
       "1.03x inside)",
       "  slow3.missed                                 1.03x [0.99, 1.07] missed  (expect "
       "1.03x inside)",
       "  aa.no_interval                               1.00x [no interval] insufficient data  "
       "(expect 1 inside)"});
  EXPECT_EQ(text.find("inconclusive"), std::string::npos) << text;
  const auto shown = nlohmann::json::parse(json_reporter().run(report));
  EXPECT_EQ(shown["experiments"][0]["effects"][0]["text"], "0.99x [0.97, 1.01] holds 1 (±2.0%)");
  EXPECT_EQ(shown["experiments"][0]["effects"][0]["verdict"], "inconclusive");
  // Any other experiment keeps its verdict.
  analysis::ExperimentReport knob;
  knob.knob = "no_grad";
  const analysis::NamedEffect e{"time", "on vs off",
                                effect_of(0.99, 0.97, 1.01, stats::Verdict::inconclusive)};
  EXPECT_EQ(analysis::effect_text(knob, e), "0.99x [0.97, 1.01] inconclusive");
}

}  // namespace
}  // namespace tunebench::reporters

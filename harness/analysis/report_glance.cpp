// `show`'s default: a run at a glance. One line per effect (experiment, metric, effect with its
// interval and verdict, the claim with its sources), grouped by verdict, best news first; then the
// run's controls (A/A and the positive control, with what each should show) and what was not
// applicable. `show --verbose` (the table reporter, report_text.cpp) has the arms, spreads and
// evidence. Colour only where the caller says the output is a terminal that wants it.
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "analysis/reporter.h"
#include "analysis/stats.h"

namespace tunebench::reporters {

namespace {

// The verdict's word without its numbers ("not precise enough (±3.4%)" → "not precise enough").
std::string verdict_word(const stats::Effect& e) {
  const std::string said = stats::to_string(e.verdict);
  const auto bracket = said.find(" (");
  return bracket == std::string::npos ? said : said.substr(0, bracket);
}

// Groups in the order a reader wants them: what to act on, then what is not settled.
int group_rank(stats::Verdict v) {
  switch (v) {
    case stats::Verdict::helps:
      return 0;
    case stats::Verdict::hurts:
      return 1;
    case stats::Verdict::equivalent:
    case stats::Verdict::no_effect:
      return 2;
    case stats::Verdict::inconclusive:
    case stats::Verdict::not_precise:
      return 3;
    case stats::Verdict::insufficient:
    case stats::Verdict::host_too_busy:
      return 4;
  }
  return 5;
}

const char* colour_of(stats::Verdict v) {
  switch (group_rank(v)) {
    case 0:
      return "\033[32m";  // green
    case 1:
      return "\033[31m";  // red
    case 3:
    case 4:
      return "\033[33m";  // yellow
    default:
      return "";
  }
}

bool is_control(const analysis::ExperimentReport& x) { return x.knob == "aa" || x.slowdown > 0; }

class GlanceReporter : public Reporter {
 public:
  explicit GlanceReporter(bool colour) : colour_(colour) {}

  std::string run(const analysis::RunReport& report) const override {
    const auto& r = report.run.record;
    std::string out =
        fmt::format("run {}  suite {}  {}  on {} ({})\n", r.uuid.substr(0, 8), r.suite_name,
                    report.state.shown.empty() ? report.run.status : report.state.shown,
                    r.host.value("hostname", "?"), r.software.value("libtorch_build", "?"));
    if (!report.state.resume.empty()) out += "resume with: " + report.state.resume + "\n";
    out += certification(report);
    out += controls(report);
    out += effects(report);
    out += not_applicable(report);
    if (!report.findings.empty()) {
      out += fmt::format("tunebench check found {} regression(s) or change(s) in this run\n",
                         report.findings.size());
    }
    out += fmt::format(
        "ratios ON/OFF of the median with their 95% interval; < 1: the knob reduces it. "
        "`tunebench show {} --verbose` adds each experiment's arms, spreads and evidence\n",
        r.uuid.substr(0, 8));
    return out;
  }

 private:
  std::string paint(const std::string& text, stats::Verdict v) const {
    const char* c = colour_of(v);
    return colour_ && *c ? std::string(c) + text + "\033[0m" : text;
  }

  // Whether the controls certify the run, first: a run they do not certify has every verdict
  // marked so.
  std::string certification(const analysis::RunReport& report) const {
    if (report.certification.empty()) return "";
    const bool failed = analysis::not_certified(report);
    const std::string line = analysis::certification_line(report.certification);
    return (colour_ ? paint(line, failed ? stats::Verdict::hurts : stats::Verdict::helps) : line) +
           "\n";
  }

  // The controls first: they say whether the rest of the run can be trusted.
  std::string controls(const analysis::RunReport& report) const {
    std::string out;
    for (const auto& x : report.experiments) {
      if (!is_control(x)) continue;
      const std::string expect =
          x.slowdown > 0 ? fmt::format("expect {:.2f}x inside", 1 + x.slowdown) : "expect 1 inside";
      for (const auto& e : x.effects) {
        if (e.metric != "time") continue;
        out += fmt::format("  {:<44} {}  ({})\n", x.name,
                           paint(stats::format_effect(e.effect), e.effect.verdict), expect);
      }
      if (x.effects.empty()) out += fmt::format("  {:<44} {}\n", x.name, x.problem);
    }
    return out.empty() ? "" : "controls:\n" + out;
  }

  // The effects grouped by verdict, columns as wide as their widest cell.
  std::string effects(const analysis::RunReport& report) const {
    struct Line {
      std::string name, effect, claim;
      stats::Verdict verdict;
    };
    std::map<int, std::pair<std::string, std::vector<Line>>> groups;
    std::vector<std::string> without;
    size_t name_width = 0, effect_width = 0;
    for (const auto& x : report.experiments) {
      if (is_control(x)) continue;
      if (x.effects.empty()) {
        without.push_back(fmt::format("  {}  {}", x.name, x.problem));
        continue;
      }
      for (const auto& e : x.effects) {
        auto& group = groups[group_rank(e.effect.verdict)];
        if (group.first.empty()) group.first = verdict_word(e.effect);
        const std::string metric = e.metric == "time" ? "" : " (" + e.metric + ")";
        group.second.push_back(
            {x.name + metric, stats::format_effect(e.effect), x.claim, e.effect.verdict});
        name_width = std::max(name_width, group.second.back().name.size());
        effect_width = std::max(effect_width, group.second.back().effect.size());
      }
    }
    std::string out;
    for (const auto& [rank, group] : groups) {
      out += fmt::format("{} ({}{}):\n", group.first, group.second.size(),
                         analysis::not_certified(report) ? ", run not certified" : "");
      for (const auto& l : group.second) {
        out += fmt::format("  {:<{}}  {}{}  {}\n", l.name, name_width, paint(l.effect, l.verdict),
                           std::string(effect_width - l.effect.size(), ' '), l.claim);
      }
    }
    if (!without.empty()) {
      out += fmt::format("no effect computed ({}):\n", without.size());
      for (const auto& line : without) out += line + "\n";
    }
    return out;
  }

  std::string not_applicable(const analysis::RunReport& report) const {
    if (!report.not_applicable.is_array() || report.not_applicable.empty()) return "";
    std::string out = fmt::format("not applicable here ({}):\n", report.not_applicable.size());
    for (const auto& n : report.not_applicable) {
      out += fmt::format("  {:<44} {}\n", n.value("experiment", "?"), n.value("reason", ""));
    }
    return out;
  }

  bool colour_;
};

}  // namespace

const Reporter& glance_reporter(bool colour) {
  static const GlanceReporter plain(false), coloured(true);
  return colour ? coloured : plain;
}

}  // namespace tunebench::reporters

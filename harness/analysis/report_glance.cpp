// The default text of `show`, `check` and `compare RUN_A RUN_B`: a record at a glance, one line per
// effect or finding (what, the ratio with its interval and verdict, and what follows from it),
// grouped by verdict, what to act on first, in columns as wide as their widest cell. `show`: each
// effect with the claim and its sources, the run's controls (A/A and the positive control, with
// what each should show) and what was not applicable. `check`: each benchmark against its baseline
// by status, stage 2's answer beside what it confirmed, step changes and knobs that stopped
// helping. `compare`: each benchmark's B / A, B slower first. The table reporter (report_text.cpp,
// what --verbose prints) has the arms, spreads, evidence, bases, floors and medians. Colour only
// where the caller says the output is a terminal that wants it.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "analysis/reporter.h"
#include "analysis/stats.h"

namespace tunebench::reporters {

namespace {

// How a line is coloured on a terminal: good news green, bad red, unsettled yellow.
enum class Tone { plain, good, bad, unsure };

const char* colour_of(Tone tone) {
  switch (tone) {
    case Tone::good:
      return "\033[32m";
    case Tone::bad:
      return "\033[31m";
    case Tone::unsure:
      return "\033[33m";
    case Tone::plain:
      break;
  }
  return "";
}

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

Tone tone_of(stats::Verdict v) {
  switch (group_rank(v)) {
    case 0:
      return Tone::good;
    case 1:
      return Tone::bad;
    case 3:
    case 4:
      return Tone::unsure;
    default:
      return Tone::plain;
  }
}

// One line of a glance: what, the effect with its interval and verdict (empty where there is
// none: a benchmark only one run has), and what follows from it (a claim, stage 2's answer).
struct Line {
  std::string name, effect, tail;
  Tone tone = Tone::plain;
};

// Titled groups of lines, printed in the order of their rank.
struct Group {
  std::string title;
  std::vector<Line> lines;
};
using Groups = std::map<int, Group>;

void add(Groups& groups, int rank, const std::string& title, Line line) {
  auto& group = groups[rank];
  if (group.title.empty()) group.title = title;
  group.lines.push_back(std::move(line));
}

// The widest a name column grows: the smoke suite's names fit (memory effects up to 49
// characters); a factorial cell's benchmark in check (73) shifts its own line.
constexpr size_t kNameWidth = 50;

// "1.300x [1.250, 1.350]" for a step or stage 2's A/B, as the table prints them.
std::string ratio_text(double ratio, double lo, double hi) {
  return fmt::format("{:.3f}x [{:.3f}, {:.3f}]", ratio, lo, hi);
}

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

  std::string check(const check::Report& r) const override {
    if (r.machine_changed) return table_reporter().check(r);  // one line, nothing to group
    std::string out = fmt::format(
        "check of run {} against {} baseline run(s): threshold {:.0f} %, {:.1f} % false alarms "
        "per run\n",
        r.run_uuid.substr(0, 8), r.baseline_uuids.size(), 100 * r.threshold, 100 * r.false_alarm);
    if (!r.certification.empty()) {
      const auto tone = tone_of(analysis::not_certified(r.certification) ? stats::Verdict::hurts
                                                                         : stats::Verdict::helps);
      out += paint(analysis::certification_line(r.certification), tone) + "\n";
    }
    out += r.calibrated ? "noise floors: calibrated (tunebench calibrate)\n"
                        : "noise floors: not calibrated on this host and software (only each "
                          "run's own noise is known; `tunebench calibrate` for quieter alerts)\n";
    out += r.confirmed ? "stage 2: every flagged benchmark confirmed by a paired A/B against the "
                         "last-good build, this night\n"
                       : "stage 2: not run (--confirm-with LAST_GOOD_BUILD); the status is "
                         "stage 1's\n";
    Groups groups;
    for (const auto& b : r.benchmarks) add_benchmark(groups, b);
    for (const auto& s : r.steps) {
      add(groups, check_ranks().at("step change").first, "step change",
          {s.experiment + "/" + s.arm, ratio_text(s.step.ratio, s.step.lo, s.step.hi),
           fmt::format("from run {} ({}), p = {:.3f}", s.first_run.substr(0, 8), s.first_started_at,
                       s.step.p_value),
           Tone::bad});
    }
    for (const auto& s : r.stopped_helping) {
      add(groups, check_ranks().at("stopped helping").first, "stopped helping",
          {s, "", "", Tone::bad});
    }
    out += grouped(groups);
    out +=
        "ratio = run / baseline of the median time per iteration [95 % interval]\n"
        "`tunebench check --verbose`: each benchmark's basis, flag, noise floor and detectable "
        "slowdown, and stage 2's A/B runs\n";
    return out + check_verdict(r);
  }

  std::string comparison(const check::Comparison& c) const override {
    std::string out =
        fmt::format("A = run {} on {}\nB = run {} on {}\n", c.run_a, c.host_a, c.run_b, c.host_b);
    Groups groups;
    for (const auto& row : c.rows) {
      const std::string name = row.experiment + "/" + row.arm;
      if (!std::isfinite(row.median_a) || !std::isfinite(row.median_b)) {
        const bool only_b = !std::isfinite(row.median_a);
        add(groups, only_b ? 10 : 11, only_b ? "only in B" : "only in A", {name, "", ""});
        continue;
      }
      const auto v = row.effect.verdict;
      const std::string title = v == stats::Verdict::hurts   ? "B slower than A"
                                : v == stats::Verdict::helps ? "B faster than A"
                                                             : verdict_word(row.effect);
      // Slower first: in a comparison of a new run with an old one, that is what to act on.
      const int rank = v == stats::Verdict::hurts   ? 0
                       : v == stats::Verdict::helps ? 1
                                                    : 2 + group_rank(v);
      add(groups, rank, title, {name, stats::format_effect(row.effect), "", tone_of(v)});
    }
    out += grouped(groups);
    out += fmt::format(
        "ratio = B / A of the median time per iteration [95 % interval]; below 1: B is faster\n"
        "`tunebench compare {} {} --verbose`: each benchmark's median times\n",
        c.run_a.substr(0, 8), c.run_b.substr(0, 8));
    return out;
  }

 private:
  std::string paint(const std::string& text, Tone tone) const {
    const char* c = colour_of(tone);
    return colour_ && *c ? std::string(c) + text + "\033[0m" : text;
  }

  // Each group's title with its count, then its lines; names and effects in columns as wide as
  // their widest cell over all the groups, names at most kNameWidth (a longer one, a factorial's
  // cell, shifts its own line's effect instead of every line's).
  std::string grouped(const Groups& groups) const {
    size_t name_width = 0, effect_width = 0;
    for (const auto& [rank, group] : groups) {
      for (const auto& l : group.lines) {
        if (!l.effect.empty()) name_width = std::max(name_width, l.name.size());
        effect_width = std::max(effect_width, l.effect.size());
      }
    }
    name_width = std::min(name_width, kNameWidth);
    std::string out;
    for (const auto& [rank, group] : groups) {
      out += fmt::format("{} ({}):\n", group.title, group.lines.size());
      for (const auto& l : group.lines) {
        std::string line = "  " + l.name;
        if (!l.effect.empty()) {
          line = fmt::format("  {:<{}}  {}{}", l.name, name_width, paint(l.effect, l.tone),
                             std::string(effect_width - l.effect.size(), ' '));
        }
        if (!l.tail.empty()) line += "  " + l.tail;
        while (line.back() == ' ') line.pop_back();
        out += line + "\n";
      }
    }
    return out;
  }

  // ---- show

  // Whether the controls certify the run, first: a run they do not certify has every verdict
  // marked so.
  std::string certification(const analysis::RunReport& report) const {
    if (report.certification.empty()) return "";
    const bool failed = analysis::not_certified(report);
    const std::string line = analysis::certification_line(report.certification);
    return (colour_ ? paint(line, tone_of(failed ? stats::Verdict::hurts : stats::Verdict::helps))
                    : line) +
           "\n";
  }

  // The controls first: they say whether the rest of the run can be trusted.
  std::string controls(const analysis::RunReport& report) const {
    std::string out;
    for (const auto& x : report.experiments) {
      if (!analysis::is_control(x)) continue;
      const std::string expect =
          x.slowdown > 0 ? fmt::format("expect {:.2f}x inside", 1 + x.slowdown) : "expect 1 inside";
      for (const auto& e : x.effects) {
        if (e.metric != "time") continue;
        const std::string words = analysis::control_words(x, e);
        const Tone tone = words.empty() ? tone_of(e.effect.verdict)
                          : words.rfind("holds", 0) == 0 || words == "detected" ? Tone::good
                                                                                : Tone::bad;
        out += fmt::format("  {:<44} {}  ({})\n", x.name, paint(analysis::effect_text(x, e), tone),
                           expect);
      }
      if (x.effects.empty()) out += fmt::format("  {:<44} {}\n", x.name, x.problem);
    }
    return out.empty() ? "" : "controls:\n" + out;
  }

  // The effects grouped by verdict, each with the claim it tests.
  std::string effects(const analysis::RunReport& report) const {
    Groups groups;
    const std::string marked = analysis::not_certified(report) ? ", run not certified" : "";
    std::vector<std::string> without;
    for (const auto& x : report.experiments) {
      if (analysis::is_control(x)) continue;
      if (x.effects.empty()) {
        without.push_back(fmt::format("  {}  {}", x.name, x.problem));
        continue;
      }
      for (const auto& e : x.effects) {
        const std::string metric = e.metric == "time" ? "" : " (" + e.metric + ")";
        // A factorial's effects are its contrasts: each says which cells it compares.
        const std::string tail =
            x.knob == "factorial" ? e.compared + (x.claim.empty() ? "" : ": " + x.claim) : x.claim;
        add(groups, group_rank(e.effect.verdict), verdict_word(e.effect) + marked,
            {x.name + metric, stats::format_effect(e.effect), tail, tone_of(e.effect.verdict)});
      }
    }
    std::string out = grouped(groups);
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

  // ---- check

  // A benchmark under its status (check_ranks: regressions first), with stage 2's answer, its
  // flag or why a slower benchmark is unchanged.
  void add_benchmark(Groups& groups, const check::BenchmarkCheck& b) const {
    const auto known = check_ranks().find(b.status);
    const auto [rank, tone] = known == check_ranks().end()
                                  ? std::pair{int(check_ranks().size()), Tone::plain}
                                  : known->second;
    const std::string name = b.experiment + "/" + b.arm;
    if (b.status == "no baseline") {
      add(groups, rank, b.status, {name, "", ""});
      return;
    }
    std::string tail;
    if (b.confirmation) {
      tail = "A/B this build / last-good: " + b.confirmation->decision.why;
    } else {
      if (b.status == "unchanged" && !b.judgement.why.empty() && b.judgement.effect.ratio > 1) {
        tail = b.judgement.why.front();
      }
      if (b.unconfirmed) tail = check::BenchmarkCheck::kUnconfirmed;
      if (b.flagged) {
        tail += fmt::format("{}flagged for stage 2 (beyond {:.3f}x)", tail.empty() ? "" : "; ",
                            b.flag_ratio);
      }
      if (!tail.empty()) tail = "(" + tail + ")";
    }
    add(groups, rank, b.status, {name, stats::format_effect(b.judgement.effect), tail, tone});
  }

  // The order of check's groups: what to act on, what is not settled, good news, the rest.
  static const std::map<std::string, std::pair<int, Tone>>& check_ranks() {
    static const std::map<std::string, std::pair<int, Tone>> ranks{
        {"regression", {0, Tone::bad}},   {"step change", {1, Tone::bad}},
        {"unknown", {2, Tone::unsure}},   {"stopped helping", {3, Tone::bad}},
        {"improvement", {4, Tone::good}}, {"no regression", {5, Tone::plain}},
        {"unchanged", {6, Tone::plain}},  {"no baseline", {7, Tone::plain}}};
    return ranks;
  }

  bool colour_;
};

}  // namespace

const Reporter& glance_reporter(bool colour) {
  static const GlanceReporter plain(false), coloured(true);
  return colour ? coloured : plain;
}

}  // namespace tunebench::reporters

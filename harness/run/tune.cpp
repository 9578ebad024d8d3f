#include "run/tune.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>

#include "knobs/apply.h"
#include "knobs/knobs.h"
#include "run/host.h"
#include "store/storage.h"

namespace tunebench::orchestrator {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

// The time effect "on vs off" of experiment `name` in a run's report; nullptr when it has none.
const stats::Effect* time_effect(const analysis::RunReport& report, const std::string& name) {
  for (const auto& x : report.experiments) {
    if (x.name != name) continue;
    for (const auto& e : x.effects) {
      if (e.metric == "time" && e.compared == "on vs off") return &e.effect;
    }
  }
  return nullptr;
}

// An effect as stored in the recommendation: the figures and the words show prints.
json effect_json(const stats::Effect& e) {
  auto number = [](double v) { return std::isfinite(v) ? json(v) : json(nullptr); };
  return {{"ratio", number(e.ratio)},
          {"lo", number(e.lo)},
          {"hi", number(e.hi)},
          {"verdict", stats::to_string(e.verdict)},
          {"text", stats::format_effect(e)}};
}

// "amp=true, omp_threads=2", or "the defaults".
std::string said(const json& settings) {
  std::string out;
  for (const auto& [id, value] : settings.items()) {
    out += fmt::format("{}{}={}", out.empty() ? "" : ", ", id,
                       value.is_string() ? value.get<std::string>() : value.dump());
  }
  return out.empty() ? "the defaults" : out;
}

// The settings with host-dependent values resolved for this host (omp_threads "all" → 2).
json resolved(const json& settings, const knobs::HostCaps& caps) {
  json out = json::object();
  for (const auto& [id, value] : settings.items()) {
    const knobs::Knob* k = knobs::find(id);
    out[id] = k != nullptr ? knobs::resolve(*k, value, caps) : value;
  }
  return out;
}

class Tuner {
 public:
  explicit Tuner(const TuneOptions& options)
      : options_(options), uuid_(new_uuid()), started_(Clock::now()) {}

  int operator()();

 private:
  double elapsed() const { return std::chrono::duration<double>(Clock::now() - started_).count(); }
  void say(const std::string& line) const {
    if (!options_.run.quiet) std::cerr << "tune: " << line << "\n";
  }
  // Runs one stage; its report, or nullopt (said) when the stage did not give one to go on from.
  std::optional<analysis::RunReport> stage(const std::string& what, RunOptions run, double budget_s,
                                           int* exit_code);
  int screen();
  int ladder();
  int measure_final();
  int recommend();

  TuneOptions options_;
  std::string uuid_;
  Clock::time_point started_;
  knobs::HostCaps caps_;
  json runs_ = json::array();
  std::vector<Candidate> candidates_;
  json screened_ = json::array(), controls_ = json::array(), steps_ = json::array();
  json left_out_ = json::array();  // helping knobs that are no setting to add (helping_knobs)
  json config_ = json::object(), single_ = json::object();
  std::vector<stats::Effect> kept_effects_;
  json vs_default_, vs_single_;
};

std::optional<analysis::RunReport> Tuner::stage(const std::string& what, RunOptions run,
                                                double budget_s, int* exit_code) {
  run.uuid = new_uuid();
  run.budget_s = budget_s;
  run.label = fmt::format("tune {} {}", uuid_, what);
  *exit_code = orchestrator::run(run);
  if (*exit_code == 2) return std::nullopt;  // said: bad input, or a storage error
  runs_.push_back({{"stage", what}, {"run", run.uuid}});
  try {
    const storage::Database db(run.db_path, storage::Database::Access::kRead);
    analysis::RunReport report = analysis::analyze(db, run.uuid);
    runs_.back()["certification"] = report.certification;
    if (report.state.status == "interrupted") {
      std::cerr << fmt::format(
          "tunebench: tune {} stopped at its {} (run {} interrupted); the runs so far are "
          "stored, and no recommendation\n",
          uuid_, what, run.uuid);
      *exit_code = 1;
      return std::nullopt;
    }
    return report;
  } catch (const std::exception& e) {
    std::cerr << "tunebench: error: " << e.what() << "\n";
    *exit_code = 1;
    return std::nullopt;
  }
}

int Tuner::screen() {
  suite::Suite suite;
  try {
    suite = plan::model_suite(options_.run.model);
  } catch (const suite::SuiteError& e) {
    std::cerr << "tunebench: error: " << e.what() << "\nNothing was run or written.\n";
    return 2;
  }
  if (!options_.knobs.empty()) {
    // Only the knobs asked for, each one the model's suite screens; the controls stay.
    std::vector<std::string> offered;
    for (const auto& x : suite.experiments)
      if (!x.is_control()) offered.push_back(x.knob);
    for (const auto& k : options_.knobs) {
      if (std::find(offered.begin(), offered.end(), k) == offered.end()) {
        std::cerr << fmt::format(
            "tunebench: error: --knobs: '{}' is not a knob tune screens on {} in {}; valid: {}\n"
            "Nothing was run or written.\n",
            k, options_.run.model.name(), to_string(options_.run.model.mode),
            fmt::join(offered, ", "));
        return 2;
      }
    }
    auto& xs = suite.experiments;
    xs.erase(std::remove_if(xs.begin(), xs.end(),
                            [&](const suite::Experiment& x) {
                              return !x.is_control() &&
                                     std::find(options_.knobs.begin(), options_.knobs.end(),
                                               x.knob) == options_.knobs.end();
                            }),
             xs.end());
  }
  // About half the budget, shared by the knobs' experiments; the controls keep their own.
  const double budget = options_.budget_s / 2;
  const double each = std::max(10.0, budget / double(suite.experiments.size()));
  for (auto& x : suite.experiments) {
    if (!x.is_control()) x.budget_s = each;
  }
  say(fmt::format("1/3 screening {} on {} ({} s of sampling on each, {:.0f} s in all)",
                  options_.knobs.empty()
                      ? std::string("every knob")
                      : fmt::format("the knobs asked for ({})", fmt::join(options_.knobs, ", ")),
                  options_.run.model.name(), int(each), budget));
  RunOptions run = options_.run;
  run.suite = suite;
  int code = 0;
  const auto report = stage("screen", run, budget, &code);
  if (!report) return code;
  for (const auto& x : report->experiments) {
    const stats::Effect* e = time_effect(*report, x.name);
    if (e == nullptr) continue;
    const bool control = analysis::is_control(x);
    json row = effect_json(*e);
    row["experiment"] = x.name;
    (control ? controls_ : screened_).push_back(row);
    if (control) {
      say(fmt::format("   control {}: {}", x.name, analysis::effect_text(x, {"time", "", *e})));
    }
  }
  std::vector<LeftOut> left_out;
  candidates_ = helping_knobs(*report, caps_, &left_out);
  for (const auto& l : left_out) {
    left_out_.push_back({{"knob", l.knob}, {"text", l.effect}, {"why", l.why}});
    say(fmt::format("   {} {}: left out: {}", l.knob, l.effect, l.why));
  }
  std::string helping;
  for (const auto& c : candidates_) {
    helping +=
        fmt::format("{}{} {}", helping.empty() ? "" : ", ", c.knob, stats::format_effect(c.effect));
  }
  say(fmt::format("   {} of {} knobs help alone{}{}", candidates_.size(), screened_.size(),
                  helping.empty() ? "" : ": ", helping));
  return 0;
}

int Tuner::ladder() {
  if (candidates_.empty()) return 0;
  // The best knob alone, as screened: the first step and the single knob to beat.
  const Candidate& first = candidates_.front();
  config_[first.knob] = first.value;
  single_ = config_;
  kept_effects_.push_back(first.effect);
  json first_step = effect_json(first.effect);
  first_step.update({{"knob", first.knob},
                     {"value", first.value},
                     {"kept", true},
                     {"against", "the defaults"},
                     {"why", "the best knob alone (screen)"},
                     {"cumulative", effect_json(stats::chained(kept_effects_))}});
  steps_.push_back(first_step);
  const size_t rest = candidates_.size() - 1;
  if (rest == 0) return 0;
  const double budget = std::max(0.0, options_.budget_s - elapsed()) * 0.6;
  const double each = std::max(10.0, budget / double(rest));
  const double ladder_end = elapsed() + budget;
  for (size_t i = 1; i < candidates_.size(); ++i) {
    const Candidate& c = candidates_[i];
    say(fmt::format("2/3 step {} of {}: {} added to {} ({:.0f} s of sampling on)", i + 1,
                    candidates_.size(), c.knob, said(config_), each));
    json step = {{"knob", c.knob}, {"value", c.value}, {"against", said(config_)}};
    suite::Suite suite;
    try {
      suite = plan::ladder_step_suite(options_.run.model, c.knob, config_, each);
    } catch (const suite::SuiteError& e) {
      // Not a combination a suite may hold (one arm's settings exclude another's).
      step.update({{"kept", false}, {"why", fmt::format("cannot be combined: {}", e.what())}});
      say("   dropped: " + step["why"].get<std::string>());
      steps_.push_back(step);
      continue;
    }
    RunOptions run = options_.run;
    run.suite = suite;
    run.model = {};
    run.quiet = true;
    int code = 0;
    auto report = stage(fmt::format("step {}", i + 1), run, each, &code);
    if (!report) return code == 2 ? 1 : code;
    const stats::Effect* e = time_effect(*report, "tune.add-" + c.knob);
    // Open: sampled on (the same run, resumed with a larger budget) while the ladder's share
    // holds another round, this step's and the steps' after it kept aside.
    double step_budget = each;
    int rounds = 0;
    while (e != nullptr && report->not_applicable.empty() &&
           step_call(*e, ladder_end - elapsed() - each * double(candidates_.size() - 1 - i),
                     each) == StepCall::sample_on) {
      step_budget += each;
      ++rounds;
      say(fmt::format("   {} is open at {}: sampled on ({:.0f} s more)", c.knob,
                      stats::format_effect(*e), each));
      RunOptions more = run;
      more.resume = runs_.back()["run"].get<std::string>();
      more.budget_s = step_budget;
      code = orchestrator::run(more);
      if (code == 2) return 1;
      const storage::Database db(run.db_path, storage::Database::Access::kRead);
      report = analysis::analyze(db, more.resume);
      e = time_effect(*report, "tune.add-" + c.knob);
    }
    if (rounds > 0) step["sampled_on"] = rounds;
    const bool applies = report->not_applicable.empty();
    if (e == nullptr || !applies) {
      step.update({{"kept", false},
                   {"why", applies ? "no effect could be computed (its trials failed)"
                                   : "not applicable with the others: " +
                                         report->not_applicable[0]["reason"].get<std::string>()}});
      say("   dropped: " + step["why"].get<std::string>());
      steps_.push_back(step);
      continue;
    }
    step.update(effect_json(*e));
    const StepCall call = step_call(*e, 0, each);
    const bool helps = call == StepCall::keep;
    step["kept"] = helps;
    if (helps) {
      config_[c.knob] = c.value;
      kept_effects_.push_back(*e);
      step["why"] = "helps on top of the configuration so far";
      step["cumulative"] = effect_json(stats::chained(kept_effects_));
    } else if (call == StepCall::drop) {
      step["why"] = fmt::format(
          "helped alone ({}), not on top of {}: {}", stats::format_effect(c.effect), said(config_),
          e->verdict == stats::Verdict::hurts ? "it hurts there" : "no effect beyond ±2 % there");
    } else {
      step["undecided"] = true;
      step["why"] = fmt::format(
          "undecided on top of {} when the ladder's budget was spent{}: left out, since it is "
          "not shown to help there (it helped alone: {}); a larger --budget may decide it",
          said(config_), rounds > 0 ? fmt::format(", after sampling on {} time(s)", rounds) : "",
          stats::format_effect(c.effect));
    }
    say(fmt::format("   {} {}: {}",
                    helps                    ? "kept"
                    : call == StepCall::drop ? "dropped"
                                             : "left out undecided",
                    c.knob, stats::format_effect(*e)));
    steps_.push_back(step);
  }
  return 0;
}

int Tuner::measure_final() {
  if (config_.empty()) return 0;
  const double budget = std::max(20.0, options_.budget_s - elapsed());
  say(fmt::format("3/3 {} against the defaults{} ({:.0f} s of sampling on)", said(config_),
                  single_ != config_ ? " and against " + said(single_) + " alone" : "", budget));
  suite::Suite suite;
  try {
    suite = plan::final_suite(options_.run.model, config_, single_, budget / 2);
  } catch (const suite::SuiteError& e) {
    std::cerr << "tunebench: error: the final configuration: " << e.what() << "\n";
    return 1;
  }
  RunOptions run = options_.run;
  run.suite = suite;
  run.model = {};
  run.quiet = true;
  int code = 0;
  const auto report = stage("final", run, budget, &code);
  if (!report) return code == 2 ? 1 : code;
  auto comparison = [&](const std::string& name) {
    json out = json::object();
    for (const auto& x : report->experiments) {
      if (x.name != name) continue;
      for (const auto& e : x.effects) {
        if (e.compared == "on vs off") out[e.metric] = effect_json(e.effect);
      }
    }
    return out;
  };
  vs_default_ = comparison("tuned.vs-default");
  if (single_ != config_) vs_single_ = comparison("tuned.vs-best-single");
  return vs_default_.contains("time") ? 0 : 1;
}

int Tuner::recommend() {
  const json settings = resolved(config_, caps_);
  const knobs::Written written = knobs::how_to_apply(settings);
  const plan::ModelRequest& m = options_.run.model;
  json r = {
      {"model", m.name()},
      {"mode", to_string(m.mode)},
      {"batch", m.batch},
      {"settings", config_},
      {"resolved", settings},
      {"best_single", single_},
      {"screen", screened_},
      {"controls", controls_},
      {"left_out", left_out_},
      {"ladder", steps_},
      {"vs_default", vs_default_.is_null() ? json::object() : vs_default_},
      {"vs_best_single", vs_single_.is_null() ? json::object() : vs_single_},
      {"apply", {{"launch", written.launch}, {"python", written.python}, {"cpp", written.cpp}}},
      {"runs", runs_},
      {"budget_s", options_.budget_s},
      {"knobs", options_.knobs},
      {"seconds", elapsed()}};
  // The ladder's product against the final measurement: each step was measured on top of the
  // one before it, the final against the defaults at once; intervals that do not overlap say the
  // steps do not chain as multiplied (an interaction, or a host that moved between stages).
  const json* product = nullptr;
  for (const auto& step : steps_)
    if (step.value("kept", false)) product = &step["cumulative"];
  const json final_time = vs_default_.is_object() ? vs_default_.value("time", json()) : json();
  if (product != nullptr && final_time.is_object() && (*product)["lo"].is_number() &&
      final_time["lo"].is_number()) {
    const bool overlap = (*product)["lo"].get<double>() <= final_time["hi"].get<double>() &&
                         final_time["lo"].get<double>() <= (*product)["hi"].get<double>();
    r["ladder_against_final"] = {{"product", *product}, {"final", final_time}, {"agree", overlap}};
  }
  // Whether the stages' controls certify what it rests on.
  bool certified = true;
  for (const auto& run : runs_)
    certified = certified && !analysis::not_certified(run.value("certification", std::string()));
  r["certified"] = certified;
  print_recommendation(std::cout, uuid_, r);
  try {
    storage::Database db(options_.run.db_path);
    db.store_tuning({uuid_, now_iso8601(), m.name(), r});
  } catch (const storage::StorageError& e) {
    std::cerr << "tunebench: error: " << e.what() << "\n";
    return 1;
  }
  std::cout << fmt::format("stored as tuning {} in {} ({:.0f} s, {} runs)\n", uuid_,
                           options_.run.db_path, elapsed(), runs_.size());
  return 0;
}

int Tuner::operator()() {
  caps_ = host::capabilities();
  // Every stage measures from what a program that sets nothing runs: where that differs from
  // tunebench's base settings (LibTorch's own thread count where it is not all cores), every arm
  // runs it unless it sets that knob.
  const json base = knobs::base_settings(caps_), unset = knobs::unset_settings(caps_);
  for (const auto& [id, value] : unset.items()) {
    if (base.value(id, json()) != value) options_.run.model.defaults[id] = value;
  }
  if (!options_.run.model.defaults.empty()) {
    json base_part;
    for (const auto& [id, value] : options_.run.model.defaults.items()) base_part[id] = base[id];
    say(fmt::format(
        "a program that sets nothing runs {} here (this build's LibTorch), not {}: every stage "
        "measures from it",
        said(options_.run.model.defaults), said(base_part)));
  }
  if (int code = screen(); code != 0) return code;
  if (int code = ladder(); code != 0) return code;
  if (int code = measure_final(); code != 0) return code;
  return recommend();
}

}  // namespace

StepCall step_call(const stats::Effect& e, double left_s, double round_s) {
  switch (e.verdict) {
    case stats::Verdict::helps:
      return StepCall::keep;
    case stats::Verdict::hurts:
    case stats::Verdict::equivalent:
      return StepCall::drop;
    default:
      return left_s >= round_s ? StepCall::sample_on : StepCall::undecided;
  }
}

std::vector<Candidate> helping_knobs(const analysis::RunReport& screen, const knobs::HostCaps& host,
                                     std::vector<LeftOut>* left_out) {
  std::vector<Candidate> out;
  for (const auto& x : screen.experiments) {
    const knobs::Knob* k = knobs::find(x.knob);
    if (k == nullptr || x.slowdown > 0 || x.name.rfind("aa.", 0) == 0) continue;
    const stats::Effect* e = time_effect(screen, x.name);
    if (e == nullptr || e->verdict != stats::Verdict::helps) continue;
    std::string why;
    const json on = knobs::resolve(*k, k->on, host);
    auto text = [](const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); };
    const json unset = knobs::unset_value(*k, host);
    const json off = knobs::resolve(*k, k->off, host);
    if (unset == on) {
      why = fmt::format(
          "{}={} is what a program that sets nothing runs here (the screen compared it with {})",
          k->id, text(on), text(k->off));
    } else if (unset != off) {
      // The final stage compares the combination with a program that sets nothing; this knob's
      // effect is against its OFF arm, which such a program does not run, so the comparison
      // would change more than the knob (and the correctness guard would fail on it).
      why = fmt::format(
          "its effect is against {}={}, which a program that sets nothing does not run (it runs "
          "{}): it applies to a program that already runs {}={}",
          k->id, text(off), text(unset), k->id, text(off));
    } else if (!knobs::several_processes(json{{k->id, k->on}}).empty()) {
      why =
          "several processes' summed throughput, a way to deploy the model rather than a "
          "setting of one process";
    }
    if (!why.empty()) {
      if (left_out != nullptr) left_out->push_back({k->id, stats::format_effect(*e), why});
      continue;
    }
    out.push_back({k->id, k->on, *e});
  }
  std::stable_sort(out.begin(), out.end(), [](const Candidate& a, const Candidate& b) {
    return a.effect.ratio < b.effect.ratio;
  });
  return out;
}

void print_recommendation(std::ostream& out, const std::string& uuid, const json& r) {
  out << fmt::format("tune {}: {}, {}, batch {}\n", uuid, r.value("model", std::string()),
                     r.value("mode", std::string()), r.value("batch", json()).dump());
  out << "ladder (each step against the configuration before it; cumulative: the product of the "
         "kept steps)\n";
  int n = 0;
  for (const auto& s : r.value("ladder", json::array())) {
    const bool kept = s.value("kept", false);
    out << fmt::format("  {}. {:<16} {:<40} {}{}\n", ++n, s.value("knob", std::string()),
                       s.value("text", std::string("-")),
                       kept                          ? "kept"
                       : s.value("undecided", false) ? "left out: "
                                                     : "dropped: ",
                       kept ? "  cumulative " + s["cumulative"].value("text", std::string())
                            : s.value("why", std::string()));
  }
  const json settings = r.value("settings", json::object());
  std::vector<std::string> asked;
  for (const auto& k : r.value("knobs", json::array())) asked.push_back(k.get<std::string>());
  if (!asked.empty()) {
    out << fmt::format(
        "screened only the knobs asked for (--knobs {}): a knob left out of the "
        "screen may help too\n",
        fmt::join(asked, ","));
  }
  if (settings.empty()) {
    out << fmt::format("recommended: keep the defaults: no knob {}helped alone on this host\n",
                       asked.empty() ? "" : "asked for ");
  } else {
    out << "recommended: " << said(r.value("resolved", settings)) << "\n";
    const json vs_default = r.value("vs_default", json::object());  // kept alive for the loop
    for (const auto& [metric, e] : vs_default.items())
      out << fmt::format("  {} against the defaults: {}\n", metric, e.value("text", std::string()));
    if (r.contains("ladder_against_final")) {
      const json& c = r["ladder_against_final"];
      const bool agree = c.value("agree", true);
      out << fmt::format(
          "  the ladder's product {} {} the final measurement {}{}\n",
          c["product"].value("text", std::string()), agree ? "agrees with" : "DISAGREES with",
          c["final"].value("text", std::string()),
          agree ? ""
                : fmt::format(": the kept steps ({}) do not chain as their product says; together "
                              "they interact (one step's gain taken by another's), or the host "
                              "moved between the stages: act on the final figure",
                              said(settings)));
    }
    const json vs_best_single =
        r.value("vs_best_single", json::object());  // kept alive for the loop
    for (const auto& [metric, e] : vs_best_single.items()) {
      out << fmt::format("  {} against {} alone: {}\n", metric,
                         said(r.value("best_single", json::object())),
                         e.value("text", std::string()));
    }
    const json apply = r.value("apply", json::object());
    out << "how to apply it:\n";
    if (!apply.value("launch", std::string()).empty())
      out << "  launch: " << apply["launch"].get<std::string>() << "\n";
    for (const auto& line : apply.value("python", json::array()))
      out << "  Python: " << line.get<std::string>() << "\n";
    for (const auto& line : apply.value("cpp", json::array()))
      out << "  C++:    " << line.get<std::string>() << "\n";
  }
  // Whether the stages' controls certify what it rests on, and what to do when they do not.
  std::vector<std::string> uncertified;
  for (const auto& run : r.value("runs", json::array())) {
    const std::string c = run.value("certification", std::string());
    if (c.empty()) continue;  // a stage without controls
    out << fmt::format("  {} stage: {}\n", run.value("stage", std::string()),
                       analysis::certification_line(c));
    if (analysis::not_certified(c)) uncertified.push_back(run.value("stage", std::string()));
  }
  if (!uncertified.empty()) {
    out << fmt::format(
        "the recommendation is NOT CERTIFIED: the controls of its {} stage did not hold, so the "
        "host moved the figures above by more than their intervals say; run tune again with "
        "nothing else on the machine (/proc/pressure/cpu near 0), or with a larger --budget\n",
        fmt::join(uncertified, " and "));
  }
}

int tune(const TuneOptions& options) { return Tuner(options)(); }

}  // namespace tunebench::orchestrator

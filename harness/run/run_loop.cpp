// The run loop and sampling on (run/run_loop.h).
#include "run/run_loop.h"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "analysis/detect.h"
#include "analysis/effects.h"
#include "core/liveness.h"
#include "core/multiproc.h"
#include "knobs/knobs.h"
#include "run/allocator.h"
#include "run/sizing.h"
#include "run/trial_unit.h"
#include "run/worker_result.h"

namespace tunebench::orchestrator {

namespace {

std::string duration(double s) {
  if (s < 60) return fmt::format("{:.0f}s", s);
  return fmt::format("{}m{:02d}s", int(s) / 60, int(s) % 60);
}

// A short time as people read it: "2.86 ms", "0.52 s", "3.9 s".
std::string seconds_text(double s) {
  return s < 0.1 ? fmt::format("{:.3g} ms", 1e3 * s) : fmt::format("{:.2g} s", s);
}

// Set by SIGINT and SIGTERM once execute has installed on_signal: every worker is then stopped.
volatile sig_atomic_t g_interrupted = 0;
void on_signal(int) { g_interrupted = 1; }

}  // namespace

SamplingMap sampling_of(const plan::Plan& plan) {
  SamplingMap out;
  for (const auto& [x, not_applicable] : plan.experiments) {
    if (x.design != "processes")
      out[x.name] = {x.budget_s, x.max_workers,          x.target,       x.confidence,
                     x.decide,   x.heap_offset_per_pair, x.is_control(), x.worker_s};
  }
  return out;
}

RunLoop::RunLoop(storage::Database& db, std::string run_uuid, const RunOptions& options, int gpus,
                 std::map<std::string, double> guard_reference, int failed, int invalid,
                 SamplingMap sampling)
    : db_(db),
      run_uuid_(std::move(run_uuid)),
      options_(options),
      tty_(isatty(STDERR_FILENO) && !options.quiet),
      launch_{options.worker_executable, multiproc::allowed_cpus(), gpus, std::nullopt},
      guard_reference_(std::move(guard_reference)),
      failed_(failed),
      invalid_(invalid),
      sampling_(std::move(sampling)) {
  launch_.slurm = options.allocation;
  if (launch_.resolved_exe == "/proc/self/exe") {
    char path[4096];
    const ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
    if (n > 0) launch_.resolved_exe.assign(path, size_t(n));
  }
  // Linked now, while the file is still this very binary (a rebuild may replace it later).
  launch_.links->path_for(launch_.resolved_exe);
  restore();
}

void RunLoop::restore() {
  const nlohmann::json was = db_.run(run_uuid_).sampling;
  if (was.is_object() && was.contains("elapsed_s")) {
    spent_before_ = was.value("elapsed_s", 0.0);
    added_ = was.value("workers_added", 0);
    if (was.contains("sized") && was["sized"].is_object()) sized_ = was["sized"];
    if (was.contains("plan_fit") && was["plan_fit"].is_object()) plan_fit_ = was["plan_fit"];
    if (was.contains("paired") && was["paired"].is_array()) stops_ = was["paired"];
    if (was.contains("seconds") && was["seconds"].is_object()) {
      for (const auto& [experiment, s] : was["seconds"].items())
        experiment_seconds_[experiment] = s.get<double>();
    }
  } else {
    // Stored before the run kept its clock: each worker's seconds, once per worker (both arms of
    // a paired worker hold the same figure).
    std::map<std::pair<std::string, int>, double> workers;
    for (const auto& t : db_.trials(run_uuid_)) {
      const auto& e = t.result.evidence;
      if (e.contains("worker_wall_seconds") && e["worker_wall_seconds"].is_number())
        workers[{t.spec.experiment, t.spec.process_index}] = e["worker_wall_seconds"];
    }
    for (const auto& [key, s] : workers) {
      experiment_seconds_[key.first] += s;
      spent_before_ += s;
    }
  }
  start_ = Clock::now() - std::chrono::duration_cast<Clock::duration>(
                              std::chrono::duration<double>(spent_before_));
}

// Every arm of an experiment computes what its first trial did (within the knob's tolerance).
void RunLoop::guard(const TrialSpec& t, TrialResult& r) {
  if (r.status != "ok") return;
  auto [it, first] = guard_reference_.emplace(t.experiment, r.check_value);
  const double tolerance = knobs::guard_tolerance(t.knob, t.settings);
  const double diff = std::abs(r.check_value - it->second) / std::max(std::abs(it->second), 1e-12);
  if (!first && diff > tolerance) {
    r.status = "invalid";
    r.error = fmt::format(
        "correctness guard: this arm computes {:.6g}, the experiment's first trial "
        "{:.6g} (relative difference {:.2g} > tolerance {:.2g})",
        r.check_value, it->second, diff, tolerance);
  }
}

void RunLoop::report(const TrialSpec& t, const TrialResult& r, const std::string& position) const {
  if (!tty_ && !options_.quiet) {
    const double median_ms =
        r.items_per_second > 0 ? 1e3 * double(t.batch) / r.items_per_second : 0;
    say(fmt::format("trial {} {} [{}] {}{}", position, t.experiment, t.arm, r.status,
                    r.status == "ok" ? fmt::format(": median {:.3g} ms/iteration", median_ms)
                                     : ": " + r.error));
  } else if (r.status != "ok") {
    say(fmt::format("trial {} {} [{}] {}: {}", position, t.experiment, t.arm, r.status, r.error));
  }
}

// Runs one unit — a trial alone (one process, or several at once for multi_instance and the
// distributed knobs), or a paired trial's two arms in one process — then guards and stores it:
// both arms of a paired trial together or neither (a resumed run reruns both). False when the
// run must stop: interrupted (nothing of the unit stored) or the database refused it.
bool RunLoop::run_unit(const std::vector<TrialSpec>& unit,
                       const std::vector<std::string>& positions) {
  const TrialSpec& t = unit.front();
  std::vector<TrialResult> results;
  bool interrupted = false;
  const auto began = Clock::now();
  if (unit.size() == 2) {
    const auto rules = sampling_.find(t.experiment);
    const bool shared_heap = rules == sampling_.end() || rules->second.shared_heap_offset;
    results = t.pairing.resident ? run_resident(unit[0], unit[1], launch_, shared_heap,
                                                &g_interrupted, interrupted)
                                 : run_pair(unit[0], unit[1], launch_, &g_interrupted, interrupted);
  } else if (t.pairing.paired()) {
    results.push_back(
        failed_result({},
                      "a paired trial needs both arms, and the other arm of this worker is missing "
                      "(rerun the experiment)"));
  } else {
    results.push_back(run_alone(t, launch_, &g_interrupted, interrupted));
  }
  // A trial cut short by SIGINT/SIGTERM is not a result: it is not stored, and the run is
  // marked interrupted with every finished trial kept.
  if (interrupted) return false;
  const double seconds = std::chrono::duration<double>(Clock::now() - began).count();
  experiment_seconds_[t.experiment] += seconds;
  std::vector<std::pair<TrialSpec, TrialResult>> stored;
  for (size_t u = 0; u < unit.size(); ++u) {
    // The machine time of the unit's worker process(es), start-up included: what a study of the
    // cost of settling an effect adds up (both arms of a paired worker hold the same figure).
    results[u].evidence["worker_wall_seconds"] = seconds;
    guard(unit[u], results[u]);
    if (results[u].status == "failed") ++failed_;
    if (results[u].status == "invalid") ++invalid_;
    stored.emplace_back(unit[u], results[u]);
  }
  try {
    db_.store_trials(run_uuid_, stored);
  } catch (const storage::StorageError& e) {
    // The store's message names the trial and the run; where the device is full it also says
    // to free space and how to resume.
    std::cerr << "\ntunebench: error: " << e.what() << "\n";
    if (!e.no_space()) {
      std::cerr << "the run stopped; its stored trials are kept; resume with: "
                << liveness::resume_command(run_uuid_, options_.db_path) << "\n";
    }
    failed_to_store_ = true;
    return false;
  }
  for (size_t u = 0; u < unit.size(); ++u) report(unit[u], results[u], positions[u]);
  store_sampling(false);  // the clock and the spending, for a resume
  return true;
}

void RunLoop::size_unit(std::vector<TrialSpec>& unit) {
  const TrialSpec& t = unit.front();
  const auto rules = sampling_.find(t.experiment);
  if (unit.size() != 2 || !t.pairing.paired() || t.process_index == 0 || rules == sampling_.end() ||
      !(rules->second.worker_s > 0)) {
    return;
  }
  const sizing::Shape given{t.pairing.blocks, t.pairing.block_samples, t.iterations};
  auto shape_json = [](const sizing::Shape& s) {
    return nlohmann::json{
        {"blocks", s.blocks}, {"block_samples", s.block_samples}, {"iterations", s.iterations}};
  };
  const auto stored = db_.trials(run_uuid_, t.experiment);
  if (!sized_.contains(t.experiment)) {
    nlohmann::json record = {{"worker_s", rules->second.worker_s}, {"given", shape_json(given)}};
    const auto step = sizing::first_worker_step(stored);
    if (!step) {
      record["why"] = "its first worker has no ok arm: the suite's shape kept";
      say(fmt::format("{}: its first worker has no ok arm to size from: the suite's shape kept",
                      t.experiment));
    } else {
      // One step of each arm a turn while no carry-over between the arms shows; the suite's
      // samples a block, its first dropped, where it does.
      const sizing::Shape one = sizing::one_step(given, *step, rules->second.worker_s);
      const sizing::Shape guarded = sizing::size(given, *step, rules->second.worker_s);
      record["step_s"] = *step;
      record["sized"] = shape_json(one);
      record["guarded"] = shape_json(guarded);
      say(fmt::format(
          "{}: a step takes {} (its first worker): from its second worker on, {} blocks of one "
          "sample of {} step{} while no carry-over between the arms shows (a worker's blocks "
          "about {}), else {} blocks of {} (the suite's {} of {} of {}: {})",
          t.experiment, seconds_text(*step), one.blocks, one.iterations,
          one.iterations > 1 ? "s" : "", seconds_text(sizing::worker_seconds(one, *step)),
          guarded.blocks, guarded.block_samples, given.blocks, given.block_samples,
          given.iterations, seconds_text(sizing::worker_seconds(given, *step))));
    }
    sized_[t.experiment] = record;
  }
  nlohmann::json& record = sized_[t.experiment];
  if (!record.contains("sized")) return;
  if (!record.contains("carry_over_from")) {
    const stats::paired::CarryOver carry = analysis::paired_carry_over(stored, t.experiment);
    if (carry.shows) {
      record["carry_over_from"] = t.process_index;
      record["carry_over"] = carry.text;
      say(
          fmt::format("{}: {} after {} workers: from worker {} on, blocks of {} samples, the "
                      "first of each dropped",
                      t.experiment, carry.text, t.process_index, t.process_index + 1,
                      record["guarded"]["block_samples"].get<int>()));
    }
  }
  // Resident pairs keep the suite's samples a block: each block there costs a pipe round trip
  // and a wait for the arm's threads to go idle (at least one 10-ms window), which one-step
  // blocks would pay every step.
  const bool guarded = record.contains("carry_over_from") || t.pairing.resident;
  const nlohmann::json& shape = record[guarded ? "guarded" : "sized"];
  for (TrialSpec& arm : unit) {
    arm.pairing.blocks = shape["blocks"];
    arm.pairing.block_samples = shape["block_samples"];
    arm.iterations = shape["iterations"];
    arm.samples = arm.pairing.blocks / 2 * arm.pairing.block_samples;
  }
}

// Sampling on ("stop on precision"): after a paired experiment's planned workers, two
// more workers at a time (one OFF-first, one ON-first, so the order stays balanced) until its
// interval is within its target, ±2 % by default (stats::paired::settled: the width only, never the
// estimate), or its workers have taken its budget_s, or it has max_workers, or the run's
// --budget is spent. With decide_pct (stage 2 of the check), it also stops at the first of its
// fixed looks whose interval decides, every interval then at the look level
// (detect::decision_looks), and settles only from its first look on; resident pairs settle only
// from detect::kResidentSettleFrom workers on (detect::may_settle). What
// stops it is said; an experiment left wider than the target is stored as "not precise enough
// (±x %)" unless its interval excludes 1. `off` and `on` are the experiment's last planned worker:
// the new workers are copies of it. False when the run must stop (as run_unit).
RunLoop::Now RunLoop::now(const TrialSpec& off, const stats::paired::Options& target) {
  Now at;
  const auto stored = db_.trials(run_uuid_, off.experiment);
  at.effect = analysis::paired_time_estimate(stored, off.experiment, target);
  for (const auto& t : stored) at.workers = std::max(at.workers, t.spec.process_index + 1);
  at.seconds = experiment_seconds_[off.experiment];
  // Fewer workers with kept pairs than an interval needs: no width to speak of yet.
  at.has_interval = std::isfinite(at.effect.lo) && std::isfinite(at.effect.hi) && at.effect.lo > 0;
  at.width = at.has_interval ? fmt::format("±{:.1f}%", 100 * at.effect.half_width) : "no interval";
  if (at.has_interval && target.confidence != 0.95) {
    at.width += fmt::format(" ({:g} % interval)", 100 * target.confidence);
  }
  return at;
}

void RunLoop::carry_on(const std::vector<std::pair<TrialSpec, TrialSpec>>& finished) {
  for (const auto& [off, on] : finished) {
    const auto rules = sampling_.find(off.experiment);
    if (rules == sampling_.end()) continue;
    std::vector<TrialSpec> unit{off, on};
    size_unit(unit);
    if (rules->second.control) {
      controls_.emplace_back(unit[0], unit[1]);
    } else if (options_.budget_s > 0 && rules->second.decide <= 0) {
      waiting_.emplace_back(unit[0], unit[1]);
    }
  }
}

void RunLoop::note_stop(const std::string& experiment, const Now& at, const std::string& stop) {
  // An experiment sampled on again (a resumed run given more budget) keeps its latest stop only.
  for (auto it = stops_.begin(); it != stops_.end(); ++it) {
    if ((*it)["experiment"] == experiment) {
      stops_.erase(it);
      break;
    }
  }
  stops_.push_back({{"experiment", experiment},
                    {"workers", at.workers},
                    {"seconds", std::round(at.seconds * 10) / 10},
                    {"half_width", at.has_interval ? nlohmann::json(at.effect.half_width)
                                                   : nlohmann::json(nullptr)},
                    {"stop", stop}});
  say(fmt::format("{}: {} at {} after {} workers, {:.0f}s", experiment, stop, at.width, at.workers,
                  at.seconds));
}

// Two more workers of a paired experiment: one OFF-first, one ON-first, so the order stays
// balanced; copies of `off` and `on`, its last planned worker's arms.
bool RunLoop::add_two_workers(const TrialSpec& off, const TrialSpec& on, int workers) {
  for (int k = 0; k < 2 && !g_interrupted; ++k) {
    std::vector<TrialSpec> unit{off, on};
    for (TrialSpec& t : unit) {
      t.process_index = workers + k;
      t.pairing.on_first = t.process_index % 2 == 1;
      t.sequence = next_sequence_++;
    }
    ++added_;
    if (!run_unit(unit, {fmt::format("+{}", 2 * added_ - 1), fmt::format("+{}", 2 * added_)}))
      return false;
  }
  return !g_interrupted;
}

// Sampling on ("stop on precision"): after a paired experiment's planned workers, two
// more workers at a time until its interval is within its target, ±2 % by default
// (stats::paired::settled: the width only, never the estimate), or its workers have taken its
// budget_s, or it has max_workers, or the run's --budget is spent (never for a control). With
// decide_pct (stage 2 of the check), it also stops at the first of its fixed looks whose
// interval decides, every interval then at the look level (detect::decision_looks), and settles
// only from its first look on; resident pairs settle only from detect::kResidentSettleFrom
// workers on (detect::may_settle). What stops it is said; an experiment left wider than the
// target is stored as "not precise enough (±x %)" unless its interval excludes 1. `off` and `on`
// are the experiment's last planned worker: the new workers are copies of it. False when the run
// must stop (as run_unit).
bool RunLoop::sample_on(const TrialSpec& off, const TrialSpec& on) {
  const auto found = sampling_.find(off.experiment);
  if (found == sampling_.end()) return true;
  const Sampling& limits = found->second;
  std::optional<detect::Looks> looks;
  if (limits.decide > 0) looks = detect::decision_looks(limits.confidence, limits.max_workers);
  int looked_at = 0;  // workers at the last pass: a look is a count in looks->at passed since
  for (;;) {
    stats::paired::Options target;
    target.target = limits.target;
    target.confidence = looks ? looks->confidence : limits.confidence;
    const Now at = now(off, target);
    const stats::paired::Effect& e = at.effect;
    const int workers = at.workers;
    std::string stop;
    const bool look = looks && detect::at_look(*looks, looked_at, workers);
    looked_at = workers;
    const std::string answer =
        look ? detect::decide(e.ratio, e.lo, e.hi, limits.decide, target.confidence).status : "";
    const bool narrow = stats::paired::settled(e, target);
    const bool settled = narrow && detect::may_settle(looks, workers, off.pairing.resident);
    if (!settled && look && answer != "unknown") {
      stop = fmt::format("decided at a look ({}, threshold {:g} %)", answer, 100 * limits.decide);
    } else if (!settled && e.workers == 0 && e.dropped == 0) {
      // (Every pair dropped as contaminated is a busy host: later workers may find it quiet.)
      stop = "not sampled on: no worker has both arms ok";
    } else {
      stop =
          allocation::width_stop(settled, limits.budget_s, at.seconds, workers, limits.max_workers);
    }
    if (stop.empty() && !limits.control && options_.budget_s > 0 &&
        elapsed() >= options_.budget_s) {
      stop = fmt::format("not settled: the run's --budget of {:g}s is spent", options_.budget_s);
    }
    if (!stop.empty()) {
      note_stop(off.experiment, at, stop);
      return true;
    }
    const std::string early = narrow
                                  ? fmt::format(" (settles from {} workers on)",
                                                detect::settles_from(looks, off.pairing.resident))
                                  : "";
    say(fmt::format("{}: {}{} after {} workers ({:.0f}s of {:g}s): two more workers",
                    off.experiment, at.width, early, workers, at.seconds, limits.budget_s));
    if (!add_two_workers(off, on, workers)) return false;
  }
}

// The run's budget, once every planned trial has run: two workers at a time to the waiting
// experiment the allocator chooses (run/allocator.h): the open verdict most likely to be decided
// per second, until the budget cannot pay for two more workers or every verdict is decided within
// its target. Each verdict is looked at only at its looks (allocation::looks_of), and keeps what
// its last look said in between. Where the controls run again at the end, the time they took at
// the start is kept for them. False when the run must stop (as run_unit).
double RunLoop::controls_reserve() const {
  double reserve = 0;
  if (options_.controls_again_after_s <= options_.budget_s) {
    for (const auto& [off, on] : controls_) {
      const auto spent = experiment_seconds_.find(off.experiment);
      if (spent != experiment_seconds_.end()) reserve += spent->second;
    }
  }
  return reserve;
}

bool RunLoop::spend_budget() {
  planned_done_at_ = elapsed();
  const double reserve = controls_reserve();
  auto seconds_left = [&] { return options_.budget_s - elapsed() - reserve; };
  say(fmt::format(
      "every planned trial ran in {}; {:.0f}s of the run's budget of {:g}s left for the {} paired "
      "experiments{}, spent where a verdict is still open",
      duration(planned_done_at_), std::max(seconds_left(), 0.0), options_.budget_s, waiting_.size(),
      reserve > 0 ? fmt::format(" ({:.0f}s kept for the controls at the end)", reserve) : ""));
  std::vector<bool> done(waiting_.size(), false);
  // By experiment: the worker count of its last look, and what that look said.
  std::map<std::string, allocation::Standing> looked;
  for (;;) {
    std::vector<allocation::Standing> standings;
    std::vector<Now> nows;
    for (const auto& [off, on] : waiting_) {
      const Sampling& limits = sampling_.at(off.experiment);
      stats::paired::Options target;
      target.target = limits.target;
      target.confidence = limits.confidence;
      nows.push_back(now(off, target));
      const Now& at = nows.back();
      allocation::Standing s;
      s.experiment = off.experiment;
      s.workers = at.workers;
      s.planned = off.process_index + 1;
      s.most_workers = limits.max_workers;
      s.settles_from = detect::settles_from(std::nullopt, off.pairing.resident);
      s.seconds = at.seconds;
      // Without an interval (every pair dropped as contaminated, too few workers) nothing is
      // decided: no estimate, no spread (a ratio of 1 assumed here once read as "no effect").
      s.half_width = at.has_interval ? at.effect.half_width : NAN;
      s.log_sd = at.has_interval ? at.effect.between_worker_sd : NAN;
      s.log_ratio = at.has_interval ? std::log(at.effect.ratio) : NAN;
      s.target = limits.target;
      s.equivalence = target.equivalence;
      s.confidence = limits.confidence;
      s.settled = stats::paired::settled(at.effect, target) &&
                  detect::may_settle(std::nullopt, at.workers, off.pairing.resident);
      auto last = looked.find(off.experiment);
      const int before = last == looked.end() ? -1 : last->second.workers;
      if (allocation::passed_look(allocation::looks_of(s.planned, s.most_workers, s.confidence),
                                  before, s.workers)) {
        allocation::look(s);
        looked[off.experiment] = s;
      } else if (last != looked.end()) {
        s.decided = last->second.decided;
        s.verdict = last->second.verdict;
      }
      standings.push_back(s);
    }
    const allocation::Decision d = allocation::decide(standings, done, seconds_left());
    for (const auto& [i, why] : d.stopped) {
      done[i] = true;
      note_stop(waiting_[i].first.experiment, nows[i], why);
    }
    if (!d.next) return true;
    const auto& [off, on] = waiting_[*d.next];
    say(fmt::format("{}: {} {} after {} workers ({:.0f}s), {:.0f}s of the run's budget left: "
                    "two more workers",
                    off.experiment, nows[*d.next].effect.text, nows[*d.next].width,
                    nows[*d.next].workers, nows[*d.next].seconds, std::max(seconds_left(), 0.0)) +
        " (" + d.why + ")");
    if (!add_two_workers(off, on, nows[*d.next].workers)) return false;
  }
}

bool RunLoop::controls_at_end() {
  const double began = elapsed();
  say(fmt::format("the run has taken {}: its {} control{} once more, sampling on as at the start",
                  duration(began), controls_.size(), controls_.size() == 1 ? "" : "s"));
  for (const auto& [off, on] : controls_) {
    const Sampling& limits = sampling_.at(off.experiment);
    stats::paired::Options target;
    target.target = limits.target;
    target.confidence = limits.confidence;
    const int first = now(off, target).workers;
    const int planned = off.process_index + 1;
    const double spent_before = experiment_seconds_[off.experiment];
    // The end's workers alone, as a control's at the start: its planned workers, then two more
    // at a time until settled, or its own budget_s or max_workers (counted from the end's first
    // worker) is spent. Four workers make a ±5-7 % interval on the nightly's ResNet-50, too wide
    // to detect a 3 % slowdown.
    stats::paired::Effect e;
    int workers = 0;  // the end's, run so far
    std::string stop;
    for (;;) {
      if (workers >= planned) {
        std::vector<storage::Database::StoredTrial> end;
        for (auto& t : db_.trials(run_uuid_, off.experiment))
          if (t.spec.process_index >= first) end.push_back(std::move(t));
        e = analysis::paired_time_estimate(end, off.experiment, target);
        stop = allocation::width_stop(stats::paired::settled(e, target), limits.budget_s,
                                      experiment_seconds_[off.experiment] - spent_before, workers,
                                      limits.max_workers);
        if (!stop.empty()) break;
      }
      if (!add_two_workers(off, on, first + workers)) return false;
      workers += 2;
    }
    const bool interval = std::isfinite(e.lo) && std::isfinite(e.hi) && e.lo > 0;
    const bool aa = off.knob == "aa";
    const double half_width = interval ? std::sqrt(e.hi / e.lo) - 1 : 0;
    // Judged as the start's are (analysis/effects.h, certify): an A/A covering 1 within ±2 %, a
    // positive control excluding 1.
    std::string verdict = "no interval";
    if (interval && aa) {
      verdict =
          !(e.lo <= 1 && 1 <= e.hi) ? "shows an effect: the host was noisy"
          : half_width > analysis::kCertifiedWidth
              ? fmt::format("holds 1 but is wider than ±{:g}%", 100 * analysis::kCertifiedWidth)
              : "holds 1";
    } else if (interval) {
      verdict = e.lo > 1 ? "detected" : "missed";
    }
    const bool holds = verdict == "holds 1" || verdict == "detected";
    controls_at_end_.push_back(
        {{"experiment", off.experiment},
         {"workers", e.workers},
         {"from_worker", first},
         {"after_s", std::round(began)},
         {"seconds", std::round((experiment_seconds_[off.experiment] - spent_before) * 10) / 10},
         {"stop", stop},
         {"ratio", interval ? nlohmann::json(e.ratio) : nlohmann::json(nullptr)},
         {"lo", interval ? nlohmann::json(e.lo) : nlohmann::json(nullptr)},
         {"hi", interval ? nlohmann::json(e.hi) : nlohmann::json(nullptr)},
         {"holds", holds},
         {"verdict", verdict}});
    say(fmt::format("{} at the end: {} ({} workers from worker {} on, {}: {})", off.experiment,
                    interval ? fmt::format("{:.3f}x [{:.3f}, {:.3f}] ±{:.1f}% {}", e.ratio, e.lo,
                                           e.hi, 100 * half_width, verdict)
                             : verdict,
                    e.workers, first + 1,
                    duration(experiment_seconds_[off.experiment] - spent_before), stop));
  }
  return !g_interrupted;
}

nlohmann::json RunLoop::sampling_record() const {
  nlohmann::json seconds = nlohmann::json::object();
  for (const auto& [experiment, s] : experiment_seconds_)
    seconds[experiment] = std::round(s * 10) / 10;
  return {
      {"budget_s", options_.budget_s > 0 ? nlohmann::json(options_.budget_s) : nlohmann::json()},
      {"controls_again_after_s", options_.controls_again_after_s},
      {"planned_done_s",
       planned_done_at_ >= 0 ? nlohmann::json(std::round(planned_done_at_)) : nlohmann::json()},
      {"elapsed_s", std::round(elapsed() * 10) / 10},
      {"planned_expected_s",
       planned_expected_s_ > 0 ? nlohmann::json(planned_expected_s_) : nlohmann::json()},
      {"fit_plan", options_.fit_plan},
      {"plan_fit", plan_fit_},
      {"resumed_after_s", spent_before_ > 0 ? nlohmann::json(spent_before_) : nlohmann::json()},
      {"workers_added", added_},
      {"paired", stops_},
      {"sized", sized_},
      {"controls_at_end", controls_at_end_},
      {"seconds", seconds}};
}

void RunLoop::store_sampling(bool final) {
  if (final && !stops_.empty()) {
    int settled = 0;
    for (const auto& s : stops_) {
      const std::string stop = s["stop"];
      settled += stop.rfind("settled", 0) == 0 || stop.rfind("decided: ", 0) == 0;
    }
    say(fmt::format("sampling: {} of {} paired experiments {}, {} workers added{}", settled,
                    stops_.size(), options_.budget_s > 0 ? "decided" : "settled", added_,
                    options_.budget_s > 0 ? fmt::format(", {} of the run's budget of {:g}s spent",
                                                        duration(elapsed()), options_.budget_s)
                                          : ""));
  }
  try {
    db_.store_sampling(run_uuid_, sampling_record());
  } catch (const storage::StorageError& e) {
    if (final) std::cerr << "tunebench: warning: " << e.what() << " (every trial is stored)\n";
  }
}

void RunLoop::foresee_plan(size_t done, std::vector<TrialSpec>& trials) {
  if (foreseen_ || options_.budget_s <= 0 || first_planned_.trial < 0) return;
  const size_t planned = trials.size();
  const double ran = double(done) - first_planned_.trial;
  const double took = elapsed() - first_planned_.at;
  // Once a tenth of the rest has run (at least 4 trials), its pace says what the rest will take.
  if (ran < std::max(4.0, 0.1 * (double(planned) - first_planned_.trial))) return;
  foreseen_ = true;
  const double expected = elapsed() + took / ran * double(planned - done);
  planned_expected_s_ = std::round(expected);
  if (expected <= options_.budget_s) return;
  const std::string pace = fmt::format(
      "the planned trials will take about {} at this pace ({} of {} in {}), beyond the "
      "run's budget of {:g}s",
      duration(expected), size_t(ran), planned - size_t(first_planned_.trial), duration(took),
      options_.budget_s);
  if (options_.fit_plan) {
    say(pace + ": --fit-plan runs fewer planned workers");
    fit_plan(done, trials, expected);
    return;
  }
  say(pace +
      ": every planned trial runs whatever the budget, and nothing is left for the open "
      "verdicts (--fit-plan runs fewer planned workers; a larger --budget leaves some)");
}

void RunLoop::fit_plan(size_t done, std::vector<TrialSpec>& trials, double expected) {
  const double reserve = controls_reserve();
  const double fraction =
      (options_.budget_s - elapsed() - reserve) / std::max(expected - elapsed(), 1e-9);
  std::map<std::string, int> planned, started;
  for (size_t i = 0; i < trials.size(); ++i) {
    const auto& t = trials[i];
    const auto rules = sampling_.find(t.experiment);
    if (rules != sampling_.end() && rules->second.control) continue;
    planned[t.experiment] = std::max(planned[t.experiment], t.process_index + 1);
    if (i < done) started[t.experiment] = std::max(started[t.experiment], t.process_index + 1);
  }
  std::string cut;
  for (const auto& [experiment, workers] : planned) {
    const int keep = allocation::fitted_workers(
        workers, started.count(experiment) ? started[experiment] : 0, fraction);
    if (keep >= workers) continue;
    plan_fit_[experiment] = keep;
    cut += fmt::format("{}{} {} of {}", cut.empty() ? "" : ", ", experiment, keep, workers);
  }
  const auto end = std::remove_if(trials.begin() + long(done), trials.end(), [&](const auto& t) {
    return plan_fit_.contains(t.experiment) && t.process_index >= plan_fit_[t.experiment];
  });
  const size_t removed = size_t(trials.end() - end);
  trials.erase(end, trials.end());
  say(
      fmt::format("--fit-plan: {} planned trials left out so that the plan fits the budget ({:.0f} "
                  "% of the rest fits; every experiment keeps at least {} workers): {}",
                  removed, 100 * std::clamp(fraction, 0.0, 1.0), allocation::kFitPlanFloor,
                  cut.empty() ? "none could be cut" : cut));
  store_sampling(false);
}

int RunLoop::execute(const std::vector<TrialSpec>& plan) {
  std::vector<TrialSpec> trials = plan;  // --fit-plan may cut it
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  signal(SIGPIPE, SIG_IGN);
  // Workers added beyond the plan take sequence numbers after every trial planned or stored (a
  // resumed run may hold workers an earlier sampling added).
  for (const auto& t : trials) next_sequence_ = std::max(next_sequence_, t.sequence + 1);
  for (const auto& t : db_.trials(run_uuid_))
    next_sequence_ = std::max(next_sequence_, t.spec.sequence + 1);
  store_sampling(false);  // the budget and the clock, before anything runs
  bool go_on = true;
  for (size_t i = 0; i < trials.size() && go_on && !g_interrupted; ++i) {
    const TrialSpec& t = trials[i];
    if (tty_) {
      const double eta = i ? elapsed() / double(i) * double(trials.size() - i) : 0;
      std::cerr << fmt::format("\r\033[Ktrial {}/{} {} [{}] elapsed {} eta {}", i + 1,
                               trials.size(), t.experiment, t.arm, duration(elapsed()),
                               i ? duration(eta) : "?")
                << std::flush;
    }
    // A paired trial is this arm and the next, in one process.
    std::vector<TrialSpec> unit{t};
    const TrialSpec* next = i + 1 < trials.size() ? &trials[i + 1] : nullptr;
    if (t.pairing.paired() && t.arm == "off" && next && next->arm == "on" &&
        next->experiment == t.experiment && next->process_index == t.process_index &&
        next->pairing == t.pairing) {
      unit.push_back(*next);
    }
    if (unit.size() == 2) size_unit(unit);
    std::vector<std::string> positions;
    for (size_t u = 0; u < unit.size(); ++u)
      positions.push_back(fmt::format("{}/{}", i + u + 1, trials.size()));
    const bool control = sampling_.count(t.experiment) && sampling_.at(t.experiment).control;
    if (!control && first_planned_.trial < 0) first_planned_ = {double(i), elapsed()};
    go_on = run_unit(unit, positions);
    i += unit.size() - 1;
    if (go_on && !control) foresee_plan(i + 1, trials);
    // The experiment's last planned worker: sample on until it is settled.
    const bool last = i + 1 == trials.size() || trials[i + 1].experiment != t.experiment;
    if (go_on && unit.size() == 2 && last) {
      const auto rules = sampling_.find(t.experiment);
      const bool waits = options_.budget_s > 0 && rules != sampling_.end() &&
                         !rules->second.control && rules->second.decide <= 0;
      if (rules != sampling_.end() && rules->second.control)
        controls_.emplace_back(unit[0], unit[1]);
      if (waits) {
        waiting_.emplace_back(unit[0], unit[1]);
      } else {
        go_on = sample_on(unit[0], unit[1]);
      }
    }
  }
  if (go_on && !g_interrupted && !waiting_.empty()) go_on = spend_budget();
  if (go_on && !g_interrupted && !controls_.empty() &&
      elapsed() >= options_.controls_again_after_s) {
    go_on = controls_at_end();
  }
  if (!failed_to_store_) store_sampling(true);
  if (failed_to_store_) {
    // Said already, with the resume command; a store that cannot take a trial (a full disk)
    // may not take this either: the run then stays "running", and its dead orchestrator makes
    // it interrupted for every later reader.
    try {
      db_.finish_run(run_uuid_, "failed", now_iso8601());
    } catch (const storage::StorageError&) {
    }
    return 2;  // a storage error, as everywhere else (cli.cpp's dispatch)
  }
  const std::string status = g_interrupted           ? "interrupted"
                             : (failed_ || invalid_) ? "completed with failures"
                                                     : "completed";
  db_.finish_run(run_uuid_, status, now_iso8601());
  if (tty_) std::cerr << "\r\033[K";
  say(fmt::format("run {} {}: {} trials{}, {} failed, {} invalid, in {}", run_uuid_, status,
                  db_.trials(run_uuid_).size(),
                  added_ ? fmt::format(" ({} workers added to settle paired effects)", added_) : "",
                  failed_, invalid_, duration(elapsed())));
  if (status == "interrupted") {
    say("resume with: tunebench run --resume " + run_uuid_.substr(0, 8) + " --db " +
        options_.db_path);
  }
  say("see: tunebench show " + run_uuid_.substr(0, 8) + " --db " + options_.db_path);
  return status == "completed" ? 0 : 1;
}

int execute_or_interrupt(RunLoop& loop, storage::Database& db, const std::string& uuid,
                         const std::vector<TrialSpec>& trials, const RunOptions& options) {
  try {
    return loop.execute(trials);
  } catch (const std::exception& e) {
    std::cerr << "\ntunebench: error: run " << uuid << " stopped: " << e.what() << "\n";
    try {
      db.finish_run(uuid, "interrupted", now_iso8601());
      std::cerr << "The trials stored so far are kept; resume with: "
                << liveness::resume_command(uuid, options.db_path) << "\n";
    } catch (const std::exception& also) {
      std::cerr << "tunebench: error: cannot mark the run interrupted either: " << also.what()
                << "\n";
    }
    return 2;
  }
}

}  // namespace tunebench::orchestrator

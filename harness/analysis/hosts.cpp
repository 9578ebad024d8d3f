#include "analysis/hosts.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/math/distributions/normal.hpp>
#include <boost/math/distributions/students_t.hpp>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

#include "analysis/run_groups.h"
#include "analysis/run_selection.h"
#include "core/hardware.h"
#include "knobs/cuda.h"
#include "knobs/knobs.h"

namespace tunebench::hosts {

using nlohmann::json;

namespace {

constexpr double kSecondsPerHour = 3600;

// `value` rounded to `digits` significant digits of `scale`, the figure's own magnitude, so that a
// figure and its interval ends print alike: 812 · 38.2 · 0.00424 · 960000.
std::string rounded(double value, double scale, int digits) {
  const int magnitude = scale == 0 ? 0 : int(std::floor(std::log10(std::abs(scale))));
  const int decimals = digits - 1 - magnitude;
  if (decimals >= 0) return fmt::format("{:.{}f}", value, decimals);
  const double step = std::pow(10.0, -decimals);
  return fmt::format("{:.0f}", std::round(value / step) * step);
}

Figure make_figure(double value, double lo, double hi) {
  Figure f{value, lo, hi, ""};
  if (!std::isfinite(value)) return f;
  const bool interval = std::isfinite(lo) && std::isfinite(hi);
  // The fewest digits (3 to 6) at which values that differ print differently.
  int digits = 3;
  for (; interval && digits < 6; ++digits) {
    const std::string l = rounded(lo, value, digits), v = rounded(value, value, digits),
                      h = rounded(hi, value, digits);
    if (!((lo < value && l == v) || (value < hi && v == h) || (lo < hi && l == h))) break;
  }
  f.text = rounded(value, value, digits) + " " +
           (interval ? "[" + rounded(lo, value, digits) + ", " + rounded(hi, value, digits) + "]"
                     : std::string("[no interval]"));
  return f;
}

// The figure times a positive constant (per core, per price): the interval scales exactly.
Figure scaled(const Figure& f, double factor) {
  return make_figure(f.value * factor, f.lo * factor, f.hi * factor);
}

// The constant divided by the figure (cost from throughput): the interval's ends swap.
Figure inverse(const Figure& f, double numerator) {
  return make_figure(numerator / f.value, numerator / f.hi, numerator / f.lo);
}

// One benchmark (experiment × arm) of one host's run.
struct Benchmark {
  std::string experiment, arm;
  std::string model, preset, mode, device;
  int64_t batch = 0;
  json settings;  // of its first trial
  stats::Groups groups;
  std::vector<double> energy;  // joules per item of the trials that measured it
  std::string energy_why;      // why a trial could not measure it
};

using Key = std::tuple<std::string, std::string, std::string, int64_t, std::string>;

Key workload_of(const Benchmark& b) { return {b.model, b.preset, b.mode, b.batch, b.device}; }

// The run's benchmarks with ok trials, in the order they first ran.
std::vector<Benchmark> benchmarks_of(const storage::Database& db, const std::string& run_uuid) {
  std::vector<Benchmark> out;
  std::map<std::pair<std::string, std::string>, size_t> index;
  for (const auto& t : db.measured_trials(run_uuid)) {
    if (t.result.status != "ok" || t.result.sample_seconds.empty()) continue;
    const std::pair key{t.spec.experiment, t.spec.arm};
    auto it = index.find(key);
    if (it == index.end()) {
      Benchmark b;
      b.experiment = t.spec.experiment;
      b.arm = t.spec.arm;
      b.model = t.spec.model.model;
      b.preset = t.spec.model.preset;
      b.mode = to_string(t.spec.mode);
      b.batch = t.spec.batch;
      b.settings = t.spec.settings;
      const auto device = b.settings.find(knobs::cuda::kDevice);
      b.device =
          device != b.settings.end() && device->is_string() ? device->get<std::string>() : "cpu";
      it = index.emplace(key, out.size()).first;
      out.push_back(std::move(b));
    }
    Benchmark& b = out[it->second];
    b.groups.push_back(t.result.sample_seconds);
    const auto energy = t.result.evidence.find("gpu_energy_joules_per_item");
    if (energy != t.result.evidence.end() && energy->is_number()) {
      b.energy.push_back(energy->get<double>());
    } else if (energy != t.result.evidence.end() && energy->is_string()) {
      b.energy_why = energy->get<std::string>();
    }
  }
  return out;
}

// The two-sided Student t quantile at `confidence` with `df` degrees of freedom (real: Welch).
double t_half(double confidence, double df) {
  return boost::math::quantile(boost::math::students_t(df), 0.5 + confidence / 2);
}

// One host's benchmark over its runs (one Benchmark per run that has it), with `floor` the
// between-run sd of ln(run median) `calibrate` stored for its machine, software and benchmark
// (NaN: none) and `floor_runs` the A/A runs it came from.
HostFigures figures_of(const std::vector<const Benchmark*>& runs, const Host& host, size_t index,
                       double floor, int floor_runs, const stats::EffectOptions& options) {
  HostFigures f;
  f.host = index;
  f.runs = int(runs.size());
  std::vector<double> logs;
  std::vector<double> energy;
  std::string energy_why;
  for (const Benchmark* b : runs) {
    f.processes += int(b->groups.size());
    for (const auto& g : b->groups) f.samples += int(g.size());
    logs.push_back(std::log(check::median_of(b->groups)));
    energy.insert(energy.end(), b->energy.begin(), b->energy.end());
    if (!b->energy_why.empty()) energy_why = b->energy_why;
  }
  const double n = double(logs.size());
  double sum = 0;
  for (double x : logs) sum += x;
  f.mean_log = sum / n;
  if (logs.size() >= 2) {
    double ss = 0;
    for (double x : logs) ss += (x - f.mean_log) * (x - f.mean_log);
    f.sd_log = std::sqrt(ss / (n - 1));
    f.df = n - 1;
    f.spread = kSpreadRuns;
  } else if (std::isfinite(floor) && floor >= 0) {
    f.sd_log = floor;
    f.df = std::max(1, floor_runs - 1);
    f.spread = kSpreadFloor;
  }
  const double center = std::exp(f.mean_log);
  double lo = NAN, hi = NAN;
  if (std::isfinite(f.sd_log)) {
    const double half =
        f.sd_log == 0 ? 0 : t_half(options.confidence, f.df) * f.sd_log / std::sqrt(n);
    lo = std::exp(f.mean_log - half);
    hi = std::exp(f.mean_log + half);
  }
  f.seconds = make_figure(center, lo, hi);
  const double batch = double(runs.front()->batch);
  f.items_per_second = make_figure(batch / center, batch / hi, batch / lo);
  if (host.cores > 0) f.per_core = scaled(f.items_per_second, 1.0 / host.cores);
  if (std::isfinite(host.price_per_hour)) {
    f.items_per_unit = scaled(f.items_per_second, kSecondsPerHour / host.price_per_hour);
    f.cost_per_million = inverse(f.items_per_second, 1e6 * host.price_per_hour / kSecondsPerHour);
  }
  if (energy.empty()) {
    f.energy_per_item.text =
        energy_why.empty() ? "not measured" : "not measured (" + energy_why + ")";
  } else {
    stats::Groups trials;
    for (double e : energy) trials.push_back({e});
    const auto e = stats::contrast({trials}, {1.0}, options);
    f.energy_per_item = make_figure(e.ratio, e.lo, e.hi);
  }
  return f;
}

// The ratio score(i) / score(j) with its interval, from the pair's throughput ratio and a factor
// per host that turns throughput into the score (1, or 3600 / price per hour).
struct Ratio {
  double ratio, lo, hi;
};
Ratio ratio_of(const Pair& p, size_t i, size_t j, const std::vector<double>& factor) {
  const double k = factor[i] / factor[j];
  if (p.faster == i) return {p.ratio.ratio * k, p.ratio.lo * k, p.ratio.hi * k};
  return {k / p.ratio.ratio, k / p.ratio.hi, k / p.ratio.lo};
}

const Pair& pair_of(const std::vector<Pair>& pairs, size_t i, size_t j) {
  for (const auto& p : pairs) {
    if ((p.faster == i && p.slower == j) || (p.faster == j && p.slower == i)) return p;
  }
  throw std::logic_error("hosts: no pair for two compared hosts");
}

std::string ratio_string(const Ratio& r) {
  stats::Effect e{r.ratio, r.lo, r.hi, 0.95, 1, stats::Verdict::no_effect, ""};
  return stats::format_ratio(e);
}

// Ranks `members` by score (throughput times factor): 1 + the hosts distinguishably better.
std::vector<Rank> rank(const std::vector<size_t>& members, const std::vector<double>& score,
                       const std::vector<double>& factor, const std::vector<Pair>& pairs,
                       const std::vector<Host>& hosts) {
  std::map<size_t, int> rank_of;
  for (size_t i : members) {
    int better = 0;
    for (size_t j : members) {
      if (j != i && ratio_of(pair_of(pairs, i, j), j, i, factor).lo > 1) ++better;
    }
    rank_of[i] = 1 + better;
  }
  std::vector<size_t> order = members;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return rank_of[a] != rank_of[b] ? rank_of[a] < rank_of[b] : score[a] > score[b];
  });
  std::vector<Rank> out;
  for (size_t i : order) {
    if (out.empty() || out.back().rank != rank_of[i]) out.push_back({rank_of[i], {}, ""});
    out.back().hosts.push_back(i);
  }
  for (size_t g = 0; g < out.size(); ++g) {
    Rank& r = out[g];
    std::string names, ties;
    for (size_t i : r.hosts) names += (names.empty() ? "" : ", ") + hosts[i].name;
    // Pairs not told apart: within the group, and with the groups below it.
    for (size_t a = 0; a < r.hosts.size(); ++a) {
      const size_t i = r.hosts[a];
      std::vector<size_t> below(r.hosts.begin() + long(a) + 1, r.hosts.end());
      for (size_t h = g + 1; h < out.size(); ++h)
        below.insert(below.end(), out[h].hosts.begin(), out[h].hosts.end());
      for (size_t j : below) {
        const Ratio ratio = ratio_of(pair_of(pairs, i, j), i, j, factor);
        if (ratio.lo > 1 || ratio.hi < 1) continue;
        ties += fmt::format("{}{} / {} {}{}", ties.empty() ? "" : "; ", hosts[i].name,
                            hosts[j].name, ratio_string(ratio),
                            std::isfinite(ratio.lo) ? "" : ", run-to-run spread unknown");
      }
    }
    r.text = fmt::format("{}{} {}", r.rank, r.hosts.size() > 1 ? "=" : "", names);
    if (!ties.empty()) r.text += " (not distinguishable: " + ties + ")";
  }
  return out;
}

std::string runs_text(double runs) {
  return fmt::format("~{:.0f} run{} per host", runs, runs == 1 ? "" : "s");
}

// Pair::line: the ratio, whether it separates the hosts, and the runs it would take.
std::string pair_line(const std::vector<Host>& hosts, const Pair& p, double target_half_width) {
  std::string line =
      fmt::format("{} / {} {} {}", hosts[p.faster].name, hosts[p.slower].name, p.text,
                  p.distinguishable ? "distinguishable" : "not distinguishable");
  if (p.spread == kSpreadUnknown) return line + ": " + kSpreadUnknownText;
  if (!p.distinguishable) {
    line += std::isfinite(p.runs_to_separate)
                ? fmt::format("; separating them at {:.3f}x takes {}", p.ratio.ratio,
                              runs_text(p.runs_to_separate))
                : "; no difference to separate";
  }
  if (std::isfinite(p.runs_for_target)) {
    line +=
        fmt::format("; ±{:g} % takes {}", 100 * target_half_width, runs_text(p.runs_for_target));
  }
  return line + fmt::format("; now {:g} run{} per host (run-to-run spread from {})", p.runs_now,
                            p.runs_now == 1 ? "" : "s",
                            p.spread == kSpreadRuns ? "the runs" : "a calibrated floor");
}

// Welch's t on the two hosts' log run medians: throughput faster / slower.
Pair pair_between(const std::vector<Host>& hosts, const Workload& w, size_t a, size_t b,
                  const Options& options) {
  const HostFigures &fa = w.hosts[a], &fb = w.hosts[b];
  Pair p;
  const bool a_faster = fa.items_per_second.value >= fb.items_per_second.value;
  const HostFigures& fast = a_faster ? fa : fb;
  const HostFigures& slow = a_faster ? fb : fa;
  p.faster = fast.host;
  p.slower = slow.host;
  // Time of the slower over time of the faster = throughput faster / slower (same batch).
  const double log_ratio = slow.mean_log - fast.mean_log;
  p.ratio = stats::Effect{std::exp(log_ratio),       NAN, NAN, options.confidence, 0,
                          stats::Verdict::no_effect, ""};
  p.runs_now = (fa.runs + fb.runs) / 2.0;
  p.samples_now = (fa.samples + fb.samples) / 2.0;
  double variance = NAN;  // of the log ratio
  if (fa.spread == kSpreadUnknown || fb.spread == kSpreadUnknown) {
    p.spread = kSpreadUnknown;
    p.ratio.note = kSpreadUnknownText;
  } else {
    p.spread = fa.spread == kSpreadFloor || fb.spread == kSpreadFloor ? kSpreadFloor : kSpreadRuns;
    const double va = fa.sd_log * fa.sd_log / fa.runs, vb = fb.sd_log * fb.sd_log / fb.runs;
    variance = va + vb;
    double half = 0;
    if (variance > 0) {
      p.df = variance * variance / (va * va / fa.df + vb * vb / fb.df);
      half = t_half(options.confidence, p.df) * std::sqrt(variance);
    }
    p.ratio.lo = std::exp(log_ratio - half);
    p.ratio.hi = std::exp(log_ratio + half);
  }
  p.text = stats::format_ratio(p.ratio);
  p.distinguishable = std::isfinite(p.ratio.lo) && (p.ratio.lo > 1 || p.ratio.hi < 1);
  if (std::isfinite(p.ratio.lo)) {
    // The runs it would take, from the standard error at the normal quantile: with more runs the
    // t quantile of a few degrees of freedom is no longer what widens the interval.
    const double z = boost::math::quantile(boost::math::normal(), 0.5 + options.confidence / 2);
    const double se = std::sqrt(std::max(0.0, variance));
    const double lo = std::exp(log_ratio - z * se), hi = std::exp(log_ratio + z * se);
    if (p.distinguishable) {
      p.runs_to_separate = p.runs_now;
    } else if (p.ratio.ratio != 1) {
      p.runs_to_separate =
          stats::samples_for_half_width(lo, hi, p.runs_now, std::abs(std::log(p.ratio.ratio)));
    }
    p.runs_for_target =
        stats::samples_for_half_width(lo, hi, p.runs_now, std::log1p(options.target_half_width));
  }
  p.line = pair_line(hosts, p, options.target_half_width);
  return p;
}

}  // namespace

std::string Workload::label() const {
  return fmt::format("{} {} {} b{}{}", model, preset, mode, batch,
                     device == "cpu" ? "" : " " + device);
}

Prices load_prices(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    throw std::invalid_argument(fmt::format(
        "--prices {}: cannot read it (give a JSON file of hostname to price per hour, e.g. "
        "{{\"host-a\": 3.20}})",
        path));
  }
  std::stringstream text;
  text << in.rdbuf();
  json j;
  try {
    j = json::parse(text.str());
  } catch (const json::parse_error& e) {
    throw std::invalid_argument(fmt::format("--prices {}: not valid JSON ({})", path, e.what()));
  }
  if (!j.is_object()) {
    throw std::invalid_argument(
        fmt::format("--prices {}: expected a JSON object of hostname to price per hour, e.g. "
                    "{{\"host-a\": 3.20}}, got {}",
                    path, j.type_name()));
  }
  Prices prices;
  for (const auto& [host, price] : j.items()) {
    if (!price.is_number() || !(price.get<double>() > 0) || !std::isfinite(price.get<double>())) {
      throw std::invalid_argument(
          fmt::format("--prices {}: the price of '{}' is {}; prices are positive numbers (per "
                      "hour, any currency)",
                      path, host, price.dump()));
    }
    prices[host] = price.get<double>();
  }
  return prices;
}

bool is_default_settings(const json& settings, int cores) {
  if (!settings.is_object() || settings.empty()) return false;
  // What a trial that does not set the knob runs (knobs::unset_value: all cores, glibc, the
  // debugging APIs off, every other knob off).
  knobs::HostCaps host;
  host.cores = cores;
  for (const auto& [id, value] : settings.items()) {
    if (id == knobs::cuda::kDevice) continue;
    const knobs::Knob* knob = knobs::find(id);
    if (knob == nullptr || knobs::unset_value(*knob, host) != value) return false;
  }
  return true;
}

std::vector<std::string> hosts_with_runs(const storage::Database& db) {
  // Each hostname's machines (core/hardware.h's machine_id), in the order of their first run.
  std::vector<std::string> names;
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> machines;
  for (const auto& uuid : db.run_uuids()) {
    const auto r = db.run(uuid);
    if (!check::finished(r)) continue;
    const std::string name = r.record.host.value("hostname", std::string("?"));
    if (!machines.count(name)) names.push_back(name);
    auto& of_name = machines[name];
    const std::string machine = hardware::machine_id(r.record.host);
    const bool seen = std::any_of(of_name.begin(), of_name.end(),
                                  [&](const auto& m) { return m.first == machine; });
    if (!seen) of_name.emplace_back(machine, check::short_class(r.record.host));
  }
  std::vector<std::string> out;
  for (const auto& name : names) {
    const auto& of_name = machines[name];
    if (of_name.size() == 1) {
      out.push_back(name);
      continue;
    }
    for (const auto& m : of_name) out.push_back(name + "@" + m.second);
  }
  return out;
}

namespace {

// The compared hosts, each described by its latest run, with their runs and prices; a note for
// each hostname left on other machines and each price of a host not compared.
void add_hosts(const storage::Database& db, const std::vector<check::HostRunSet>& sets,
               const Options& options, Comparison& c) {
  std::set<std::string> priced;
  for (size_t i = 0; i < sets.size(); ++i) {
    const auto run = db.run(sets[i].runs.back());
    Host h;
    h.given = options.hosts[i];
    h.hostname = run.record.host.value("hostname", std::string("?"));
    h.host_id = sha256_hex(run.record.host.dump());
    h.runs = sets[i].runs;
    h.run_uuid = sets[i].runs.back();
    h.started_at = run.record.started_at;
    h.cpu_model = run.record.host.value("cpu_model", std::string("?"));
    h.hardware = hardware::describe(run.record.host);
    h.hardware_class = hardware::class_id(run.record.host);
    const auto cores = run.record.host.find("cores");
    h.cores = cores != run.record.host.end() && cores->is_number() ? cores->get<int>() : 0;
    for (const auto& name : {h.hostname, h.given}) {
      if (auto p = options.prices.find(name); p != options.prices.end()) {
        h.price_per_hour = p->second;
        priced.insert(name);
      }
    }
    if (!sets[i].note.empty()) c.notes.push_back(sets[i].note);
    c.suite = run.record.suite_name;
    c.hosts.push_back(h);
  }
  // Names: the hostname, and where two hosts share it, their class (or host id where the classes
  // are one too).
  for (auto& h : c.hosts) {
    h.name = h.hostname;
    bool shared = false, class_shared = false;
    const std::string mine = h.hardware_class.empty() ? h.host_id : h.hardware_class;
    for (const auto& o : c.hosts) {
      if (&o == &h || o.hostname != h.hostname) continue;
      shared = true;
      const std::string theirs = o.hardware_class.empty() ? o.host_id : o.hardware_class;
      class_shared = class_shared || theirs.substr(0, 8) == mine.substr(0, 8);
    }
    if (shared) h.name += " (" + (class_shared ? h.host_id : mine).substr(0, 8) + ")";
  }
  for (const auto& [name, price] : options.prices) {
    if (!priced.count(name))
      c.notes.push_back(fmt::format("a price is given for '{}', which is not compared", name));
  }
}

// The benchmark compared on workload `key`, for each host the runs that have it: the first of
// the first host's benchmarks of the workload (its latest run first) that ran with default
// settings on every host. Empty when none did.
using Chosen = std::vector<std::vector<const Benchmark*>>;  // host → one per run that has it
Chosen chosen_benchmarks(const Key& key,
                         const std::vector<std::vector<std::vector<Benchmark>>>& runs,
                         const std::vector<Host>& hosts) {
  for (auto run = runs.front().rbegin(); run != runs.front().rend(); ++run) {
    for (const auto& candidate : *run) {
      if (workload_of(candidate) != key ||
          !is_default_settings(candidate.settings, hosts.front().cores)) {
        continue;
      }
      Chosen chosen(hosts.size());
      bool everywhere = true;
      for (size_t h = 0; h < hosts.size(); ++h) {
        for (const auto& of_run : runs[h]) {
          for (const auto& other : of_run) {
            if (other.experiment == candidate.experiment && other.arm == candidate.arm &&
                workload_of(other) == key && is_default_settings(other.settings, hosts[h].cores)) {
              chosen[h].push_back(&other);
              break;
            }
          }
        }
        everywhere = everywhere && !chosen[h].empty();
      }
      if (everywhere) return chosen;
    }
  }
  return {};
}

// The between-run noise floor `calibrate` stored for the run's machine, software and suite for
// this benchmark, and the A/A runs behind it; NaN and 0 without one.
std::pair<double, int> floor_of(const storage::Database& db, const std::string& run,
                                const std::string& experiment, const std::string& arm) {
  for (const auto& f : db.noise_floors(run)) {
    if (f.experiment == experiment && f.arm == arm) return {f.sigma_log, int(f.run_uuids.size())};
  }
  return {NAN, 0};
}

// The workload's figures on every host, every pair and the rankings.
void compare_on(const storage::Database& db, Workload& w, const Chosen& chosen, const Comparison& c,
                const Options& options) {
  stats::EffectOptions effect_options;
  effect_options.confidence = options.confidence;
  w.experiment = chosen.front().front()->experiment;
  w.arm = chosen.front().front()->arm;
  for (size_t h = 0; h < c.hosts.size(); ++h) {
    double floor = NAN;
    int floor_runs = 0;
    if (chosen[h].size() == 1) {
      // The run that has the benchmark: the floor of its machine and software.
      for (const auto& run : c.hosts[h].runs) {
        std::tie(floor, floor_runs) = floor_of(db, run, w.experiment, w.arm);
        if (std::isfinite(floor)) break;
      }
    }
    w.hosts.push_back(figures_of(chosen[h], c.hosts[h], h, floor, floor_runs, effect_options));
  }
  for (size_t a = 0; a < c.hosts.size(); ++a) {
    for (size_t b = a + 1; b < c.hosts.size(); ++b)
      w.pairs.push_back(pair_between(c.hosts, w, a, b, options));
  }
  std::vector<size_t> all, with_price;
  std::vector<double> score, ones(c.hosts.size(), 1.0), per_unit(c.hosts.size(), 1.0);
  for (size_t h = 0; h < c.hosts.size(); ++h) {
    all.push_back(h);
    score.push_back(w.hosts[h].items_per_second.value);
    if (std::isfinite(c.hosts[h].price_per_hour)) {
      with_price.push_back(h);
      per_unit[h] = kSecondsPerHour / c.hosts[h].price_per_hour;
    }
  }
  w.ranking = rank(all, score, ones, w.pairs, c.hosts);
  if (with_price.size() >= 2) {
    std::vector<double> price_score(score);
    for (size_t h = 0; h < score.size(); ++h) price_score[h] *= per_unit[h];
    w.price_ranking = rank(with_price, price_score, per_unit, w.pairs, c.hosts);
  }
}

}  // namespace

Comparison compare_hosts(const storage::Database& db, const Options& options) {
  if (options.hosts.size() < options.min_hosts) {
    std::string known;
    for (const auto& h : hosts_with_runs(db)) known += (known.empty() ? "" : ", ") + h;
    throw std::invalid_argument(
        fmt::format("--hosts needs at least {} hosts to compare, got {}; hosts with runs: {}",
                    options.min_hosts, options.hosts.size(), known.empty() ? "none" : known));
  }
  Comparison c;
  c.confidence = options.confidence;
  c.target_half_width = options.target_half_width;
  add_hosts(db, check::runs_of_hosts(db, options.hosts, options.suite), options, c);
  // host → run → its benchmarks
  std::vector<std::vector<std::vector<Benchmark>>> benchmarks;
  for (const auto& h : c.hosts) {
    benchmarks.emplace_back();
    for (const auto& run : h.runs) benchmarks.back().push_back(benchmarks_of(db, run));
  }
  // Workloads in the order the first host ran them, its latest run first.
  std::vector<Key> workloads;
  for (auto run = benchmarks.front().rbegin(); run != benchmarks.front().rend(); ++run) {
    for (const auto& b : *run) {
      if (std::find(workloads.begin(), workloads.end(), workload_of(b)) == workloads.end())
        workloads.push_back(workload_of(b));
    }
  }
  for (const auto& key : workloads) {
    const auto chosen = chosen_benchmarks(key, benchmarks, c.hosts);
    Workload w;
    std::tie(w.model, w.preset, w.mode, w.batch, w.device) = key;
    if (chosen.empty()) {
      c.notes.push_back(fmt::format(
          "{}: no benchmark ran with default settings and ok trials on every host", w.label()));
      continue;
    }
    compare_on(db, w, chosen, c, options);
    c.workloads.push_back(std::move(w));
  }
  if (c.workloads.empty()) {
    std::string listed;
    for (const auto& h : c.hosts) listed += (listed.empty() ? "" : ", ") + h.run_uuid;
    throw std::invalid_argument(fmt::format(
        "no workload of suite '{}' ran with default settings (every knob off, the glibc "
        "allocator, one thread per core) and ok trials on every host (latest runs {}); hosts are "
        "compared on such arms, e.g. the off arms of suites/smoke.json",
        c.suite, listed));
  }
  return c;
}

}  // namespace tunebench::hosts

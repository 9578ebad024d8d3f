#include "analysis/hosts.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

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
  for (const auto& t : db.trials(run_uuid)) {
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

HostFigures figures_of(const Benchmark& b, const Host& host, size_t index,
                       const stats::EffectOptions& options) {
  HostFigures f;
  f.host = index;
  f.processes = int(b.groups.size());
  for (const auto& g : b.groups) f.samples += int(g.size());
  // exp(−log median) = 1 / median, with the hierarchical bootstrap interval of the median.
  const auto per_second = stats::contrast({b.groups}, {-1.0}, options);
  const auto seconds = stats::contrast({b.groups}, {1.0}, options);
  f.seconds = make_figure(seconds.ratio, seconds.lo, seconds.hi);
  f.items_per_second =
      scaled(make_figure(per_second.ratio, per_second.lo, per_second.hi), double(b.batch));
  if (host.cores > 0) f.per_core = scaled(f.items_per_second, 1.0 / host.cores);
  if (std::isfinite(host.price_per_hour)) {
    f.items_per_unit = scaled(f.items_per_second, kSecondsPerHour / host.price_per_hour);
    f.cost_per_million = inverse(f.items_per_second, 1e6 * host.price_per_hour / kSecondsPerHour);
  }
  if (b.energy.empty()) {
    f.energy_per_item.text =
        b.energy_why.empty() ? "not measured" : "not measured (" + b.energy_why + ")";
  } else {
    stats::Groups trials;
    for (double e : b.energy) trials.push_back({e});
    const auto energy = stats::contrast({trials}, {1.0}, options);
    f.energy_per_item = make_figure(energy.ratio, energy.lo, energy.hi);
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
    for (size_t i : r.hosts) names += (names.empty() ? "" : ", ") + hosts[i].hostname;
    // Pairs not told apart: within the group, and with the groups below it.
    for (size_t a = 0; a < r.hosts.size(); ++a) {
      const size_t i = r.hosts[a];
      std::vector<size_t> below(r.hosts.begin() + long(a) + 1, r.hosts.end());
      for (size_t h = g + 1; h < out.size(); ++h)
        below.insert(below.end(), out[h].hosts.begin(), out[h].hosts.end());
      for (size_t j : below) {
        const Ratio ratio = ratio_of(pair_of(pairs, i, j), i, j, factor);
        if (ratio.lo > 1 || ratio.hi < 1 || !std::isfinite(ratio.lo)) continue;
        ties += fmt::format("{}{} / {} {}", ties.empty() ? "" : "; ", hosts[i].hostname,
                            hosts[j].hostname, ratio_string(ratio));
      }
    }
    r.text = fmt::format("{}{} {}", r.rank, r.hosts.size() > 1 ? "=" : "", names);
    if (!ties.empty()) r.text += " (not distinguishable: " + ties + ")";
  }
  return out;
}

// "74 samples per host (15 processes of 5)": the samples a figure needs, in processes of the
// size the hosts ran.
std::string samples_text(double needed, const HostFigures& a, const HostFigures& b) {
  const double per_process =
      double(a.samples + b.samples) / double(std::max(1, a.processes + b.processes));
  const double processes = std::ceil(needed / per_process);
  return fmt::format("~{:.0f} samples per host ({:.0f} process{} of {:.0f})", needed, processes,
                     processes == 1 ? "" : "es", per_process);
}

// Pair::line: the ratio, whether it separates the hosts, and the samples it would take.
std::string pair_line(const std::vector<Host>& hosts, const Workload& w, const Pair& p,
                      double target_half_width) {
  const auto& a = w.hosts[p.faster];
  const auto& b = w.hosts[p.slower];
  std::string line =
      fmt::format("{} / {} {} {}", hosts[p.faster].hostname, hosts[p.slower].hostname, p.text,
                  p.distinguishable ? "distinguishable" : "not distinguishable");
  if (!p.distinguishable) {
    line += std::isfinite(p.samples_to_separate)
                ? fmt::format("; separating them at {:.3f}x takes {}", p.ratio.ratio,
                              samples_text(p.samples_to_separate, a, b))
                : "; no difference to separate";
  }
  if (std::isfinite(p.samples_for_target)) {
    line += fmt::format("; ±{:g} % takes {}", 100 * target_half_width,
                        samples_text(p.samples_for_target, a, b));
  }
  return line + fmt::format("; now {:.0f} samples per host", p.samples_now);
}

Pair pair_between(const std::vector<Host>& hosts, const Workload& w, size_t a, size_t b,
                  const std::vector<Benchmark*>& benchmarks, const Options& options) {
  const HostFigures &fa = w.hosts[a], &fb = w.hosts[b];
  Pair p;
  const bool a_faster = fa.items_per_second.value >= fb.items_per_second.value;
  p.faster = a_faster ? fa.host : fb.host;
  p.slower = a_faster ? fb.host : fa.host;
  const auto& faster = benchmarks[a_faster ? a : b]->groups;
  const auto& slower = benchmarks[a_faster ? b : a]->groups;
  stats::EffectOptions effect_options;
  effect_options.confidence = options.confidence;
  // Time of the slower over time of the faster = throughput faster / slower (same batch).
  p.ratio = stats::effect(faster, slower, effect_options);
  p.text = stats::format_ratio(p.ratio);
  p.distinguishable = p.ratio.lo > 1 || p.ratio.hi < 1;
  p.samples_now = (fa.samples + fb.samples) / 2.0;
  if (p.distinguishable) {
    p.samples_to_separate = p.samples_now;
  } else if (std::isfinite(p.ratio.ratio) && p.ratio.ratio != 1) {
    p.samples_to_separate = stats::samples_for_half_width(p.ratio.lo, p.ratio.hi, p.samples_now,
                                                          std::abs(std::log(p.ratio.ratio)));
  }
  p.samples_for_target = stats::samples_for_half_width(p.ratio.lo, p.ratio.hi, p.samples_now,
                                                       std::log1p(options.target_half_width));
  p.line = pair_line(hosts, w, p, options.target_half_width);
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
  std::vector<std::string> out;
  for (const auto& uuid : db.run_uuids()) {
    const auto r = db.run(uuid);
    if (!check::finished(r)) continue;
    const std::string name = r.record.host.value("hostname", std::string("?"));
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  }
  return out;
}

namespace {

// The compared hosts, from each one's latest run, with their prices; a note for each price of a
// host not compared.
void add_hosts(const storage::Database& db, const std::vector<std::string>& runs,
               const Options& options, Comparison& c) {
  std::set<std::string> priced;
  for (size_t i = 0; i < runs.size(); ++i) {
    const auto run = db.run(runs[i]);
    Host h;
    h.given = options.hosts[i];
    h.hostname = run.record.host.value("hostname", std::string("?"));
    h.host_id = sha256_hex(run.record.host.dump());
    h.run_uuid = runs[i];
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
    c.suite = run.record.suite_name;
    c.hosts.push_back(h);
  }
  for (const auto& [name, price] : options.prices) {
    if (!priced.count(name))
      c.notes.push_back(fmt::format("a price is given for '{}', which is not compared", name));
  }
}

// The benchmark compared on workload `key`, one per host: the first of the first host's
// benchmarks of the workload that ran with default settings on every host. Empty when none did.
std::vector<Benchmark*> chosen_benchmarks(const Key& key,
                                          std::vector<std::vector<Benchmark>>& benchmarks,
                                          const std::vector<Host>& hosts) {
  std::vector<Benchmark*> chosen;
  for (auto& candidate : benchmarks.front()) {
    if (workload_of(candidate) != key ||
        !is_default_settings(candidate.settings, hosts.front().cores)) {
      continue;
    }
    chosen = {&candidate};
    for (size_t h = 1; h < hosts.size(); ++h) {
      for (auto& other : benchmarks[h]) {
        if (other.experiment == candidate.experiment && other.arm == candidate.arm &&
            is_default_settings(other.settings, hosts[h].cores)) {
          chosen.push_back(&other);
          break;
        }
      }
    }
    if (chosen.size() == hosts.size()) break;
    chosen.clear();
  }
  return chosen;
}

// The workload's figures on every host, every pair and the rankings.
void compare_on(Workload& w, const std::vector<Benchmark*>& chosen, const Comparison& c,
                const Options& options) {
  stats::EffectOptions effect_options;
  effect_options.confidence = options.confidence;
  w.experiment = chosen.front()->experiment;
  w.arm = chosen.front()->arm;
  for (size_t h = 0; h < c.hosts.size(); ++h)
    w.hosts.push_back(figures_of(*chosen[h], c.hosts[h], h, effect_options));
  for (size_t a = 0; a < c.hosts.size(); ++a) {
    for (size_t b = a + 1; b < c.hosts.size(); ++b)
      w.pairs.push_back(pair_between(c.hosts, w, a, b, chosen, options));
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
  add_hosts(db, check::latest_runs_of_hosts(db, options.hosts, options.suite), options, c);
  std::vector<std::vector<Benchmark>> benchmarks;
  for (const auto& h : c.hosts) benchmarks.push_back(benchmarks_of(db, h.run_uuid));
  // Workloads in the order the first host ran them.
  std::vector<Key> workloads;
  for (const auto& b : benchmarks.front()) {
    if (std::find(workloads.begin(), workloads.end(), workload_of(b)) == workloads.end())
      workloads.push_back(workload_of(b));
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
    compare_on(w, chosen, c, options);
    c.workloads.push_back(std::move(w));
  }
  if (c.workloads.empty()) {
    std::string listed;
    for (const auto& h : c.hosts) listed += (listed.empty() ? "" : ", ") + h.run_uuid;
    throw std::invalid_argument(fmt::format(
        "no workload of suite '{}' ran with default settings (every knob off, the glibc "
        "allocator, one thread per core) and ok trials on every host (runs {}); hosts are "
        "compared on such arms, e.g. the off arms of suites/smoke.json",
        c.suite, listed));
  }
  return c;
}

}  // namespace tunebench::hosts

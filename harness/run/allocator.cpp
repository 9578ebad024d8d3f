// One run budget spent on the verdicts still open (run/allocator.h).
#include "run/allocator.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/math/distributions/normal.hpp>
#include <boost/math/distributions/students_t.hpp>
#include <cmath>

namespace tunebench::orchestrator::allocation {

namespace {

bool finite_positive(double x) { return std::isfinite(x) && x > 0; }

double t_quantile(double p, int workers) {
  return boost::math::quantile(boost::math::students_t(workers - 1), p);
}

// P(X < x) for X ~ N(mean, sd²).
double below(double x, double mean, double sd) {
  return boost::math::cdf(boost::math::normal(mean, sd), x);
}

std::string width_text(const Standing& s) {
  return finite_positive(s.half_width) ? fmt::format("±{:.1f}%", 100 * s.half_width)
                                       : "no interval";
}

}  // namespace

Looks looks_of(int planned, int most_workers, double confidence) {
  Looks out;
  const int first = std::max(planned, 3);  // the paired estimator's fewest workers for a verdict
  for (int n = first; n < most_workers; n *= 2) out.at.push_back(n);
  if (out.at.empty() || out.at.back() != most_workers) out.at.push_back(std::max(most_workers, 3));
  out.confidence = 1 - (1 - confidence) / double(out.at.size());
  return out;
}

bool passed_look(const Looks& looks, int before, int workers) {
  return std::any_of(looks.at.begin(), looks.at.end(),
                     [&](int at) { return before < at && at <= workers; });
}

std::string verdict_at(double log_ratio, double log_sd, int workers, double confidence,
                       double target, double equivalence) {
  if (workers < 3 || !(log_sd >= 0) || !std::isfinite(log_ratio)) return "";
  const double se = log_sd / std::sqrt(double(workers));
  const double h = t_quantile(1 - (1 - confidence) / 2, workers) * se;
  if (log_ratio + h < 0) return "helps";
  if (log_ratio - h > 0) return "hurts";
  if (std::expm1(h) > target) return "";
  const double h_tost = t_quantile(confidence, workers) * se;
  const double bound = std::log1p(equivalence);
  if (log_ratio - h_tost > -bound && log_ratio + h_tost < bound)
    return fmt::format("no effect beyond ±{:g}%", 100 * equivalence);
  return "";
}

void look(Standing& s) {
  const Looks looks = looks_of(s.planned, s.most_workers, s.confidence);
  s.verdict =
      verdict_at(s.log_ratio, s.log_sd, s.workers, looks.confidence, s.target, s.equivalence);
  s.decided = !s.verdict.empty();
}

double probability_decided(const Standing& s, int workers, double confidence) {
  const int n = s.workers;
  const int k = workers - n;
  if (k <= 0 || !(s.log_sd > 0) || n < 2) {
    return verdict_at(s.log_ratio, s.log_sd, std::max(n, workers), confidence, s.target,
                      s.equivalence)
                   .empty()
               ? 0
               : 1;
  }
  const double spread = s.log_sd * std::sqrt(double(k) / (double(n) * double(workers)));
  const double se = s.log_sd / std::sqrt(double(workers));
  const double h = t_quantile(1 - (1 - confidence) / 2, workers) * se;
  // Decided where the future mean is beyond ±h (helps, hurts) or, at the target width, within
  // ±band (no effect beyond ±equivalence).
  double band = 0;
  if (std::expm1(h) <= s.target) {
    band = std::max(0.0, std::log1p(s.equivalence) - t_quantile(confidence, workers) * se);
  }
  if (band >= h) return 1;  // every mean it can have decides
  const double m = s.log_ratio;
  return below(-h, m, spread) + (1 - below(h, m, spread)) + below(band, m, spread) -
         below(-band, m, spread);
}

double predicted_half_width(double log_sd, int workers, double confidence) {
  if (workers < 2 || !(log_sd >= 0)) return INFINITY;
  return std::expm1(t_quantile(1 - (1 - confidence) / 2, workers) * log_sd /
                    std::sqrt(double(workers)));
}

Outlook outlook(const Standing& s, double seconds_left) {
  Outlook o;
  o.has_interval = finite_positive(s.half_width) && s.log_sd > 0;
  o.cost_per_worker = s.workers > 0 ? s.seconds / s.workers : 0;
  // Workers it can still have: within most_workers, and within the time left at its cost.
  o.affordable = s.most_workers;
  if (o.cost_per_worker > 0) {
    const int by_time = s.workers + 2 * int(std::max(seconds_left, 0.0) / (2 * o.cost_per_worker));
    o.affordable = std::min(o.affordable, by_time);
  }
  o.affordable = std::max(o.affordable, s.workers);
  if (!o.has_interval) return o;
  o.reachable = o.affordable > s.workers
                    ? predicted_half_width(s.log_sd, o.affordable, s.confidence)
                    : s.half_width;
  if (o.cost_per_worker <= 0) return o;
  if (!s.decided) {
    // Its next looks within reach, and all it can afford: the best chance per second.
    const Looks looks = looks_of(s.planned, s.most_workers, s.confidence);
    std::vector<int> counts;
    for (int at : looks.at)
      if (at > s.workers && at <= o.affordable) counts.push_back(at);
    if (o.affordable > s.workers) counts.push_back(o.affordable);
    for (int at : counts) {
      const double p = probability_decided(s, at, looks.confidence);
      const double per_second = p / ((at - s.workers) * o.cost_per_worker);
      if (per_second > o.decide_per_second) {
        o.decide_per_second = per_second;
        o.decide_at = at;
        o.p_decide = p;
      }
    }
  } else {
    // The width two more workers are expected to take off, counted only down to the target.
    const double next = predicted_half_width(s.log_sd, s.workers + 2, s.confidence);
    const double shrink = s.half_width - std::max(next, s.target);
    o.gain_per_second = std::max(shrink, 0.0) / (2 * o.cost_per_worker);
  }
  return o;
}

Decision decide(const std::vector<Standing>& standings, const std::vector<bool>& done,
                double seconds_left) {
  Decision d;
  double best_open = 0, best_wide = 0;
  std::optional<size_t> open, wide;
  std::vector<Outlook> outlooks(standings.size());
  auto decided_text = [](const Standing& s) {
    return s.decided ? fmt::format("decided: {} ({})", s.verdict, width_text(s))
                     : fmt::format("not decided ({})", width_text(s));
  };
  for (size_t i = 0; i < standings.size(); ++i) {
    if (done[i]) continue;
    const Standing& s = standings[i];
    const Outlook& o = outlooks[i] = outlook(s, seconds_left);
    auto stop = [&](std::string why) { d.stopped.emplace_back(i, std::move(why)); };
    if (s.decided && s.settled) {
      stop(fmt::format("decided: {} within its ±{:g}% target ({})", s.verdict, 100 * s.target,
                       width_text(s)));
    } else if (s.workers + 2 > s.most_workers) {
      stop(fmt::format("{}: max_workers {} reached", decided_text(s), s.most_workers));
    } else if (2 * o.cost_per_worker > seconds_left) {
      stop(
          fmt::format("{}: two more workers ({:.0f}s) do not fit in the {:.0f}s left of the "
                      "run's budget",
                      decided_text(s), 2 * o.cost_per_worker, std::max(seconds_left, 0.0)));
    } else if (!o.has_interval) {
      // A busy host can drop every pair of a worker: later workers may find it quiet, but
      // only as many again as were planned.
      if (s.workers >= 2 * s.planned) {
        stop("not sampled on: no interval after twice its planned workers");
      } else if (!open) {
        open = i;
      }
    } else if (!s.decided) {
      if (o.decide_per_second > best_open || !open) {
        best_open = std::max(best_open, o.decide_per_second);
        open = i;
      }
    } else if (o.gain_per_second > best_wide) {
      best_wide = o.gain_per_second;
      wide = i;
    }
  }
  if (open) {
    d.next = open;
    const Outlook& o = outlooks[*open];
    d.why = o.decide_at ? fmt::format("open: {:.0f}% to decide by {} workers", 100 * o.p_decide,
                                      o.decide_at)
                        : "open, no interval yet";
  } else if (wide) {
    d.next = wide;
    d.why = fmt::format("{}, narrowing toward ±{:g}%", standings[*wide].verdict,
                        100 * standings[*wide].target);
  } else {
    // Nothing left that another worker would help: decided, but no narrower for more workers.
    for (size_t i = 0; i < standings.size(); ++i) {
      const bool stopped = std::any_of(d.stopped.begin(), d.stopped.end(),
                                       [&](const auto& x) { return x.first == i; });
      if (!done[i] && !stopped) {
        d.stopped.emplace_back(
            i, fmt::format("{}: more workers would not narrow it", decided_text(standings[i])));
      }
    }
  }
  return d;
}

std::string width_stop(bool settled, double budget_s, double spent, int workers, int max_workers) {
  if (settled) return "settled";
  if (budget_s <= 0) return "not settled (budget_s 0: the planned workers only)";
  if (spent >= budget_s)
    return fmt::format("not settled: its budget_s of {:g}s is spent", budget_s);
  if (workers + 2 > max_workers)
    return fmt::format("not settled: max_workers {} reached", max_workers);
  return "";
}

int fitted_workers(int planned, int started, double fraction) {
  const int share = int(std::ceil(std::clamp(fraction, 0.0, 1.0) * planned));
  return std::min(planned, std::max({share, std::min(planned, kFitPlanFloor), started}));
}

}  // namespace tunebench::orchestrator::allocation

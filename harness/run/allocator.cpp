// One run budget spent where it settles most (run/allocator.h).
#include "run/allocator.h"

#include <fmt/format.h>

#include <boost/math/distributions/students_t.hpp>
#include <cmath>

namespace tunebench::orchestrator::allocation {

namespace {

bool finite_positive(double x) { return std::isfinite(x) && x > 0; }

}  // namespace

double predicted_half_width(double log_sd, int workers, double confidence) {
  if (workers < 2 || !(log_sd >= 0)) return INFINITY;
  const double t =
      boost::math::quantile(boost::math::students_t(workers - 1), 1 - (1 - confidence) / 2);
  return std::expm1(t * log_sd / std::sqrt(double(workers)));
}

Outlook outlook(const Standing& s, double seconds_left) {
  Outlook o;
  o.has_interval = finite_positive(s.half_width) && s.log_sd > 0;
  o.cost_per_worker = s.workers > 0 ? s.seconds / s.workers : 0;
  if (!o.has_interval) return o;
  // Workers it can still have: within most_workers, and within the time left at its cost.
  int affordable = s.most_workers;
  if (o.cost_per_worker > 0) {
    const int by_time = s.workers + 2 * int(seconds_left / (2 * o.cost_per_worker));
    affordable = std::min(affordable, by_time);
  }
  affordable = std::max(affordable, s.workers);
  o.reachable = affordable > s.workers ? predicted_half_width(s.log_sd, affordable, s.confidence)
                                       : s.half_width;
  for (int n = s.workers + 2; n <= s.most_workers; n += 2) {
    if (n >= s.settles_from && predicted_half_width(s.log_sd, n, s.confidence) <= s.target) {
      o.workers_needed = n;
      o.seconds_needed = (n - s.workers) * o.cost_per_worker;
      break;
    }
  }
  // The width two more workers are expected to take off, counted only down to the target.
  const double next = predicted_half_width(s.log_sd, s.workers + 2, s.confidence);
  const double shrink = s.half_width - std::max(next, s.target);
  o.gain_per_second = o.cost_per_worker > 0 ? std::max(shrink, 0.0) / (2 * o.cost_per_worker) : 0;
  return o;
}

Decision decide(const std::vector<Standing>& standings, const std::vector<bool>& done,
                double seconds_left) {
  Decision d;
  double best = -1;
  for (size_t i = 0; i < standings.size(); ++i) {
    if (done[i]) continue;
    const Standing& s = standings[i];
    const Outlook o = outlook(s, seconds_left);
    auto stop = [&](std::string why) { d.stopped.emplace_back(i, std::move(why)); };
    if (s.settled) {
      stop("settled");
    } else if (s.workers + 2 > s.most_workers) {
      stop(fmt::format("not settled: max_workers {} reached", s.most_workers));
    } else if (2 * o.cost_per_worker > seconds_left) {
      stop(
          fmt::format("not settled: two more workers ({:.0f}s) do not fit in the {:.0f}s left "
                      "of the run's budget",
                      2 * o.cost_per_worker, std::max(seconds_left, 0.0)));
    } else if (!o.has_interval) {
      // A busy host can drop every pair of a worker: later workers may find it quiet, but
      // only as many again as were planned.
      if (s.workers >= 2 * s.planned) {
        stop("not sampled on: no interval after twice its planned workers");
      } else if (best < 0) {
        best = 0;
        d.next = i;
      }
    } else if (o.workers_needed == 0 || o.seconds_needed > seconds_left) {
      stop(fmt::format(
          "stopped early: cannot reach ±{:g}% within the {:.0f}s left of the run's budget (it "
          "would need {}; with what is left it would reach ±{:.1f}%)",
          100 * s.target, std::max(seconds_left, 0.0),
          o.workers_needed
              ? fmt::format("{} workers, {:.0f}s more", o.workers_needed, o.seconds_needed)
              : fmt::format("more than max_workers {}", s.most_workers),
          100 * o.reachable));
    } else if (o.gain_per_second > best) {
      best = o.gain_per_second;
      d.next = i;
    }
  }
  return d;
}

}  // namespace tunebench::orchestrator::allocation

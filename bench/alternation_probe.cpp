// A minimal alternation loop: the yardstick for how much machine time tunebench's paired engine
// spends for an interval of a given width. Each worker is a fresh process (this binary run again
// with --child) that builds two identical models (an A/A), warms each up, then times one step of
// each per pair, alternating which goes first (ABBA at the step level), with nothing dropped: no
// blocks, no discarded samples, no contamination rule, no store. Its estimate is the 10 %-trimmed
// mean of its pairs' log ratios; across workers, a 95 % t interval, as the engine's
// (analysis/paired.h). Workers are added one at a time from --min-workers until the interval's
// half-width is within --target or --max-workers is reached. Prints one JSON line: the workers,
// the half-width, and the wall seconds of all workers, process start included.
//
//   build/debian/tunebench_alternation_probe [--pairs 24] [--target 0.02] [--min-workers 4]
//       [--max-workers 40] [--model resnet50] [--preset full] [--options '{"image_size": 96}']
//       [--batch 4] [--threads 0]   (0: every logical CPU, as the engine's omp_threads "all";
//                                     LibTorch's own default is the physical cores: 1 here)
//
// bench/engine_vs_probe.sh runs it beside `tunebench run` on the same A/A. A quiet host only.
#include <fmt/format.h>
#include <sys/wait.h>
#include <torch/torch.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <boost/math/distributions/students_t.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "analysis/paired.h"
#include "models/build.h"
#include "models/common.h"

using namespace tunebench;
using Clock = std::chrono::steady_clock;

namespace {

struct ProbeOptions {
  int pairs = 24, min_workers = 4, max_workers = 40, threads = 0;
  int64_t batch = 4;
  double target = 0.02;
  std::string model = "resnet50", preset = "full", options = R"({"image_size": 96})";
};

// One worker: both arms built, warmed, then `pairs` alternating pairs; prints its estimate.
int child(const ProbeOptions& o, int index) {
  torch::set_num_threads(o.threads > 0 ? o.threads
                                       : static_cast<int>(std::thread::hardware_concurrency()));
  const auto options = nlohmann::json::parse(o.options);
  auto a = models::build_model({o.model, o.preset, options}, /*seed=*/1);
  auto b = models::build_model({o.model, o.preset, options}, /*seed=*/1);
  const auto batch = a->make_batch(o.batch, /*seed=*/2);
  a->module().eval();
  b->module().eval();
  auto step = [&](models::BenchModel& m) {
    torch::NoGradGuard no_grad;
    const auto start = Clock::now();
    auto out = m.forward(batch);
    (void)out.sum().item<double>();
    return std::chrono::duration<double>(Clock::now() - start).count();
  };
  for (int i = 0; i < 2; ++i) step(*a), step(*b);
  std::vector<double> logs;
  for (int j = 0; j < o.pairs; ++j) {
    const bool b_first = (j + index) % 2 == 1;
    double ta = 0, tb = 0;
    if (b_first) {
      tb = step(*b);
      ta = step(*a);
    } else {
      ta = step(*a);
      tb = step(*b);
    }
    logs.push_back(std::log(tb / ta));
  }
  std::cout << fmt::format("{:.9g}\n", stats::paired::trimmed_mean(logs, 0.1));
  return 0;
}

// Runs this binary again as worker `index`; its estimate, or NaN if it failed.
double run_worker(const std::vector<std::string>& args, int index) {
  int out[2];
  if (pipe(out) != 0) return NAN;
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], STDOUT_FILENO);
    close(out[0]);
    close(out[1]);
    std::vector<std::string> all = args;
    all.push_back("--child");
    all.push_back(std::to_string(index));
    std::vector<char*> argv;
    for (auto& s : all) argv.push_back(s.data());
    argv.push_back(nullptr);
    execv("/proc/self/exe", argv.data());
    _exit(127);
  }
  close(out[1]);
  std::string text;
  char buffer[256];
  for (ssize_t n; (n = read(out[0], buffer, sizeof buffer)) > 0;) text.append(buffer, n);
  close(out[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || text.empty()) return NAN;
  return std::stod(text);
}

}  // namespace

int main(int argc, char** argv) {
  ProbeOptions o;
  int child_index = -1;
  CLI::App app{"A minimal per-step alternation loop on an A/A: seconds to a given width"};
  app.add_option("--pairs", o.pairs, "alternating pairs of steps per worker")
      ->capture_default_str();
  app.add_option("--target", o.target, "half-width to reach, as a fraction")->capture_default_str();
  app.add_option("--min-workers", o.min_workers, "workers before the first look")
      ->capture_default_str();
  app.add_option("--max-workers", o.max_workers, "stop here if not settled")->capture_default_str();
  app.add_option("--model", o.model)->capture_default_str();
  app.add_option("--preset", o.preset)->capture_default_str();
  app.add_option("--options", o.options, "the model's options, JSON")->capture_default_str();
  app.add_option("--batch", o.batch)->capture_default_str();
  app.add_option("--threads", o.threads, "intra-op threads; 0: every logical CPU")
      ->capture_default_str();
  app.add_option("--child", child_index, "internal: run as worker N")->group("");
  CLI11_PARSE(app, argc, argv);
  if (child_index >= 0) return child(o, child_index);

  std::vector<std::string> args{argv[0]};
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
  const auto start = Clock::now();
  std::vector<double> estimates;
  double half_width = NAN, ratio = NAN;
  int failed = 0;
  while (static_cast<int>(estimates.size()) < o.max_workers) {
    const double e = run_worker(args, static_cast<int>(estimates.size() + failed));
    if (!std::isfinite(e)) {
      if (++failed > 3) {
        std::cerr << "alternation_probe: more than 3 workers failed\n";
        return 1;
      }
      continue;
    }
    estimates.push_back(e);
    const int n = static_cast<int>(estimates.size());
    if (n < std::max(o.min_workers, 3)) continue;
    double mean = 0, ss = 0;
    for (double x : estimates) mean += x;
    mean /= n;
    for (double x : estimates) ss += (x - mean) * (x - mean);
    const double se = std::sqrt(ss / (n - 1) / n);
    const double h = boost::math::quantile(boost::math::students_t(n - 1), 0.975) * se;
    half_width = std::exp(h) - 1;  // (hi / lo)^(1/2) − 1, as the engine's
    ratio = std::exp(mean);
    std::cerr << fmt::format("probe: {} workers, {:.4f}x ±{:.2f}% after {:.1f}s\n", n, ratio,
                             100 * half_width,
                             std::chrono::duration<double>(Clock::now() - start).count());
    if (half_width <= o.target) break;
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::cout << nlohmann::json{{"workers", estimates.size()},
                              {"ratio", ratio},
                              {"half_width", half_width},
                              {"settled", half_width <= o.target},
                              {"seconds", std::round(seconds * 10) / 10},
                              {"pairs_per_worker", o.pairs}}
                   .dump()
            << "\n";
  return 0;
}

// A minimal alternation loop: the yardstick for how much machine time tunebench's paired engine
// spends for an interval of a given width. Each worker is a fresh process (this binary run again
// with --child) that builds two identical models (an A/A), warms each up, then times one step of
// each per pair, alternating which goes first (ABBA at the step level), with nothing dropped: no
// blocks of several samples, no discarded samples, no store. Its steps go through the engine's
// own estimator (analysis/paired.h) as one-step blocks with nothing discarded. Workers are added
// one at a time from --min-workers until the interval's half-width is within --target or
// --max-workers is reached. Prints one JSON line: the workers, the half-width, and the wall seconds
// of all workers, process start included.
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
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>
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
  // One line per pair: OFF (A) seconds, ON (B) seconds, whether B went first.
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
    std::cout << fmt::format("{:.9g} {:.9g} {:d}\n", ta, tb, b_first);
  }
  return 0;
}

// Runs this binary again as worker `index`; its steps as the engine's samples, each step a
// block of its own (pairs 2j, 2j+1 in the order taken), or none if it failed.
std::vector<stats::paired::Sample> run_worker(const std::vector<std::string>& args, int index) {
  int out[2];
  if (pipe(out) != 0) return {};
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
  char buffer[4096];
  for (ssize_t n; (n = read(out[0], buffer, sizeof buffer)) > 0;) text.append(buffer, n);
  close(out[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return {};
  std::vector<stats::paired::Sample> samples;
  std::istringstream lines(text);
  double ta = 0, tb = 0;
  int b_first = 0;
  while (lines >> ta >> tb >> b_first) {
    const int block = static_cast<int>(samples.size());
    stats::paired::Sample a, b;
    a.on = false;
    a.seconds = ta;
    b.on = true;
    b.seconds = tb;
    a.block = b_first ? block + 1 : block;
    b.block = b_first ? block : block + 1;
    if (b_first) {
      samples.push_back(b);
      samples.push_back(a);
    } else {
      samples.push_back(a);
      samples.push_back(b);
    }
  }
  return samples;
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
  // The engine's estimator (analysis/paired.h): with one-step blocks and nothing discarded, a
  // worker's estimate is the 10 %-trimmed mean of its pairs' log ratios; across workers, a
  // 95 % t interval.
  stats::paired::Options level;
  level.target = o.target;
  level.discard = 0;
  std::vector<std::vector<stats::paired::Sample>> workers;
  stats::paired::Effect e;
  int failed = 0;
  while (static_cast<int>(workers.size()) < o.max_workers) {
    auto samples = run_worker(args, static_cast<int>(workers.size()) + failed);
    if (samples.empty()) {
      if (++failed > 3) {
        std::cerr << "alternation_probe: more than 3 workers failed\n";
        return 1;
      }
      continue;
    }
    workers.push_back(std::move(samples));
    if (static_cast<int>(workers.size()) < std::max(o.min_workers, level.min_workers)) continue;
    e = stats::paired::estimate(workers, level);
    std::cerr << fmt::format("probe: {} workers, {} after {:.1f}s\n", workers.size(), e.text,
                             std::chrono::duration<double>(Clock::now() - start).count());
    if (stats::paired::settled(e, level)) break;
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::cout << nlohmann::json{{"workers", workers.size()},
                              {"ratio", e.ratio},
                              {"half_width", e.half_width},
                              {"settled", stats::paired::settled(e, level)},
                              {"seconds", std::round(seconds * 10) / 10},
                              {"pairs_per_worker", o.pairs}}
                   .dump()
            << "\n";
  return 0;
}

// The paired-measurement study: how narrow and how honest an in-process paired
// interval is on this machine. Each experiment runs `--workers` fresh `tunebench worker`
// processes one after the other, each holding both arms of the experiment and alternating them in
// ABBA blocks (worker/paired.h, counterbalanced: odd workers start with ON), and estimates the
// effect across workers (analysis/paired.h). The ON arm is the OFF arm plus an injected slowdown
// of --slow per cent (the positive control; 0 is the A/A control), so the truth is known:
// 1 + slow/100. Prints each experiment's effect, then the median and 90th-percentile half-width,
// how often the interval covered the truth, how often it was settled (±target) and detected a
// slowdown, and the machine time per experiment.
//
//   build/debian/tunebench_paired_study --tunebench build/debian/tunebench [--experiments 10]
//       [--workers 4] [--blocks 16] [--block-samples 4] [--slow 0] [--model resnet50]
//       [--preset full] [--options '{"image_size": 96}'] [--batch 4] [--mode infer]
//       [--knob KNOB]   (a real knob instead of the injected slowdown: the truth is then unknown)
//       [--settings '{"malloc_tunables": true}']   (a baseline both arms share)
//
// Run it on a quiet host (/proc/pressure/cpu) with nothing else on the cores.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "analysis/paired.h"
#include "analysis/stats.h"
#include "knobs/knobs.h"
#include "run/orchestrator.h"

using namespace tunebench;
using nlohmann::json;

namespace {

struct StudyOptions {
  std::string tunebench = "build/debian/tunebench";
  int experiments = 10, workers = 4, blocks = 16, block_samples = 4, warmup = 3, iterations = 1;
  double slow = 0;
  std::string model = "resnet50", preset = "full", options = R"({"image_size": 96})";
  std::string mode = "infer", knob, settings = "{}";
  int64_t batch = 4;
};

PairedSpec paired_spec(const StudyOptions& o, int worker) {
  TrialSpec t;
  t.experiment = o.knob.empty() ? "paired_study" : o.knob + "." + o.model;
  t.knob = o.knob.empty() ? "aa_control" : o.knob;
  t.model = {o.model, o.preset, json::parse(o.options)};
  t.mode = mode_from_string(o.mode);
  t.batch = o.batch;
  t.warmup = o.warmup;
  t.samples = 1;
  t.iterations = o.iterations;
  t.timeout_s = 600;
  t.seed = 1;
  t.settings = knobs::base_settings(knobs::probe_host());
  const json baseline = json::parse(o.settings);  // kept alive: items() refers to it
  for (const auto& [key, value] : baseline.items()) t.settings[key] = value;
  PairedSpec spec;
  spec.off = spec.on = t;
  spec.off.arm = "off";
  spec.on.arm = "on";
  if (!o.knob.empty()) {
    const knobs::Knob* knob = knobs::find(o.knob);
    if (!knob) throw std::invalid_argument("unknown knob '" + o.knob + "'");
    spec.off.settings[o.knob] = knob->off;
    spec.on.settings[o.knob] = knob->on;
  } else if (o.slow > 0) {
    spec.on.settings[knobs::kFaultSetting] = fmt::format("slow:{:g}", o.slow);
  }
  if (!knobs::pairable(spec.off.settings, spec.on.settings)) {
    throw std::invalid_argument("knob '" + o.knob + "' cannot alternate inside one process");
  }
  spec.blocks = o.blocks;
  spec.block_samples = o.block_samples;
  spec.on_first = worker % 2 == 1;
  return spec;
}

std::vector<PairedSample> run_worker(const StudyOptions& o, const PairedSpec& spec) {
  const auto setup = knobs::process_setup(spec.off.settings);
  std::vector<std::string> argv = setup.launcher;
  argv.push_back(std::filesystem::absolute(o.tunebench).string());
  argv.push_back("worker");
  const auto out = orchestrator::spawn(argv, orchestrator::worker_environment(setup),
                                       to_json(spec).dump(), spec.off.timeout_s);
  const PairedResult r = paired_result_from_json(json::parse(out.out));
  if (r.status != "ok") throw std::runtime_error("worker failed: " + r.error + "\n" + out.err_tail);
  for (const auto* arm : {&r.off, &r.on}) {
    const auto& settings = arm == &r.off ? spec.off.settings : spec.on.settings;
    const auto wrong = knobs::check_evidence(settings, spec.off.mode, arm->evidence);
    if (!wrong.empty()) throw std::runtime_error("evidence contradicts the settings: " + wrong[0]);
  }
  return r.samples;
}

}  // namespace

int main(int argc, char** argv) {
  StudyOptions o;
  CLI::App app{"Paired in-process measurement study: A/A and injected slowdowns"};
  app.add_option("--tunebench", o.tunebench, "the tunebench binary whose worker runs the trials");
  app.add_option("--experiments", o.experiments, "experiments to run")->check(CLI::PositiveNumber);
  app.add_option("--workers", o.workers, "worker processes per experiment")
      ->check(CLI::Range(2, 64));
  app.add_option("--blocks", o.blocks, "ABBA blocks per worker")->check(CLI::Range(2, 10000));
  app.add_option("--block-samples", o.block_samples, "samples per block (the first is dropped)")
      ->check(CLI::Range(2, 1000));
  app.add_option("--iterations", o.iterations, "steps per sample")->check(CLI::PositiveNumber);
  app.add_option("--slow", o.slow, "injected slowdown of the ON arm, per cent (0: A/A)")
      ->check(CLI::Range(0.0, 1000.0));
  app.add_option("--knob", o.knob, "a catalog knob instead of the injected slowdown");
  app.add_option("--settings", o.settings,
                 "baseline settings of both arms as JSON, e.g. '{\"malloc_tunables\": true}'");
  app.add_option("--model", o.model);
  app.add_option("--preset", o.preset);
  app.add_option("--options", o.options, "model options as JSON");
  app.add_option("--batch", o.batch)->check(CLI::PositiveNumber);
  app.add_option("--mode", o.mode)->check(CLI::IsMember({"infer", "train"}));
  CLI11_PARSE(app, argc, argv);

  try {
    stats::paired::Options options;
    const double truth = 1 + o.slow / 100;
    std::vector<double> widths;
    int covered = 0, settled = 0, detected = 0;
    double machine_seconds = 0;
    for (int e = 0; e < o.experiments; ++e) {
      const auto start = std::chrono::steady_clock::now();
      std::vector<std::vector<PairedSample>> workers;
      for (int w = 0; w < o.workers; ++w) workers.push_back(run_worker(o, paired_spec(o, w)));
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      machine_seconds += seconds;
      const auto effect = stats::paired::estimate(workers, options);
      widths.push_back(effect.half_width);
      covered += effect.lo <= truth && truth <= effect.hi;
      settled += stats::paired::settled(effect, options);
      detected += effect.lo > 1;
      std::cout << fmt::format(
                       "experiment {:2d}: {}  ±{:.2f}%  pairs {} dropped {}  worker sd {:.2f}% "
                       "pair sd {:.2f}%  {:.0f} s",
                       e + 1, effect.text, 100 * effect.half_width, effect.pairs, effect.dropped,
                       100 * effect.between_worker_sd, 100 * effect.within_worker_sd, seconds)
                << std::endl;
    }
    const double n = o.experiments;
    std::cout << fmt::format(
        "\n{} experiments of {} workers x {} blocks x {} samples of {} steps, {} {}/{} {} batch "
        "{}, "
        "settings {}, {}: "
        "half-width median ±{:.2f}% p90 ±{:.2f}%; truth {:.2f} inside {:.0f}%; settled (±{:g}%) "
        "{:.0f}%; slowdown detected {:.0f}%; {:.0f} s of machine time per experiment\n",
        o.experiments, o.workers, o.blocks, o.block_samples, o.iterations, o.model, o.preset,
        o.options, o.mode, o.batch, o.settings,
        o.knob.empty() ? fmt::format("injected slowdown {:g}%", o.slow) : o.knob,
        100 * stats::median(widths), 100 * stats::quantile(widths, 0.9), truth, 100 * covered / n,
        100 * options.target, 100 * settled / n, 100 * detected / n, machine_seconds / n);
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "paired_study: " << e.what() << "\n";
    return 1;
  }
}

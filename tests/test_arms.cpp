// Arms as values: one worker process holding both arms of an experiment (worker/trial.h,
// prepare_pair) gives each arm the same correctness-guard value and the same evidence as a worker
// holding that arm alone (run_trial), whichever arm runs on which iteration; a model is shared
// only where neither arm changes it.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>
#include <vector>

#include "knobs/autograd.h"
#include "knobs/knobs.h"
#include "knobs/precision.h"
#include "worker/paired.h"
#include "worker/trial.h"
#include "worker/worker.h"

namespace tunebench {
namespace {

using nlohmann::json;

TrialSpec arm_spec(const std::string& model, Mode mode, const std::string& knob, bool on) {
  TrialSpec t;
  t.experiment = knob + "." + model;
  t.knob = knob;
  t.arm = on ? "on" : "off";
  t.model = {model, "tiny"};
  t.mode = mode;
  t.batch = 2;
  t.warmup = 1;
  t.samples = 2;
  t.iterations = 1;
  t.timeout_s = 120;
  t.settings = {{"omp_threads", 2}, {"allocator", "glibc"}, {knob, on}};
  return t;
}

// Both arms of `knob` held in one process, run in turn (ON, OFF, ON, …) and then each through
// warm-up, measurement and read-back; against each arm run alone. `keys`: the knob's evidence.
void expect_pair_matches_single(const std::string& model, Mode mode, const std::string& knob,
                                const std::vector<std::string>& keys, bool shared_model) {
  const TrialSpec off = arm_spec(model, mode, knob, false), on = arm_spec(model, mode, knob, true);
  const TrialResult single_off = worker::run_trial(off), single_on = worker::run_trial(on);
  ASSERT_EQ(single_off.status, "ok") << single_off.error;
  ASSERT_EQ(single_on.status, "ok") << single_on.error;

  worker::ArmPair pair = worker::prepare_pair(off, on);
  EXPECT_EQ(pair.shared_model, shared_model) << knob;
  EXPECT_EQ(pair.off->model == pair.on->model, shared_model) << knob;
  for (int i = 0; i < 3; ++i) {
    pair.on->iteration();
    pair.off->iteration();
  }
  for (worker::Arm* arm : {pair.off.get(), pair.on.get()}) {
    worker::warm_up(*arm);
    const auto m = worker::measure(*arm);
    EXPECT_EQ(m.sample_seconds.size(), 2u);
    EXPECT_TRUE(m.error.empty()) << m.error;
    worker::read_back(*arm);
  }

  EXPECT_DOUBLE_EQ(pair.off->check_value, single_off.check_value) << knob;
  EXPECT_DOUBLE_EQ(pair.on->check_value, single_on.check_value) << knob;
  for (const auto& key : keys) {
    ASSERT_TRUE(single_off.evidence.contains(key)) << key;
    EXPECT_EQ(pair.off->evidence[key], single_off.evidence[key]) << knob << " OFF: " << key;
    EXPECT_EQ(pair.on->evidence[key], single_on.evidence[key]) << knob << " ON: " << key;
  }
  // The arms still differ as the knob says: the pair did not make one arm of the other.
  bool differs = false;
  for (const auto& key : keys) differs |= pair.off->evidence[key] != pair.on->evidence[key];
  EXPECT_TRUE(differs) << knob;
}

// A device whose read-back is long, as the CUDA one's is (about twenty entries, some strings).
class ChattyDevice : public device_trial::DeviceTrial {
 public:
  json evidence() const override {
    json e = json::object();
    for (int i = 0; i < 24; ++i) {
      e["device_key_" + std::to_string(i)] =
          "a value longer than a short string's buffer, #" + std::to_string(i);
    }
    e["host_syncs_per_step"] = 0.5;
    return e;
  }
};

// Everything the device reads back reaches the arm's evidence. The worker once looped over the
// items of evidence()'s temporary after it was destroyed: on the first GPU run every CUDA trial
// crashed or hung there (the CPU's evidence is empty, so no CPU trial met it).
TEST(Arms, ReadBackKeepsAllOfTheDevicesEvidence) {
  auto arm = worker::set_up(arm_spec("gpt", Mode::infer, "no_grad", true));
  arm->device = std::make_unique<ChattyDevice>();
  worker::read_back(*arm);
  for (int i = 0; i < 24; ++i) {
    const std::string key = "device_key_" + std::to_string(i);
    ASSERT_TRUE(arm->evidence.contains(key)) << key;
    EXPECT_EQ(arm->evidence[key],
              "a value longer than a short string's buffer, #" + std::to_string(i));
  }
  EXPECT_EQ(arm->evidence["host_syncs_per_step"], 0.5);
  EXPECT_EQ(arm->evidence["device"], "cpu");
  EXPECT_TRUE(arm->evidence.contains("grad_mode_in_step")) << arm->evidence.dump();
}

TEST(Arms, BothArmsOfChannelsLastInOneWorkerMatchEachArmAlone) {
  // channels_last changes the model's layout: each arm has its own model.
  expect_pair_matches_single("resnet50", Mode::infer, "channels_last",
                             {"input_channels_last", "weight_channels_last"},
                             /*shared_model=*/false);
}

TEST(Arms, BothArmsOfNoGradInOneWorkerShareTheModelAndMatchEachArmAlone) {
  // no_grad changes only the step: one model serves both arms.
  expect_pair_matches_single("resnet50", Mode::infer, "no_grad", {"grad_mode_in_step"},
                             /*shared_model=*/true);
}

TEST(Arms, TrainingArmsAndArmsThatChangeTheModelNeverShareOne) {
  EXPECT_TRUE(worker::can_share_model(arm_spec("gpt", Mode::infer, "no_grad", false),
                                      arm_spec("gpt", Mode::infer, "no_grad", true)));
  // A training step changes the weights.
  EXPECT_FALSE(worker::can_share_model(arm_spec("gpt", Mode::train, "zero_grad_none", false),
                                       arm_spec("gpt", Mode::train, "zero_grad_none", true)));
  // A build-time switch builds another model; a scripted forward replaces the model's.
  EXPECT_FALSE(worker::can_share_model(arm_spec("gpt", Mode::infer, "vocab_pad", false),
                                       arm_spec("gpt", Mode::infer, "vocab_pad", true)));
  EXPECT_FALSE(worker::can_share_model(arm_spec("gpt", Mode::infer, "jit_fusion", false),
                                       arm_spec("gpt", Mode::infer, "jit_fusion", true)));
  // Another seed draws other weights.
  TrialSpec other = arm_spec("gpt", Mode::infer, "no_grad", true);
  other.seed += 1;
  EXPECT_FALSE(worker::can_share_model(arm_spec("gpt", Mode::infer, "no_grad", false), other));
}

// A paired trial (worker/paired.h): both arms in one process, alternating in ABBA blocks; each
// arm keeps the guard value and the evidence it has alone, every sample says which arm and block
// it is, and what the process spent and waited on it.
void expect_paired_trial(const std::string& model, Mode mode, const std::string& knob,
                         const std::string& key, bool on_first) {
  PairedSpec spec;
  spec.off = arm_spec(model, mode, knob, false);
  spec.on = arm_spec(model, mode, knob, true);
  spec.blocks = 6;
  spec.block_samples = 3;
  spec.on_first = on_first;
  const TrialResult single_off = worker::run_trial(spec.off),
                    single_on = worker::run_trial(spec.on);
  const PairedResult r = worker::run_paired(spec);
  ASSERT_EQ(r.status, "ok") << r.error;
  ASSERT_EQ(r.samples.size(), 18u);
  const std::vector<bool> order = abba_order(6, on_first);
  EXPECT_EQ(order.front(), on_first);
  int64_t last_start = 0;
  for (const PairedSample& s : r.samples) {
    EXPECT_EQ(s.on, order[size_t(s.block)]) << "block " << s.block;
    EXPECT_GE(s.position, 0);
    EXPECT_LT(s.position, 3);
    EXPECT_GT(s.seconds, 0);
    EXPECT_GT(s.cpu_seconds, 0);
    EXPECT_GE(s.wait_seconds, 0);
    EXPECT_GE(s.involuntary_switches, 0);
    EXPECT_GT(s.start_ns, last_start);
    last_start = s.start_ns;
  }
  EXPECT_EQ(r.off.sample_seconds.size(), 9u);
  EXPECT_EQ(r.on.sample_seconds.size(), 9u);
  EXPECT_DOUBLE_EQ(r.off.check_value, single_off.check_value) << knob;
  EXPECT_DOUBLE_EQ(r.on.check_value, single_on.check_value) << knob;
  EXPECT_EQ(r.off.evidence[key], single_off.evidence[key]) << knob << " OFF: " << key;
  EXPECT_EQ(r.on.evidence[key], single_on.evidence[key]) << knob << " ON: " << key;
  EXPECT_NE(r.off.evidence[key], r.on.evidence[key]) << key;
  // The knob's own evidence check passes for each arm (this test process was not started with
  // the process-start settings, omp_threads and allocator, so those are not checked here).
  for (bool on : {false, true}) {
    const auto wrong = knobs::check_evidence({{knob, on}}, mode, (on ? r.on : r.off).evidence);
    EXPECT_TRUE(wrong.empty()) << knob << (on ? " ON: " : " OFF: ") << wrong.front();
  }
  EXPECT_EQ(r.on.evidence["paired"]["on_first"], on_first);
  // Through the JSON the worker answers with.
  // Each sample is written once (in its arm's paired_samples) and the order taken comes back.
  const nlohmann::json answer = to_json(r);
  EXPECT_FALSE(answer.contains("samples"));
  const PairedResult back = paired_result_from_json(answer);
  ASSERT_EQ(back.samples.size(), r.samples.size());
  for (size_t i = 0; i < r.samples.size(); ++i) {
    EXPECT_EQ(back.samples[i].block, r.samples[i].block);
    EXPECT_EQ(back.samples[i].position, r.samples[i].position);
    EXPECT_DOUBLE_EQ(back.samples[i].seconds, r.samples[i].seconds);
  }
}

TEST(Arms, APairedNoGradTrialAlternatesTheArmsAndKeepsEachArmsGuardAndEvidence) {
  expect_paired_trial("resnet50", Mode::infer, "no_grad", knobs::autograd::kGradModeInStep,
                      /*on_first=*/true);
}

TEST(Arms, APairedTrainingTrialGivesEachArmItsOwnModelAndItsOwnEvidence) {
  expect_paired_trial("gpt", Mode::train, "zero_grad_none", knobs::autograd::kGradsDefinedAfterZero,
                      /*on_first=*/false);
}

TEST(Arms, APairedSpecRefusesArmsOfDifferentExperimentsOrTooFewBlocks) {
  PairedSpec spec;
  spec.off = arm_spec("gpt", Mode::infer, "no_grad", false);
  spec.on = arm_spec("gpt", Mode::infer, "no_grad", true);
  EXPECT_NO_THROW(paired_spec_from_json(to_json(spec)));
  spec.on.seed += 1;
  EXPECT_THROW(paired_spec_from_json(to_json(spec)), std::invalid_argument);
  spec.on.seed -= 1;
  spec.blocks = 1;
  EXPECT_THROW(paired_spec_from_json(to_json(spec)), std::invalid_argument);
}

// A resident worker answers only once its other threads have stopped running (OpenMP workers spin
// on after a parallel region), so that the other process of its pair times on a quiet host: the
// wait lasts while another thread burns CPU, and ends soon after it stops.
TEST(Arms, AResidentWorkerWaitsUntilItsOtherThreadsAreIdle) {
  // A spinning thread reads as idle in any 10-ms window it spends off a CPU, which on a loaded
  // 2-core host (ctest -j2 beside another test's threads) happens now and then: seen once in CI,
  // a wait meant to reach its 0.3-s limit ended at 0.12 s. So each spinner is running before the
  // wait starts, and a wait cut short is tried again, up to three times; a wait that never waits,
  // or never stops at its limit, fails all three.
  struct Spinner {  // a thread that spins until `spin` is cleared, running once constructed
    std::atomic<bool> spin{true};
    std::atomic<bool> running{false};
    std::thread thread{[this] {
      while (spin.load()) running = true;
    }};
    Spinner() {
      while (!running.load()) std::this_thread::yield();
    }
    ~Spinner() {
      spin = false;
      thread.join();
    }
  };
  double waited = 0;
  for (int attempt = 0; attempt < 3 && waited < 0.15; ++attempt) {
    Spinner busy;
    std::thread stopper([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      busy.spin = false;
    });
    waited = worker::wait_until_threads_idle(2.0);
    stopper.join();
  }
  EXPECT_GE(waited, 0.15);  // the busy thread ran for 200 ms
  EXPECT_LT(waited, 1.5);   // and the wait ended after it stopped, not at the limit
  // With nothing running beside it the wait is one window or two.
  EXPECT_LT(worker::wait_until_threads_idle(2.0), 0.5);
  // A thread that never stops does not hold the worker beyond the limit.
  double limited = 0;
  for (int attempt = 0; attempt < 3 && limited < 0.3; ++attempt) {
    Spinner forever;
    limited = worker::wait_until_threads_idle(0.3);
  }
  EXPECT_GE(limited, 0.3);
  EXPECT_LT(limited, 1.0);
}

// Before a pair, a worker waits for a quiet host, but not forever: with more spinning threads than
// cores, some task always waits for a CPU, and the wait ends at its limit saying the host was busy.
TEST(Arms, APairWaitsForAQuietHostNoLongerThanItsLimit) {
  if (!std::filesystem::exists("/proc/pressure/cpu")) GTEST_SKIP() << "no CPU pressure here";
  std::atomic<bool> spin{true};
  std::vector<std::thread> busy;
  for (unsigned i = 0; i < std::thread::hardware_concurrency() + 1; ++i) {
    busy.emplace_back([&] {
      while (spin.load()) {
      }
    });
  }
  const worker::QuietWait w = worker::wait_for_quiet_host(0.3);
  spin = false;
  for (auto& t : busy) t.join();
  EXPECT_FALSE(w.quiet);
  EXPECT_GE(w.seconds, 0.3);
  EXPECT_LT(w.seconds, 1.0);
}

// A pair starts at once where the host was quiet through the pair before it, and waits for a
// quiet host where it was not: with more spinning threads than cores beside the worker, every
// pair waits (each pair is one or the other, counted in the arm's evidence).
TEST(Arms, APairStartsAtOnceOnlyAfterAQuietPair) {
  if (!std::filesystem::exists("/proc/pressure/cpu")) GTEST_SKIP() << "no CPU pressure here";
  PairedSpec spec;
  spec.off = arm_spec("resnet50", Mode::infer, "no_grad", false);
  spec.on = arm_spec("resnet50", Mode::infer, "no_grad", true);
  spec.blocks = 8;
  spec.block_samples = 1;
  auto pairs_of = [](const PairedResult& r) {
    const auto& p = r.on.evidence["paired"];
    return std::pair{p.value("quiet_since_pairs", 0), p.value("waited_pairs", 0)};
  };
  const PairedResult alone = worker::run_paired(spec);
  ASSERT_EQ(alone.status, "ok") << alone.error;
  const auto [quiet, waited] = pairs_of(alone);
  EXPECT_EQ(quiet + waited, 4);
  EXPECT_GE(waited, 1);  // the first pair has no pair before it
  std::atomic<bool> spin{true};
  std::vector<std::thread> busy;
  for (unsigned i = 0; i < std::thread::hardware_concurrency() + 1; ++i) {
    busy.emplace_back([&] {
      while (spin.load()) {
      }
    });
  }
  spec.blocks = 4;  // a loaded host's steps are slow, and each pair waits up to its limit
  const PairedResult loaded = worker::run_paired(spec);
  spin = false;
  for (auto& t : busy) t.join();
  ASSERT_EQ(loaded.status, "ok") << loaded.error;
  EXPECT_EQ(pairs_of(loaded), (std::pair{0, 2}));
}

// Which arm of onednn a program that sets nothing runs is measured, not assumed: a trial that
// does not set it reads back LibTorch's oneDNN switch, and that is the arm the catalog declares
// unset (knobs::unset_value) — ON, since LibTorch enables oneDNN unless told not to. (Declared
// OFF, tune's ladder measured a 3x speed-up against ATen's own convolutions, which nobody runs.)
TEST(Arms, WhatAProgramThatSetsNothingRunsIsMeasuredAndTheCatalogSaysIt) {
  const knobs::Knob* k = knobs::find("onednn");
  ASSERT_NE(k, nullptr);
  TrialSpec unset = arm_spec("resnet50", Mode::infer, "no_grad", false);
  unset.settings.erase("no_grad");
  const TrialResult r = worker::run_trial(unset);
  ASSERT_EQ(r.status, "ok") << r.error;
  const auto& read = r.evidence[knobs::precision::kOneDnnInStep];
  ASSERT_TRUE(read.is_boolean()) << r.evidence.dump();
  const TrialResult on = worker::run_trial(arm_spec("resnet50", Mode::infer, "onednn", true));
  const TrialResult off = worker::run_trial(arm_spec("resnet50", Mode::infer, "onednn", false));
  ASSERT_EQ(on.status, "ok") << on.error;
  ASSERT_EQ(off.status, "ok") << off.error;
  const bool runs_on = read == on.evidence[knobs::precision::kOneDnnInStep];
  EXPECT_NE(read, off.evidence[knobs::precision::kOneDnnInStep]);
  knobs::HostCaps host;
  EXPECT_EQ(knobs::unset_value(*k, host),
            runs_on ? knobs::resolve(*k, k->on, host) : knobs::resolve(*k, k->off, host));
}

}  // namespace
}  // namespace tunebench

// Each knob really changes what it claims to change: the real `tunebench worker` runs a trial in a
// fresh process with the environment the orchestrator would give it, and its read-back evidence
// is checked against the setting.
#include <gtest/gtest.h>

#include "harness/knobs.h"
#include "harness/orchestrator.h"
#include "harness/worker.h"

namespace tunebench {
namespace {

TrialSpec tiny_trial(const std::string& model, Mode mode, nlohmann::json settings) {
  TrialSpec t;
  t.experiment = "test";
  t.knob = "test";
  t.arm = "on";
  t.model = {model, "tiny"};
  t.mode = mode;
  t.batch = 2;
  t.warmup = 1;
  t.samples = 2;
  t.iterations = 1;
  t.timeout_s = 120;
  t.settings = {{"omp_threads", 2}, {"allocator", "glibc"}};
  for (const auto& [k, v] : settings.items()) t.settings[k] = v;
  return t;
}

// Runs the worker as the orchestrator does; `extra_env` overrides what the knobs set.
TrialResult run_worker(const TrialSpec& t,
                       const std::map<std::string, std::string>& extra_env = {}) {
  const auto setup = knobs::process_setup(t.settings);
  std::map<std::string, std::string> env{{"PATH", "/usr/bin:/bin"}};
  for (const auto& [k, v] : setup.env) env[k] = v;
  if (!setup.preload.empty()) env["LD_PRELOAD"] = setup.preload.front();
  for (const auto& [k, v] : extra_env) env[k] = v;
  const auto w = orchestrator::spawn({TUNEBENCH_BINARY, "worker"}, env, to_json(t).dump(), 120);
  EXPECT_EQ(w.exit_code, 0) << w.err_tail;
  auto r = trial_result_from_json(nlohmann::json::parse(w.out));
  EXPECT_EQ(r.status, "ok") << r.error;
  EXPECT_EQ(r.sample_seconds.size(), 2u);
  return r;
}

TEST(KnobEvidence, OmpThreadsSetsTheVariableAndTheIntraOpThreads) {
  for (int n : {1, 2}) {
    const auto t = tiny_trial("gpt", Mode::infer, {{"omp_threads", n}});
    const auto r = run_worker(t);
    EXPECT_EQ(r.evidence["torch_threads"], n);
    EXPECT_EQ(r.evidence["env"]["OMP_NUM_THREADS"], std::to_string(n));
    EXPECT_TRUE(knobs::check_evidence(t.settings, t.mode, r.evidence).empty());
  }
}

TEST(KnobEvidence, AMismatchedEnvironmentIsCaught) {
  // The trial asks for 1 thread but the process is started with OMP_NUM_THREADS=2.
  const auto t = tiny_trial("gpt", Mode::infer, {{"omp_threads", 1}});
  const auto r = run_worker(t, {{"OMP_NUM_THREADS", "2"}});
  const auto wrong = knobs::check_evidence(t.settings, t.mode, r.evidence);
  ASSERT_EQ(wrong.size(), 1u);
  EXPECT_EQ(wrong[0], "omp_threads=1 but the worker's OMP_NUM_THREADS was 2");
}

TEST(KnobEvidence, TheAllocatorLibraryIsMappedInTheWorker) {
  for (const std::string allocator : {"glibc", "jemalloc", "tcmalloc"}) {
    const auto t = tiny_trial("dlrm", Mode::train, {{"allocator", allocator}});
    const auto r = run_worker(t);
    EXPECT_EQ(r.evidence["allocator"], allocator) << r.evidence["mapped_libraries"].dump();
    bool mapped = false;
    for (const auto& lib : r.evidence["mapped_libraries"]) {
      mapped |= lib.get<std::string>().find(allocator) != std::string::npos;
    }
    EXPECT_EQ(mapped, allocator != "glibc") << r.evidence["mapped_libraries"].dump();
  }
}

TEST(KnobEvidence, NoGradTurnsGradModeOffInTheMeasuredStep) {
  for (bool on : {false, true}) {
    const auto r = worker::run_trial(tiny_trial("resnet50", Mode::infer, {{"no_grad", on}}));
    EXPECT_EQ(r.evidence["grad_mode_in_step"], !on);
  }
}

TEST(KnobEvidence, ZeroGradNoneLeavesGradientsUndefined) {
  for (bool on : {false, true}) {
    const auto r = worker::run_trial(tiny_trial("gpt", Mode::train, {{"zero_grad_none", on}}));
    EXPECT_EQ(r.evidence["grads_defined_after_zero"], !on);
  }
}

TEST(KnobEvidence, ChannelsLastChangesTheLayoutButNotTheFunction) {
  const auto off =
      worker::run_trial(tiny_trial("resnet50", Mode::infer, {{"channels_last", false}}));
  const auto on = worker::run_trial(tiny_trial("resnet50", Mode::infer, {{"channels_last", true}}));
  EXPECT_EQ(off.evidence["input_channels_last"], false);
  EXPECT_EQ(off.evidence["weight_channels_last"], false);
  EXPECT_EQ(on.evidence["input_channels_last"], true);
  EXPECT_EQ(on.evidence["weight_channels_last"], true);
  // The correctness guard: both layouts compute the same outputs.
  EXPECT_NEAR(on.check_value / off.check_value, 1.0, knobs::guard_tolerance("channels_last"));
}

TEST(Worker, TheProbeAndMemoryFiguresAreRecorded) {
  const auto r = worker::run_trial(tiny_trial("resnet50", Mode::train, {}));
  EXPECT_GT(r.probe_seconds, 0);
  EXPECT_GT(r.peak_rss_bytes, 10 << 20);  // LibTorch alone maps more than 10 MiB
  EXPECT_GE(r.page_faults_per_iteration, 0);
  EXPECT_EQ(r.device_peak_bytes, -1);
  EXPECT_GT(r.items_per_second, 0);
}

}  // namespace
}  // namespace tunebench

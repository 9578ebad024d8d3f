// Each knob really changes what it claims to change: the real `tunebench worker` runs a trial in a
// fresh process with the environment the orchestrator would give it, and its read-back evidence
// is checked against the setting.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>

#include "knobs/knobs.h"
#include "models/registry.h"
#include "plan/plan.h"
#include "platform/compat.h"
#include "run/host.h"
#include "run/orchestrator.h"
#include "tests/paths.h"
#include "worker/heap_offset.h"
#include "worker/trial.h"
#include "worker/worker.h"

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
  std::vector<std::string> argv = setup.launcher;
  argv.push_back(test_paths::tunebench_binary());
  argv.push_back("worker");
  const auto w = orchestrator::spawn(argv, env, to_json(t).dump(), 120);
  EXPECT_EQ(w.exit_code, 0) << w.err_tail;
  auto r = trial_result_from_json(nlohmann::json::parse(w.out));
  EXPECT_EQ(r.status, "ok") << r.error;
  EXPECT_EQ(r.sample_seconds.size(), 2u);
  return r;
}

// A positive control's ON arm (and the test-only slow:PCT fault) busy-waits the known fraction of
// every measured step after it, and reports the stretched time.
TEST(PositiveControl, EachStepIsStretchedByTheKnownFractionInWallTime) {
  const auto start = std::chrono::steady_clock::now();
  const double stretched = worker::stretch(0.02, 0.5);
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_DOUBLE_EQ(stretched, 0.03);
  EXPECT_GE(waited, 0.01);
  EXPECT_DOUBLE_EQ(worker::stretch(0.02, 0), 0.02);
  TrialSpec spec;
  spec.settings = {{"no_grad", true}, {"slowdown", 3}};
  EXPECT_DOUBLE_EQ(knobs::slowdown_fraction(spec.settings), 0.03);
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

// onednn's OFF arm must run every convolution in ATen's own kernels and ON in oneDNN's (seen by
// the profiler in the arm's first step), computing the same outputs; and the check must refuse a
// trial whose kernels contradict its setting.
TEST(KnobEvidence, OneDnnOffRunsNoConvolutionInOneDnnAndKeepsTheFunction) {
  const auto off = worker::run_trial(tiny_trial("resnet50", Mode::infer, {{"onednn", false}}));
  const auto on = worker::run_trial(tiny_trial("resnet50", Mode::infer, {{"onednn", true}}));
  ASSERT_EQ(off.status, "ok") << off.error;
  ASSERT_EQ(on.status, "ok") << on.error;
  EXPECT_EQ(off.evidence["onednn_in_step"], false);
  EXPECT_EQ(on.evidence["onednn_in_step"], true);
  EXPECT_GT(off.evidence["conv_calls"].get<int64_t>(), 0);
  EXPECT_EQ(off.evidence["onednn_conv_calls"], 0);
  EXPECT_GT(on.evidence["onednn_conv_calls"].get<int64_t>(), 0);
  EXPECT_TRUE(knobs::check_evidence({{"onednn", false}}, Mode::infer, off.evidence).empty());
  EXPECT_TRUE(knobs::check_evidence({{"onednn", true}}, Mode::infer, on.evidence).empty());
  EXPECT_FALSE(knobs::check_evidence({{"onednn", true}}, Mode::infer, off.evidence).empty());
  EXPECT_NEAR(on.check_value / off.check_value, 1.0, knobs::guard_tolerance("onednn"));
  // The process-wide switch is restored after each step: it does not leak into the next trial.
  EXPECT_TRUE(at::globalContext().userEnabledMkldnn());
}

// The heap offset a resident pair's processes are sent (worker/heap_offset.h): five digits
// whatever the draw, so both arms' environments have one size; anything out of range or not in
// that form is ignored (0), and the worker then draws its own.
TEST(Worker, TheHeapOffsetTravelsAsFiveDigitsAndOnlyAValidOneIsTaken) {
  EXPECT_EQ(worker::heap_offset_text(16), "00016");
  EXPECT_EQ(worker::heap_offset_text(65536), "65536");
  for (int i = 0; i < 1000; ++i) {
    const size_t bytes = worker::draw_heap_offset();
    ASSERT_EQ(worker::heap_offset_text(bytes).size(), 5u);
    ASSERT_EQ(worker::heap_offset_from(worker::heap_offset_text(bytes)), bytes);
  }
  for (const char* bad :
       {"", "0", "00000", "00017", "65552", "99999", "123456", "-0016", "1e3", " 0016", "abcde"}) {
    EXPECT_EQ(worker::heap_offset_from(bad), 0u) << "'" << bad << "'";
  }
  EXPECT_EQ(worker::heap_offset_from("16"), 16u);  // leading zeros are how it is sent, not required
}

TEST(Worker, TheProbeAndMemoryFiguresAreRecorded) {
  const auto r = worker::run_trial(tiny_trial("resnet50", Mode::train, {}));
  EXPECT_GT(r.probe_seconds, 0);
  EXPECT_GT(r.peak_rss_bytes, 10 << 20);  // LibTorch alone maps more than 10 MiB
  EXPECT_GE(r.page_faults_per_iteration, 0);
  EXPECT_EQ(r.device_peak_bytes, -1);
  EXPECT_GT(r.items_per_second, 0);
  // The reference kernel (core/reference.h), twice before and twice after the measured region.
  ASSERT_EQ(r.reference_seconds.size(), 4u);
  for (double s : r.reference_seconds) EXPECT_GT(s, 0);
}

// The studies' slowed build: TUNEBENCH_TEST_SLOWDOWN slows the trials whose
// "experiment/arm" begins with a name, and the worker says so in its evidence; which build ran is
// read back too (worker_build's check).
TEST(Worker, TheStudySlowdownSlowsTheNamedArmOnlyAndTheBuildIsReadBack) {
  TrialSpec spec = tiny_trial("gpt", Mode::infer, {});
  setenv("TUNEBENCH_TEST_SLOWDOWN", "nothing=9,test/on=7", 1);
  EXPECT_DOUBLE_EQ(worker::step_slowdown(spec), 0.07);
  spec.arm = "off";
  EXPECT_DOUBLE_EQ(worker::step_slowdown(spec), 0);
  setenv("TUNEBENCH_TEST_SLOWDOWN", "test=oops,=5", 1);
  EXPECT_DOUBLE_EQ(worker::step_slowdown(spec), 0);
  unsetenv("TUNEBENCH_TEST_SLOWDOWN");
  const auto r =
      run_worker(tiny_trial("gpt", Mode::infer, {}), {{"TUNEBENCH_TEST_SLOWDOWN", "test/on=50"}});
  EXPECT_DOUBLE_EQ(r.evidence.value("injected_slowdown_fraction", 0.0), 0.5);
  EXPECT_EQ(r.evidence.value("executable", ""),
            std::filesystem::canonical(test_paths::tunebench_binary()).string());
  EXPECT_EQ(r.evidence.value("torch_version", ""), compat::torch_version());
}

// A worker's read-back as flat "key" / "key.sub" paths, kept where a value says what ran (flags,
// names, counts, library lists) and dropped where it is a measurement (times, bytes, addresses)
// or the launch itself (the environment a program that sets nothing has none of, the executable).
std::map<std::string, nlohmann::json> what_ran(const nlohmann::json& evidence,
                                               const std::string& prefix = "") {
  std::map<std::string, nlohmann::json> out;
  for (const auto& [key, value] : evidence.items()) {
    const std::string path = prefix + key;
    bool measured = false;
    for (const char* part :
         {"_ns", "seconds", "bytes", "offset", "rss", "executable", "launched_as", "injected"}) {
      measured |= path.find(part) != std::string::npos;
    }
    if (measured || path == "env") continue;
    if (value.is_object()) {
      out.merge(what_ran(value, path + "."));
    } else if (!value.is_number_float()) {
      out[path] = value;
    }
  }
  return out;
}

// For every catalog knob, which arm a program that sets nothing runs is measured: a worker started
// with no setting at all and nothing in its environment (no OMP_NUM_THREADS, no preload) reads
// back what it ran, and on every fact its two arms' workers differ in, it must match the arm
// knobs::unset_value names (or neither, where the catalog says a program runs neither). tune
// leaves out or screens against that arm (orchestrator::helping_knobs), so a wrong declaration is
// a wrong recommendation: onednn declared OFF once sent tune's ladder 3x against ATen's own
// convolutions, and omp_threads "all cores" was wrong for Debian's LibTorch on a 2-core AMD EPYC VM
// (it runs 1 thread of 2 unless told).
TEST(KnobEvidence, AProgramThatSetsNothingRunsTheArmTheCatalogSaysForEveryKnob) {
  const knobs::HostCaps host = host::capabilities();
  std::map<std::string, std::map<std::string, nlohmann::json>> unset;  // model/mode: what ran
  std::vector<std::string> checked, skipped;
  for (const auto& k : knobs::catalog()) {
    std::string model, why;
    Mode mode = Mode::infer;
    for (const char* m : {"resnet50", "gpt", "dlrm"}) {
      for (Mode md : {Mode::infer, Mode::train}) {
        if (!model.empty()) break;
        if (knobs::not_applicable_reason(k, m, md, host).empty() &&
            knobs::arm_error(nlohmann::json{{k.id, k.on}}, md, 2).empty()) {
          model = m;
          mode = md;
        }
      }
    }
    if (!k.implemented)
      why = "not implemented";
    else if (model.empty())
      why = "applies to no tiny built-in model here";
    else if (!knobs::several_processes(nlohmann::json{{k.id, k.on}}).empty())
      why = "its ON arm is several processes: a deployment, not a setting of one program";
    else if (k.family == knobs::Family::compile)
      why = "its ON arm compiles the model ahead of time (minutes); no program compiles unasked";
    else if (k.id == "worker_build")
      why = "its arms are builds of tunebench itself (a software A/B)";
    if (!why.empty()) {
      skipped.push_back(k.id + " (" + why + ")");
      continue;
    }
    const std::string where = model + "/" + to_string(mode);
    if (!unset.count(where)) {
      TrialSpec nothing = tiny_trial(model, mode, {});
      nothing.settings = nlohmann::json::object();
      unset[where] = what_ran(run_worker(nothing).evidence);
    }
    const nlohmann::json off = knobs::resolve(k, k.off, host), on = knobs::resolve(k, k.on, host);
    auto arm = [&](const nlohmann::json& value) {
      const TrialSpec t = tiny_trial(model, mode, {{k.id, value}});
      if (k.phase == knobs::Phase::process_start) return what_ran(run_worker(t).evidence);
      const TrialResult r = worker::run_trial(t);
      EXPECT_EQ(r.status, "ok") << k.id << "=" << value.dump() << ": " << r.error;
      return what_ran(r.evidence);
    };
    const auto off_ran = arm(off), on_ran = arm(on), &nothing = unset[where];
    // The facts the arms differ in that a worker also reads back when the knob is not set (some
    // actions report only what they were asked to do).
    std::vector<std::string> differ;
    bool arms_differ = false;
    for (const auto& [key, value] : on_ran) {
      if (!off_ran.count(key) || off_ran.at(key) == value) continue;
      arms_differ = true;
      if (nothing.count(key)) differ.push_back(key);
    }
    if (differ.empty()) {
      skipped.push_back(k.id + (arms_differ ? " (what tells its arms apart is read back only when "
                                              "it is set)"
                                            : " (its arms read back alike: nothing tells them "
                                              "apart)"));
      continue;
    }
    const nlohmann::json claimed = knobs::unset_value(k, host);
    std::string measured;
    for (const auto& key : differ) {
      const nlohmann::json& got = nothing.at(key);
      const std::string said = got == off_ran.at(key)  ? "off"
                               : got == on_ran.at(key) ? "on"
                                                       : "neither";
      if (measured.empty()) measured = said;
      EXPECT_EQ(said, claimed == on    ? std::string("on")
                      : claimed == off ? std::string("off")
                                       : std::string("neither"))
          << k.id << " on " << where << ": " << key << " reads " << got.dump()
          << " with nothing set, off " << off_ran.at(key).dump() << ", on " << on_ran.at(key).dump()
          << "; knobs::unset_value says " << claimed.dump();
    }
    checked.push_back(
        fmt::format("{} {} ({}: {})", k.id, measured, where, fmt::join(differ, ", ")));
  }
  std::cout << "what a program that sets nothing runs, measured (" << checked.size() << "):\n";
  for (const auto& c : checked) std::cout << "  " << c << "\n";
  std::cout << "not measured (" << skipped.size() << "):\n";
  for (const auto& s : skipped) std::cout << "  " << s << "\n";
  EXPECT_GE(checked.size(), 15u);
}

}  // namespace
}  // namespace tunebench

namespace tunebench {
namespace {

TEST(KnobEvidence, InferenceModeRunsTheStepInInferenceModeAgainstNoGrad) {
  const auto off =
      worker::run_trial(tiny_trial("resnet50", Mode::infer, {{"inference_mode", false}}));
  const auto on =
      worker::run_trial(tiny_trial("resnet50", Mode::infer, {{"inference_mode", true}}));
  EXPECT_EQ(off.evidence["inference_mode_in_step"], false);
  EXPECT_EQ(off.evidence["grad_mode_in_step"], false);  // the OFF arm is no-grad
  EXPECT_EQ(on.evidence["inference_mode_in_step"], true);
  EXPECT_DOUBLE_EQ(on.check_value, off.check_value);
}

TEST(KnobEvidence, AnomalyOffTurnsAnomalyDetectionOff) {
  const auto off = worker::run_trial(tiny_trial("gpt", Mode::train, {{"anomaly_off", false}}));
  const auto on = worker::run_trial(tiny_trial("gpt", Mode::train, {{"anomaly_off", true}}));
  EXPECT_EQ(off.evidence["anomaly_mode_in_step"], true);
  EXPECT_EQ(on.evidence["anomaly_mode_in_step"], false);
}

// A build-time switch changes the built model as it claims, and not the function it computes.
void expect_switch(const std::string& knob, const std::string& model, Mode mode, const char* fact,
                   const nlohmann::json& off_value, const nlohmann::json& on_value) {
  const auto off = worker::run_trial(tiny_trial(model, mode, {{knob, false}}));
  const auto on = worker::run_trial(tiny_trial(model, mode, {{knob, true}}));
  EXPECT_EQ(off.evidence["model"][fact], off_value) << knob;
  EXPECT_EQ(on.evidence["model"][fact], on_value) << knob;
  EXPECT_TRUE(knobs::check_evidence({{knob, false}}, mode, off.evidence).empty()) << knob;
  EXPECT_TRUE(knobs::check_evidence({{knob, true}}, mode, on.evidence).empty()) << knob;
  // And the check would notice the other arm's model.
  EXPECT_FALSE(knobs::check_evidence({{knob, true}}, mode, off.evidence).empty()) << knob;
  EXPECT_NEAR(on.check_value / off.check_value, 1.0, knobs::guard_tolerance(knob)) << knob;
}

TEST(KnobEvidence, BuildTimeSwitchesChangeTheModelNotItsFunction) {
  // ResNet-50 has 53 convolutions; with conv_bias_off OFF each has a bias, as many parameters as
  // the registry counts for the conv_bias option.
  const auto plain =
      worker::run_trial(tiny_trial("resnet50", Mode::infer, {{"conv_bias_off", true}}));
  EXPECT_EQ(plain.evidence["model"]["convolutions"], 53);
  const int64_t biases = models::summarize({"resnet50", "tiny", {{"conv_bias", true}}}).parameters -
                         models::summarize({"resnet50", "tiny"}).parameters;
  expect_switch("conv_bias_off", "resnet50", Mode::infer, "conv_bias_parameters", biases, 0);
  expect_switch("inplace_act", "resnet50", Mode::train, "inplace_act", false, true);
  expect_switch("causal_mask_fly", "gpt", Mode::train, "stored_mask_buffers", 2, 0);
  expect_switch("vocab_pad", "gpt", Mode::infer, "vocab_rows", 101, 128);
  expect_switch("builtin_ops", "gpt", Mode::infer, "builtin_ops", false, true);
  expect_switch("flash_attention", "gpt", Mode::infer, "fused_attention", false, true);
}

TEST(KnobEvidence, OpenMpKnobsReachTheWorker) {
  const auto affinity = run_worker(tiny_trial("gpt", Mode::infer, {{"omp_affinity", true}}));
  EXPECT_EQ(affinity.evidence["env"]["OMP_PROC_BIND"], "CLOSE");
  EXPECT_EQ(affinity.evidence["env"]["GOMP_CPU_AFFINITY"], "0-1");
  const auto llvm = run_worker(tiny_trial("resnet50", Mode::infer, {{"omp_runtime", true}}));
  bool mapped = false;
  for (const auto& lib : llvm.evidence["mapped_libraries"]) mapped |= lib == "libomp.so.5";
  EXPECT_TRUE(mapped) << llvm.evidence["mapped_libraries"].dump();
  EXPECT_TRUE(knobs::check_evidence({{"omp_runtime", true}}, Mode::infer, llvm.evidence).empty());
  const auto gnu = run_worker(tiny_trial("resnet50", Mode::infer, {{"omp_runtime", false}}));
  EXPECT_TRUE(knobs::check_evidence({{"omp_runtime", false}}, Mode::infer, gnu.evidence).empty());
}

TEST(KnobEvidence, MallocTunablesReachTheWorker) {
  const auto r = run_worker(tiny_trial("resnet50", Mode::train, {{"malloc_tunables", true}}));
  EXPECT_EQ(r.evidence["env"]["MALLOC_MMAP_MAX_"], "0");
  EXPECT_TRUE(knobs::check_evidence({{"malloc_tunables", true}}, Mode::train, r.evidence).empty());
}

}  // namespace
}  // namespace tunebench

namespace tunebench {
namespace {

TEST(KnobEvidence, AmpRunsTheStepUnderBf16AutocastAndKeepsTheFunctionClose) {
  const auto off = worker::run_trial(tiny_trial("resnet50", Mode::infer, {{"amp", false}}));
  const auto on = worker::run_trial(tiny_trial("resnet50", Mode::infer, {{"amp", true}}));
  EXPECT_EQ(off.evidence["autocast_in_step"], false);
  EXPECT_EQ(off.evidence["output_dtype"], "Float");
  EXPECT_EQ(on.evidence["autocast_in_step"], true);
  EXPECT_EQ(on.evidence["output_dtype"], "BFloat16");
  EXPECT_NEAR(on.check_value / off.check_value, 1.0, knobs::guard_tolerance("amp"));
  EXPECT_NE(on.check_value, off.check_value);  // bf16 really computed something else
  const auto train = worker::run_trial(tiny_trial("gpt", Mode::train, {{"amp", true}}));
  EXPECT_TRUE(knobs::check_evidence({{"amp", true}}, Mode::train, train.evidence).empty());
}

TEST(KnobEvidence, FusedAdamWIsNotApplicableWhereTheBuildLacksItAndMatchesAdamWWhereItHasIt) {
  const std::string why = compat::fused_adamw_unavailable_reason(c10::DeviceType::CPU);
  const knobs::HostCaps caps = host::capabilities();
  const plan::Plan s = plan::make(
      suite::parse(
          R"({"name": "t", "experiments": [{"knob": "fused_adamw", "model": "gpt", "preset": "tiny",
                                        "mode": "train"}]})",
          "t.json"),
      caps);
  if (!why.empty()) {
    EXPECT_EQ(s.experiments[0].not_applicable, "fused_adamw: " + why);
    EXPECT_NE(why.find(compat::torch_version()), std::string::npos);
    return;
  }
  EXPECT_EQ(s.experiments[0].not_applicable, "");
  const auto off = worker::run_trial(tiny_trial("gpt", Mode::train, {{"fused_adamw", false}}));
  const auto on = worker::run_trial(tiny_trial("gpt", Mode::train, {{"fused_adamw", true}}));
  EXPECT_EQ(off.evidence["optimizer"], "adamw");
  EXPECT_EQ(on.evidence["optimizer"], "adamw_fused");
  // The same update: the loss after one step agrees to float rounding.
  EXPECT_NEAR(on.check_value / off.check_value, 1.0, 1e-5);
}

}  // namespace
}  // namespace tunebench

namespace tunebench {
namespace {

TEST(KnobEvidence, NumaBindRunsTheWorkerUnderNumactlWithABindPolicy) {
  const auto off = run_worker(tiny_trial("gpt", Mode::infer, {{"numa_bind", false}}));
  const auto on = run_worker(tiny_trial("gpt", Mode::infer, {{"numa_bind", true}}));
  EXPECT_EQ(off.evidence["numa_policy"], "default");
  EXPECT_EQ(on.evidence["numa_policy"], "bind");
  EXPECT_EQ(on.evidence["mems_allowed"], "0");
  EXPECT_TRUE(knobs::check_evidence({{"numa_bind", true}}, Mode::infer, on.evidence).empty());
  EXPECT_FALSE(knobs::check_evidence({{"numa_bind", true}}, Mode::infer, off.evidence).empty());
}

}  // namespace
}  // namespace tunebench

// Arms as values: one worker process holding both arms of an experiment (worker/trial.h,
// prepare_pair) gives each arm the same correctness-guard value and the same evidence as a worker
// holding that arm alone (run_trial), whichever arm runs on which iteration; a model is shared
// only where neither arm changes it.
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace tunebench

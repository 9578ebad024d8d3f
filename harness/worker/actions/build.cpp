// The build family's action (worker/knob_action.h): the build-time switches (conv_bias_off,
// inplace_act, checkpoint, causal_mask_fly, vocab_pad, builtin_ops, flash_attention, dims_mult8)
// become model options before the model is built, and the built model describes what they
// produced (models/common.h, BenchModel::describe).
#include "knobs/evidence.h"
#include "knobs/knobs.h"
#include "worker/arm.h"
#include "worker/knob_action.h"

namespace tunebench::worker {
namespace {

class BuildHooks : public ArmHooks {
 public:
  // After the measured region: the describe() counters (a checkpointed block's forwards)
  // include every step.
  void read_back(Arm& arm, nlohmann::json& evidence) override {
    evidence[knobs::evidence::kModel] = arm.model->describe();
  }
};

class BuildAction : public KnobAction {
 public:
  const char* family() const override { return "build"; }
  void configure(const nlohmann::json& settings, models::ModelSpec& model) const override {
    model.options = knobs::model_options(settings, model.options);
  }
  std::unique_ptr<ArmHooks> prepare(Arm&) const override { return std::make_unique<BuildHooks>(); }
};

}  // namespace

const KnobAction& build_action() {
  static const BuildAction action;
  return action;
}

}  // namespace tunebench::worker

// The distributed family's action (worker/knob_action.h): ddp_scaling and ddp_no_sync. The
// process is one rank of the trial (worker/ddp.h has the process group and the all-reduces); the
// arm keeps its shard of the batch, and its forward-backward all-reduces the gradients.
#include "knobs/distributed.h"

#include <torch/torch.h>

#include "core/multiproc.h"
#include "worker/arm.h"
#include "worker/ddp.h"
#include "worker/knob_action.h"

namespace tunebench::worker {
namespace {

class DistributedHooks : public ArmHooks {
 public:
  explicit DistributedHooks(std::unique_ptr<ddp::Rank> rank) : rank_(std::move(rank)) {}
  // Replaces the execution family's forward-backward: a rank's step is its shard's, all-reduced.
  void on_device(Arm& arm) override {
    arm.forward_backward = [this, &arm] {
      return rank_->forward_backward(
          *arm.model, arm.batch, [&arm](const models::Batch& b) { return arm.loss(b); },
          [&arm](const torch::Tensor& l) { arm.backward(l); });
    };
  }
  // Ranks across hosts share no directory for the file barrier (core/multiproc.h,
  // wait_for_all): they start measuring together at the process group's.
  void begin_measurement(Arm&) override {
    if (rank_->across_hosts()) rank_->barrier();
  }
  void read_back(Arm& arm, nlohmann::json& evidence) override {
    evidence[knobs::distributed::kDdp] = rank_->evidence(arm.module());
  }

 private:
  std::unique_ptr<ddp::Rank> rank_;
};

class DistributedAction : public KnobAction {
 public:
  const char* family() const override { return "distributed"; }
  std::map<std::string, std::string> unsupported(c10::DeviceType device) const override {
    if (auto why = ddp::unavailable_reason(device); !why.empty()) {
      return {{"ddp_scaling", why}, {"ddp_no_sync", why}};
    }
    return {};
  }
  // Joins the process group and takes this rank's shard of the host batch; nullptr unless the
  // process is a rank of a distributed trial.
  std::unique_ptr<ArmHooks> prepare(Arm& arm) const override {
    const auto& s = arm.spec.settings;
    const int micro = s.contains("ddp_no_sync") ? multiproc::kNoSyncMicroBatches : 1;
    auto rank = ddp::Rank::join(arm.spec, arm.batch, micro, s.value("ddp_no_sync", false) == true);
    if (!rank) return nullptr;
    return std::make_unique<DistributedHooks>(std::move(rank));
  }
};

}  // namespace

const KnobAction& distributed_action() {
  static const DistributedAction action;
  return action;
}

}  // namespace tunebench::worker

#include "worker/arm.h"

namespace tunebench::worker {

Scopes Arm::enter_forward() {
  Scopes scopes;
  for (auto& hook : hooks) scopes.push(hook->around_forward(*this));
  return scopes;
}

torch::Tensor Arm::loss(const models::Batch& b) {
  const auto scopes = enter_forward();
  return model->loss(b);
}

device_trial::Step build_step(Arm& arm, std::function<void()> before_each) {
  return [&arm, before_each = std::move(before_each)]() -> torch::Tensor {
    Scopes step_scopes;
    for (auto& hook : arm.hooks) step_scopes.push(hook->around_step(arm));
    if (before_each) before_each();
    for (auto& hook : arm.hooks) hook->before_forward(arm);
    torch::Tensor out;
    if (!arm.train) {
      const auto scopes = arm.enter_forward();
      out = arm.forward(arm.batch);
    } else {
      out = arm.forward_backward();
      arm.device->step(arm.module().parameters(), arm.optimizer_step);
    }
    for (auto& hook : arm.hooks) hook->after_step(arm);
    return out;
  };
}

}  // namespace tunebench::worker

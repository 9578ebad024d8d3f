// fp16 loss scaling for C++, where there is no GradScaler: the loss is multiplied by a scale
// before backward, the gradients are unscaled and checked for inf/NaN by ATen's
// _amp_foreach_non_finite_check_and_unscale_, the optimizer step is skipped when any is
// non-finite, and _amp_update_scale_ backs the scale off on overflow and grows it after
// `growth_interval` clean steps — the arithmetic of torch.amp.GradScaler, on the same ATen ops.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace tunebench::amp {

// Empty when this LibTorch has kernels for both _amp ops on `device`; otherwise why not (1.13 has
// CUDA kernels only). Asked of the dispatcher, not of a version number.
std::string loss_scaling_unavailable_reason(c10::DeviceType device);

class LossScaler {
 public:
  // The defaults are GradScaler's. Throws std::runtime_error with the reason above where the
  // kernels are missing.
  explicit LossScaler(c10::Device device, double init_scale = 65536.0, double growth_factor = 2.0,
                      double backoff_factor = 0.5, int64_t growth_interval = 2000);

  at::Tensor scale(const at::Tensor& loss) const;  // loss × scale, for backward
  // Unscales the gradients of `params` in place; true when all are finite. One host read of the
  // found-inf flag (GradScaler.step reads it too).
  bool unscale(const std::vector<at::Tensor>& params);
  // Unscale, then `optimizer_step` unless a gradient was non-finite, then update the scale.
  // Returns whether the optimizer stepped.
  bool step(const std::vector<at::Tensor>& params, const std::function<void()>& optimizer_step);

  double current_scale() const;  // a host read
  int64_t skipped_steps() const { return skipped_; }
  int64_t steps() const { return steps_; }

 private:
  at::Tensor scale_, growth_tracker_, found_inf_;
  double growth_factor_, backoff_factor_;
  int64_t growth_interval_;
  int64_t skipped_ = 0, steps_ = 0;
};

}  // namespace tunebench::amp

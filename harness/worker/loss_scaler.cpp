#include "worker/loss_scaler.h"

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <stdexcept>

namespace tunebench::amp {

std::string loss_scaling_unavailable_reason(c10::DeviceType device) {
  const c10::DispatchKey key =
      device == c10::DeviceType::CUDA ? c10::DispatchKey::CUDA : c10::DispatchKey::CPU;
  for (const char* op :
       {"aten::_amp_update_scale_", "aten::_amp_foreach_non_finite_check_and_unscale_"}) {
    auto handle = c10::Dispatcher::singleton().findOp({op, ""});
    if (!handle || !handle->hasKernelForDispatchKey(key)) {
      return std::string("this LibTorch has no ") + c10::DeviceTypeName(device, true) +
             " kernel for " + op + " (fp16 loss scaling)";
    }
  }
  return "";
}

LossScaler::LossScaler(c10::Device device, double init_scale, double growth_factor,
                       double backoff_factor, int64_t growth_interval)
    : growth_factor_(growth_factor),
      backoff_factor_(backoff_factor),
      growth_interval_(growth_interval) {
  if (auto why = loss_scaling_unavailable_reason(device.type()); !why.empty()) {
    throw std::runtime_error(why);
  }
  const auto on = at::TensorOptions().device(device);
  scale_ = at::full({}, init_scale, on.dtype(at::kFloat));
  growth_tracker_ = at::zeros({}, on.dtype(at::kInt));
  found_inf_ = at::zeros({}, on.dtype(at::kFloat));
}

at::Tensor LossScaler::scale(const at::Tensor& loss) const {
  return loss * scale_.to(loss.scalar_type());
}

bool LossScaler::unscale(const std::vector<at::Tensor>& params) {
  found_inf_.zero_();
  const at::Tensor inv_scale = scale_.to(at::kDouble).reciprocal().to(at::kFloat);
  std::vector<at::Tensor> grads;
  for (const auto& p : params) {
    if (p.grad().defined()) grads.push_back(p.grad());
  }
  if (!grads.empty()) at::_amp_foreach_non_finite_check_and_unscale_(grads, found_inf_, inv_scale);
  return found_inf_.item<float>() == 0.0f;
}

bool LossScaler::step(const std::vector<at::Tensor>& params,
                      const std::function<void()>& optimizer_step) {
  const bool finite = unscale(params);
  ++steps_;
  if (finite) {
    optimizer_step();
  } else {
    ++skipped_;
  }
  at::_amp_update_scale_(scale_, growth_tracker_, found_inf_, growth_factor_, backoff_factor_,
                         growth_interval_);
  return finite;
}

double LossScaler::current_scale() const { return scale_.item<double>(); }

}  // namespace tunebench::amp

#include "worker/device_trial.h"

#include <chrono>
#include <stdexcept>

#include "knobs/cuda.h"
#include "platform/device.h"

#ifdef TUNEBENCH_CUDA
#include "worker/actions/cuda.h"
#endif

namespace tunebench::device_trial {

c10::ScalarType DeviceTrial::amp_dtype(const nlohmann::json& value) const {
  return value == "fp16" ? torch::kHalf : torch::kBFloat16;
}

double DeviceTrial::time_iterations(const Step& iteration, int n) {
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) {
    auto out = iteration();
    (void)out;
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::unique_ptr<DeviceTrial> make(const TrialSpec& spec) {
  if (knobs::cuda::device_of(spec.settings) == "cpu") return std::make_unique<DeviceTrial>();
  if (auto why = device::cuda_unavailable_reason(); !why.empty()) {
    throw std::runtime_error("device cuda: " + why);
  }
#ifdef TUNEBENCH_CUDA
  return cuda_runtime::make(spec);
#else
  throw std::runtime_error("device cuda: this build has no CUDA code paths");
#endif
}

}  // namespace tunebench::device_trial

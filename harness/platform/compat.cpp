#include "platform/compat.h"

#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <c10/core/Allocator.h>
#include <c10/util/ThreadLocalDebugInfo.h>
#include <torch/csrc/jit/passes/graph_fuser.h>
#include <torch/csrc/jit/passes/tensorexpr_fuser.h>
#include <torch/csrc/jit/runtime/graph_executor.h>
#include <torch/csrc/profiler/orchestration/observer.h>
#include <torch/version.h>

#include <stdexcept>

#define TUNEBENCH_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) ||            \
   (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

#if !TUNEBENCH_TORCH_AT_LEAST(2, 0)
// 1.13 exports the switches of the fusers but installs no header that declares them.
namespace torch::jit {
TORCH_API void overrideCanFuseOnCPU(bool value);
TORCH_API void overrideCanFuseOnGPU(bool value);
}  // namespace torch::jit
#else
#include <torch/csrc/jit/codegen/fuser/interface.h>
#endif

namespace tunebench::compat {

std::string torch_version() {
  return std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + "." +
         std::to_string(TORCH_VERSION_PATCH);
}

at::Tensor scaled_dot_product_attention(const at::Tensor& q, const at::Tensor& k,
                                        const at::Tensor& v, const c10::optional<at::Tensor>& mask,
                                        bool causal) {
  if (causal && mask.has_value()) {
    throw std::invalid_argument("scaled_dot_product_attention: give a mask or causal, not both");
  }
#if TUNEBENCH_TORCH_AT_LEAST(2, 0)
  return at::scaled_dot_product_attention(q, k, v, mask, /*dropout_p=*/0.0, causal);
#else
  // 1.13's private op returns (output, attention weights).
  return std::get<0>(at::_scaled_dot_product_attention(q, k, v, mask, /*dropout_p=*/0.0,
                                                       /*need_attn_weights=*/false, causal));
#endif
}

bool autocast_enabled(c10::DeviceType device) {
#if TUNEBENCH_TORCH_AT_LEAST(2, 4)
  return at::autocast::is_autocast_enabled(device);
#else
  switch (device) {
    case c10::DeviceType::CPU:
      return at::autocast::is_cpu_enabled();
    case c10::DeviceType::CUDA:
      return at::autocast::is_enabled();
    default:
      throw std::invalid_argument("autocast: only CPU and CUDA are supported");
  }
#endif
}

c10::ScalarType autocast_dtype(c10::DeviceType device) {
#if TUNEBENCH_TORCH_AT_LEAST(2, 4)
  return at::autocast::get_autocast_dtype(device);
#else
  switch (device) {
    case c10::DeviceType::CPU:
      return at::autocast::get_autocast_cpu_dtype();
    case c10::DeviceType::CUDA:
      return at::autocast::get_autocast_gpu_dtype();
    default:
      throw std::invalid_argument("autocast: only CPU and CUDA are supported");
  }
#endif
}

namespace {
void set_autocast(c10::DeviceType device, bool enabled, c10::ScalarType dtype) {
#if TUNEBENCH_TORCH_AT_LEAST(2, 4)
  at::autocast::set_autocast_enabled(device, enabled);
  at::autocast::set_autocast_dtype(device, dtype);
#else
  switch (device) {
    case c10::DeviceType::CPU:
      at::autocast::set_cpu_enabled(enabled);
      at::autocast::set_autocast_cpu_dtype(dtype);
      break;
    case c10::DeviceType::CUDA:
      at::autocast::set_enabled(enabled);
      at::autocast::set_autocast_gpu_dtype(dtype);
      break;
    default:
      throw std::invalid_argument("autocast: only CPU and CUDA are supported");
  }
#endif
}
}  // namespace

AutocastGuard::AutocastGuard(c10::DeviceType device, c10::ScalarType dtype)
    : device_(device),
      was_enabled_(autocast_enabled(device)),
      previous_dtype_(autocast_dtype(device)) {
  set_autocast(device_, true, dtype);
  at::autocast::increment_nesting();
}

AutocastGuard::~AutocastGuard() {
  // Leaving the outermost autocast region drops the cast cache, as Python's autocast does.
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  set_autocast(device_, was_enabled_, previous_dtype_);
}

std::string fused_adamw_unavailable_reason(c10::DeviceType device) {
#if TUNEBENCH_TORCH_AT_LEAST(2, 4)
  if (device == c10::DeviceType::CPU || device == c10::DeviceType::CUDA) return "";
  return "no fused AdamW kernel for this device";
#elif TUNEBENCH_TORCH_AT_LEAST(2, 0)
  if (device == c10::DeviceType::CUDA) return "";
  return "LibTorch " + torch_version() + " has a fused AdamW kernel for CUDA only (CPU from 2.4)";
#else
  return "LibTorch " + torch_version() +
         " has only at::_fused_adam_ (Adam, CUDA); fused AdamW arrived in 2.0";
#endif
}

FusedAdamW::FusedAdamW(std::vector<at::Tensor> params, double lr, double beta1, double beta2,
                       double eps, double weight_decay)
    : params_(std::move(params)),
      lr_(lr),
      beta1_(beta1),
      beta2_(beta2),
      eps_(eps),
      weight_decay_(weight_decay) {
  const c10::DeviceType device =
      params_.empty() ? c10::DeviceType::CPU : params_.front().device().type();
  const std::string why = fused_adamw_unavailable_reason(device);
  if (!why.empty()) throw std::runtime_error("fused AdamW: " + why);
  for (const auto& p : params_) {
    exp_avg_.push_back(at::zeros_like(p));
    exp_avg_sq_.push_back(at::zeros_like(p));
    steps_.push_back(at::zeros({}, p.options().dtype(at::kFloat)));
  }
}

void FusedAdamW::step() {
#if TUNEBENCH_TORCH_AT_LEAST(2, 0)
  std::vector<at::Tensor> params, grads, exp_avg, exp_avg_sq, steps;
  for (size_t i = 0; i < params_.size(); ++i) {
    if (!params_[i].grad().defined()) continue;
    params.push_back(params_[i]);
    grads.push_back(params_[i].grad());
    exp_avg.push_back(exp_avg_[i]);
    exp_avg_sq.push_back(exp_avg_sq_[i]);
    steps.push_back(steps_[i]);
  }
  if (params.empty()) return;
  at::NoGradGuard no_grad;
  at::_foreach_add_(steps, 1);  // the kernel reads the step count; Python's AdamW adds it first
  at::_fused_adamw_(params, grads, exp_avg, exp_avg_sq, /*max_exp_avg_sqs=*/{}, steps, lr_, beta1_,
                    beta2_, weight_decay_, eps_, /*amsgrad=*/false, /*maximize=*/false);
#else
  throw std::runtime_error("fused AdamW: " + fused_adamw_unavailable_reason(c10::DeviceType::CPU));
#endif
}

void use_legacy_cpu_fuser() {
  torch::jit::getExecutorMode() = false;   // the legacy (non-profiling) graph executor
  torch::jit::getProfilingMode() = false;  // …and no profiling runs before it optimises
  torch::jit::setTensorExprFuserEnabled(false);
  torch::jit::overrideCanFuseOnCPU(true);
  torch::jit::overrideCanFuseOnCPULegacy(true);
}

void use_gpu_fuser() {
  torch::jit::getExecutorMode() = true;   // the profiling graph executor
  torch::jit::getProfilingMode() = true;  // …which records shapes first, then fuses
  torch::jit::setTensorExprFuserEnabled(true);
  torch::jit::overrideCanFuseOnGPU(true);
}

}  // namespace tunebench::compat

namespace tunebench::compat {

namespace {
// The integer type of the allocator's byte totals, as this version declares them.
template <class F>
struct TotalBytes;
template <class R, class Ptr, class Size, class Total, class Reserved, class Device>
struct TotalBytes<R (*)(Ptr, Size, Total, Reserved, Device)> {
  using type = Total;
};
using ReportedBytes = TotalBytes<decltype(&c10::reportMemoryUsageToProfiler)>::type;
}  // namespace

// Whatever sits in the profiler's thread-local slot is read as a profiler state (profilerEnabled()
// casts it), so the reporter is one: a disabled profiler that asks only for memory reports.
struct CpuTensorPeak::Reporter : torch::profiler::impl::ProfilerStateBase {
  Reporter()
      : ProfilerStateBase(torch::profiler::impl::ProfilerConfig(
            torch::profiler::impl::ProfilerState::Disabled, /*report_input_shapes=*/false,
            /*profile_memory=*/true)) {}
  torch::profiler::impl::ActiveProfilerType profilerType() override {
    return torch::profiler::impl::ActiveProfilerType::NONE;
  }
  void reportMemoryUsage(void*, int64_t alloc_size, ReportedBytes total_allocated, ReportedBytes,
                         c10::Device device) override {
    if (device.type() != c10::DeviceType::CPU) return;
    const int64_t total = static_cast<int64_t>(total_allocated);
    // The allocator's total also holds what earlier scopes left allocated: count from the total
    // before the first report.
    if (count++ == 0) base = total - alloc_size;
    peak = std::max(peak, total - base);
  }
  int64_t base = 0, peak = 0, count = 0;
};

CpuTensorPeak::CpuTensorPeak() : reporter_(std::make_shared<Reporter>()) {
  guard_ = std::make_shared<c10::DebugInfoGuard>(c10::DebugInfoKind::PROFILER_STATE, reporter_);
}
CpuTensorPeak::~CpuTensorPeak() = default;
int64_t CpuTensorPeak::peak_bytes() const { return reporter_->peak; }
int64_t CpuTensorPeak::reports() const { return reporter_->count; }

}  // namespace tunebench::compat

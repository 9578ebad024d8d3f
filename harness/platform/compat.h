// The one place where LibTorch versions differ. Everything else calls these functions and never
// tests TORCH_VERSION_* itself.
//
//   topic                        1.13 (Debian)                         2.x (PyPI)
//   scaled-dot-product attention  private at::_scaled_dot_product_attention
//   at::scaled_dot_product_attention (2.0+) autocast switches             per-device functions
//   (set_cpu_enabled)      set_autocast_enabled(device, on) (2.4+) fused AdamW kernel
//   at::_fused_adam_ (CUDA only, no AdamW)      at::_fused_adamw_ (2.0+; CPU from 2.4)
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/DeviceType.h>
#include <c10/core/ScalarType.h>
#include <c10/util/Optional.h>

#include <memory>
#include <string>
#include <vector>

namespace tunebench::compat {

// "1.13.0", "2.15.0": the LibTorch this binary was compiled against.
std::string torch_version();

// Attention softmax(q kᵀ / √d + mask) v over [B, H, T, D] tensors through the library's fused
// kernel. `mask` is additive or boolean (true = keep) and broadcasts to [B, H, T, T];
// `causal` asks the kernel to apply the causal mask itself (then `mask` must be empty).
at::Tensor scaled_dot_product_attention(const at::Tensor& q, const at::Tensor& k,
                                        const at::Tensor& v, const c10::optional<at::Tensor>& mask,
                                        bool causal);

// Turns autocast on for one device type with the given low-precision dtype for its lifetime,
// and restores the previous state (enabled flag and dtype) on destruction.
class AutocastGuard {
 public:
  AutocastGuard(c10::DeviceType device, c10::ScalarType dtype);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  c10::DeviceType device_;
  bool was_enabled_;
  c10::ScalarType previous_dtype_;
};

bool autocast_enabled(c10::DeviceType device);
c10::ScalarType autocast_dtype(c10::DeviceType device);

// Empty when this LibTorch has a fused AdamW kernel for the device; otherwise the reason why
// not, fit to be shown to a user as "not applicable: <reason>".
std::string fused_adamw_unavailable_reason(c10::DeviceType device);

// AdamW (decoupled weight decay) over all parameters in one fused kernel call per step, with the
// same hyper-parameters and arithmetic as torch::optim::AdamW. The constructor throws
// std::runtime_error with fused_adamw_unavailable_reason() where the kernel does not exist.
class FusedAdamW {
 public:
  FusedAdamW(std::vector<at::Tensor> params, double lr, double beta1, double beta2, double eps,
             double weight_decay);
  void step();  // parameters without a gradient are skipped, as torch::optim does

 private:
  std::vector<at::Tensor> params_, exp_avg_, exp_avg_sq_, steps_;
  double lr_, beta1_, beta2_, eps_, weight_decay_;
};

// TorchScript's fusers on the CPU. NNC, the TensorExpr fuser that the profiling executor uses by
// default, compiles CPU kernels with LLVM only, and neither the Debian nor the PyPI LibTorch is
// built with LLVM ("LLVM Backend not found"). The legacy executor's fuser writes C++ for each
// fusion group and compiles it with the host's C++ compiler at run time. This switches the whole
// process to the legacy executor with CPU fusion on (TorchScript settings are process-wide).
void use_legacy_cpu_fuser();
// TorchScript's fuser on CUDA: the profiling executor with NNC, which generates CUDA kernels at
// run time (NVRTC) and needs no LLVM. Also process-wide.
void use_gpu_fuser();

}  // namespace tunebench::compat

namespace tunebench::compat {

// The peak of CPU tensor memory inside a scope: bytes allocated through LibTorch's CPU allocator
// on this thread while the scope is active and not yet freed, at their maximum. It listens to the
// allocator's memory reports (the hook the profiler's memory profiling uses, a thread-local debug
// info), so the autograd profiler must not run inside it. The report's integer types differ
// between versions (int64_t in 1.13, size_t in 2.x).
class CpuTensorPeak {
 public:
  CpuTensorPeak();
  ~CpuTensorPeak();
  CpuTensorPeak(const CpuTensorPeak&) = delete;
  CpuTensorPeak& operator=(const CpuTensorPeak&) = delete;
  int64_t peak_bytes() const;
  int64_t reports() const;  // allocations and frees seen: 0 means the hook did not take effect

 private:
  struct Reporter;
  std::shared_ptr<Reporter> reporter_;
  std::shared_ptr<void> guard_;
};

}  // namespace tunebench::compat

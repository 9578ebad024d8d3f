#include "platform/device.h"

#include <torch/cuda.h>

#include <stdexcept>

#include "platform/compat.h"

#ifdef TUNEBENCH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <c10/cuda/CUDACachingAllocator.h>
#endif

namespace tunebench::device {

bool built_with_cuda() {
#ifdef TUNEBENCH_CUDA
  return true;
#else
  return false;
#endif
}

std::string build_summary() {
  std::string s = "LibTorch " + compat::torch_version();
  if (!built_with_cuda()) return s + " (CPU only)";
  const CudaInfo info = cuda_info();
  s += " (CUDA " + info.cuda_runtime;
  if (!info.cudnn.empty()) s += ", cuDNN " + info.cudnn;
  s += "; " + std::to_string(info.device_count) + " device" + (info.device_count == 1 ? "" : "s");
  if (info.device_count > 0) s += ": " + info.name;
  return s + ")";
}

std::string cuda_unavailable_reason() {
  if (!built_with_cuda()) return "this build's LibTorch has no CUDA support (CPU-only build)";
  if (torch::cuda::device_count() == 0) return "no CUDA device on this host";
  return "";
}

CudaInfo cuda_info() {
  CudaInfo info;
#ifdef TUNEBENCH_CUDA
  // The versions LibTorch was built with (CUDART_VERSION would name this machine's toolkit).
  const auto& hooks = at::detail::getCUDAHooks();
  const long cudnn = hooks.hasCuDNN() ? hooks.versionCuDNN() : 0;  // e.g. 92600 = 9.26.0
  if (cudnn > 0) {
    info.cudnn = std::to_string(cudnn / 10000) + "." + std::to_string(cudnn / 100 % 100) + "." +
                 std::to_string(cudnn % 100);
  }
  const long runtime = hooks.versionCUDART();  // e.g. 13020 = 13.2
  info.cuda_runtime = std::to_string(runtime / 1000) + "." + std::to_string(runtime % 1000 / 10);
  info.device_count = static_cast<int>(torch::cuda::device_count());
  if (info.device_count > 0) {
    const cudaDeviceProp* prop = at::cuda::getDeviceProperties(0);
    info.name = prop->name;
    info.total_memory = static_cast<int64_t>(prop->totalGlobalMem);
    info.capability = std::to_string(prop->major) + "." + std::to_string(prop->minor);
  }
#endif
  return info;
}

void synchronize(const c10::Device& device) {
  if (!device.is_cuda()) return;
#ifdef TUNEBENCH_CUDA
  torch::cuda::synchronize(device.index() < 0 ? -1 : device.index());
#endif
}

namespace {
[[noreturn]] void no_cuda(const char* what, const c10::Device& device) {
  const std::string why = cuda_unavailable_reason();
  throw std::runtime_error(std::string(what) + " needs a CUDA device, got " + device.str() +
                           (why.empty() ? "" : " (" + why + ")"));
}
}  // namespace

void reset_peak_memory(const c10::Device& device) {
#ifdef TUNEBENCH_CUDA
  if (device.is_cuda()) {
    c10::cuda::CUDACachingAllocator::resetPeakStats(device.index() < 0 ? 0 : device.index());
    return;
  }
#endif
  no_cuda("reset_peak_memory", device);
}

namespace {
// The caching allocator's peak of allocated (or reserved) bytes on a CUDA device.
int64_t allocator_peak(const c10::Device& device, bool reserved, const char* what) {
#ifdef TUNEBENCH_CUDA
  if (device.is_cuda()) {
    const auto stats =
        c10::cuda::CUDACachingAllocator::getDeviceStats(device.index() < 0 ? 0 : device.index());
    const auto& stat = reserved ? stats.reserved_bytes : stats.allocated_bytes;
    return stat[static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE)].peak;
  }
#endif
  no_cuda(what, device);
}
}  // namespace

int64_t peak_memory_bytes(const c10::Device& device) {
  return allocator_peak(device, false, "peak_memory_bytes");
}

int64_t reserved_peak_bytes(const c10::Device& device) {
  return allocator_peak(device, true, "reserved_peak_bytes");
}

}  // namespace tunebench::device

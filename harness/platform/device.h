// Where a benchmark runs, and the device-side facts a trial records. The CUDA parts compile only
// when the LibTorch we build against has CUDA (TUNEBENCH_CUDA, set by CMake from what Torch
// reports); elsewhere they answer "not available" with the reason.
#pragma once

#include <c10/core/Device.h>

#include <cstdint>
#include <string>

namespace tunebench::device {

// "LibTorch 2.15.0 (CUDA 13.2, cuDNN 9.26.0; 0 devices)" or "LibTorch 1.13.0 (CPU only)".
std::string build_summary();

// True when this binary was built against a CUDA-enabled LibTorch.
bool built_with_cuda();

// Empty when a CUDA device can be used now; otherwise why not, fit for "not applicable: ...".
std::string cuda_unavailable_reason();

struct CudaInfo {
  int device_count = 0;
  std::string name;          // of device 0
  int64_t total_memory = 0;  // bytes, device 0
  std::string capability;    // compute capability of device 0, e.g. "9.0"
  std::string cuda_runtime;  // e.g. "13.2", as LibTorch was built
  std::string cudnn;         // e.g. "9.26.0", or "" without cuDNN
};
// Facts about the CUDA devices; device_count 0 where there are none.
CudaInfo cuda_info();

// Waits for all queued work on `device` (a no-op on the CPU).
void synchronize(const c10::Device& device);

// The caching allocator's peak of allocated bytes on a CUDA device since the last reset.
// Throws on the CPU or without CUDA.
void reset_peak_memory(const c10::Device& device);
int64_t peak_memory_bytes(const c10::Device& device);
// The peak of the bytes the caching allocator held from the driver (reserved: allocated plus its
// cache) since the last reset: what emptyCache() gives back, which allocated bytes never show.
int64_t reserved_peak_bytes(const c10::Device& device);

}  // namespace tunebench::device

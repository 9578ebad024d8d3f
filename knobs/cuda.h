// The CUDA family: tf32, cudnn_benchmark, empty_cache, pinned_memory, on_device_alloc, avoid_sync,
// cuda_graphs, streams_overlap, and the reserved trial settings "device" and "varying_shapes".
// The CUDA code that produces the evidence is worker/cuda_runtime.cpp (only with TUNEBENCH_CUDA).
#pragma once

#include "knobs/evidence.h"

namespace tunebench::knobs::cuda {

// Evidence keys (evidence::kDevice, the device the model ran on, is common):
//   varying_shapes   kInputShapesSeen (distinct input shapes in the measured steps)
//   tf32             kTf32Matmul, kTf32Cudnn (booleans)
//   cudnn_benchmark  kCudnnBenchmark (boolean)
//   empty_cache      kEmptyCacheCallsPerStep (number)
//   pinned_memory    kHostBatchPinned (boolean)
//   on_device_alloc  kInputCreatedOnDevice (boolean)
//   avoid_sync       kLossItemCallsPerStep (number)
//   cuda_graphs      kCudaGraphReplay (boolean)
//   streams_overlap  kCopyStream ("separate" | "compute")
inline constexpr const char* kInputShapesSeen = "input_shapes_seen";
inline constexpr const char* kTf32Matmul = "tf32_matmul";
inline constexpr const char* kTf32Cudnn = "tf32_cudnn";
inline constexpr const char* kCudnnBenchmark = "cudnn_benchmark";
inline constexpr const char* kEmptyCacheCallsPerStep = "empty_cache_calls_per_step";
inline constexpr const char* kHostBatchPinned = "host_batch_pinned";
inline constexpr const char* kInputCreatedOnDevice = "input_created_on_device";
inline constexpr const char* kLossItemCallsPerStep = "loss_item_calls_per_step";
inline constexpr const char* kCudaGraphReplay = "cuda_graph_replay";
inline constexpr const char* kCopyStream = "copy_stream";

}  // namespace tunebench::knobs::cuda

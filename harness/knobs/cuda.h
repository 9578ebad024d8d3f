// The CUDA family: tf32, cudnn_benchmark, empty_cache, pinned_memory, on_device_alloc, avoid_sync,
// cuda_graphs, streams_overlap, and the reserved trial settings "device" and "varying_shapes".
// The CUDA code that produces the evidence is worker/actions/cuda.cpp (only with TUNEBENCH_CUDA).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/records.h"
#include "knobs/evidence.h"
#include "knobs/knob.h"

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

// The rules of this family (knobs/knob.h's KnobRules).
const KnobRules& rules();

// A suite's "device" field becomes this trial setting ("cuda"); absent means the CPU.
inline constexpr const char* kDevice = "device";
// cudnn_benchmark with varying shapes: each step's input resolution comes from a fixed cycle.
inline constexpr const char* kVaryingShapes = "varying_shapes";

bool is_reserved(const std::string& id);
// Empty when `value` is valid for the reserved setting `id`; otherwise what would be valid.
std::string reserved_error(const std::string& id, const nlohmann::json& value);

// "cpu" or "cuda", from a trial's settings.
std::string device_of(const nlohmann::json& settings);

// The device an experiment of these knobs runs on when the suite gives none: "cuda" when any of
// them runs on CUDA only, otherwise "cpu".
std::string default_device(const std::vector<const Knob*>& used);
// Empty when the knob can run on `device`; otherwise the suite error (a CUDA-only knob on the CPU,
// a CPU-only knob on CUDA).
std::string device_mismatch(const Knob& knob, const std::string& device);
// Empty when the device exists here; otherwise why not ("needs a CUDA device: …").
std::string device_unavailable(const std::string& device, const HostCaps& host);

// Empty unless `settings` (one arm's, merged) turn cuda_graphs on together with something a
// captured graph cannot replay: inputs replaced or reshaped every step (dataloader_workers,
// on_device_alloc, preallocate, varying_shapes), ranks (ddp_*), the autograd profiler
// (profiler_off's OFF arm), or in training fp16 loss scaling, whose skipped-step decision reads a
// flag to the host every step. Otherwise what to change. The family's KnobRules::arm_error.
std::string capture_conflict(const nlohmann::json& settings, Mode mode);

// Appends what contradicts the reserved setting `id` (kDevice, kVaryingShapes) = `value` in the
// worker's evidence.
void check_reserved_evidence(const std::string& id, const nlohmann::json& value,
                             const nlohmann::json& evidence, std::vector<std::string>& wrong);

}  // namespace tunebench::knobs::cuda

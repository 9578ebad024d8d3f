// Where a trial runs, and the CUDA knobs' side of the catalog that needs no torch: the reserved
// trial settings "device" and "varying_shapes", which knobs may run on which device, and what the
// worker's read-back evidence must show for each CUDA knob. The CUDA code that produces that
// evidence is worker/cuda_runtime.cpp (compiled only with TUNEBENCH_CUDA).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/records.h"
#include "knobs/knobs.h"

namespace tunebench::device_settings {

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
std::string default_device(const std::vector<const knobs::Knob*>& used);
// Empty when the knob can run on `device`; otherwise the suite error (a CUDA-only knob on the CPU,
// a CPU-only knob on CUDA).
std::string device_mismatch(const knobs::Knob& knob, const std::string& device);
// Empty when the device exists here; otherwise why not ("needs a CUDA device: …").
std::string device_unavailable(const std::string& device, const knobs::HostCaps& host);

// Empty unless `settings` (one arm's, merged) turn cuda_graphs on together with something a
// captured graph cannot replay: inputs replaced or reshaped every step (dataloader_workers,
// on_device_alloc, preallocate, varying_shapes), ranks (ddp_*), the autograd profiler
// (profiler_off's OFF arm), or in training fp16 loss scaling, whose skipped-step decision reads a
// flag to the host every step. Otherwise what to change.
std::string capture_conflict(const nlohmann::json& settings, Mode mode);

// What contradicts a CUDA knob's setting in the worker's evidence. nullopt when `id` is not one of
// the CUDA knobs (or the device/varying-shape settings) handled here.
std::optional<std::vector<std::string>> check_evidence(const std::string& id,
                                                       const nlohmann::json& value, Mode mode,
                                                       const nlohmann::json& evidence);

}  // namespace tunebench::device_settings

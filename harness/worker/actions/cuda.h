// The cuda family, inside the worker: the CUDA implementation of a trial's device side
// (worker/device_trial.h): compiled only when the LibTorch we build against has CUDA
// (TUNEBENCH_CUDA). What each CUDA knob does here:
//   tf32             cuBLAS and cuDNN allowed TF32 (both) or not
//   cudnn_benchmark  cuDNN's autotuner; with "varying_shapes" each step's input is resized to the
//                    next of 32 resolutions, so the autotuner keeps meeting shapes it has not tuned
//   empty_cache      OFF empties the caching allocator after every step; ON never does
//   pinned_memory    each step copies the host batch to the device: pageable and blocking (OFF)
//                    or pinned and non-blocking (ON)
//   on_device_alloc  each step's input is made on the host and copied (OFF) or made on the device
//   avoid_sync       OFF reads the loss to the host every step (as logging does); ON never does
//   cuda_graphs      the step captured once into a CUDA graph (during warm-up, after three eager
//                    runs on the capture stream) and replayed: inference, or the whole training
//                    step (zeroing, forward, backward, SGD step; suite.cpp refuses what a graph
//                    cannot replay: knobs::cuda::capture_conflict)
//   streams_overlap  pinned non-blocking copies on the compute stream (OFF) or on a copy stream,
//                    one step ahead, double-buffered (ON)
//   amp              autocast fp16 (true or "fp16") with loss scaling in training, or bf16
// Every trial also reads back the host-device synchronisations per measured step (LibTorch's
// sync debug mode, counted), the caching allocator's peak, GPU energy per item (NVML) and the
// GPU's clocks and throttle reasons at the start and end of the measured region.
#pragma once

#include <memory>

#include "worker/device_trial.h"

namespace tunebench::cuda_runtime {

std::unique_ptr<device_trial::DeviceTrial> make(const TrialSpec& spec);

}  // namespace tunebench::cuda_runtime

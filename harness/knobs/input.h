// The input family: how batches reach the step (dataloader_workers).
#pragma once

#include "knobs/knob.h"
namespace tunebench::knobs::input {

// Evidence: evidence[kLoader] = {kWorkers: loader workers, kProducerThreads: threads that made
// batches, kProducedOnMainThread: true when the step's own thread made them}.
inline constexpr const char* kLoader = "loader";
inline constexpr const char* kWorkers = "workers";
inline constexpr const char* kProducerThreads = "producer_threads";
inline constexpr const char* kProducedOnMainThread = "produced_on_main_thread";

// The rules of this family (knobs/knob.h's KnobRules).
const KnobRules& rules();

}  // namespace tunebench::knobs::input

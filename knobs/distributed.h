// The distributed family: multi_instance (one inference instance per core group) and the c10d
// knobs ddp_scaling, ddp_no_sync (the worker processes are the ranks of one process group).
#pragma once

#include "knobs/evidence.h"

namespace tunebench::knobs::distributed {

// Evidence of a rank: evidence[kDdp] = {kBackend: "gloo"|"nccl", kGpu: its CUDA device,
// kWorldSize, kRank, kMicroBatches: per step, kBuckets: gradient buckets, kAllreducesPerStep,
// kParameterChecksum: of the parameters after the measured steps}. Every process of a
// multi-process trial also reads back evidence::kCpuAffinity.
inline constexpr const char* kDdp = "ddp";
inline constexpr const char* kBackend = "backend";
inline constexpr const char* kGpu = "gpu";
inline constexpr const char* kWorldSize = "world_size";
inline constexpr const char* kRank = "rank";
inline constexpr const char* kMicroBatches = "micro_batches";
inline constexpr const char* kBuckets = "buckets";
inline constexpr const char* kAllreducesPerStep = "allreduces_per_step";
inline constexpr const char* kParameterChecksum = "parameter_checksum";

}  // namespace tunebench::knobs::distributed

// The distributed family: multi_instance (one inference instance per core group) and the c10d
// knobs ddp_scaling, ddp_no_sync (the worker processes are the ranks of one process group). This
// file decides how a trial's settings lay out on processes; core/multiproc.h has the mechanics
// (core groups, the process setting, the rendezvous, combining the processes' results).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/multiproc.h"
#include "core/records.h"
#include "knobs/evidence.h"
#include "knobs/knob.h"

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

// The rules of this family (knobs/knob.h's KnobRules).
const KnobRules& rules();

// How a trial's settings are laid out on processes: role "" for an ordinary one-process trial.
// `cpus`: the CPUs this process may use (the orchestrator's affinity). A multi_instance trial
// with one instance is an ordinary trial (one process with all its threads); a distributed trial
// always has ranks, even a world of one: on the CPU one per core group ("true" = one per CPU),
// on CUDA one per GPU ("true" = one per GPU of the `gpus` here). Each process gets
// min(omp_threads, cpus / count) threads, so that processes never share a core.
multiproc::Layout layout(const nlohmann::json& settings, size_t cpus, size_t gpus = 0);

// One spec per process: `trial` itself for an ordinary trial; otherwise multiproc::split's parts
// of its layout, each with omp_threads set to the per-process threads. Throws
// std::invalid_argument when the host has too few CPUs or GPUs for the processes.
std::vector<TrialSpec> split(const TrialSpec& trial, const std::vector<int>& cpus,
                             const std::string& rendezvous_dir, size_t gpus = 0);

// Appends what contradicts a process's multiproc::kProcessSetting `value` (its core group) in its
// evidence.
void check_process_evidence(const nlohmann::json& value, const nlohmann::json& evidence,
                            std::vector<std::string>& wrong);

}  // namespace tunebench::knobs::distributed

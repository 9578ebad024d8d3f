#include "knobs/distributed.h"

#include <fmt/format.h>

#include <algorithm>

#include "knobs/cuda.h"

namespace tunebench::knobs::distributed {

using nlohmann::json;

namespace {

bool has_ranks(const json& settings) {
  return settings.contains("ddp_scaling") || settings.contains("ddp_no_sync");
}

// Micro-batches per step of a rank: ddp_no_sync's experiments accumulate in both arms.
int micro_batches(const json& settings) {
  return settings.contains("ddp_no_sync") ? multiproc::kNoSyncMicroBatches : 1;
}

// false → 1, true → one per CPU, n → n.
int count_of(const json& value, size_t cpus) {
  if (value.is_boolean()) return value.get<bool>() ? int(cpus) : 1;
  return int(value.get<int64_t>());
}

// What a rank must show for the distributed knobs; empty when it does.
std::string check_ddp(const json& settings, const json& ddp) {
  if (!settings.contains(multiproc::kProcessSetting)) {
    return "a distributed trial ran without ranks (it was not split into processes)";
  }
  const json& process = settings[multiproc::kProcessSetting];
  if (!ddp.is_object()) return "the rank read back no process group";
  const int micro = micro_batches(settings);
  const int syncs = settings.value("ddp_no_sync", false) == true ? 1 : micro;
  const int64_t buckets = ddp.value(kBuckets, int64_t(0));
  // Gloo on the CPU; NCCL on CUDA, each rank on the GPU it was given.
  const bool cuda = cuda::device_of(settings) == "cuda";
  const bool backend_ok = cuda ? ddp.value(kBackend, "") == "nccl" &&
                                     ddp.value(kGpu, json()) == process.value("gpu", json(-1))
                               : ddp.value(kBackend, "") == "gloo";
  if (!backend_ok || fact(ddp, kWorldSize) != process["count"] ||
      fact(ddp, kRank) != process["index"] || fact(ddp, kMicroBatches) != micro || buckets < 1 ||
      ddp.value(kAllreducesPerStep, -1.0) != double(buckets * syncs)) {
    return fmt::format(
        "rank {} of {} ({}) with {} micro-batch(es), {} all-reduce(s) per micro-batch sync "
        "expected {} all-reduces per step, but its process group read back {}",
        process["index"].dump(), process["count"].dump(),
        cuda ? "NCCL on GPU " + process.value("gpu", json()).dump() : "Gloo", micro, buckets,
        buckets * syncs, ddp.dump());
  }
  return "";
}

class Rules final : public KnobRules {
 public:
  std::vector<std::string> ids() const override {
    return {"multi_instance", "ddp_scaling", "ddp_no_sync"};
  }

  void validate_value(const Knob& knob, const json& value) const override {
    if (knob.id == "ddp_no_sync" || value.is_boolean())
      return KnobRules::validate_value(knob, value);
    expect_integer(
        value, 1, 4096,
        "must be true (one process per core), false (one) or a process count from 1 to 4096");
  }

  std::string not_applicable_reason(const Knob& knob, const std::string& model, Mode,
                                    const HostCaps& host,
                                    const std::string& device) const override {
    if (knob.id == "ddp_scaling" && model == "resnet50") {
      // The catalog lists it; what stops it is the correctness guard, not the code.
      return "ResNet-50's batch norm normalises each rank's shard (C++ has no SyncBatchNorm), so "
             "N ranks train a different function from one rank on the whole batch (the loss "
             "after a step differs by ~9 %): the correctness guard cannot hold";
    }
    const bool ranks = knob.id != "multi_instance";
    if (ranks && device == "cuda" && host.cuda && host.gpus < 2) {  // no GPU: the device says
      return fmt::format("needs 2 or more GPUs (one rank each, NCCL): this host has {}", host.gpus);
    }
    if (device == "cpu" && host.cores < 2) {
      return "this host has 1 core: there is no second core group for another process";
    }
    return "";
  }

  // The batch must split evenly into this host's ranks and their micro-batches (the rank count
  // follows the cores or GPUs, so a suite can fit one host and not another).
  std::string arm_not_applicable(const json& settings, int64_t batch,
                                 const HostCaps& host) const override {
    const auto l = layout(settings, size_t(host.cores), size_t(host.gpus));
    if (l.role != "rank") return "";
    const int micro = micro_batches(settings);
    const int64_t pieces = int64_t(l.count) * micro;
    if (batch % pieces == 0) return "";
    const bool cuda = cuda::device_of(settings) == "cuda";
    return fmt::format(
        "{}: batch {} does not split into {} rank(s) × {} micro-batch(es) on this host ({} {}): "
        "use a multiple of {}",
        settings.contains("ddp_no_sync") ? "ddp_no_sync" : "ddp_scaling", batch, l.count, micro,
        cuda ? host.gpus : host.cores, cuda ? "GPUs" : "cores", pieces);
  }

  // One check per rank, under ddp_no_sync when both are set.
  void check_evidence(const Knob& knob, const json&, const json& settings, Mode,
                      const json& evidence, std::vector<std::string>& wrong) const override {
    const bool checks_ranks =
        knob.id == "ddp_no_sync" || (knob.id == "ddp_scaling" && !settings.contains("ddp_no_sync"));
    if (!checks_ranks) return;
    if (auto why = check_ddp(settings, fact(evidence, kDdp)); !why.empty()) wrong.push_back(why);
  }

  void summarise_evidence(const json&, const json& e,
                          std::vector<std::string>& parts) const override {
    if (e.contains(evidence::kCpuAffinity))
      parts.push_back("cpus=" + e[evidence::kCpuAffinity].get<std::string>());
  }
};

}  // namespace

const KnobRules& rules() {
  static const Rules r;
  return r;
}

multiproc::Layout layout(const json& settings, size_t cpus, size_t gpus) {
  multiproc::Layout l;
  cpus = std::max<size_t>(1, cpus);
  if (has_ranks(settings)) {
    l.role = "rank";
    l.gpu_each = cuda::device_of(settings) == "cuda";
    // One rank per CPU (per GPU on CUDA) for "true"; ddp_no_sync alone: that many in both arms.
    const size_t all = l.gpu_each ? std::max<size_t>(1, gpus) : cpus;
    l.count = settings.contains("ddp_scaling") ? count_of(settings["ddp_scaling"], all) : int(all);
  } else if (settings.contains("multi_instance")) {
    l.count = count_of(settings["multi_instance"], cpus);
    if (l.count > 1) l.role = "instance";
  }
  const int wanted = int(settings.value("omp_threads", int64_t(cpus)));
  l.threads = std::max(1, std::min(wanted, int(cpus) / std::max(1, l.count)));
  if (l.role.empty()) l.threads = wanted;
  return l;
}

std::vector<TrialSpec> split(const TrialSpec& trial, const std::vector<int>& cpus,
                             const std::string& rendezvous_dir, size_t gpus) {
  const multiproc::Layout l = layout(trial.settings, cpus.size(), gpus);
  std::vector<TrialSpec> parts = multiproc::split(trial, l, cpus, rendezvous_dir, gpus);
  if (!l.role.empty()) {
    for (auto& part : parts) part.settings["omp_threads"] = l.threads;
  }
  return parts;
}

void check_process_evidence(const json& value, const json& evidence,
                            std::vector<std::string>& wrong) {
  // A process of a multi-process trial runs on its own core group; Slurm binds the ranks it
  // places (run/slurm.h), whose CPUs the evidence records without a setting to check them by.
  if (!value.contains("cpus")) return;
  std::string cpus;
  for (const auto& c : value["cpus"]) cpus += (cpus.empty() ? "" : ",") + c.dump();
  if (fact(evidence, evidence::kCpuAffinity) != cpus) {
    wrong.push_back(fmt::format("{} {} should run on CPUs {} but ran on {}",
                                value["role"].get<std::string>(), value["index"].dump(), cpus,
                                fact(evidence, evidence::kCpuAffinity).dump()));
  }
}

}  // namespace tunebench::knobs::distributed

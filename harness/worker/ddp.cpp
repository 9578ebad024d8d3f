#include "worker/ddp.h"

#include <fmt/format.h>
#include <torch/torch.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>

#include "core/multiproc.h"
#include "models/common.h"

// CMake defines TUNEBENCH_GLOO where the LibTorch has c10d's Gloo process group (the header and
// the symbols in libtorch_cpu) and Gloo's own headers are installed; otherwise it passes the
// reason in TUNEBENCH_GLOO_MISSING. TUNEBENCH_NCCL and TUNEBENCH_NCCL_MISSING likewise for
// ProcessGroupNCCL (a CUDA LibTorch with the header and symbols, and NCCL's nccl.h).
#if TUNEBENCH_GLOO || TUNEBENCH_NCCL
#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#endif
#if TUNEBENCH_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#if TUNEBENCH_NCCL
#include <c10/cuda/CUDAFunctions.h>

#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

namespace tunebench::ddp {

using nlohmann::json;

namespace {

// The rows [begin, end) of every tensor of the batch whose first dimension is the batch's.
models::Batch rows(const models::Batch& batch, int64_t begin, int64_t end) {
  auto cut = [&](const torch::Tensor& t) {
    return t.defined() && t.dim() > 0 && t.size(0) == batch.size
               ? t.narrow(0, begin, end - begin).contiguous()
               : t;
  };
  models::Batch out;
  for (const auto& input : batch.inputs) out.inputs.push_back(cut(input));
  out.target = cut(batch.target);
  out.size = end - begin;
  return out;
}

constexpr int64_t kBucketBytes = 25 << 20;  // DDP's default bucket_cap_mb

// Stops a process group's background threads (NCCL's watchdog) before the process exits, where
// the version has shutdown() (2.3 on); older ones stop in their destructor.
template <class Group>
auto shut_down(Group& group, int) -> decltype(group.shutdown(), void()) {
  group.shutdown();
}
template <class Group>
void shut_down(Group&, long) {}

std::string this_host() {
  char name[256] = {};
  gethostname(name, sizeof(name) - 1);
  return name;
}

#if TUNEBENCH_GLOO || TUNEBENCH_NCCL
// The ranks' rendezvous: a FileStore in the trial's private directory when they share this
// host, a TCPStore served by rank 0 when Slurm placed them on several (run/slurm.h).
c10::intrusive_ptr<c10d::Store> make_store(const json& process, int rank, int world,
                                           std::chrono::milliseconds timeout) {
  if (process.contains("store")) {
    c10d::TCPStoreOptions options;
    options.port = process["store"]["port"].get<uint16_t>();
    options.isServer = rank == 0;
    options.numWorkers = world;
    options.waitWorkers = true;
    options.timeout = timeout;
    return c10::make_intrusive<c10d::TCPStore>(process["store"]["host"].get<std::string>(),
                                               options);
  }
  return c10::make_intrusive<c10d::FileStore>(process["dir"].get<std::string>() + "/c10d-store",
                                              world);
}
#endif

}  // namespace

std::string unavailable_reason(c10::DeviceType device) {
  if (device == c10::DeviceType::CUDA) {
#if TUNEBENCH_NCCL
    return "";
#else
    return TUNEBENCH_NCCL_MISSING;
#endif
  }
#if TUNEBENCH_GLOO
  return "";
#else
  return TUNEBENCH_GLOO_MISSING;
#endif
}

struct Rank::Impl {
#if TUNEBENCH_GLOO
  c10::intrusive_ptr<c10d::ProcessGroupGloo> gloo;
#endif
#if TUNEBENCH_NCCL
  c10::intrusive_ptr<c10d::ProcessGroupNCCL> nccl;
#endif
  int rank = 0, world = 1, micro = 1, gpu = -1;  // gpu: −1 on the CPU
  bool sync_last_only = false;
  bool tcp = false;  // a TCPStore (ranks across hosts) rather than a FileStore
  std::string host;  // this rank's host name
  std::vector<std::vector<torch::Tensor>> buckets;  // the parameters, in buckets
  int64_t steps = 0, allreduces = 0;

  // Sums `flat` over the ranks in place and waits for it (on CUDA: the current stream waits).
  void allreduce_one(std::vector<torch::Tensor>& flat) {
#if TUNEBENCH_NCCL
    if (nccl) {
      nccl->allreduce(flat)->wait();
      return;
    }
#endif
#if TUNEBENCH_GLOO
    if (gloo) {
      gloo->allreduce(flat)->wait();
      return;
    }
#endif
    throw std::logic_error("all-reduce without a process group");
  }

  // Sums every bucket's gradients over the ranks and divides by the world size.
  void allreduce(torch::nn::Module& module) {
    if (buckets.empty()) {
      std::vector<torch::Tensor> bucket;
      int64_t bytes = 0;
      for (const auto& p : module.parameters()) {
        if (!p.requires_grad()) continue;
        if (!bucket.empty() && bytes + p.nbytes() > kBucketBytes) {
          buckets.push_back(std::move(bucket));
          bucket.clear();
          bytes = 0;
        }
        bucket.push_back(p);
        bytes += int64_t(p.nbytes());
      }
      if (!bucket.empty()) buckets.push_back(std::move(bucket));
    }
    torch::NoGradGuard no_grad;
    for (const auto& bucket : buckets) {
      std::vector<torch::Tensor> grads;
      for (const auto& p : bucket) {
        grads.push_back(p.grad().defined() ? p.grad().reshape(-1)
                                           : torch::zeros({p.numel()}, p.options()));
      }
      std::vector<torch::Tensor> flat{torch::cat(grads)};
      allreduce_one(flat);
      ++allreduces;
      flat[0].div_(world);
      int64_t offset = 0;
      for (const auto& p : bucket) {
        auto slice = flat[0].narrow(0, offset, p.numel()).view_as(p);
        if (p.grad().defined()) {
          p.mutable_grad().copy_(slice);
        } else {
          p.mutable_grad() = slice.clone();
        }
        offset += p.numel();
      }
    }
  }
};

Rank::Rank(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Rank::~Rank() {
#if TUNEBENCH_NCCL
  if (impl_ && impl_->nccl) shut_down(*impl_->nccl, 0);
#endif
}

std::unique_ptr<Rank> Rank::join(const TrialSpec& spec, models::Batch& batch, int micro_batches,
                                 bool sync_last_only) {
  if (!spec.settings.contains(multiproc::kProcessSetting)) return nullptr;
  const json& process = spec.settings[multiproc::kProcessSetting];
  if (process.value("role", "") != "rank") return nullptr;
  const bool cuda = spec.settings.value("device", "cpu") == "cuda";
  if (const std::string why =
          unavailable_reason(cuda ? c10::DeviceType::CUDA : c10::DeviceType::CPU);
      !why.empty()) {
    throw std::runtime_error("distributed training: " + why);
  }
  auto impl = std::make_unique<Impl>();
  impl->rank = process["index"];
  impl->world = process["count"];
  if (cuda) impl->gpu = process.value("gpu", -1);
  if (cuda && impl->gpu < 0) throw std::runtime_error("a CUDA rank without its GPU");
  impl->micro = micro_batches;
  impl->sync_last_only = sync_last_only;
  const int64_t pieces = int64_t(impl->world) * impl->micro;
  if (batch.size % pieces != 0) {
    throw std::runtime_error(fmt::format(
        "batch {} does not split into {} ranks × {} micro-batches: use a multiple of {}",
        batch.size, impl->world, impl->micro, pieces));
  }
  const int64_t shard = batch.size / impl->world;
  batch = rows(batch, impl->rank * shard, (impl->rank + 1) * shard);
  const auto timeout = std::chrono::milliseconds(int64_t(1000 * spec.timeout_s));
  impl->tcp = process.contains("store");
  impl->host = this_host();
  if (cuda) {
#if TUNEBENCH_NCCL
    // One GPU per rank, this thread's current device before NCCL makes its communicator.
    c10::cuda::set_device(static_cast<c10::DeviceIndex>(impl->gpu));
    auto store = make_store(process, impl->rank, impl->world, timeout);
    auto options = c10d::ProcessGroupNCCL::Options::create();
    options->timeout = timeout;
    impl->nccl =
        c10::make_intrusive<c10d::ProcessGroupNCCL>(store, impl->rank, impl->world, options);
#endif
  } else {
#if TUNEBENCH_GLOO
    auto store = make_store(process, impl->rank, impl->world, timeout);
    auto options = c10d::ProcessGroupGloo::Options::create(timeout);
    // The loopback interface when every rank of the trial is on this host; across hosts the
    // interface GLOO_SOCKET_IFNAME names (as torch.distributed reads it), else the address this
    // host's name resolves to.
    const char* ifname = std::getenv("GLOO_SOCKET_IFNAME");
    options->devices.push_back(
        !impl->tcp          ? c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1")
        : ifname && *ifname ? c10d::ProcessGroupGloo::createDeviceForInterface(ifname)
                            : c10d::ProcessGroupGloo::createDeviceForHostname(impl->host));
    options->threads = 1;
    impl->gloo =
        c10::make_intrusive<c10d::ProcessGroupGloo>(store, impl->rank, impl->world, options);
#endif
  }
  return std::unique_ptr<Rank>(new Rank(std::move(impl)));
}

void Rank::barrier() {
#if TUNEBENCH_NCCL
  if (impl_->nccl) {
    impl_->nccl->barrier()->wait();
    return;
  }
#endif
#if TUNEBENCH_GLOO
  if (impl_->gloo) impl_->gloo->barrier()->wait();
#endif
}

bool Rank::across_hosts() const { return impl_->tcp; }

at::Tensor Rank::forward_backward(models::BenchModel& model, const models::Batch& batch,
                                  const LossFn& loss_of, const BackwardFn& backward) {
  Impl& s = *impl_;
  const int64_t size = batch.size / s.micro;
  torch::Tensor total;
  for (int m = 0; m < s.micro; ++m) {
    const auto part = s.micro == 1 ? batch : rows(batch, m * size, (m + 1) * size);
    auto loss = loss_of(part) / s.micro;
    backward(loss);
    total = total.defined() ? total + loss.detach() : loss.detach();
    if (!s.sync_last_only || m == s.micro - 1) s.allreduce(model.module());
  }
  ++s.steps;
  return total;
}

json Rank::evidence(torch::nn::Module& module) const {
  const Impl& s = *impl_;
  // FNV-1a over the parameters' bytes: equal on two ranks only if every bit is.
  uint64_t hash = 1469598103934665603ULL;
  for (const auto& p : module.parameters()) {
    const auto bytes = p.detach().to(torch::kCPU).contiguous();
    const auto* data = static_cast<const uint8_t*>(bytes.data_ptr());
    for (size_t i = 0; i < bytes.nbytes(); ++i) hash = (hash ^ data[i]) * 1099511628211ULL;
  }
  json e = {{"rank", s.rank},
            {"world_size", s.world},
            {"micro_batches", s.micro},
            {"sync", s.sync_last_only ? "last micro-batch" : "every micro-batch"},
            {"buckets", s.buckets.size()},
            {"steps", s.steps},
            {"allreduces", s.allreduces},
            {"allreduces_per_step", s.steps ? double(s.allreduces) / double(s.steps) : 0.0},
            {"parameter_checksum", fmt::format("{:016x}", hash)},
            {"store", s.tcp ? "TCPStore" : "FileStore"},
            {"host", s.host}};
#if TUNEBENCH_GLOO
  if (s.gloo) {
    e["backend"] = "gloo";
    e["world_size"] = s.gloo->getSize();
    e["rank"] = s.gloo->getRank();
  }
#endif
#if TUNEBENCH_NCCL
  if (s.nccl) {
    e["backend"] = "nccl";
    e["world_size"] = s.nccl->getSize();
    e["rank"] = s.nccl->getRank();
    e["gpu"] = s.gpu;
  }
#endif
  return e;
}

}  // namespace tunebench::ddp

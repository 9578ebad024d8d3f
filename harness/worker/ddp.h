// The distributed knobs inside a worker (their action: worker/actions/distributed.cpp): the process
// is one rank of a c10d process group — ProcessGroupGloo on the CPU, ProcessGroupNCCL on CUDA with
// one GPU per rank (rendezvous through a FileStore in the trial's private directory; the same code
// spans hosts with a TCPStore) — holds its shard of the trial's batch, and after backward
// all-reduces its gradients in buckets (25 MiB, as DDP's default) and averages them. C++ has no DDP
// module wrapper; this is the part of it the knobs measure. ddp_no_sync splits the shard into
// micro-batches and all-reduces only after the last one (OFF: after each).
#pragma once

#include <c10/core/DeviceType.h>

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "core/records.h"

namespace at {
class Tensor;
}
namespace torch::nn {
class Module;
}

namespace tunebench::models {
struct Batch;
class BenchModel;
}  // namespace tunebench::models

namespace tunebench::ddp {

// Empty when this build has the c10d process group of `device` (Gloo for the CPU, NCCL for
// CUDA); otherwise why not, fit to be shown as "not applicable: <reason>".
std::string unavailable_reason(c10::DeviceType device = c10::DeviceType::CPU);

// The loss of a (micro-)batch with what the worker wraps around it, and its backward (plain, or
// through fp16 loss scaling).
using LossFn = std::function<at::Tensor(const models::Batch&)>;
using BackwardFn = std::function<void(const at::Tensor&)>;

class Rank {
 public:
  // nullptr unless `spec` is a rank of a distributed trial; otherwise joins the process group
  // (on CUDA: NCCL on the GPU of the process setting's "gpu", made this thread's device) and
  // replaces `batch` by this rank's shard. Throws std::runtime_error (no Gloo or NCCL in this
  // build, a batch that does not split evenly, a peer that never came).
  // `micro_batches` per step; `sync_last_only`: all-reduce after the last of them only.
  static std::unique_ptr<Rank> join(const TrialSpec& spec, models::Batch& batch, int micro_batches,
                                    bool sync_last_only);
  ~Rank();
  Rank(const Rank&) = delete;
  Rank& operator=(const Rank&) = delete;

  // Forward and backward over the shard's micro-batches with the gradient all-reduces the knob
  // asks for; returns the shard's loss (detached).
  at::Tensor forward_backward(models::BenchModel& model, const models::Batch& batch,
                              const LossFn& loss, const BackwardFn& backward);

  // Returns once every rank has called it (the process group's barrier).
  void barrier();
  // Whether the ranks meet through a TCPStore (placed by Slurm, possibly on several hosts), so
  // that they start measuring at this barrier rather than at the trial directory's files.
  bool across_hosts() const;

  // world size, rank, backend, micro-batches, buckets, all-reduces per step (counted), a
  // checksum of the parameters' bytes (identical on every rank after synchronised steps), the
  // store (FileStore, TCPStore) and this rank's host.
  nlohmann::json evidence(torch::nn::Module& module) const;

 private:
  struct Impl;
  explicit Rank(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tunebench::ddp

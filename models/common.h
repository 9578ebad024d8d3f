// What every benchmark model offers the harness: seeded synthetic batches, an inference forward
// and a training loss, and its size counted from its layers.
//
// FLOP convention (ModelStats::forward_flops): 2 × the multiply-accumulates of convolutions,
// linear layers and attention/interaction matrix products, plus one per addition in an
// EmbeddingBag sum. Element-wise work (norms, activations, softmax, pooling) is not counted,
// as in the published counts (ResNet-50: 4.09 G multiply-accumulates at 224×224).
#pragma once

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

namespace tunebench::models {

struct Batch {
  std::vector<torch::Tensor> inputs;  // what forward() takes, in order
  torch::Tensor target;               // what loss() compares with
  int64_t size = 0;                   // samples in the batch
};

// Size of a model as configured, counted layer by layer from its configuration (tests check the
// parameter count against the built module).
struct ModelStats {
  int64_t parameters = 0;
  double forward_flops = 0;  // per sample, convention above
  std::string input_shape;   // per sample, e.g. "3x224x224" or "1024 tokens"
};

class BenchModel {
 public:
  virtual ~BenchModel() = default;
  virtual torch::nn::Module& module() = 0;
  // Deterministic in `seed`: the same seed gives bit-identical tensors.
  virtual Batch make_batch(int64_t batch_size, uint64_t seed) const = 0;
  virtual torch::Tensor forward(const Batch& batch) = 0;
  virtual torch::Tensor loss(const Batch& batch) = 0;
};

// A CPU generator seeded for one batch, so batches never depend on the global RNG state.
inline torch::Generator seeded_generator(uint64_t seed) {
  return at::detail::createCPUGenerator(seed);
}

// Parameters (elements) of a built module, counted from its registered parameters.
inline int64_t count_parameters(torch::nn::Module& module) {
  int64_t total = 0;
  for (const auto& p : module.parameters()) total += p.numel();
  return total;
}

}  // namespace tunebench::models

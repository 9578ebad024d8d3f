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
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "models/descriptor.h"  // ModelStats

namespace tunebench::models {

struct Batch {
  std::vector<torch::Tensor> inputs;  // what forward() takes, in order
  torch::Tensor target;               // what loss() compares with
  int64_t size = 0;                   // samples in the batch
};

class BenchModel {
 public:
  virtual ~BenchModel() = default;
  virtual torch::nn::Module& module() = 0;
  // Deterministic in `seed`: the same seed gives bit-identical tensors.
  virtual Batch make_batch(int64_t batch_size, uint64_t seed) const = 0;
  virtual torch::Tensor forward(const Batch& batch) = 0;
  virtual torch::Tensor loss(const Batch& batch) = 0;
  // Structural facts read back from the built module (not from its configuration): what the
  // build-time switches really produced, e.g. the number of conv biases or stored mask buffers.
  virtual nlohmann::json describe() = 0;

  // What the model offers the knobs' actions (worker/actions/): the harness asks the model rather
  // than testing its name or type. The defaults say "none"; a knob that needs what a model lacks
  // is not applicable to it.

  // The first convolution's weight (channels_last reads its layout back); undefined when the
  // model has no convolution.
  virtual torch::Tensor first_conv_weight() { return {}; }

  // A pointwise bias add + activation the model lets a caller replace: h = f(x, bias).
  using BiasAct = std::function<torch::Tensor(const torch::Tensor&, const torch::Tensor&)>;
  // Each place the model applies its MLP's bias add + GELU, as a slot to set (empty: the model's
  // own); jit_fusion runs an erf-GELU chain through them, eager or TorchScript-fused. None by
  // default.
  virtual std::vector<BiasAct*> bias_act_slots() { return {}; }

  // Replaces each fp32 Linear layer of the model's MLPs by what `replace` makes of it
  // (quantize_linear: a dynamically quantized int8 layer); returns how many were replaced, 0 when
  // the model offers none.
  using LinearReplacement = std::function<torch::nn::AnyModule(const torch::nn::LinearImpl&)>;
  virtual int64_t replace_linear_layers(const LinearReplacement& replace) { return 0; }

  // The model's inference forward as TorchScript source, `def forward(self, x)` over one input,
  // reading `self.<name>` for every parameter and buffer of module() with the dots of its name
  // made underscores ("layer1.0.conv1.weight" → self.layer1_0_conv1_weight): the module that
  // freeze_script scripts and freezes. Empty when the model offers none.
  virtual std::string inference_script_source() { return ""; }
};

// A CPU generator seeded for one batch, so batches never depend on the global RNG state.
inline torch::Generator seeded_generator(uint64_t seed) {
  return at::detail::createCPUGenerator(seed);
}

// A generator for a model's own initialisation, seeded by one draw from the global generator
// before the model builds its modules. Construction consumes randomness in amounts that differ
// between variants (a conv bias, padded vocabulary rows); initialising from this generator keeps
// the variants' shared weights identical, so both arms of an experiment compute the same function.
inline torch::Generator init_generator() {
  return seeded_generator(
      static_cast<uint64_t>(torch::randint(int64_t{1} << 62, {1}, torch::kLong).item<int64_t>()));
}

// Parameters (elements) of a built module, counted from its registered parameters.
inline int64_t count_parameters(torch::nn::Module& module) {
  int64_t total = 0;
  for (const auto& p : module.parameters()) total += p.numel();
  return total;
}

}  // namespace tunebench::models

// ResNet-50, torchvision's v1.5 layout (He et al., "Deep Residual Learning for Image
// Recognition", 2015; the stride sits on the 3×3 conv of each bottleneck).
//
//   stem:   conv 7×7/2 (3→W) · BN · ReLU · maxpool 3×3/2
//   stages: bottleneck blocks {3, 4, 6, 3}, widths W, 2W, 4W, 8W, expansion 4
//   head:   global average pool · linear (32W → classes)
//
// checkpoint: each of the four stages stores its activations → only its input, and recomputes
// the rest in backward (models/checkpoint.h); training only. Batch norm's running statistics are
// then updated twice per step, as with PyTorch's checkpoint; the step's outputs are unchanged.
//
// Dimensions: B batch, C channels, H×W spatial. Input [B, 3, S, S] → logits [B, classes].
#pragma once

#include <array>
#include <vector>

#include "models/checkpoint.h"
#include "models/common.h"
#include "models/resnet_config.h"

namespace tunebench::models {

struct BottleneckImpl : torch::nn::Module {
  BottleneckImpl(int64_t in_channels, int64_t width, int64_t stride, const ResNetConfig& config);
  torch::Tensor forward(torch::Tensor x);

  torch::nn::Conv2d conv1{nullptr}, conv2{nullptr}, conv3{nullptr};
  torch::nn::BatchNorm2d bn1{nullptr}, bn2{nullptr}, bn3{nullptr};
  torch::nn::Sequential downsample{nullptr};  // 1×1 conv + BN where the shape changes
  bool inplace_act;
  int64_t forwards = 0;  // times forward() ran: a checkpointed block runs twice per step
};
TORCH_MODULE(Bottleneck);

struct ResNetImpl : torch::nn::Module {
  explicit ResNetImpl(const ResNetConfig& config);
  torch::Tensor forward(torch::Tensor x);  // [B, 3, S, S] → [B, classes]

  ResNetConfig config;
  torch::nn::Conv2d stem_conv{nullptr};
  torch::nn::BatchNorm2d stem_bn{nullptr};
  torch::nn::Sequential layer1{nullptr}, layer2{nullptr}, layer3{nullptr}, layer4{nullptr};
  torch::nn::Linear fc{nullptr};
  std::vector<Segment> stages;  // layer1 … layer4, for checkpointing
};
TORCH_MODULE(ResNet);

class ResNetModel : public BenchModel {
 public:
  explicit ResNetModel(const ResNetConfig& config) : net(config) {}
  torch::nn::Module& module() override { return *net; }
  Batch make_batch(int64_t batch_size, uint64_t seed) const override;
  torch::Tensor forward(const Batch& batch) override { return net->forward(batch.inputs.at(0)); }
  torch::Tensor loss(const Batch& batch) override;
  nlohmann::json describe() override;
  torch::Tensor first_conv_weight() override { return net->stem_conv->weight; }
  std::string inference_script_source() override;

  ResNet net;
};

}  // namespace tunebench::models

// ResNet-50's configuration, presets, options and size arithmetic (models/resnet.h has the layout
// and the modules). Torch-free: the registry, the planner and the fuzzer read it without LibTorch.
#pragma once

#include <array>
#include <cstdint>

#include "models/family.h"

namespace tunebench::models {

struct ResNetConfig {
  std::array<int64_t, 4> blocks{3, 4, 6, 3};
  int64_t width = 64;  // channels after the stem; stage i uses width·2^i
  int64_t num_classes = 1000;
  int64_t image_size = 224;  // input is image_size × image_size
  bool conv_bias = false;    // a bias on every conv before BN (redundant: conv_bias_off's OFF arm)
  bool inplace_act = false;  // relu_ instead of relu (inplace_act)
  bool checkpoint = false;   // recompute each stage in backward (checkpoint)
};

// Output channels of a bottleneck block per channel of its width.
constexpr int64_t kBottleneckExpansion = 4;

ModelStats resnet_stats(const ResNetConfig& config);

// Presets and options (models/family.h); resnet50_descriptor() is the registry's view of it.
const ModelFamily<ResNetConfig>& resnet50_family();

}  // namespace tunebench::models

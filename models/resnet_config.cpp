#include "models/resnet_config.h"

namespace tunebench::models {

ModelStats resnet_stats(const ResNetConfig& cfg) {
  ModelStats stats;
  int64_t size = cfg.image_size;
  auto conv_out = [](int64_t in, int64_t kernel, int64_t stride) {
    return (in + 2 * (kernel / 2) - kernel) / stride + 1;
  };
  // One conv + its BN: weights, optional bias, BN scale and shift; 2·MACs at the output size.
  auto add_conv = [&](int64_t in, int64_t out, int64_t kernel, int64_t out_size) {
    stats.parameters += in * out * kernel * kernel + (cfg.conv_bias ? out : 0) + 2 * out;
    stats.forward_flops += 2.0 * in * out * kernel * kernel * out_size * out_size;
    stats.activation_elements += double(out) * out_size * out_size;
  };
  size = conv_out(size, 7, 2);
  add_conv(3, cfg.width, 7, size);
  size = conv_out(size, 3, 2);  // max pool
  int64_t in_channels = cfg.width;
  for (int stage = 0; stage < 4; ++stage) {
    const int64_t width = cfg.width << stage;
    for (int64_t i = 0; i < cfg.blocks[stage]; ++i) {
      const int64_t stride = (i == 0 && stage > 0) ? 2 : 1;
      const int64_t out_size = conv_out(size, 3, stride);
      add_conv(in_channels, width, 1, size);
      add_conv(width, width, 3, out_size);
      add_conv(width, width * kBottleneckExpansion, 1, out_size);
      if (stride != 1 || in_channels != width * kBottleneckExpansion) {
        add_conv(in_channels, width * kBottleneckExpansion, 1, out_size);
      }
      in_channels = width * kBottleneckExpansion;
      size = out_size;
    }
  }
  stats.parameters += in_channels * cfg.num_classes + cfg.num_classes;
  stats.forward_flops += 2.0 * in_channels * cfg.num_classes;
  stats.input_shape = "3x" + std::to_string(cfg.image_size) + "x" + std::to_string(cfg.image_size);
  return stats;
}

const ModelFamily<ResNetConfig>& resnet50_family() {
  static const ModelFamily<ResNetConfig> family{
      "resnet50",
      {{"tiny", "8 channels after the stem, 32x32 inputs, 10 classes: for tests",
        [] {
          ResNetConfig c;
          c.width = 8;
          c.image_size = 32;
          c.num_classes = 10;
          return c;
        }()},
       {"full", "torchvision's ResNet-50 v1.5, 224x224, 1000 classes", ResNetConfig{}}},
      {int_option("width", &ResNetConfig::width, 1, 1 << 12),
       int_option("num_classes", &ResNetConfig::num_classes, 1, 1 << 24),
       int_option("image_size", &ResNetConfig::image_size, 32, 1 << 16),
       bool_option("conv_bias", &ResNetConfig::conv_bias),
       bool_option("inplace_act", &ResNetConfig::inplace_act),
       bool_option("checkpoint", &ResNetConfig::checkpoint)},
      resnet_stats};
  return family;
}

// --- the descriptor: what the registry (models/registry.def) knows of ResNet-50 ---------------
const ModelDescriptor& resnet50_descriptor() {
  static const ModelDescriptor descriptor = describe(resnet50_family());
  return descriptor;
}

}  // namespace tunebench::models

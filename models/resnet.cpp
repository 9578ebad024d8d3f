#include "models/resnet.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace tunebench::models {

namespace nn = torch::nn;

namespace {

nn::Conv2d conv(int64_t in, int64_t out, int64_t kernel, int64_t stride, bool bias) {
  return nn::Conv2d(
      nn::Conv2dOptions(in, out, kernel).stride(stride).padding(kernel / 2).bias(bias));
}

torch::Tensor relu(torch::Tensor x, bool inplace) { return inplace ? x.relu_() : torch::relu(x); }
}  // namespace

BottleneckImpl::BottleneckImpl(int64_t in_channels, int64_t width, int64_t stride,
                               const ResNetConfig& config)
    : inplace_act(config.inplace_act) {
  const bool bias = config.conv_bias;
  conv1 = register_module("conv1", conv(in_channels, width, 1, 1, bias));
  bn1 = register_module("bn1", nn::BatchNorm2d(width));
  conv2 = register_module("conv2", conv(width, width, 3, stride, bias));  // v1.5: stride here
  bn2 = register_module("bn2", nn::BatchNorm2d(width));
  conv3 = register_module("conv3", conv(width, width * kBottleneckExpansion, 1, 1, bias));
  bn3 = register_module("bn3", nn::BatchNorm2d(width * kBottleneckExpansion));
  if (stride != 1 || in_channels != width * kBottleneckExpansion) {
    downsample = register_module(
        "downsample",
        nn::Sequential(conv(in_channels, width * kBottleneckExpansion, 1, stride, bias),
                       nn::BatchNorm2d(width * kBottleneckExpansion)));
  }
}

torch::Tensor BottleneckImpl::forward(torch::Tensor x) {
  ++forwards;
  torch::Tensor identity = downsample ? downsample->forward(x) : x;
  torch::Tensor out = relu(bn1(conv1(x)), inplace_act);
  out = relu(bn2(conv2(out)), inplace_act);
  out = bn3(conv3(out));
  // In-place add and ReLU write into `out`, a fresh tensor: autograd allows it (001's claim that
  // such updates break autograd is false), and inplace_act measures what it saves.
  if (inplace_act) return out.add_(identity).relu_();
  return torch::relu(out + identity);
}

ResNetImpl::ResNetImpl(const ResNetConfig& cfg) : config(cfg) {
  auto gen = init_generator();
  const int64_t w = cfg.width;
  stem_conv = register_module("conv1", conv(3, w, 7, 2, cfg.conv_bias));
  stem_bn = register_module("bn1", nn::BatchNorm2d(w));
  int64_t in_channels = w;
  auto stage = [&](int64_t blocks, int64_t width, int64_t stride) {
    nn::Sequential seq;
    for (int64_t i = 0; i < blocks; ++i) {
      seq->push_back(Bottleneck(in_channels, width, i == 0 ? stride : 1, cfg));
      in_channels = width * kBottleneckExpansion;
    }
    return seq;
  };
  layer1 = register_module("layer1", stage(cfg.blocks[0], w, 1));
  layer2 = register_module("layer2", stage(cfg.blocks[1], w * 2, 2));
  layer3 = register_module("layer3", stage(cfg.blocks[2], w * 4, 2));
  layer4 = register_module("layer4", stage(cfg.blocks[3], w * 8, 2));
  for (const auto& layer : {layer1, layer2, layer3, layer4}) {
    stages.push_back([stage = layer.ptr()](const torch::Tensor& x) { return stage->forward(x); });
  }
  fc = register_module("fc", nn::Linear(in_channels, cfg.num_classes));

  // torchvision's initialisation: Kaiming-normal convs (fan_out, ReLU gain), BN weight 1 / bias 0,
  // the classifier uniform in ±1/√fan_in; drawn from the model's own generator.
  torch::NoGradGuard no_grad;
  for (auto& m : modules(/*include_self=*/false)) {
    if (auto* c = m->as<nn::Conv2d>()) {
      const auto& k = c->options.kernel_size();
      const double fan_out = double(c->options.out_channels()) * (*k)[0] * (*k)[1];
      c->weight.normal_(0.0, std::sqrt(2.0 / fan_out), gen);
      if (c->bias.defined()) c->bias.zero_();
    }
  }
  const double bound = 1.0 / std::sqrt(double(in_channels));
  fc->weight.uniform_(-bound, bound, gen);
  fc->bias.uniform_(-bound, bound, gen);
}

torch::Tensor ResNetImpl::forward(torch::Tensor x) {
  const bool inplace = config.inplace_act;
  x = relu(stem_bn(stem_conv(x)), inplace);                         // [B, W, S/2, S/2]
  x = torch::max_pool2d(x, /*kernel=*/3, /*stride=*/2, /*pad=*/1);  // [B, W, S/4, S/4]
  // layer1 … layer4: [B, 4W, S/4, S/4] → [B, 8W, S/8, S/8] → [B, 16W, S/16] → [B, 32W, S/32]
  for (const auto& stage : stages) {
    x = config.checkpoint && is_training() ? checkpoint(stage, x) : stage(x);
  }
  x = torch::adaptive_avg_pool2d(x, {1, 1}).flatten(1);  // [B, 32W]
  return fc(x);                                          // [B, classes]
}

Batch ResNetModel::make_batch(int64_t batch_size, uint64_t seed) const {
  auto gen = seeded_generator(seed);
  const int64_t s = net->config.image_size;
  Batch batch;
  batch.size = batch_size;
  batch.inputs.push_back(torch::randn({batch_size, 3, s, s}, gen, torch::kFloat));
  batch.target = torch::randint(net->config.num_classes, {batch_size}, gen, torch::kLong);
  return batch;
}

torch::Tensor ResNetModel::loss(const Batch& batch) {
  return torch::nn::functional::cross_entropy(forward(batch), batch.target);
}

nlohmann::json ResNetModel::describe() {
  int64_t conv_biases = 0, convs = 0, blocks = 0, block_forwards = 0;
  for (const auto& m : net->modules(/*include_self=*/false)) {
    if (auto* c = m->as<nn::Conv2d>()) {
      ++convs;
      if (c->bias.defined()) conv_biases += c->bias.numel();
    }
    if (auto* b = m->as<BottleneckImpl>()) {
      ++blocks;
      block_forwards += b->forwards;
    }
  }
  return {{"convolutions", convs},
          {"conv_bias_parameters", conv_biases},
          {"inplace_act", net->config.inplace_act},
          {"checkpoint", net->config.checkpoint},
          {"blocks", blocks},
          {"block_forwards", block_forwards}};
}

namespace {

// "layer1.0.conv1.weight" → "layer1_0_conv1_weight": a TorchScript attribute name.
std::string flat(std::string name) {
  std::replace(name.begin(), name.end(), '.', '_');
  return name;
}

std::string conv_source(const std::string& name, const nn::Conv2dImpl& c, const std::string& in) {
  const int64_t k = (*c.options.kernel_size())[0], s = (*c.options.stride())[0];
  const std::string bias = c.bias.defined() ? "self." + flat(name) + "_bias" : "None";
  const std::string stride = std::to_string(s), pad = std::to_string(k / 2);
  // Padding k/2, as ResNetImpl builds every conv.
  return "torch.conv2d(" + in + ", self." + flat(name) + "_weight, " + bias + ", [" + stride +
         ", " + stride + "], [" + pad + ", " + pad + "])";
}

std::string batch_norm_source(const std::string& name, const nn::BatchNorm2dImpl& bn,
                              const std::string& in) {
  const std::string n = "self." + flat(name);
  char eps[32];
  std::snprintf(eps, sizeof(eps), "%.17g", bn.options.eps());
  return "torch.batch_norm(" + in + ", " + n + "_weight, " + n + "_bias, " + n + "_running_mean, " +
         n + "_running_var, False, 0.1, " + eps + ", False)";
}

}  // namespace

// ResNetImpl::forward in inference as TorchScript over the flattened parameter names.
std::string ResNetModel::inference_script_source() {
  std::string s = "def forward(self, x):\n";
  auto line = [&](const std::string& text) { s += "    " + text + "\n"; };
  line("x = torch.relu(" +
       batch_norm_source("bn1", *net->stem_bn, conv_source("conv1", *net->stem_conv, "x")) + ")");
  line("x = torch.max_pool2d(x, [3, 3], [2, 2], [1, 1])");
  const std::pair<const char*, nn::Sequential*> stages[] = {{"layer1", &net->layer1},
                                                            {"layer2", &net->layer2},
                                                            {"layer3", &net->layer3},
                                                            {"layer4", &net->layer4}};
  for (const auto& [stage, seq] : stages) {
    for (size_t i = 0; i < (*seq)->size(); ++i) {
      const auto& b = *(*seq)->ptr(i)->as<BottleneckImpl>();
      const std::string p = std::string(stage) + "." + std::to_string(i) + ".";
      if (b.downsample) {
        const auto& dconv = *b.downsample->ptr(0)->as<nn::Conv2d>();
        const auto& dbn = *b.downsample->ptr(1)->as<nn::BatchNorm2d>();
        line("identity = " + batch_norm_source(p + "downsample.1", dbn,
                                               conv_source(p + "downsample.0", dconv, "x")));
      } else {
        line("identity = x");
      }
      line("out = torch.relu(" +
           batch_norm_source(p + "bn1", *b.bn1, conv_source(p + "conv1", *b.conv1, "x")) + ")");
      line("out = torch.relu(" +
           batch_norm_source(p + "bn2", *b.bn2, conv_source(p + "conv2", *b.conv2, "out")) + ")");
      line("out = " +
           batch_norm_source(p + "bn3", *b.bn3, conv_source(p + "conv3", *b.conv3, "out")));
      line("x = torch.relu(out + identity)");
    }
  }
  line("x = torch.adaptive_avg_pool2d(x, [1, 1]).flatten(1)");
  line("return torch.linear(x, self.fc_weight, self.fc_bias)");
  return s;
}

// --- the builder: what models/registry.def builds for ResNet-50 -----------------------------
std::unique_ptr<BenchModel> resnet50_build(const ModelSpec& spec) {
  return std::make_unique<ResNetModel>(configure(resnet50_family(), spec));
}

}  // namespace tunebench::models

// Names, options and errors of the model registry; the version-compatibility layer; the device
// layer on a host without a GPU.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "models/registry.h"
#include "platform/compat.h"
#include "platform/device.h"

namespace tunebench {
namespace {

std::string error_of(const models::ModelSpec& spec) {
  try {
    models::summarize(spec);
  } catch (const models::InvalidSpec& e) {
    return e.what();
  }
  return "";
}

TEST(Registry, EveryModelHasItsCatalogPresets) {
  EXPECT_EQ(models::model_names(),
            (std::vector<std::string>{"resnet50", "gpt", "dlrm", "torchscript", "python"}));
  EXPECT_EQ(models::preset_names("resnet50"), (std::vector<std::string>{"tiny", "full"}));
  EXPECT_EQ(models::preset_names("gpt"), (std::vector<std::string>{"tiny", "small", "gpt2"}));
  EXPECT_EQ(models::preset_names("dlrm"), (std::vector<std::string>{"tiny", "kaggle"}));
  EXPECT_EQ(models::preset_names("torchscript"), (std::vector<std::string>{"file"}));
  EXPECT_EQ(models::preset_names("python"), (std::vector<std::string>{"file", "export"}));
  EXPECT_EQ(models::summarize_all().size(), 10u);
}

// The registry is one list of descriptors; each names its presets and its options with their
// types, and its summary is the registry's.
TEST(Registry, DescriptorsAreTheOneList) {
  std::vector<std::string> names;
  for (const models::ModelDescriptor* d : models::descriptors()) names.push_back(d->name);
  EXPECT_EQ(names, models::model_names());
  const models::ModelDescriptor& gpt = models::descriptor("gpt");
  ASSERT_EQ(gpt.presets.size(), 3u);
  EXPECT_EQ(gpt.presets[0].name, "tiny");
  EXPECT_NE(gpt.presets[0].description.find("for tests"), std::string::npos);
  auto option = [&](const std::string& name) {
    for (const auto& o : gpt.options) {
      if (o.name == name) return o.type;
    }
    return std::string("missing");
  };
  EXPECT_EQ(option("seq_len"), "integer from 1 to 16777216");
  EXPECT_EQ(option("builtin_ops"), "true or false");
  EXPECT_EQ(option("seqlen"), "missing");
  EXPECT_EQ(gpt.summarize({"gpt", "tiny"}).parameters,
            models::summarize({"gpt", "tiny"}).parameters);
  EXPECT_THROW(models::descriptor("resnet"), models::InvalidSpec);
}

TEST(Registry, BadNamesListTheValidOnes) {
  EXPECT_EQ(error_of({"resnet", "full"}),
            "unknown model 'resnet'; valid models: resnet50, gpt, dlrm, torchscript, python");
  EXPECT_EQ(error_of({"gpt", "large"}),
            "unknown preset 'large' for model 'gpt'; valid presets: tiny, small, gpt2");
  const std::string option = error_of({"gpt", "tiny", {{"seqlen", 5}}});
  EXPECT_NE(option.find("unknown option 'seqlen'"), std::string::npos) << option;
  EXPECT_NE(option.find("seq_len"), std::string::npos) << option;
}

TEST(Registry, OptionsAreTypeAndRangeChecked) {
  EXPECT_EQ(error_of({"gpt", "tiny", {{"seq_len", "long"}}}),
            "option 'seq_len' of model 'gpt' must be an integer, got \"long\"");
  EXPECT_EQ(error_of({"resnet50", "tiny", {{"conv_bias", 1}}}),
            "option 'conv_bias' of model 'resnet50' must be true or false, got 1");
  EXPECT_EQ(error_of({"dlrm", "tiny", {{"row_cap", -1}}}),
            "option 'row_cap' of model 'dlrm' must be at least 0, got -1");
  EXPECT_NE(error_of({"gpt", "tiny", {{"seq_len", 65}}}).find("exceeds block_size 64"),
            std::string::npos);
  EXPECT_NE(error_of({"gpt", "tiny", {{"n_head", 3}}}).find("multiple of n_head"),
            std::string::npos);
}

TEST(Registry, OptionsChangeTheConfiguration) {
  const auto s = models::summarize({"gpt", "small", {{"seq_len", 128}, {"builtin_ops", false}}});
  EXPECT_EQ(s.config["seq_len"], 128);
  EXPECT_EQ(s.config["builtin_ops"], false);
  EXPECT_EQ(s.input_shape, "128 tokens");
  EXPECT_LT(s.forward_flops, models::summarize({"gpt", "small"}).forward_flops);
}

TEST(Compat, ScaledDotProductAttentionMatchesTheMathForm) {
  torch::manual_seed(0);
  auto q = torch::randn({2, 3, 5, 4}), k = torch::randn({2, 3, 5, 4}),
       v = torch::randn({2, 3, 5, 4});
  auto mask = torch::ones({5, 5}, torch::kBool).tril();
  auto scores = q.matmul(k.transpose(-2, -1)) / 2.0;  // √4
  auto expected = torch::softmax(scores.masked_fill(mask.logical_not(), -INFINITY), -1).matmul(v);
  EXPECT_TRUE(torch::allclose(compat::scaled_dot_product_attention(q, k, v, mask, false), expected,
                              1e-5, 1e-6));
  EXPECT_TRUE(torch::allclose(compat::scaled_dot_product_attention(q, k, v, c10::nullopt, true),
                              expected, 1e-5, 1e-6));
  EXPECT_THROW(compat::scaled_dot_product_attention(q, k, v, mask, true), std::invalid_argument);
}

TEST(Compat, AutocastGuardCastsMatmulsToBf16AndRestores) {
  auto a = torch::randn({8, 8}), b = torch::randn({8, 8});
  ASSERT_FALSE(compat::autocast_enabled(c10::DeviceType::CPU));
  {
    compat::AutocastGuard guard(c10::DeviceType::CPU, torch::kBFloat16);
    EXPECT_TRUE(compat::autocast_enabled(c10::DeviceType::CPU));
    EXPECT_EQ(torch::mm(a, b).scalar_type(), torch::kBFloat16);
  }
  EXPECT_FALSE(compat::autocast_enabled(c10::DeviceType::CPU));
  EXPECT_EQ(torch::mm(a, b).scalar_type(), torch::kFloat);
}

TEST(Compat, FusedAdamWAvailabilityFollowsTheVersion) {
  const std::string cpu = compat::fused_adamw_unavailable_reason(c10::DeviceType::CPU);
  if (TORCH_VERSION_MAJOR < 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR < 4)) {
    EXPECT_NE(cpu.find(compat::torch_version()), std::string::npos) << cpu;
  } else {
    EXPECT_EQ(cpu, "");
  }
}

TEST(Device, WithoutAGpuCudaIsNotApplicableWithAReason) {
  if (torch::cuda::is_available()) GTEST_SKIP() << "this host has a CUDA device";
  EXPECT_FALSE(device::cuda_unavailable_reason().empty());
  EXPECT_EQ(device::cuda_info().device_count, 0);
  EXPECT_THROW(device::peak_memory_bytes(torch::kCPU), std::runtime_error);
  EXPECT_NO_THROW(device::synchronize(torch::kCPU));
  EXPECT_NE(device::build_summary().find(compat::torch_version()), std::string::npos);
}

}  // namespace
}  // namespace tunebench

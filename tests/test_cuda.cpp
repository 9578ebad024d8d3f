// The CUDA side's parts that run without a GPU: fp16 loss scaling on ATen's _amp ops (CPU
// kernels in LibTorch 2.x), the device-neutral trial on the CPU, and a CUDA trial refused with the
// reason on a host or build without CUDA.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "platform/compat.h"
#include "platform/device.h"
#include "worker/device_trial.h"
#include "worker/loss_scaler.h"
#include "worker/worker.h"

namespace tunebench {
namespace {

// A scaler on the CPU, or nullptr where this LibTorch has no CPU kernels for the _amp ops (1.13);
// then the constructor must refuse with the same reason.
std::unique_ptr<amp::LossScaler> cpu_scaler(double init_scale, int64_t growth_interval) {
  const std::string why = amp::loss_scaling_unavailable_reason(c10::DeviceType::CPU);
  if (!why.empty()) {
    EXPECT_EQ(compat::torch_version().rfind("1.", 0), 0u) << why;  // 2.x has the CPU kernels
    try {
      amp::LossScaler refused(torch::kCPU);
      ADD_FAILURE() << "the scaler was built without kernels";
    } catch (const std::runtime_error& e) {
      EXPECT_EQ(e.what(), why);
    }
    return nullptr;
  }
  return std::make_unique<amp::LossScaler>(torch::kCPU, init_scale, 2.0, 0.5, growth_interval);
}

TEST(LossScaler, AScaledStepEqualsTheUnscaledStep) {
  auto scaler = cpu_scaler(1024.0, 2000);
  if (!scaler) GTEST_SKIP() << amp::loss_scaling_unavailable_reason(c10::DeviceType::CPU);
  torch::manual_seed(3);
  auto make = [] { return torch::nn::Linear(8, 4); };
  auto plain = make();
  torch::manual_seed(3);
  auto scaled = make();
  const auto x = torch::randn({16, 8});
  torch::optim::SGD plain_opt(plain->parameters(), 0.1), scaled_opt(scaled->parameters(), 0.1);
  plain->forward(x).pow(2).mean().backward();
  plain_opt.step();
  const auto loss = scaled->forward(x).pow(2).mean();
  const auto scaled_loss = scaler->scale(loss);
  EXPECT_FLOAT_EQ(scaled_loss.item<float>(), loss.item<float>() * 1024);
  scaled_loss.backward();
  EXPECT_TRUE(scaler->step(scaled->parameters(), [&] { scaled_opt.step(); }));
  // 1024 is a power of two: scaling and unscaling are exact, so the weights agree bit for bit.
  for (size_t i = 0; i < plain->parameters().size(); ++i) {
    EXPECT_TRUE(torch::equal(plain->parameters()[i], scaled->parameters()[i])) << i;
  }
  EXPECT_EQ(scaler->skipped_steps(), 0);
}

TEST(LossScaler, AnOverflowSkipsTheStepAndBacksTheScaleOff) {
  auto scaler = cpu_scaler(65536.0, 2000);
  if (!scaler) GTEST_SKIP() << amp::loss_scaling_unavailable_reason(c10::DeviceType::CPU);
  auto w = torch::ones({3}, torch::requires_grad());
  w.mutable_grad() = torch::tensor({1.0f, std::numeric_limits<float>::infinity(), 2.0f});
  bool stepped = false;
  EXPECT_FALSE(scaler->step({w}, [&] { stepped = true; }));
  EXPECT_FALSE(stepped);
  EXPECT_EQ(scaler->skipped_steps(), 1);
  EXPECT_DOUBLE_EQ(scaler->current_scale(), 32768.0);
  w.mutable_grad() = torch::tensor({std::nanf(""), 0.0f, 0.0f});
  EXPECT_FALSE(scaler->step({w}, [&] { stepped = true; }));
  EXPECT_DOUBLE_EQ(scaler->current_scale(), 16384.0);
}

TEST(LossScaler, TheScaleGrowsAfterGrowthIntervalCleanSteps) {
  auto scaler = cpu_scaler(8.0, 3);
  if (!scaler) GTEST_SKIP() << amp::loss_scaling_unavailable_reason(c10::DeviceType::CPU);
  auto w = torch::ones({2}, torch::requires_grad());
  int steps = 0;
  for (int i = 0; i < 2; ++i) {
    w.mutable_grad() = torch::full({2}, 16.0f);
    EXPECT_TRUE(scaler->step({w}, [&] { ++steps; }));
    EXPECT_DOUBLE_EQ(scaler->current_scale(), 8.0);
    EXPECT_TRUE(torch::equal(w.grad(), torch::full({2}, 2.0f)));  // unscaled: 16 / 8
  }
  w.mutable_grad() = torch::full({2}, 16.0f);
  EXPECT_TRUE(scaler->step({w}, [&] { ++steps; }));
  EXPECT_DOUBLE_EQ(scaler->current_scale(), 16.0);  // the third clean step doubles it
  EXPECT_EQ(steps, 3);
}

TEST(DeviceTrial, TheCpuTrialKeepsTheCpuAndBf16) {
  TrialSpec spec;
  spec.settings = {{"amp", true}};
  auto dev = device_trial::make(spec);
  EXPECT_EQ(dev->device(), torch::Device(torch::kCPU));
  EXPECT_EQ(dev->amp_dtype(true), torch::kBFloat16);
  EXPECT_EQ(dev->amp_dtype("fp16"), torch::kHalf);
  EXPECT_EQ(dev->peak_memory_bytes(), -1);
}

TEST(DeviceTrial, ACudaTrialWithoutCudaIsRefusedWithTheReason) {
  const std::string why = device::cuda_unavailable_reason();
  if (why.empty()) GTEST_SKIP() << "this host has a usable CUDA device";
  TrialSpec spec;
  spec.experiment = spec.knob = spec.arm = "test";
  spec.model = {"gpt", "tiny"};
  spec.settings = {{"device", "cuda"}, {"tf32", true}};
  try {
    worker::run_trial(spec);
    ADD_FAILURE() << "a CUDA trial ran without CUDA";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "device cuda: " + why);
  }
}

}  // namespace
}  // namespace tunebench

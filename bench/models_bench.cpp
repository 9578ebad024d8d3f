// How fast the C++ models run, to compare with the same models run through Python torch on the
// same LibTorch, threads and machine (bench/python_reference.py; bench/compare_python.sh runs
// both). A C++ harness slower than Python eager would measure the harness, not the advice.
//
//   TUNEBENCH_THREADS  intra-op threads (default: all cores); recorded in the context
//
// Each benchmark builds its model once, runs two warm-up steps, then times whole steps:
//   infer  forward under NoGradGuard, eval mode
//   train  zero_grad + loss + backward + SGD(momentum 0.9) step, train mode
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <thread>

#include "models/build.h"
#include "models/common.h"
#include "models/registry.h"

namespace tunebench {
namespace {

void run(benchmark::State& state, const std::string& model, const std::string& preset,
         int64_t batch_size, bool train, nlohmann::json options) {
  auto m = models::build_model({model, preset, options}, /*seed=*/1);
  const auto batch = m->make_batch(batch_size, /*seed=*/2);
  torch::optim::SGD opt(m->module().parameters(), torch::optim::SGDOptions(1e-4).momentum(0.9));
  auto step = [&] {
    if (train) {
      opt.zero_grad();
      auto loss = m->loss(batch);
      loss.backward();
      opt.step();
    } else {
      torch::NoGradGuard no_grad;
      benchmark::DoNotOptimize(m->forward(batch));
    }
  };
  m->module().train(train);
  for (int i = 0; i < 2; ++i) step();  // warm-up: allocator, oneDNN primitives
  for (auto _ : state) step();
  state.counters["samples_per_s"] =
      benchmark::Counter(double(batch_size) * state.iterations(), benchmark::Counter::kIsRate);
}

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : fallback;
}

// TUNEBENCH_BENCH_ITERATIONS (default 3) steps per sample, TUNEBENCH_BENCH_REPETITIONS (5) samples.
void configure(benchmark::internal::Benchmark* b) {
  b->Unit(benchmark::kMillisecond)->UseRealTime();
  b->Iterations(env_int("TUNEBENCH_BENCH_ITERATIONS", 3));
  b->Repetitions(env_int("TUNEBENCH_BENCH_REPETITIONS", 5));
}

// torchvision's ResNet-50 uses in-place ReLU and residual add: build ours the same way.
const nlohmann::json kTorchvisionResNet = {{"inplace_act", true}};
const nlohmann::json kDefaults = nlohmann::json::object();

// The comparison with Python (issue: foundation): ResNet-50 inference at batch 8, 224×224, and a
// training step; GPT `small` (4 layers of GPT-2 small, 256 tokens) at batch 4.
BENCHMARK_CAPTURE(run, resnet50_full_infer_b8, "resnet50", "full", 8, false, kTorchvisionResNet)
    ->Apply(configure);
BENCHMARK_CAPTURE(run, resnet50_full_train_b8, "resnet50", "full", 8, true, kTorchvisionResNet)
    ->Apply(configure);
BENCHMARK_CAPTURE(run, gpt_small_infer_b4, "gpt", "small", 4, false, kDefaults)->Apply(configure);
BENCHMARK_CAPTURE(run, gpt_small_train_b4, "gpt", "small", 4, true, kDefaults)->Apply(configure);
// Quick ones, to check the binary in seconds.
BENCHMARK_CAPTURE(run, resnet50_tiny_train_b8, "resnet50", "tiny", 8, true, kDefaults)
    ->Apply(configure);
BENCHMARK_CAPTURE(run, gpt_tiny_train_b8, "gpt", "tiny", 8, true, kDefaults)->Apply(configure);
BENCHMARK_CAPTURE(run, dlrm_tiny_train_b64, "dlrm", "tiny", 64, true, kDefaults)->Apply(configure);

}  // namespace
}  // namespace tunebench

int main(int argc, char** argv) {
  const char* env = std::getenv("TUNEBENCH_THREADS");
  const int threads = env ? std::atoi(env) : static_cast<int>(std::thread::hardware_concurrency());
  torch::set_num_threads(threads);
  benchmark::AddCustomContext("torch_threads", std::to_string(torch::get_num_threads()));
  benchmark::AddCustomContext("libtorch", TORCH_VERSION);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

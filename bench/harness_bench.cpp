// The harness's own cost, to compare with the smallest smoke workload (GPT tiny inference, about
// 0.8 ms per iteration on 2 cores): if timing, bookkeeping and storage cost more than 1 % of it,
// tunebench would be measuring itself.
//
//   BM_ManualTimedIteration  the worker's per-iteration path: two steady_clock reads, the device
//                            synchronisation call (a no-op on the CPU) and SetIterationTime
//   BM_StoreTrial/N          one trial with N samples stored in its own transaction (WAL, the
//                            real schema); the counter gives the cost per sample
//   BM_ResultRoundTrip/N     the worker's result as JSON, printed and parsed back
// The worker also records the Google Benchmark machinery's cost per sample in every trial's
// evidence (harness_seconds_per_sample).
#include <benchmark/benchmark.h>

#include <chrono>
#include <filesystem>

#include "core/records.h"
#include "store/storage.h"

namespace tunebench {
namespace {

using Clock = std::chrono::steady_clock;

void BM_ManualTimedIteration(benchmark::State& state) {
  double total = 0;
  for (auto _ : state) {
    const auto start = Clock::now();
    benchmark::ClobberMemory();  // stands in for the step
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    total += seconds;
    benchmark::DoNotOptimize(total);
  }
}
BENCHMARK(BM_ManualTimedIteration);

TrialSpec spec(int sequence, int samples) {
  TrialSpec t;
  t.run_uuid = "bench";
  t.experiment = "no_grad.resnet50-tiny-infer";
  t.knob = "no_grad";
  t.arm = "on";
  t.settings = {{"no_grad", true}, {"omp_threads", 2}, {"allocator", "glibc"}};
  t.model = {"resnet50", "tiny"};
  t.samples = samples;
  t.sequence = sequence;
  return t;
}

TrialResult result(int samples) {
  TrialResult r;
  r.status = "ok";
  for (int i = 0; i < samples; ++i) r.sample_seconds.push_back(1e-3 + i * 1e-6);
  r.evidence = {{"torch_threads", 2},
                {"env", {{"OMP_NUM_THREADS", "2"}}},
                {"allocator", "glibc"},
                {"mapped_libraries", {"libgomp.so.1", "libblas.so.3"}}};
  r.worker_stderr = std::string(512, 'x');
  return r;
}

void BM_StoreTrial(benchmark::State& state) {
  const auto dir = std::filesystem::temp_directory_path() / "tunebench-harness-bench";
  std::filesystem::remove_all(dir);
  storage::Database db((dir / "bench.sqlite").string());
  RunRecord run;
  run.uuid = "bench";
  run.suite_name = "bench";
  run.started_at = "2026-01-01T00:00:00Z";
  run.host = {{"hostname", "bench"}};
  run.software = {{"libtorch_version", "bench"}};
  db.begin_run(run);
  const int samples = static_cast<int>(state.range(0));
  const TrialResult r = result(samples);
  int sequence = 0;
  for (auto _ : state) db.store_trial("bench", spec(sequence++, samples), r);
  state.counters["per_sample"] =
      benchmark::Counter(double(state.iterations()) * samples,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_StoreTrial)->Arg(5)->Arg(50)->Unit(benchmark::kMicrosecond);

void BM_ResultRoundTrip(benchmark::State& state) {
  const TrialResult r = result(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    auto back = trial_result_from_json(nlohmann::json::parse(to_json(r).dump()));
    benchmark::DoNotOptimize(back);
  }
}
BENCHMARK(BM_ResultRoundTrip)->Arg(5)->Arg(50)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace tunebench

BENCHMARK_MAIN();

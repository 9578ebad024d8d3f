// The multi-process and loader knobs end to end: `tunebench run` on tests/suites/procs.json with
// the real binary, then what the stored trials prove — each process on its own cores with its own
// threads, the ranks in one Gloo process group with the all-reduces the knob asks for and equal
// parameters afterwards, the loader's batches made by the threads the knob names.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "core/multiproc.h"
#include "knobs/knobs.h"
#include "run/host.h"
#include "run/orchestrator.h"
#include "store/storage.h"
#include "tests/paths.h"
#include "worker/ddp.h"

namespace tunebench {
namespace {

using nlohmann::json;
using Trials = std::vector<storage::Database::StoredTrial>;

// Runs the suite's experiments matching `filter` into a fresh database; the trials by arm.
std::map<std::string, storage::Database::StoredTrial> run(const std::string& filter) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("tunebench-procs-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string db = (dir / "procs.sqlite").string();
  const auto w = orchestrator::spawn({test_paths::tunebench_binary(), "run", "--suite",
                                      test_paths::source_file("tests/suites/procs.json"),
                                      "--filter", filter, "--db", db, "--quiet"},
                                     {{"PATH", "/usr/bin:/bin"}}, "", 600);
  EXPECT_EQ(w.exit_code, 0) << w.err_tail;
  storage::Database reader(db);
  std::map<std::string, storage::Database::StoredTrial> by_arm;
  for (auto& t : reader.trials(*reader.latest_run_uuid())) {
    EXPECT_EQ(t.result.status, "ok") << t.spec.arm << ": " << t.result.error;
    by_arm[t.spec.arm] = t;
  }
  std::filesystem::remove_all(dir);
  return by_arm;
}

bool two_cores() { return multiproc::allowed_cpus().size() >= 2; }

std::string cpus_of(const json& list) {
  std::string out;
  for (const auto& c : list) out += (out.empty() ? "" : ",") + c.dump();
  return out;
}

TEST(ProcsKnobs, MultiInstanceRunsOnePinnedSingleThreadedInstancePerCore) {
  if (!two_cores()) GTEST_SKIP() << "needs 2 CPUs";
  auto trials = run("^multi_instance\\.");
  ASSERT_EQ(trials.size(), 2u);
  const json& off = trials["off"].result.evidence;
  const json& on = trials["on"].result.evidence;
  // OFF: one process with all the threads, on every CPU.
  EXPECT_FALSE(off.contains("process_count"));
  EXPECT_EQ(off["torch_threads"], multiproc::allowed_cpus().size());
  // ON: one instance per CPU, each pinned there with one thread (the variable and the pool).
  const size_t n = multiproc::allowed_cpus().size();
  EXPECT_EQ(on["process_count"], n);
  EXPECT_EQ(on["env"]["OMP_NUM_THREADS"], "1");
  ASSERT_EQ(on["processes"].size(), n);
  std::set<std::string> cores;
  for (const auto& p : on["processes"]) {
    EXPECT_EQ(p["torch_threads"], 1);
    EXPECT_EQ(p["cpu_affinity"], cpus_of(p["cpus"]));
    cores.insert(p["cpu_affinity"].get<std::string>());
  }
  EXPECT_EQ(cores.size(), n);
  // They measured at the same time, so summing their throughput is fair.
  EXPECT_GT(on["measured_overlap"].get<double>(), 0.5);
  // The stored sample is the time per batch at the summed throughput.
  double rate = 0;
  for (const auto& p : on["processes"]) rate += 1.0 / p["sample_seconds"][0].get<double>();
  EXPECT_NEAR(trials["on"].result.sample_seconds[0], 1.0 / rate, 1e-12);
}

TEST(ProcsKnobs, DdpScalingRunsRanksOfOneGlooGroupThatEndWithEqualParameters) {
  if (!ddp::unavailable_reason().empty()) GTEST_SKIP() << ddp::unavailable_reason();
  if (!two_cores()) GTEST_SKIP() << "needs 2 CPUs";
  {
    auto trials = run("^ddp_scaling\\.gpt");
    ASSERT_EQ(trials.size(), 2u);
    const json& off = trials["off"].result.evidence;
    const json& on = trials["on"].result.evidence;
    EXPECT_EQ(off["process_count"], 1);
    EXPECT_EQ(off["processes"][0]["ddp"]["world_size"], 1);
    const size_t n = multiproc::allowed_cpus().size();
    ASSERT_EQ(on["process_count"], n);
    for (size_t r = 0; r < n; ++r) {
      const json& ddp = on["processes"][r]["ddp"];
      EXPECT_EQ(ddp["backend"], "gloo");
      EXPECT_EQ(ddp["world_size"], n);
      EXPECT_EQ(ddp["rank"], r);
      EXPECT_GE(ddp["buckets"].get<int>(), 1);
      EXPECT_EQ(ddp["allreduces_per_step"], ddp["buckets"].get<double>());
    }
    EXPECT_EQ(on["parameters_identical"], true);
    // N ranks on N shards compute the update of one rank on the whole batch.
    EXPECT_NEAR(trials["on"].result.check_value / trials["off"].result.check_value, 1.0,
                knobs::guard_tolerance("ddp_scaling"));
  }
}

TEST(ProcsKnobs, DdpNoSyncAllReducesOnlyOnTheLastMicroBatch) {
  if (!ddp::unavailable_reason().empty()) GTEST_SKIP() << ddp::unavailable_reason();
  if (!two_cores()) GTEST_SKIP() << "needs 2 CPUs";
  auto trials = run("^ddp_no_sync\\.");
  ASSERT_EQ(trials.size(), 2u);
  for (const char* arm : {"off", "on"}) {
    const json& e = trials[arm].result.evidence;
    EXPECT_EQ(e["parameters_identical"], true) << arm;
    for (const auto& p : e["processes"]) {
      const double buckets = p["ddp"]["buckets"];
      EXPECT_EQ(p["ddp"]["micro_batches"], multiproc::kNoSyncMicroBatches);
      EXPECT_EQ(p["ddp"]["allreduces_per_step"].get<double>(),
                std::string(arm) == "on" ? buckets : buckets * multiproc::kNoSyncMicroBatches)
          << arm;
    }
  }
  EXPECT_NEAR(trials["on"].result.check_value / trials["off"].result.check_value, 1.0,
              knobs::guard_tolerance("ddp_no_sync"));
}

TEST(ProcsKnobs, DataloaderWorkersDecodeTheSameBatchesInTheirOwnThreads) {
  auto trials = run("^dataloader_workers\\.");
  ASSERT_EQ(trials.size(), 2u);
  const json& off = trials["off"].result.evidence["loader"];
  const json& on = trials["on"].result.evidence["loader"];
  EXPECT_EQ(off["workers"], 0);
  EXPECT_EQ(off["producer_threads"], 1);
  EXPECT_EQ(off["produced_on_main_thread"], true);
  EXPECT_EQ(on["workers"], 2);
  EXPECT_EQ(on["producer_threads"], 2);
  EXPECT_EQ(on["produced_on_main_thread"], false);
  // Every step took a fresh batch, and both arms saw the same images in the same order.
  EXPECT_EQ(off["batches"], on["batches"]);
  EXPECT_GT(off["batches"].get<int>(), 6);
  EXPECT_EQ(off["data_checksum"], on["data_checksum"]);
  EXPECT_DOUBLE_EQ(trials["on"].result.check_value, trials["off"].result.check_value);
  // And the training step used them: the images its forward saw add up to what the loader fed,
  // one batch per step (not the first batch over and over).
  for (const char* arm : {"off", "on"}) {
    const json& evidence = trials[arm].result.evidence;
    const json& loader = evidence["loader"];
    ASSERT_TRUE(evidence.contains("step_input")) << arm << ": " << evidence.dump();
    const json& seen = evidence["step_input"];
    EXPECT_EQ(seen["steps"], loader["batches"]) << arm;
    const double fed = loader["data_checksum"].get<double>();
    EXPECT_NEAR(seen["checksum"].get<double>(), fed, 1e-5 * std::abs(fed) + 1e-3) << arm;
  }
}

TEST(ProcsKnobs, WithoutGlooTheDistributedKnobsAreNotApplicableWithTheReason) {
  const auto caps = host::capabilities();
  EXPECT_NE(knobs::not_applicable_reason(*knobs::find("ddp_scaling"), "resnet50", Mode::train, caps)
                .find("batch norm"),
            std::string::npos);
  const std::string why = ddp::unavailable_reason();
  for (const char* id : {"ddp_scaling", "ddp_no_sync"}) {
    const std::string reason =
        knobs::not_applicable_reason(*knobs::find(id), "gpt", Mode::train, caps);
    EXPECT_EQ(reason,
              caps.cores < 2 && why.empty()
                  ? "this host has 1 core: there is no second core group for another process"
                  : why)
        << id;
  }
}

TEST(SpawnAll, WhenOneProcessFailsTheOthersAreStoppedAtOnce) {
  const auto start = std::chrono::steady_clock::now();
  const auto w = orchestrator::spawn_all(
      {{{"/bin/sh", "-c", "sleep 0.2; exit 3"}, {}, ""}, {{"/bin/sleep", "30"}, {}, ""}}, 60);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 10);
  EXPECT_EQ(w[0].exit_code, 3);
  EXPECT_FALSE(w[0].sibling_failed);
  EXPECT_TRUE(w[1].sibling_failed);
  // Both together, and both finish when all succeed.
  const auto both = orchestrator::spawn_all(
      {{{"/bin/sh", "-c", "echo a"}, {}, ""}, {{"/bin/sh", "-c", "cat"}, {}, "b"}}, 60);
  EXPECT_EQ(both[0].out, "a\n");
  EXPECT_EQ(both[1].out, "b");
  EXPECT_EQ(both[1].exit_code, 0);
}

}  // namespace
}  // namespace tunebench

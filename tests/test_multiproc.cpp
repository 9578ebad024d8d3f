// Multi-process trials without processes: how settings are laid out on processes and cores, how
// the processes' results combine into one stored trial, and what the evidence checks catch.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include "core/multiproc.h"
#include "core/reference.h"
#include "knobs/knobs.h"

namespace tunebench::multiproc {
namespace {

using nlohmann::json;
// The layout rule is the distributed family's (knobs/distributed.h); the mechanics are core's.
using knobs::distributed::layout;
using knobs::distributed::split;

TrialSpec trial(json settings) {
  TrialSpec t;
  t.experiment = "x";
  t.batch = 8;
  t.settings = {{"omp_threads", 4}, {"allocator", "glibc"}};
  for (const auto& [k, v] : settings.items()) t.settings[k] = v;
  return t;
}

TEST(Multiproc, LayoutGivesEachProcessItsOwnCores) {
  // multi_instance ON: one instance per core, one thread each; OFF: one process, all threads.
  Layout on = layout({{"omp_threads", 4}, {"multi_instance", true}}, 4);
  EXPECT_EQ(on.role, "instance");
  EXPECT_EQ(on.count, 4);
  EXPECT_EQ(on.threads, 1);
  Layout off = layout({{"omp_threads", 4}, {"multi_instance", false}}, 4);
  EXPECT_EQ(off.role, "");
  EXPECT_EQ(off.count, 1);
  EXPECT_EQ(off.threads, 4);
  Layout two = layout({{"omp_threads", 4}, {"multi_instance", 2}}, 4);
  EXPECT_EQ(two.count, 2);
  EXPECT_EQ(two.threads, 2);
  // Distributed: always ranks, even a world of one; ddp_no_sync alone takes one rank per core.
  Layout one = layout({{"omp_threads", 1}, {"ddp_scaling", false}}, 2);
  EXPECT_EQ(one.role, "rank");
  EXPECT_EQ(one.count, 1);
  EXPECT_EQ(one.threads, 1);
  Layout sync = layout({{"omp_threads", 2}, {"ddp_no_sync", true}}, 2);
  EXPECT_EQ(sync.role, "rank");
  EXPECT_EQ(sync.count, 2);
  EXPECT_EQ(sync.threads, 1);
  EXPECT_EQ(layout({{"omp_threads", 2}, {"no_grad", true}}, 2).role, "");
}

TEST(Multiproc, SplitAssignsDisjointCpuGroupsAndTheProcessSetting) {
  const TrialSpec t = trial({{"multi_instance", 2}});
  const auto parts = split(t, {3, 5, 7, 9}, "/tmp/r");
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].settings["omp_threads"], 2);
  EXPECT_EQ(parts[0].settings[kProcessSetting]["cpus"], json({3, 5}));
  EXPECT_EQ(parts[1].settings[kProcessSetting]["cpus"], json({7, 9}));
  EXPECT_EQ(parts[1].settings[kProcessSetting]["index"], 1);
  EXPECT_EQ(parts[1].settings[kProcessSetting]["count"], 2);
  EXPECT_EQ(parts[1].settings[kProcessSetting]["dir"], "/tmp/r");
  // The environment follows the per-process threads.
  EXPECT_EQ(knobs::process_setup(parts[1].settings).env.at("OMP_NUM_THREADS"), "2");
  // An ordinary trial is itself; more processes than CPUs is refused.
  EXPECT_EQ(split(trial({{"no_grad", true}}), {0, 1}, "/tmp/r").size(), 1u);
  EXPECT_THROW(split(trial({{"multi_instance", 3}}), {0, 1}, "/tmp/r"), std::invalid_argument);
}

TEST(Multiproc, CudaRanksTakeOneGpuEach) {
  // On CUDA "true" means one rank per GPU, whatever the core count; each rank names its GPU.
  const TrialSpec t = trial({{"ddp_scaling", true}, {"device", "cuda"}});
  EXPECT_EQ(layout(t.settings, 16, 4).count, 4);
  EXPECT_EQ(layout(t.settings, 16, 4).threads, 4);
  const auto parts = split(t, {0, 1, 2, 3, 4, 5, 6, 7}, "/tmp/r", 2);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].settings[kProcessSetting]["gpu"], 0);
  EXPECT_EQ(parts[1].settings[kProcessSetting]["gpu"], 1);
  EXPECT_EQ(parts[1].settings[kProcessSetting]["cpus"], json({4, 5, 6, 7}));
  // CPU ranks have no GPU; more CUDA ranks than GPUs is refused with the counts.
  EXPECT_FALSE(
      split(trial({{"ddp_scaling", 2}}), {0, 1}, "/tmp/r", 2)[0].settings[kProcessSetting].contains(
          "gpu"));
  try {
    split(trial({{"ddp_scaling", 3}, {"device", "cuda"}}), {0, 1, 2, 3}, "/tmp/r", 2);
    ADD_FAILURE() << "3 CUDA ranks on 2 GPUs were accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "x: 3 ranks need a GPU each, this host has 2");
  }
}

TEST(Multiproc, CudaRanksMustReadBackNcclOnTheirGpu) {
  auto settings =
      split(trial({{"ddp_scaling", true}, {"device", "cuda"}}), {0, 1}, "/tmp/r", 2)[1].settings;
  json e = {{"torch_threads", 1},
            {"env", {{"OMP_NUM_THREADS", "1"}}},
            {"allocator", "glibc"},
            {"cpu_affinity", "1"},
            {"device", "cuda:1"},
            {"ddp",
             {{"backend", "nccl"},
              {"gpu", 1},
              {"world_size", 2},
              {"rank", 1},
              {"micro_batches", 1},
              {"buckets", 1},
              {"allreduces_per_step", 1.0}}}};
  EXPECT_TRUE(knobs::check_evidence(settings, Mode::train, e).empty());
  e["ddp"]["gpu"] = 0;  // two ranks on one GPU
  EXPECT_EQ(knobs::check_evidence(settings, Mode::train, e).size(), 1u);
  e["ddp"]["gpu"] = 1;
  e["ddp"]["backend"] = "gloo";  // gradients through the host
  EXPECT_EQ(knobs::check_evidence(settings, Mode::train, e).size(), 1u);
}

TrialResult ok(std::vector<double> samples, double check, json evidence = json::object()) {
  TrialResult r;
  r.status = "ok";
  r.sample_seconds = std::move(samples);
  r.check_value = check;
  r.peak_rss_bytes = 100;
  evidence["measured_start_ns"] = 1000;
  evidence["measured_end_ns"] = 2000;
  r.evidence = evidence;
  return r;
}

TEST(Multiproc, InstancesSumThroughputRanksTakeTheSlowest) {
  const TrialSpec t = trial({{"multi_instance", true}});
  const auto parts = split(t, {0, 1}, "/tmp/r");
  const auto r = combine(t, parts, {ok({0.2, 0.4}, 1.5), ok({0.2, 0.1}, 1.5)});
  ASSERT_EQ(r.status, "ok") << r.error;
  // 1 / (1/0.2 + 1/0.2) and 1 / (1/0.4 + 1/0.1)
  EXPECT_DOUBLE_EQ(r.sample_seconds[0], 0.1);
  EXPECT_DOUBLE_EQ(r.sample_seconds[1], 0.08);
  EXPECT_EQ(r.peak_rss_bytes, 200);
  EXPECT_EQ(r.evidence["process_count"], 2);
  EXPECT_EQ(r.evidence["processes"][1]["cpus"], json({1}));
  EXPECT_DOUBLE_EQ(r.evidence["measured_overlap"], 1.0);

  const TrialSpec d = trial({{"ddp_scaling", true}});
  const auto ranks = split(d, {0, 1}, "/tmp/r");
  const json same = {{"ddp", {{"parameter_checksum", "ab"}}}};
  const auto s = combine(d, ranks, {ok({0.2, 0.4}, 1.0, same), ok({0.3, 0.1}, 2.0, same)});
  ASSERT_EQ(s.status, "ok") << s.error;
  EXPECT_DOUBLE_EQ(s.sample_seconds[0], 0.3);
  EXPECT_DOUBLE_EQ(s.sample_seconds[1], 0.4);
  EXPECT_DOUBLE_EQ(s.check_value, 1.5);  // the mean of the shards' losses
  EXPECT_EQ(s.evidence["parameters_identical"], true);
}

TEST(Multiproc, DisagreeingOrFailedProcessesMakeTheTrialInvalidOrFailed) {
  const TrialSpec d = trial({{"ddp_scaling", true}});
  const auto ranks = split(d, {0, 1}, "/tmp/r");
  const auto diverged = combine(d, ranks,
                                {ok({0.1}, 1.0, {{"ddp", {{"parameter_checksum", "ab"}}}}),
                                 ok({0.1}, 1.0, {{"ddp", {{"parameter_checksum", "cd"}}}})});
  EXPECT_EQ(diverged.status, "invalid");
  EXPECT_NE(diverged.error.find("diverged"), std::string::npos) << diverged.error;

  const TrialSpec t = trial({{"multi_instance", true}});
  const auto parts = split(t, {0, 1}, "/tmp/r");
  EXPECT_EQ(combine(t, parts, {ok({0.1}, 1.0), ok({0.1}, 1.25)}).status, "invalid");
  auto late = ok({0.1}, 1.0);
  late.evidence["measured_start_ns"] = 5000;
  late.evidence["measured_end_ns"] = 6000;
  const auto apart = combine(t, parts, {ok({0.1}, 1.0), late});
  EXPECT_EQ(apart.status, "invalid");
  EXPECT_NE(apart.error.find("overlapped"), std::string::npos) << apart.error;

  TrialResult crashed;
  crashed.status = "failed";
  crashed.error = "worker killed by signal 11";
  const auto failed = combine(t, parts, {ok({0.1}, 1.0), crashed});
  EXPECT_EQ(failed.status, "failed");
  EXPECT_EQ(failed.error, "instance 1: worker killed by signal 11");
}

TEST(Multiproc, TheEvidenceChecksCatchWhatDidNotTakeEffect) {
  const TrialSpec t = trial({{"ddp_no_sync", true}});
  const auto ranks = split(t, {0, 1}, "/tmp/r");
  json e = {{"torch_threads", 1},
            {"env", {{"OMP_NUM_THREADS", "1"}}},
            {"allocator", "glibc"},
            {"cpu_affinity", "1"},
            {"ddp",
             {{"backend", "gloo"},
              {"world_size", 2},
              {"rank", 1},
              {"micro_batches", kNoSyncMicroBatches},
              {"buckets", 1},
              {"allreduces_per_step", 1.0}}}};
  EXPECT_TRUE(knobs::check_evidence(ranks[1].settings, Mode::train, e).empty());
  // The OFF arm all-reduces after each of the micro-batches.
  auto off = ranks[1].settings;
  off["ddp_no_sync"] = false;
  EXPECT_EQ(knobs::check_evidence(off, Mode::train, e).size(), 1u);
  e["ddp"]["allreduces_per_step"] = double(kNoSyncMicroBatches);
  EXPECT_TRUE(knobs::check_evidence(off, Mode::train, e).empty());
  // A rank on the wrong core, or in a world of the wrong size.
  e["cpu_affinity"] = "0,1";
  EXPECT_EQ(knobs::check_evidence(off, Mode::train, e).size(), 1u);
  e["cpu_affinity"] = "1";
  e["ddp"]["world_size"] = 1;
  EXPECT_EQ(knobs::check_evidence(off, Mode::train, e).size(), 1u);

  const json loader_on = {{"dataloader_workers", 2}};
  EXPECT_TRUE(knobs::check_evidence(
                  loader_on, Mode::train,
                  {{"loader",
                    {{"workers", 2}, {"producer_threads", 2}, {"produced_on_main_thread", false}}}})
                  .empty());
  EXPECT_EQ(knobs::check_evidence(
                loader_on, Mode::train,
                {{"loader",
                  {{"workers", 2}, {"producer_threads", 1}, {"produced_on_main_thread", true}}}})
                .size(),
            1u);
}

TEST(Multiproc, KnobValuesAreChecked) {
  EXPECT_NO_THROW(knobs::validate_value(*knobs::find("multi_instance"), true));
  EXPECT_NO_THROW(knobs::validate_value(*knobs::find("ddp_scaling"), 2));
  EXPECT_THROW(knobs::validate_value(*knobs::find("ddp_scaling"), 0), std::invalid_argument);
  EXPECT_THROW(knobs::validate_value(*knobs::find("dataloader_workers"), -1),
               std::invalid_argument);
  EXPECT_THROW(knobs::validate_value(*knobs::find("dataloader_workers"), true),
               std::invalid_argument);
  EXPECT_THROW(knobs::validate_value(*knobs::find("ddp_no_sync"), 2), std::invalid_argument);
}

// The reference kernel: three parts that each take time, buffers faulted in once
// and kept (a later run takes almost no page faults), and what they hold is known, for the
// worker to leave out of the peak RSS it reports.
TEST(Reference, EachPartTakesTimeAndTheBuffersAreFaultedInOnce) {
  reference::kernel_seconds();
  EXPECT_GE(reference::resident_bytes(), 64ll << 20);
  const auto parts = reference::kernel_parts();
  EXPECT_GT(parts.chain, 0);
  EXPECT_GT(parts.gemm, 0);
  EXPECT_GT(parts.stream, 0);
  rusage before{}, after{};
  getrusage(RUSAGE_SELF, &before);
  const double seconds = reference::kernel_seconds();
  getrusage(RUSAGE_SELF, &after);
  EXPECT_GT(seconds, 0);
  EXPECT_LT(after.ru_minflt - before.ru_minflt, 100);  // 64 MiB again would be 16,384
}

}  // namespace
}  // namespace tunebench::multiproc

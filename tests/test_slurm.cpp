// Ranks as Slurm job steps (run/slurm.h) without a cluster: where each rank goes, what its
// process setting and command line say, and what is refused outside an allocation. The real
// thing runs in tests/slurm_one_node.sh on a one-node cluster.
#include <gtest/gtest.h>

#include <cstdlib>

#include "core/multiproc.h"
#include "knobs/knobs.h"
#include "run/slurm.h"

namespace tunebench::slurm {
namespace {

using nlohmann::json;

Allocation two_nodes(int tasks, int cpus_per_task) {
  Allocation a;
  a.job_id = "42";
  a.nodes = {"n01", "n02"};
  a.tasks = tasks;
  a.cpus_per_task = cpus_per_task;
  a.srun = "/usr/bin/srun";
  return a;
}

std::vector<TrialSpec> ranks_of(const TrialSpec& t, const Allocation& a) {
  std::vector<int> slots(size_t(a.tasks));
  for (int i = 0; i < a.tasks; ++i) slots[size_t(i)] = i;
  auto parts = knobs::distributed::split(t, slots, "/tmp/unused", slots.size());
  place_ranks(t, parts, a, 29555);
  return parts;
}

TrialSpec ddp(json settings) {
  TrialSpec t;
  t.experiment = "ddp_scaling/gpt";
  t.batch = 8;
  t.settings = std::move(settings);
  return t;
}

TEST(Slurm, RanksFillTheNodesInBlocks) {
  EXPECT_EQ(node_of(0, 4, 2), 0u);
  EXPECT_EQ(node_of(1, 4, 2), 0u);
  EXPECT_EQ(node_of(2, 4, 2), 1u);
  EXPECT_EQ(node_of(3, 4, 2), 1u);
  EXPECT_EQ(node_of(0, 1, 2), 0u);  // one rank: the first node, where the store is
  EXPECT_EQ(node_of(1, 2, 4), 2u);  // fewer ranks than nodes: spread out
  EXPECT_EQ(node_of(1, 2, 1), 0u);
}

TEST(Slurm, EachRankGetsItsNodeTheFirstNodesStoreAndNoCpusToPin) {
  const auto parts = ranks_of(ddp({{"ddp_scaling", true}, {"omp_threads", 1}}), two_nodes(4, 2));
  ASSERT_EQ(parts.size(), 4u);  // "true": one rank per task of the allocation
  const std::vector<std::string> nodes = {"n01", "n01", "n02", "n02"};
  for (size_t i = 0; i < parts.size(); ++i) {
    const json& p = parts[i].settings[multiproc::kProcessSetting];
    EXPECT_EQ(p["role"], "rank");
    EXPECT_EQ(p["index"], int(i));
    EXPECT_EQ(p["count"], 4);
    EXPECT_EQ(p["node"], nodes[i]);
    EXPECT_EQ(p["store"], json({{"host", "n01"}, {"port", 29555}}));
    EXPECT_FALSE(p.contains("cpus"));                // Slurm binds them
    EXPECT_EQ(parts[i].settings["omp_threads"], 1);  // the suite's
  }
  // Without omp_threads in the suite, a rank has its task's CPUs as threads.
  const auto wide = ranks_of(ddp({{"ddp_scaling", 2}}), two_nodes(4, 3));
  ASSERT_EQ(wide.size(), 2u);
  EXPECT_EQ(wide[0].settings["omp_threads"], 3);
  EXPECT_EQ(wide[1].settings[multiproc::kProcessSetting]["node"], "n02");
  // OFF: one rank, on the first node.
  const auto one = ranks_of(ddp({{"ddp_scaling", false}}), two_nodes(4, 1));
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].settings[multiproc::kProcessSetting]["node"], "n01");
}

TEST(Slurm, CudaRanksCountTheirGpuOnTheirOwnNode) {
  const auto parts = ranks_of(ddp({{"ddp_scaling", true}, {"device", "cuda"}, {"omp_threads", 1}}),
                              two_nodes(4, 1));
  ASSERT_EQ(parts.size(), 4u);
  std::vector<int> gpus;
  for (const auto& p : parts) gpus.push_back(p.settings[multiproc::kProcessSetting]["gpu"]);
  EXPECT_EQ(gpus, (std::vector<int>{0, 1, 0, 1}));
}

TEST(Slurm, EachRankIsAOneTaskStepOnItsNodeWithItsThreads) {
  const auto a = two_nodes(2, 1);
  const auto parts = ranks_of(ddp({{"ddp_scaling", true}, {"omp_threads", 1}}), a);
  const auto argv = srun_argv(a, parts[1], {"/opt/tunebench", "worker"});
  const std::vector<std::string> want = {"/usr/bin/srun",
                                         "--nodes=1",
                                         "--ntasks=1",
                                         "--nodelist=n02",
                                         "--cpus-per-task=1",
                                         "--exact",
                                         "--kill-on-bad-exit=1",
                                         "--job-name=tunebench-rank1",
                                         "--quiet",
                                         "/opt/tunebench",
                                         "worker"};
  EXPECT_EQ(argv, want);
}

TEST(Slurm, APlacedRanksEvidenceHasNoCpuSettingToFailAndEnterPinsNothing) {
  const auto parts = ranks_of(ddp({{"ddp_scaling", true}, {"omp_threads", 1}}), two_nodes(2, 1));
  std::vector<std::string> wrong;
  knobs::distributed::check_process_evidence(parts[0].settings[multiproc::kProcessSetting],
                                             {{"cpu_affinity", "0-1"}}, wrong);
  EXPECT_TRUE(wrong.empty());
  const auto before = multiproc::allowed_cpus();
  multiproc::enter(parts[0]);
  EXPECT_EQ(multiproc::allowed_cpus(), before);
  // A local rank still has its core group checked.
  TrialSpec local = ddp({{"ddp_scaling", true}, {"omp_threads", 1}});
  auto locals = knobs::distributed::split(local, {0, 1}, "/tmp/unused");
  knobs::distributed::check_process_evidence(locals[1].settings[multiproc::kProcessSetting],
                                             {{"cpu_affinity", "0"}}, wrong);
  EXPECT_EQ(wrong.size(), 1u);
}

TEST(Slurm, OutsideAnAllocationOrInsideAStepItIsRefusedWithWhatToDo) {
  const char* job = std::getenv("SLURM_JOB_ID");
  const std::string saved = job ? job : "";
  unsetenv("SLURM_JOB_ID");
  try {
    current_allocation();
    ADD_FAILURE() << "no allocation, but no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("sbatch script or an salloc shell"), std::string::npos)
        << e.what();
  }
  setenv("SLURM_JOB_ID", "42", 1);
  setenv("SLURM_JOB_NODELIST", "n01", 1);
  setenv("SLURM_STEP_ID", "0", 1);
  try {
    current_allocation();
    ADD_FAILURE() << "inside a step, but no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("not under srun"), std::string::npos) << e.what();
  }
  unsetenv("SLURM_STEP_ID");
  unsetenv("SLURM_JOB_NODELIST");
  if (saved.empty()) {
    unsetenv("SLURM_JOB_ID");
  } else {
    setenv("SLURM_JOB_ID", saved.c_str(), 1);
  }
}

}  // namespace
}  // namespace tunebench::slurm

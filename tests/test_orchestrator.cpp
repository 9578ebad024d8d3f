// The orchestrator's process handling: an explicit environment, timeouts that kill the whole
// process group, and an interrupted run that keeps its finished trials.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "harness/orchestrator.h"
#include "harness/storage.h"

namespace tunebench::orchestrator {
namespace {

TEST(Spawn, TheChildGetsExactlyTheEnvironmentItIsGiven) {
  setenv("TUNEBENCH_TEST_LEAK", "1", 1);
  const auto w = spawn({"/usr/bin/env"}, {{"OMP_NUM_THREADS", "3"}}, "", 10);
  EXPECT_EQ(w.exit_code, 0);
  EXPECT_EQ(w.out, "OMP_NUM_THREADS=3\n");
}

TEST(Spawn, StdinReachesTheChildAndStderrIsKept) {
  const auto w = spawn({"/bin/sh", "-c", "cat; echo oops >&2; exit 3"}, {}, "hello", 10);
  EXPECT_EQ(w.out, "hello");
  EXPECT_EQ(w.err_tail, "oops\n");
  EXPECT_EQ(w.exit_code, 3);
}

TEST(Spawn, ATimeoutKillsTheWholeProcessGroup) {
  const auto start = std::chrono::steady_clock::now();
  // The shell starts a grandchild that would outlive it; the group kill must take both.
  const auto w = spawn({"/bin/sh", "-c", "sleep 30 & echo $!; wait"}, {}, "", 0.5);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(w.timed_out);
  EXPECT_LT(seconds, 5);
  const pid_t grandchild = std::stoi(w.out);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  // Gone, or a zombie waiting for init to reap it: either way no longer running.
  std::ifstream stat("/proc/" + std::to_string(grandchild) + "/stat");
  std::string pid_field, name, state;
  if (stat >> pid_field >> name >> state) {
    EXPECT_EQ(state, "Z") << "the grandchild survived the timeout";
  }
}

TEST(Spawn, ASignalIsReported) {
  const auto w = spawn({"/bin/sh", "-c", "kill -SEGV $$"}, {}, "", 10);
  EXPECT_EQ(w.signal, SIGSEGV);
}

TEST(Run, SigintStopsTheRunKeepsFinishedTrialsAndMarksItInterrupted) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("tunebench-interrupt-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string db = (dir / "r.sqlite").string();
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const int null = open("/dev/null", O_WRONLY);
    dup2(null, STDERR_FILENO);
    execl(TUNEBENCH_BINARY, TUNEBENCH_BINARY, "run", "--suite",
          TUNEBENCH_SOURCE_DIR "/suites/smoke.json", "--db", db.c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  // Let a few trials finish, then interrupt.
  int stored = 0;
  for (int i = 0; i < 600 && stored < 3; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    try {
      storage::Database reader(db);
      if (auto latest = reader.latest_run_uuid()) stored = int(reader.trials(*latest).size());
    } catch (const storage::StorageError&) {
    }
  }
  ASSERT_GE(stored, 3);
  kill(pid, SIGINT);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 1);
  storage::Database reader(db);
  const auto run = reader.run(*reader.latest_run_uuid());
  EXPECT_EQ(run.status, "interrupted");
  const auto trials = reader.trials(run.record.uuid);
  EXPECT_GE(int(trials.size()), 3);
  EXPECT_LT(trials.size(), 72u);
  for (const auto& t : trials) EXPECT_EQ(t.result.status, "ok") << t.result.error;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tunebench::orchestrator

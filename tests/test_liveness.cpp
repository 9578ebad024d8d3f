// Whether a run's orchestrator still runs (core/liveness.h), and how a reader says a run's state
// (analysis::run_state): real processes of this machine, and a machine faked for what cannot be
// arranged here (another boot, another host, a pid /proc hides).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <vector>

#include "analysis/analysis.h"
#include "core/liveness.h"

namespace tunebench::liveness {
namespace {

using nlohmann::json;

// A pid that ran and is gone: a child that exited and was reaped.
int64_t dead_pid() {
  const pid_t pid = fork();
  if (pid == 0) _exit(0);
  waitpid(pid, nullptr, 0);
  return pid;
}

TEST(Liveness, ThisProcessIsRecordedWithItsBootAndStartTime) {
  const Orchestrator self = this_process();
  EXPECT_EQ(self.pid, getpid());
  EXPECT_FALSE(self.hostname.empty());
  EXPECT_EQ(self.boot_id.size(), 36u) << self.boot_id;  // a uuid
  EXPECT_EQ(self.pid_namespace.rfind("pid:[", 0), 0u) << self.pid_namespace;
  EXPECT_GT(self.start_ticks, 0u);
  const auto back = orchestrator_from_json(to_json(self));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->hostname, self.hostname);
  EXPECT_EQ(back->boot_id, self.boot_id);
  EXPECT_EQ(back->pid_namespace, self.pid_namespace);
  EXPECT_EQ(back->pid, self.pid);
  EXPECT_EQ(back->start_ticks, self.start_ticks);
  EXPECT_FALSE(orchestrator_from_json(json()));
  EXPECT_FALSE(orchestrator_from_json(json::object()));
  EXPECT_FALSE(orchestrator_from_json({{"hostname", "h"}, {"pid", "not a number"}}));
}

TEST(Liveness, AlivePidWithTheSameStartTimeIsRunning) {
  const Verdict v = judge(this_process(), this_machine());
  EXPECT_EQ(v.state, State::kAlive) << v.why;
  EXPECT_EQ(v.why, fmt::format("its orchestrator, pid {} on {}, is running", getpid(),
                               this_process().hostname));
}

TEST(Liveness, DeadPidIsGone) {
  Orchestrator who = this_process();
  who.pid = dead_pid();
  const Verdict v = judge(who, this_machine());
  EXPECT_EQ(v.state, State::kGone) << v.why;
  EXPECT_EQ(v.why, fmt::format("its orchestrator, pid {} on {}, is no longer running", who.pid,
                               who.hostname));
}

TEST(Liveness, ZombieIsGone) {
  // kill -9 of an orchestrator whose parent has not reaped it yet.
  const pid_t pid = fork();
  if (pid == 0) _exit(0);
  Seen seen;
  for (int i = 0; i < 200; ++i) {
    seen = look_up(pid);
    if (!seen.running) break;
    usleep(10000);
  }
  EXPECT_FALSE(seen.running);
  waitpid(pid, nullptr, 0);
}

TEST(Liveness, ReusedPidWithAnotherStartTimeIsGone) {
  Orchestrator who = this_process();
  who.start_ticks += 1;  // this pid, but a process started at another time
  const Verdict v = judge(who, this_machine());
  EXPECT_EQ(v.state, State::kGone) << v.why;
  EXPECT_NE(v.why.find("is now another process"), std::string::npos) << v.why;
}

TEST(Liveness, AnotherBootIdOnThisHostIsGone) {
  Orchestrator who = this_process();
  who.boot_id = "00000000-0000-4000-8000-000000000000";
  const Verdict v = judge(who, this_machine());
  EXPECT_EQ(v.state, State::kGone) << v.why;
  EXPECT_EQ(v.why, fmt::format("{} has restarted since its orchestrator (pid {}) started",
                               who.hostname, who.pid));
}

TEST(Liveness, AnotherHostCannotBeCheckedFromHere) {
  Orchestrator who = this_process();
  who.hostname = "node7.elsewhere";
  who.pid = dead_pid();  // dead here means nothing there
  const Verdict v = judge(who, this_machine());
  EXPECT_EQ(v.state, State::kElsewhere);
  EXPECT_EQ(v.why, "running on node7.elsewhere (cannot check from here)");
}

TEST(Liveness, AnotherPidNamespaceCannotBeCheckedFromHere) {
  Orchestrator who = this_process();
  who.pid_namespace = "pid:[1]";
  who.pid = dead_pid();
  EXPECT_EQ(judge(who, this_machine()).state, State::kElsewhere);
}

TEST(Liveness, NoRecordIsUnrecorded) {
  const Verdict v = judge(std::nullopt, this_machine());
  EXPECT_EQ(v.state, State::kUnrecorded);
  EXPECT_NE(v.why.find("before schema version 7"), std::string::npos);
}

// A machine whose /proc hides other users' processes (hidepid): the pid runs, its start time is
// unknown; it counts as alive rather than a live run being called dead.
TEST(Liveness, RunningPidWithAnUnreadableStartTimeCountsAsAlive) {
  const Orchestrator who{"h", "boot", "pid:[9]", 4242, 777};
  Here here{"h", "boot", "pid:[9]", [](int64_t) { return Seen{true, std::nullopt}; }};
  EXPECT_EQ(judge(who, here).state, State::kAlive);
  here.look_up = [](int64_t) { return Seen{true, uint64_t{778}}; };
  EXPECT_EQ(judge(who, here).state, State::kGone);
  here.look_up = [](int64_t) { return Seen{false, std::nullopt}; };
  EXPECT_EQ(judge(who, here).state, State::kGone);
}

TEST(Liveness, ResumeCommandQuotesThePathWhereAShellNeedsIt) {
  EXPECT_EQ(resume_command("u-1", "results/tunebench.sqlite"),
            "tunebench run --resume u-1 --db results/tunebench.sqlite");
  EXPECT_EQ(resume_command("u-1", "my results/it's.sqlite"),
            "tunebench run --resume u-1 --db 'my results/it'\\''s.sqlite'");
}

// Worker tags (core/liveness.h): one length for every orchestrator, and a tagged process is an
// orphan exactly when its orchestrator is not running with that start time.
TEST(Liveness, WorkerTagsHaveOneLengthAndNameTheirOrchestrator) {
  EXPECT_EQ(worker_tag(Orchestrator{"h", "b", "n", 42, 7}), "0000042:00000000000000000007");
  EXPECT_EQ(worker_tag(Orchestrator{"h", "b", "n", 4194304, 18446744073709551615u}).size(),
            worker_tag(Orchestrator{"h", "b", "n", 1, 0}).size());
}

TEST(Liveness, AWorkerIsAnOrphanWhenItsOrchestratorIsGoneOrItsPidReused) {
  // pid 10 runs, started at tick 5; pid 11 is gone.
  const Here here{"h", "boot", "pid:[9]", [](int64_t pid) {
                    return pid == 10 ? Seen{true, uint64_t{5}} : Seen{false, std::nullopt};
                  }};
  const std::vector<TaggedProcess> tagged = {
      {100, worker_tag(Orchestrator{"h", "boot", "n", 10, 5})},  // its orchestrator runs
      {101, worker_tag(Orchestrator{"h", "boot", "n", 11, 5})},  // gone
      {102, worker_tag(Orchestrator{"h", "boot", "n", 10, 6})},  // pid 10 is another process now
      {103, "not a tag"},
  };
  std::vector<int64_t> pids;
  for (const auto& p : orphans(tagged, here)) pids.push_back(p.pid);
  EXPECT_EQ(pids, (std::vector<int64_t>{101, 102, 103}));
}

TEST(Liveness, TaggedProcessesAreFoundInTheirEnvironment) {
  // A child that carries this process's tag (a worker of ours) and one that carries our
  // parent's (ctest's): alive to every real run on this host, whose clear-up would otherwise
  // stop it (a test's stand-in for an orphan must not be one), and gone to the view below.
  const std::string mine = worker_tag(this_process());
  const int64_t parent = getppid();
  const auto parent_ticks = look_up(parent).start_ticks;
  ASSERT_TRUE(parent_ticks.has_value());
  const std::string dead = worker_tag(Orchestrator{"h", "b", "n", parent, *parent_ticks});
  std::vector<pid_t> children;
  for (const std::string& tag : {mine, dead}) {
    const pid_t pid = fork();
    if (pid == 0) {
      const std::string entry = std::string(kWorkerTagVariable) + "=" + tag;
      char* argv[] = {const_cast<char*>("/bin/sleep"), const_cast<char*>("30"), nullptr};
      char* envp[] = {const_cast<char*>(entry.c_str()), nullptr};
      execve("/bin/sleep", argv, envp);
      _exit(127);
    }
    children.push_back(pid);
  }
  std::map<int64_t, std::string> found;
  for (int attempt = 0; attempt < 200 && found.size() < 2; ++attempt) {  // until both exec'd
    found.clear();
    for (const auto& p : tagged_processes()) {
      if (p.pid == children[0] || p.pid == children[1]) found[p.pid] = p.tag;
    }
    usleep(10000);
  }
  EXPECT_EQ(found[children[0]], mine);
  EXPECT_EQ(found[children[1]], dead);
  // This machine as it is, except that our parent is gone.
  Here here = this_machine();
  here.look_up = [parent](int64_t pid) {
    return pid == parent ? Seen{false, std::nullopt} : look_up(pid);
  };
  std::vector<int64_t> gone;
  for (const auto& p : orphans(tagged_processes(), here)) gone.push_back(p.pid);
  EXPECT_EQ(std::count(gone.begin(), gone.end(), children[0]), 0);
  EXPECT_EQ(std::count(gone.begin(), gone.end(), children[1]), 1);
  for (pid_t pid : children) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
}

// How show says each state (its first lines and its JSON take these).
TEST(Liveness, ShowSaysAGoneOrchestratorsRunIsInterruptedWithTheCommandThatResumesIt) {
  storage::Database::StoredRun run;
  run.record.uuid = "0f1e2d3c-0000-4000-8000-000000000001";
  run.status = "running";
  const Here here{"h", "boot", "pid:[9]", [](int64_t pid) { return Seen{pid == 10, 5}; }};
  run.orchestrator = to_json(Orchestrator{"h", "boot", "pid:[9]", 11, 5});
  auto state = analysis::run_state(run, here, "r.sqlite");
  EXPECT_EQ(state.status, "interrupted");
  EXPECT_EQ(state.shown, "interrupted (orchestrator gone)");
  EXPECT_EQ(state.liveness, "gone");
  EXPECT_EQ(state.detail, "its orchestrator, pid 11 on h, is no longer running");
  EXPECT_EQ(state.resume, "tunebench run --resume " + run.record.uuid + " --db r.sqlite");

  run.orchestrator = to_json(Orchestrator{"h", "boot", "pid:[9]", 10, 5});
  state = analysis::run_state(run, here, "r.sqlite");
  EXPECT_EQ(state.status, "running");
  EXPECT_EQ(state.liveness, "alive");
  EXPECT_EQ(state.resume, "");

  run.orchestrator = to_json(Orchestrator{"node7", "boot", "pid:[9]", 11, 5});
  state = analysis::run_state(run, here, "r.sqlite");
  EXPECT_EQ(state.status, "running");
  EXPECT_EQ(state.shown, "running on node7 (cannot check from here)");
  EXPECT_EQ(state.resume, "");

  run.orchestrator = json();
  state = analysis::run_state(run, here, "r.sqlite");
  EXPECT_EQ(state.status, "running");
  EXPECT_EQ(state.liveness, "unrecorded");

  // Marked by a writer (Database::interrupt_gone_runs), and one interrupted by a signal.
  run.status = "interrupted";
  run.orchestrator = to_json(Orchestrator{"h", "boot", "pid:[9]", 11, 5});
  run.orchestrator["gone"] = {{"found_at", "2024-05-01T10:00:00Z"}, {"why", "it died"}};
  state = analysis::run_state(run, here, "r.sqlite");
  EXPECT_EQ(state.shown, "interrupted (orchestrator gone)");
  EXPECT_EQ(state.detail, "it died (found 2024-05-01T10:00:00Z)");
  EXPECT_EQ(state.resume, "tunebench run --resume " + run.record.uuid + " --db r.sqlite");
  run.orchestrator.erase("gone");
  state = analysis::run_state(run, here, "r.sqlite");
  EXPECT_EQ(state.shown, "interrupted");
  EXPECT_EQ(state.detail, "");
  EXPECT_EQ(state.resume, "tunebench run --resume " + run.record.uuid + " --db r.sqlite");
}

}  // namespace
}  // namespace tunebench::liveness

#include "run/leftovers.h"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "core/liveness.h"

namespace tunebench::orchestrator {

namespace fs = std::filesystem;

namespace {

// How long a stopped worker may take to vanish: SIGKILL is immediate, but a process in
// uninterruptible sleep dies when it wakes.
constexpr auto kStopWait = std::chrono::seconds(10);

}  // namespace

std::vector<std::string> stop_orphaned_workers() {
  std::vector<std::string> said;
  const liveness::Here here = liveness::this_machine();
  const auto orphans = liveness::orphans(liveness::tagged_processes(), here);
  for (const auto& p : orphans) {
    // A worker leads its own process group (run/spawn.cpp start_child): the group takes
    // whatever it started too. A process that leads none is stopped alone.
    const pid_t group = getpgid(pid_t(p.pid));
    if (group == pid_t(p.pid)) kill(-group, SIGKILL);
    kill(pid_t(p.pid), SIGKILL);
  }
  const auto deadline = std::chrono::steady_clock::now() + kStopWait;
  for (const auto& p : orphans) {
    while (liveness::look_up(p.pid).running && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    const bool gone = !liveness::look_up(p.pid).running;
    const int64_t orchestrator = std::atoll(p.tag.c_str());
    said.push_back(fmt::format(
        "{} worker pid {}, left running by an orchestrator that is gone (pid {}): it would "
        "have shared the CPUs with this run's workers",
        gone ? "stopped" : "could not stop", p.pid, orchestrator));
  }
  return said;
}

namespace {

// tunebench-exe-PPPPPPP-XXXXXX, tunebench-trial-PPPPPPP-XXXXXX or tunebench-aoti-PPPPPPP-XXXXXX
// (a worker's compile request, worker/actions/compile.cpp) whose PPPPPPP is no process.
bool of_a_dead_run(const std::string& name) {
  for (const std::string prefix : {"tunebench-exe-", "tunebench-trial-", "tunebench-aoti-"}) {
    if (name.rfind(prefix, 0) != 0 || name.size() != prefix.size() + 14) continue;
    int pid = 0;
    char rest[8] = {};
    if (std::sscanf(name.c_str() + prefix.size(), "%7d-%6s", &pid, rest) != 2 || pid <= 0) {
      return false;
    }
    return kill(pid, 0) != 0 && errno == ESRCH;
  }
  return false;
}

}  // namespace

std::vector<std::string> remove_dead_runs_folders(const fs::path& tmp) {
  std::vector<std::string> said;
  std::error_code ec;
  for (fs::directory_iterator it(tmp, ec), end; !ec && it != end; it.increment(ec)) {
    if (!of_a_dead_run(it->path().filename().string())) continue;
    std::error_code removing;
    fs::remove_all(it->path(), removing);
    said.push_back(
        removing ? fmt::format("cannot remove {}, left by a run that is gone: {}",
                               it->path().string(), removing.message())
                 : fmt::format("removed {}, left by a run that is gone", it->path().string()));
  }
  return said;
}

std::vector<std::string> clear_leftovers(const fs::path& tmp) {
  // Workers first: a stopped worker no longer writes into the folders removed next.
  std::vector<std::string> said = stop_orphaned_workers();
  for (auto& line : remove_dead_runs_folders(tmp)) said.push_back(std::move(line));
  return said;
}

std::string temp_directory_problem() {
  const char* tmpdir = std::getenv("TMPDIR");
  const std::string named = tmpdir && *tmpdir ? fmt::format("TMPDIR={}", tmpdir) : "/tmp";
  const std::string why =
      "tunebench keeps each run's launch links and each trial's rendezvous folder there";
  std::error_code ec;
  const fs::path tmp = fs::temp_directory_path(ec);
  if (ec) {
    return fmt::format(
        "{} is not a usable folder ({}): {}; create it, or point TMPDIR at a "
        "writable folder",
        named, ec.message(), why);
  }
  if (access(tmp.c_str(), W_OK | X_OK) != 0) {
    return fmt::format("{} cannot be written ({}): {}; point TMPDIR at a writable folder", named,
                       std::strerror(errno), why);
  }
  return "";
}

}  // namespace tunebench::orchestrator

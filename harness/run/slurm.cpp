#include "run/slurm.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>
#include <stdexcept>

#include "core/multiproc.h"
#include "run/orchestrator.h"

extern char** environ;

namespace tunebench::slurm {

using nlohmann::json;

namespace {

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

int positive_env(const char* name, int fallback) {
  const std::string v = env_or(name, "");
  if (v.empty()) return fallback;
  try {
    // SLURM_NTASKS may read "2(x3)" on some versions for heterogeneous layouts: the leading
    // count is the one that matters here.
    const int n = std::stoi(v);
    if (n > 0) return n;
  } catch (const std::exception&) {
  }
  throw std::invalid_argument(fmt::format("{}={} is not a positive count", name, v));
}

}  // namespace

std::string find_program(const std::string& name) {
  std::istringstream path(env_or("PATH", "/usr/bin:/bin"));
  for (std::string dir; std::getline(path, dir, ':');) {
    if (dir.empty()) continue;
    const std::string candidate = dir + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

Allocation current_allocation() {
  Allocation a;
  a.job_id = env_or("SLURM_JOB_ID", "");
  const std::string nodelist = env_or("SLURM_JOB_NODELIST", env_or("SLURM_NODELIST", ""));
  if (a.job_id.empty() || nodelist.empty()) {
    throw std::invalid_argument(
        "--ranks srun starts each rank with srun inside a Slurm allocation, but this process is "
        "not in one (SLURM_JOB_ID or SLURM_JOB_NODELIST is unset): run it from an sbatch script "
        "or an salloc shell (ci/slurm/fleet.sh does), or leave --ranks out to run the ranks on "
        "this host");
  }
  if (!env_or("SLURM_STEP_ID", "").empty()) {  // a batch script has none
    throw std::invalid_argument(fmt::format(
        "--ranks srun: this process is itself a task of job step {}.{}, which holds the "
        "allocation's CPUs, so the ranks' job steps would wait for them forever: run `tunebench "
        "run --ranks srun` from the batch script (or salloc shell), not under srun",
        a.job_id, env_or("SLURM_STEP_ID", "")));
  }
  a.srun = find_program("srun");
  const std::string scontrol = find_program("scontrol");
  if (a.srun.empty() || scontrol.empty()) {
    throw std::invalid_argument(
        "--ranks srun: srun or scontrol is not on PATH (Debian package slurm-client)");
  }
  for (char** e = environ; *e; ++e) {
    const std::string entry = *e;
    const size_t eq = entry.find('=');
    if (eq != std::string::npos && entry.rfind("SLURM_", 0) == 0) {
      a.env[entry.substr(0, eq)] = entry.substr(eq + 1);
    }
  }
  // Slurm's compressed node list ("node[01-04]") expanded by Slurm itself.
  std::map<std::string, std::string> env = a.env;
  env["PATH"] = env_or("PATH", "/usr/bin:/bin");
  const auto out =
      orchestrator::spawn({scontrol, "show", "hostnames", nodelist}, env, "", 30, nullptr);
  std::istringstream lines(out.out);
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty()) a.nodes.push_back(line);
  }
  if (out.exit_code != 0 || a.nodes.empty()) {
    throw std::invalid_argument(fmt::format("--ranks srun: `scontrol show hostnames {}` failed: {}",
                                            nodelist, out.err_tail));
  }
  a.tasks = positive_env("SLURM_NTASKS", int(a.nodes.size()));
  a.cpus_per_task = positive_env("SLURM_CPUS_PER_TASK", 1);
  return a;
}

size_t node_of(int index, int count, size_t nodes) {
  if (count <= 0 || nodes == 0) return 0;
  return size_t(index) * nodes / size_t(count);
}

void place_ranks(const TrialSpec& trial, std::vector<TrialSpec>& parts,
                 const Allocation& allocation, int port) {
  const int threads = int(trial.settings.value("omp_threads", int64_t(allocation.cpus_per_task)));
  for (auto& part : parts) {
    json& p = part.settings[multiproc::kProcessSetting];
    const int index = p["index"], count = p["count"];
    const size_t node = node_of(index, count, allocation.nodes.size());
    p.erase("cpus");
    p["node"] = allocation.nodes[node];
    p["store"] = {{"host", allocation.nodes[node_of(0, count, allocation.nodes.size())]},
                  {"port", port}};
    if (p.contains("gpu")) {
      int first = index;
      while (first > 0 && node_of(first - 1, count, allocation.nodes.size()) == node) --first;
      p["gpu"] = index - first;
    }
    part.settings["omp_threads"] = threads;
  }
}

std::vector<std::string> srun_argv(const Allocation& allocation, const TrialSpec& part,
                                   const std::vector<std::string>& argv) {
  const json& p = part.settings[multiproc::kProcessSetting];
  std::vector<std::string> out = {
      allocation.srun, "--nodes=1", "--ntasks=1", "--nodelist=" + p["node"].get<std::string>(),
      fmt::format("--cpus-per-task={}", part.settings.value("omp_threads", int64_t(1))),
      // Only what this step asks for, so that the ranks' steps run side by side.
      "--exact", "--kill-on-bad-exit=1",
      fmt::format("--job-name=tunebench-rank{}", p["index"].get<int>()), "--quiet"};
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error("cannot open a socket to find a free port");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = 0;
  socklen_t size = sizeof(addr);
  const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
                  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &size) == 0;
  close(fd);
  if (!ok) throw std::runtime_error("cannot bind a socket to find a free port");
  return ntohs(addr.sin_port);
}

}  // namespace tunebench::slurm

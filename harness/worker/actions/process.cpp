// The process family's action (worker/knob_action.h). Its knobs act when the orchestrator starts
// the worker (environment, preloads, numactl: knobs/knobs.h, process_setup); inside the process
// omp_threads also sets LibTorch's intra-op threads, and the action reads back what the process
// really runs with: threads, environment, mapped allocator/OpenMP/BLAS libraries, CPU affinity
// and NUMA memory policy.
#include <numaif.h>
#include <sched.h>
#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "knobs/evidence.h"
#include "platform/compat.h"
#include "worker/arm.h"
#include "worker/knob_action.h"

namespace tunebench::worker {
namespace {

using nlohmann::json;

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string status_text(const std::string& field) {
  std::istringstream in(read_file("/proc/self/status"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) {
      auto value = line.substr(field.size() + 1);
      value.erase(0, value.find_first_not_of(" \t"));
      return value;
    }
  }
  return "";
}

// Allocator, OpenMP and BLAS libraries actually mapped into this process.
json mapped_libraries() {
  std::istringstream maps(read_file("/proc/self/maps"));
  std::vector<std::string> found;
  std::string line;
  static const char* kInteresting[] = {"jemalloc", "tcmalloc", "libgomp", "libomp", "libiomp",
                                       "openblas", "libblas",  "libmkl",  "libdnnl"};
  while (std::getline(maps, line)) {
    const auto slash = line.rfind('/');
    if (slash == std::string::npos) continue;
    const std::string name = line.substr(slash + 1);
    for (const char* key : kInteresting) {
      if (name.find(key) != std::string::npos &&
          std::find(found.begin(), found.end(), name) == found.end()) {
        found.push_back(name);
      }
    }
  }
  return found;
}

std::string allocator_of(const json& libraries) {
  std::string allocator = "glibc";
  for (const auto& lib : libraries) {
    const std::string name = lib;
    if (name.find("jemalloc") != std::string::npos) allocator = "jemalloc";
    if (name.find("tcmalloc") != std::string::npos) allocator = "tcmalloc";
  }
  return allocator;
}

std::string cpu_affinity() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return "unknown";
  std::string out;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) out += (out.empty() ? "" : ",") + std::to_string(cpu);
  }
  return out;
}

// The process's NUMA memory policy, as the kernel applies it (numactl --membind shows as "bind").
std::string numa_policy() {
  int mode = 0;
  if (get_mempolicy(&mode, nullptr, 0, nullptr, 0) != 0) return "unknown";
  switch (mode) {
    case MPOL_DEFAULT:
      return "default";
    case MPOL_BIND:
      return "bind";
    case MPOL_INTERLEAVE:
      return "interleave";
    case MPOL_PREFERRED:
      return "preferred";
    default:
      return "mode " + std::to_string(mode);
  }
}

std::string own_executable() {
  char path[4096];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
  return n > 0 ? std::string(path, size_t(n)) : "";
}

// The path this process was started by: argv[0], the first string of /proc/self/cmdline.
std::string launched_as() {
  std::ifstream in("/proc/self/cmdline");
  std::string first;
  std::getline(in, first, '\0');
  return first;
}

json environment_evidence() {
  json env = json::object();
  for (const char* name :
       {"OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OMP_PROC_BIND",
        "OMP_SCHEDULE", "GOMP_CPU_AFFINITY", "KMP_AFFINITY", "KMP_BLOCKTIME", "LD_PRELOAD",
        "MALLOC_CONF", "MALLOC_MMAP_MAX_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_"}) {
    if (const char* v = std::getenv(name)) env[name] = v;
  }
  return env;
}

class ProcessHooks : public ArmHooks {
 public:
  void read_back(Arm&, json& evidence) override {
    evidence[knobs::evidence::kTorchThreads] = torch::get_num_threads();
    evidence[knobs::evidence::kEnv] = environment_evidence();
    evidence[knobs::evidence::kMappedLibraries] = mapped_libraries();
    evidence[knobs::evidence::kAllocator] =
        allocator_of(evidence[knobs::evidence::kMappedLibraries]);
    evidence[knobs::evidence::kCpuAffinity] = cpu_affinity();
    evidence["mems_allowed"] = status_text("Mems_allowed_list");
    evidence[knobs::evidence::kNumaPolicy] = numa_policy();
    // Which build ran the trial: what a software A/B (worker_build) compares.
    evidence[knobs::evidence::kExecutable] = own_executable();
    evidence["launched_as"] = launched_as();  // a software A/B's link (run/launch_paths.h)
    evidence[knobs::evidence::kTorchVersion] = compat::torch_version();
  }
};

class ProcessAction : public KnobAction {
 public:
  const char* family() const override { return "process"; }
  // Process-wide, before the arm's first forward: one process holds one thread count.
  std::unique_ptr<ArmHooks> prepare(Arm& arm) const override {
    const json& s = arm.spec.settings;
    if (s.contains("omp_threads")) {
      torch::set_num_threads(static_cast<int>(s["omp_threads"].get<int64_t>()));
    }
    return std::make_unique<ProcessHooks>();
  }
};

}  // namespace

const KnobAction& process_action() {
  static const ProcessAction action;
  return action;
}

}  // namespace tunebench::worker

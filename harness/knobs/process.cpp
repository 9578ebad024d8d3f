#include "knobs/process.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "core/build_paths.h"
#include "knobs/knobs.h"

namespace tunebench::knobs {

using nlohmann::json;

namespace {

const char* const kLlvmOpenMp = "/usr/lib/x86_64-linux-gnu/libomp.so.5";
const char* const kNumactl = "/usr/bin/numactl";
const std::vector<std::string> kAllocators{"glibc", "jemalloc", "jemalloc_nodecay", "tcmalloc"};

json env_of(const json& evidence) { return fact(evidence, evidence::kEnv); }

// worker_build's value for the orchestrator's own executable.
const char* const kSelf = "self";
// worker_build's value for the Python worker (models/python/worker.py) run by the Python whose
// torch is this build's LibTorch: the Python frontend on the same LibTorch.
const char* const kPython = "python";

void validate_worker_build(const json& value) {
  if (!value.is_string() || value.get<std::string>().empty()) {
    throw std::invalid_argument(
        "must be \"self\", \"python\" (the Python worker on this build's LibTorch) or the path "
        "of a tunebench executable (a build of this project)");
  }
}

// Why worker_build's path cannot run here ("" when it can): a build that is not made on this
// host makes the experiment not applicable, as a missing library does.
std::string worker_build_missing(const json& settings) {
  const json value = setting(settings, "worker_build");
  if (!value.is_string() || value == kSelf) return "";
  if (value == kPython) {
    const std::string& python = build_paths::torch_python();
    if (python.empty() || access(python.c_str(), X_OK) != 0) {
      return "worker_build \"python\": no Python beside this build's LibTorch " +
             std::string(python.empty() ? "(it is no wheel's: the pypi build has one)"
                                        : "(" + python + " is gone)");
    }
    if (access(python_worker_script().c_str(), R_OK) != 0) {
      return "worker_build \"python\": " + python_worker_script() + " is missing";
    }
    return "";
  }
  const std::string path = value;
  std::error_code ec;
  if (std::filesystem::is_regular_file(path, ec) && access(path.c_str(), X_OK) == 0) return "";
  return "worker_build '" + path + "' is not an executable file here (not built on this host?)";
}

// Whether `path` is an ELF binary (a wrapper script execs another file: its read-back names that).
bool is_elf(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  in.read(magic, 4);
  return in && magic[0] == 0x7f && magic[1] == 'E' && magic[2] == 'L' && magic[3] == 'F';
}

void validate_allocator(const json& value) {
  if (!value.is_string() || std::find(kAllocators.begin(), kAllocators.end(),
                                      value.get<std::string>()) == kAllocators.end()) {
    throw std::invalid_argument(
        "must be one of \"glibc\", \"jemalloc\", \"jemalloc_nodecay\", \"tcmalloc\"");
  }
  if (!allocator_library(value.get<std::string>()) && value != "glibc") {
    throw std::invalid_argument("names an allocator that is not installed on this host");
  }
}

void check_threads(int64_t n, const json& evidence, std::vector<std::string>& wrong) {
  const json threads = fact(evidence, evidence::kTorchThreads);
  if (threads != n) {
    wrong.push_back(
        fmt::format("omp_threads={} but the worker ran {} intra-op threads", n, threads.dump()));
  }
  const json env = env_of(evidence);
  if (!env.is_object() || env.value("OMP_NUM_THREADS", "") != std::to_string(n)) {
    wrong.push_back(
        fmt::format("omp_threads={} but the worker's OMP_NUM_THREADS was {}", n,
                    env.is_object() ? env.value("OMP_NUM_THREADS", "unset") : "unknown"));
  }
}

bool llvm_openmp_mapped(const json& evidence) {
  bool llvm = false;
  for (const auto& lib : fact(evidence, evidence::kMappedLibraries)) {
    llvm |= lib.get<std::string>().rfind("libomp", 0) == 0;
  }
  return llvm;
}

// One setting's read-back; the environment's are checked only when the setting is on.
void check_one(const std::string& id, const json& value, const json& evidence,
               std::vector<std::string>& wrong) {
  const json env = env_of(evidence);
  if (id == "omp_threads") {
    check_threads(value.get<int64_t>(), evidence, wrong);
  } else if (id == "allocator") {
    std::string expected = value.get<std::string>();
    if (expected == "jemalloc_nodecay") expected = "jemalloc";
    if (fact(evidence, evidence::kAllocator) != expected) {
      wrong.push_back(fmt::format("allocator={} but the worker had {} mapped",
                                  value.get<std::string>(),
                                  fact(evidence, evidence::kAllocator).dump()));
    }
  } else if (id == "omp_affinity" && value == true) {
    if (!env.is_object() || env.value("OMP_PROC_BIND", "") != "CLOSE" ||
        !env.contains("GOMP_CPU_AFFINITY")) {
      wrong.push_back(
          "omp_affinity=true but OMP_PROC_BIND/GOMP_CPU_AFFINITY were not in the worker's "
          "environment");
    }
  } else if (id == "omp_runtime") {
    const bool llvm = llvm_openmp_mapped(evidence);
    if (llvm != value.get<bool>()) {
      wrong.push_back(fmt::format("omp_runtime={} but LLVM libomp was {}mapped in the worker",
                                  value.dump(), llvm ? "" : "not "));
    }
  } else if (id == "malloc_tunables" && value == true) {
    if (!env.is_object() || env.value("MALLOC_MMAP_MAX_", "") != "0") {
      wrong.push_back(
          "malloc_tunables=true but MALLOC_MMAP_MAX_ was not 0 in the worker's environment");
    }
  } else if (id == "worker_build" && value == kPython) {
    if (fact(evidence, "frontend") != "python") {
      wrong.push_back("worker_build=\"python\" but the worker was not the Python worker");
    }
  } else if (id == "worker_build" && value != kSelf) {
    // The worker names its own executable; a wrapper script is taken at its word.
    std::error_code ec;
    const auto expected = std::filesystem::weakly_canonical(value.get<std::string>(), ec);
    const json ran = fact(evidence, evidence::kExecutable);
    if (is_elf(value.get<std::string>()) &&
        (!ran.is_string() || std::filesystem::path(ran.get<std::string>()) != expected)) {
      wrong.push_back(
          fmt::format("worker_build={} but the worker ran {}", value.dump(),
                      ran.is_string() ? ran.get<std::string>() : "an unknown executable"));
    }
  } else if (id == "numa_bind") {
    const bool bound = fact(evidence, evidence::kNumaPolicy) == "bind";
    if (bound != value.get<bool>()) {
      wrong.push_back(fmt::format("numa_bind={} but the worker's NUMA memory policy was {}",
                                  value.dump(), fact(evidence, evidence::kNumaPolicy).dump()));
    }
  }
}

class Rules final : public KnobRules {
 public:
  std::vector<std::string> ids() const override {
    return {"omp_threads",     "omp_affinity", "omp_runtime", "allocator",
            "malloc_tunables", "numa_bind",    "worker_build"};
  }

  void validate_value(const Knob& knob, const json& value) const override {
    if (knob.id == "omp_threads") {
      if (value == "all") return;
      expect_integer(value, 1, 4096, "must be a thread count from 1 to 4096 or \"all\"");
    } else if (knob.id == "allocator") {
      validate_allocator(value);
    } else if (knob.id == "worker_build") {
      validate_worker_build(value);
    } else {
      KnobRules::validate_value(knob, value);
    }
  }

  json resolve(const Knob& knob, const json& value, const HostCaps& host) const override {
    if (knob.id == "worker_build" && value != kSelf && value != kPython) {
      // An absolute path, so that a resumed run or a stored trial names the same file.
      std::error_code ec;
      const auto absolute = std::filesystem::absolute(value.get<std::string>(), ec);
      return ec ? value : json(absolute.lexically_normal().string());
    }
    return knob.id == "omp_threads" && value == "all" ? json(host.cores) : value;
  }

  std::string not_applicable_reason(const Knob& knob, const std::string&, Mode,
                                    const HostCaps& host, const std::string&) const override {
    const std::string& id = knob.id;
    if (id == "omp_threads" && host.cores < 2) return "this host has 1 core: nothing to sweep";
    if (std::error_code ec; id == "numa_bind" && !std::filesystem::exists(kNumactl, ec)) {
      return "numactl is not installed (Debian package numactl)";
    }
    if (std::error_code ec; id == "omp_runtime" && !std::filesystem::exists(kLlvmOpenMp, ec)) {
      return "LLVM libomp is not installed (libomp5-14)";
    }
    if (id == "allocator" && !allocator_library("jemalloc")) {
      return "jemalloc is not installed (libjemalloc2)";
    }
    return "";
  }

  void process_setup(const json& settings, ProcessSetup& setup) const override;

  std::string arm_not_applicable(const json& settings, int64_t, const HostCaps&) const override {
    return worker_build_missing(settings);
  }

  void check_evidence(const Knob& knob, const json& value, const json&, Mode, const json& evidence,
                      std::vector<std::string>& wrong) const override {
    check_one(knob.id, value, evidence, wrong);
  }

  void summarise_evidence(const json&, const json& e,
                          std::vector<std::string>& parts) const override {
    if (e.contains(evidence::kTorchThreads))
      parts.push_back(fmt::format("threads={}", e[evidence::kTorchThreads].dump()));
    const json env = env_of(e);
    if (env.is_object() && env.contains("OMP_NUM_THREADS")) {
      parts.push_back("OMP_NUM_THREADS=" + env["OMP_NUM_THREADS"].get<std::string>());
    }
    if (e.contains(evidence::kAllocator))
      parts.push_back("allocator=" + e[evidence::kAllocator].get<std::string>());
    if (e.contains(evidence::kTorchVersion))
      parts.push_back("libtorch=" + e[evidence::kTorchVersion].get<std::string>());
    for (const auto& lib : fact(e, evidence::kMappedLibraries)) {
      if (lib.get<std::string>().rfind("libomp", 0) == 0)
        parts.push_back("openmp=" + lib.get<std::string>());
    }
  }
};

void Rules::process_setup(const json& settings, ProcessSetup& setup) const {
  if (settings.contains("omp_threads")) {
    const std::string n = std::to_string(settings["omp_threads"].get<int64_t>());
    setup.env["OMP_NUM_THREADS"] = n;
    setup.env["MKL_NUM_THREADS"] = n;
    setup.env["OPENBLAS_NUM_THREADS"] = "1";  // LibTorch calls BLAS from its own threads
  }
  if (settings.value("omp_affinity", false) == true) {
    const int64_t n = settings.value("omp_threads", int64_t{1});
    setup.env["OMP_PROC_BIND"] = "CLOSE";
    setup.env["OMP_SCHEDULE"] = "STATIC";
    setup.env["GOMP_CPU_AFFINITY"] = n > 1 ? fmt::format("0-{}", n - 1) : "0";
  }
  if (settings.value("omp_runtime", false) == true) {
    setup.preload.push_back(kLlvmOpenMp);
    setup.env["KMP_AFFINITY"] = "granularity=fine,compact,1,0";
    setup.env["KMP_BLOCKTIME"] = "1";
  }
  if (settings.value("numa_bind", false) == true) {
    // Node 0 on every host: on a one-node host this binds to the only node (the report says so).
    setup.launcher = {kNumactl, "--cpunodebind=0", "--membind=0"};
  }
  if (settings.value("malloc_tunables", false) == true) {
    // Keep freed memory in the process: no mmap for large blocks (each would be unmapped on free
    // and faulted in again), and never trim the heap top.
    setup.env["MALLOC_MMAP_MAX_"] = "0";
    setup.env["MALLOC_TRIM_THRESHOLD_"] = "68719476736";
    setup.env["MALLOC_TOP_PAD_"] = "268435456";
  }
  // "self" too: the orchestrator then starts this run's own executable by its path, as it starts
  // the other arm's, so that both arms of a software A/B are launched alike (knob.h).
  if (settings.value("worker_build", "") == kPython) {
    run_in_python_worker(setup);
  } else if (settings.contains("worker_build")) {
    setup.executable = settings["worker_build"].get<std::string>();
  }
  if (settings.contains("allocator")) {
    const std::string allocator = settings["allocator"];
    if (auto lib = allocator_library(allocator)) setup.preload.push_back(*lib);
    // jemalloc 5.3's defaults return large frees at once and fault them back in: several times
    // slower than glibc here; with decay off it matches tcmalloc.
    if (allocator == "jemalloc_nodecay")
      setup.env["MALLOC_CONF"] = "dirty_decay_ms:-1,muzzy_decay_ms:-1";
  }
}

}  // namespace

std::string python_worker_script() {
  return build_paths::source_dir() + "/models/python/worker.py";
}

void run_in_python_worker(ProcessSetup& setup) {
  setup.launcher.push_back(build_paths::torch_python());
  setup.executable = python_worker_script();
}

const KnobRules& process::rules() {
  static const Rules r;
  return r;
}

json base_settings(const HostCaps& host) {
  return {{"omp_threads", host.cores}, {"allocator", "glibc"}};
}

json unset_settings(const HostCaps& host) {
  json unset = base_settings(host);
  if (host.unset_threads > 0) unset["omp_threads"] = host.unset_threads;
  return unset;
}

json unset_value(const Knob& knob, const HostCaps& host) {
  const json unset = unset_settings(host);
  if (unset.contains(knob.id)) return unset[knob.id];
  if (!knob.unset_runs.empty()) return knob.unset_runs;
  return knob.on_when_unset ? resolve(knob, knob.on, host) : resolve(knob, knob.off, host);
}

std::optional<std::string> allocator_library(const std::string& allocator) {
  static const std::map<std::string, std::string> paths{
      {"jemalloc", "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"},
      {"jemalloc_nodecay", "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"},
      {"tcmalloc", "/usr/lib/x86_64-linux-gnu/libtcmalloc.so.4"}};
  auto it = paths.find(allocator);
  std::error_code ec;
  if (it == paths.end() || !std::filesystem::exists(it->second, ec)) return std::nullopt;
  return it->second;
}

}  // namespace tunebench::knobs

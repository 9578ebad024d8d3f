#include "run/host.h"

#include <ATen/Parallel.h>
#include <ATen/Version.h>
#include <fmt/format.h>
#include <sys/utsname.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "core/build_paths.h"
#include "core/hardware.h"
#include "platform/compat.h"
#include "platform/device.h"
#include "platform/nvml.h"
#include "worker/knob_action.h"

namespace tunebench::host {

using nlohmann::json;

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string trim(std::string s) {
  s.erase(0, s.find_first_not_of(" \t\n"));
  s.erase(s.find_last_not_of(" \t\n") + 1);
  return s;
}

std::string first_line(const std::string& path) {
  std::istringstream in(read_file(path));
  std::string line;
  std::getline(in, line);
  return trim(line);
}

// The caches of CPU 0 by level and type ("L1d", "L1i", "L2", "L3") with their sizes ("32K").
json caches() {
  json out = json::object();
  std::error_code ec;
  for (const auto& e :
       std::filesystem::directory_iterator("/sys/devices/system/cpu/cpu0/cache", ec)) {
    if (e.path().filename().string().rfind("index", 0) != 0) continue;
    const std::string dir = e.path().string(), level = first_line(dir + "/level"),
                      type = first_line(dir + "/type"), size = first_line(dir + "/size");
    if (level.empty() || size.empty()) continue;
    const std::string suffix = type == "Data" ? "d" : type == "Instruction" ? "i" : "";
    out["L" + level + suffix] = size;
  }
  return out;
}

// The hypervisor under this host, "none" on bare metal: its CPUID signature (leaf 0x40000000,
// what lscpu's "Hypervisor vendor" reads: KVM, Microsoft Hv, VMware, Xen), else the DMI system
// vendor ("Amazon EC2", "QEMU"), or "unknown" where the CPU flags one but nothing says which.
std::string hypervisor(const json& cpu) {
  const auto flags = cpu.value("flags", json::array());
  if (std::find(flags.begin(), flags.end(), "hypervisor") == flags.end()) return "none";
#if defined(__x86_64__) || defined(__i386__)
  unsigned int eax = 0, ebx = 0, ecx = 0, edx = 0;
  __cpuid(0x40000000, eax, ebx, ecx, edx);
  char signature[13] = {};
  std::memcpy(signature, &ebx, 4);
  std::memcpy(signature + 4, &ecx, 4);
  std::memcpy(signature + 8, &edx, 4);
  static const std::map<std::string, std::string> names{
      {"KVMKVMKVM", "KVM"},     {"Microsoft Hv", "Microsoft Hyper-V"}, {"VMwareVMware", "VMware"},
      {"XenVMMXenVMM", "Xen"},  {"TCGTCGTCGTCG", "QEMU TCG"},          {"bhyve bhyve ", "bhyve"},
      {"ACRNACRNACRN", "ACRN"}, {" lrpepyh  vr", "Parallels"}};
  if (auto it = names.find(signature); it != names.end()) return it->second;
#endif
  for (const char* path : {"/sys/hypervisor/type", "/sys/class/dmi/id/sys_vendor"}) {
    const std::string v = first_line(path);
    if (!v.empty()) return v;
  }
  return "unknown";
}

}  // namespace

json host_fingerprint() {
  json h;
  char name[256] = {};
  gethostname(name, sizeof(name) - 1);
  h["hostname"] = name;
  const std::string cpuinfo = read_file("/proc/cpuinfo");
  std::istringstream lines(cpuinfo);
  std::string line;
  std::set<std::string> sockets;
  while (std::getline(lines, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    if (trim(line.substr(0, colon)) == "physical id") sockets.insert(trim(line.substr(colon + 1)));
  }
  json cpu = hardware::cpu_from_cpuinfo(cpuinfo);
  h["cpu_model"] = cpu.value("model_name", "");
  h["cores"] = sysconf(_SC_NPROCESSORS_ONLN);
  h["sockets"] = std::max<size_t>(1, sockets.size());
  int nodes = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/sys/devices/system/node", ec)) {
    const std::string n = e.path().filename();
    if (n.rfind("node", 0) == 0 && n.size() > 4 && isdigit(n[4])) ++nodes;
  }
  h["numa_nodes"] = std::max(1, nodes);
  h["memory_bytes"] = int64_t(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE);
  const auto cuda = device::cuda_info();
  h["gpu"] = cuda.device_count > 0 ? fmt::format("{} x {}", cuda.device_count, cuda.name) : "none";
  h["gpu_memory_bytes"] = cuda.total_memory;
  // NVML's driver version ("570.86.15"), else the kernel module's banner.
  std::string driver = nvml::driver_version();
  if (driver.empty()) driver = first_line("/proc/driver/nvidia/version");
  h["gpu_driver"] = driver.empty() ? "none" : driver;
  // What the hardware class and the machine are made of (core/hardware.h), and the
  // configuration beside them that changes neither.
  json hw;
  hw["hypervisor"] = hypervisor(cpu);
  hw["cpu"] = std::move(cpu);
  hw["caches"] = caches();
  for (const char* key : {"cores", "sockets", "numa_nodes", "memory_bytes"}) hw[key] = h[key];
  hw["gpu"] = {{"count", cuda.device_count},
               {"name", cuda.name},
               {"memory_bytes", cuda.total_memory},
               {"capability", cuda.capability}};
  h["hardware"] = std::move(hw);
  struct utsname uts {};
  h["kernel"] = uname(&uts) == 0 ? uts.release : "unknown";
  const std::string thp =
      hardware::bracketed_mode(first_line("/sys/kernel/mm/transparent_hugepage/enabled"));
  h["transparent_hugepages"] = thp.empty() ? "unavailable" : thp;
  return h;
}

json software_fingerprint() {
  json s;
  s["tunebench"] = "0.1.0";
  s["git_revision"] = git_revision();
  s["libtorch_version"] = compat::torch_version();
  s["libtorch_build"] = device::build_summary();
  s["compiler"] = __VERSION__;
  // How this LibTorch was built, one value per key: BLAS_INFO, USE_CUDA, CPU capability
  // usage, the oneDNN, MKL and OpenMP versions, ...
  const json build = hardware::parse_torch_config(at::show_config());
  s["libtorch_config"] = build;
  // Debian's LibTorch calls the system's libblas.so.3: name the implementation it resolves to.
  std::error_code ec;
  const auto blas = std::filesystem::canonical("/usr/lib/x86_64-linux-gnu/libblas.so.3", ec);
  s["system_blas"] = ec ? "none" : blas.string();
  const auto cuda = device::cuda_info();
  s["cuda"] = cuda.cuda_runtime.empty() ? "none" : cuda.cuda_runtime;
  s["cudnn"] = cuda.cudnn.empty() ? "none" : cuda.cudnn;
  return s;
}

double cpu_pressure_avg10() {
  std::istringstream in(read_file("/proc/pressure/cpu"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("some ", 0) != 0) continue;
    const auto at = line.find("avg10=");
    if (at == std::string::npos) return -1;
    return std::atof(line.c_str() + at + 6) / 100;
  }
  return -1;
}

double wait_until_quiet(double limit_s, bool& quiet) {
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    const double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double pressure = cpu_pressure_avg10();
    quiet = pressure < kQuietPressure;  // also where the kernel cannot say (negative)
    if (quiet || waited >= limit_s) return waited;
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
}

HostState host_state() {
  HostState state;
  double load1 = 0, load5 = 0, load15 = 0;
  std::string running_total;
  std::istringstream(read_file("/proc/loadavg")) >> load1 >> load5 >> load15 >> running_total;
  state.facts["load_average"] = {load1, load5, load15};
  int procs_running = 0;
  std::istringstream stat(read_file("/proc/stat"));
  std::string line;
  while (std::getline(stat, line)) {
    if (line.rfind("procs_running", 0) == 0) procs_running = std::atoi(line.c_str() + 13);
  }
  const int others = std::max(0, procs_running - 1);  // less this process
  state.facts["other_running_processes"] = others;
  const std::string governor = first_line("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor");
  state.facts["cpu_governor"] = governor;
  if (governor.empty()) {
    state.facts["cpu_governor"] = "unavailable (no cpufreq: a virtual machine?)";
  }
  // Turbo/boost: the cpufreq "boost" switch, or intel_pstate's inverse "no_turbo".
  const std::string boost = first_line("/sys/devices/system/cpu/cpufreq/boost");
  const std::string no_turbo = first_line("/sys/devices/system/cpu/intel_pstate/no_turbo");
  if (boost == "1" || no_turbo == "0") {
    state.facts["turbo"] = "on";
  } else if (boost == "0" || no_turbo == "1") {
    state.facts["turbo"] = "off";
  } else {
    state.facts["turbo"] = "unavailable";
  }
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  const double pressure = cpu_pressure_avg10();
  if (pressure >= 0) {
    state.facts["cpu_pressure_avg10"] = pressure;
    if (pressure >= kQuietPressure) {
      state.warnings.push_back(
          fmt::format("some task waited for a CPU {:.0f}% of the last 10 s (/proc/pressure/cpu)",
                      100 * pressure));
    }
  } else if (load1 > 0.5 * double(cores)) {
    state.warnings.push_back(
        fmt::format("load average {:.2f} over the last minute on {} cores", load1, cores));
  }
  if (others > 0) {
    state.warnings.push_back(
        fmt::format("{} other process{} running", others, others == 1 ? "" : "es"));
  }
  if (!governor.empty() && governor != "performance") {
    state.warnings.push_back(
        fmt::format("CPU frequency governor is '{}', not 'performance'", governor));
  }
  // Each GPU's clocks, temperature, power and throttle reasons (each trial reads them again at
  // the start and end of its measured region); a GPU held down by anything but idleness is noted.
  if (nvml::device_count() > 0) {
    state.facts["gpus"] = json::array();
    for (int i = 0; i < nvml::device_count(); ++i) {
      const json gpu = nvml::device_state({i, ""});  // every GPU of the host, in NVML's order
      state.facts["gpus"].push_back(gpu);
      const json reasons = gpu.value("throttle_reasons", json::array());
      if (!reasons.is_array()) continue;  // "not available: …" on a driver without them
      for (const auto& reason : reasons) {
        if (reason != "gpu_idle") {
          state.warnings.push_back(fmt::format("GPU {} clocks held down: {}", i, reason.dump()));
        }
      }
    }
  } else {
    state.facts["gpus"] =
        "none (" +
        (nvml::unavailable_reason().empty() ? std::string("no GPU") : nvml::unavailable_reason()) +
        ")";
  }
  state.facts["quiet"] = state.warnings.empty();
  return state;
}

knobs::HostCaps capabilities() {
  knobs::HostCaps caps = knobs::probe_host();
  caps.cuda_reason = device::cuda_unavailable_reason();
  caps.cuda = caps.cuda_reason.empty();
  caps.gpus = caps.cuda ? static_cast<int>(torch::cuda::device_count()) : 0;
  // LibTorch's own count (OMP_NUM_THREADS or MKL_NUM_THREADS where this process has them, else
  // its count of the host's cores), read without touching the thread pool.
  caps.unset_threads = at::intraop_default_num_threads();
  // Each knob family's action says what this build cannot run on each device.
  for (const auto& [device, unsupported] :
       {std::pair{c10::DeviceType::CPU, &caps.unsupported_on_cpu},
        std::pair{c10::DeviceType::CUDA, &caps.unsupported_on_cuda}}) {
    if (device == c10::DeviceType::CUDA && !caps.cuda) continue;  // the missing device says it
    for (const worker::KnobAction* action : worker::actions()) {
      for (const auto& [id, why] : action->unsupported(device)) (*unsupported)[id] = why;
    }
  }
  return caps;
}

std::string git_revision() {
  // An installed binary has no checkout beside it: the revision it was built from.
  if (build_paths::installed()) return build_paths::configured_git_revision();
  const std::string git = build_paths::source_dir() + "/.git";
  std::string head = first_line(git + "/HEAD");
  if (head.empty()) return "unknown";
  if (head.rfind("ref: ", 0) != 0) return head;
  const std::string ref = head.substr(5);
  std::string sha = first_line(git + "/" + ref);
  if (!sha.empty()) return sha;
  std::istringstream packed(read_file(git + "/packed-refs"));
  std::string line;
  while (std::getline(packed, line)) {
    if (line.size() > 41 && line.substr(41) == ref) return line.substr(0, 40);
  }
  return "unknown";
}

}  // namespace tunebench::host

#include "platform/nvml.h"

#include <dlfcn.h>

#include <mutex>
#include <utility>
#include <vector>

namespace tunebench::nvml {

using nlohmann::json;

namespace {

// The few NVML entry points used, by their C ABI (nvml.h): an int result, 0 = NVML_SUCCESS.
using Device = void*;
struct Api {
  std::string error;
  int (*init)() = nullptr;
  int (*count)(unsigned*) = nullptr;
  int (*handle)(unsigned, Device*) = nullptr;
  int (*handle_by_bus)(const char*, Device*) = nullptr;
  int (*driver)(char*, unsigned) = nullptr;
  int (*clock)(Device, int, unsigned*) = nullptr;
  int (*temperature)(Device, int, unsigned*) = nullptr;
  int (*power)(Device, unsigned*) = nullptr;
  int (*reasons)(Device, unsigned long long*) = nullptr;  // optional
  int (*energy)(Device, unsigned long long*) = nullptr;
};

template <class F>
bool load(void* lib, const char* name, F& fn) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
  return fn != nullptr;
}

const Api& api() {
  static Api a;
  static std::once_flag once;
  std::call_once(once, [] {
    void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      a.error = "NVML (libnvidia-ml.so.1, from the NVIDIA driver) is not installed";
      return;
    }
    if (!load(lib, "nvmlInit_v2", a.init) || !load(lib, "nvmlDeviceGetCount_v2", a.count) ||
        !load(lib, "nvmlDeviceGetHandleByIndex_v2", a.handle) ||
        !load(lib, "nvmlSystemGetDriverVersion", a.driver) ||
        !load(lib, "nvmlDeviceGetClockInfo", a.clock) ||
        !load(lib, "nvmlDeviceGetTemperature", a.temperature) ||
        !load(lib, "nvmlDeviceGetPowerUsage", a.power)) {
      a.error = "libnvidia-ml.so.1 lacks an NVML function tunebench uses";
      return;
    }
    // The clock event reasons under their name since CUDA 12.2, else the older "throttle" name
    // (deprecated): a driver without either still gives clocks and energy.
    if (!load(lib, "nvmlDeviceGetCurrentClocksEventReasons", a.reasons))
      load(lib, "nvmlDeviceGetCurrentClocksThrottleReasons", a.reasons);
    load(lib, "nvmlDeviceGetHandleByPciBusId_v2", a.handle_by_bus);
    load(lib, "nvmlDeviceGetTotalEnergyConsumption", a.energy);  // Volta and later drivers
    if (int rc = a.init(); rc != 0) {
      a.error = "nvmlInit failed with NVML error " + std::to_string(rc) + " (no driver loaded?)";
    }
  });
  return a;
}

// NVML numbers GPUs in PCI order and ignores CUDA_VISIBLE_DEVICES, so a CUDA device is found by
// its PCI bus id; the index only where there is no bus id (or no lookup by it).
std::optional<Device> device(const Gpu& gpu) {
  const Api& a = api();
  Device d = nullptr;
  if (!a.error.empty()) return std::nullopt;
  if (!gpu.pci_bus_id.empty() && a.handle_by_bus) {
    if (a.handle_by_bus(gpu.pci_bus_id.c_str(), &d) != 0) return std::nullopt;
    return d;
  }
  if (a.handle(static_cast<unsigned>(gpu.index), &d) != 0) return std::nullopt;
  return d;
}

}  // namespace

std::string unavailable_reason() { return api().error; }

int device_count() {
  unsigned n = 0;
  if (!api().error.empty() || api().count(&n) != 0) return 0;
  return static_cast<int>(n);
}

std::string driver_version() {
  char buffer[96] = {};
  if (!api().error.empty() || api().driver(buffer, sizeof(buffer)) != 0) return "";
  return buffer;
}

json throttle_reason_names(uint64_t mask) {
  // nvmlClocksEventReason* bits (nvml.h).
  static const std::vector<std::pair<uint64_t, const char*>> kBits{
      {0x1, "gpu_idle"},
      {0x2, "applications_clocks_setting"},
      {0x4, "sw_power_cap"},
      {0x8, "hw_slowdown"},
      {0x10, "sync_boost"},
      {0x20, "sw_thermal_slowdown"},
      {0x40, "hw_thermal_slowdown"},
      {0x80, "hw_power_brake_slowdown"},
      {0x100, "display_clock_setting"}};
  json names = json::array();
  uint64_t known = 0;
  for (const auto& [bit, name] : kBits) {
    known |= bit;
    if (mask & bit) names.push_back(name);
  }
  if (mask & ~known) names.push_back("other");
  return names;
}

json device_state(const Gpu& gpu) {
  if (auto why = unavailable_reason(); !why.empty()) return {{"unavailable", why}};
  auto d = device(gpu);
  if (!d) {
    return {{"unavailable", gpu.pci_bus_id.empty()
                                ? "NVML has no GPU " + std::to_string(gpu.index)
                                : "NVML has no GPU at PCI bus id " + gpu.pci_bus_id}};
  }
  const Api& a = api();
  json s = json::object();
  unsigned value = 0;
  // nvmlClockType: 0 graphics, 1 SM, 2 memory.
  if (a.clock(*d, 1, &value) == 0) s["sm_clock_mhz"] = value;
  if (a.clock(*d, 2, &value) == 0) s["memory_clock_mhz"] = value;
  if (a.temperature(*d, 0, &value) == 0) s["temperature_c"] = value;  // NVML_TEMPERATURE_GPU
  if (a.power(*d, &value) == 0) s["power_w"] = value / 1000.0;        // milliwatts
  unsigned long long reasons = 0;
  if (!a.reasons) {
    s["throttle_reasons"] = "not available: this driver's NVML has no clocks event reasons";
  } else if (a.reasons(*d, &reasons) == 0) {
    s["throttle_reasons"] = throttle_reason_names(reasons);
  }
  return s;
}

std::optional<uint64_t> energy_millijoules(const Gpu& gpu) {
  auto d = device(gpu);
  unsigned long long mj = 0;
  if (!d || !api().energy || api().energy(*d, &mj) != 0) return std::nullopt;
  return mj;
}

}  // namespace tunebench::nvml

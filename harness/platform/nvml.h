// What NVIDIA's management library (NVML) tells about the GPUs: driver version, clocks, the
// reasons clocks are held down (throttling), power and the energy counter. NVML is the driver's
// own library (libnvidia-ml.so.1): it is opened at run time, so the binary neither needs its
// headers to build nor a GPU to start; without it every call answers "not available" with why.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace tunebench::nvml {

// Empty when NVML is loaded and initialised; otherwise why not.
std::string unavailable_reason();

int device_count();            // 0 without NVML
std::string driver_version();  // "" without NVML

// Which GPU: by its PCI bus id ("0000:3B:00.0", cudaDeviceGetPCIBusId) where known, which is
// the same GPU whatever CUDA_VISIBLE_DEVICES says; otherwise NVML's own index (PCI order).
struct Gpu {
  int index = 0;
  std::string pci_bus_id;
};

// Clocks (MHz), temperature, power (W) and the clock event (throttle) reasons of `gpu`,
// as {"sm_clock_mhz":…, "memory_clock_mhz":…, "temperature_c":…, "power_w":…,
// "throttle_reasons": ["sw_power_cap", …]}; {"unavailable": why} without NVML. The reasons come
// from nvmlDeviceGetCurrentClocksEventReasons, or the deprecated …ThrottleReasons on older
// drivers; with neither they say "not available" and the rest is still read.
nlohmann::json device_state(const Gpu& gpu);

// The names of the set bits of an NVML clocks-event-reasons mask, e.g. 0x4 → "sw_power_cap".
nlohmann::json throttle_reason_names(uint64_t mask);

// The GPU's energy counter in millijoules since the driver loaded (Volta and later); nullopt
// where NVML or the counter is not available.
std::optional<uint64_t> energy_millijoules(const Gpu& gpu);

}  // namespace tunebench::nvml

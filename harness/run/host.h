// Where and with what a run was taken: the host fingerprint (CPU, cores, sockets, NUMA nodes,
// memory, GPU, driver), the software fingerprint (LibTorch version and build, BLAS, oneDNN,
// OpenMP, CUDA/cuDNN, compiler, tunebench's git revision), and the host's state at the start of a
// run (load, frequency governor, turbo, other running processes), with a verdict on whether it
// was quiet enough to measure.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "knobs/knobs.h"

namespace tunebench::host {

nlohmann::json host_fingerprint();
nlohmann::json software_fingerprint();

struct HostState {
  nlohmann::json facts;               // load averages, governor, boost, running processes
  std::vector<std::string> warnings;  // why the host is not quiet; empty when it is
};
HostState host_state();

// The share of the last 10 s in which some task waited for a CPU (/proc/pressure/cpu, "some
// avg10", 0 to 1); negative where the kernel has no pressure accounting. A build or another
// benchmark on a 2-core host reads 0.3-0.6; a quiet host under 0.05.
double cpu_pressure_avg10();

// The host judged quiet where CPU pressure over the last 10 s is below this (where the kernel
// has pressure accounting; the one-minute load average otherwise, which trails a finished build
// by minutes).
inline constexpr double kQuietPressure = 0.10;

// Waits until the host is quiet by CPU pressure, or `limit_s` has passed: for a run started
// right after a build. Returns the seconds waited; `quiet` says whether it got quiet.
double wait_until_quiet(double limit_s, bool& quiet);

// What decides which knobs apply here: cores and NUMA nodes, a usable CUDA device, and the knobs
// this build's LibTorch lacks (with the reasons).
knobs::HostCaps capabilities();

// The git revision of the source tree this binary was built from, "unknown" outside git.
std::string git_revision();

}  // namespace tunebench::host

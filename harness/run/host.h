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

// What decides which knobs apply here: cores and NUMA nodes, a usable CUDA device, and the knobs
// this build's LibTorch lacks (with the reasons).
knobs::HostCaps capabilities();

// The git revision of the source tree this binary was built from, "unknown" outside git.
std::string git_revision();

}  // namespace tunebench::host

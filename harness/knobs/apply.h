// How to write a configuration of knobs down outside tunebench (`tunebench tune`'s
// recommendation): the launcher line of the process (environment, preloads, numactl) from the
// knobs' own process setup, and the lines of code in Python and in C++ for the knobs that act
// inside the process. No torch.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "knobs/knob.h"

namespace tunebench::knobs {

struct Written {
  // "OMP_NUM_THREADS=2 LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 python main.py";
  // "" when no knob acts at process start.
  std::string launch;
  std::vector<std::string> python, cpp;  // one line each, in the settings' order
};

// `settings`: knob id -> value, values resolved for the host (omp_threads a count).
Written how_to_apply(const nlohmann::json& settings);

// The ids how_to_apply writes code lines of its own for; any other in-process knob is written
// as the catalog's change.
std::vector<std::string> written_knobs();

}  // namespace tunebench::knobs

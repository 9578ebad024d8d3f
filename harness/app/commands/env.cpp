// `tunebench env`: this host's and this build's fingerprints and the host's state.
#include <fmt/format.h>

#include <iostream>

#include "app/commands.h"
#include "run/host.h"

namespace tunebench::cli {

int env_command(bool as_json) {
  const auto state = host::host_state();
  nlohmann::json out = {{"host", host::host_fingerprint()},
                        {"software", host::software_fingerprint()},
                        {"host_state", state.facts}};
  out["host_state"]["warnings"] = state.warnings;
  if (as_json) {
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  for (const char* part : {"host", "software", "host_state"}) {
    fmt::print("{}:\n", part);
    for (const auto& [k, v] : out[part].items()) {
      fmt::print("  {:<18} {}\n", k, v.is_string() ? v.get<std::string>() : v.dump());
    }
  }
  return 0;
}

}  // namespace tunebench::cli

// `tunebench env`: this host's and this build's fingerprints, the identities that come from the
// host's hardware (core/hardware.h), and the host's state.
#include <fmt/format.h>

#include <algorithm>
#include <iostream>

#include "app/commands.h"
#include "core/hardware.h"
#include "run/host.h"

namespace tunebench::cli {

namespace {

// An object's keys one per line, nested objects indented under their key.
void print_object(const nlohmann::json& object, int indent) {
  for (const auto& [k, v] : object.items()) {
    if (v.is_object() && !v.empty()) {
      fmt::print("{:{}}{}:\n", "", indent, k);
      print_object(v, indent + 2);
      continue;
    }
    std::string text;
    if (v.is_array() &&
        std::all_of(v.begin(), v.end(), [](const auto& e) { return e.is_string(); })) {
      for (const auto& e : v) text += (text.empty() ? "" : " ") + e.get<std::string>();
    } else {
      text = v.is_string() ? v.get<std::string>() : v.dump();
    }
    fmt::print("{:{}}{:<{}} {}\n", "", indent, k, std::max(1, 26 - indent), text);
  }
}

}  // namespace

int env_command(bool as_json) {
  const auto state = host::host_state();
  const auto fingerprint = host::host_fingerprint();
  nlohmann::json out = {{"host", fingerprint},
                        {"identity",
                         {{"hardware", hardware::describe(fingerprint)},
                          {"hardware_class", hardware::class_id(fingerprint)},
                          {"machine", hardware::machine_id(fingerprint)}}},
                        {"software", host::software_fingerprint()},
                        {"host_state", state.facts}};
  out["host_state"]["warnings"] = state.warnings;
  if (as_json) {
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  for (const char* part : {"identity", "host", "software", "host_state"}) {
    fmt::print("{}:\n", part);
    print_object(out[part], 2);
  }
  return 0;
}

}  // namespace tunebench::cli

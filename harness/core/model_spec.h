// The model a trial builds, as plain data: what the suite names and the records carry. The
// registry (models/registry.h) knows which names, presets and options exist.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace tunebench::models {

// A model to build: name, preset, and options that override the preset's configuration
// (e.g. {"seq_len": 128, "builtin_ops": false}). Options are checked by name and type.
struct ModelSpec {
  std::string model;
  std::string preset;
  nlohmann::json options = nlohmann::json::object();
};

}  // namespace tunebench::models

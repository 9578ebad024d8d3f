// The model a trial builds, as plain data: what the suite names and the records carry. The
// registry (models/registry.h) knows which names, presets and options exist.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tunebench::models {

// A model to build: name, preset, and options that override the preset's configuration
// (e.g. {"seq_len": 128, "builtin_ops": false}). Options are checked by name and type.
struct ModelSpec {
  std::string model;
  std::string preset;
  nlohmann::json options = nlohmann::json::object();
};

// What a model read from a file (models/torchscript.h, run/python_model.h) offers the knobs, found
// by loading it and running its forward once before a run is planned: the facts applicability asks
// of such a model (knobs::not_applicable_reason), where a built-in model's are its code's. Stored
// with the run.
struct ModelOffer {
  std::string file;    // the path as given
  std::string sha256;  // of the file: a changed file is different software
  int64_t parameters = 0;
  bool trainable = false;  // some parameter requires a gradient
  bool conv2d = false;     // a 2-D convolution in its modules, and a 4-D first input
  std::string output;      // "tensor" or "tuple of N tensors"
  nlohmann::json inputs;   // the inputs as the suite gives them (shape per sample, dtype)
  // A Python model's: the class that makes it, and the knobs the Python worker runs on it (every
  // other knob is not applicable to it); both empty for a TorchScript archive.
  std::string model_class;
  std::vector<std::string> knobs;
  // A torch.export archive's (run in the Python worker): format "torch.export", and what the
  // plan says of it (its graph keeps the mode it was exported in); both empty otherwise.
  std::string format;
  std::string note;
};
inline nlohmann::json to_json(const ModelOffer& offer) {
  nlohmann::json j = {
      {"file", offer.file},           {"sha256", offer.sha256}, {"parameters", offer.parameters},
      {"trainable", offer.trainable}, {"conv2d", offer.conv2d}, {"output", offer.output},
      {"inputs", offer.inputs}};
  if (!offer.model_class.empty()) j["class"] = offer.model_class;
  if (!offer.knobs.empty()) j["knobs"] = offer.knobs;
  if (!offer.format.empty()) j["format"] = offer.format;
  if (!offer.note.empty()) j["note"] = offer.note;
  return j;
}

}  // namespace tunebench::models

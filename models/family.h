// The typed side of a model descriptor (models/descriptor.h): a model's configuration file
// (models/<model>_config.cpp) describes its config struct once — presets as values, options as
// typed fields, its size arithmetic — and describe() turns that into the registry's type-free
// ModelDescriptor, with every check and message the same for every model. The model's torch file
// builds from the same family (configure()). Torch-free.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "models/descriptor.h"

namespace tunebench::models {

namespace family_detail {
inline std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}
}  // namespace family_detail

// One configurable field of a model config: read from and written to JSON with a type check.
template <class Config>
struct Option {
  OptionInfo info;
  std::function<void(Config&, const nlohmann::json&)> set;  // throws a message fragment
  std::function<nlohmann::json(const Config&)> get;
};

// The upper bounds keep the size arithmetic (parameters, FLOPs, memory estimate) within int64_t:
// far beyond any model this machine or a large one could build, and no overflow (found by
// fuzz/fuzz_suite.cpp: e.g. a width of 2^40 overflowed the parameter count).
template <class Config>
Option<Config> int_option(const std::string& name, int64_t Config::*member, int64_t min_value,
                          int64_t max_value) {
  return {{name, fmt::format("integer from {} to {}", min_value, max_value)},
          [=](Config& c, const nlohmann::json& v) {
            if (!v.is_number_integer()) throw std::string("must be an integer");
            if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(max_value)) {
              throw "must be at most " + std::to_string(max_value);
            }
            const int64_t x = v.get<int64_t>();
            if (x < min_value) throw "must be at least " + std::to_string(min_value);
            if (x > max_value) throw "must be at most " + std::to_string(max_value);
            c.*member = x;
          },
          [=](const Config& c) { return nlohmann::json(c.*member); }};
}

template <class Config>
Option<Config> bool_option(const std::string& name, bool Config::*member) {
  return {{name, "true or false"},
          [=](Config& c, const nlohmann::json& v) {
            if (!v.is_boolean()) throw std::string("must be true or false");
            c.*member = v.get<bool>();
          },
          [=](const Config& c) { return nlohmann::json(c.*member); }};
}

template <class Config>
struct Preset {
  std::string name, description;
  Config config;
};

// A model family: its presets, its options, and how to size one.
template <class Config>
struct ModelFamily {
  std::string name;
  std::vector<Preset<Config>> presets;
  std::vector<Option<Config>> options;
  std::function<ModelStats(const Config&)> stats;
  // Optional: options that do not fit together (gpt: n_embd not a multiple of n_head); throws
  // InvalidSpec naming the preset.
  std::function<void(const Config&, const std::string& preset)> check = nullptr;
  // Optional: what this model's summary adds (dlrm: the published size and the row-cap note).
  std::function<void(const Config&, PresetSummary&)> annotate = nullptr;
};

// The preset of `spec` with its options applied; throws InvalidSpec.
template <class Config>
Config configure(const ModelFamily<Config>& family, const ModelSpec& spec) {
  using family_detail::join;
  auto preset = std::find_if(family.presets.begin(), family.presets.end(),
                             [&](const Preset<Config>& p) { return p.name == spec.preset; });
  if (preset == family.presets.end()) {
    std::vector<std::string> names;
    for (const auto& p : family.presets) names.push_back(p.name);
    throw InvalidSpec(fmt::format("unknown preset '{}' for model '{}'; valid presets: {}",
                                  spec.preset, family.name, join(names)));
  }
  Config config = preset->config;
  if (!spec.options.is_object() && !spec.options.is_null()) {
    throw InvalidSpec(
        fmt::format("options of {}/{} must be a JSON object", family.name, spec.preset));
  }
  const nlohmann::json options = spec.options.is_null() ? nlohmann::json::object() : spec.options;
  for (const auto& [key, value] : options.items()) {
    auto it =
        std::find_if(family.options.begin(), family.options.end(),
                     [&wanted = key](const Option<Config>& o) { return o.info.name == wanted; });
    if (it == family.options.end()) {
      std::vector<std::string> valid;
      for (const auto& o : family.options) valid.push_back(o.info.name);
      throw InvalidSpec(fmt::format("unknown option '{}' for model '{}'; valid options: {}", key,
                                    family.name, join(valid)));
    }
    try {
      it->set(config, value);
    } catch (const std::string& why) {
      throw InvalidSpec(
          fmt::format("option '{}' of model '{}' {}, got {}", key, family.name, why, value.dump()));
    }
  }
  if (family.check) family.check(config, spec.preset);
  return config;
}

template <class Config>
PresetSummary summarize(const ModelFamily<Config>& family, const ModelSpec& spec) {
  const Config config = configure(family, spec);
  const ModelStats stats = family.stats(config);
  PresetSummary s;
  s.model = family.name;
  s.preset = spec.preset;
  for (const auto& p : family.presets) {
    if (p.name == spec.preset) s.description = p.description;
  }
  s.parameters = stats.parameters;
  s.parameters_published = stats.parameters;
  s.forward_flops = stats.forward_flops;
  s.input_shape = stats.input_shape;
  s.weight_bytes = stats.parameters * static_cast<int64_t>(sizeof(float));
  s.activation_bytes = stats.activation_elements * sizeof(float);
  s.config = nlohmann::json::object();
  for (const auto& o : family.options) s.config[o.info.name] = o.get(config);
  if (family.annotate) family.annotate(config, s);
  return s;
}

// The registry's view of the family: the same checks and messages, without the config type.
// `family` lives as long as the program (a function-local static of the model's config file).
template <class Config>
ModelDescriptor describe(const ModelFamily<Config>& family) {
  ModelDescriptor d;
  d.name = family.name;
  for (const auto& p : family.presets) d.presets.push_back({p.name, p.description});
  for (const auto& o : family.options) d.options.push_back(o.info);
  d.summarize = [&family](const ModelSpec& spec) { return summarize(family, spec); };
  return d;
}

}  // namespace tunebench::models

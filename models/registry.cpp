#include "models/registry.h"

#include <fmt/format.h>

namespace tunebench::models {

using nlohmann::json;

// The configuration files' descriptor functions, declared from the one list.
#define TUNEBENCH_MODEL(model) const ModelDescriptor& model##_descriptor();
#include "models/registry.def"
#undef TUNEBENCH_MODEL

const std::vector<const ModelDescriptor*>& descriptors() {
  static const std::vector<const ModelDescriptor*> all{
#define TUNEBENCH_MODEL(model) &model##_descriptor(),
#include "models/registry.def"
#undef TUNEBENCH_MODEL
  };
  return all;
}

const ModelDescriptor& descriptor(const std::string& model) {
  for (const ModelDescriptor* d : descriptors()) {
    if (d->name == model) return *d;
  }
  std::string valid;
  for (const auto& name : model_names()) valid += (valid.empty() ? "" : ", ") + name;
  throw InvalidSpec(fmt::format("unknown model '{}'; valid models: {}", model, valid));
}

std::string with_commas(int64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::vector<std::string> model_names() {
  std::vector<std::string> out;
  for (const ModelDescriptor* d : descriptors()) out.push_back(d->name);
  return out;
}

std::vector<std::string> preset_names(const std::string& model) {
  std::vector<std::string> out;
  for (const PresetInfo& p : descriptor(model).presets) out.push_back(p.name);
  return out;
}

PresetSummary summarize(const ModelSpec& spec) { return descriptor(spec.model).summarize(spec); }

std::vector<PresetSummary> summarize_all() {
  std::vector<PresetSummary> out;
  for (const ModelDescriptor* d : descriptors()) {
    for (const PresetInfo& p : d->presets) {
      if (d->from_file) {  // nothing to size until its options name a file and its inputs
        PresetSummary s;
        s.model = d->name;
        s.preset = p.name;
        s.description = p.description;
        s.note = !d->python ? "a model from a file: its options path and inputs say what it is"
                 : p.name == "export"
                     ? "a torch.export archive: its option path says what it is; the example "
                       "inputs it holds (or its option inputs) give its inputs"
                     : "a model from a Python file: its options path and class say what it "
                       "is; its get_example_inputs() gives its inputs";
        out.push_back(s);
        continue;
      }
      out.push_back(d->summarize({d->name, p.name}));
    }
  }
  return out;
}

json to_json(const PresetSummary& s) {
  return {{"model", s.model},
          {"preset", s.preset},
          {"description", s.description},
          {"parameters", s.parameters},
          {"parameters_published", s.parameters_published},
          {"forward_flops_per_sample", s.forward_flops},
          {"input_shape_per_sample", s.input_shape},
          {"weight_bytes", s.weight_bytes},
          {"note", s.note},
          {"config", s.config}};
}

double estimate_trial_bytes(const ModelSpec& spec, int64_t batch, bool train) {
  constexpr double kLibTorch = 512.0 * (1 << 20);  // LibTorch, allocator caches, the batch itself
  const PresetSummary s = summarize(spec);
  return kLibTorch + double(s.weight_bytes) * (train ? 4 : 1) +
         s.activation_bytes * double(batch) * (train ? 3 : 1);
}

}  // namespace tunebench::models

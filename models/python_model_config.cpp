#include "models/python_model_config.h"

#include <fmt/format.h>

namespace tunebench::models {

using nlohmann::json;

const ModelFamily<PythonModelConfig>& python_family() {
  static const ModelFamily<PythonModelConfig> family{
      "python",
      {{"file",
        "a torch.nn.Module class with get_example_inputs() in a Python file (options path and "
        "class), run by the Python worker",
        PythonModelConfig{}},
       {"export",
        "a torch.export archive (torch.export.save, .pt2: option path; inputs in place of its "
        "example inputs), run by the Python worker",
        PythonModelConfig{true}}},
      {{{"path", "the Python file's or the torch.export archive's path (a string)"},
        [](PythonModelConfig& c, const json& v) {
          if (!v.is_string() || v.get<std::string>().empty()) {
            throw std::string("must be the path of a Python file or a torch.export archive");
          }
          c.path = v.get<std::string>();
        },
        [](const PythonModelConfig& c) { return json(c.path); }},
       {{"class", "the class (or function) that makes the module, a name in the file"},
        [](PythonModelConfig& c, const json& v) {
          if (!v.is_string()) throw std::string("must be a name in the file, a string");
          c.model_class = v.get<std::string>();
        },
        [](const PythonModelConfig& c) { return json(c.model_class); }},
       {{"inputs",
         "preset export: the inputs its forward takes, in place of the archive's example "
         "inputs, a list of {\"shape\": [sizes per sample], \"dtype\": \"float32\", ...}"},
        [](PythonModelConfig& c, const json& v) { c.inputs = parse_inputs(v); },
        [](const PythonModelConfig& c) { return to_json(c.inputs); }}},
      // What the file holds is counted when the Python worker reads it (run/python_model.h).
      [](const PythonModelConfig&) { return ModelStats{}; },
      [](const PythonModelConfig& c, const std::string& preset) {
        if (c.path.empty()) {
          throw InvalidSpec(
              fmt::format("model python/{} needs the option path ({}), e.g. {}", preset,
                          c.exported ? "a torch.export archive, torch.export.save's .pt2"
                                     : "a Python file with a torch.nn.Module class that has "
                                       "get_example_inputs(), and class where the file has several",
                          c.exported ? "{\"path\": \"model.pt2\"}"
                                     : "{\"path\": \"my_model.py\", \"class\": \"MyNet\"}"));
        }
        if (c.exported && !c.model_class.empty()) {
          throw InvalidSpec(
              fmt::format("model python/export: the option class names a class in a Python file; a "
                          "torch.export archive ({}) is one module",
                          c.path));
        }
        if (!c.exported && !c.inputs.empty()) {
          throw InvalidSpec(
              fmt::format("model python/file: a Python file ({}) gives its own inputs "
                          "(get_example_inputs()); the option inputs is for preset export",
                          c.path));
        }
      },
      [](const PythonModelConfig&, PresetSummary& s) {
        s.note = "parameters are counted when the Python worker reads the file";
      }};
  return family;
}

// --- the descriptor: what the registry (models/registry.def) knows of a model from a file ----
const ModelDescriptor& python_descriptor() {
  static const ModelDescriptor descriptor = [] {
    ModelDescriptor d = describe(python_family());
    d.from_file = true;
    d.python = true;
    return d;
  }();
  return descriptor;
}

}  // namespace tunebench::models

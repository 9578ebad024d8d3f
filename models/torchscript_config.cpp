#include "models/torchscript_config.h"

#include <fmt/format.h>

#include <algorithm>

namespace tunebench::models {

using nlohmann::json;

namespace {

constexpr int64_t kMostPerDimension = int64_t{1} << 24;
constexpr int64_t kMostPerSample = int64_t{1} << 31;  // elements of one input, per sample

int64_t elements(const FileInput& input) {
  int64_t n = 1;
  for (int64_t d : input.shape) n *= d;
  return n;
}

// One input from the suite's JSON; throws the message fragment options take (models/family.h).
FileInput parse_input(const json& j, size_t index) {
  const std::string where = fmt::format("input {}", index);
  if (!j.is_object()) throw where + " must be an object {\"shape\": [...], \"dtype\": ...}";
  for (const auto& [key, value] : j.items()) {
    if (key != "shape" && key != "dtype" && key != "low" && key != "high") {
      throw fmt::format("{} has an unknown field '{}' (valid: shape, dtype, low, high)", where,
                        key);
    }
  }
  FileInput input;
  const json shape = j.value("shape", json());
  if (!shape.is_array() || shape.empty()) {
    throw where + " needs a shape per sample, a list of sizes such as [3, 224, 224]";
  }
  for (const auto& d : shape) {
    if (!d.is_number_integer() || d.get<int64_t>() < 1 || d.get<int64_t>() > kMostPerDimension) {
      throw fmt::format("{}'s shape must hold sizes from 1 to {}, got {}", where, kMostPerDimension,
                        shape.dump());
    }
    input.shape.push_back(d.get<int64_t>());
    if (elements(input) > kMostPerSample) {
      throw fmt::format("{}'s shape {} holds more than {} elements per sample", where, shape.dump(),
                        kMostPerSample);
    }
  }
  input.dtype = j.value("dtype", json("float32")).is_string() ? j.value("dtype", "float32") : "";
  const auto& dtypes = file_input_dtypes();
  if (std::find(dtypes.begin(), dtypes.end(), input.dtype) == dtypes.end()) {
    throw fmt::format("{}'s dtype must be one of {}, got {}", where, family_detail::join(dtypes),
                      j.value("dtype", json()).dump());
  }
  for (const char* bound : {"low", "high"}) {
    if (j.contains(bound) && !j[bound].is_number_integer()) {
      throw fmt::format("{}'s {} must be an integer, got {}", where, bound, j[bound].dump());
    }
  }
  if (is_integer_dtype(input.dtype)) {
    if (!j.contains("high")) {
      throw fmt::format(
          "{} is {}: it needs \"high\", the bound its values stay below (the "
          "vocabulary size of token ids, say)",
          where, input.dtype);
    }
    input.low = j.value("low", int64_t{0});
    input.high = j["high"].get<int64_t>();
    if (input.high <= input.low) {
      throw fmt::format("{}'s high ({}) must be above its low ({})", where, input.high, input.low);
    }
  } else if (j.contains("low") || j.contains("high")) {
    throw fmt::format("{} is {}: low and high are for integer inputs only", where, input.dtype);
  }
  return input;
}

ModelStats torchscript_stats(const TorchScriptConfig& c) {
  ModelStats stats;
  // What the file holds is counted when it is read (models/torchscript.h): the configuration
  // knows only the inputs, a floor of the activations.
  for (const auto& input : c.inputs) stats.activation_elements += double(elements(input));
  stats.input_shape = describe_inputs(c.inputs);
  return stats;
}

}  // namespace

const std::vector<std::string>& file_input_dtypes() {
  static const std::vector<std::string> dtypes{"float32", "float64", "float16", "bfloat16", "int64",
                                               "int32",   "int8",    "uint8",   "bool"};
  return dtypes;
}

bool is_integer_dtype(const std::string& dtype) {
  return dtype == "int64" || dtype == "int32" || dtype == "int8" || dtype == "uint8" ||
         dtype == "bool";
}

std::string describe_inputs(const std::vector<FileInput>& inputs) {
  std::string out;
  for (const auto& input : inputs) {
    std::string shape;
    for (int64_t d : input.shape) shape += (shape.empty() ? "" : "x") + std::to_string(d);
    out += (out.empty() ? "" : ", ") + shape + " " + input.dtype;
    if (is_integer_dtype(input.dtype) && input.dtype != "bool") {
      out += fmt::format(" in [{}, {})", input.low, input.high);
    }
  }
  return out;
}

std::vector<FileInput> parse_inputs(const json& v) {
  if (!v.is_array() || v.empty()) throw std::string("must be a list of one or more inputs");
  std::vector<FileInput> inputs;
  for (size_t i = 0; i < v.size(); ++i) inputs.push_back(parse_input(v[i], i));
  return inputs;
}

json to_json(const std::vector<FileInput>& inputs) {
  json out = json::array();
  for (const auto& input : inputs) out.push_back(to_json(input));
  return out;
}

json to_json(const FileInput& input) {
  json j = {{"shape", input.shape}, {"dtype", input.dtype}};
  if (is_integer_dtype(input.dtype)) {
    j["low"] = input.low;
    j["high"] = input.high;
  }
  return j;
}

FileInput parse_input_argument(const std::string& text) {
  const std::string valid =
      "SHAPE:DTYPE, e.g. 3x224x224:float32, or for integers SHAPE:DTYPE:HIGH or "
      "SHAPE:DTYPE:LOW:HIGH, e.g. 128:int64:50257";
  std::vector<std::string> parts;
  for (size_t start = 0;;) {
    const size_t colon = text.find(':', start);
    parts.push_back(text.substr(start, colon - start));
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  json j = json::object();
  json shape = json::array();
  for (size_t start = 0; !parts[0].empty();) {
    const size_t x = parts[0].find('x', start);
    const std::string d = parts[0].substr(start, x - start);
    if (d.empty() || d.size() > 9 || d.find_first_not_of("0123456789") != std::string::npos) {
      throw InvalidSpec(fmt::format("--input {}: '{}' is not a size; valid: {}", text, d, valid));
    }
    shape.push_back(std::stoll(d));
    if (x == std::string::npos) break;
    start = x + 1;
  }
  j["shape"] = shape;
  if (parts.size() > 1) j["dtype"] = parts[1];
  auto integer = [&](const std::string& s) {
    if (s.empty() || s.size() > 18 || s.find_first_not_of("-0123456789") != std::string::npos) {
      throw InvalidSpec(
          fmt::format("--input {}: '{}' is not an integer; valid: {}", text, s, valid));
    }
    return std::stoll(s);
  };
  if (parts.size() == 3) j["high"] = integer(parts[2]);
  if (parts.size() == 4) {
    j["low"] = integer(parts[2]);
    j["high"] = integer(parts[3]);
  }
  if (parts.size() > 4) throw InvalidSpec(fmt::format("--input {}: valid: {}", text, valid));
  try {
    return parse_input(j, 0);
  } catch (const std::string& why) {
    throw InvalidSpec(fmt::format("--input {}: {}; valid: {}", text, why, valid));
  }
}

const ModelFamily<TorchScriptConfig>& torchscript_family() {
  static const ModelFamily<TorchScriptConfig> family{
      "torchscript",
      {{"file",
        "a TorchScript archive (torch.jit.save) named by the option path, its inputs by inputs",
        TorchScriptConfig{}}},
      {{{"path", "the archive's path (a string)"},
        [](TorchScriptConfig& c, const json& v) {
          if (!v.is_string() || v.get<std::string>().empty()) {
            throw std::string("must be the path of a TorchScript archive");
          }
          c.path = v.get<std::string>();
        },
        [](const TorchScriptConfig& c) { return json(c.path); }},
       {{"inputs",
         "a list of inputs, each {\"shape\": [sizes per sample], \"dtype\": \"float32\", ...}"},
        [](TorchScriptConfig& c, const json& v) { c.inputs = parse_inputs(v); },
        [](const TorchScriptConfig& c) { return to_json(c.inputs); }}},
      torchscript_stats,
      [](const TorchScriptConfig& c, const std::string& preset) {
        if (c.path.empty() || c.inputs.empty()) {
          throw InvalidSpec(fmt::format(
              "model torchscript/{} needs the options path (the archive torch.jit.save wrote) "
              "and inputs (what its forward takes), e.g. {{\"path\": \"model.pt\", \"inputs\": "
              "[{{\"shape\": [3, 224, 224], \"dtype\": \"float32\"}}]}}",
              preset));
        }
      },
      [](const TorchScriptConfig&, PresetSummary& s) {
        s.note = "parameters are counted when the file is read";
      }};
  return family;
}

// --- the descriptor: what the registry (models/registry.def) knows of a model from a file ----
const ModelDescriptor& torchscript_descriptor() {
  static const ModelDescriptor descriptor = [] {
    ModelDescriptor d = describe(torchscript_family());
    d.from_file = true;
    return d;
  }();
  return descriptor;
}

}  // namespace tunebench::models

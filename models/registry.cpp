#include "models/registry.h"

#include <fmt/format.h>

#include <functional>
#include <map>

#include "models/dlrm.h"
#include "models/gpt.h"
#include "models/resnet.h"

namespace tunebench::models {

using nlohmann::json;

namespace {

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// One configurable field of a model config: read from and written to JSON with a type check.
template <class Config>
struct Field {
  std::string name;
  std::function<void(Config&, const json&)> set;  // throws a message fragment on a bad value
  std::function<json(const Config&)> get;
};

// The upper bounds keep the size arithmetic (parameters, FLOPs, memory estimate) within int64_t:
// far beyond any model this machine or a large one could build, and no overflow (found by
// fuzz/fuzz_suite.cpp: e.g. a width of 2^40 overflowed the parameter count).
template <class Config>
Field<Config> int_field(const std::string& name, int64_t Config::*member, int64_t min_value,
                        int64_t max_value) {
  return {name,
          [=](Config& c, const json& v) {
            if (!v.is_number_integer()) throw std::string("must be an integer");
            if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(max_value)) {
              throw "must be at most " + std::to_string(max_value);
            }
            const int64_t x = v.get<int64_t>();
            if (x < min_value) throw "must be at least " + std::to_string(min_value);
            if (x > max_value) throw "must be at most " + std::to_string(max_value);
            c.*member = x;
          },
          [=](const Config& c) { return json(c.*member); }};
}

template <class Config>
Field<Config> bool_field(const std::string& name, bool Config::*member) {
  return {name,
          [=](Config& c, const json& v) {
            if (!v.is_boolean()) throw std::string("must be true or false");
            c.*member = v.get<bool>();
          },
          [=](const Config& c) { return json(c.*member); }};
}

// A model family: its presets, its fields, and how to size and build one.
template <class Config>
struct Family {
  std::string name;
  std::vector<std::pair<std::string, std::string>> preset_descriptions;
  std::function<Config(const std::string&)> preset;
  std::vector<Field<Config>> fields;
  std::function<ModelStats(const Config&)> stats;
  std::function<std::unique_ptr<BenchModel>(const Config&)> build;

  std::vector<std::string> presets() const {
    std::vector<std::string> out;
    for (const auto& p : preset_descriptions) out.push_back(p.first);
    return out;
  }

  Config configure(const ModelSpec& spec) const {
    auto names = presets();
    if (std::find(names.begin(), names.end(), spec.preset) == names.end()) {
      throw InvalidSpec(fmt::format("unknown preset '{}' for model '{}'; valid presets: {}",
                                    spec.preset, name, join(names)));
    }
    Config config = preset(spec.preset);
    if (!spec.options.is_object() && !spec.options.is_null()) {
      throw InvalidSpec(fmt::format("options of {}/{} must be a JSON object", name, spec.preset));
    }
    const json options = spec.options.is_null() ? json::object() : spec.options;
    for (const auto& [key, value] : options.items()) {
      auto it = std::find_if(fields.begin(), fields.end(),
                             [&wanted = key](auto& f) { return f.name == wanted; });
      if (it == fields.end()) {
        std::vector<std::string> valid;
        for (const auto& f : fields) valid.push_back(f.name);
        throw InvalidSpec(fmt::format("unknown option '{}' for model '{}'; valid options: {}", key,
                                      name, join(valid)));
      }
      try {
        it->set(config, value);
      } catch (const std::string& why) {
        throw InvalidSpec(
            fmt::format("option '{}' of model '{}' {}, got {}", key, name, why, value.dump()));
      }
    }
    if constexpr (std::is_same_v<Config, GptConfig>) {
      if (config.n_embd % config.n_head != 0) {
        throw InvalidSpec(fmt::format("gpt/{}: n_embd {} must be a multiple of n_head {}",
                                      spec.preset, config.n_embd, config.n_head));
      }
      if (config.seq_len > config.block_size) {
        throw InvalidSpec(fmt::format("gpt/{}: seq_len {} exceeds block_size {} (the context)",
                                      spec.preset, config.seq_len, config.block_size));
      }
    }
    return config;
  }

  json to_json(const Config& config) const {
    json out = json::object();
    for (const auto& f : fields) out[f.name] = f.get(config);
    return out;
  }
};

const Family<ResNetConfig>& resnet_family() {
  static const Family<ResNetConfig> family{
      "resnet50",
      {{"tiny", "8 channels after the stem, 32x32 inputs, 10 classes: for tests"},
       {"full", "torchvision's ResNet-50 v1.5, 224x224, 1000 classes"}},
      [](const std::string& preset) {
        ResNetConfig c;
        if (preset == "tiny") {
          c.width = 8;
          c.image_size = 32;
          c.num_classes = 10;
        }
        return c;
      },
      {int_field("width", &ResNetConfig::width, 1, 1 << 12),
       int_field("num_classes", &ResNetConfig::num_classes, 1, 1 << 24),
       int_field("image_size", &ResNetConfig::image_size, 32, 1 << 16),
       bool_field("conv_bias", &ResNetConfig::conv_bias),
       bool_field("inplace_act", &ResNetConfig::inplace_act),
       bool_field("checkpoint", &ResNetConfig::checkpoint)},
      resnet_stats,
      [](const ResNetConfig& c) { return std::make_unique<ResNetModel>(c); }};
  return family;
}

const Family<GptConfig>& gpt_family() {
  static const Family<GptConfig> family{
      "gpt",
      {{"tiny", "2 layers, 2 heads, 32 channels, vocab 101, 32 tokens: for tests"},
       {"small", "4 GPT-2 small layers (12 heads, 768 channels, vocab 50257), 256 tokens"},
       {"gpt2", "GPT-2 small: 12 layers, 12 heads, 768 channels, vocab 50257, 1024 tokens"}},
      [](const std::string& preset) {
        GptConfig c;
        if (preset == "tiny") {
          c.n_layer = 2;
          c.n_head = 2;
          c.n_embd = 32;
          c.vocab_size = 101;
          c.block_size = 64;
          c.seq_len = 32;
        } else if (preset == "small") {
          c.n_layer = 4;
          c.seq_len = 256;
        }
        return c;
      },
      {int_field("n_layer", &GptConfig::n_layer, 1, 1 << 10),
       int_field("n_head", &GptConfig::n_head, 1, 1 << 10),
       int_field("n_embd", &GptConfig::n_embd, 1, 1 << 16),
       int_field("vocab_size", &GptConfig::vocab_size, 2, 1 << 24),
       int_field("block_size", &GptConfig::block_size, 1, 1 << 24),
       int_field("seq_len", &GptConfig::seq_len, 1, 1 << 24),
       bool_field("builtin_ops", &GptConfig::builtin_ops),
       bool_field("fused_attention", &GptConfig::fused_attention),
       bool_field("causal_mask_fly", &GptConfig::causal_mask_fly),
       bool_field("vocab_pad", &GptConfig::vocab_pad),
       int_field("mlp_hidden", &GptConfig::mlp_hidden, 0, 1 << 18),
       bool_field("dims_mult8", &GptConfig::dims_mult8),
       bool_field("checkpoint", &GptConfig::checkpoint)},
      gpt_stats,
      [](const GptConfig& c) { return std::make_unique<GptModel>(c); }};
  return family;
}

const Family<DlrmConfig>& dlrm_family() {
  static const Family<DlrmConfig> family{
      "dlrm",
      {{"tiny", "8 small tables, dim 8, bottom 13-32-8, 2 lookups per bag: for tests"},
       {"kaggle",
        "the Criteo Kaggle shape: 26 tables as published, dim 16, bottom "
        "13-512-256-64-16, top 367-512-256-1"}},
      [](const std::string& preset) {
        DlrmConfig c;
        if (preset == "tiny") {
          c.bottom_mlp = {32, 8};
          c.top_mlp = {32, 1};
          c.table_rows = {97, 31, 1000, 500, 7, 64, 2000, 13};
          c.pooling = 2;
        } else {
          c.table_rows = criteo_kaggle_table_rows();
        }
        return c;
      },
      {int_field("row_cap", &DlrmConfig::row_cap, 0, int64_t{1} << 40),
       int_field("pooling", &DlrmConfig::pooling, 1, 1 << 20),
       int_field("dense_features", &DlrmConfig::dense_features, 1, 1 << 20)},
      dlrm_stats,
      [](const DlrmConfig& c) { return std::make_unique<DlrmModel>(c); }};
  return family;
}

template <class Config>
PresetSummary summarize_family(const Family<Config>& family, const ModelSpec& spec) {
  const Config config = family.configure(spec);
  const ModelStats stats = family.stats(config);
  PresetSummary s;
  s.model = family.name;
  s.preset = spec.preset;
  for (const auto& [name, text] : family.preset_descriptions) {
    if (name == spec.preset) s.description = text;
  }
  s.parameters = stats.parameters;
  s.parameters_published = stats.parameters;
  s.forward_flops = stats.forward_flops;
  s.input_shape = stats.input_shape;
  s.weight_bytes = stats.parameters * static_cast<int64_t>(sizeof(float));
  s.activation_bytes = stats.activation_elements * sizeof(float);
  s.config = family.to_json(config);
  if constexpr (std::is_same_v<Config, DlrmConfig>) {
    int64_t rows = 0;
    for (int64_t r : config.table_rows) rows += r;
    DlrmConfig uncapped = config;
    uncapped.row_cap = 0;
    s.parameters_published = family.stats(uncapped).parameters;
    s.config["table_rows"] = config.table_rows;
    s.config["bottom_mlp"] = mlp_string(config.dense_features, config.bottom_mlp);
    s.config["top_mlp"] = mlp_string(config.interaction_dim(), config.top_mlp);
    s.note = config.row_cap > 0
                 ? fmt::format("{} rows; capped at {} per table (published size {} params)",
                               with_commas(rows), with_commas(config.row_cap),
                               with_commas(s.parameters_published))
                 : fmt::format("{} rows; no row cap (option row_cap=N bounds each table)",
                               with_commas(rows));
  }
  return s;
}

}  // namespace

std::string with_commas(int64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::vector<std::string> model_names() {
  return {resnet_family().name, gpt_family().name, dlrm_family().name};
}

std::vector<std::string> preset_names(const std::string& model) {
  if (model == resnet_family().name) return resnet_family().presets();
  if (model == gpt_family().name) return gpt_family().presets();
  if (model == dlrm_family().name) return dlrm_family().presets();
  throw InvalidSpec(
      fmt::format("unknown model '{}'; valid models: {}", model, join(model_names())));
}

PresetSummary summarize(const ModelSpec& spec) {
  if (spec.model == resnet_family().name) return summarize_family(resnet_family(), spec);
  if (spec.model == gpt_family().name) return summarize_family(gpt_family(), spec);
  if (spec.model == dlrm_family().name) return summarize_family(dlrm_family(), spec);
  preset_names(spec.model);  // throws the unknown-model message
  return {};
}

std::vector<PresetSummary> summarize_all() {
  std::vector<PresetSummary> out;
  for (const auto& model : model_names()) {
    for (const auto& preset : preset_names(model)) out.push_back(summarize({model, preset}));
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

std::unique_ptr<BenchModel> build_model(const ModelSpec& spec, uint64_t seed) {
  torch::manual_seed(seed);
  if (spec.model == resnet_family().name)
    return resnet_family().build(resnet_family().configure(spec));
  if (spec.model == gpt_family().name) return gpt_family().build(gpt_family().configure(spec));
  if (spec.model == dlrm_family().name) return dlrm_family().build(dlrm_family().configure(spec));
  preset_names(spec.model);
  return nullptr;
}

}  // namespace tunebench::models

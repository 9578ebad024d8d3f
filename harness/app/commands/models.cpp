// `tunebench models`: the registry's models and presets with their size arithmetic.
#include <fmt/format.h>

#include <iostream>

#include "app/commands.h"
#include "models/registry.h"

namespace tunebench::cli {

namespace {

// "key=value": the value is read as JSON (numbers, true/false), else taken as a string.
nlohmann::json parse_options(const std::vector<std::string>& pairs) {
  nlohmann::json options = nlohmann::json::object();
  for (const auto& pair : pairs) {
    const auto eq = pair.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw models::InvalidSpec("--option '" + pair + "' is not key=value (e.g. seq_len=128)");
    }
    const std::string key = pair.substr(0, eq), text = pair.substr(eq + 1);
    auto value = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    options[key] = value.is_discarded() ? nlohmann::json(text) : value;
  }
  return options;
}

std::string si(double flops) {
  if (flops >= 1e9) return fmt::format("{:.2f} G", flops / 1e9);
  if (flops >= 1e6) return fmt::format("{:.2f} M", flops / 1e6);
  if (flops >= 1e3) return fmt::format("{:.2f} k", flops / 1e3);
  return fmt::format("{:.0f} ", flops);
}

std::string bytes(int64_t n) {
  if (n >= (int64_t(1) << 30)) return fmt::format("{:.2f} GiB", n / double(1 << 30));
  if (n >= (int64_t(1) << 20)) return fmt::format("{:.1f} MiB", n / double(1 << 20));
  return fmt::format("{:.1f} KiB", n / 1024.0);
}

void print_table(const std::vector<models::PresetSummary>& rows) {
  fmt::print("{:<9} {:<7} {:>13} {:>13} {:<24} {:>10}  {}\n", "model", "preset", "parameters",
             "FLOP/sample", "input/sample", "weights", "notes");
  for (const auto& r : rows) {
    fmt::print("{:<9} {:<7} {:>13} {:>13} {:<24} {:>10}  {}\n", r.model, r.preset,
               models::with_commas(r.parameters), si(r.forward_flops), r.input_shape,
               bytes(r.weight_bytes), r.note.empty() ? r.description : r.note);
  }
  fmt::print(
      "\nFLOP/sample: forward, 2 x multiply-accumulates of convolutions, linear layers and "
      "attention/interaction products (element-wise work not counted). Weights: fp32.\n");
}

}  // namespace

int models_command(const ModelsOptions& o) {
  const nlohmann::json options = parse_options(o.option_pairs);
  if (!o.preset.empty() && o.model.empty()) {
    std::string valid;
    for (const auto& name : models::model_names()) valid += (valid.empty() ? "" : ", ") + name;
    throw models::InvalidSpec("--preset needs --model; valid models: " + valid);
  }
  if (!options.empty() && o.preset.empty()) {
    throw models::InvalidSpec("--option needs --model and --preset");
  }
  std::vector<models::PresetSummary> rows;
  if (o.model.empty()) {
    rows = models::summarize_all();
  } else {
    const auto presets =
        o.preset.empty() ? models::preset_names(o.model) : std::vector<std::string>{o.preset};
    for (const auto& p : presets) rows.push_back(models::summarize({o.model, p, options}));
  }
  if (o.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& r : rows) out.push_back(models::to_json(r));
    std::cout << out.dump(2) << "\n";
  } else {
    print_table(rows);
  }
  return 0;
}

}  // namespace tunebench::cli

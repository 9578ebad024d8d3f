#include "harness/cli.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <iostream>

#include "harness/device.h"
#include "models/registry.h"

namespace tunebench::cli {

namespace {

constexpr int kExitBadInput = 2;

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

std::string grouped(int64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

void print_table(const std::vector<models::PresetSummary>& rows) {
  fmt::print("{:<9} {:<7} {:>13} {:>13} {:<24} {:>10}  {}\n", "model", "preset", "parameters",
             "FLOP/sample", "input/sample", "weights", "notes");
  for (const auto& r : rows) {
    fmt::print("{:<9} {:<7} {:>13} {:>13} {:<24} {:>10}  {}\n", r.model, r.preset,
               grouped(r.parameters), si(r.forward_flops), r.input_shape, bytes(r.weight_bytes),
               r.note.empty() ? r.description : r.note);
  }
  fmt::print(
      "\nFLOP/sample: forward, 2 x multiply-accumulates of convolutions, linear layers and "
      "attention/interaction products (element-wise work not counted). Weights: fp32.\n");
}

int models_command(bool as_json, const std::string& model, const std::string& preset,
                   const std::vector<std::string>& option_pairs) {
  const nlohmann::json options = parse_options(option_pairs);
  if (!preset.empty() && model.empty()) {
    throw models::InvalidSpec("--preset needs --model; valid models: resnet50, gpt, dlrm");
  }
  if (!options.empty() && preset.empty()) {
    throw models::InvalidSpec("--option needs --model and --preset");
  }
  std::vector<models::PresetSummary> rows;
  if (model.empty()) {
    rows = models::summarize_all();
  } else {
    const auto presets =
        preset.empty() ? models::preset_names(model) : std::vector<std::string>{preset};
    for (const auto& p : presets) rows.push_back(models::summarize({model, p, options}));
  }
  if (as_json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& r : rows) out.push_back(models::to_json(r));
    std::cout << out.dump(2) << "\n";
  } else {
    print_table(rows);
  }
  return 0;
}

}  // namespace

int run(int argc, char** argv) {
  CLI::App app{
      "tunebench: PyTorch performance-tuning advice as controlled on/off experiments.\n"
      "Built against " +
      device::build_summary() + "."};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("tunebench 0.1.0, ") + device::build_summary());

  bool as_json = false;
  std::string model, preset;
  std::vector<std::string> option_pairs;
  auto* models_cmd = app.add_subcommand(
      "models",
      "List the benchmark models and presets: parameters, forward FLOPs per sample, "
      "input shape and weight memory");
  models_cmd->add_flag("--json", as_json, "print JSON instead of a table");
  models_cmd->add_option("--model", model, "only this model (resnet50, gpt, dlrm)");
  models_cmd->add_option("--preset", preset, "only this preset of --model");
  models_cmd->add_option("-o,--option", option_pairs,
                         "override a configuration field, key=value (e.g. -o row_cap=1000000)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);  // prints the message
    std::cerr << "Run 'tunebench --help' for usage.\n";
    return kExitBadInput;
  }

  try {
    if (models_cmd->parsed()) return models_command(as_json, model, preset, option_pairs);
  } catch (const models::InvalidSpec& e) {
    std::cerr << "tunebench: error: " << e.what() << "\n";
    return kExitBadInput;
  } catch (const std::exception& e) {
    std::cerr << "tunebench: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace tunebench::cli

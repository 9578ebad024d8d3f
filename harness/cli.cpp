#include "harness/cli.h"

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "harness/analysis.h"
#include "harness/check.h"
#include "harness/device.h"
#include "harness/export.h"
#include "harness/host.h"
#include "harness/knobs.h"
#include "harness/orchestrator.h"
#include "harness/storage.h"
#include "harness/suite.h"
#include "harness/worker.h"
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

// A database that does not exist yet is not created by a read-only command.
storage::Database open_existing(const std::string& path) {
  if (!std::filesystem::exists(path)) {
    throw storage::StorageError(
        path + " does not exist; run a suite first (tunebench run --suite suites/smoke.json)");
  }
  return storage::Database(path);
}

int show_command(const std::string& db_path, const std::string& which, bool as_json) {
  const auto db = open_existing(db_path);
  const auto report = analysis::analyze(db, storage::resolve_run(db, which));
  if (as_json) {
    std::cout << analysis::to_json(report).dump(2) << "\n";
  } else {
    std::cout << analysis::format_run(report);
  }
  return 0;
}

int list_command(const std::string& suites_dir) {
  const knobs::HostCaps host = host::capabilities();
  fmt::print("Built against {}. Host: {} cores, {} NUMA node(s).\n\n", device::build_summary(),
             host.cores, host.numa_nodes);
  fmt::print("{:<20} {:<5} {:<16} {}\n", "knob", "where", "here", "change / why not");
  for (const auto& k : knobs::catalog()) {
    // Applicability on this host and build, for the first model and mode the knob is meant for.
    const std::string model = k.models.empty() ? "resnet50" : k.models.front();
    const Mode mode = k.modes.empty() ? Mode::infer : k.modes.front();
    const std::string why = knobs::not_applicable_reason(k, model, mode, host);
    fmt::print("{:<20} {:<5} {:<16} {}\n", k.id, k.where,
               why.empty() ? "applicable" : "not applicable", why.empty() ? k.change : why);
  }
  fmt::print("\nSuites in {}/:\n", suites_dir);
  std::error_code ec;
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(suites_dir, ec)) {
    if (e.path().extension() == ".json") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    try {
      const auto s = suite::load(f.string(), host);
      fmt::print("  {} ({}): {}\n", s.name, f.string(), s.description);
      for (const auto& x : s.experiments) {
        fmt::print("    {:<44} {} arms x {} processes{}\n", x.name, x.arms.size(), x.processes,
                   x.not_applicable.empty() ? "" : "  not applicable: " + x.not_applicable);
      }
    } catch (const suite::SuiteError& e) {
      fmt::print("  {}: invalid: {}\n", f.string(), e.what());
    }
  }
  return 0;
}

int env_command(bool as_json) {
  const auto state = host::host_state();
  nlohmann::json out = {{"host", host::host_fingerprint()},
                        {"software", host::software_fingerprint()},
                        {"host_state", state.facts}};
  out["host_state"]["warnings"] = state.warnings;
  if (as_json) {
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  for (const char* part : {"host", "software", "host_state"}) {
    fmt::print("{}:\n", part);
    for (const auto& [k, v] : out[part].items()) {
      fmt::print("  {:<18} {}\n", k, v.is_string() ? v.get<std::string>() : v.dump());
    }
  }
  return 0;
}

int export_command(const std::string& db_path, const std::string& which, const std::string& format,
                   const std::string& output) {
  const auto db = open_existing(db_path);
  const std::string text = exporter::export_run(db, storage::resolve_run(db, which), format);
  if (output.empty()) {
    std::cout << text;
    return 0;
  }
  std::ofstream out(output, std::ios::binary);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + output);
  std::cerr << "wrote " << output << "\n";
  return 0;
}

// `tunebench report`: runs reports/render.py with the project's Python (execve, no shell) and
// returns its exit status; its output passes straight through.
int report_command(const std::vector<std::string>& render_args) {
  const std::string source = TUNEBENCH_SOURCE_DIR;
  const char* from_env = std::getenv("TUNEBENCH_PYTHON");
  const std::string python = from_env ? from_env : source + "/.venv/bin/python";
  if (access(python.c_str(), X_OK) != 0) {
    std::cerr << "tunebench: error: no Python for the report at " << python
              << " (run ci/setup.sh, or set TUNEBENCH_PYTHON)\n";
    return kExitBadInput;
  }
  std::vector<std::string> args{python, source + "/reports/render.py"};
  args.insert(args.end(), render_args.begin(), render_args.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    execve(argv[0], argv.data(), environ);
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
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

  std::string command_line;
  for (int i = 0; i < argc; ++i) command_line += (i ? " " : "") + std::string(argv[i]);

  orchestrator::RunOptions run_options;
  run_options.command_line = command_line;
  auto* run_cmd = app.add_subcommand(
      "run",
      "Run a suite: every experiment as interleaved off/on trials in fresh worker "
      "processes, stored in the results database");
  auto* suite_opt =
      run_cmd->add_option("--suite", run_options.suite_path, "suite file, e.g. suites/smoke.json");
  auto* resume_opt = run_cmd->add_option(
      "--resume", run_options.resume,
      "finish an interrupted run (uuid, unique prefix or 'latest'): only its missing trials run");
  suite_opt->excludes(resume_opt);
  run_cmd->add_option("--db", run_options.db_path, "results database")->capture_default_str();
  run_cmd->add_option("--label", run_options.label, "a label for the run, e.g. nightly");
  run_cmd->add_option("--filter", run_options.filter,
                      "run only experiments whose name matches this regular expression");
  run_cmd->add_flag("-q,--quiet", run_options.quiet, "print nothing but errors");

  auto* worker_cmd = app.add_subcommand(
      "worker", "Internal: run one trial given as JSON on stdin and print its result as JSON");

  std::string db_path = "results/tunebench.sqlite", run_id = "latest";
  bool show_json = false;
  auto* show_cmd = app.add_subcommand(
      "show",
      "Show a run: per experiment the arms' medians and spread, the effect with its "
      "interval and verdict, the claim, and the evidence that the settings took effect");
  show_cmd->add_option("run", run_id, "run uuid (or a unique prefix) or 'latest'")
      ->capture_default_str();
  show_cmd->add_option("--db", db_path, "results database")->capture_default_str();
  show_cmd->add_flag("--json", show_json, "print JSON");

  std::string suites_dir = "suites";
  auto* list_cmd = app.add_subcommand(
      "list",
      "List the catalog's knobs (whether each applies on this host and build, and why not) "
      "and the suites with their experiments");
  list_cmd->add_option("--suites", suites_dir, "folder of suite files")->capture_default_str();

  bool env_json = false;
  auto* env_cmd = app.add_subcommand(
      "env", "Show this host's and this build's fingerprints and the host's state");
  env_cmd->add_flag("--json", env_json, "print JSON");

  std::string export_format = "json", export_out, export_run = "latest", export_db = db_path;
  auto* export_cmd = app.add_subcommand(
      "export",
      "Export a run's samples as JSON, CSV, or Google Benchmark's JSON (for its compare.py)");
  export_cmd->add_option("run", export_run, "run uuid (or a unique prefix) or 'latest'")
      ->capture_default_str();
  export_cmd->add_option("--db", export_db, "results database")->capture_default_str();
  export_cmd->add_option("--format", export_format, "json, csv or gbench")
      ->check(CLI::IsMember({"json", "csv", "gbench"}))
      ->capture_default_str();
  export_cmd->add_option("-o,--output", export_out, "write to this file instead of stdout");

  check::Options check_options;
  std::string check_db = "results/tunebench.sqlite", check_format = "table";
  double check_threshold_pct = 5;
  auto* check_cmd = app.add_subcommand(
      "check",
      "Check a run for regressions against a baseline window of earlier runs of the same suite "
      "on the same host and software; exit 0 none, 1 regression, 2 usage or data error");
  check_cmd->add_option("--db", check_db, "results database")->capture_default_str();
  check_cmd->add_option("--run", check_options.run, "run uuid (or a unique prefix) or 'latest'")
      ->capture_default_str();
  check_cmd->add_option("--baseline", check_options.baseline, "last:N, run:ID or label:X")
      ->capture_default_str();
  check_cmd
      ->add_option("--threshold", check_threshold_pct,
                   "smallest slowdown in per cent that counts as a regression")
      ->capture_default_str();
  check_cmd->add_flag(
      "--across-software", check_options.across_software,
      "compare with runs of other software too (did upgrading LibTorch slow us down?)");
  check_cmd->add_option("--format", check_format, "table, md, json or junit")
      ->check(CLI::IsMember({"table", "md", "json", "junit"}))
      ->capture_default_str();

  std::string report_db = "results/tunebench.sqlite", report_out = "reports/out",
              report_run = "latest", report_prices;
  std::vector<std::string> report_hosts;
  auto* report_cmd = app.add_subcommand(
      "report",
      "Render the HTML report, Markdown summary and PNGs from the database (reports/render.py)");
  report_cmd->add_option("--db", report_db, "results database")->capture_default_str();
  report_cmd->add_option("--out", report_out, "output folder")->capture_default_str();
  report_cmd->add_option("--run", report_run, "run uuid (or a unique prefix) or 'latest'")
      ->capture_default_str();
  report_cmd->add_option("--hosts", report_hosts, "hostnames to compare side by side");
  report_cmd->add_option("--prices", report_prices,
                         "JSON object of hostname to price, for throughput per price");

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
    if (worker_cmd->parsed()) return worker::main_worker();
    if (run_cmd->parsed()) {
      if (run_options.suite_path.empty() && run_options.resume.empty()) {
        std::cerr << "tunebench: error: run needs --suite FILE (a new run) or --resume RUN\n";
        return kExitBadInput;
      }
      return orchestrator::run(run_options);
    }
    if (show_cmd->parsed()) return show_command(db_path, run_id, show_json);
    if (list_cmd->parsed()) return list_command(suites_dir);
    if (env_cmd->parsed()) return env_command(env_json);
    if (export_cmd->parsed())
      return export_command(export_db, export_run, export_format, export_out);
    if (check_cmd->parsed()) {
      check_options.threshold = check_threshold_pct / 100.0;
      const auto db = open_existing(check_db);
      try {
        const auto report = check::check(db, check_options);
        std::cout << check::format(report, check_format);
        return report.regressed() ? 1 : 0;
      } catch (const std::invalid_argument& e) {
        std::cerr << "tunebench: error: " << e.what() << "\n";
        return kExitBadInput;
      }
    }
    if (report_cmd->parsed()) {
      std::vector<std::string> args{"--db", report_db, "--out", report_out, "--run", report_run};
      if (!report_hosts.empty()) {
        args.push_back("--hosts");
        args.insert(args.end(), report_hosts.begin(), report_hosts.end());
      }
      if (!report_prices.empty()) args.insert(args.end(), {"--prices", report_prices});
      return report_command(args);
    }
  } catch (const storage::StorageError& e) {
    std::cerr << "tunebench: error: " << e.what() << "\n";
    return kExitBadInput;
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

#include "app/cli.h"

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "analysis/analysis.h"
#include "analysis/check.h"
#include "analysis/export.h"
#include "knobs/knobs.h"
#include "models/registry.h"
#include "plan/suite.h"
#include "platform/device.h"
#include "run/host.h"
#include "run/orchestrator.h"
#include "store/storage.h"
#include "worker/worker.h"

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
  fmt::print("Built against {}. Host: {} cores, {} NUMA node(s), {} GPU(s).\n",
             device::build_summary(), host.cores, host.numa_nodes, host.gpus);
  if (!host.cuda) fmt::print("No CUDA experiment can run here: {}.\n", host.cuda_reason);
  fmt::print("\n{:<20} {:<5} {:<4} {:<4} {}\n", "knob", "where", "cpu", "cuda", "change / why not");
  for (const auto& k : knobs::catalog()) {
    // Applicability on each device the knob is meant for, for its first model and mode; the
    // missing GPU is said once above, not on every CUDA row.
    const std::string model = k.models.empty() ? "resnet50" : k.models.front();
    const Mode mode = k.modes.empty() ? Mode::infer : k.modes.front();
    std::vector<std::pair<std::string, std::string>> reasons;  // device, why
    auto cell = [&](const std::string& device) -> std::string {
      if (k.where != "both" && k.where != device) return "-";
      if (device == "cuda" && !device::built_with_cuda()) return "no";  // said above
      knobs::HostCaps as_if = host;
      if (device == "cuda" && !host.cuda) {  // what else would stop it on a GPU host
        as_if.cuda = true;
        as_if.gpus = 2;
      }
      const std::string why = knobs::not_applicable_reason(k, model, mode, as_if, device);
      if (!why.empty()) reasons.emplace_back(device, why);
      return why.empty() && (device == "cpu" || host.cuda) ? "yes" : "no";
    };
    const std::string cpu = cell("cpu"), cuda = cell("cuda");
    std::string why;
    if (reasons.size() == 1 && k.where != "both") {
      why = reasons[0].second;
    } else if (reasons.size() == 2 && reasons[0].second == reasons[1].second) {
      why = reasons[0].second;
    } else {
      for (const auto& [device, r] : reasons) why += (why.empty() ? "" : "; ") + device + ": " + r;
    }
    fmt::print("{:<20} {:<5} {:<4} {:<4} {}\n", k.id, k.where, cpu, cuda,
               why.empty() ? k.change : why);
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
  std::error_code same_error;
  if (!output.empty() && std::filesystem::equivalent(output, db_path, same_error)) {
    std::cerr << "tunebench: error: --output " << output << " is the results database " << db_path
              << ": exporting would overwrite it; give another file\n";
    return kExitBadInput;
  }
  const std::string text = exporter::export_run(db, storage::resolve_run(db, which), format);
  if (output.empty()) {
    std::cout << text;
    return 0;
  }
  std::ofstream out(output, std::ios::binary);
  out << text;
  if (!out) {
    std::cerr << "tunebench: error: cannot write " << output << ": " << std::strerror(errno)
              << "\n";
    return kExitBadInput;
  }
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

// `tunebench calibrate`: A/A runs of a suite (or stored runs), then their noise floors.
int calibrate_command(const std::string& db_path, const std::string& suite_path,
                      const std::string& from, int runs, const std::string& label,
                      double false_alarm, double power, int baseline_runs,
                      orchestrator::RunOptions run_options) {
  if (suite_path.empty() == from.empty()) {
    std::cerr << "tunebench: error: calibrate needs --suite FILE (make A/A runs) or --from "
                 "label:X|last:N (use stored runs)\n";
    return kExitBadInput;
  }
  if (!(false_alarm > 0 && false_alarm < 0.5) || !(power > 0 && power < 1)) {
    std::cerr << "tunebench: error: --false-alarm must lie in (0, 50) and --power in (0, 100) "
                 "per cent\n";
    return kExitBadInput;
  }
  std::vector<std::string> uuids;
  if (!suite_path.empty()) {
    run_options.suite_path = suite_path;
    run_options.db_path = db_path;
    run_options.label = label;
    for (int i = 0; i < runs; ++i) {
      if (!run_options.quiet) fmt::print(stderr, "[calibrate] A/A run {} of {}\n", i + 1, runs);
      const int rc = orchestrator::run(run_options);
      if (rc == kExitBadInput) return rc;
      const storage::Database db(db_path);
      const std::string uuid = *db.latest_run_uuid();
      const auto stored = db.run(uuid);
      if (stored.status != "completed") {
        std::cerr << "tunebench: error: calibration run " << uuid << " ended " << stored.status
                  << ": a noise floor needs clean runs; fix the failures and calibrate again\n";
        return 1;
      }
      uuids.push_back(uuid);
    }
  } else {
    const auto db = open_existing(db_path);
    const auto latest = db.run(storage::resolve_run(db, "latest"));
    const auto colon = from.find(':');
    const std::string kind = from.substr(0, colon),
                      value = colon == std::string::npos ? "" : from.substr(colon + 1);
    if ((kind != "label" && kind != "last") || value.empty()) {
      std::cerr << "tunebench: error: --from must be label:X or last:N, got '" << from << "'\n";
      return kExitBadInput;
    }
    for (const auto& uuid : db.run_uuids()) {
      const auto r = db.run(uuid);
      if (r.record.suite_name != latest.record.suite_name || r.status != "completed") continue;
      if (r.record.host.dump() != latest.record.host.dump() ||
          r.record.software.dump() != latest.record.software.dump()) {
        continue;
      }
      if (kind == "label" && r.record.label != value) continue;
      uuids.push_back(uuid);
    }
    if (kind == "last") {
      size_t n = 0;
      try {
        n = std::stoul(value);
      } catch (const std::exception&) {
        std::cerr << "tunebench: error: --from last:N needs a number, got '" << value << "'\n";
        return kExitBadInput;
      }
      if (uuids.size() > n) uuids.erase(uuids.begin(), uuids.end() - long(n));
    }
  }
  storage::Database db(db_path);
  try {
    const auto floors =
        check::calibrate(db, uuids, {false_alarm, power, baseline_runs}, now_iso8601());
    db.store_noise_floors(uuids.back(), floors);
    std::cout << analysis::format_floors(floors);
  } catch (const std::invalid_argument& e) {
    std::cerr << "tunebench: error: " << e.what() << "\n";
    return kExitBadInput;
  }
  return 0;
}

int merge_command(const std::string& db_path, const std::vector<std::string>& files) {
  storage::Database db(db_path);
  for (const auto& file : files) {
    const auto result = db.merge_from(file);
    fmt::print(
        "{}: imported {} run(s), {} already here, {} still running there (skipped), {} new "
        "host(s)\n",
        file, result.imported.size(), result.already_here.size(), result.still_running.size(),
        result.hosts_added);
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
  double check_false_alarm_pct = 1;
  bool check_no_store = false;
  check_cmd
      ->add_option("--false-alarm", check_false_alarm_pct,
                   "false-alarm rate in per cent for the calibrated noise-floor test")
      ->capture_default_str();
  check_cmd->add_flag("--no-store", check_no_store,
                      "do not store the findings in the database's regressions table");

  std::string calibrate_db = "results/tunebench.sqlite", calibrate_suite, calibrate_from,
              calibrate_label = "calibration";
  int calibrate_runs = 5;
  check::FloorSettings floor_settings;
  double floor_false_alarm_pct = 1, floor_power_pct = 80;
  auto* calibrate_cmd = app.add_subcommand(
      "calibrate",
      "Measure each benchmark's noise floor on this host: run a suite several times unchanged "
      "(A/A), store the run-to-run spread of every benchmark, and print the smallest slowdown "
      "`check` can detect");
  calibrate_cmd->add_option("--db", calibrate_db, "results database")->capture_default_str();
  auto* calibrate_suite_opt = calibrate_cmd->add_option(
      "--suite", calibrate_suite, "suite file to run, e.g. suites/smoke.json");
  auto* calibrate_from_opt = calibrate_cmd->add_option(
      "--from", calibrate_from,
      "use runs already stored instead of running: label:X or last:N (of the latest run's suite, "
      "host and software)");
  calibrate_suite_opt->excludes(calibrate_from_opt);
  calibrate_cmd->add_option("--runs", calibrate_runs, "A/A runs to make (at least 3)")
      ->capture_default_str()
      ->check(CLI::Range(3, 100));
  calibrate_cmd->add_option("--label", calibrate_label, "label of the calibration runs")
      ->capture_default_str();
  calibrate_cmd
      ->add_option("--false-alarm", floor_false_alarm_pct,
                   "false-alarm rate in per cent the detectable slowdown is computed for")
      ->capture_default_str();
  calibrate_cmd
      ->add_option("--power", floor_power_pct,
                   "detection probability in per cent the detectable slowdown is computed for")
      ->capture_default_str();
  calibrate_cmd
      ->add_option("--baseline-runs", floor_settings.baseline_runs,
                   "baseline window (runs) the detectable slowdown assumes")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  calibrate_cmd->add_flag("-q,--quiet", run_options.quiet,
                          "print nothing but errors and the floors");

  std::string merge_db = "results/tunebench.sqlite";
  std::vector<std::string> merge_files;
  auto* merge_cmd = app.add_subcommand(
      "merge",
      "Import the runs of other machines' databases into this one: each run once (by uuid), "
      "hosts kept apart by fingerprint; the other files are only read");
  merge_cmd->add_option("files", merge_files, "other tunebench databases")->required();
  merge_cmd->add_option("--db", merge_db, "the database to import into")->capture_default_str();

  // Hidden: stores run records (JSON Lines) as finished runs; reports/generate_history.py makes
  // its synthetic histories through it (storage::import_records).
  std::string import_db = "results/tunebench.sqlite", import_file;
  auto* import_cmd = app.add_subcommand("import", "Store run records (JSON Lines) as runs");
  import_cmd->group("");
  import_cmd->add_option("file", import_file, "run records, one JSON object a line")->required();
  import_cmd->add_option("--db", import_db, "the database to store them in")->capture_default_str();

  std::string compare_db = "results/tunebench.sqlite", compare_format = "table", compare_suite;
  std::vector<std::string> compare_runs, compare_hosts;
  auto* compare_cmd = app.add_subcommand(
      "compare",
      "Two runs side by side (B / A per benchmark with its interval): `compare RUN_A RUN_B`, or "
      "the latest runs of one suite on two machines: `compare --hosts H1 H2`");
  auto* compare_runs_opt =
      compare_cmd->add_option("runs", compare_runs, "two run uuids (or unique prefixes)")
          ->expected(2);
  auto* compare_hosts_opt =
      compare_cmd->add_option("--hosts", compare_hosts, "two hostnames (or host id prefixes)")
          ->expected(2);
  compare_runs_opt->excludes(compare_hosts_opt);
  compare_cmd->add_option("--suite", compare_suite,
                          "with --hosts: the suite (default: the newest both ran)");
  compare_cmd->add_option("--db", compare_db, "results database")->capture_default_str();
  compare_cmd->add_option("--format", compare_format, "table, md or json")
      ->check(CLI::IsMember({"table", "md", "json"}))
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
      check_options.false_alarm = check_false_alarm_pct / 100.0;
      auto db = open_existing(check_db);
      try {
        const auto report = check::check(db, check_options);
        std::cout << check::format(report, check_format);
        if (!check_no_store) {
          db.store_findings(report.run_uuid, report.baseline_uuids, report.threshold, now_iso8601(),
                            report.findings());
        }
        return report.regressed() ? 1 : 0;
      } catch (const std::invalid_argument& e) {
        std::cerr << "tunebench: error: " << e.what() << "\n";
        return kExitBadInput;
      }
    }
    if (calibrate_cmd->parsed()) {
      return calibrate_command(calibrate_db, calibrate_suite, calibrate_from, calibrate_runs,
                               calibrate_label, floor_false_alarm_pct / 100.0,
                               floor_power_pct / 100.0, floor_settings.baseline_runs, run_options);
    }
    if (merge_cmd->parsed()) return merge_command(merge_db, merge_files);
    if (import_cmd->parsed()) {
      storage::Database db(import_db);
      std::ifstream in(import_file);
      if (!in) throw storage::StorageError("cannot read " + import_file);
      fmt::print("{}: stored {} run(s)\n", import_file, storage::import_records(db, in));
      return 0;
    }
    if (compare_cmd->parsed()) {
      if (compare_runs.empty() && compare_hosts.empty()) {
        std::cerr << "tunebench: error: compare needs two runs (compare RUN_A RUN_B) or "
                     "--hosts H1 H2\n";
        return kExitBadInput;
      }
      const auto db = open_existing(compare_db);
      try {
        auto runs = compare_hosts.empty()
                        ? std::pair{compare_runs[0], compare_runs[1]}
                        : check::latest_runs_of_hosts(db, compare_hosts[0], compare_hosts[1],
                                                      compare_suite);
        std::cout << check::format_comparison(check::compare(db, runs.first, runs.second),
                                              compare_format);
        return 0;
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

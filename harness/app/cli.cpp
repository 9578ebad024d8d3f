// The command line's wiring: each subcommand's options, help texts, defaults and checks for
// CLI11, and the dispatch to its function (app/commands.h). No subcommand's work is done here.
#include "app/cli.h"

#include <CLI/CLI.hpp>
#include <functional>
#include <iostream>
#include <memory>

#include "app/commands.h"
#include "models/registry.h"
#include "platform/device.h"
#include "worker/actions/compile.h"
#include "worker/worker.h"

namespace tunebench::cli {

namespace {

// A subcommand as parsed: its CLI11 node and what runs when it was given.
struct Subcommand {
  CLI::App* app;
  std::function<int()> run;
};

// Options live as long as the lambda that runs the subcommand with them.
template <class Options>
std::shared_ptr<Options> make() {
  return std::make_shared<Options>();
}

CLI::Option* add_db(CLI::App* cmd, std::string& db, const std::string& help = "results database") {
  return cmd->add_option("--db", db, help)->capture_default_str();
}

Subcommand add_models(CLI::App& app) {
  auto o = make<ModelsOptions>();
  std::string names;
  for (const auto& n : models::model_names()) names += (names.empty() ? "" : ", ") + n;
  auto* cmd = app.add_subcommand(
      "models",
      "List the benchmark models and presets: parameters, forward FLOPs per sample, "
      "input shape and weight memory");
  cmd->add_flag("--json", o->json, "print JSON instead of a table");
  cmd->add_option("--model", o->model, "only this model (" + names + ")");
  cmd->add_option("--preset", o->preset, "only this preset of --model");
  cmd->add_option("-o,--option", o->option_pairs,
                  "override a configuration field, key=value (e.g. -o row_cap=1000000)");
  return {cmd, [o] { return models_command(*o); }};
}

Subcommand add_run(CLI::App& app, const std::string& command_line) {
  auto o = make<orchestrator::RunOptions>();
  o->command_line = command_line;
  o->db_path = kDefaultDatabase;
  auto* cmd = app.add_subcommand(
      "run",
      "Run a suite: every experiment as interleaved off/on trials in fresh worker processes, or "
      "paired (workers that each hold both arms and alternate them) where its knobs switch inside "
      "a process; a paired experiment adds workers until its interval is within ±2% or its "
      "budget_s is spent. Everything is stored in the results database");
  auto* suite = cmd->add_option(
      "--suite", o->suite_path,
      "suite file, e.g. suites/smoke.json, or the name of a suite tunebench ships (smoke)");
  auto* resume = cmd->add_option(
      "--resume", o->resume,
      "finish an interrupted run (uuid, unique prefix or 'latest'): only its missing trials run");
  suite->excludes(resume);
  auto* model = cmd->add_option(
      "--model", o->model.path,
      "instead of a suite: your own model, a TorchScript archive (torch.jit.save, with its "
      "--input), a torch.export archive (torch.export.save, .pt2: its example inputs, or "
      "--input) or a Python file (.py) with a torch.nn.Module class that has "
      "get_example_inputs() (the pypi build's Python worker runs those two); the run "
      "tries every catalog knob that can run on the CPU on it (those it does not offer are listed "
      "with the reason), with an A/A and a +3 % control, and prints the plan first");
  model->excludes(suite)->excludes(resume);
  cmd->add_option("--input", o->model.inputs,
                  "with --model: one input of its forward, per sample, as SHAPE:DTYPE "
                  "(3x224x224:float32), or for integers SHAPE:DTYPE:HIGH or SHAPE:DTYPE:LOW:HIGH "
                  "(128:int64:50257: token ids below 50257); once per input, in order; for a "
                  ".pt2, in place of the example inputs it holds")
      ->needs(model);
  cmd->add_option("--class", o->model.model_class,
                  "with a Python file: the class (or function) that makes the module, where the "
                  "file has more than one with get_example_inputs()")
      ->needs(model);
  cmd->add_option_function<std::string>(
         "--mode",
         [o](const std::string& mode) {
           o->model.mode = mode == "train" ? Mode::train : Mode::infer;
         },
         "with --model: infer (default) or train (the loss is the sum of its outputs, or a "
         "Python module's compute_loss(output))")
      ->check(CLI::IsMember({"infer", "train"}))
      ->needs(model);
  cmd->add_option("--batch", o->model.batch,
                  "with --model: samples per step, the inputs' first dimension (default 8)")
      ->check(CLI::PositiveNumber)
      ->needs(model);
  cmd->add_flag("--dry-run", o->dry_run,
                "print the plan (what would run, what is not applicable and why) and stop: "
                "nothing is run or written");
  add_db(cmd, o->db_path);
  cmd->add_option("--label", o->label, "a label for the run, e.g. nightly");
  cmd->add_option("--filter", o->filter,
                  "run only experiments whose name matches this regular expression");
  cmd->add_option("--budget", o->budget_s,
                  "seconds for the whole run: every planned trial runs (the controls first, "
                  "sampling on within their own budget_s whatever this says), then the time left "
                  "goes two workers at a time to the paired experiments whose verdict (helps, "
                  "hurts, no effect beyond ±2%) is still open, the one most likely to be decided "
                  "per second first, until the budget is spent or every verdict is decided within "
                  "±2%; kept with the run, so --resume goes on with it. Default: no run budget, "
                  "each experiment samples on within its own budget_s and max_workers")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--fit-plan", o->fit_plan,
                "with --budget: when the planned trials, at the pace their first tenth shows, "
                "would end beyond the budget, run fewer planned workers of each experiment (at "
                "least 4 each) so that they end within it; said, stored and kept by --resume. "
                "Without it every planned trial runs whatever the budget, and that is said");
  cmd->add_option("--wait-quiet", o->wait_quiet_s,
                  "seconds: before the run starts, wait up to this long until the host is quiet "
                  "(some task waited for a CPU under 10% of the last 10 s, /proc/pressure/cpu), "
                  "e.g. right after a build; how long it waited is said and stored")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--controls-again-after", o->controls_again_after_s,
                  "seconds: a run that has taken at least this long runs its controls (A/A and "
                  "positive) once more at the end, sampling on as at the start (planned workers, "
                  "then until settled within their own budget_s), so that they and the run's "
                  "certification cover the whole night, not only its start; the end's own "
                  "intervals are printed and stored with the run")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option_function<std::string>(
         "--ranks", [o](const std::string& how) { o->ranks_over_srun = how == "srun"; },
         "where the ranks of ddp_scaling / ddp_no_sync trials run: 'local' (default: one per core "
         "group of this host) or 'srun' (inside a Slurm allocation: each rank a job step on the "
         "allocation's nodes, one rank per task for \"ddp_scaling\": true, meeting in a TCPStore "
         "on "
         "the first node; run it from the batch script, see ci/slurm/)")
      ->check(CLI::IsMember({"local", "srun"}));
  cmd->add_flag("--large", o->large,
                fmt::format("run a suite of more than {} trials (refused without it, with its "
                            "size and a lower bound of its duration)",
                            orchestrator::kLargeRunTrials));
  cmd->add_flag("-q,--quiet", o->quiet, "print nothing but errors");
  return {cmd, [o] { return run_command(*o); }};
}

Subcommand add_tune(CLI::App& app, const std::string& command_line) {
  auto o = make<orchestrator::TuneOptions>();
  o->run.command_line = command_line;
  o->run.db_path = kDefaultDatabase;
  auto* cmd = app.add_subcommand(
      "tune",
      "What to set for one model on this host: screens every knob that can run on the CPU "
      "(paired, with an A/A and a +3 % control), adds the ones that help one at a time, best "
      "first, each measured against the configuration so far (kept only where it still helps), "
      "then measures the configuration against the defaults and against the best knob alone. "
      "Prints the ladder, the recommendation with its intervals and how to apply it (launch "
      "line, Python and C++), and stores all of it");
  cmd->add_option("--model", o->run.model.path,
                  "your model: a TorchScript archive (torch.jit.save, with its --input), a "
                  "torch.export archive (torch.export.save, .pt2: its example inputs, or --input) "
                  "or a Python file (.py) with a torch.nn.Module class that has "
                  "get_example_inputs() (these two on the pypi build), or a built-in model "
                  "(resnet50, gpt, dlrm: see tunebench models)")
      ->required();
  cmd->add_option("--class", o->run.model.model_class,
                  "with a Python file: the class (or function) that makes the module, where the "
                  "file has more than one with get_example_inputs()");
  cmd->add_option("--preset", o->run.model.preset,
                  "with a built-in model: its preset (default tiny)");
  cmd->add_option("--input", o->run.model.inputs,
                  "with a file: one input of its forward, per sample, as SHAPE:DTYPE "
                  "(3x224x224:float32), or for integers SHAPE:DTYPE:HIGH or SHAPE:DTYPE:LOW:HIGH; "
                  "once per input, in order; for a .pt2, in place of the example inputs it holds");
  cmd->add_option_function<std::string>(
         "--mode",
         [o](const std::string& mode) {
           o->run.model.mode = mode == "train" ? Mode::train : Mode::infer;
         },
         "infer (default) or train (the loss is the sum of its outputs, or a Python module's "
         "compute_loss(output))")
      ->check(CLI::IsMember({"infer", "train"}));
  cmd->add_option("--batch", o->run.model.batch,
                  "samples per step, the inputs' first dimension (default 8)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--budget", o->budget_s,
                  "seconds for the whole of it: each stage samples on towards ±2 % within its "
                  "share; the planned workers of each stage run whatever the budget, unless "
                  "--fit-plan")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--fit-plan", o->run.fit_plan,
                "run fewer planned workers in a stage whose planned trials would end beyond its "
                "share of the budget (at least 4 each; as run --fit-plan)");
  cmd->add_option("--knobs", o->knobs,
                  "screen only these catalog knobs (comma-separated: amp,channels_last), where "
                  "you already know which you would set; default: every knob the model offers "
                  "(tunebench list). The A/A and +3 % controls are screened either way")
      ->delimiter(',');
  add_db(cmd, o->run.db_path);
  cmd->add_flag("-q,--quiet", o->run.quiet, "print the recommendation and errors only");
  return {cmd, [o] { return tune_command(*o); }};
}

Subcommand add_worker(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "worker",
      "Internal: run one trial (or a paired trial: both arms in one process, worker/paired.h) "
      "given as JSON on stdin and print its result as JSON");
  return {cmd, [] { return worker::main_worker(); }};
}

Subcommand add_twin_request(CLI::App& app) {
  auto dir = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand(
      "twin-request",
      "Internal: write the C++ model's tensors, batch and target of the trial given as JSON on "
      "stdin into a folder, for the Python worker (models/python/worker.py)");
  cmd->add_option("--out", *dir, "the folder to write")->required();
  return {cmd, [dir] { return compile_forward::main_twin_request(*dir); }};
}

Subcommand add_show(CLI::App& app) {
  auto o = make<ShowOptions>();
  auto* cmd = app.add_subcommand(
      "show",
      "Show a run at a glance: one line per effect with its interval and verdict and the claim "
      "with its sources, grouped by verdict; the controls; what was not applicable. --verbose: "
      "per experiment the arms' medians and spread and the evidence that the settings took "
      "effect. Given a tuning's id (what `tunebench tune` stored), prints its recommendation "
      "again: the ladder, the configuration against the defaults, how to apply it, and whether "
      "its controls certify it");
  cmd->add_option("run", o->run,
                  "run uuid (or a unique prefix) or 'latest'; or a tuning's uuid (or prefix)")
      ->capture_default_str();
  add_db(cmd, o->db);
  cmd->add_flag("--json", o->json, "print JSON");
  cmd->add_flag("-v,--verbose", o->verbose,
                "every experiment whole: arms, medians, spreads, evidence, notes");
  return {cmd, [o] { return show_command(*o); }};
}

Subcommand add_list(CLI::App& app) {
  auto suites_dir = std::make_shared<std::string>("suites");
  auto* cmd = app.add_subcommand(
      "list",
      "List the catalog's knobs (whether each applies on this host and build, and why not) "
      "and the suites with their experiments");
  cmd->add_option("--suites", *suites_dir, "folder of suite files")->capture_default_str();
  auto format = std::make_shared<std::string>("table");
  cmd->add_option("--format", *format,
                  "table: the knobs on this host and the suites; md: the knob reference (every "
                  "knob with its change, claim and sources, the same on every host; docs/knobs.md)")
      ->check(CLI::IsMember({"table", "md"}))
      ->capture_default_str();
  return {cmd, [suites_dir, format] { return list_command(*suites_dir, *format); }};
}

Subcommand add_env(CLI::App& app) {
  auto as_json = std::make_shared<bool>(false);
  auto* cmd = app.add_subcommand(
      "env", "Show this host's and this build's fingerprints and the host's state");
  cmd->add_flag("--json", *as_json, "print JSON");
  return {cmd, [as_json] { return env_command(*as_json); }};
}

Subcommand add_export(CLI::App& app) {
  auto o = make<ExportOptions>();
  auto* cmd = app.add_subcommand(
      "export",
      "Export a run's samples as JSON, CSV, or Google Benchmark's JSON (for its compare.py); "
      "runs whole as run records (--format records) that `tunebench import` reads back on "
      "another machine: hosts, software, trials and samples; or every stored row the report "
      "reads (--format tables: one JSON document, each table's rows with every column by name)");
  cmd->add_option("run", o->run,
                  "run uuid (or a unique prefix) or 'latest'; with --format records also 'all' "
                  "(every finished run)")
      ->capture_default_str();
  add_db(cmd, o->db);
  cmd->add_option("--format", o->format,
                  "json, csv or gbench (one run), records (JSON Lines for `import`), or tables "
                  "(every run: the rows `tunebench report` draws)")
      ->check(CLI::IsMember({"json", "csv", "gbench", "records", "tables"}))
      ->capture_default_str();
  cmd->add_option("-o,--output", o->output, "write to this file instead of stdout");
  return {cmd, [o] { return export_command(*o); }};
}

Subcommand add_check(CLI::App& app, const std::string& command_line) {
  auto o = make<CheckOptions>();
  o->command_line = command_line;
  auto* cmd = app.add_subcommand(
      "check",
      "Check a run for regressions. Stage 1 compares each benchmark with a baseline window of "
      "earlier runs of the same suite on the same host and software, on the quieter of its "
      "absolute and reference-relative histories, and flags leniently; stage 2 (--confirm-with) "
      "measures every flagged benchmark again the same night as a paired A/B of the last-good "
      "build against this one and decides: regression, no regression beyond the threshold, or "
      "unknown. Without a calibrated noise floor (tunebench calibrate) and without stage 2, a "
      "slowdown is unknown (unconfirmed), never a regression: a slow night cannot be told from "
      "a slow build. Exit 0 no regression, 1 regression, 2 usage or data error, 3 unknown");
  add_db(cmd, o->db);
  cmd->add_option("--run", o->check.run, "run uuid (or a unique prefix) or 'latest'")
      ->capture_default_str();
  cmd->add_option("--baseline", o->check.baseline, "last:N, run:ID or label:X")
      ->capture_default_str();
  cmd->add_option("--threshold", o->threshold_pct,
                  "smallest slowdown in per cent that counts as a regression")
      ->capture_default_str();
  cmd->add_flag("--across-software", o->check.across_software,
                "compare with runs of other software too (did upgrading LibTorch slow us down?)");
  cmd->add_option("--format", o->format,
                  "table (what --verbose prints), md, json or junit; default: at a glance, one "
                  "line per benchmark and finding with its interval, grouped by status")
      ->check(CLI::IsMember({"table", "md", "json", "junit"}));
  cmd->add_flag("-v,--verbose", o->verbose,
                "the whole table: each benchmark's basis, flag, noise floor and detectable "
                "slowdown, and stage 2's A/B runs");
  cmd->add_option("--false-alarm", o->false_alarm_pct,
                  "false alarms per run in per cent: split over the benchmarks compared by "
                  "stage 1's calibrated noise-floor test, and over stage 2's A/Bs and their looks "
                  "(each A/B looks at 16, 32, 64, ... workers and its last, stops at the first "
                  "look that decides, and decides on intervals at 1 - 2*rate/A/Bs/looks: one "
                  "A/B at 1 % with 7 looks decides at 99.71 %)")
      ->capture_default_str();
  cmd->add_flag("--no-store", o->no_store,
                "do not store the findings in the database's regressions table");
  cmd->add_option("--flag-level", o->flag_level_pct,
                  "stage 1: one-sided false-alarm level in per cent at which a benchmark is "
                  "flagged for stage 2 (lenient: stage 2 decides)")
      ->check(CLI::Range(0.1, 49.9))
      ->capture_default_str();
  cmd->add_flag("--confirm-all", o->check.flag_all,
                "flag every benchmark that has a baseline, so that stage 2 measures each against "
                "the last-good build (a release gate)");
  cmd->add_option("--confirm-with", o->confirm_with,
                  "stage 2: the kept last-good tunebench executable; every flagged benchmark runs "
                  "as a paired A/B of it against this build, stored as a run labelled 'confirm'")
      ->check(CLI::ExistingFile);
  cmd->add_option("--confirm-budget", o->confirm_budget_s,
                  "stage 2: seconds of workers per flagged benchmark before it answers 'unknown'")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--confirm-workers", o->confirm_workers,
                  "stage 2: resident pairs planned per flagged benchmark before sampling on")
      ->check(CLI::Range(3, 64))
      ->capture_default_str();
  cmd->add_flag("-q,--quiet", o->quiet, "stage 2: print no progress");
  return {cmd, [o] { return check_command(*o); }};
}

Subcommand add_calibrate(CLI::App& app, const std::string& command_line) {
  auto o = make<CalibrateOptions>();
  o->run.command_line = command_line;
  auto* cmd = app.add_subcommand(
      "calibrate",
      "Measure each benchmark's noise floor on this host: run a suite several times unchanged "
      "(A/A), store the run-to-run spread of every benchmark, and print the smallest slowdown "
      "`check` can detect");
  add_db(cmd, o->db);
  auto* suite = cmd->add_option("--suite", o->suite, "suite file to run, e.g. suites/smoke.json");
  auto* from = cmd->add_option(
      "--from", o->from,
      "use runs already stored instead of running: label:X or last:N (of the latest run's suite, "
      "host and software)");
  suite->excludes(from);
  cmd->add_option("--runs", o->runs, "A/A runs to make (at least 3)")
      ->capture_default_str()
      ->check(CLI::Range(3, 100));
  cmd->add_option("--label", o->label, "label of the calibration runs")->capture_default_str();
  cmd->add_option("--false-alarm", o->false_alarm_pct,
                  "false-alarm rate in per cent the detectable slowdown is computed for")
      ->capture_default_str();
  cmd->add_option("--power", o->power_pct,
                  "detection probability in per cent the detectable slowdown is computed for")
      ->capture_default_str();
  cmd->add_option("--baseline-runs", o->floors.baseline_runs,
                  "baseline window (runs) the detectable slowdown assumes")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  cmd->add_flag("-q,--quiet", o->run.quiet, "print nothing but errors and the floors");
  return {cmd, [o] { return calibrate_command(*o); }};
}

Subcommand add_merge(CLI::App& app) {
  auto o = make<MergeOptions>();
  auto* cmd = app.add_subcommand(
      "merge",
      "Import the runs of other machines' databases into this one: each run once (by uuid), "
      "hosts kept apart by fingerprint; the other files are only read");
  cmd->add_option("files", o->files, "other tunebench databases")->required();
  add_db(cmd, o->db, "the database to import into");
  return {cmd, [o] { return merge_command(*o); }};
}

Subcommand add_import(CLI::App& app) {
  auto o = make<ImportOptions>();
  auto* cmd = app.add_subcommand(
      "import",
      "Store the runs of a run-records file (`export --format records`, e.g. "
      "results/published/) in a database: each run once (by uuid), with its host, software, "
      "trials and samples, its effects computed again; a malformed file or one from a newer "
      "tunebench stores nothing");
  cmd->add_option("file", o->file, "run records, one JSON object a line")->required();
  add_db(cmd, o->db, "the database to store them in (made if missing)");
  return {cmd, [o] { return import_command(*o); }};
}

Subcommand add_compare(CLI::App& app) {
  auto o = make<CompareOptions>();
  auto* cmd = app.add_subcommand(
      "compare",
      "Two runs side by side (B / A per benchmark with its interval, grouped by verdict; "
      "--verbose: a table with the medians): `compare RUN_A RUN_B`; or "
      "machines for procurement: `compare --hosts H1 H2 [H3 ...]`, each host's latest run of one "
      "suite, per workload throughput per host, per core and per price with intervals, unpaired "
      "ratios, the samples that would separate the hosts, and a ranking");
  auto* runs = cmd->add_option("runs", o->runs, "two run uuids (or unique prefixes)")->expected(2);
  auto* hosts = cmd->add_option("--hosts", o->hosts, "two or more hostnames (or host id prefixes)")
                    ->expected(1, -1);
  runs->excludes(hosts);
  cmd->add_option("--suite", o->suite, "with --hosts: the suite (default: the newest all ran)");
  cmd->add_option("--prices", o->prices,
                  "with --hosts: JSON object of hostname to price per hour (any currency), for "
                  "items per currency unit and cost per million items");
  add_db(cmd, o->db);
  cmd->add_option("--format", o->format,
                  "table (what --verbose prints), md or json; default: two runs at a glance, one "
                  "line per benchmark with its interval, grouped by verdict (--hosts: the table)")
      ->check(CLI::IsMember({"table", "md", "json"}));
  cmd->add_flag("-v,--verbose", o->verbose,
                "two runs: the whole table, with each benchmark's medians");
  return {cmd, [o] { return compare_command(*o); }};
}

Subcommand add_report(CLI::App& app) {
  auto o = make<ReportOptions>();
  auto* cmd = app.add_subcommand(
      "report",
      "Render the HTML report, Markdown summary and PNGs from the database (reports/render.py)");
  add_db(cmd, o->db);
  cmd->add_option("--out", o->out, "output folder")->capture_default_str();
  cmd->add_option("--timeout", o->timeout_s,
                  "seconds the renderer (reports/render.py) may take; after them it is stopped "
                  "with every process it started, and that is said")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--run", o->run, "run uuid (or a unique prefix) or 'latest'")
      ->capture_default_str();
  cmd->add_option("--hosts", o->hosts,
                  "hostnames to show and compare side by side (default: every host with runs)");
  cmd->add_option("--prices", o->prices,
                  "JSON object of hostname to price per hour, for throughput per price");
  return {cmd, [o] { return report_command(*o); }};
}

// Runs the subcommand that was given; errors that escape it become a message and an exit code:
// storage and model errors are bad input (2), anything else a failure (1).
int dispatch(const std::vector<Subcommand>& subcommands) {
  try {
    for (const auto& s : subcommands) {
      if (s.app->parsed()) return s.run();
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

}  // namespace

int run(int argc, char** argv) {
  CLI::App app{
      "tunebench: PyTorch performance-tuning advice as controlled on/off experiments.\n"
      "Built against " +
      device::build_summary() + "."};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("tunebench 0.1.0, ") + device::build_summary());
  std::string command_line;
  for (int i = 0; i < argc; ++i) command_line += (i ? " " : "") + std::string(argv[i]);

  const std::vector<Subcommand> subcommands{add_models(app),
                                            add_run(app, command_line),
                                            add_tune(app, command_line),
                                            add_worker(app),
                                            add_twin_request(app),
                                            add_show(app),
                                            add_list(app),
                                            add_env(app),
                                            add_export(app),
                                            add_check(app, command_line),
                                            add_calibrate(app, command_line),
                                            add_merge(app),
                                            add_import(app),
                                            add_compare(app),
                                            add_report(app)};
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
  return dispatch(subcommands);
}

}  // namespace tunebench::cli

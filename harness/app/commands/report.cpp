// `tunebench report`: computes the hosts side by side (analysis/hosts.h) into OUT/hosts.json and
// exports the stored rows the report reads into OUT/tables.json (`export --format tables`), then
// runs reports/render.py on both with the project's Python (execve, no shell), which draws them,
// and returns its exit status; its output passes straight through. The Python side reads no
// database: what it shows is what these two files hold.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <stdexcept>
#include <thread>

#include "analysis/hosts.h"
#include "analysis/reporter.h"
#include "app/commands.h"
#include "core/build_paths.h"

namespace tunebench::cli {

namespace {

std::vector<std::string> render_arguments(const ReportOptions& options) {
  std::vector<std::string> args{
      "--tables", options.out + "/tables.json", "--out", options.out, "--run", options.run};
  if (!options.hosts.empty()) {
    args.push_back("--hosts");
    args.insert(args.end(), options.hosts.begin(), options.hosts.end());
  }
  return args;
}

// The comparison of the report's hosts (every host with runs unless --hosts), as `compare --hosts
// --format json` prints it, or {"unavailable": why} when there is nothing to compare. A database
// that is missing or not tunebench's is refused by the export of its tables, after this.
// Throws std::invalid_argument for a bad prices file.
nlohmann::json host_comparison(const ReportOptions& options) {
  hosts::Options host_options;
  if (!options.prices.empty()) host_options.prices = hosts::load_prices(options.prices);
  std::error_code ec;
  if (!std::filesystem::exists(options.db, ec) || std::filesystem::file_size(options.db, ec) == 0)
    return {{"unavailable", "no database"}};
  try {
    const auto db = open_existing(options.db);
    host_options.hosts = options.hosts.empty() ? hosts::hosts_with_runs(db) : options.hosts;
    if (host_options.hosts.empty()) return {{"unavailable", "no finished run"}};
    host_options.min_hosts = 1;
    const auto& json = reporters::reporter("json", reporters::Output::hosts);
    return nlohmann::json::parse(json.hosts(hosts::compare_hosts(db, host_options)));
  } catch (const storage::StorageError& e) {
    return {{"unavailable", e.what()}};
  } catch (const std::invalid_argument& e) {
    return {{"unavailable", e.what()}};
  }
}

}  // namespace

int report_command(const ReportOptions& options) {
  const std::string& source = build_paths::source_dir();
  const std::string python = build_paths::report_python();
  if (access(python.c_str(), X_OK) != 0) {
    std::cerr << "tunebench: error: no Python for the report at " << python
              << " (run ci/setup.sh, or set TUNEBENCH_PYTHON to a Python with matplotlib)\n";
    return kExitBadInput;
  }
  const std::string hosts_json = options.out + "/hosts.json";
  try {
    const auto comparison = host_comparison(options);
    std::error_code ec;
    std::filesystem::create_directories(options.out, ec);
    std::ofstream file(hosts_json);
    file << comparison.dump(2) << "\n";
    if (!file.flush()) {
      std::cerr << "tunebench: error: --out " << options.out << ": cannot write " << hosts_json
                << " (check that the folder is writable)\n";
      return kExitBadInput;
    }
  } catch (const std::invalid_argument& e) {
    std::cerr << "tunebench: error: " << e.what() << "\n";
    return kExitBadInput;
  }
  ExportOptions tables;
  tables.db = options.db;
  tables.format = "tables";
  tables.output = options.out + "/tables.json";
  if (const int status = export_command(tables); status != 0) return status;
  std::vector<std::string> args{python, source + "/reports/render.py"};
  auto render_args = render_arguments(options);
  render_args.insert(render_args.end(), {"--hosts-json", hosts_json});
  args.insert(args.end(), render_args.begin(), render_args.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  // In a process group of its own, with a deadline: a renderer that hangs (a font cache being
  // built on a read-only home, a headless browser that never answers) is stopped with whatever
  // it started, and said, instead of hanging the command.
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    setpgid(0, 0);
    execve(argv[0], argv.data(), environ);
    _exit(127);
  }
  setpgid(pid, pid);
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(int64_t(1000 * options.timeout_s));
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
      std::cerr << "tunebench: error: the report's renderer (reports/render.py) did not return "
                   "within "
                << options.timeout_s
                << " s (--timeout); it was stopped with every process it started. " << options.out
                << " may hold part of the report; run it again, with a larger --timeout if "
                   "the database is large\n";
      return 1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

}  // namespace tunebench::cli

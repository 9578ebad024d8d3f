// `tunebench report`: runs reports/render.py with the project's Python (execve, no shell) and
// returns its exit status; its output passes straight through.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <stdexcept>

#include "app/commands.h"
#include "core/build_paths.h"

namespace tunebench::cli {

namespace {

std::vector<std::string> render_arguments(const ReportOptions& options) {
  std::vector<std::string> args{"--db", options.db, "--out", options.out, "--run", options.run};
  if (!options.hosts.empty()) {
    args.push_back("--hosts");
    args.insert(args.end(), options.hosts.begin(), options.hosts.end());
  }
  if (!options.prices.empty()) args.insert(args.end(), {"--prices", options.prices});
  return args;
}

}  // namespace

int report_command(const ReportOptions& options) {
  const std::string& source = build_paths::source_dir();
  const char* from_env = std::getenv("TUNEBENCH_PYTHON");
  const std::string python = from_env ? from_env : source + "/.venv/bin/python";
  if (access(python.c_str(), X_OK) != 0) {
    std::cerr << "tunebench: error: no Python for the report at " << python
              << " (run ci/setup.sh, or set TUNEBENCH_PYTHON)\n";
    return kExitBadInput;
  }
  std::vector<std::string> args{python, source + "/reports/render.py"};
  const auto render_args = render_arguments(options);
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

}  // namespace tunebench::cli

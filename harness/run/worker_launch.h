// How the run starts a worker: its command line (Launch: a launcher, the executable through the
// run's launch link, `worker`) and its environment (run/orchestrator.h: worker_environment), from
// the process setup of its trial's knobs. Private to the orchestrator's files in harness/run/.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/records.h"
#include "knobs/knob.h"
#include "run/launch_paths.h"
#include "run/orchestrator.h"
#include "run/slurm.h"

namespace tunebench::orchestrator {

// How this run starts workers: the executable (its real path: under a launcher such as numactl,
// or through a link, /proc/self/exe would name another program), the CPUs and the GPUs here.
struct Launch {
  std::string resolved_exe;
  std::vector<int> cpus;
  int gpus = 0;
  std::optional<slurm::Allocation> slurm;  // --ranks srun: ranks are job steps of this allocation
  // Every worker started here is started through a link of one length (run/launch_paths.h): the
  // length of the path a program is started by biases its timing, so both arms of every
  // experiment (a launcher's such as numactl, a software A/B's) start theirs alike.
  std::shared_ptr<LaunchPaths> links = std::make_shared<LaunchPaths>();
  // worker_build names another build's executable (a software A/B), or "self": this run's.
  const std::string& executable(const knobs::ProcessSetup& setup) const {
    return setup.executable.empty() || setup.executable == "self" ? resolved_exe : setup.executable;
  }
  // `by_path`: started by another program (srun, on whatever node), for which a link here would
  // name nothing there. `fresh`: from a copy of its own (LaunchPaths::fresh_copy), for a pair
  // whose arms run two executables; its caller removes it (the path follows the launcher's argv).
  Command command(const knobs::ProcessSetup& setup, const std::string& input, bool by_path = false,
                  bool fresh = false) const {
    std::vector<std::string> argv = setup.launcher;
    const std::string& named = executable(setup);
    // The Python worker's script goes by its own path: Python finds its modules beside it.
    const bool script = std::filesystem::path(named).extension() == ".py";
    argv.push_back(by_path || script ? named
                   : fresh           ? links->fresh_copy(named)
                                     : links->path_for(named));
    argv.push_back("worker");
    auto env = worker_environment(setup);
    // The Python worker asks this build for the C++ model's tensors (tunebench twin-request).
    env["TUNEBENCH_EXECUTABLE"] = resolved_exe;
    return {argv, env, input};
  }
};

// How the worker of trial `t` starts: its knobs' process setup, in the Python worker where its
// model is a Python file's (models/python_model_config.h) or worker_build says so.
knobs::ProcessSetup setup_of(const TrialSpec& t);

// The trial as its worker is sent it (knobs::settings_for_worker): the orchestrator keeps the
// arm's own settings, stores them and checks the worker's evidence against them.
TrialSpec as_sent(TrialSpec t);

}  // namespace tunebench::orchestrator

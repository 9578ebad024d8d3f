// A worker's environment and the setup it starts with (run/worker_launch.h, run/orchestrator.h).
#include "run/worker_launch.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "core/liveness.h"
#include "knobs/knobs.h"
#include "models/registry.h"

namespace tunebench::orchestrator {

std::string slowdown_stand_in(const std::string& value) {
  // Entries as worker/trial.cpp's injected_slowdown reads them: split at ',', the percentage
  // after each entry's last '='.
  std::string out = value;
  size_t begin = 0;
  while (begin <= out.size()) {
    const size_t end = std::min(out.find(',', begin), out.size());
    const size_t eq = out.rfind('=', end == 0 ? 0 : end - 1);
    if (eq != std::string::npos && eq >= begin) {
      for (size_t i = eq + 1; i < end; ++i) {
        if (out[i] >= '1' && out[i] <= '9') out[i] = '0';
      }
    }
    begin = end + 1;
  }
  return out;
}

std::map<std::string, std::string> worker_environment(const knobs::ProcessSetup& setup) {
  std::map<std::string, std::string> env;
  for (const char* name : {"PATH", "HOME", "LANG", "TMPDIR", "LD_LIBRARY_PATH",
                           // Which GPUs the user gave this run, in which order: the host's
                           // fingerprint counts and names the visible ones, so must the workers.
                           "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER"}) {
    if (const char* v = std::getenv(name)) env[name] = v;
  }
  // NCCL's own settings (interfaces, debug, blocking waits) and Gloo's interface reach the ranks.
  for (char** e = environ; *e; ++e) {
    const std::string entry = *e;
    const size_t eq = entry.find('=');
    if (eq == std::string::npos) continue;
    const std::string name = entry.substr(0, eq);
    // The compile knob's package cache (worker/actions/compile.cpp) reaches the workers too.
    if (name.rfind("NCCL_", 0) == 0 || name.rfind("TORCH_NCCL_", 0) == 0 ||
        name == "GLOO_SOCKET_IFNAME" || name == "TUNEBENCH_COMPILE_CACHE" ||
        name == "TUNEBENCH_CACHE") {
      env[name] = entry.substr(eq + 1);
    }
  }
  // The regression studies' slowed build (worker/trial.h, step_slowdown): this build's workers
  // only; another build named by worker_build is the unslowed one it is compared with. That one
  // gets a stand-in of the same length that slows nothing (every percentage's digits zeroed): the
  // environment sits on the stack above a worker's first frame, and the size of what lies there
  // moved a benchmark by up to 9 % (the launch path's length, run/launch_paths.h), so both arms
  // of a study's A/B carry environments of one size.
  if (const char* v = std::getenv("TUNEBENCH_TEST_SLOWDOWN")) {
    const bool this_build = setup.executable.empty() || setup.executable == "self";
    env["TUNEBENCH_TEST_SLOWDOWN"] = this_build ? v : slowdown_stand_in(v);
  }
  if (!env.count("PATH")) env["PATH"] = "/usr/bin:/bin";
  // Whose worker it is, for the next run to find it should it outlive this process (one length
  // for every run: core/liveness.h).
  static const std::string tag = liveness::worker_tag(liveness::this_process());
  env[liveness::kWorkerTagVariable] = tag;
  for (const auto& [k, v] : setup.env) env[k] = v;
  std::string preload;
  for (const auto& lib : setup.preload) preload += (preload.empty() ? "" : ":") + lib;
  if (!preload.empty()) env["LD_PRELOAD"] = preload;
  return env;
}

knobs::ProcessSetup setup_of(const TrialSpec& t) {
  knobs::ProcessSetup setup = knobs::process_setup(t.settings);
  if (models::descriptor(t.model.model).python && setup.executable.empty()) {
    knobs::run_in_python_worker(setup);
  }
  return setup;
}

TrialSpec as_sent(TrialSpec t) {
  t.settings = knobs::settings_for_worker(t.settings);
  return t;
}

}  // namespace tunebench::orchestrator

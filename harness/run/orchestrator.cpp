#include "run/orchestrator.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <numeric>
#include <optional>
#include <random>
#include <set>

#include "analysis/detect.h"
#include "analysis/effects.h"
#include "core/liveness.h"
#include "core/multiproc.h"
#include "knobs/evidence.h"
#include "knobs/knobs.h"
#include "models/registry.h"
#include "models/torchscript.h"
#include "plan/plan.h"
#include "plan/suite.h"
#include "run/host.h"
#include "run/launch_paths.h"
#include "run/leftovers.h"
#include "run/python_model.h"
#include "run/resident.h"
#include "run/slurm.h"
#include "store/storage.h"
#include "worker/heap_offset.h"

namespace tunebench::orchestrator {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

std::string new_uuid() {
  std::random_device rd;
  std::mt19937_64 gen((uint64_t(rd()) << 32) ^ rd() ^
                      uint64_t(Clock::now().time_since_epoch().count()));
  uint64_t hi = gen(), lo = gen();
  hi = (hi & ~0xF000ULL) | 0x4000ULL;              // version 4
  lo = (lo & ~(0xC0ULL << 56)) | (0x80ULL << 56);  // variant 1
  const std::string h = fmt::format("{:016x}{:016x}", hi, lo);
  return h.substr(0, 8) + "-" + h.substr(8, 4) + "-" + h.substr(12, 4) + "-" + h.substr(16, 4) +
         "-" + h.substr(20);
}

namespace {

std::string duration(double s) {
  if (s < 60) return fmt::format("{:.0f}s", s);
  return fmt::format("{}m{:02d}s", int(s) / 60, int(s) % 60);
}

TrialResult failed_result(const WorkerOutcome& w, const std::string& why) {
  TrialResult r;
  r.status = "failed";
  r.error = why;
  r.worker_stderr = w.err_tail;
  return r;
}

// Why what the worker left is no result ("" when it printed one: then `parsed` holds it).
std::string unusable(const WorkerOutcome& w, double timeout_s, json& parsed) {
  if (w.timed_out)
    return fmt::format("timed out after {:.0f} s; its process group was killed", timeout_s);
  parsed = json::parse(w.out, nullptr, /*allow_exceptions=*/false);
  if (w.signal) {
    return fmt::format("worker killed by signal {} ({}){}", w.signal, strsignal(w.signal),
                       w.signal == SIGKILL ? ": killed from outside, e.g. by the kernel's "
                                             "out-of-memory killer"
                                           : "");
  }
  if (parsed.is_discarded() || !parsed.is_object()) {
    return fmt::format("worker exited with code {} and printed no result{}", w.exit_code,
                       w.out.empty() ? "" : ": " + w.out.substr(0, 200));
  }
  return "";
}

TrialResult interpret(const WorkerOutcome& w, const TrialSpec& spec) {
  json parsed;
  if (const std::string why = unusable(w, spec.timeout_s, parsed); !why.empty()) {
    return failed_result(w, why);
  }
  TrialResult r;
  try {
    r = trial_result_from_json(parsed);
  } catch (const std::exception& e) {
    return failed_result(w, std::string("worker printed a malformed result: ") + e.what());
  }
  r.worker_stderr = w.err_tail;
  if (w.exit_code != 0 && r.status == "ok")
    return failed_result(w, fmt::format("worker exited with code {}", w.exit_code));
  return r;
}

// A paired trial's one worker gives both arms' results (OFF, ON): each as a trial alone would
// give it, its samples with their blocks; when the worker failed, both fail alike.
std::vector<TrialResult> interpret_paired(const WorkerOutcome& w, const TrialSpec& off) {
  json parsed;
  if (const std::string why = unusable(w, off.timeout_s, parsed); !why.empty()) {
    return {failed_result(w, why), failed_result(w, why)};
  }
  PairedResult p;
  try {
    p = paired_result_from_json(parsed);
  } catch (const std::exception& e) {
    const std::string why = std::string("worker printed a malformed result: ") + e.what();
    return {failed_result(w, why), failed_result(w, why)};
  }
  if (p.status != "ok" || w.exit_code != 0) {
    const std::string why =
        p.status != "ok" ? p.error : fmt::format("worker exited with code {}", w.exit_code);
    return {failed_result(w, why), failed_result(w, why)};
  }
  p.off.worker_stderr = p.on.worker_stderr = w.err_tail;
  return {std::move(p.off), std::move(p.on)};
}

// Its evidence contradicts its settings: the result is invalid, with every contradiction. A
// worker started through a launch link (run/launch_paths.h) names the build the link stands for.
void check_evidence(const TrialSpec& spec, Mode mode, TrialResult& r, const LaunchPaths& links) {
  if (auto it = r.evidence.find(knobs::evidence::kExecutable);
      it != r.evidence.end() && it->is_string()) {
    *it = links.original_of(it->get<std::string>());
  }
  if (r.status != "ok") return;
  const auto wrong = knobs::check_evidence(spec.settings, mode, r.evidence);
  if (wrong.empty()) return;
  r.status = "invalid";
  for (const auto& why : wrong) r.error += (r.error.empty() ? "" : "; ") + why;
}

// Bytes of memory the kernel says can be had now without swapping (MemAvailable).
double available_memory_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  double kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit) {
    if (key == "MemAvailable:") return kb * 1024;
  }
  return 0;
}

// Empty when every experiment's estimated memory fits in what is available; otherwise the
// message that refuses the run before anything starts.
std::string memory_refusal(const std::vector<TrialSpec>& trials) {
  const double available = available_memory_bytes();
  if (available <= 0) return "";
  std::set<std::string> seen;
  for (const auto& t : trials) {
    if (!seen.insert(t.experiment).second) continue;
    // A resident pair holds both arms' processes at once.
    const double need = models::estimate_trial_bytes(t.model, t.batch, t.mode == Mode::train) *
                        (t.pairing.resident ? 2 : 1);
    if (need > available) {
      return fmt::format(
          "experiment {} ({}/{} {}, batch {}) needs an estimated {:.1f} GiB (weights, gradients "
          "and "
          "optimizer state, activations, LibTorch), more than the {:.1f} GiB available now: lower "
          "the batch or use a smaller preset",
          t.experiment, t.model.model, t.model.preset, to_string(t.mode), t.batch, need / (1 << 30),
          available / (1 << 30));
    }
  }
  return "";
}

volatile sig_atomic_t g_interrupted = 0;
void on_signal(int) { g_interrupted = 1; }

}  // namespace

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

WorkerOutcome spawn(const std::vector<std::string>& argv,
                    const std::map<std::string, std::string>& env, const std::string& input,
                    double timeout_s, const volatile sig_atomic_t* interrupt) {
  return spawn_all({{argv, env, input}}, timeout_s, interrupt).front();
}

void append_stderr(std::string& kept, const char* data, size_t size) {
  kept.append(data, size);
  if (kept.size() > 4 * kStderrTail) kept.erase(0, kept.size() - kStderrTail);
}

std::string stderr_tail(const std::string& kept) {
  return kept.size() > kStderrTail ? kept.substr(kept.size() - kStderrTail) : kept;
}

StartedChild start_child(const Command& command) {
  int in[2], out[2], err[2];
  if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC)) {
    throw std::runtime_error(std::string("pipe: ") + strerror(errno));
  }
  // Everything execve needs is built before fork: the child only calls async-signal-safe
  // functions.
  std::vector<std::string> env_strings;
  for (const auto& [k, v] : command.env) env_strings.push_back(k + "=" + v);
  std::vector<char*> cargv, cenv;
  for (const auto& a : command.argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (const auto& e : env_strings) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);

  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + strerror(errno));
  if (pid == 0) {
    setpgid(0, 0);  // its own process group, so a timeout kills everything it started
    // Dies with this process, however it ends (kill -9 included): a worker left running would
    // share the CPUs with the next run's. Kept across execve (launchers and the Python worker
    // included); the check closes the window in which the parent died before prctl.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    dup2(in[0], STDIN_FILENO);
    dup2(out[1], STDOUT_FILENO);
    dup2(err[1], STDERR_FILENO);
    execve(cargv[0], cargv.data(), cenv.data());
    const char msg[] = "tunebench: execve of the worker failed\n";
    (void)!write(STDERR_FILENO, msg, sizeof(msg) - 1);
    _exit(127);
  }
  setpgid(pid, pid);
  close(in[0]);
  close(out[1]);
  close(err[1]);
  return {pid, in[1], out[0], err[0]};
}

// Long (~100 lines) because it is one poll loop over every child's pipes, deadline and the
// interrupt flag: a child that fails, hangs or is interrupted must stop all the others at once,
// and that state (fds, pids, buffers, the deadline) is shared by every branch of the loop.
std::vector<WorkerOutcome> spawn_all(const std::vector<Command>& commands, double timeout_s,
                                     const volatile sig_atomic_t* interrupt) {
  struct Child {
    pid_t pid = -1;
    int out = -1, err = -1;
    std::string err_text;
    bool reaped = false;
  };
  const size_t n = commands.size();
  std::vector<WorkerOutcome> outcomes(n);
  std::vector<Child> children(n);
  const auto start = Clock::now();
  for (size_t c = 0; c < n; ++c) {
    const StartedChild child = start_child(commands[c]);
    // The trial is small (≪ a pipe buffer); a worker that died early gives EPIPE, ignored here.
    (void)!write(child.in, commands[c].input.data(), commands[c].input.size());
    close(child.in);
    children[c].pid = child.pid;
    children[c].out = child.out;
    children[c].err = child.err;
  }

  // Reaps child c once both its pipes are closed; a failure ends its siblings.
  bool failure = false;
  auto reap = [&](size_t c) {
    int status = 0;
    waitpid(children[c].pid, &status, 0);
    kill(-children[c].pid, SIGKILL);  // anything the worker left behind in its group
    children[c].reaped = true;
    if (WIFEXITED(status)) outcomes[c].exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) outcomes[c].signal = WTERMSIG(status);
    if (outcomes[c].signal || outcomes[c].exit_code != 0) failure = true;
    outcomes[c].seconds = std::chrono::duration<double>(Clock::now() - start).count();
  };
  const auto deadline = start + std::chrono::duration<double>(timeout_s);
  char buf[65536];
  bool timed_out = false, interrupted = false;
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<size_t> owner;
    for (size_t c = 0; c < n; ++c) {
      for (int fd : {children[c].out, children[c].err}) {
        if (fd >= 0) {
          fds.push_back({fd, POLLIN, 0});
          owner.push_back(c);
        }
      }
    }
    if (fds.empty() || (failure && n > 1)) break;
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    if (interrupt && *interrupt) {
      interrupted = true;
      break;
    }
    const int ready = poll(fds.data(), fds.size(), int(std::min<long long>(left, 1000)));
    if (ready < 0 && errno != EINTR) break;
    for (size_t f = 0; f < fds.size(); ++f) {
      if (!(fds[f].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      Child& child = children[owner[f]];
      const bool is_out = fds[f].fd == child.out;
      const ssize_t got = read(fds[f].fd, buf, sizeof(buf));
      if (got <= 0) {
        close(fds[f].fd);
        (is_out ? child.out : child.err) = -1;
        if (child.out < 0 && child.err < 0) reap(owner[f]);
        continue;
      }
      if (is_out) {
        outcomes[owner[f]].out.append(buf, size_t(got));
      } else {
        append_stderr(child.err_text, buf, size_t(got));
      }
    }
  }
  for (size_t c = 0; c < n; ++c) {
    Child& child = children[c];
    if (!child.reaped) {
      kill(-child.pid, SIGKILL);
      outcomes[c].timed_out = timed_out;
      outcomes[c].interrupted = interrupted;
      outcomes[c].sibling_failed = !timed_out && !interrupted;
      reap(c);
    }
    for (int fd : {child.out, child.err}) {
      if (fd >= 0) close(fd);
    }
    outcomes[c].err_tail = stderr_tail(child.err_text);
  }
  return outcomes;
}

namespace {

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
knobs::ProcessSetup setup_of(const TrialSpec& t) {
  knobs::ProcessSetup setup = knobs::process_setup(t.settings);
  if (models::descriptor(t.model.model).python && setup.executable.empty()) {
    knobs::run_in_python_worker(setup);
  }
  return setup;
}

// The trial as its worker is sent it (knobs::settings_for_worker): the orchestrator keeps the
// arm's own settings, stores them and checks the worker's evidence against them.
TrialSpec as_sent(TrialSpec t) {
  t.settings = knobs::settings_for_worker(t.settings);
  return t;
}

// A trial alone: one worker process, or several at once for multi_instance and the distributed
// knobs (multiproc.h), each checked against its own settings, then combined.
TrialResult run_alone(const TrialSpec& t, const Launch& launch, bool& interrupted) {
  const multiproc::Rendezvous rendezvous;
  std::vector<TrialSpec> parts;
  // Ranks over a Slurm allocation: one slot per task ("ddp_scaling": true is one rank per task),
  // then laid out on its nodes (run/slurm.h).
  const bool over_slurm = launch.slurm && knobs::distributed::layout(t.settings, 1).role == "rank";
  try {
    if (over_slurm) {
      std::vector<int> slots(size_t(launch.slurm->tasks));
      std::iota(slots.begin(), slots.end(), 0);
      parts = knobs::distributed::split(t, slots, rendezvous.dir(), slots.size());
      slurm::place_ranks(t, parts, *launch.slurm, slurm::free_port());
    } else {
      parts = knobs::distributed::split(t, launch.cpus, rendezvous.dir(), launch.gpus);
    }
  } catch (const std::exception& e) {
    return failed_result({}, e.what());  // stored as failed, nothing started
  }
  std::vector<Command> commands;
  for (const auto& part : parts) {
    commands.push_back(launch.command(setup_of(part), to_json(as_sent(part)).dump(), over_slurm));
    if (over_slurm) {
      commands.back().argv = slurm::srun_argv(*launch.slurm, part, commands.back().argv);
      for (const auto& [k, v] : launch.slurm->env) commands.back().env.emplace(k, v);
    }
  }
  const auto outcomes = spawn_all(commands, t.timeout_s, &g_interrupted);
  if (outcomes.front().interrupted) {
    interrupted = true;
    return {};
  }
  std::vector<TrialResult> results;
  for (size_t p = 0; p < parts.size(); ++p) {
    TrialResult pr = interpret(outcomes[p], parts[p]);
    if (outcomes[p].sibling_failed) pr.error = "stopped: another process of the trial failed";
    check_evidence(parts[p], t.mode, pr, *launch.links);
    results.push_back(std::move(pr));
  }
  return multiproc::combine(t, parts, std::move(results));
}

// A paired trial: one worker process holds both arms and alternates them (worker/paired.h). Its
// environment is the OFF arm's: the arms differ only in knobs that act inside the process
// (knobs::pairable, checked when the suite was parsed). It has both arms' time.
std::vector<TrialResult> run_pair(const TrialSpec& off, const TrialSpec& on, const Launch& launch,
                                  bool& interrupted) {
  PairedSpec spec{off, on, off.pairing.blocks, off.pairing.block_samples, off.pairing.on_first};
  const auto outcome = spawn_all({launch.command(setup_of(off), to_json(spec).dump())},
                                 off.timeout_s + on.timeout_s, &g_interrupted)
                           .front();
  if (outcome.interrupted) {
    interrupted = true;
    return {};
  }
  std::vector<TrialResult> results = interpret_paired(outcome, off);
  check_evidence(off, off.mode, results[0], *launch.links);
  check_evidence(on, on.mode, results[1], *launch.links);
  return results;
}

// A resident pair: each arm in a worker process of its own, with its own process setup, both kept
// alive and alternating blocks (run/resident.h). Each arm is checked against its own settings.
// Both processes start their heaps at one offset drawn for this pair where `shared_heap_offset`
// (suite.h, heap_offset), else each at its own (worker/heap_offset.h); sent in the environment,
// at one length whatever the draw.
// Where the arms run two executables (a software A/B), each worker starts from a fresh copy of
// its build (run/launch_paths.h: a file's own offset would otherwise stay with its arm), removed
// once the pair is over.
std::vector<TrialResult> run_resident(const TrialSpec& off, const TrialSpec& on,
                                      const Launch& launch, bool shared_heap_offset,
                                      bool& interrupted) {
  const knobs::ProcessSetup off_setup = setup_of(off), on_setup = setup_of(on);
  namespace fs = std::filesystem;
  std::error_code ec_off, ec_on;
  const bool two_builds = fs::weakly_canonical(launch.executable(off_setup), ec_off) !=
                          fs::weakly_canonical(launch.executable(on_setup), ec_on);
  Command off_command =
      launch.command(off_setup, resident_request(as_sent(off), false), false, two_builds);
  Command on_command =
      launch.command(on_setup, resident_request(as_sent(on), true), false, two_builds);
  const size_t heap_offset = worker::draw_heap_offset();
  off_command.env[worker::kHeapOffsetVariable] = worker::heap_offset_text(heap_offset);
  on_command.env[worker::kHeapOffsetVariable] =
      worker::heap_offset_text(shared_heap_offset ? heap_offset : worker::draw_heap_offset());
  std::vector<TrialResult> results =
      run_resident_pair(off, on, off_command, on_command, &g_interrupted);
  if (!results.empty()) {
    check_evidence(off, off.mode, results[0], *launch.links);
    check_evidence(on, on.mode, results[1], *launch.links);
  }
  launch.links->remove_copy(off_command.argv.at(off_setup.launcher.size()));
  launch.links->remove_copy(on_command.argv.at(on_setup.launcher.size()));
  if (results.empty()) interrupted = true;
  return results;
}

// How far a paired experiment may sample beyond its planned workers (suite.h: budget_s,
// max_workers), and whether its resident pairs share a heap offset, by experiment name.
struct Sampling {
  double budget_s = 0;
  int max_workers = 0;
  double target = 0.02;            // the half-width to reach
  double confidence = 0.95;        // of the interval whose half-width it is
  double decide = 0;               // > 0: stop at the first look that decides (suite.h, decide_pct)
  bool shared_heap_offset = true;  // suite.h, heap_offset
};
using SamplingMap = std::map<std::string, Sampling>;

SamplingMap sampling_of(const plan::Plan& plan) {
  SamplingMap out;
  for (const auto& [x, not_applicable] : plan.experiments) {
    if (x.design != "processes")
      out[x.name] = {x.budget_s,   x.max_workers, x.target,
                     x.confidence, x.decide,      x.heap_offset_per_pair};
  }
  return out;
}

// The run loop: runs the run's missing trials into `db`, checks (evidence, guard) and stores
// each, samples every paired experiment on until it is settled or out of budget, reports
// progress, and stops cleanly on an interrupt or a storage error without losing what was stored.
class RunLoop {
 public:
  // `total` trials planned; `failed`, `invalid` count trials stored before (a resumed run);
  // `guard_reference` the experiments' first ok check values; `gpus` the CUDA devices here.
  RunLoop(storage::Database& db, std::string run_uuid, const RunOptions& options, int gpus,
          std::map<std::string, double> guard_reference, int failed, int invalid,
          SamplingMap sampling)
      : db_(db),
        run_uuid_(std::move(run_uuid)),
        options_(options),
        tty_(isatty(STDERR_FILENO) && !options.quiet),
        launch_{options.worker_executable, multiproc::allowed_cpus(), gpus, std::nullopt},
        guard_reference_(std::move(guard_reference)),
        failed_(failed),
        invalid_(invalid),
        sampling_(std::move(sampling)) {
    launch_.slurm = options.allocation;
    if (launch_.resolved_exe == "/proc/self/exe") {
      char path[4096];
      const ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
      if (n > 0) launch_.resolved_exe.assign(path, size_t(n));
    }
    // Linked now, while the file is still this very binary (a rebuild may replace it later).
    launch_.links->path_for(launch_.resolved_exe);
  }

  int execute(const std::vector<TrialSpec>& trials);

 private:
  void say(const std::string& line) const {
    if (!options_.quiet) std::cerr << (tty_ ? "\r\033[K" : "") << line << "\n";
  }
  double elapsed() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }
  void guard(const TrialSpec& t, TrialResult& r);
  void report(const TrialSpec& t, const TrialResult& r, const std::string& position) const;
  bool run_unit(const std::vector<TrialSpec>& unit, const std::vector<std::string>& positions);
  bool sample_on(const TrialSpec& off, const TrialSpec& on);

  storage::Database& db_;
  const std::string run_uuid_;
  const RunOptions& options_;
  const bool tty_;
  Launch launch_;
  std::map<std::string, double> guard_reference_;
  int failed_, invalid_;
  const SamplingMap sampling_;
  std::map<std::string, double> experiment_seconds_;  // worker time spent, by experiment
  int next_sequence_ = 0;  // for the workers sampling adds beyond the plan
  int added_ = 0;          // workers sampling added
  bool failed_to_store_ = false;
  Clock::time_point start_ = Clock::now();
};

// Every arm of an experiment computes what its first trial did (within the knob's tolerance).
void RunLoop::guard(const TrialSpec& t, TrialResult& r) {
  if (r.status != "ok") return;
  auto [it, first] = guard_reference_.emplace(t.experiment, r.check_value);
  const double tolerance = knobs::guard_tolerance(t.knob, t.settings);
  const double diff = std::abs(r.check_value - it->second) / std::max(std::abs(it->second), 1e-12);
  if (!first && diff > tolerance) {
    r.status = "invalid";
    r.error = fmt::format(
        "correctness guard: this arm computes {:.6g}, the experiment's first trial "
        "{:.6g} (relative difference {:.2g} > tolerance {:.2g})",
        r.check_value, it->second, diff, tolerance);
  }
}

void RunLoop::report(const TrialSpec& t, const TrialResult& r, const std::string& position) const {
  if (!tty_ && !options_.quiet) {
    const double median_ms =
        r.items_per_second > 0 ? 1e3 * double(t.batch) / r.items_per_second : 0;
    say(fmt::format("trial {} {} [{}] {}{}", position, t.experiment, t.arm, r.status,
                    r.status == "ok" ? fmt::format(": median {:.3g} ms/iteration", median_ms)
                                     : ": " + r.error));
  } else if (r.status != "ok") {
    say(fmt::format("trial {} {} [{}] {}: {}", position, t.experiment, t.arm, r.status, r.error));
  }
}

// Runs one unit — a trial alone (one process, or several at once for multi_instance and the
// distributed knobs), or a paired trial's two arms in one process — then guards and stores it:
// both arms of a paired trial together or neither (a resumed run reruns both). False when the
// run must stop: interrupted (nothing of the unit stored) or the database refused it.
bool RunLoop::run_unit(const std::vector<TrialSpec>& unit,
                       const std::vector<std::string>& positions) {
  const TrialSpec& t = unit.front();
  std::vector<TrialResult> results;
  bool interrupted = false;
  const auto began = Clock::now();
  if (unit.size() == 2) {
    const auto rules = sampling_.find(t.experiment);
    const bool shared_heap = rules == sampling_.end() || rules->second.shared_heap_offset;
    results = t.pairing.resident ? run_resident(unit[0], unit[1], launch_, shared_heap, interrupted)
                                 : run_pair(unit[0], unit[1], launch_, interrupted);
  } else if (t.pairing.paired()) {
    results.push_back(
        failed_result({},
                      "a paired trial needs both arms, and the other arm of this worker is missing "
                      "(rerun the experiment)"));
  } else {
    results.push_back(run_alone(t, launch_, interrupted));
  }
  // A trial cut short by SIGINT/SIGTERM is not a result: it is not stored, and the run is
  // marked interrupted with every finished trial kept.
  if (interrupted) return false;
  const double seconds = std::chrono::duration<double>(Clock::now() - began).count();
  experiment_seconds_[t.experiment] += seconds;
  std::vector<std::pair<TrialSpec, TrialResult>> stored;
  for (size_t u = 0; u < unit.size(); ++u) {
    // The machine time of the unit's worker process(es), start-up included: what a study of the
    // cost of settling an effect adds up (both arms of a paired worker hold the same figure).
    results[u].evidence["worker_wall_seconds"] = seconds;
    guard(unit[u], results[u]);
    if (results[u].status == "failed") ++failed_;
    if (results[u].status == "invalid") ++invalid_;
    stored.emplace_back(unit[u], results[u]);
  }
  try {
    db_.store_trials(run_uuid_, stored);
  } catch (const storage::StorageError& e) {
    // The store's message names the trial and the run; where the device is full it also says
    // to free space and how to resume.
    std::cerr << "\ntunebench: error: " << e.what() << "\n";
    if (!e.no_space()) {
      std::cerr << "the run stopped; its stored trials are kept; resume with: "
                << liveness::resume_command(run_uuid_, options_.db_path) << "\n";
    }
    failed_to_store_ = true;
    return false;
  }
  for (size_t u = 0; u < unit.size(); ++u) report(unit[u], results[u], positions[u]);
  return true;
}

// Sampling on (issue #14, "stop on precision"): after a paired experiment's planned workers, two
// more workers at a time (one OFF-first, one ON-first, so the order stays balanced) until its
// interval is within its target, ±2 % by default (stats::paired::settled: the width only, never the
// estimate), or its workers have taken its budget_s, or it has max_workers, or the run's
// --budget is spent. With decide_pct (stage 2 of the check), it also stops at the first of its
// fixed looks whose interval decides, every interval then at the look level
// (detect::decision_looks), and settles only from its first look on; resident pairs settle only
// from detect::kResidentSettleFrom workers on (detect::may_settle). What
// stops it is said; an experiment left wider than the target is stored as "not precise enough
// (±x %)" unless its interval excludes 1. `off` and `on` are the experiment's last planned worker:
// the new workers are copies of it. False when the run must stop (as run_unit).
bool RunLoop::sample_on(const TrialSpec& off, const TrialSpec& on) {
  const auto found = sampling_.find(off.experiment);
  if (found == sampling_.end()) return true;
  const Sampling& limits = found->second;
  std::optional<detect::Looks> looks;
  if (limits.decide > 0) looks = detect::decision_looks(limits.confidence, limits.max_workers);
  int looked_at = 0;  // workers at the last pass: a look is a count in looks->at passed since
  for (;;) {
    stats::paired::Options target;
    target.target = limits.target;
    target.confidence = looks ? looks->confidence : limits.confidence;
    const auto stored = db_.trials(run_uuid_, off.experiment);
    const stats::paired::Effect e = analysis::paired_time_estimate(stored, off.experiment, target);
    int workers = 0;
    for (const auto& t : stored) workers = std::max(workers, t.spec.process_index + 1);
    const double spent = experiment_seconds_[off.experiment];
    // Fewer workers with kept pairs than an interval needs: no width to speak of yet.
    const bool has_interval = std::isfinite(e.lo) && std::isfinite(e.hi) && e.lo > 0;
    std::string width = has_interval ? fmt::format("±{:.1f}%", 100 * e.half_width) : "no interval";
    if (has_interval && target.confidence != 0.95) {
      width += fmt::format(" ({:g} % interval)", 100 * target.confidence);
    }
    std::string stop;
    const bool look = looks && detect::at_look(*looks, looked_at, workers);
    looked_at = workers;
    const std::string answer =
        look ? detect::decide(e.ratio, e.lo, e.hi, limits.decide, target.confidence).status : "";
    const bool narrow = stats::paired::settled(e, target);
    if (narrow && detect::may_settle(looks, workers, off.pairing.resident)) {
      stop = "settled";
    } else if (look && answer != "unknown") {
      stop = fmt::format("decided at a look ({}, threshold {:g} %)", answer, 100 * limits.decide);
    } else if (e.workers == 0 && e.dropped == 0) {
      // (Every pair dropped as contaminated is a busy host: later workers may find it quiet.)
      stop = "not sampled on: no worker has both arms ok";
    } else if (limits.budget_s <= 0) {
      stop = "not settled (budget_s 0: the planned workers only)";
    } else if (spent >= limits.budget_s) {
      stop = fmt::format("not settled: its budget_s of {:g}s is spent", limits.budget_s);
    } else if (workers + 2 > limits.max_workers) {
      stop = fmt::format("not settled: max_workers {} reached", limits.max_workers);
    } else if (options_.budget_s > 0 && elapsed() >= options_.budget_s) {
      stop = fmt::format("not settled: the run's --budget of {:g}s is spent", options_.budget_s);
    }
    if (!stop.empty()) {
      say(fmt::format("{}: {} at {} after {} workers, {:.0f}s", off.experiment, stop, width,
                      workers, spent));
      return true;
    }
    const std::string early = narrow
                                  ? fmt::format(" (settles from {} workers on)",
                                                detect::settles_from(looks, off.pairing.resident))
                                  : "";
    say(fmt::format("{}: {}{} after {} workers ({:.0f}s of {:g}s): two more workers",
                    off.experiment, width, early, workers, spent, limits.budget_s));
    for (int k = 0; k < 2 && !g_interrupted; ++k) {
      std::vector<TrialSpec> unit{off, on};
      for (TrialSpec& t : unit) {
        t.process_index = workers + k;
        t.pairing.on_first = t.process_index % 2 == 1;
        t.sequence = next_sequence_++;
      }
      ++added_;
      if (!run_unit(unit, {fmt::format("+{}", 2 * added_ - 1), fmt::format("+{}", 2 * added_)}))
        return false;
    }
    if (g_interrupted) return false;
  }
}

int RunLoop::execute(const std::vector<TrialSpec>& trials) {
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  signal(SIGPIPE, SIG_IGN);
  // Workers added beyond the plan take sequence numbers after every trial planned or stored (a
  // resumed run may hold workers an earlier sampling added).
  for (const auto& t : trials) next_sequence_ = std::max(next_sequence_, t.sequence + 1);
  for (const auto& t : db_.trials(run_uuid_))
    next_sequence_ = std::max(next_sequence_, t.spec.sequence + 1);
  bool go_on = true;
  for (size_t i = 0; i < trials.size() && go_on && !g_interrupted; ++i) {
    const TrialSpec& t = trials[i];
    if (tty_) {
      const double eta = i ? elapsed() / double(i) * double(trials.size() - i) : 0;
      std::cerr << fmt::format("\r\033[Ktrial {}/{} {} [{}] elapsed {} eta {}", i + 1,
                               trials.size(), t.experiment, t.arm, duration(elapsed()),
                               i ? duration(eta) : "?")
                << std::flush;
    }
    // A paired trial is this arm and the next, in one process.
    std::vector<TrialSpec> unit{t};
    const TrialSpec* next = i + 1 < trials.size() ? &trials[i + 1] : nullptr;
    if (t.pairing.paired() && t.arm == "off" && next && next->arm == "on" &&
        next->experiment == t.experiment && next->process_index == t.process_index &&
        next->pairing == t.pairing) {
      unit.push_back(*next);
    }
    std::vector<std::string> positions;
    for (size_t u = 0; u < unit.size(); ++u)
      positions.push_back(fmt::format("{}/{}", i + u + 1, trials.size()));
    go_on = run_unit(unit, positions);
    i += unit.size() - 1;
    // The experiment's last planned worker: sample on until it is settled.
    const bool last = i + 1 == trials.size() || trials[i + 1].experiment != t.experiment;
    if (go_on && unit.size() == 2 && last) go_on = sample_on(unit[0], unit[1]);
  }
  if (failed_to_store_) {
    // Said already, with the resume command; a store that cannot take a trial (a full disk)
    // may not take this either: the run then stays "running", and its dead orchestrator makes
    // it interrupted for every later reader.
    try {
      db_.finish_run(run_uuid_, "failed", now_iso8601());
    } catch (const storage::StorageError&) {
    }
    return 2;  // a storage error, as everywhere else (cli.cpp's dispatch)
  }
  const std::string status = g_interrupted           ? "interrupted"
                             : (failed_ || invalid_) ? "completed with failures"
                                                     : "completed";
  db_.finish_run(run_uuid_, status, now_iso8601());
  if (tty_) std::cerr << "\r\033[K";
  say(fmt::format("run {} {}: {} trials{}, {} failed, {} invalid, in {}", run_uuid_, status,
                  db_.trials(run_uuid_).size(),
                  added_ ? fmt::format(" ({} workers added to settle paired effects)", added_) : "",
                  failed_, invalid_, duration(elapsed())));
  if (status == "interrupted") {
    say("resume with: tunebench run --resume " + run_uuid_.substr(0, 8) + " --db " +
        options_.db_path);
  }
  say("see: tunebench show " + run_uuid_.substr(0, 8) + " --db " + options_.db_path);
  return status == "completed" ? 0 : 1;
}

// Before this process writes a run: the runs of the database left "running" by an orchestrator
// that died without a word (kill -9, a reboot) are marked interrupted (core/liveness.h), each
// said with the command that resumes it, except `resuming` (said by resume itself).
void interrupt_gone_runs(storage::Database& db, const RunOptions& options,
                         const std::string& resuming = "") {
  for (const auto& uuid : db.interrupt_gone_runs()) {
    if (options.quiet || uuid == resuming) continue;
    std::cerr << fmt::format(
        "run {} was left running by an orchestrator that is gone: marked interrupted; resume "
        "with: {}\n",
        uuid, liveness::resume_command(uuid, options.db_path));
  }
}

// The models of `suite` read from files, read now (models/torchscript.h, run/python_model.h): what
// each offers decides its experiments' applicability, and a file that cannot be read, or whose
// forward rejects its inputs, is bad input, said before anything is written. Throws
// models::InvalidSpec.
plan::ModelOffers read_file_models(const suite::Suite& suite) {
  plan::ModelOffers offers;
  std::map<std::string, bool> trained;  // by path: some experiment trains it
  for (const auto& x : suite.experiments) {
    if (!models::descriptor(x.model.model).from_file) continue;
    trained[x.model.options.value("path", std::string())] |= x.mode == Mode::train;
  }
  if (trained.empty()) return offers;
  torch::set_num_threads(1);  // this process only reads; the workers measure
  for (const auto& x : suite.experiments) {
    if (!models::descriptor(x.model.model).from_file) continue;
    const std::string path = x.model.options.value("path", std::string());
    if (offers.count(path)) continue;
    offers[path] = models::descriptor(x.model.model).python
                       ? python_model::inspect(x.model, x.batch, trained[path])
                       : models::inspect_file_model(x.model, x.batch, trained[path]);
  }
  return offers;
}

// The plan of a suite, before it runs (`run --model`, and `--dry-run`): what each model from a
// file offers, each experiment that runs with its design, and each that does not with why.
void print_plan(const suite::Suite& suite, const plan::Plan& plan, const plan::ModelOffers& offers,
                size_t trials) {
  for (const auto& [path, o] : offers) {
    std::cerr << fmt::format(
        "model {}{}: {} parameters{}, output a {}, sha256 {}; 2-D convolution: {}\n", path,
        o.model_class.empty() ? "" : " (class " + o.model_class + ", in the Python worker)",
        models::with_commas(o.parameters), o.trainable ? " (trainable)" : "", o.output,
        o.sha256.substr(0, 12), o.conv2d ? "yes" : "no");
  }
  size_t runs = 0;
  for (const auto& p : plan.experiments) runs += p.not_applicable.empty() ? 1 : 0;
  std::cerr << fmt::format(
      "suite {}: {} experiments to run ({} trials planned), {} not "
      "applicable\n",
      suite.name, runs, trials, plan.experiments.size() - runs);
  for (const auto& p : plan.experiments) {
    if (p.not_applicable.empty()) {
      std::cerr << fmt::format("  run             {} ({})\n", p.experiment.name,
                               p.experiment.design);
    }
  }
  for (const auto& p : plan.experiments) {
    if (!p.not_applicable.empty()) {
      std::cerr << fmt::format("  not applicable  {}: {}\n", p.experiment.name, p.not_applicable);
    }
  }
}

// What a run stores of its file models: each one's offer beside the suite, and each file's hash
// in the software fingerprint, so that a changed file is different software (check compares
// only runs of the same software unless told otherwise).
void record_file_models(const plan::ModelOffers& offers, RunRecord& run) {
  if (offers.empty()) return;
  for (const auto& [path, offer] : offers) {
    run.suite["models"][path] = models::to_json(offer);
    run.software["model_files"][path] = offer.sha256;
  }
}

// Before a run or resume measures anything: TMPDIR must hold its folders (said before anything
// is written), and what a killed run left behind here (workers, folders) is cleared and said.
bool ready_to_run(const RunOptions& options) {
  if (const std::string problem = temp_directory_problem(); !problem.empty()) {
    std::cerr << "tunebench: error: " << problem << ".\nNothing was run or written.\n";
    return false;
  }
  for (const auto& line : clear_leftovers(std::filesystem::temp_directory_path())) {
    if (!options.quiet) std::cerr << "tunebench: " << line << "\n";
  }
  return true;
}

// The loop, with a fault it did not expect (an exception: the environment, the file system)
// named and the run stored as interrupted with the command that resumes it, never left running.
int execute_or_interrupt(RunLoop& loop, storage::Database& db, const std::string& uuid,
                         const std::vector<TrialSpec>& trials, const RunOptions& options) {
  try {
    return loop.execute(trials);
  } catch (const std::exception& e) {
    std::cerr << "\ntunebench: error: run " << uuid << " stopped: " << e.what() << "\n";
    try {
      db.finish_run(uuid, "interrupted", now_iso8601());
      std::cerr << "The trials stored so far are kept; resume with: "
                << liveness::resume_command(uuid, options.db_path) << "\n";
    } catch (const std::exception& also) {
      std::cerr << "tunebench: error: cannot mark the run interrupted either: " << also.what()
                << "\n";
    }
    return 2;
  }
}

// `tunebench run --resume RUN`: the stored suite is expanded again (same order, same seeds) and
// only the trials the database does not hold yet are run.
int resume(const RunOptions& options) {
  if (!ready_to_run(options)) return 2;
  const knobs::HostCaps caps = host::capabilities();
  std::unique_ptr<storage::Database> db;
  std::string uuid;
  storage::Database::StoredRun stored;
  try {
    db = std::make_unique<storage::Database>(options.db_path);
    uuid = storage::resolve_run(*db, options.resume);
    interrupt_gone_runs(*db, options, uuid);
    stored = db->run(uuid);
  } catch (const storage::StorageError& e) {
    std::cerr << "tunebench: error: " << e.what() << "\n";
    return 2;
  }
  std::vector<TrialSpec> all;
  plan::Plan resumed_plan;
  try {
    const json& saved = stored.record.suite;
    const suite::Suite s =
        suite::parse(saved.at("suite").dump(), saved.value("path", "stored suite"));
    const plan::ModelOffers offers = read_file_models(s);
    for (const auto& [path, offer] : offers) {
      const std::string was = saved.value("models", json::object())
                                  .value(path, json::object())
                                  .value("sha256", std::string());
      if (was != offer.sha256) {
        throw std::runtime_error(fmt::format(
            "{} has changed since the run started (sha256 {} then, {} now): its trials would "
            "measure two models; start a new run",
            path, was.substr(0, 12), offer.sha256.substr(0, 12)));
      }
    }
    resumed_plan = plan::make(s, caps, offers);
    all = plan::trials(resumed_plan, saved.value("filter", ""));
  } catch (const std::exception& e) {
    std::cerr << "tunebench: error: cannot resume run " << uuid << ": " << e.what() << "\n";
    return 2;
  }
  std::set<int> done;
  std::map<std::string, double> guard_reference;
  int failed = 0, invalid = 0;
  for (const auto& t : db->trials(uuid)) {
    done.insert(t.spec.sequence);
    if (t.result.status == "failed") ++failed;
    if (t.result.status == "invalid") ++invalid;
    if (t.result.status == "ok") guard_reference.emplace(t.spec.experiment, t.result.check_value);
  }
  std::vector<TrialSpec> missing;
  for (auto& t : all) {
    t.run_uuid = uuid;
    if (!done.count(t.sequence)) missing.push_back(t);
  }
  if (missing.empty() && stored.status != "running" && stored.status != "interrupted") {
    if (!options.quiet) std::cerr << "nothing to resume: the run is " << stored.status << "\n";
    return stored.status == "completed" ? 0 : 1;
  }
  // Who runs it now; refused while its orchestrator is alive here (two would write one run).
  // The host as it is now, after leftovers were cleared, is stored beside the start's.
  const host::HostState state = host::host_state();
  json resumed_state = state.facts;
  resumed_state["warnings"] = state.warnings;
  resumed_state["at"] = now_iso8601();
  try {
    db->reopen_run(uuid, liveness::to_json(liveness::this_process()), resumed_state,
                   state.warnings.empty());
  } catch (const storage::StorageError& e) {
    std::cerr << "tunebench: error: " << e.what() << "\n";
    return 2;
  }
  if (!options.quiet) {
    std::string was = stored.status;
    if (stored.status == "running") {
      // Not alive here (refused above): on another host, or stored before schema 7.
      was += ": " + liveness::judge(liveness::orchestrator_from_json(stored.orchestrator),
                                    liveness::this_machine())
                        .why;
    } else if (stored.orchestrator.contains("gone")) {
      was += ": " + stored.orchestrator["gone"].value("why", "its orchestrator is gone");
    }
    std::cerr << fmt::format("resuming run {} ({}): {} of {} trials stored, {} to run\n", uuid, was,
                             done.size(), all.size(), missing.size());
    for (const auto& w : state.warnings) std::cerr << "warning: host is not quiet: " << w << "\n";
  }
  RunLoop loop(*db, uuid, options, caps.gpus, guard_reference, failed, invalid,
               sampling_of(resumed_plan));
  return execute_or_interrupt(loop, *db, uuid, missing, options);
}

}  // namespace

// Long (~80 lines) because it is the checked preamble of a run (suite, plan, filter, memory
// refusal, database, host state) in the order a user meets its errors, each with its own message.
int run(const RunOptions& given) {
  RunOptions options = given;  // with the allocation found once, for the run and its loop
  if (options.ranks_over_srun) {
    try {
      options.allocation = slurm::current_allocation();
    } catch (const std::exception& e) {
      std::cerr << "tunebench: error: " << e.what() << "\nNothing was run or written.\n";
      return 2;
    }
  }
  if (!options.resume.empty()) return resume(options);
  if (!ready_to_run(options)) return 2;
  const knobs::HostCaps caps = host::capabilities();
  suite::Suite suite;
  plan::Plan plan;
  std::vector<TrialSpec> trials;
  plan::ModelOffers offers;
  const bool from_model = !options.model.path.empty() || !options.model.builtin.empty();
  const std::string source = options.suite ? options.suite->path
                             : from_model  ? "--model " + options.model.name()
                                           : options.suite_path;
  try {
    suite = options.suite ? *options.suite
            : from_model  ? plan::model_suite(options.model)
                          : suite::load(options.suite_path);
    offers = read_file_models(suite);
    plan = plan::make(suite, caps, offers);
    trials = plan::trials(plan, options.filter);
  } catch (const suite::SuiteError& e) {
    std::cerr << "tunebench: error: " << e.what() << "\nNothing was run or written.\n";
    return 2;
  } catch (const models::InvalidSpec& e) {
    std::cerr << "tunebench: error: " << (from_model ? "" : options.suite_path + ": ") << e.what()
              << "\nNothing was run or written.\n";
    return 2;
  }
  if ((from_model && !options.quiet) || options.dry_run)
    print_plan(suite, plan, offers, trials.size());
  if (options.dry_run) return 0;
  if (trials.size() > kLargeRunTrials && !options.large) {
    // Each trial is a worker process of its own: a second of start-up each is a lower bound.
    std::cerr << fmt::format(
        "tunebench: error: {}: {} trials ({} experiments); each starts a worker process, so this "
        "run takes more than {} before measuring anything. Pass --large to run it anyway, or "
        "--filter REGEX to run part of it.\nNothing was run or written.\n",
        source, trials.size(), plan.experiments.size(),
        fmt::format("{:.1f} hours", double(trials.size()) / 3600));
    return 2;
  }
  if (const std::string refusal = memory_refusal(trials); !refusal.empty()) {
    std::cerr << "tunebench: error: " << source << ": " << refusal
              << ".\nNothing was run or written.\n";
    return 2;
  }
  std::unique_ptr<storage::Database> db;
  try {
    db = std::make_unique<storage::Database>(options.db_path);
    interrupt_gone_runs(*db, options);
  } catch (const storage::StorageError& e) {
    std::cerr << "tunebench: error: " << e.what() << "\n";
    return 2;
  }

  RunRecord run;
  run.uuid = options.uuid.empty() ? new_uuid() : options.uuid;
  run.suite_name = suite.name;
  run.suite_hash = suite.hash;
  json not_applicable = json::array();
  for (const auto& [x, why] : plan.experiments) {
    if (!why.empty()) not_applicable.push_back({{"experiment", x.name}, {"reason", why}});
  }
  // The catalog's claim for every knob the suite uses, so that reports show claim and measurement
  // side by side from the database alone.
  json claims = json::object();
  for (const auto& x : suite.experiments) {
    std::vector<std::string> ids = x.factors;
    for (const auto& arm : x.arms) {
      for (const auto& [id, value] : arm.settings.items()) ids.push_back(id);
    }
    for (const auto& id : ids) {
      if (const knobs::Knob* k = knobs::find(id)) {
        claims[id] = {{"change", k->change},
                      {"claim", k->claim},
                      {"false_claim", k->false_claim},
                      {"where", k->where},
                      {"memory_effect", k->memory_effect}};
      }
    }
  }
  run.suite = {{"path", suite.path},
               {"suite", suite.json},
               {"not_applicable", not_applicable},
               {"filter", options.filter},
               {"claims", claims}};
  run.label = options.label;
  run.git_revision = host::git_revision();
  run.command_line = options.command_line;
  run.started_at = now_iso8601();
  run.host = host::host_fingerprint();
  run.software = host::software_fingerprint();
  record_file_models(offers, run);
  const host::HostState state = host::host_state();
  run.host_state = state.facts;
  run.host_state["warnings"] = state.warnings;
  run.host_quiet = state.warnings.empty();
  for (auto& t : trials) t.run_uuid = run.uuid;
  db->begin_run(run, liveness::to_json(liveness::this_process()));

  if (!options.quiet) {
    std::cerr << fmt::format("run {} of suite {} ({} trials, {} not applicable) into {}\n",
                             run.uuid, suite.name, trials.size(), not_applicable.size(),
                             options.db_path);
    for (const auto& w : state.warnings) std::cerr << "warning: host is not quiet: " << w << "\n";
    for (const auto& na : from_model ? json::array() : not_applicable) {
      std::cerr << "not applicable: " << na["experiment"].get<std::string>() << ": "
                << na["reason"].get<std::string>() << "\n";
    }
  }
  RunLoop loop(*db, run.uuid, options, caps.gpus, {}, 0, 0, sampling_of(plan));
  return execute_or_interrupt(loop, *db, run.uuid, trials, options);
}

}  // namespace tunebench::orchestrator

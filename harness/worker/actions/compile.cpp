// The compile family's action (worker/knob_action.h): the `compile` knob's ON arm runs the model as
// an AOTInductor package instead of the eager C++ model.
//
// The package is compiled from the model's Python twin (models/python/twins.py) by
// models/python/aoti_compile.py with the Python whose torch is this LibTorch (the pypi build's
// .venv): the worker writes the C++ model's parameters and buffers by name, the batch and the
// eager output to a request folder, the script checks that the twin loads those tensors under the
// same names and shapes and computes the same output, exports it (torch.export) and compiles it
// (AOTInductor) for the batch's shapes, the device and the mode. Packages are cached outside the
// clone, keyed by the request without its weights (model, resolved options, shapes, dtypes,
// device, mode), the torch version and the two scripts' bytes: a configuration compiles once.
// The loaded package is then fed the C++ model's own tensors by name (load_constants), so both arms
// compute the same function from the same seed and the correctness guard compares them.
//
// Evidence: knobs/compile.h. Builds without AOTInductor (LibTorch 1.13) say not applicable.
#include "worker/actions/compile.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <torch/serialize.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "core/build_paths.h"
#include "core/records.h"
#include "knobs/compile.h"
#include "models/registry.h"
#include "platform/compat.h"
#include "worker/arm.h"
#include "worker/knob_action.h"
#include "worker/trial.h"

#if TUNEBENCH_AOTI
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>
#endif

namespace tunebench::compile_forward {

using nlohmann::json;
namespace fs = std::filesystem;
namespace kc = knobs::compile;

namespace {

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void write_file(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("compile: cannot write " + path.string());
}

fs::path script_dir() { return fs::path(build_paths::source_dir()) / "models" / "python"; }

// Why this build cannot compile packages; "" when it can.
std::string unavailable_reason() {
#if !TUNEBENCH_AOTI
  return "LibTorch " + compat::torch_version() +
         " has no AOTInductor package loader (LibTorch 2.6 or later: the pypi build)";
#else
  // The error_code forms: a user who cannot reach the build's folders (another account reading
  // a published database) gets the reason, not an exception.
  const std::string python = build_paths::torch_python();
  std::error_code ec;
  if (python.empty() || !fs::exists(python, ec)) {
    return "no Python beside this LibTorch to export and compile the model's twin (looked for " +
           (python.empty() ? std::string("the wheel's environment") : python) +
           (ec ? ": " + ec.message() : std::string()) + ")";
  }
  if (!fs::exists(script_dir() / "aoti_compile.py", ec)) {
    return "models/python/aoti_compile.py is not in " + build_paths::source_dir();
  }
  return "";
#endif
}

// Runs `argv` (no shell) in a process group of its own with stdout and stderr to `log`; returns
// its exit status, or -1 when it ran past `timeout_s` (0: no deadline), its group then killed.
// Inductor's compile starts compiler processes of its own: the group takes them too. A group of
// its own is out of reach of the orchestrator's kill of this worker's group, so the child also
// dies with this worker (a parent-death signal), and what it started carries this worker's
// orchestrator tag, which the next run's clearing of leftovers stops (run/leftovers.h).
int run_program(const std::vector<std::string>& args, const fs::path& log, double timeout_s = 0) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("compile: fork failed");
  if (pid == 0) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);  // the worker died before the signal was set
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    execv(argv[0], argv.data());
    _exit(127);
  }
  setpgid(pid, pid);  // either side may run first
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(timeout_s));
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (timeout_s > 0 && std::chrono::steady_clock::now() > deadline) {
      kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// What a run of the script said: its own message ("aoti_compile: …"), else a Python exception's
// last line ("RuntimeError: …"), else its last line.
std::string script_message(const std::string& text) {
  std::string last, mine, exception;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    last = line;
    if (line.rfind("aoti_compile:", 0) == 0) mine = line;
    const auto colon = line.find(": ");
    if (colon != std::string::npos && !std::isspace(static_cast<unsigned char>(line[0])) &&
        (line.substr(0, colon).find("Error") != std::string::npos ||
         line.substr(0, colon).find("Exception") != std::string::npos)) {
      exception = line;
    }
  }
  if (!mine.empty()) return mine;
  return exception.empty() ? last : exception;
}

}  // namespace

namespace {
// request.json's contents: what the package is compiled for, without the tensors.
json request_of(worker::Arm& arm, const std::string& mode) {
  return {{"model", arm.spec.model.model},
          {"config", models::summarize(arm.spec.model).config},
          {"device", arm.device->device().is_cuda() ? "cuda" : "cpu"},
          {"mode", mode},
          {"tolerance", 1e-4}};
}
}  // namespace

json write_request(worker::Arm& arm, const std::string& mode, const std::string& folder) {
  const fs::path dir = folder;
  const json request = request_of(arm, mode);
  // The C++ model's tensors by name, the batch and the eager output, on the CPU.
  c10::Dict<std::string, torch::Tensor> state;
  for (const auto& p : arm.module().named_parameters()) state.insert(p.key(), p.value().cpu());
  for (const auto& b : arm.module().named_buffers()) state.insert(b.key(), b.value().cpu());
  c10::List<torch::Tensor> inputs;
  for (const auto& t : arm.batch.inputs) inputs.push_back(t.cpu());
  torch::Tensor expected;
  {
    torch::NoGradGuard no_grad;
    expected = arm.model->forward(arm.batch).cpu();
  }
  const auto save = [&](const char* name, const c10::IValue& value) {
    const auto bytes = torch::pickle_save(value);
    write_file(dir / name, std::string(bytes.begin(), bytes.end()));
  };
  save("state.pt", state);
  save("inputs.pt", inputs);
  save("expected.pt", expected);
  save("target.pt", arm.batch.target.cpu());
  write_file(dir / "request.json", request.dump(1));
  return request;
}

int main_twin_request(const std::string& folder) {
  try {
    std::string input((std::istreambuf_iterator<char>(std::cin)), {});
    TrialSpec spec = trial_spec_from_json(json::parse(input));
    // The model and batch alone: the arm's knobs are the Python worker's to apply.
    spec.settings = json::object();
    auto arm = worker::set_up(spec);
    fs::create_directories(folder);
    write_request(*arm, "default", folder);
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "tunebench twin-request: " << e.what() << "\n";
    return 1;
  }
}

json check_twin(const std::string& folder) {
  if (auto why = unavailable_reason(); !why.empty()) throw std::runtime_error("compile: " + why);
  const fs::path dir = folder;
  const int code = run_program(
      {build_paths::torch_python(), (script_dir() / "aoti_compile.py").string(), "--check", folder},
      dir / "check.txt");
  const std::string out = read_file(dir / "check.txt");
  if (code != 0 && code != 2) {
    throw std::runtime_error("compile: the twin check failed: " + script_message(out));
  }
  try {
    return json::parse(script_message(out));
  } catch (const json::exception&) {
    throw std::runtime_error("compile: the twin check said: " + script_message(out));
  }
}

namespace {

#if TUNEBENCH_AOTI

// The package cache: TUNEBENCH_COMPILE_CACHE, or aoti/ in TUNEBENCH_CACHE (ci/setup.sh's cache of
// the Python environment, /var/cache/tunebench by default).
fs::path cache_root() {
  if (const char* dir = std::getenv("TUNEBENCH_COMPILE_CACHE"); dir && *dir) return dir;
  const char* cache = std::getenv("TUNEBENCH_CACHE");
  return fs::path(cache && *cache ? cache : "/var/cache/tunebench") / "aoti";
}

// An exclusive lock on `path` for its lifetime: one worker compiles a package while the others
// wait for it.
class FileLock {
 public:
  explicit FileLock(const fs::path& path) : fd_(open(path.c_str(), O_RDWR | O_CREAT, 0644)) {
    if (fd_ < 0) throw std::runtime_error("compile: cannot open the lock " + path.string());
    flock(fd_, LOCK_EX);
  }
  ~FileLock() { close(fd_); }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_;
};

std::string shapes_of(const std::vector<torch::Tensor>& tensors) {
  std::string out;
  for (const auto& t : tensors) {
    out += std::string(c10::toString(t.scalar_type())) + "[";
    for (auto s : t.sizes()) out += std::to_string(s) + ",";
    out += "]";
  }
  return out;
}

// A digest of the C++ model's tensors, names and bytes.
std::string weights_digest(worker::Arm& arm) {
  std::string bytes;
  auto add = [&](const std::string& name, const torch::Tensor& t) {
    const auto c = t.detach().cpu().contiguous();
    bytes += name;
    bytes += sha256_hex(std::string_view(static_cast<const char*>(c.data_ptr()), c.nbytes()));
  };
  for (const auto& p : arm.module().named_parameters()) add(p.key(), p.value());
  for (const auto& b : arm.module().named_buffers()) add(b.key(), b.value());
  return sha256_hex(bytes);
}

struct Package {
  fs::path dir;  // model.pt2, meta.json, code/
  json meta;
  bool compiled_now = false;
};

// A temporary request folder, removed with this object unless kept.
// When this worker process started, near enough (static initialisation).
const auto kLoaded = std::chrono::steady_clock::now();

// In TMPDIR, named with this worker's PID (tunebench-aoti-PPPPPPP-XXXXXX): removed when the
// compile is done, and, when the worker is killed before (its trial's timeout, a signal), by the
// next run's clearing of what dead runs left (run/leftovers.h). A failed compile's folder is kept
// for its log under a name that clearing leaves alone (…-kept).
struct RequestFolder {
  RequestFolder() {
    std::string pattern =
        (fs::temp_directory_path() / fmt::format("tunebench-aoti-{:07}-XXXXXX", getpid())).string();
    if (!mkdtemp(pattern.data())) throw std::runtime_error("compile: cannot make a request folder");
    path = pattern;
  }
  ~RequestFolder() {
    std::error_code ec;
    if (!keep) fs::remove_all(path, ec);
  }
  // Keeps the folder for the user, under its kept name.
  fs::path kept() {
    keep = true;
    std::error_code ec;
    fs::path to = path.string() + "-kept";
    fs::rename(path, to, ec);
    return ec ? path : to;
  }
  fs::path path;
  bool keep = false;
};

// The package for `arm`'s model, batch, device and `mode`: from the cache, or compiled now.
Package ensure_package(worker::Arm& arm, const std::string& mode) {
  const json request = request_of(arm, mode);
  const std::string scripts =
      read_file(script_dir() / "twins.py") + read_file(script_dir() / "aoti_compile.py");
  // Modes beyond the default fold or prepack weights into constants of their own (max-autotune's
  // packed GEMM weights), which feeding the C++ tensors by name cannot update: their packages are
  // compiled from, and kept for, these weights.
  const std::string weights = mode == "default" ? "" : weights_digest(arm);
  const std::string key = sha256_hex(request.dump() + shapes_of(arm.batch.inputs) +
                                     compat::torch_version() + scripts + weights)
                              .substr(0, 24);
  Package package;
  const fs::path root = cache_root();
  fs::create_directories(root);
  const std::string name = arm.spec.model.model + "-" + mode + "-" + key;
  package.dir = root / name;
  FileLock lock(root / (name + ".lock"));
  if (!fs::exists(package.dir / "model.pt2")) {
    // Only a package that is not there yet needs the tensors written out (hundreds of MB for the
    // larger presets).
    RequestFolder request_dir;
    write_request(arm, mode, request_dir.path.string());
    const fs::path dir = request_dir.path;
    // Within what is left of the trial's timeout_s, so that the worker says why before the
    // orchestrator kills it.
    const double deadline_s = std::max(
        1.0, 0.75 * arm.spec.timeout_s -
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - kLoaded).count());
    const int code =
        run_program({build_paths::torch_python(), (script_dir() / "aoti_compile.py").string(),
                     dir.string(), package.dir.string()},
                    dir / "log.txt", deadline_s);
    if (code == -1) {
      std::error_code ec;
      fs::remove_all(package.dir, ec);  // half a package is no package
      // And the compile's own work folder beside it (models/python/aoti_compile.py names it after
      // the package; the package's lock, held here, keeps other workers out of it).
      const std::string work = ".aoti-" + name + "-";
      for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
        if (it->path().filename().string().rfind(work, 0) == 0) {
          std::error_code removing;
          fs::remove_all(it->path(), removing);
        }
      }
      throw std::runtime_error(fmt::format(
          "compile: AOTInductor's compile of {} {} (models/python/aoti_compile.py) did not "
          "return within {:.0f} s (what was left of the experiment's timeout_s); its process "
          "group was "
          "killed and nothing was kept. Give the experiment a larger timeout_s: the first "
          "compile of a model takes minutes, later trials load it from the cache",
          arm.spec.model.model, mode, deadline_s));
    }
    if (code != 0) {
      const std::string message = script_message(read_file(dir / "log.txt"));
      throw std::runtime_error(
          fmt::format("compile: {} {} could not be compiled ({}; the request and full log: {})",
                      arm.spec.model.model, mode, message, request_dir.kept().string()));
    }
    package.compiled_now = true;
  }
  // Marks the package used (under its lock): ci/prune-cache.sh removes those unused for 14 days.
  std::error_code not_marked;  // a read-only cache still serves the package
  fs::last_write_time(package.dir, fs::file_time_type::clock::now(), not_marked);
  package.meta = json::parse(read_file(package.dir / "meta.json"));
  return package;
}

class CompileHooks : public worker::ArmHooks {
 public:
  explicit CompileHooks(json value) : value_(std::move(value)) {}

  void on_device(worker::Arm& arm) override {
    json e = {{kc::kForward, "eager"}};
    if (value_ == false) {
      // The eager model under no-grad, as the package runs without autograd.
      arm.forward = [model = arm.model](const models::Batch& batch) {
        torch::NoGradGuard no_grad;
        return model->forward(batch);
      };
    } else {
      const std::string mode = value_.get<std::string>();
      const Package package = ensure_package(arm, mode);
      const torch::Device device = arm.device->device();
      loader_ = std::make_shared<torch::inductor::AOTIModelPackageLoader>(
          (package.dir / "model.pt2").string(), "model", false, 1,
          device.is_cuda() ? device.index() : -1);
      // The package's constants, fed from the C++ model by name: the ON arm computes with the
      // same weights as the OFF arm, whatever seed made them.
      std::unordered_map<std::string, torch::Tensor> tensors;
      for (const auto& p : arm.module().named_parameters()) tensors[p.key()] = p.value().detach();
      for (const auto& b : arm.module().named_buffers()) tensors[b.key()] = b.value();
      const auto fqns = loader_->get_constant_fqns();
      std::unordered_map<std::string, torch::Tensor> constants;
      int64_t derived = 0;
      for (const auto& name : fqns) {
        const auto it = tensors.find(name);
        if (it != tensors.end()) {
          constants[name] = it->second;
        } else if (mode == "default") {
          throw std::runtime_error("compile: the package's constant '" + name +
                                   "' is no parameter or buffer of the C++ model");
        } else {
          ++derived;  // made from these weights at compile time (the key holds their digest)
        }
      }
      loader_->load_constants(constants, /*use_inactive=*/false,
                              /*check_full_update=*/derived == 0);
      arm.forward = [loader = loader_, calls = calls_](const models::Batch& batch) {
        ++*calls;
        return loader->run(batch.inputs).at(0);
      };
      e = {{kc::kForward, "aoti"},
           {kc::kMode, mode},
           {kc::kConstants, static_cast<int64_t>(fqns.size())},
           {kc::kConstantsLoaded, static_cast<int64_t>(constants.size())},
           {kc::kConstantsDerived, derived},
           {"model_tensors", static_cast<int64_t>(tensors.size())},
           {kc::kKernels, package.meta.value("kernels", -1)},
           {kc::kCode, (package.dir / "code").string()},
           {"package", (package.dir / "model.pt2").string()},
           {kc::kCompileSeconds, package.meta.value("compile_seconds", -1.0)},
           {"export_seconds", package.meta.value("export_seconds", -1.0)},
           {kc::kPackageBytes, package.meta.value("package_bytes", int64_t{-1})},
           {"twin_max_abs_difference", package.meta.value("twin_max_abs_difference", -1.0)},
           {kc::kCache, package.compiled_now ? "miss" : "hit"},
           {"python_torch", package.meta.value("torch_version", "")}};
    }
    arm.evidence[kc::kCompile] = e;
  }
  void begin_measurement(worker::Arm&) override { *calls_ = 0; }
  // The calls of the measured region (a step after it measures tensor memory).
  void end_measurement(worker::Arm&) override { measured_calls_ = *calls_; }
  void read_back(worker::Arm&, json& evidence) override {
    if (value_ != false) evidence[kc::kCompile][kc::kPackageCalls] = measured_calls_;
  }

 private:
  json value_;
  std::shared_ptr<torch::inductor::AOTIModelPackageLoader> loader_;
  std::shared_ptr<int64_t> calls_ = std::make_shared<int64_t>(0);
  int64_t measured_calls_ = 0;
};

#endif

class CompileAction : public worker::KnobAction {
 public:
  const char* family() const override { return "compile"; }
  std::map<std::string, std::string> unsupported(c10::DeviceType) const override {
    if (auto why = unavailable_reason(); !why.empty()) return {{kc::kCompile, why}};
    return {};
  }
  std::unique_ptr<worker::ArmHooks> prepare(worker::Arm& arm) const override {
    if (!arm.spec.settings.contains(kc::kCompile)) return nullptr;
#if TUNEBENCH_AOTI
    return std::make_unique<CompileHooks>(arm.spec.settings.at(kc::kCompile));
#else
    throw std::runtime_error("compile: " + unavailable_reason());
#endif
  }
};

}  // namespace
}  // namespace tunebench::compile_forward

namespace tunebench::worker {

const KnobAction& compile_action() {
  static const compile_forward::CompileAction action;
  return action;
}

}  // namespace tunebench::worker

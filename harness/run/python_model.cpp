#include "run/python_model.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/build_paths.h"
#include "knobs/knobs.h"
#include "models/python_model_config.h"
#include "models/registry.h"

namespace tunebench::python_model {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct Ran {
  int status = -1;  // the exit code, or -1 where the program did not exit by itself
  std::string out, err;
};

// A temporary file, removed with the object.
struct TempFile {
  std::string path;
  int fd = -1;
  TempFile() {
    path = (fs::temp_directory_path() / "tunebench-inspect-XXXXXX").string();
    fd = mkstemp(path.data());
    if (fd < 0) throw std::runtime_error("cannot make a temporary file in " + path);
  }
  ~TempFile() {
    close(fd);
    unlink(path.c_str());
  }
  std::string read() const {
    std::ifstream in(path);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
  }
};

// `argv` run with `input` on its stdin, its stdout and stderr kept (files, so that neither pipe
// can fill up while the other is read).
Ran run(const std::vector<std::string>& argv, const std::string& input) {
  TempFile in, out, err;
  if (write(in.fd, input.data(), input.size()) != ssize_t(input.size())) {
    throw std::runtime_error("cannot write " + in.path);
  }
  lseek(in.fd, 0, SEEK_SET);
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("cannot start " + argv.front());
  if (pid == 0) {
    dup2(in.fd, 0);
    dup2(out.fd, 1);
    dup2(err.fd, 2);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out.read(), err.read()};
}

std::string tail(const std::string& text, size_t n = 600) {
  return text.size() <= n ? text : "…" + text.substr(text.size() - n);
}

}  // namespace

models::ModelOffer inspect(const models::ModelSpec& spec, int64_t batch, bool train) {
  const auto config = models::configure(models::python_family(), spec);
  const std::string path = fs::absolute(config.path).lexically_normal().string();
  const std::string& python = build_paths::torch_python();
  if (python.empty() || access(python.c_str(), X_OK) != 0) {
    throw models::InvalidSpec(fmt::format(
        "{}: a model from a Python file runs in the Python worker, which needs the Python torch "
        "this build's LibTorch comes from: this build has none (the pypi build has). Run it with "
        "the pypi build, or save the model as TorchScript (torch.jit.save(torch.jit.script(m), "
        "\"model.pt\")) and give that file, with its --input",
        path));
  }
  knobs::ProcessSetup setup;
  knobs::run_in_python_worker(setup);
  std::vector<std::string> argv = setup.launcher;
  argv.push_back(setup.executable);
  argv.push_back("inspect");
  const json request = {{"options", {{"path", path}, {"class", config.model_class}}},
                        {"batch", batch},
                        {"train", train}};
  const Ran ran = run(argv, request.dump());
  json answer = json::parse(ran.out, nullptr, /*allow_exceptions=*/false);
  if (answer.is_discarded() || !answer.is_object()) {
    throw models::InvalidSpec(fmt::format("{}: the Python worker could not read it (exit {}): {}",
                                          path, ran.status,
                                          tail(ran.err.empty() ? ran.out : ran.err)));
  }
  if (answer.contains("error")) throw models::InvalidSpec(answer["error"].get<std::string>());
  models::ModelOffer offer;
  try {
    offer.file = config.path;
    offer.sha256 = answer.at("sha256").get<std::string>();
    offer.parameters = answer.at("parameters").get<int64_t>();
    offer.trainable = answer.at("trainable").get<bool>();
    offer.conv2d = answer.at("conv2d").get<bool>();
    offer.output = answer.at("output").get<std::string>();
    offer.inputs = answer.at("inputs");
    offer.model_class = answer.at("class").get<std::string>();
    offer.knobs = answer.at("knobs").get<std::vector<std::string>>();
  } catch (const json::exception& e) {
    throw models::InvalidSpec(
        fmt::format("{}: the Python worker's answer is not an offer: {}", path, e.what()));
  }
  return offer;
}

}  // namespace tunebench::python_model

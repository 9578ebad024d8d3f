#include "run/python_model.h"

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <sstream>

#include "core/build_paths.h"
#include "knobs/knobs.h"
#include "models/python_model_config.h"
#include "models/registry.h"
#include "run/orchestrator.h"

namespace tunebench::python_model {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The step the Python worker's inspect said it was in last (models/python/worker.py,
// inspect_step), in words; and `err` without those lines.
constexpr const char* kStepMarker = "tunebench inspect step: ";

std::string step_in_words(const std::string& step, const models::PythonModelConfig& config) {
  const std::string module = config.model_class.empty() ? "the module" : config.model_class + "()";
  if (step == "load" && config.exported) return "torch.export.load of the archive";
  if (step == "load") return "the import of the file, " + module + " or get_example_inputs()";
  if (step == "forward" && config.exported) return "its forward on the archive's inputs";
  if (step == "forward") return "its forward on get_example_inputs()'s inputs";
  if (step == "backward") return "its training step (forward, then backward of its loss)";
  return "starting the Python worker (importing torch)";
}

std::string last_step(const std::string& err, std::string& rest) {
  std::istringstream lines(err);
  std::string step;
  rest.clear();
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(kStepMarker, 0) == 0) {
      step = line.substr(std::char_traits<char>::length(kStepMarker));
    } else {
      rest += line + "\n";
    }
  }
  return step;
}

std::string tail(const std::string& text, size_t n = 600) {
  return text.size() <= n ? text : "…" + text.substr(text.size() - n);
}

}  // namespace

models::ModelOffer inspect(const models::ModelSpec& spec, int64_t batch, bool train,
                           double timeout_s) {
  const auto config = models::configure(models::python_family(), spec);
  const std::string path = fs::absolute(config.path).lexically_normal().string();
  const std::string& python = build_paths::torch_python();
  if (python.empty() || access(python.c_str(), X_OK) != 0) {
    throw models::InvalidSpec(fmt::format(
        "{}: a {} runs in the Python worker, which needs the Python torch this build's LibTorch "
        "comes from: this build has none (the pypi build has). Run it with the pypi build, or "
        "save the model as TorchScript (torch.jit.save(torch.jit.script(m), \"model.pt\")) and "
        "give that file, with its --input",
        path, config.exported ? "torch.export archive" : "model from a Python file"));
  }
  knobs::ProcessSetup setup;
  knobs::run_in_python_worker(setup);
  std::vector<std::string> argv = setup.launcher;
  argv.push_back(setup.executable);
  argv.push_back("inspect");
  json options = {{"path", path}, {"class", config.model_class}};
  if (!config.inputs.empty()) options["inputs"] = models::to_json(config.inputs);
  const json request = {
      {"preset", spec.preset}, {"options", options}, {"batch", batch}, {"train", train}};
  // Started as a worker is (its own process group, killed with it; pipes, no files), with a
  // deadline: a model whose forward never returns must not hang the run.
  const orchestrator::WorkerOutcome ran =
      orchestrator::spawn(argv, orchestrator::worker_environment(setup), request.dump(), timeout_s);
  std::string err;
  const std::string step = last_step(ran.err_tail, err);
  if (ran.timed_out) {
    throw models::InvalidSpec(fmt::format(
        "{}: {} did not return within {} s (the experiment's timeout_s); the Python worker's "
        "process group was killed. Make it return, or give the suite a larger timeout_s",
        path, step_in_words(step, config), timeout_s));
  }
  json answer = json::parse(ran.out, nullptr, /*allow_exceptions=*/false);
  if (answer.is_discarded() || !answer.is_object()) {
    throw models::InvalidSpec(fmt::format("{}: the Python worker could not read it (exit {}): {}",
                                          path, ran.exit_code, tail(err.empty() ? ran.out : err)));
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
    offer.format = answer.value("format", "");
    offer.note = answer.value("note", "");
  } catch (const json::exception& e) {
    throw models::InvalidSpec(
        fmt::format("{}: the Python worker's answer is not an offer: {}", path, e.what()));
  }
  return offer;
}

}  // namespace tunebench::python_model

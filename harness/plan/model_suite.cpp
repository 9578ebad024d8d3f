#include "plan/model_suite.h"

#include <fmt/format.h>

#include <filesystem>

#include "knobs/knobs.h"
#include "models/registry.h"
#include "models/torchscript_config.h"

namespace tunebench::plan {

using nlohmann::json;

namespace {

// The catalog's knobs a CPU run of a user's model may try: not the CUDA-only ones, and not
// worker_build, which compares two builds of tunebench rather than a setting of the model.
bool tried_on_the_cpu(const knobs::Knob& k) { return k.where != "cuda" && k.id != "worker_build"; }

json experiment(const std::string& knob, const json& model) {
  json x = model;
  x["knob"] = knob;
  return x;
}

}  // namespace

suite::Suite model_suite(const ModelRequest& request) {
  if (request.inputs.empty()) {
    throw suite::SuiteError(fmt::format(
        "--model {}: give the inputs its forward takes, one --input each, as SHAPE:DTYPE per "
        "sample (e.g. --input 3x224x224:float32, or --input 128:int64:50257 for token ids below "
        "50257); the batch (--batch) is their first dimension",
        request.path));
  }
  if (request.batch < 1) {
    throw suite::SuiteError(fmt::format("--batch must be at least 1, got {}", request.batch));
  }
  std::vector<models::FileInput> parsed;
  json inputs = json::array();
  for (const auto& text : request.inputs) {
    try {
      parsed.push_back(models::parse_input_argument(text));
    } catch (const models::InvalidSpec& e) {
      throw suite::SuiteError(e.what());
    }
    inputs.push_back(models::to_json(parsed.back()));
  }
  const std::string path = std::filesystem::absolute(request.path).lexically_normal().string();
  const json model = {{"model", "torchscript"},
                      {"preset", "file"},
                      {"mode", to_string(request.mode)},
                      {"options", {{"path", path}, {"inputs", inputs}}}};
  json experiments = json::array();
  for (const auto& k : knobs::catalog()) {
    // compile in training is a suite of its own (the Python worker); a file model has no twin
    // for it either way, and in inference the plan says so.
    if (k.needs == knobs::Needs::twin && request.mode == Mode::train) continue;
    if (tried_on_the_cpu(k)) experiments.push_back(experiment(k.id, model));
  }
  // The controls: an A/A (both arms alike: the noise floor) and a +3 % slowdown the run must
  // detect, each sampling on towards ±2 % for up to 30 s.
  const std::string control = request.mode == Mode::infer ? "no_grad" : "zero_grad_none";
  json aa = experiment(control, model), slow = experiment(control, model);
  aa["aa"] = true;
  slow["slowdown"] = 3;
  aa["budget_s"] = slow["budget_s"] = 30;
  experiments.push_back(aa);
  experiments.push_back(slow);
  const std::string stem = std::filesystem::path(request.path).stem().string();
  const json s = {
      {"name", "model-" + stem},
      {"description",
       fmt::format("Every catalog knob that can run on the CPU, on {} ({}), {}, batch {}, with an "
                   "A/A and a +3 % control: made by tunebench run --model",
                   path, models::describe_inputs(parsed), to_string(request.mode), request.batch)},
      {"defaults",
       {{"processes", 2},
        {"warmup", 3},
        {"samples", 5},
        {"iterations", 5},
        {"timeout_s", 300},
        {"batch", request.batch},
        {"design", "auto"},
        {"workers", 4},
        {"blocks", 4},
        {"block_samples", 2},
        {"budget_s", 0}}},
      {"experiments", experiments}};
  return suite::parse(s.dump(2), "run --model " + request.path);
}

}  // namespace tunebench::plan

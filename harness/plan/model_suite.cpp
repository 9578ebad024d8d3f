#include "plan/model_suite.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "knobs/knobs.h"
#include "models/registry.h"
#include "models/torchscript_config.h"

namespace tunebench::plan {

using nlohmann::json;

namespace {

// The catalog's knobs a CPU run of a user's model may try: not the CUDA-only ones, and not one
// whose default arms are the same (worker_build: "self" against "self" until a suite names the two
// builds it compares), which would only measure an A/A.
bool tried_on_the_cpu(const knobs::Knob& k) { return k.where != "cuda" && k.off != k.on; }

// `settings` over the request's defaults, less the knob an experiment varies (its arms set it).
json over_defaults(const ModelRequest& request, const json& settings, const std::string& knob) {
  json merged = request.defaults;
  merged.update(settings);
  merged.erase(knob);
  return merged;
}

json experiment(const std::string& knob, const json& model, const ModelRequest& request) {
  json x = model;
  x["knob"] = knob;
  if (const json settings = over_defaults(request, json::object(), knob); !settings.empty())
    x["settings"] = settings;
  return x;
}

// The --input arguments as the option inputs holds them, checked.
json parsed_inputs(const ModelRequest& request) {
  json inputs = json::array();
  for (const auto& text : request.inputs) {
    try {
      inputs.push_back(models::to_json(models::parse_input_argument(text)));
    } catch (const models::InvalidSpec& e) {
      throw suite::SuiteError(e.what());
    }
  }
  return inputs;
}

// The model as a suite's experiment names it, checked: {model, preset, mode[, options]}.
json model_fields(const ModelRequest& request) {
  if (request.batch < 1) {
    throw suite::SuiteError(fmt::format("--batch must be at least 1, got {}", request.batch));
  }
  if (!request.builtin.empty()) {
    const auto names = models::model_names();
    if (std::find(names.begin(), names.end(), request.builtin) == names.end() ||
        models::descriptor(request.builtin).from_file) {
      std::string valid;
      for (const auto& n : names) {
        if (!models::descriptor(n).from_file) valid += (valid.empty() ? "" : ", ") + n;
      }
      throw suite::SuiteError(
          fmt::format("--model {}: no such file, and not a built-in model ({}); give the path of a "
                      "TorchScript archive, of a torch.export archive (.pt2), of a Python file "
                      "(.py) or one of those names",
                      request.builtin, valid));
    }
    return {
        {"model", request.builtin}, {"preset", request.preset}, {"mode", to_string(request.mode)}};
  }
  const std::string path = std::filesystem::absolute(request.path).lexically_normal().string();
  if (request.python() && !request.exported() && !request.inputs.empty()) {
    throw suite::SuiteError(fmt::format(
        "--model {}: a model from a Python file gives its own inputs (get_example_inputs()); "
        "--input is for a TorchScript archive or a torch.export archive (.pt2)",
        request.path));
  }
  if (!request.model_class.empty() && (!request.python() || request.exported())) {
    throw suite::SuiteError(fmt::format(
        "--model {}: --class names the class in a Python file (.py); a {} is one module",
        request.path, request.exported() ? "torch.export archive" : "TorchScript archive"));
  }
  if (request.python()) {
    json options = {{"path", path}};
    if (!request.model_class.empty()) options["class"] = request.model_class;
    if (!request.inputs.empty()) options["inputs"] = parsed_inputs(request);
    return {{"model", "python"},
            {"preset", request.exported() ? "export" : "file"},
            {"mode", to_string(request.mode)},
            {"options", options}};
  }
  if (request.inputs.empty()) {
    throw suite::SuiteError(fmt::format(
        "--model {}: give the inputs its forward takes, one --input each, as SHAPE:DTYPE per "
        "sample (e.g. --input 3x224x224:float32, or --input 128:int64:50257 for token ids below "
        "50257); the batch (--batch) is their first dimension",
        request.path));
  }
  return {{"model", "torchscript"},
          {"preset", "file"},
          {"mode", to_string(request.mode)},
          {"options", {{"path", path}, {"inputs", parsed_inputs(request)}}}};
}

// What the model is, for a suite's description.
std::string described(const ModelRequest& request, const json& model) {
  std::string what = request.name();
  if (request.python() && !request.exported()) {
    what = model["options"]["path"].get<std::string>() +
           (request.model_class.empty() ? "" : " (class " + request.model_class + ")");
  } else if (request.builtin.empty()) {
    std::vector<models::FileInput> parsed;  // checked by model_fields
    for (const auto& text : request.inputs) parsed.push_back(models::parse_input_argument(text));
    what = fmt::format(
        "{} ({})", model["options"]["path"].get<std::string>(),
        parsed.empty() ? "the example inputs it holds" : models::describe_inputs(parsed));
  }
  return fmt::format("{}, {}, batch {}", what, to_string(request.mode), request.batch);
}

// A suite of `experiments` on the request's model: paired where the knobs allow ("auto"), 4
// workers of 4 blocks of 2 samples each, sampling on for up to budget_s per experiment.
suite::Suite made(const ModelRequest& request, const std::string& name,
                  const std::string& description, const json& experiments, double budget_s) {
  const json s = {{"name", name},
                  {"description", description},
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
                    {"budget_s", budget_s}}},
                  {"experiments", experiments}};
  return suite::parse(s.dump(2), name);
}

std::string stem(const ModelRequest& request) {
  return request.builtin.empty() ? std::filesystem::path(request.path).stem().string()
                                 : request.builtin + "-" + request.preset;
}

}  // namespace

bool ModelRequest::python() const {
  return builtin.empty() && (std::filesystem::path(path).extension() == ".py" || exported());
}

bool ModelRequest::exported() const {
  return builtin.empty() && std::filesystem::path(path).extension() == ".pt2";
}

std::string ModelRequest::name() const {
  return builtin.empty() ? path : fmt::format("{} (preset {})", builtin, preset);
}

suite::Suite model_suite(const ModelRequest& request) {
  const json model = model_fields(request);
  json experiments = json::array();
  std::string left_out;
  for (const auto& k : knobs::catalog()) {
    // compile in training is a suite of its own (the Python worker); a file model has no twin
    // for it either way, and in inference the plan says so.
    if (k.needs == knobs::Needs::twin && request.mode == Mode::train) continue;
    if (!tried_on_the_cpu(k)) continue;
    // An arm this batch cannot be (grad_accum's micro-batches of a batch of 2) is left out and
    // said in the description, rather than refusing the whole suite.
    if (const std::string why = knobs::arm_error(json{{k.id, k.on}}, request.mode, request.batch);
        !why.empty()) {
      left_out += fmt::format("; left out: {}", why);
      continue;
    }
    experiments.push_back(experiment(k.id, model, request));
  }
  // The controls: an A/A (both arms alike: the noise floor) and a +3 % slowdown the run must
  // detect, each sampling on towards ±2 % for up to 30 s.
  const std::string control = request.mode == Mode::infer ? "no_grad" : "zero_grad_none";
  json aa = experiment(control, model, request), slow = experiment(control, model, request);
  aa["aa"] = true;
  slow["slowdown"] = 3;
  aa["budget_s"] = slow["budget_s"] = 30;
  experiments.push_back(aa);
  experiments.push_back(slow);
  return made(request, "model-" + stem(request),
              fmt::format("Every catalog knob that can run on the CPU, on {}, with an A/A and a "
                          "+3 % control: made by tunebench for the model{}",
                          described(request, model), left_out),
              experiments, 0);
}

suite::Suite ladder_step_suite(const ModelRequest& request, const std::string& knob,
                               const json& config, double budget_s) {
  const json model = model_fields(request);
  json x = experiment(knob, model, request);
  x["settings"] = over_defaults(request, config, knob);
  x["name"] = fmt::format("tune.add-{}", knob);
  return made(request, "tune-step-" + stem(request),
              fmt::format("tunebench tune: {} added to {} on {}", knob,
                          config.empty() ? std::string("the defaults") : config.dump(),
                          described(request, model)),
              json::array({x}), budget_s);
}

suite::Suite final_suite(const ModelRequest& request, const json& config, const json& single,
                         double budget_s) {
  const json model = model_fields(request);
  // The experiment's knob names the comparison's first change; its arms are the configurations.
  // Its arms are whole configurations over the defaults: what a program that sets nothing runs.
  auto arm = [&](const json& settings) {
    json merged = request.defaults;
    merged.update(settings);
    return merged;
  };
  json vs_default = experiment(config.begin().key(), model, ModelRequest{});
  vs_default["name"] = "tuned.vs-default";
  vs_default["arms"] = {{"off", arm(json::object())}, {"on", arm(config)}};
  json experiments = json::array({vs_default});
  if (single != config) {
    json vs_single = experiment(single.begin().key(), model, ModelRequest{});
    vs_single["name"] = "tuned.vs-best-single";
    vs_single["arms"] = {{"off", arm(single)}, {"on", arm(config)}};
    experiments.push_back(vs_single);
  }
  return made(request, "tune-final-" + stem(request),
              fmt::format("tunebench tune: {} against the defaults{} on {}", config.dump(),
                          single != config ? " and against " + single.dump() + " alone" : "",
                          described(request, model)),
              experiments, budget_s);
}

}  // namespace tunebench::plan

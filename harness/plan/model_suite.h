// The suite `tunebench run --model FILE` makes: every catalog knob that can run on the CPU, on
// the user's model from a file (or a built-in model, for `tunebench tune`), in one mode at one
// batch, with an A/A and a +3 % control, each
// paired where its knob allows (design "auto"). Knobs the model does not offer are kept in the
// suite: the plan lists them as not applicable with the reason. No torch.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/records.h"
#include "plan/suite.h"

namespace tunebench::plan {

struct ModelRequest {
  std::string path;                 // the TorchScript archive, torch.export archive (.pt2) or
                                    // Python file (.py); or
  std::string builtin;              // a built-in model (models/registry.def: resnet50, gpt, dlrm)
  std::string preset = "tiny";      // with builtin: its preset
  std::vector<std::string> inputs;  // as --input gives each: SHAPE:DTYPE[:LOW]:HIGH
  std::string model_class;          // with a Python file: the class that makes the module
  bool python() const;    // path names what the Python worker runs: a Python file (.py) or
  bool exported() const;  // a torch.export archive (.pt2: model python, preset export)
  Mode mode = Mode::infer;
  int64_t batch = 8;
  // Settings every arm runs unless it sets that knob itself, over tunebench's base settings:
  // `tune` gives what a program that sets nothing runs where that differs from the base
  // (knobs::unset_settings: LibTorch's own thread count), so that every stage measures from what
  // the user's program runs. Empty: the base settings.
  nlohmann::json defaults = nlohmann::json::object();
  // How messages name it: the file's path, or "resnet50 (preset tiny)".
  std::string name() const;
};

// Throws suite::SuiteError (with what is wrong and what is valid) for bad inputs or batch.
suite::Suite model_suite(const ModelRequest& request);

// `tunebench tune`'s later stages (run/tune.h), on the same model, mode and batch, each
// experiment paired where its knobs allow and sampling on towards ±2 % for up to budget_s:
//   a step of the ladder: `knob` off and on, every arm with `config` (knob id -> value, the
//   configuration so far) set;
suite::Suite ladder_step_suite(const ModelRequest& request, const std::string& knob,
                               const nlohmann::json& config, double budget_s);
//   the final measurement: `config` against the defaults ("tuned.vs-default") and, where
//   `single` (one knob's setting) differs from it, against that alone ("tuned.vs-best-single").
suite::Suite final_suite(const ModelRequest& request, const nlohmann::json& config,
                         const nlohmann::json& single, double budget_s);

}  // namespace tunebench::plan

// The suite `tunebench run --model FILE` makes: every catalog knob that can run on the CPU, on
// the user's model from a file, in one mode at one batch, with an A/A and a +3 % control, each
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
  std::string path;                 // the TorchScript archive
  std::vector<std::string> inputs;  // as --input gives each: SHAPE:DTYPE[:LOW]:HIGH
  Mode mode = Mode::infer;
  int64_t batch = 8;
};

// Throws suite::SuiteError (with what is wrong and what is valid) for bad inputs or batch.
suite::Suite model_suite(const ModelRequest& request);

}  // namespace tunebench::plan

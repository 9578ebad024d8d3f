// A model from a file: a TorchScript archive (torch.jit.save) that the C++ worker loads, with the
// inputs its forward takes described in the suite, since an archive does not say them:
//   "model": "torchscript", "preset": "file",
//   "options": {"path": "my_model.pt",
//               "inputs": [{"shape": [3, 224, 224], "dtype": "float32"},
//                          {"shape": [128], "dtype": "int64", "high": 50257}]}
// Each shape is per sample: the suite's batch is the first dimension. Integer inputs are drawn
// uniformly from [low, high) (token ids below the vocabulary size), floating ones from N(0, 1).
// Torch-free: the registry, the planner and the fuzzer read it without LibTorch; what the file
// holds (parameters, convolutions, whether it trains) is read by models/torchscript.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/family.h"

namespace tunebench::models {

struct FileInput {
  std::vector<int64_t> shape;  // per sample
  std::string dtype = "float32";
  int64_t low = 0, high = 0;  // integer dtypes: values in [low, high)
};

struct TorchScriptConfig {
  std::string path;
  std::vector<FileInput> inputs;
};

// The dtypes an input may have, floating then integer.
const std::vector<std::string>& file_input_dtypes();
bool is_integer_dtype(const std::string& dtype);

// "3x224x224 float32, 128 int64 in [0, 50257)".
std::string describe_inputs(const std::vector<FileInput>& inputs);

// `--input 3x224x224:float32` or `128:int64:50257` (or `:LOW:HIGH`), as the command line gives
// one input; throws InvalidSpec with what a valid one looks like.
FileInput parse_input_argument(const std::string& text);
nlohmann::json to_json(const FileInput& input);
// The option inputs: a list of one or more inputs, each as a suite gives one; throws the message
// fragment options take (models/family.h).
std::vector<FileInput> parse_inputs(const nlohmann::json& v);
nlohmann::json to_json(const std::vector<FileInput>& inputs);

const ModelFamily<TorchScriptConfig>& torchscript_family();

}  // namespace tunebench::models

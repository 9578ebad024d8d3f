// A model from a Python file: a torch.nn.Module class (or a function that makes one) with
// get_example_inputs(), the convention of PyTorch's dynamo benchmarks. It runs in the Python
// worker (models/python/worker.py, user_model.py), on the pypi build, whose Python has torch:
//   "model": "python", "preset": "file",
//   "options": {"path": "my_model.py", "class": "MyNet"}
// class may be left out where the file defines one such class. The inputs are the model's own
// (get_example_inputs(), batch first): the suite's batch repeats their rows. Torch-free: what the
// file holds is read by the Python worker's inspect (run/python_model.h).
#pragma once

#include <string>

#include "models/family.h"

namespace tunebench::models {

struct PythonModelConfig {
  std::string path;
  std::string model_class;  // "" where the file has one Module class with get_example_inputs()
};

const ModelFamily<PythonModelConfig>& python_family();

}  // namespace tunebench::models

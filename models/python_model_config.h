// A model from a Python file: a torch.nn.Module class (or a function that makes one) with
// get_example_inputs(), the convention of PyTorch's dynamo benchmarks. It runs in the Python
// worker (models/python/worker.py, user_model.py), on the pypi build, whose Python has torch:
//   "model": "python", "preset": "file",
//   "options": {"path": "my_model.py", "class": "MyNet"}
// class may be left out where the file defines one such class. The inputs are the model's own
// (get_example_inputs(), batch first): the suite's batch repeats their rows.
// Preset "export" is a torch.export archive (torch.export.save, .pt2) the Python worker loads
// (models/python/export_archive.py: torch.export.load(path).module()):
//   "model": "python", "preset": "export", "options": {"path": "model.pt2"}
// its inputs the example inputs the archive holds, rows repeated as above, or where the option
// inputs gives them (as a TorchScript archive's, models/torchscript_config.h) those, drawn.
// Torch-free: what the file holds is read by the Python worker's inspect (run/python_model.h).
#pragma once

#include <string>
#include <vector>

#include "models/family.h"
#include "models/torchscript_config.h"

namespace tunebench::models {

struct PythonModelConfig {
  bool exported = false;  // preset "export": a torch.export archive, not a Python file
  std::string path;
  std::string model_class;  // "" where the file has one Module class with get_example_inputs()
  std::vector<FileInput> inputs;  // preset "export": in place of the archive's example inputs
};

const ModelFamily<PythonModelConfig>& python_family();

}  // namespace tunebench::models

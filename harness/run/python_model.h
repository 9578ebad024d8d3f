// What a model from a Python file or a torch.export archive (models/python_model_config.h)
// offers the knobs, read by the Python worker's inspect (models/python/worker.py): it imports the
// file and makes the module (or loads the archive's, export_archive.py), runs its forward once on
// its example inputs at the suite's batch (and in training a backward of its loss) and says what
// it holds and which knobs it runs on it.
#pragma once

#include <cstdint>

#include "core/model_spec.h"

namespace tunebench::python_model {

// Throws models::InvalidSpec with one message naming the file for: a build without a Python torch
// (the debian build: what to do instead), a path that is not there, a file that fails to import
// (its error and line), no such class (the ones it has), no get_example_inputs(), inputs or an
// output that are not tensors, a forward that rejects its inputs, no trainable parameter in
// training, a Python worker that gives no answer, and one that does not answer within
// `timeout_s` (the step it was in named; its process group killed); for a torch.export archive
// also what is not one (not a zip, a TorchScript archive, an AOTInductor package, another zip), an
// archive another torch's version wrote, no example inputs, a batch fixed at export, and a
// backward its graph cannot take.
models::ModelOffer inspect(const models::ModelSpec& spec, int64_t batch, bool train,
                           double timeout_s);

}  // namespace tunebench::python_model

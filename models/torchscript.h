// A model from a TorchScript archive (models/torchscript_config.h has its options): loaded with
// torch::jit::load, its parameters and buffers registered, under the names the archive gives them
// (dots made underscores), on a module of its own, so that everything the harness does to a
// model's module (the device, train/eval, optimizers, channels_last, zeroing gradients) reaches
// the archive's own tensors. forward() returns the archive's output (the first tensor of a
// tuple); loss() is the sum of every floating output, so any model whose parameters require
// gradients trains.
#pragma once

#include <cstdint>
#include <string>

#include "core/model_spec.h"
#include "models/common.h"

namespace tunebench::models {

// Reads the archive `spec` names, runs its forward once on a seeded batch of `batch` samples (and
// in training a backward of its loss), and says what it offers the knobs. Throws InvalidSpec with
// one message naming the file for: a path that is not there; a file that is not a TorchScript
// archive, or one this LibTorch cannot read (a newer file format: the version it has and the
// one this build reads); inputs its forward rejects (its own error, with the shapes given); an
// output that is not a tensor or a tuple of tensors; no parameter that requires a gradient in
// training.
ModelOffer inspect_file_model(const ModelSpec& spec, int64_t batch, bool train);

}  // namespace tunebench::models

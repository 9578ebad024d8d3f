// The build family: knobs that are a build-time option of the model (conv_bias_off, inplace_act,
// causal_mask_fly, vocab_pad, builtin_ops, flash_attention). The worker builds the model with the
// option (knobs::model_options); the evidence is what the built model describes about itself,
// under evidence::kModel (its keys are in knobs/evidence.h, namespace evidence::model).
#pragma once

#include "knobs/evidence.h"
#include "knobs/knob.h"

namespace tunebench::knobs::build {

// The rules of this family (knobs/knob.h's KnobRules).
const KnobRules& rules();

}  // namespace tunebench::knobs::build

// The GPT decoder's configuration, presets, options and size arithmetic (models/gpt.h has the
// layout, the build-time switches and the modules). Torch-free.
#pragma once

#include <cstdint>

#include "models/family.h"

namespace tunebench::models {

struct GptConfig {
  int64_t n_layer = 12;
  int64_t n_head = 12;
  int64_t n_embd = 768;
  int64_t vocab_size = 50257;
  int64_t block_size = 1024;  // context length: positions and the stored mask
  int64_t seq_len = 1024;     // tokens per synthetic sample (≤ block_size)
  bool builtin_ops = true;
  bool fused_attention = true;
  bool causal_mask_fly = true;
  bool vocab_pad = false;
  int64_t mlp_hidden = 0;  // the MLP's hidden width; 0 = 4 · n_embd
  bool dims_mult8 = false;
  bool checkpoint = false;

  int64_t padded_vocab() const {
    if (vocab_pad) return (vocab_size + 63) / 64 * 64;
    return dims_mult8 ? (vocab_size + 7) / 8 * 8 : vocab_size;
  }
  int64_t hidden() const { return mlp_hidden > 0 ? mlp_hidden : 4 * n_embd; }
  int64_t padded_hidden() const { return dims_mult8 ? (hidden() + 7) / 8 * 8 : hidden(); }
};

ModelStats gpt_stats(const GptConfig& config);

// Presets and options (models/family.h); gpt_descriptor() is the registry's view of it.
const ModelFamily<GptConfig>& gpt_family();

}  // namespace tunebench::models

#include "models/gpt_config.h"

namespace tunebench::models {

ModelStats gpt_stats(const GptConfig& cfg) {
  const int64_t C = cfg.n_embd, V = cfg.padded_vocab(), T = cfg.seq_len, H = cfg.padded_hidden();
  ModelStats stats;
  const int64_t layer_norm = 2 * C;
  const int64_t per_layer = 2 * layer_norm       // ln_1, ln_2
                            + C * 3 * C + 3 * C  // c_attn
                            + C * C + C          // c_proj
                            + C * H + H          // c_fc
                            + H * C + C;         // mlp_proj
  stats.parameters = V * C + cfg.block_size * C + cfg.n_layer * per_layer + layer_norm;
  const double linear_macs_per_token = 3.0 * C * C + C * C + 2.0 * C * H;
  const double attention_macs = 2.0 * T * T * C;  // q kᵀ and (att) v, full T×T as computed
  // Per token and layer: LayerNorms, q k v, attention output and projection, MLP in and out
  // (8C + 2H, 16C at the usual H = 4C), plus the attention scores and probabilities (2·heads·T);
  // logits per token.
  stats.activation_elements =
      double(T) * (cfg.n_layer * (8.0 * C + 2.0 * H + 2.0 * cfg.n_head * T) + 2.0 * V);
  stats.forward_flops =
      2.0 * (cfg.n_layer * (T * linear_macs_per_token + attention_macs) + double(T) * C * V);
  stats.input_shape = std::to_string(T) + " tokens";
  return stats;
}

namespace {
GptConfig gpt_preset(int64_t n_layer, int64_t n_head, int64_t n_embd, int64_t vocab_size,
                     int64_t block_size, int64_t seq_len) {
  GptConfig c;
  c.n_layer = n_layer;
  c.n_head = n_head;
  c.n_embd = n_embd;
  c.vocab_size = vocab_size;
  c.block_size = block_size;
  c.seq_len = seq_len;
  return c;
}

void check_gpt(const GptConfig& c, const std::string& preset) {
  if (c.n_embd % c.n_head != 0) {
    throw InvalidSpec(fmt::format("gpt/{}: n_embd {} must be a multiple of n_head {}", preset,
                                  c.n_embd, c.n_head));
  }
  if (c.seq_len > c.block_size) {
    throw InvalidSpec(fmt::format("gpt/{}: seq_len {} exceeds block_size {} (the context)", preset,
                                  c.seq_len, c.block_size));
  }
}
}  // namespace

const ModelFamily<GptConfig>& gpt_family() {
  const GptConfig gpt2;  // GPT-2 small, 1024 tokens
  static const ModelFamily<GptConfig> family{
      "gpt",
      {{"tiny", "2 layers, 2 heads, 32 channels, vocab 101, 32 tokens: for tests",
        gpt_preset(2, 2, 32, 101, 64, 32)},
       {"small", "4 GPT-2 small layers (12 heads, 768 channels, vocab 50257), 256 tokens",
        gpt_preset(4, gpt2.n_head, gpt2.n_embd, gpt2.vocab_size, gpt2.block_size, 256)},
       {"gpt2", "GPT-2 small: 12 layers, 12 heads, 768 channels, vocab 50257, 1024 tokens", gpt2}},
      {int_option("n_layer", &GptConfig::n_layer, 1, 1 << 10),
       int_option("n_head", &GptConfig::n_head, 1, 1 << 10),
       int_option("n_embd", &GptConfig::n_embd, 1, 1 << 16),
       int_option("vocab_size", &GptConfig::vocab_size, 2, 1 << 24),
       int_option("block_size", &GptConfig::block_size, 1, 1 << 24),
       int_option("seq_len", &GptConfig::seq_len, 1, 1 << 24),
       bool_option("builtin_ops", &GptConfig::builtin_ops),
       bool_option("fused_attention", &GptConfig::fused_attention),
       bool_option("causal_mask_fly", &GptConfig::causal_mask_fly),
       bool_option("vocab_pad", &GptConfig::vocab_pad),
       int_option("mlp_hidden", &GptConfig::mlp_hidden, 0, 1 << 18),
       bool_option("dims_mult8", &GptConfig::dims_mult8),
       bool_option("checkpoint", &GptConfig::checkpoint)},
      gpt_stats,
      check_gpt};
  return family;
}

// --- the descriptor: what the registry (models/registry.def) knows of GPT ----------------------
const ModelDescriptor& gpt_descriptor() {
  static const ModelDescriptor descriptor = describe(gpt_family());
  return descriptor;
}

}  // namespace tunebench::models

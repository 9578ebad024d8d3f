#include "models/gpt.h"

#include <cmath>
#include <stdexcept>

#include "platform/compat.h"

namespace tunebench::models {

namespace nn = torch::nn;

LayerNormImpl::LayerNormImpl(int64_t channels, bool builtin_) : builtin(builtin_) {
  weight = register_parameter("weight", torch::ones({channels}));
  bias = register_parameter("bias", torch::zeros({channels}));
}

torch::Tensor LayerNormImpl::forward(const torch::Tensor& x) {
  constexpr double kEps = 1e-5;
  if (builtin) return torch::layer_norm(x, {x.size(-1)}, weight, bias, kEps);
  auto mean = x.mean(-1, /*keepdim=*/true);
  auto var = (x - mean).pow(2).mean(-1, /*keepdim=*/true);  // biased, as LayerNorm defines it
  return (x - mean) * torch::rsqrt(var + kEps) * weight + bias;
}

namespace {
// GPT-2's tanh approximation of GELU, by hand.
torch::Tensor gelu_tanh(const torch::Tensor& x) {
  const double k = std::sqrt(2.0 / M_PI);
  return 0.5 * x * (1.0 + torch::tanh(k * (x + 0.044715 * x.pow(3))));
}
}  // namespace

CausalSelfAttentionImpl::CausalSelfAttentionImpl(const GptConfig& cfg)
    : n_head(cfg.n_head), fused(cfg.fused_attention) {
  c_attn = register_module("c_attn", nn::Linear(cfg.n_embd, 3 * cfg.n_embd));
  c_proj = register_module("c_proj", nn::Linear(cfg.n_embd, cfg.n_embd));
  if (!cfg.causal_mask_fly) {
    mask =
        register_buffer("mask", torch::ones({cfg.block_size, cfg.block_size}, torch::kBool).tril());
  }
}

torch::Tensor CausalSelfAttentionImpl::forward(const torch::Tensor& x) {
  const int64_t B = x.size(0), T = x.size(1), C = x.size(2), D = C / n_head;
  auto qkv = c_attn(x).split(C, /*dim=*/2);  // 3 × [B, T, C]
  auto heads = [&](const torch::Tensor& t) { return t.view({B, T, n_head, D}).transpose(1, 2); };
  auto q = heads(qkv[0]), k = heads(qkv[1]), v = heads(qkv[2]);  // [B, H, T, D]

  // [T, T] bool, true = may attend; from the stored buffer or made now.
  auto causal_mask = [&] {
    if (mask.defined()) return mask.slice(0, 0, T).slice(1, 0, T);
    return torch::ones({T, T}, torch::TensorOptions().dtype(torch::kBool).device(x.device()))
        .tril();
  };
  torch::Tensor y;
  if (fused) {
    y = mask.defined() ? compat::scaled_dot_product_attention(q, k, v, causal_mask(), false)
                       : compat::scaled_dot_product_attention(q, k, v, c10::nullopt, true);
  } else {
    auto att = q.matmul(k.transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(D)));
    att = att.masked_fill(causal_mask().logical_not(), -std::numeric_limits<float>::infinity());
    y = torch::softmax(att, -1).matmul(v);  // [B, H, T, D]
  }
  return c_proj(y.transpose(1, 2).contiguous().view({B, T, C}));
}

GptBlockImpl::GptBlockImpl(const GptConfig& cfg) : builtin_gelu(cfg.builtin_ops) {
  ln_1 = register_module("ln_1", LayerNorm(cfg.n_embd, cfg.builtin_ops));
  attn = register_module("attn", CausalSelfAttention(cfg));
  ln_2 = register_module("ln_2", LayerNorm(cfg.n_embd, cfg.builtin_ops));
  c_fc = register_module("c_fc", nn::Linear(cfg.n_embd, cfg.padded_hidden()));
  mlp_proj = register_module("mlp_proj", nn::Linear(cfg.padded_hidden(), cfg.n_embd));
}

torch::Tensor GptBlockImpl::forward(torch::Tensor x) {
  ++forwards;
  x = x + attn(ln_1(x));
  torch::Tensor h;  // [B, T, 4C]
  if (bias_act) {
    h = bias_act(torch::matmul(ln_2(x), c_fc->weight.t()), c_fc->bias);
  } else {
    h = c_fc(ln_2(x));
    h = builtin_gelu ? torch::gelu(h, "tanh") : gelu_tanh(h);
  }
  return x + mlp_proj(h);
}

GptImpl::GptImpl(const GptConfig& cfg) : config(cfg) {
  if (cfg.n_embd % cfg.n_head != 0) {
    throw std::invalid_argument("gpt: n_embd (" + std::to_string(cfg.n_embd) +
                                ") must be a multiple of n_head (" + std::to_string(cfg.n_head) +
                                ")");
  }
  if (cfg.seq_len < 1 || cfg.seq_len > cfg.block_size) {
    throw std::invalid_argument("gpt: seq_len " + std::to_string(cfg.seq_len) + " must be in 1.." +
                                std::to_string(cfg.block_size) + " (block_size)");
  }
  auto gen = init_generator();
  wte = register_module("wte", nn::Embedding(cfg.padded_vocab(), cfg.n_embd));
  wpe = register_module("wpe", nn::Embedding(cfg.block_size, cfg.n_embd));
  blocks = register_module("blocks", nn::ModuleList());
  for (int64_t i = 0; i < cfg.n_layer; ++i) {
    GptBlock block(cfg);
    blocks->push_back(block);
    segments.push_back([block](const torch::Tensor& x) mutable { return block->forward(x); });
  }
  ln_f = register_module("ln_f", LayerNorm(cfg.n_embd, cfg.builtin_ops));

  // GPT-2's initialisation: N(0, 0.02) weights, zero biases, residual projections scaled by
  // 1/√(2L).
  torch::NoGradGuard no_grad;
  const double residual_std = 0.02 / std::sqrt(2.0 * cfg.n_layer);
  for (auto& item : named_parameters()) {
    const std::string& name = item.key();
    auto& p = item.value();
    if (name.find("ln_") != std::string::npos) continue;  // LayerNorm keeps 1 and 0
    if (p.dim() == 1) {
      p.zero_();
    } else if (name == "wte.weight") {
      // The real vocabulary's rows first, the padding rows last: a padded model draws the same
      // weights as an unpadded one from the same seed, so both compute the same function.
      p.narrow(0, 0, cfg.vocab_size).normal_(0.0, 0.02, gen);
    } else {
      const bool residual = name.find("c_proj.weight") != std::string::npos ||
                            name.find("mlp_proj.weight") != std::string::npos;
      // The MLP's real hidden units are drawn as in an unpadded model; padding units stay zero.
      const bool fc = name.find("c_fc.weight") != std::string::npos;
      const bool proj = name.find("mlp_proj.weight") != std::string::npos;
      const int64_t h = cfg.hidden();
      if ((fc || proj) && h != cfg.padded_hidden()) {
        const auto real = torch::empty(fc ? std::vector<int64_t>{h, cfg.n_embd}
                                          : std::vector<int64_t>{cfg.n_embd, h})
                              .normal_(0.0, residual ? residual_std : 0.02, gen);
        p.zero_();
        p.narrow(fc ? 0 : 1, 0, h).copy_(real);
      } else {
        p.normal_(0.0, residual ? residual_std : 0.02, gen);
      }
    }
  }
  if (cfg.padded_vocab() > cfg.vocab_size) {
    wte->weight.narrow(0, cfg.vocab_size, cfg.padded_vocab() - cfg.vocab_size)
        .normal_(0.0, 0.02, gen);
  }
}

torch::Tensor GptImpl::forward(const torch::Tensor& tokens) {
  const int64_t T = tokens.size(1);
  auto positions =
      torch::arange(T, torch::TensorOptions().dtype(torch::kLong).device(tokens.device()));
  auto x = wte(tokens) + wpe(positions);  // [B, T, C]
  for (const auto& segment : segments) {
    x = config.checkpoint && is_training() ? checkpoint(segment, x) : segment(x);
  }
  x = ln_f(x);
  auto logits = torch::nn::functional::linear(x, wte->weight);  // [B, T, V_padded], tied
  if (config.padded_vocab() != config.vocab_size) logits = logits.narrow(-1, 0, config.vocab_size);
  return logits;  // [B, T, V]
}

Batch GptModel::make_batch(int64_t batch_size, uint64_t seed) const {
  auto gen = seeded_generator(seed);
  const auto& cfg = net->config;
  auto tokens = torch::randint(cfg.vocab_size, {batch_size, cfg.seq_len + 1}, gen, torch::kLong);
  Batch batch;
  batch.size = batch_size;
  batch.inputs.push_back(tokens.narrow(1, 0, cfg.seq_len).contiguous());
  batch.target = tokens.narrow(1, 1, cfg.seq_len).contiguous();
  return batch;
}

torch::Tensor GptModel::loss(const Batch& batch) {
  auto logits = forward(batch);
  return torch::nn::functional::cross_entropy(logits.reshape({-1, logits.size(-1)}),
                                              batch.target.reshape({-1}));
}

nlohmann::json GptModel::describe() {
  int64_t stored_masks = 0;
  for (const auto& b : net->named_buffers()) {
    if (b.key().find("mask") != std::string::npos) ++stored_masks;
  }
  int64_t block_forwards = 0;
  for (const auto& block : *net->blocks) block_forwards += block->as<GptBlock>()->forwards;
  const auto& cfg = net->config;
  const auto& first = net->blocks->ptr<GptBlockImpl>(0);
  return {{"vocab_size", cfg.vocab_size},
          {"vocab_rows", net->wte->weight.size(0)},
          {"n_embd", cfg.n_embd},
          {"mlp_hidden", first->c_fc->weight.size(0)},
          {"stored_mask_buffers", stored_masks},
          {"builtin_ops", cfg.builtin_ops},
          {"fused_attention", cfg.fused_attention},
          {"checkpoint", cfg.checkpoint},
          {"blocks", cfg.n_layer},
          {"block_forwards", block_forwards}};
}

// --- the builder: what models/registry.def builds for GPT -----------------------------------
std::unique_ptr<BenchModel> gpt_build(const ModelSpec& spec) {
  return std::make_unique<GptModel>(configure(gpt_family(), spec));
}

}  // namespace tunebench::models

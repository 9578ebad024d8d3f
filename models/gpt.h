// A GPT-2 style decoder (Radford et al., "Language Models are Unsupervised Multitask Learners",
// 2019): pre-LayerNorm blocks, learned positions, tied input/output embeddings.
//
//   tokens → wte + wpe → L × [x + attn(ln_1(x)); x + mlp(ln_2(x))] → ln_f → x · wteᵀ → logits
//
// Dimensions: B batch, T time (tokens), C channels (n_embd), H heads, D = C/H, V vocab.
// GPT-2 small: L 12, H 12, C 768, V 50257, context 1024 → 124,439,808 parameters.
//
// Build-time switches (each the OFF/ON of a catalog experiment):
//   builtin_ops      hand-written LayerNorm and tanh-GELU → torch::layer_norm, torch::gelu
//   fused_attention  math attention (softmax of q kᵀ) → the library's scaled-dot-product kernel
//   causal_mask_fly  a stored [ctx, ctx] mask buffer per layer → the mask made on the fly
//   vocab_pad        V rows → the next multiple of 64 (logits are cut back to V, so the
//                    function computed is unchanged)
//   dims_mult8       the vocabulary rows and the MLP's hidden width → the next multiple of 8:
//                    padding rows are cut from the logits, padding hidden units start at zero
//                    in and out (GELU(0) = 0, so they stay zero and the function is unchanged).
//                    The residual width n_embd is not padded: LayerNorm over extra channels
//                    would compute another function.
//   checkpoint       every block stores its activations → recomputes them in backward
//                    (models/checkpoint.h); training only
#pragma once

#include <functional>
#include <vector>

#include "models/checkpoint.h"
#include "models/common.h"
#include "models/gpt_config.h"

namespace tunebench::models {

// LayerNorm with its own scale and shift, computed by the library or by hand.
struct LayerNormImpl : torch::nn::Module {
  LayerNormImpl(int64_t channels, bool builtin);
  torch::Tensor forward(const torch::Tensor& x);
  torch::Tensor weight, bias;
  bool builtin;
};
TORCH_MODULE(LayerNorm);

struct CausalSelfAttentionImpl : torch::nn::Module {
  explicit CausalSelfAttentionImpl(const GptConfig& config);
  torch::Tensor forward(const torch::Tensor& x);  // [B, T, C] → [B, T, C]
  torch::nn::Linear c_attn{nullptr}, c_proj{nullptr};
  torch::Tensor mask;  // [ctx, ctx] bool, true = may attend; only when the mask is stored
  int64_t n_head;
  bool fused;
};
TORCH_MODULE(CausalSelfAttention);

struct GptBlockImpl : torch::nn::Module {
  explicit GptBlockImpl(const GptConfig& config);
  torch::Tensor forward(torch::Tensor x);
  LayerNorm ln_1{nullptr}, ln_2{nullptr};
  CausalSelfAttention attn{nullptr};
  torch::nn::Linear c_fc{nullptr}, mlp_proj{nullptr};
  bool builtin_gelu;
  // When set, replaces c_fc's bias add and the GELU: h = bias_act(x W_fcᵀ, b_fc), [B, T, 4C]
  // (jit_fusion runs an erf-GELU chain through it, eager or TorchScript-fused).
  std::function<torch::Tensor(const torch::Tensor&, const torch::Tensor&)> bias_act;
  int64_t forwards = 0;  // times forward() ran: a checkpointed block runs twice per step
};
TORCH_MODULE(GptBlock);

struct GptImpl : torch::nn::Module {
  explicit GptImpl(const GptConfig& config);
  torch::Tensor forward(const torch::Tensor& tokens);  // [B, T] int64 → logits [B, T, V]
  GptConfig config;
  torch::nn::Embedding wte{nullptr}, wpe{nullptr};
  torch::nn::ModuleList blocks{nullptr};
  LayerNorm ln_f{nullptr};
  std::vector<Segment> segments;  // each block's forward, for checkpointing
};
TORCH_MODULE(Gpt);

class GptModel : public BenchModel {
 public:
  explicit GptModel(const GptConfig& config) : net(config) {}
  torch::nn::Module& module() override { return *net; }
  // inputs[0]: tokens [B, T]; target: the next tokens [B, T]
  Batch make_batch(int64_t batch_size, uint64_t seed) const override;
  torch::Tensor forward(const Batch& batch) override { return net->forward(batch.inputs.at(0)); }
  torch::Tensor loss(const Batch& batch) override;
  nlohmann::json describe() override;
  std::vector<BiasAct*> bias_act_slots() override {
    std::vector<BiasAct*> slots;
    for (const auto& block : *net->blocks) slots.push_back(&block->as<GptBlockImpl>()->bias_act);
    return slots;
  }

  Gpt net;
};

}  // namespace tunebench::models

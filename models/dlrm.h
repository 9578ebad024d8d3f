// DLRM, the deep learning recommendation model (Naumov et al., "Deep Learning Recommendation
// Model for Personalization and Recommendation Systems", 2019).
//
//   dense [B, 13] → bottom MLP → x [B, d]
//   26 sparse features → EmbeddingBag(rows_i, d, sum) → e_1 … e_26, each [B, d]
//   interaction: Z = T Tᵀ for T = [x; e_1; …; e_26] ([B, F, d], F = 27); the F(F−1)/2 entries
//   below the diagonal, concatenated with x → top MLP → click probability [B, 1]
//
// Dimensions: B batch, d embedding dim, F features (1 dense + sparse tables).
// The Criteo Kaggle shape: d 16, bottom 13-512-256-64-16, top 367-512-256-1, tables as
// published (33,762,577 rows in all). `row_cap` bounds each table for small machines; indices
// are then hashed modulo the cap, as the reference implementation's --max-ind-range does.
#pragma once

#include "models/common.h"
#include "models/dlrm_config.h"

namespace tunebench::models {

struct DlrmImpl : torch::nn::Module {
  explicit DlrmImpl(const DlrmConfig& config);
  // dense [B, 13] float, indices [S, B·pooling] int64 (one row per table), offsets [B] int64
  torch::Tensor forward_logits(const torch::Tensor& dense, const torch::Tensor& indices,
                               const torch::Tensor& offsets);

  DlrmConfig config;
  torch::nn::Sequential bottom{nullptr}, top{nullptr};
  torch::nn::ModuleList tables{nullptr};
};
TORCH_MODULE(Dlrm);

class DlrmModel : public BenchModel {
 public:
  explicit DlrmModel(const DlrmConfig& config) : net(config) {}
  torch::nn::Module& module() override { return *net; }
  // inputs: dense [B, 13], indices [S, B·pooling], offsets [B]; target: clicks [B, 1] in {0, 1}
  Batch make_batch(int64_t batch_size, uint64_t seed) const override;
  torch::Tensor forward(const Batch& batch) override;  // probabilities [B, 1]
  torch::Tensor loss(const Batch& batch) override;
  nlohmann::json describe() override;
  int64_t replace_linear_layers(const LinearReplacement& replace) override;  // bottom and top MLP

  Dlrm net;
};

}  // namespace tunebench::models

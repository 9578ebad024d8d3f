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

namespace tunebench::models {

struct DlrmConfig {
  int64_t dense_features = 13;
  std::vector<int64_t> bottom_mlp{512, 256, 64, 16};  // widths after the input; last = d
  std::vector<int64_t> top_mlp{512, 256, 1};          // widths after the interaction
  std::vector<int64_t> table_rows;                    // published rows per sparse feature
  int64_t row_cap = 0;                                // 0 = none
  int64_t pooling = 1;                                // lookups per bag (Criteo: one-hot)
  double zipf_exponent = 1.05;                        // power law of synthetic indices

  int64_t embedding_dim() const { return bottom_mlp.back(); }
  int64_t rows(size_t table) const {
    return row_cap > 0 ? std::min(table_rows.at(table), row_cap) : table_rows.at(table);
  }
  int64_t interaction_dim() const;  // input width of the top MLP
};

// The 26 table sizes of the Criteo Kaggle (Display Advertising Challenge) data set.
const std::vector<int64_t>& criteo_kaggle_table_rows();

// "13-512-256-64-16": an MLP's layer widths, input first.
std::string mlp_string(int64_t input, const std::vector<int64_t>& widths);

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

ModelStats dlrm_stats(const DlrmConfig& config);

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

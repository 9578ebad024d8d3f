#include "models/dlrm.h"

#include <cmath>
#include <numeric>
#include <stdexcept>

namespace tunebench::models {

namespace nn = torch::nn;

namespace {
// Linear + ReLU layers; the last layer of the top MLP has no ReLU (its sigmoid is in the loss).
// Initialised as the reference does: weights N(0, √(2/(in+out))), biases N(0, √(1/out)).
nn::Sequential make_mlp(int64_t input, const std::vector<int64_t>& widths, bool relu_last) {
  nn::Sequential seq;
  torch::NoGradGuard no_grad;
  int64_t in = input;
  for (size_t i = 0; i < widths.size(); ++i) {
    nn::Linear layer(in, widths[i]);
    layer->weight.normal_(0.0, std::sqrt(2.0 / double(in + widths[i])));
    layer->bias.normal_(0.0, std::sqrt(1.0 / double(widths[i])));
    seq->push_back(layer);
    if (i + 1 < widths.size() || relu_last) seq->push_back(nn::ReLU());
    in = widths[i];
  }
  return seq;
}
}  // namespace

DlrmImpl::DlrmImpl(const DlrmConfig& cfg) : config(cfg) {
  if (cfg.table_rows.empty() || cfg.bottom_mlp.empty() || cfg.top_mlp.empty()) {
    throw std::invalid_argument("dlrm: needs at least one table and non-empty MLPs");
  }
  if (cfg.pooling < 1) throw std::invalid_argument("dlrm: pooling must be at least 1");
  bottom = register_module("bottom", make_mlp(cfg.dense_features, cfg.bottom_mlp, true));
  tables = register_module("tables", nn::ModuleList());
  const int64_t d = cfg.embedding_dim();
  torch::NoGradGuard no_grad;
  for (size_t t = 0; t < cfg.table_rows.size(); ++t) {
    const int64_t n = cfg.rows(t);
    nn::EmbeddingBag table(nn::EmbeddingBagOptions(n, d).mode(torch::kSum));
    const double bound = std::sqrt(1.0 / double(n));
    table->weight.uniform_(-bound, bound);
    tables->push_back(table);
  }
  top = register_module("top", make_mlp(cfg.interaction_dim(), cfg.top_mlp, false));
}

torch::Tensor DlrmImpl::forward_logits(const torch::Tensor& dense, const torch::Tensor& indices,
                                       const torch::Tensor& offsets) {
  const int64_t B = dense.size(0), d = config.embedding_dim();
  auto x = bottom->forward(dense);  // [B, d]
  std::vector<torch::Tensor> features{x};
  for (size_t t = 0; t < tables->size(); ++t) {
    features.push_back(tables[t]->as<nn::EmbeddingBag>()->forward(indices[t], offsets));  // [B, d]
  }
  const int64_t F = static_cast<int64_t>(features.size());
  auto T = torch::cat(features, 1).view({B, F, d});  // [B, F, d]
  auto Z = torch::bmm(T, T.transpose(1, 2));         // [B, F, F]
  auto pairs = torch::tril_indices(F, F, /*offset=*/-1,
                                   torch::TensorOptions().dtype(torch::kLong).device(x.device()));
  auto flat = Z.index({torch::indexing::Slice(), pairs[0], pairs[1]});  // [B, F(F−1)/2]
  return top->forward(torch::cat({x, flat}, 1));                        // [B, 1]
}

Batch DlrmModel::make_batch(int64_t batch_size, uint64_t seed) const {
  const auto& cfg = net->config;
  auto gen = seeded_generator(seed);
  Batch batch;
  batch.size = batch_size;
  // Dense features: log-transformed counts in the reference pipeline, so non-negative and skewed.
  batch.inputs.push_back(torch::log1p(torch::rand({batch_size, cfg.dense_features}, gen) * 100));
  // Sparse features: a continuous power law on [1, rows+1) by inverse CDF, so low indices are hot
  // as in click logs; then hashed into the capped table.
  const int64_t lookups = batch_size * cfg.pooling;
  const double a = 1.0 - cfg.zipf_exponent;
  std::vector<torch::Tensor> per_table;
  for (size_t t = 0; t < cfg.table_rows.size(); ++t) {
    const double published = static_cast<double>(cfg.table_rows[t]);
    auto u = torch::rand({lookups}, gen, torch::kDouble);
    auto x = (1.0 + u * (std::pow(published + 1.0, a) - 1.0)).pow(1.0 / a);
    auto idx = (x.floor() - 1).clamp(0, published - 1).to(torch::kLong);
    per_table.push_back(idx.remainder(cfg.rows(t)));
  }
  batch.inputs.push_back(torch::stack(per_table));                               // [S, B·pooling]
  batch.inputs.push_back(torch::arange(0, lookups, cfg.pooling, torch::kLong));  // [B]
  batch.target = torch::randint(2, {batch_size, 1}, gen, torch::kFloat);
  return batch;
}

torch::Tensor DlrmModel::forward(const Batch& batch) {
  return torch::sigmoid(
      net->forward_logits(batch.inputs.at(0), batch.inputs.at(1), batch.inputs.at(2)));
}

torch::Tensor DlrmModel::loss(const Batch& batch) {
  auto logits = net->forward_logits(batch.inputs.at(0), batch.inputs.at(1), batch.inputs.at(2));
  return torch::nn::functional::binary_cross_entropy_with_logits(logits, batch.target);
}

nlohmann::json DlrmModel::describe() {
  int64_t rows = 0;
  for (const auto& t : *net->tables) rows += t->as<nn::EmbeddingBag>()->weight.size(0);
  return {
      {"tables", net->tables->size()}, {"embedding_rows", rows}, {"row_cap", net->config.row_cap}};
}

int64_t DlrmModel::replace_linear_layers(const LinearReplacement& replace) {
  int64_t replaced = 0;
  auto in_mlp = [&](nn::Sequential& mlp) {
    nn::Sequential out;
    for (const auto& child : *mlp) {
      if (const auto* linear = child.ptr()->as<nn::Linear>()) {
        out->push_back(replace(*linear));
        ++replaced;
      } else {
        out->push_back(child);
      }
    }
    return out;
  };
  net->bottom = net->replace_module("bottom", in_mlp(net->bottom));
  net->top = net->replace_module("top", in_mlp(net->top));
  return replaced;
}

// --- the builder: what models/registry.def builds for DLRM ----------------------------------
std::unique_ptr<BenchModel> dlrm_build(const ModelSpec& spec) {
  return std::make_unique<DlrmModel>(configure(dlrm_family(), spec));
}

}  // namespace tunebench::models

#include "models/dlrm_config.h"

#include <fmt/format.h>

#include "models/registry.h"  // with_commas

namespace tunebench::models {

const std::vector<int64_t>& criteo_kaggle_table_rows() {
  static const std::vector<int64_t> rows{1460,  583,     10131227, 2202608, 305,     24,   12517,
                                         633,   3,       93145,    5683,    8351593, 3194, 27,
                                         14992, 5461306, 10,       5652,    2173,    4,    7046547,
                                         18,    15,      286181,   105,     142572};
  return rows;
}

std::string mlp_string(int64_t input, const std::vector<int64_t>& widths) {
  std::string s = std::to_string(input);
  for (int64_t w : widths) {
    s += '-';
    s += std::to_string(w);
  }
  return s;
}

int64_t DlrmConfig::interaction_dim() const {
  const int64_t features = 1 + static_cast<int64_t>(table_rows.size());
  return embedding_dim() + features * (features - 1) / 2;
}

ModelStats dlrm_stats(const DlrmConfig& cfg) {
  ModelStats stats;
  auto add_mlp = [&](int64_t in, const std::vector<int64_t>& widths) {
    for (int64_t w : widths) {
      stats.parameters += in * w + w;
      stats.forward_flops += 2.0 * in * w;
      stats.activation_elements += w;
      in = w;
    }
  };
  const int64_t d = cfg.embedding_dim();
  const int64_t F = 1 + static_cast<int64_t>(cfg.table_rows.size());
  add_mlp(cfg.dense_features, cfg.bottom_mlp);
  for (size_t t = 0; t < cfg.table_rows.size(); ++t) {
    stats.parameters += cfg.rows(t) * d;
    stats.forward_flops += double(cfg.pooling - 1) * d;  // additions of the bag sum
  }
  stats.forward_flops += 2.0 * F * F * d;  // T Tᵀ, all F×F entries as computed
  stats.activation_elements += double(F) * d + double(F) * F;
  add_mlp(cfg.interaction_dim(), cfg.top_mlp);
  stats.input_shape = std::to_string(cfg.dense_features) + " dense + " +
                      std::to_string(cfg.table_rows.size()) + "x" + std::to_string(cfg.pooling) +
                      " sparse";
  return stats;
}

namespace {
DlrmConfig dlrm_preset(std::vector<int64_t> bottom_mlp, std::vector<int64_t> top_mlp,
                       std::vector<int64_t> table_rows, int64_t pooling) {
  DlrmConfig c;
  c.bottom_mlp = std::move(bottom_mlp);
  c.top_mlp = std::move(top_mlp);
  c.table_rows = std::move(table_rows);
  c.pooling = pooling;
  return c;
}

// The tables behind the summary: rows in all, the published size, and the row cap that applies.
void annotate_dlrm(const DlrmConfig& config, PresetSummary& s) {
  int64_t rows = 0;
  for (int64_t r : config.table_rows) rows += r;
  DlrmConfig uncapped = config;
  uncapped.row_cap = 0;
  s.parameters_published = dlrm_stats(uncapped).parameters;
  s.config["table_rows"] = config.table_rows;
  s.config["bottom_mlp"] = mlp_string(config.dense_features, config.bottom_mlp);
  s.config["top_mlp"] = mlp_string(config.interaction_dim(), config.top_mlp);
  s.note = config.row_cap > 0
               ? fmt::format("{} rows; capped at {} per table (published size {} params)",
                             with_commas(rows), with_commas(config.row_cap),
                             with_commas(s.parameters_published))
               : fmt::format("{} rows; no row cap (option row_cap=N bounds each table)",
                             with_commas(rows));
}
}  // namespace

const ModelFamily<DlrmConfig>& dlrm_family() {
  const DlrmConfig kaggle;  // the published MLPs, one lookup per bag
  static const ModelFamily<DlrmConfig> family{
      "dlrm",
      {{"tiny", "8 small tables, dim 8, bottom 13-32-8, 2 lookups per bag: for tests",
        dlrm_preset({32, 8}, {32, 1}, {97, 31, 1000, 500, 7, 64, 2000, 13}, 2)},
       {"kaggle",
        "the Criteo Kaggle shape: 26 tables as published, dim 16, bottom 13-512-256-64-16, top "
        "367-512-256-1",
        dlrm_preset(kaggle.bottom_mlp, kaggle.top_mlp, criteo_kaggle_table_rows(),
                    kaggle.pooling)}},
      {int_option("row_cap", &DlrmConfig::row_cap, 0, int64_t{1} << 40),
       int_option("pooling", &DlrmConfig::pooling, 1, 1 << 20),
       int_option("dense_features", &DlrmConfig::dense_features, 1, 1 << 20)},
      dlrm_stats,
      nullptr,
      annotate_dlrm};
  return family;
}

// --- the descriptor: what the registry (models/registry.def) knows of DLRM ---------------------
const ModelDescriptor& dlrm_descriptor() {
  static const ModelDescriptor descriptor = describe(dlrm_family());
  return descriptor;
}

}  // namespace tunebench::models

// DLRM's configuration, presets, options and size arithmetic (models/dlrm.h has the layout and
// the modules). Torch-free.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "models/family.h"

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

ModelStats dlrm_stats(const DlrmConfig& config);

// Presets and options (models/family.h); dlrm_descriptor() is the registry's view of it.
const ModelFamily<DlrmConfig>& dlrm_family();

}  // namespace tunebench::models

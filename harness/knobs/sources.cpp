#include "knobs/sources.h"

namespace tunebench::knobs {

const std::vector<Source>& sources() {
  static const std::vector<Source> all = {
      {"PyTorch Performance Tuning Guide", "Performance Tuning Guide (PyTorch tutorials)",
       "official guide",
       "no_grad, cuDNN autotuning, channels_last, AMP, fused optimizers, zeroing gradients to "
       "None, checkpointing, OMP threads and affinity, NUMA binding, jemalloc/tcmalloc, "
       "multi-instance inference, DDP settings, avoiding host syncs"},
      {"Performance Optimization Tips", "PyTorch Performance Optimization Tips", "blog post",
       "mixed precision, torch.compile, data loading workers, pinned memory, zeroing gradients, "
       "gradient accumulation and checkpointing"},
      {"cudnn.benchmark note",
       "Speed Up PyTorch Training with torch.backends.cudnn.benchmark (But Use It Wisely!)", "note",
       "cudnn.benchmark picks the fastest convolution algorithms when shapes are fixed"},
      {"Memory Management Strategies", "Common PyTorch Memory Management Strategies", "blog post",
       "which techniques chain together and how much each adds: bf16, compile (\"about a 2.5x "
       "speed increase\"), Flash attention, checkpointing, pinned memory, empty_cache, streams"},
  };
  return all;
}

std::vector<std::string> cited_sources(const std::string& claim) {
  const auto open = claim.rfind('(');
  const auto close = claim.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return {};
  const std::string inside = claim.substr(open + 1, close - open - 1);
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= inside.size()) {
    size_t end = inside.find("; ", start);
    if (end == std::string::npos) end = inside.size();
    const std::string name = inside.substr(start, end - start);
    for (const auto& s : sources()) {
      if (s.name == name) out.push_back(name);
    }
    start = end + 2;
  }
  return out;
}

}  // namespace tunebench::knobs

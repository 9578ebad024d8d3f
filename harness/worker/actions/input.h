// The input family's action (worker/knob_action.h), dataloader_workers: every step's images come
// from a torch::data loader over a synthetic dataset whose samples cost CPU to make, like decoding
// and augmenting a JPEG (a seeded per-value hash chain, then a random horizontal flip). OFF: 0
// workers, the step's own thread decodes its batch; ON: N loader threads decode ahead (prefetch 2
// batches per worker) while the step trains. Batches arrive in order, so both arms see the same
// data.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>

#include "core/records.h"

namespace tunebench::models {
struct Batch;
}

namespace tunebench::loader {

// Hash rounds per decoded value: ~0.1 µs a value here, ~15 ms per 224×224 image.
inline constexpr int kDecodeRounds = 96;

class Feed {
 public:
  // nullptr unless the trial sets dataloader_workers; the images have the shape of `batch`'s
  // first input.
  static std::unique_ptr<Feed> make(const TrialSpec& spec, const models::Batch& batch);
  ~Feed();
  Feed(const Feed&) = delete;
  Feed& operator=(const Feed&) = delete;

  // Replaces the batch's images with the next decoded batch, on the device they were on.
  void next(models::Batch& batch);

  // workers, the number of distinct threads that produced batches, whether the step's own
  // thread did, batches delivered, and a checksum of the images delivered.
  nlohmann::json evidence() const;

 private:
  struct Impl;
  explicit Feed(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tunebench::loader

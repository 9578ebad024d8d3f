#include "worker/actions/input.h"

#include <torch/torch.h>

#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "knobs/input.h"
#include "models/common.h"
#include "worker/arm.h"
#include "worker/knob_action.h"

namespace tunebench::loader {

using nlohmann::json;

// Named, not anonymous: Feed::Impl (declared in the header) holds these, and a class with
// linkage may not hold a type of this file's anonymous namespace (-Wsubobject-linkage).
namespace feed_detail {

// The threads that made batches; shared by the dataset's copies (one per loader worker).
struct Producers {
  std::mutex mutex;
  std::set<std::thread::id> threads;
  void note() {
    std::lock_guard<std::mutex> lock(mutex);
    threads.insert(std::this_thread::get_id());
  }
};

uint64_t mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Images [3, H, W] made from (seed, index) alone, at a fixed CPU cost per value; a random
// horizontal flip as the augmentation. Plain loops: no torch kernels (and so no OpenMP teams)
// run in the loader threads.
class SyntheticImages : public torch::data::datasets::BatchDataset<SyntheticImages, torch::Tensor> {
 public:
  SyntheticImages(uint64_t seed, std::vector<int64_t> shape, size_t samples,
                  std::shared_ptr<Producers> producers)
      : seed_(seed),
        shape_(std::move(shape)),
        samples_(samples),
        producers_(std::move(producers)) {}

  torch::Tensor get_batch(c10::ArrayRef<size_t> indices) override {
    producers_->note();
    std::vector<int64_t> sizes{int64_t(indices.size())};
    sizes.insert(sizes.end(), shape_.begin(), shape_.end());
    auto images = torch::empty(sizes, torch::kFloat);
    float* out = images.data_ptr<float>();
    int64_t per_sample = 1;
    for (int64_t d : shape_) per_sample *= d;
    const int64_t width = shape_.back();
    for (size_t b = 0; b < indices.size(); ++b) {
      const uint64_t state = mix(seed_ ^ mix(indices[b] + 1));
      const bool flip = state & 1;
      float* image = out + int64_t(b) * per_sample;
      for (int64_t i = 0; i < per_sample; ++i) {
        uint64_t x = state + uint64_t(i) * 0x9E3779B97F4A7C15ULL;
        for (int r = 0; r < kDecodeRounds; ++r) x = mix(x);
        const int64_t column = i % width;
        const int64_t target = flip ? i - column + (width - 1 - column) : i;
        image[target] = float(x >> 40) / float(1 << 23) - 1.0f;  // [-1, 1)
      }
    }
    return images;
  }

  c10::optional<size_t> size() const override { return samples_; }

 private:
  uint64_t seed_;
  std::vector<int64_t> shape_;
  size_t samples_;
  std::shared_ptr<Producers> producers_;
};

using Loader =
    torch::data::StatelessDataLoader<SyntheticImages, torch::data::samplers::SequentialSampler>;

}  // namespace feed_detail

struct Feed::Impl {
  int workers = 0;
  std::thread::id step_thread;
  std::shared_ptr<feed_detail::Producers> producers = std::make_shared<feed_detail::Producers>();
  std::unique_ptr<feed_detail::Loader> loader;
  std::optional<torch::data::Iterator<torch::Tensor>> it;
  int64_t batches = 0;
  double checksum = 0;
};

Feed::Feed(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Feed::~Feed() = default;

std::unique_ptr<Feed> Feed::make(const TrialSpec& spec, const models::Batch& batch) {
  if (!spec.settings.contains("dataloader_workers")) return nullptr;
  auto impl = std::make_unique<Impl>();
  impl->workers = int(spec.settings["dataloader_workers"].get<int64_t>());
  impl->step_thread = std::this_thread::get_id();
  const auto sizes = batch.inputs.at(0).sizes();
  std::vector<int64_t> shape(sizes.begin() + 1, sizes.end());
  // More samples than any trial consumes: one epoch, never exhausted.
  const size_t samples = size_t(batch.size) << 20;
  torch::data::DataLoaderOptions options(size_t(batch.size));
  options.workers(size_t(impl->workers));
  options.enforce_ordering(true);
  if (impl->workers > 0) options.max_jobs(size_t(2 * impl->workers));
  impl->loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
      feed_detail::SyntheticImages(spec.seed, shape, samples, impl->producers), options);
  return std::unique_ptr<Feed>(new Feed(std::move(impl)));
}

void Feed::next(models::Batch& batch) {
  Impl& s = *impl_;
  if (!s.it) {
    s.it.emplace(s.loader->begin());
  } else {
    ++*s.it;
  }
  torch::Tensor images = **s.it;
  s.checksum += images.sum().item<double>();
  ++s.batches;
  // Where the model runs: on CUDA the decoded host batch is copied to the device each step, as
  // a training loop over a loader does.
  const torch::Tensor& previous = batch.inputs[0];
  if (previous.is_contiguous(at::MemoryFormat::ChannelsLast)) {
    images = images.contiguous(at::MemoryFormat::ChannelsLast);
  }
  batch.inputs[0] = images.to(previous.device());
}

json Feed::evidence() const {
  const Impl& s = *impl_;
  std::lock_guard<std::mutex> lock(s.producers->mutex);
  return {{knobs::input::kWorkers, s.workers},
          {knobs::input::kProducerThreads, s.producers->threads.size()},
          {knobs::input::kProducedOnMainThread, s.producers->threads.count(s.step_thread) > 0},
          {"batches", s.batches},
          {"decode_rounds", kDecodeRounds},
          {"data_checksum", s.checksum}};
}

}  // namespace tunebench::loader

namespace tunebench::worker {
namespace {

// Each step's images from the arm's own feed.
class InputHooks : public ArmHooks {
 public:
  explicit InputHooks(std::unique_ptr<loader::Feed> feed) : feed_(std::move(feed)) {}
  void before_forward(Arm& arm) override { feed_->next(arm.batch); }
  void read_back(Arm&, nlohmann::json& evidence) override {
    evidence[knobs::input::kLoader] = feed_->evidence();
  }

 private:
  std::unique_ptr<loader::Feed> feed_;
};

class InputAction : public KnobAction {
 public:
  const char* family() const override { return "input"; }
  // The feed is made from the host batch (after the distributed action took this rank's share).
  std::unique_ptr<ArmHooks> prepare(Arm& arm) const override {
    auto feed = loader::Feed::make(arm.spec, arm.batch);
    if (!feed) return nullptr;
    return std::make_unique<InputHooks>(std::move(feed));
  }
};

}  // namespace

const KnobAction& input_action() {
  static const InputAction action;
  return action;
}

}  // namespace tunebench::worker

#include "knobs/input.h"

#include <fmt/format.h>

#include <algorithm>

namespace tunebench::knobs::input {

using nlohmann::json;

namespace {

class Rules final : public KnobRules {
 public:
  std::vector<std::string> ids() const override { return {"dataloader_workers"}; }

  void validate_value(const Knob&, const json& value) const override {
    expect_integer(value, 0, 64, "must be a number of loader workers from 0 to 64");
  }

  // N workers: N producer threads, none of them the step's; 0: the step's thread makes them.
  void check_evidence(const Knob&, const json& value, const json&, Mode, const json& evidence,
                      std::vector<std::string>& wrong) const override {
    const json loader = fact(evidence, kLoader);
    const int64_t workers = value.get<int64_t>();
    if (!loader.is_object() || loader.value(kWorkers, int64_t(-1)) != workers ||
        loader.value(kProducerThreads, int64_t(-1)) != std::max<int64_t>(1, workers) ||
        loader.value(kProducedOnMainThread, false) != (workers == 0)) {
      wrong.push_back(
          fmt::format("dataloader_workers={} but the batches came from {} (want {} thread(s), {})",
                      workers, loader.dump(), std::max<int64_t>(1, workers),
                      workers == 0 ? "the main thread" : "none of them the main thread"));
    }
  }
};

}  // namespace

const KnobRules& rules() {
  static const Rules r;
  return r;
}

}  // namespace tunebench::knobs::input

#include "knobs/cuda.h"

#include <fmt/format.h>

namespace tunebench::knobs::cuda {

using nlohmann::json;

namespace {

// One fact read back from the worker that must equal `expected`.
void expect(std::vector<std::string>& wrong, const std::string& id, const json& value,
            const json& evidence, const char* key, const json& expected, const char* what) {
  if (fact(evidence, key) != expected) {
    wrong.push_back(
        fmt::format("{}={} but {} was {}", id, value.dump(), what, fact(evidence, key).dump()));
  }
}

// A count per step that must be zero exactly when the knob is on (ON = the advice: do not).
bool none_exactly_when_on(const json& calls, bool on) {
  return calls.is_number() && (calls.get<double>() == 0) == on;
}

class Rules final : public KnobRules {
 public:
  std::vector<std::string> ids() const override {
    return {"tf32",       "cudnn_benchmark", "empty_cache",    "pinned_memory", "on_device_alloc",
            "avoid_sync", "cuda_graphs",     "streams_overlap"};
  }

  std::string arm_error(const json& settings, Mode mode, int64_t) const override {
    return capture_conflict(settings, mode);
  }

  void check_evidence(const Knob& knob, const json& value, const json&, Mode, const json& e,
                      std::vector<std::string>& wrong) const override {
    const std::string& id = knob.id;
    const bool on = value == true;
    if (id == "tf32") {
      expect(wrong, id, value, e, kTf32Matmul, on, "TF32 for cuBLAS matmuls");
      expect(wrong, id, value, e, kTf32Cudnn, on, "TF32 for cuDNN convolutions");
    } else if (id == "cudnn_benchmark") {
      expect(wrong, id, value, e, kCudnnBenchmark, on, "cuDNN's benchmark mode");
    } else if (id == "empty_cache") {
      if (const json calls = fact(e, kEmptyCacheCallsPerStep); !none_exactly_when_on(calls, on)) {
        wrong.push_back(fmt::format("empty_cache={} but empty_cache() ran {} times per step",
                                    value.dump(), calls.dump()));
      }
    } else if (id == "pinned_memory") {
      expect(wrong, id, value, e, kHostBatchPinned, on, "the host batch being pinned");
    } else if (id == "on_device_alloc") {
      expect(wrong, id, value, e, kInputCreatedOnDevice, on,
             "creating each step's input on the device");
    } else if (id == "avoid_sync") {
      if (const json items = fact(e, kLossItemCallsPerStep); !none_exactly_when_on(items, on)) {
        wrong.push_back(fmt::format("avoid_sync={} but the step read the loss to the host {} times",
                                    value.dump(), items.dump()));
      }
    } else if (id == "cuda_graphs") {
      expect(wrong, id, value, e, kCudaGraphReplay, on, "replaying a captured graph");
    } else if (id == "streams_overlap") {
      expect(wrong, id, value, e, kCopyStream, on ? "separate" : "compute",
             "the stream of the host-to-device copy");
    }
  }
};

}  // namespace

const KnobRules& rules() {
  static const Rules r;
  return r;
}

bool is_reserved(const std::string& id) { return id == kDevice || id == kVaryingShapes; }

std::string reserved_error(const std::string& id, const json& value) {
  if (id == kDevice) {
    if (value == "cpu" || value == "cuda") return "";
    return "device must be \"cpu\" or \"cuda\", got " + value.dump();
  }
  if (id == kVaryingShapes) {
    if (value.is_boolean()) return "";
    return "varying_shapes must be true or false, got " + value.dump();
  }
  return id + " is not a reserved setting";
}

std::string device_of(const json& settings) {
  return setting(settings, kDevice) == "cuda" ? "cuda" : "cpu";
}

std::string default_device(const std::vector<const Knob*>& used) {
  for (const Knob* k : used) {
    if (k->where == "cuda") return "cuda";
  }
  return "cpu";
}

std::string device_mismatch(const Knob& knob, const std::string& device) {
  if (knob.where == "cuda" && device != "cuda") {
    return fmt::format("{} runs on CUDA only: device must be \"cuda\" (or left out), got \"{}\"",
                       knob.id, device);
  }
  if (knob.where == "cpu" && device != "cpu") {
    return fmt::format("{} is a CPU knob: device must be \"cpu\" (or left out), got \"{}\"",
                       knob.id, device);
  }
  return "";
}

std::string device_unavailable(const std::string& device, const HostCaps& host) {
  if (device == "cuda" && !host.cuda) return "needs a CUDA device: " + host.cuda_reason;
  return "";
}

std::string capture_conflict(const json& settings, Mode mode) {
  if (setting(settings, "cuda_graphs", false) != true) return "";
  for (const char* id : {"dataloader_workers", "on_device_alloc", "preallocate", kVaryingShapes,
                         "ddp_scaling", "ddp_no_sync"}) {
    if (settings.contains(id)) {
      return fmt::format(
          "cuda_graphs replays one captured step with fixed inputs and shapes: it cannot be "
          "combined with {}",
          id);
    }
  }
  if (settings.contains("streams_overlap")) {
    return "cuda_graphs replays a step captured reading one input buffer, while streams_overlap "
           "refills two in turn on another stream: they cannot be combined";
  }
  if (settings.value("profiler_off", true) == false) {
    return "cuda_graphs cannot capture a step under the autograd profiler (profiler_off=false)";
  }
  if (mode == Mode::train && settings.value("anomaly_off", true) == false) {
    return "cuda_graphs cannot capture a training step under anomaly detection "
           "(anomaly_off=false): it reads every backward output to the host to look for NaN";
  }
  if (settings.contains("compile") && settings.at("compile") != false) {
    return "cuda_graphs cannot capture an AOTInductor-compiled model (compile): its runner records "
           "and waits on a CUDA event of its own at every run";
  }
  if (mode == Mode::train && settings.contains("fused_adamw")) {
    return "cuda_graphs cannot capture torch::optim::AdamW's step (fused_adamw's OFF arm): it "
           "keeps its step count on the host, which a graph would freeze";
  }
  const json amp = settings.value("amp", json(false));
  if (mode == Mode::train && (amp == true || amp == "fp16")) {
    return "cuda_graphs cannot capture a training step with fp16 loss scaling (the scaler reads "
           "its overflow flag to the host every step): use amp \"bf16\" or an inference step";
  }
  return "";
}

void check_reserved_evidence(const std::string& id, const json& value, const json& evidence,
                             std::vector<std::string>& wrong) {
  if (id == kDevice) {
    // "cuda:0" or "cpu": where the model's parameters were during the measured step.
    const json seen = fact(evidence, evidence::kDevice);
    if (!seen.is_string() || seen.get<std::string>().rfind(value.get<std::string>(), 0) != 0) {
      wrong.push_back(fmt::format("device={} but the model ran on {}", value.dump(), seen.dump()));
    }
  } else if (id == kVaryingShapes) {
    const json shapes = fact(evidence, kInputShapesSeen);
    if (!shapes.is_number_integer() || (shapes.get<int64_t>() > 1) != (value == true)) {
      wrong.push_back(fmt::format("varying_shapes={} but the measured steps saw {} input shapes",
                                  value.dump(), shapes.dump()));
    }
  }
}

}  // namespace tunebench::knobs::cuda

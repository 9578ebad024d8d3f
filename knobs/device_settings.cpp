#include "knobs/device_settings.h"

#include <fmt/format.h>

namespace tunebench::device_settings {

using nlohmann::json;

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
  return settings.is_object() && settings.value(kDevice, "cpu") == "cuda" ? "cuda" : "cpu";
}

std::string default_device(const std::vector<const knobs::Knob*>& used) {
  for (const knobs::Knob* k : used) {
    if (k->where == "cuda") return "cuda";
  }
  return "cpu";
}

std::string device_mismatch(const knobs::Knob& knob, const std::string& device) {
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

std::string device_unavailable(const std::string& device, const knobs::HostCaps& host) {
  if (device == "cuda" && !host.cuda) return "needs a CUDA device: " + host.cuda_reason;
  return "";
}

std::string capture_conflict(const json& settings, Mode mode) {
  if (settings.value("cuda_graphs", false) != true) return "";
  for (const char* id : {"dataloader_workers", "on_device_alloc", "preallocate", kVaryingShapes,
                         "ddp_scaling", "ddp_no_sync"}) {
    if (settings.contains(id)) {
      return fmt::format(
          "cuda_graphs replays one captured step with fixed inputs and shapes: it cannot be "
          "combined with {}",
          id);
    }
  }
  if (settings.value("profiler_off", true) == false) {
    return "cuda_graphs cannot capture a step under the autograd profiler (profiler_off=false)";
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

namespace {

json fact(const json& evidence, const char* key) {
  return evidence.is_object() && evidence.contains(key) ? evidence[key] : json();
}

// One boolean read back from the worker that must equal `expected`.
void expect(std::vector<std::string>& wrong, const std::string& id, const json& value,
            const json& evidence, const char* key, const json& expected, const char* what) {
  if (fact(evidence, key) != expected) {
    wrong.push_back(
        fmt::format("{}={} but {} was {}", id, value.dump(), what, fact(evidence, key).dump()));
  }
}

}  // namespace

std::optional<std::vector<std::string>> check_evidence(const std::string& id, const json& value,
                                                       Mode mode, const json& evidence) {
  std::vector<std::string> wrong;
  const bool on = value == true;
  if (id == kDevice) {
    // "cuda:0" or "cpu": where the model's parameters were during the measured step.
    const json seen = fact(evidence, "device");
    if (!seen.is_string() || seen.get<std::string>().rfind(value.get<std::string>(), 0) != 0) {
      wrong.push_back(fmt::format("device={} but the model ran on {}", value.dump(), seen.dump()));
    }
  } else if (id == kVaryingShapes) {
    const json shapes = fact(evidence, "input_shapes_seen");
    if (!shapes.is_number_integer() || (shapes.get<int64_t>() > 1) != on) {
      wrong.push_back(fmt::format("varying_shapes={} but the measured steps saw {} input shapes",
                                  value.dump(), shapes.dump()));
    }
  } else if (id == "amp") {
    // true: the device's default (bf16 on the CPU, fp16 with loss scaling on CUDA).
    expect(wrong, id, value, evidence, "autocast_in_step", value != false,
           "autocast in the measured step");
    if (value.is_string() && fact(evidence, "autocast_dtype") != value) {
      wrong.push_back(fmt::format("amp={} but autocast's dtype was {}", value.dump(),
                                  fact(evidence, "autocast_dtype").dump()));
    }
    if (mode == Mode::train && fact(evidence, "autocast_dtype") == "fp16") {
      expect(wrong, id, value, evidence, "loss_scaling", true, "loss scaling");
    }
  } else if (id == "tf32") {
    expect(wrong, id, value, evidence, "tf32_matmul", on, "TF32 for cuBLAS matmuls");
    expect(wrong, id, value, evidence, "tf32_cudnn", on, "TF32 for cuDNN convolutions");
  } else if (id == "cudnn_benchmark") {
    expect(wrong, id, value, evidence, "cudnn_benchmark", on, "cuDNN's benchmark mode");
  } else if (id == "empty_cache") {
    // ON = the advice: do not empty the cache every step.
    const json calls = fact(evidence, "empty_cache_calls_per_step");
    if (!calls.is_number() || (calls.get<double>() == 0) != on) {
      wrong.push_back(fmt::format("empty_cache={} but empty_cache() ran {} times per step",
                                  value.dump(), calls.dump()));
    }
  } else if (id == "pinned_memory") {
    expect(wrong, id, value, evidence, "host_batch_pinned", on, "the host batch being pinned");
  } else if (id == "on_device_alloc") {
    expect(wrong, id, value, evidence, "input_created_on_device", on,
           "creating each step's input on the device");
  } else if (id == "avoid_sync") {
    const json items = fact(evidence, "loss_item_calls_per_step");
    if (!items.is_number() || (items.get<double>() == 0) != on) {
      wrong.push_back(fmt::format("avoid_sync={} but the step read the loss to the host {} times",
                                  value.dump(), items.dump()));
    }
  } else if (id == "cuda_graphs") {
    expect(wrong, id, value, evidence, "cuda_graph_replay", on, "replaying a captured graph");
  } else if (id == "streams_overlap") {
    expect(wrong, id, value, evidence, "copy_stream", on ? "separate" : "compute",
           "the stream of the host-to-device copy");
  } else {
    return std::nullopt;
  }
  return wrong;
}

}  // namespace tunebench::device_settings

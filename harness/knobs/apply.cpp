#include "knobs/apply.h"

#include <fmt/format.h>

#include <map>

#include "knobs/knobs.h"

namespace tunebench::knobs {

using nlohmann::json;

namespace {

struct Lines {
  std::string python, cpp;
};

// The code of each knob that acts inside the process, as a user writes it around their own
// model and step; VALUE stands for the knob's value where it has one.
const std::map<std::string, Lines>& code() {
  static const std::map<std::string, Lines> lines{
      {"no_grad", {"with torch.no_grad():  # around the forward", "torch::NoGradGuard no_grad;"}},
      {"inference_mode",
       {"with torch.inference_mode():  # around the forward", "c10::InferenceMode guard;"}},
      {"zero_grad_none",
       {"optimizer.zero_grad(set_to_none=True)", "optimizer.zero_grad(/*set_to_none=*/true);"}},
      {"anomaly_off",
       {"torch.autograd.set_detect_anomaly(False)",
        "torch::autograd::AnomalyMode::set_enabled(false);"}},
      {"profiler_off",
       {"# no torch.profiler / torch.autograd.profiler context around the step",
        "// no torch::autograd::profiler::RecordProfile around the step"}},
      {"channels_last",
       {"model = model.to(memory_format=torch.channels_last); "
        "x = x.to(memory_format=torch.channels_last)",
        "x = x.contiguous(at::MemoryFormat::ChannelsLast);  // and each 4-D parameter"}},
      {"onednn",
       {"torch.backends.mkldnn.enabled = True", "at::globalContext().setUserEnabledMkldnn(true);"}},
      {"amp",
       {"with torch.autocast(\"cpu\", dtype=torch.bfloat16):  # around the forward",
        "at::autocast::set_cpu_enabled(true);  // bf16 autocast (LibTorch 2.4+: "
        "at::autocast::set_autocast_enabled(at::kCPU, true))"}},
      {"fused_adamw",
       {"optimizer = torch.optim.AdamW(model.parameters(), fused=True)",
        "// one fused kernel for every parameter: at::_fused_adamw_ (tunebench's worker)"}},
      {"freeze_script",
       {"model = "
        "torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.script(model.eval())))",
        "module.eval(); module = torch::jit::optimize_for_inference(torch::jit::freeze(module));"}},
      {"jit_fusion",
       {"torch._C._jit_override_can_fuse_on_cpu(True); model = torch.jit.script(model)",
        "torch::jit::overrideCanFuseOnCPU(true);"}},
      {"quantize_linear",
       {"model = torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, "
        "dtype=torch.qint8)",
        "// quantize_dynamic in Python, then torch.jit.save the result for C++"}},
      {"compile",
       {"model = torch.compile(model)",
        "// torch._inductor.aoti_compile_and_package in Python; "
        "torch::inductor::AOTIModelPackageLoader in C++"}},
      {"grad_accum",
       {"# VALUE micro-batches of batch/VALUE each: backward() each, one optimizer.step()",
        "// VALUE micro-batches of batch/VALUE each: backward() each, one optimizer.step()"}},
      {"omp_threads", {"torch.set_num_threads(VALUE)", "at::set_num_threads(VALUE);"}},
  };
  return lines;
}

std::string with_value(std::string line, const json& value) {
  const std::string text = value.is_string() ? value.get<std::string>() : value.dump();
  for (size_t at = line.find("VALUE"); at != std::string::npos; at = line.find("VALUE", at)) {
    line.replace(at, 5, text);
    at += text.size();
  }
  return line;
}

}  // namespace

Written how_to_apply(const json& settings) {
  Written w;
  const ProcessSetup setup = process_setup(settings);
  std::vector<std::string> parts;
  for (const auto& [name, value] : setup.env) parts.push_back(name + "=" + value);
  if (!setup.preload.empty()) {
    std::string preload;
    for (const auto& p : setup.preload) preload += (preload.empty() ? "" : ":") + p;
    parts.push_back("LD_PRELOAD=" + preload);
  }
  for (const auto& word : setup.launcher) parts.push_back(word);
  if (!parts.empty()) {
    for (const auto& part : parts) w.launch += part + " ";
    w.launch += "python your_program.py";
  }
  for (const auto& [id, value] : settings.items()) {
    const auto found = code().find(id);
    if (found != code().end()) {
      w.python.push_back(with_value(found->second.python, value));
      w.cpp.push_back(with_value(found->second.cpp, value));
      continue;
    }
    const Knob* k = find(id);
    // A process-start knob is in the launch line; any other is said as the catalog says it.
    if (k != nullptr && k->phase == Phase::process_start) continue;
    const std::string said = fmt::format("# {}={}: {}", id, value.dump(),
                                         k != nullptr ? k->change : "not in the catalog");
    w.python.push_back(said);
    w.cpp.push_back("//" + said.substr(1));
  }
  return w;
}

std::vector<std::string> written_knobs() {
  std::vector<std::string> ids;
  for (const auto& [id, lines] : code()) ids.push_back(id);
  return ids;
}

}  // namespace tunebench::knobs

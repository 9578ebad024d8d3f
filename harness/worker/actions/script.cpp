// The script family's action (worker/knob_action.h), the TorchScript and quantization knobs: each
// arm of jit_fusion, quantize_linear and freeze_script replaces the model's inference forward and
// reads back what it built.
//
//   jit_fusion       GPT: the MLP's bias add + erf-GELU chain, eager → TorchScript with the CPU
//                    (legacy) fuser, or on CUDA with NNC; evidence: fusion groups in the
//                    optimised graph that ran
//   quantize_linear  DLRM: fp32 Linear layers → dynamically quantized int8 Linear (prepacked
//                    weights, quantized::linear_dynamic); evidence: layers, weight dtype, engine,
//                    calls in the measured steps, accuracy delta against fp32
//   freeze_script    ResNet-50: eager module → the same function as a TorchScript module,
//                    frozen and optimised for inference; evidence: batch_norm nodes and
//                    parameters before and after freezing
//
// Both arms run the forward under no-grad, as deployed inference does, so that the comparison is
// the knob alone (quantized ops have no autograd; frozen constants carry no gradients).
#include "knobs/script.h"

#include <fmt/format.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/runtime/graph_executor.h>
#include <torch/script.h>

#include <algorithm>
#include <memory>
#include <stdexcept>

#include "platform/compat.h"
#include "worker/arm.h"
#include "worker/knob_action.h"

namespace tunebench::script_forward {

using nlohmann::json;
namespace nn = torch::nn;

namespace {

struct ArmForward {
  std::function<torch::Tensor(const models::Batch&)> forward;  // empty: none of these knobs is set
  nlohmann::json evidence = nlohmann::json::object();          // what was built, at once
  std::function<void(nlohmann::json&)> read_back;              // adds what the measured steps ran
};

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

// Nodes of `block` and its sub-blocks whose kind passes `match`.
int64_t count_nodes(const torch::jit::Block* block,
                    const std::function<bool(const std::string&)>& match) {
  int64_t n = 0;
  for (const torch::jit::Node* node : block->nodes()) {
    if (match(node->kind().toQualString())) ++n;
    for (const torch::jit::Block* sub : node->blocks()) n += count_nodes(sub, match);
  }
  return n;
}

// The model's own forward under no-grad: each knob's OFF arm, and the reference of its ON arm.
std::function<torch::Tensor(const models::Batch&)> eager_forward(models::BenchModel& model) {
  return [&model](const models::Batch& batch) {
    torch::NoGradGuard no_grad;
    return model.forward(batch);
  };
}

bool is_fusion_group(const std::string& kind) {
  // prim::FusionGroup (the legacy fuser), prim::TensorExprGroup (NNC).
  return kind.find("FusionGroup") != std::string::npos ||
         kind.find("TensorExprGroup") != std::string::npos;
}

// --- jit_fusion ---------------------------------------------------------------------------------

// The GPT MLP's bias add and GELU written out as pointwise operations (erf form, √2 ≈ 1.41421):
// eager, each operation is one kernel and one pass over [B, T, 4C] in memory.
torch::Tensor bias_gelu_eager(const torch::Tensor& x, const torch::Tensor& bias) {
  auto y = x + bias;
  return y * 0.5 * (1.0 + torch::erf(y / 1.41421));
}

// The same chain as TorchScript source.
constexpr const char* kBiasGeluSource = R"(
def bias_gelu(x, bias):
    y = x + bias
    return y * 0.5 * (1.0 + torch.erf(y / 1.41421))
)";

struct ScriptedChain {
  std::shared_ptr<torch::jit::CompilationUnit> unit;
  torch::jit::Function* function = nullptr;
  torch::Tensor operator()(const torch::Tensor& x, const torch::Tensor& bias) const {
    return (*function)({x, bias}).toTensor();
  }
};

ScriptedChain compile_chain(bool cuda = false) {
  if (cuda) {
    compat::use_gpu_fuser();
  } else {
    compat::use_legacy_cpu_fuser();
  }
  ScriptedChain chain;
  chain.unit = torch::jit::compile(kBiasGeluSource);
  chain.function = &chain.unit->get_function("bias_gelu");
  return chain;
}

// The operations inside the fusion groups of `block` and its sub-blocks (the profiling executor
// puts a group inside a type-check branch).
void fused_ops(const torch::jit::Block* block, json& out) {
  for (const torch::jit::Node* node : block->nodes()) {
    for (const torch::jit::Block* sub : node->blocks()) fused_ops(sub, out);
    if (!is_fusion_group(node->kind().toQualString()) ||
        !node->hasAttribute(torch::jit::attr::Subgraph)) {
      continue;
    }
    for (const torch::jit::Node* inner : node->g(torch::jit::attr::Subgraph)->nodes()) {
      const std::string kind = inner->kind().toQualString();
      if (kind != "prim::Constant") out.push_back(kind);
    }
  }
}

// The fusion groups of the graph this thread's TorchScript executor ran last, and the operations
// inside them.
json last_graph_fusion() {
  const auto graph = torch::jit::lastExecutedOptimizedGraph();
  json out = {{knobs::script::kFusionGroups, 0}, {"fused_ops", json::array()}};
  if (!graph) return out;
  out[knobs::script::kFusionGroups] = count_nodes(graph->block(), is_fusion_group);
  fused_ops(graph->block(), out["fused_ops"]);
  return out;
}

std::string jit_fusion_unavailable_reason() {
  static const std::string reason = []() -> std::string {
    try {
      torch::NoGradGuard no_grad;
      const auto chain = compile_chain();
      const auto x = torch::linspace(-3, 3, 64).view({4, 16});
      const auto bias = torch::linspace(-1, 1, 16);
      for (int i = 0; i < 3; ++i) chain(x, bias);  // the executor optimises on a later run
      if (last_graph_fusion()["fusion_groups"] == 0) {
        return "this LibTorch's TorchScript built no CPU fusion group for a pointwise chain "
               "(legacy fuser; NNC needs LLVM)";
      }
      return "";
    } catch (const std::exception& e) {
      return "this LibTorch cannot fuse on the CPU: " + first_line(e.what());
    }
  }();
  return reason;
}

// On CUDA (the model's parameters there) the chain is fused by NNC into a generated CUDA
// kernel; on the CPU by the legacy fuser (compat.h).
ArmForward jit_fusion(bool on, models::BenchModel& model, bool cuda) {
  const auto slots = model.bias_act_slots();
  if (slots.empty()) throw std::runtime_error("jit_fusion: not applicable to this model");
  auto calls = std::make_shared<int64_t>(0);
  std::function<torch::Tensor(const torch::Tensor&, const torch::Tensor&)> chain;
  if (on) {
    chain = [scripted = compile_chain(cuda), calls](const torch::Tensor& x,
                                                    const torch::Tensor& b) {
      ++*calls;
      return scripted(x, b);
    };
  } else {
    chain = [calls](const torch::Tensor& x, const torch::Tensor& b) {
      ++*calls;
      return bias_gelu_eager(x, b);
    };
  }
  for (auto* slot : slots) *slot = chain;
  ArmForward arm;
  arm.forward = eager_forward(model);
  arm.evidence = {{knobs::script::kChain, on ? "torchscript" : "eager"},
                  {"fuser", !on    ? "none"
                            : cuda ? "nnc (CUDA)"
                                   : "legacy (CPU)"}};
  arm.read_back = [on, calls](json& evidence) {
    json& e = evidence[knobs::script::kJitFusion];
    e[knobs::script::kChainCalls] = *calls;
    if (on) {
      e.update(last_graph_fusion());
    } else {
      e[knobs::script::kFusionGroups] = 0;
    }
  };
  return arm;
}

// --- quantize_linear ----------------------------------------------------------------------------

c10::OperatorHandle quantized_op(const char* name) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, "");
}

// The quantized engine to use: fbgemm (x86 servers) before qnnpack (mobile); empty when none.
c10::optional<at::QEngine> pick_engine() {
  const auto& engines = at::globalContext().supportedQEngines();
  for (const auto wanted : {at::QEngine::FBGEMM, at::QEngine::QNNPACK}) {
    if (std::find(engines.begin(), engines.end(), wanted) != engines.end()) return wanted;
  }
  return c10::nullopt;
}

std::string quantize_linear_unavailable_reason() {
  if (!pick_engine()) return "this LibTorch has no quantized engine (fbgemm or qnnpack)";
  if (!c10::Dispatcher::singleton().findSchema({"quantized::linear_dynamic", ""})) {
    return "this LibTorch has no quantized::linear_dynamic operator";
  }
  return "";
}

// What PyTorch's quantize_dynamic makes of an nn.Linear: the weight quantized to int8 per tensor,
// symmetric (scale = max|w| / 127.5, zero point 0), prepacked for the engine; each call quantizes
// its input with a scale taken from the input's range and runs an int8 GEMM with an fp32 result.
struct Int8LinearImpl : nn::Module {
  Int8LinearImpl(const nn::LinearImpl& fp32, bool reduce_range, std::shared_ptr<int64_t> calls)
      : reduce_range(reduce_range), calls(std::move(calls)) {
    const auto w = fp32.weight.detach();
    const double scale = std::max(w.abs().max().item<double>(), 1e-12) / 127.5;
    torch::jit::Stack stack{torch::quantize_per_tensor(w, scale, 0, torch::kQInt8),
                            fp32.bias.defined() ? c10::IValue(fp32.bias.detach()) : c10::IValue()};
    quantized_op("quantized::linear_prepack").callBoxed(&stack);
    packed = stack.at(0);
  }
  torch::Tensor forward(const torch::Tensor& x) {
    static const auto op = quantized_op("quantized::linear_dynamic");
    ++*calls;
    torch::jit::Stack stack{x, packed, reduce_range};
    op.callBoxed(&stack);
    return stack.at(0).toTensor();
  }
  // The weight as the packed parameters hold it.
  torch::Tensor unpacked_weight() const {
    torch::jit::Stack stack{packed};
    quantized_op("quantized::linear_unpack").callBoxed(&stack);
    return stack.at(0).toTensor();
  }

  c10::IValue packed;  // LinearPackedParamsBase
  bool reduce_range;   // fbgemm: 7-bit activations, so its 16-bit accumulation cannot overflow
  std::shared_ptr<int64_t> calls;
};

ArmForward quantize_linear(bool on, models::BenchModel& model, const models::Batch& batch) {
  ArmForward arm;
  arm.forward = eager_forward(model);
  auto layers = [&](auto predicate) {
    int64_t n = 0;
    for (const auto& m : model.module().modules(/*include_self=*/false)) n += predicate(*m) ? 1 : 0;
    return n;
  };
  auto fp32_layers = [&] {
    return layers([](nn::Module& m) { return m.as<nn::Linear>() != nullptr; });
  };
  auto int8_layers = [&] {
    return layers([](nn::Module& m) { return dynamic_cast<Int8LinearImpl*>(&m) != nullptr; });
  };
  json& e = arm.evidence;
  if (!on) {
    e = {{knobs::script::kFp32LinearLayers, fp32_layers()},
         {knobs::script::kInt8LinearLayers, int8_layers()}};
    return arm;
  }
  const auto engine = pick_engine();
  if (!engine) throw std::runtime_error("quantize_linear: " + quantize_linear_unavailable_reason());
  at::globalContext().setQEngine(*engine);
  const bool reduce_range = *engine == at::QEngine::FBGEMM;
  const auto reference = arm.forward(batch);
  auto calls = std::make_shared<int64_t>(0);
  const int64_t replaced = model.replace_linear_layers([&](const nn::LinearImpl& fp32) {
    return nn::AnyModule(std::make_shared<Int8LinearImpl>(fp32, reduce_range, calls));
  });
  if (replaced == 0) throw std::runtime_error("quantize_linear: not applicable to this model");
  const auto quantized = arm.forward(batch);
  const auto error = (quantized - reference).abs();
  const Int8LinearImpl* first = nullptr;
  for (const auto& m : model.module().modules(/*include_self=*/false)) {
    if (!first) first = dynamic_cast<const Int8LinearImpl*>(m.get());
  }
  e = {{"engine", c10::toString(*engine)},
       {"reduce_range", reduce_range},
       {knobs::script::kFp32LinearLayers, fp32_layers()},
       {knobs::script::kInt8LinearLayers, int8_layers()},
       {knobs::script::kWeightDtype,
        std::string(c10::toString(first->unpacked_weight().scalar_type()))},
       {"max_abs_error", error.max().item<double>()},
       {"mean_abs_error", error.mean().item<double>()},
       {"reference_mean_abs", reference.abs().mean().item<double>()}};
  *calls = 0;
  arm.read_back = [calls](json& evidence) {
    evidence[knobs::script::kQuantizeLinear][knobs::script::kInt8Calls] = *calls;
  };
  return arm;
}

// --- freeze_script ------------------------------------------------------------------------------

// "layer1.0.conv1.weight" → "layer1_0_conv1_weight": a TorchScript attribute name, as
// BenchModel::inference_script_source names them.
std::string flat(std::string name) {
  std::replace(name.begin(), name.end(), '.', '_');
  return name;
}

int64_t batch_norm_nodes(torch::jit::Module& module) {
  return count_nodes(module.get_method("forward").graph()->block(),
                     [](const std::string& kind) { return kind == "aten::batch_norm"; });
}

ArmForward freeze_script(bool on, models::BenchModel& model, const models::Batch& batch) {
  const std::string source = model.inference_script_source();
  if (source.empty()) throw std::runtime_error("freeze_script: not applicable to this model");
  ArmForward arm;
  arm.forward = eager_forward(model);
  if (!on) {
    arm.evidence = {{knobs::script::kModule, "eager"}};
    return arm;
  }
  // The same function as a TorchScript module: the C++ model's parameters and buffers as its
  // attributes, its forward as TorchScript source.
  torch::jit::Module script("InferenceScript");
  for (const auto& p : model.module().named_parameters()) {
    script.register_parameter(flat(p.key()), p.value().detach(), /*is_buffer=*/false);
  }
  for (const auto& b : model.module().named_buffers()) {
    script.register_buffer(flat(b.key()), b.value());
  }
  script.register_attribute("training", c10::BoolType::get(), false);
  script.define(source);
  script.eval();
  const int64_t bn_before = batch_norm_nodes(script);
  const int64_t params_before = static_cast<int64_t>(script.parameters().size());

  auto frozen = torch::jit::freeze(script);
  frozen = torch::jit::optimize_for_inference(frozen);
  json kinds = json::object();
  for (const torch::jit::Node* node : frozen.get_method("forward").graph()->nodes()) {
    const std::string kind = node->kind().toQualString();
    if (kind != "prim::Constant") kinds[kind] = kinds.value(kind, 0) + 1;
  }
  arm.forward = [frozen](const models::Batch& b) mutable {
    torch::NoGradGuard no_grad;
    return frozen.forward({b.inputs.at(0)}).toTensor();
  };
  const auto eager = eager_forward(model)(batch);
  const auto difference = (arm.forward(batch) - eager).abs().max().item<double>();
  arm.evidence = {
      {knobs::script::kModule, "frozen"},
      {knobs::script::kBatchNormNodesScripted, bn_before},
      {knobs::script::kBatchNormNodesFrozen, batch_norm_nodes(frozen)},
      {"parameters_scripted", params_before},
      {knobs::script::kParametersFrozen, static_cast<int64_t>(frozen.parameters().size())},
      {"frozen_node_kinds", kinds},
      {"max_abs_difference_vs_eager", difference},
      {"eager_max_abs", eager.abs().max().item<double>()}};
  return arm;
}

// The arm that `settings` select; throws std::runtime_error when the knob cannot run on this
// model or build.
ArmForward prepare(const json& settings, models::BenchModel& model, const models::Batch& batch,
                   bool cuda) {
  auto on = [&](const char* id) { return settings.value(id, false) == true; };
  ArmForward arm;
  const char* id = nullptr;
  if (settings.contains("jit_fusion")) {
    id = "jit_fusion";
    arm = jit_fusion(on(id), model, cuda);
  } else if (settings.contains("quantize_linear")) {
    id = "quantize_linear";
    arm = quantize_linear(on(id), model, batch);
  } else if (settings.contains("freeze_script")) {
    id = "freeze_script";
    arm = freeze_script(on(id), model, batch);
  } else {
    return arm;
  }
  arm.evidence = json{{id, arm.evidence}};
  return arm;
}

bool has_script_knob(const json& settings) {
  return settings.contains("jit_fusion") || settings.contains("quantize_linear") ||
         settings.contains("freeze_script");
}

// The arm's forward replaced on the device; what the measured steps ran, read back.
class ScriptHooks : public worker::ArmHooks {
 public:
  void on_device(worker::Arm& arm) override {
    built_ = prepare(arm.spec.settings, *arm.model, arm.batch, arm.device->device().is_cuda());
    arm.evidence.update(built_.evidence);
    if (built_.forward) arm.forward = built_.forward;
  }
  void read_back(worker::Arm&, json& evidence) override {
    if (built_.read_back) built_.read_back(evidence);
  }

 private:
  ArmForward built_;
};

class ScriptAction : public worker::KnobAction {
 public:
  const char* family() const override { return "script"; }
  // The TorchScript fuser's reason is the CPU's (on CUDA, NNC generates the kernels itself).
  std::map<std::string, std::string> unsupported(c10::DeviceType device) const override {
    std::map<std::string, std::string> out;
    if (device != c10::DeviceType::CPU) return out;
    if (auto why = jit_fusion_unavailable_reason(); !why.empty())
      out[knobs::script::kJitFusion] = why;
    if (auto why = quantize_linear_unavailable_reason(); !why.empty())
      out[knobs::script::kQuantizeLinear] = why;
    return out;
  }
  bool changes_model(const json& settings) const override { return has_script_knob(settings); }
  std::unique_ptr<worker::ArmHooks> prepare(worker::Arm& arm) const override {
    if (!has_script_knob(arm.spec.settings)) return nullptr;
    return std::make_unique<ScriptHooks>();
  }
};

}  // namespace
}  // namespace tunebench::script_forward

namespace tunebench::worker {

const KnobAction& script_action() {
  static const script_forward::ScriptAction action;
  return action;
}

}  // namespace tunebench::worker

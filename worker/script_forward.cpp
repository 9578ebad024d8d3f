#include "worker/script_forward.h"

#include <fmt/format.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/runtime/graph_executor.h>
#include <torch/script.h>

#include <algorithm>
#include <memory>
#include <stdexcept>

#include "models/dlrm.h"
#include "models/gpt.h"
#include "models/resnet.h"
#include "platform/compat.h"

namespace tunebench::script_forward {

using nlohmann::json;
namespace nn = torch::nn;

namespace {

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

template <typename Model>
Model& model_for(models::BenchModel& model, const std::string& knob) {
  auto* typed = dynamic_cast<Model*>(&model);
  if (!typed) throw std::runtime_error(knob + ": not applicable to this model");
  return *typed;
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
  json out = {{"fusion_groups", 0}, {"fused_ops", json::array()}};
  if (!graph) return out;
  out["fusion_groups"] = count_nodes(graph->block(), is_fusion_group);
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
ArmForward jit_fusion(bool on, models::BenchModel& model) {
  auto& gpt = model_for<models::GptModel>(model, "jit_fusion");
  auto calls = std::make_shared<int64_t>(0);
  const bool cuda = gpt.module().parameters().at(0).is_cuda();
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
  for (const auto& block : *gpt.net->blocks) block->as<models::GptBlock>()->bias_act = chain;
  ArmForward arm;
  arm.forward = eager_forward(gpt);
  arm.evidence = {{"chain", on ? "torchscript" : "eager"},
                  {"fuser", !on    ? "none"
                            : cuda ? "nnc (CUDA)"
                                   : "legacy (CPU)"}};
  arm.read_back = [on, calls](json& evidence) {
    json& e = evidence["jit_fusion"];
    e["chain_calls"] = *calls;
    if (on) {
      e.update(last_graph_fusion());
    } else {
      e["fusion_groups"] = 0;
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

nn::Sequential quantize_mlp(nn::Sequential& mlp, bool reduce_range,
                            const std::shared_ptr<int64_t>& calls) {
  nn::Sequential out;
  for (const auto& child : *mlp) {
    if (const auto* linear = child.ptr()->as<nn::Linear>()) {
      out->push_back(std::make_shared<Int8LinearImpl>(*linear, reduce_range, calls));
    } else {
      out->push_back(child);
    }
  }
  return out;
}

ArmForward quantize_linear(bool on, models::BenchModel& model, const models::Batch& batch) {
  auto& dlrm = model_for<models::DlrmModel>(model, "quantize_linear");
  ArmForward arm;
  arm.forward = eager_forward(dlrm);
  auto layers = [&](auto predicate) {
    int64_t n = 0;
    for (const auto& m : dlrm.net->modules(/*include_self=*/false)) n += predicate(*m) ? 1 : 0;
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
    e = {{"fp32_linear_layers", fp32_layers()}, {"int8_linear_layers", int8_layers()}};
    return arm;
  }
  const auto engine = pick_engine();
  if (!engine) throw std::runtime_error("quantize_linear: " + quantize_linear_unavailable_reason());
  at::globalContext().setQEngine(*engine);
  const bool reduce_range = *engine == at::QEngine::FBGEMM;
  const auto reference = arm.forward(batch);
  auto calls = std::make_shared<int64_t>(0);
  auto& net = *dlrm.net;
  net.bottom = net.replace_module("bottom", quantize_mlp(net.bottom, reduce_range, calls));
  net.top = net.replace_module("top", quantize_mlp(net.top, reduce_range, calls));
  const auto quantized = arm.forward(batch);
  const auto error = (quantized - reference).abs();
  const auto* first = net.bottom->ptr(0)->as<Int8LinearImpl>();
  e = {{"engine", c10::toString(*engine)},
       {"reduce_range", reduce_range},
       {"fp32_linear_layers", fp32_layers()},
       {"int8_linear_layers", int8_layers()},
       {"weight_dtype", std::string(c10::toString(first->unpacked_weight().scalar_type()))},
       {"max_abs_error", error.max().item<double>()},
       {"mean_abs_error", error.mean().item<double>()},
       {"reference_mean_abs", reference.abs().mean().item<double>()}};
  *calls = 0;
  arm.read_back = [calls](json& evidence) { evidence["quantize_linear"]["int8_calls"] = *calls; };
  return arm;
}

// --- freeze_script ------------------------------------------------------------------------------

// "layer1.0.conv1.weight" → "layer1_0_conv1_weight": a TorchScript attribute name.
std::string flat(std::string name) {
  std::replace(name.begin(), name.end(), '.', '_');
  return name;
}

std::string conv(const std::string& name, const nn::Conv2dImpl& c, const std::string& in) {
  const int64_t k = (*c.options.kernel_size())[0], s = (*c.options.stride())[0];
  const std::string bias = c.bias.defined() ? "self." + flat(name) + "_bias" : "None";
  // Padding k/2, as models/resnet.cpp builds every conv.
  return fmt::format("torch.conv2d({}, self.{}_weight, {}, [{}, {}], [{}, {}])", in, flat(name),
                     bias, s, s, k / 2, k / 2);
}

std::string batch_norm(const std::string& name, const nn::BatchNorm2dImpl& bn,
                       const std::string& in) {
  const std::string n = "self." + flat(name);
  return fmt::format(
      "torch.batch_norm({}, {}_weight, {}_bias, {}_running_mean, {}_running_var, False, 0.1, "
      "{:.17g}, False)",
      in, n, n, n, n, bn.options.eps());
}

// ResNetImpl::forward in inference as TorchScript over the flattened parameter names.
std::string resnet_source(models::ResNetImpl& net) {
  std::string s = "def forward(self, x):\n";
  auto line = [&](const std::string& text) { s += "    " + text + "\n"; };
  line("x = torch.relu(" + batch_norm("bn1", *net.stem_bn, conv("conv1", *net.stem_conv, "x")) +
       ")");
  line("x = torch.max_pool2d(x, [3, 3], [2, 2], [1, 1])");
  const std::pair<const char*, nn::Sequential*> stages[] = {{"layer1", &net.layer1},
                                                            {"layer2", &net.layer2},
                                                            {"layer3", &net.layer3},
                                                            {"layer4", &net.layer4}};
  for (const auto& [stage, seq] : stages) {
    for (size_t i = 0; i < (*seq)->size(); ++i) {
      const auto& b = *(*seq)->ptr(i)->as<models::Bottleneck>();
      const std::string p = fmt::format("{}.{}.", stage, i);
      if (b.downsample) {
        const auto& dconv = *b.downsample->ptr(0)->as<nn::Conv2d>();
        const auto& dbn = *b.downsample->ptr(1)->as<nn::BatchNorm2d>();
        line("identity = " +
             batch_norm(p + "downsample.1", dbn, conv(p + "downsample.0", dconv, "x")));
      } else {
        line("identity = x");
      }
      line("out = torch.relu(" + batch_norm(p + "bn1", *b.bn1, conv(p + "conv1", *b.conv1, "x")) +
           ")");
      line("out = torch.relu(" + batch_norm(p + "bn2", *b.bn2, conv(p + "conv2", *b.conv2, "out")) +
           ")");
      line("out = " + batch_norm(p + "bn3", *b.bn3, conv(p + "conv3", *b.conv3, "out")));
      line("x = torch.relu(out + identity)");
    }
  }
  line("x = torch.adaptive_avg_pool2d(x, [1, 1]).flatten(1)");
  line("return torch.linear(x, self.fc_weight, self.fc_bias)");
  return s;
}

int64_t batch_norm_nodes(torch::jit::Module& module) {
  return count_nodes(module.get_method("forward").graph()->block(),
                     [](const std::string& kind) { return kind == "aten::batch_norm"; });
}

ArmForward freeze_script(bool on, models::BenchModel& model, const models::Batch& batch) {
  auto& resnet = model_for<models::ResNetModel>(model, "freeze_script");
  ArmForward arm;
  arm.forward = eager_forward(resnet);
  if (!on) {
    arm.evidence = {{"module", "eager"}};
    return arm;
  }
  // The same function as a TorchScript module: the C++ model's parameters and buffers as its
  // attributes, its forward as TorchScript source.
  torch::jit::Module script("ResNet50Script");
  for (const auto& p : resnet.net->named_parameters()) {
    script.register_parameter(flat(p.key()), p.value().detach(), /*is_buffer=*/false);
  }
  for (const auto& b : resnet.net->named_buffers())
    script.register_buffer(flat(b.key()), b.value());
  script.register_attribute("training", c10::BoolType::get(), false);
  script.define(resnet_source(*resnet.net));
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
  const auto eager = eager_forward(resnet)(batch);
  const auto difference = (arm.forward(batch) - eager).abs().max().item<double>();
  arm.evidence = {{"module", "frozen"},
                  {"batch_norm_nodes_scripted", bn_before},
                  {"batch_norm_nodes_frozen", batch_norm_nodes(frozen)},
                  {"parameters_scripted", params_before},
                  {"parameters_frozen", static_cast<int64_t>(frozen.parameters().size())},
                  {"frozen_node_kinds", kinds},
                  {"max_abs_difference_vs_eager", difference},
                  {"eager_max_abs", eager.abs().max().item<double>()}};
  return arm;
}

}  // namespace

std::map<std::string, std::string> unsupported() {
  std::map<std::string, std::string> out;
  if (auto why = jit_fusion_unavailable_reason(); !why.empty()) out["jit_fusion"] = why;
  if (auto why = quantize_linear_unavailable_reason(); !why.empty()) out["quantize_linear"] = why;
  return out;
}

ArmForward prepare(const json& settings, models::BenchModel& model, const models::Batch& batch) {
  auto on = [&](const char* id) { return settings.value(id, false) == true; };
  ArmForward arm;
  const char* id = nullptr;
  if (settings.contains("jit_fusion")) {
    id = "jit_fusion";
    arm = jit_fusion(on(id), model);
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

}  // namespace tunebench::script_forward

#include "models/torchscript.h"

#include <torch/script.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/records.h"
#include "models/torchscript_config.h"

namespace tunebench::models {

namespace {

namespace fs = std::filesystem;

torch::Dtype dtype_of(const std::string& name) {
  static const std::map<std::string, torch::Dtype> dtypes{
      {"float32", torch::kFloat32},   {"float64", torch::kFloat64}, {"float16", torch::kFloat16},
      {"bfloat16", torch::kBFloat16}, {"int64", torch::kInt64},     {"int32", torch::kInt32},
      {"int8", torch::kInt8},         {"uint8", torch::kUInt8},     {"bool", torch::kBool}};
  return dtypes.at(name);
}

std::string first_line(const std::string& text) {
  const size_t end = text.find('\n');
  return end == std::string::npos ? text : text.substr(0, end);
}

// Whether `path` is a torch.export archive (torch.export.save, or an AOTInductor package): a zip
// whose entries (named in its central directory, at the end of the file) hold "archive_format"
// (PyTorch 2.6 and later) or "serialized_exported_program" (2.1 to 2.5).
bool is_export_archive(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  const std::streamoff size = in.tellg();
  if (!in || size < 4) return false;
  const std::streamoff tail = std::min<std::streamoff>(size, 1 << 20);
  std::string bytes(static_cast<size_t>(tail), '\0');
  in.seekg(size - tail);
  in.read(bytes.data(), tail);
  std::string head(4, '\0');
  in.seekg(0);
  in.read(head.data(), 4);
  return head == std::string("PK\x03\x04", 4) &&
         (bytes.find("/archive_format") != std::string::npos ||
          bytes.find("serialized_exported_program") != std::string::npos);
}

// LibTorch's message for a file it cannot load, made one sentence about `path`.
std::string load_error(const std::string& path, const std::string& what) {
  const std::string line = first_line(what);
  if (is_export_archive(path)) {
    return fmt::format(
        "{} is a torch.export archive (torch.export.save or an AOTInductor package), not "
        "TorchScript, which the C++ worker loads. Give a torch.export.save archive by a name "
        "ending in .pt2 (the pypi build's Python worker runs it), or the model as TorchScript "
        "(torch.jit.save(torch.jit.trace(model, inputs), \"model.pt\"), with its --input)",
        path);
  }
  if (what.find("file format version") != std::string::npos ||
      what.find("supports up to") != std::string::npos) {
    return fmt::format(
        "{} was written by a newer PyTorch than this build's LibTorch {} reads ({}): run it with "
        "a build against a newer LibTorch (the pypi build), or save it with torch {}",
        path, TORCH_VERSION, line, TORCH_VERSION);
  }
  return fmt::format(
      "{} is not a TorchScript archive that LibTorch {} can load (torch.jit.save "
      "writes one; torch.save does not): {}",
      path, TORCH_VERSION, line);
}

torch::jit::Module load(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    throw InvalidSpec(
        fmt::format("{} does not exist or is not a file (the option path of model "
                    "torchscript, or run --model)",
                    path));
  }
  try {
    torch::jit::Module m = torch::jit::load(path);
    m.eval();
    return m;
  } catch (const c10::Error& e) {
    throw InvalidSpec(load_error(path, e.what_without_backtrace()));
  } catch (const std::exception& e) {
    throw InvalidSpec(load_error(path, e.what()));
  }
}

std::string underscored(std::string name) {
  std::replace(name.begin(), name.end(), '.', '_');
  return name;
}

// The archive's tensors on a module of our own (see the header).
class FileModule : public torch::nn::Module {
 public:
  explicit FileModule(torch::jit::Module script) : script_(std::move(script)) {
    for (const auto& p : script_.named_parameters(/*recurse=*/true)) {
      register_parameter(underscored(p.name), p.value, p.value.requires_grad());
    }
    for (const auto& b : script_.named_buffers(/*recurse=*/true)) {
      register_buffer(underscored(b.name), b.value);
    }
  }
  void train(bool on) override {
    torch::nn::Module::train(on);
    script_.train(on);
  }
  torch::jit::Module& script() { return script_; }

 private:
  torch::jit::Module script_;
};

// Every tensor of a forward's output: a tensor, or a tuple (or list) of tensors; anything else
// throws InvalidSpec naming what it was.
std::vector<torch::Tensor> output_tensors(const c10::IValue& out, const std::string& path) {
  if (out.isTensor()) return {out.toTensor()};
  std::vector<torch::Tensor> tensors;
  auto take = [&](const c10::IValue& v) {
    if (!v.isTensor()) {
      throw InvalidSpec(
          fmt::format("{}: its forward returned a {} holding a {}; tunebench times "
                      "models whose forward returns a tensor or a tuple of tensors",
                      path, out.tagKind(), v.tagKind()));
    }
    tensors.push_back(v.toTensor());
  };
  if (out.isTuple()) {
    for (const auto& v : out.toTupleRef().elements()) take(v);
  } else if (out.isTensorList()) {
    for (const auto& t : out.toTensorVector()) tensors.push_back(t);
  } else {
    throw InvalidSpec(
        fmt::format("{}: its forward returned a {}; tunebench times models whose "
                    "forward returns a tensor or a tuple of tensors",
                    path, out.tagKind()));
  }
  if (tensors.empty()) throw InvalidSpec(path + ": its forward returned an empty tuple");
  return tensors;
}

class TorchScriptModel : public BenchModel {
 public:
  explicit TorchScriptModel(const TorchScriptConfig& config)
      : config_(config), module_(std::make_shared<FileModule>(load(config.path))) {}

  torch::nn::Module& module() override { return *module_; }

  Batch make_batch(int64_t batch_size, uint64_t seed) const override {
    auto gen = seeded_generator(seed);
    Batch b;
    b.size = batch_size;
    for (const auto& input : config_.inputs) {
      std::vector<int64_t> shape{batch_size};
      shape.insert(shape.end(), input.shape.begin(), input.shape.end());
      const auto dtype = dtype_of(input.dtype);
      if (is_integer_dtype(input.dtype)) {
        const int64_t high = input.dtype == "bool" ? 2 : input.high;
        const int64_t low = input.dtype == "bool" ? 0 : input.low;
        b.inputs.push_back(torch::randint(low, high, shape, gen, torch::kInt64).to(dtype));
      } else {
        b.inputs.push_back(torch::randn(shape, gen, torch::kFloat32).to(dtype));
      }
    }
    return b;
  }

  c10::IValue call(const Batch& batch) {
    std::vector<c10::IValue> args(batch.inputs.begin(), batch.inputs.end());
    return module_->script().forward(args);
  }

  torch::Tensor forward(const Batch& batch) override {
    return output_tensors(call(batch), config_.path).front();
  }

  torch::Tensor loss(const Batch& batch) override {
    torch::Tensor total;
    for (const auto& t : output_tensors(call(batch), config_.path)) {
      if (!t.is_floating_point()) continue;
      const auto part = t.to(torch::kFloat32).sum();
      total = total.defined() ? total + part : part;
    }
    if (!total.defined()) {
      throw InvalidSpec(config_.path + ": its forward returned no floating-point tensor to train");
    }
    return total;
  }

  nlohmann::json describe() override {
    return {{"file", config_.path},
            {"parameters", count_parameters(*module_)},
            {"inputs", describe_inputs(config_.inputs)}};
  }

  // The weight of its first 2-D convolution, in the order the archive lists its modules.
  torch::Tensor first_conv_weight() override {
    for (const auto& m : module_->script().named_modules()) {
      const auto type = m.value.type()->name();
      if (!type || type->name() != "Conv2d" || !m.value.hasattr("weight")) continue;
      const auto weight = m.value.attr("weight");
      if (weight.isTensor() && weight.toTensor().dim() == 4) return weight.toTensor();
    }
    return {};
  }

 private:
  TorchScriptConfig config_;
  std::shared_ptr<FileModule> module_;
};

std::string sha256_of_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return sha256_hex(bytes.str());
}

std::string shapes_of(const Batch& b) {
  std::string out;
  for (const auto& t : b.inputs) {
    std::string shape;
    for (int64_t d : t.sizes()) shape += (shape.empty() ? "" : ", ") + std::to_string(d);
    out += fmt::format("{}[{}] {}", out.empty() ? "" : ", ", shape, std::string(t.dtype().name()));
  }
  return out;
}

}  // namespace

std::unique_ptr<BenchModel> torchscript_build(const ModelSpec& spec) {
  return std::make_unique<TorchScriptModel>(configure(torchscript_family(), spec));
}

// Long (~60 lines) because each of its steps turns its own failure into its own message.
ModelOffer inspect_file_model(const ModelSpec& spec, int64_t batch, bool train) {
  const TorchScriptConfig config = configure(torchscript_family(), spec);
  TorchScriptModel model(config);
  ModelOffer offer;
  offer.file = config.path;
  offer.sha256 = sha256_of_file(config.path);
  offer.inputs = nlohmann::json::array();
  for (const auto& input : config.inputs) offer.inputs.push_back(to_json(input));
  offer.parameters = count_parameters(model.module());
  for (const auto& p : model.module().parameters()) offer.trainable |= p.requires_grad();
  const Batch b = model.make_batch(batch, 1);
  c10::IValue out;
  try {
    torch::NoGradGuard no_grad;
    out = model.call(b);
  } catch (const std::exception& e) {
    const std::string what = first_line(e.what());
    throw InvalidSpec(
        fmt::format("{}: its forward rejected inputs of shapes {} (batch {}; give "
                    "the inputs it takes with --input or the option inputs): {}",
                    config.path, shapes_of(b), batch, what));
  }
  const auto outputs = output_tensors(out, config.path);
  offer.output = outputs.size() == 1 && out.isTensor()
                     ? "tensor"
                     : fmt::format("tuple of {} tensors", outputs.size());
  offer.conv2d = model.first_conv_weight().defined() && !b.inputs.empty() &&
                 b.inputs.front().dim() == 4 && b.inputs.front().is_floating_point();
  if (train) {
    if (!offer.trainable) {
      throw InvalidSpec(
          fmt::format("{} has no parameter that requires a gradient: it cannot be "
                      "trained; measure it in inference (mode infer)",
                      config.path));
    }
    try {
      model.module().train(true);
      model.loss(b).backward();
    } catch (const InvalidSpec&) {
      throw;
    } catch (const std::exception& e) {
      throw InvalidSpec(
          fmt::format("{}: the backward of its loss (the sum of its outputs) "
                      "failed: {}",
                      config.path, first_line(e.what())));
    }
  }
  return offer;
}

}  // namespace tunebench::models

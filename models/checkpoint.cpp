#include "models/checkpoint.h"

#include <optional>

#include "platform/compat.h"

namespace tunebench::models {

namespace {

namespace ag = torch::autograd;

constexpr c10::DeviceType kAutocastDevices[] = {c10::DeviceType::CPU, c10::DeviceType::CUDA};

// Where the context keeps a device's autocast state of the forward pass: its dtype, or -1 off.
std::string autocast_key(c10::DeviceType d) { return "autocast_" + c10::DeviceTypeName(d, true); }

// The forward pass's autocast state, kept so the recompute casts as the forward did. Without it
// a segment that ran in bf16 under amp would run again in fp32, and its recomputed activations
// would not match the gradients that reach it (PyTorch's own checkpoint restores autocast for
// the same reason).
void save_autocast(ag::AutogradContext* ctx) {
  for (const c10::DeviceType d : kAutocastDevices) {
    ctx->saved_data[autocast_key(d)] =
        compat::autocast_enabled(d) ? static_cast<int64_t>(compat::autocast_dtype(d)) : int64_t{-1};
  }
}

struct CheckpointFunction : ag::Function<CheckpointFunction> {
  // `segment` is the address of a Segment owned by the model (an IValue cannot hold a
  // std::function); the model outlives every graph its steps build.
  static torch::Tensor forward(ag::AutogradContext* ctx, const torch::Tensor& x, int64_t segment) {
    ctx->save_for_backward({x});
    ctx->saved_data["segment"] = segment;
    save_autocast(ctx);
    torch::NoGradGuard no_grad;
    return (*reinterpret_cast<const Segment*>(segment))(x);
  }

  static ag::tensor_list backward(ag::AutogradContext* ctx, ag::tensor_list grad_output) {
    const auto& segment = *reinterpret_cast<const Segment*>(ctx->saved_data["segment"].toInt());
    torch::Tensor x = ctx->get_saved_variables().at(0).detach().requires_grad_(true);
    torch::Tensor y;
    {
      torch::AutoGradMode grad(true);
      std::optional<compat::AutocastGuard> cast[std::size(kAutocastDevices)];
      for (size_t i = 0; i < std::size(kAutocastDevices); ++i) {
        const int64_t dtype = ctx->saved_data[autocast_key(kAutocastDevices[i])].toInt();
        if (dtype >= 0) cast[i].emplace(kAutocastDevices[i], static_cast<c10::ScalarType>(dtype));
      }
      y = segment(x);
    }
    // A re-entrant backward through the recomputed segment: parameter gradients accumulate in
    // their .grad, the input's gradient is handed on.
    ag::backward({y}, {grad_output.at(0)});
    return {x.grad(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor checkpoint(const Segment& segment, const torch::Tensor& x) {
  if (!torch::GradMode::is_enabled() || !x.requires_grad()) return segment(x);
  return CheckpointFunction::apply(x, reinterpret_cast<int64_t>(&segment));
}

}  // namespace tunebench::models

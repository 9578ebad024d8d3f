#include "models/checkpoint.h"

namespace tunebench::models {

namespace {

namespace ag = torch::autograd;

struct CheckpointFunction : ag::Function<CheckpointFunction> {
  // `segment` is the address of a Segment owned by the model (an IValue cannot hold a
  // std::function); the model outlives every graph its steps build.
  static torch::Tensor forward(ag::AutogradContext* ctx, const torch::Tensor& x, int64_t segment) {
    ctx->save_for_backward({x});
    ctx->saved_data["segment"] = segment;
    torch::NoGradGuard no_grad;
    return (*reinterpret_cast<const Segment*>(segment))(x);
  }

  static ag::tensor_list backward(ag::AutogradContext* ctx, ag::tensor_list grad_output) {
    const auto& segment = *reinterpret_cast<const Segment*>(ctx->saved_data["segment"].toInt());
    torch::Tensor x = ctx->get_saved_variables().at(0).detach().requires_grad_(true);
    torch::Tensor y;
    {
      torch::AutoGradMode grad(true);
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

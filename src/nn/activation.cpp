// Fused activations: the kernels/ functors applied after a layer's op.
#include "scaletrain/nn/activation.hpp"

#include "scaletrain/kernels/activation.hpp"
#include "scaletrain/kernels/launch.hpp"

namespace scaletrain::nn {

Activation parse_activation(const std::string& name) {
  if (name.empty() || name == "none" || name == "linear") return Activation::none;
  if (name == "relu") return Activation::relu;
  if (name == "selu") return Activation::selu;
  ST_FAIL("unknown activation '", name, "' (expected none, relu or selu)");
}

std::string activation_name(Activation a) {
  switch (a) {
    case Activation::none: return "none";
    case Activation::relu: return "relu";
    case Activation::selu: return "selu";
  }
  return "?";
}

void FusedActivation::build(const Shape& shape) {
  pre_ = Tensor(shape);
  if (act_ != Activation::none) {
    post_ = Tensor(shape);
    dpre_ = Tensor(shape);
  }
}

const Tensor& FusedActivation::forward() {
  const int64_t n = pre_.numel();
  switch (act_) {
    case Activation::none: return pre_;
    case Activation::relu:
      kernels::launch_host("relu_forward", n, kernels::ReluForward{pre_.data<float>(), post_.data<float>()});
      return post_;
    case Activation::selu:
      kernels::launch_host("selu_forward", n, kernels::SeluForward{pre_.data<float>(), post_.data<float>()});
      return post_;
  }
  return pre_;
}

const Tensor& FusedActivation::backward(const Tensor& dy) {
  const int64_t n = pre_.numel();
  switch (act_) {
    case Activation::none: return dy;
    case Activation::relu:
      kernels::launch_host("relu_backward", n,
                           kernels::ReluBackward{pre_.data<float>(), dy.data<float>(), dpre_.data<float>()});
      return dpre_;
    case Activation::selu:
      kernels::launch_host("selu_backward", n,
                           kernels::SeluBackward{pre_.data<float>(), dy.data<float>(), dpre_.data<float>()});
      return dpre_;
  }
  return dy;
}

}  // namespace scaletrain::nn

// Fused activations: the kernels/ functors applied after a layer's op.
#include "scaletrain/nn/activation.hpp"

#include "scaletrain/kernels/activation.hpp"
#include "scaletrain/backend/launch.hpp"

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

void FusedActivation::build(Backend& backend, const Shape& shape, const std::string& layer) {
  stream_ = &backend.compute_stream();
  pre_ = backend.empty(shape, DType::f32, layer + ".pre");
  if (act_ != Activation::none) {
    post_ = backend.empty(shape, DType::f32, layer + ".post");
    dpre_ = backend.empty(shape, DType::f32, layer + ".dpre");
  }
}

const Tensor& FusedActivation::forward() {
  const int64_t n = pre_.numel();
  switch (act_) {
    case Activation::none: return pre_;
    case Activation::relu:
      launch(*stream_, "relu_forward", n, kernels::ReluForward{pre_.device_data<float>(), post_.device_data<float>()});
      return post_;
    case Activation::selu:
      launch(*stream_, "selu_forward", n, kernels::SeluForward{pre_.device_data<float>(), post_.device_data<float>()});
      return post_;
  }
  return pre_;
}

const Tensor& FusedActivation::backward(const Tensor& dy) {
  const int64_t n = pre_.numel();
  switch (act_) {
    case Activation::none: return dy;
    case Activation::relu:
      launch(*stream_, "relu_backward", n,
             kernels::ReluBackward{pre_.device_data<float>(), dy.device_data<float>(), dpre_.device_data<float>()});
      return dpre_;
    case Activation::selu:
      launch(*stream_, "selu_backward", n,
             kernels::SeluBackward{pre_.device_data<float>(), dy.device_data<float>(), dpre_.device_data<float>()});
      return dpre_;
  }
  return dy;
}

}  // namespace scaletrain::nn

// Fused activations: the kernels/ functors applied after a layer's op, in the layer's compute type.
#include "scaletrain/nn/activation.hpp"

#include "scaletrain/kernels/activation.hpp"
#include "scaletrain/backend/launch.hpp"
#include "scaletrain/core/dispatch.hpp"

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

void FusedActivation::build(Backend& backend, const Shape& shape, const std::string& layer, DType dtype) {
  stream_ = &backend.compute_stream();
  pre_ = backend.empty(shape, dtype, layer + ".pre");
  if (act_ != Activation::none) {
    post_ = backend.empty(shape, dtype, layer + ".post");
    dpre_ = backend.empty(shape, dtype, layer + ".dpre");
  }
}

const Tensor& FusedActivation::forward() {
  const int64_t n = pre_.numel();
  if (act_ == Activation::none) return pre_;
  visit_float_type(pre_.dtype(), [&](auto t) {
    using T = decltype(t);
    if (act_ == Activation::relu)
      launch(*stream_, "relu_forward", n, kernels::ReluForward<T>{pre_.device_data<T>(), post_.device_data<T>()});
    else
      launch(*stream_, "selu_forward", n, kernels::SeluForward<T>{pre_.device_data<T>(), post_.device_data<T>()});
  });
  return post_;
}

const Tensor& FusedActivation::backward(const Tensor& dy) {
  const int64_t n = pre_.numel();
  if (act_ == Activation::none) return dy;
  visit_float_type(pre_.dtype(), [&](auto t) {
    using T = decltype(t);
    if (act_ == Activation::relu)
      launch(*stream_, "relu_backward", n,
             kernels::ReluBackward<T>{pre_.device_data<T>(), dy.device_data<T>(), dpre_.device_data<T>()});
    else
      launch(*stream_, "selu_backward", n,
             kernels::SeluBackward<T>{pre_.device_data<T>(), dy.device_data<T>(), dpre_.device_data<T>()});
  });
  return dpre_;
}

}  // namespace scaletrain::nn

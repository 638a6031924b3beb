// Fused activations: the backend's activation kernels applied after a layer's op, in the layer's compute type.
#include "scaletrain/nn/activation.hpp"

namespace scaletrain::nn {

Activation parse_activation(const std::string& name) {
  if (name.empty() || name == "none" || name == "linear") return Activation::none;
  if (name == "relu") return Activation::relu;
  if (name == "relu6") return Activation::relu6;
  if (name == "selu") return Activation::selu;
  if (name == "gelu") return Activation::gelu;
  ST_FAIL("unknown activation '", name, "' (expected none, relu, relu6, selu or gelu)");
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
  if (act_ == Activation::none) return pre_;
  launch_activation_forward(*stream_, act_, pre_.dtype(), pre_.device_raw(), post_.device_raw(), pre_.numel());
  return post_;
}

const Tensor& FusedActivation::backward(const Tensor& dy) {
  if (act_ == Activation::none) return dy;
  launch_activation_backward(*stream_, act_, pre_.dtype(), pre_.device_raw(), dy.device_raw(), dpre_.device_raw(),
                             pre_.numel());
  return dpre_;
}

}  // namespace scaletrain::nn

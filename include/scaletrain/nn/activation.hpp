// Activations a layer can fuse after its bias (Keras' `activation=` argument): none, relu, relu6, selu, gelu.
// FusedActivation keeps the pre-activation values that the backward pass needs.
#pragma once
#include <string>

#include "scaletrain/backend/activation.hpp"
#include "scaletrain/backend/backend.hpp"
#include "scaletrain/core/tensor.hpp"

namespace scaletrain::nn {

using scaletrain::Activation;
using scaletrain::activation_name;
Activation parse_activation(const std::string& name);

class FusedActivation {
 public:
  explicit FusedActivation(Activation a = Activation::none) : act_(a) {}
  Activation kind() const { return act_; }
  // Allocates the pre-activation buffer, and the post-activation and gradient buffers (not for
  // none), in `dtype` on the backend, named after the layer; work goes to its compute stream.
  void build(Backend& backend, const Shape& shape, const std::string& layer, DType dtype = DType::f32);
  // The tensor the layer's op writes its pre-activation output into.
  Tensor& pre() { return pre_; }
  // The layer's output (pre() itself for none), and the pre-activation gradient's buffer (empty for
  // none): for ops that apply the activation themselves (ActivatedConvOp, SeparableConvOp).
  Tensor& post() { return act_ == Activation::none ? pre_ : post_; }
  Tensor& dpre() { return dpre_; }
  // Applies the activation to pre() and returns the layer's output.
  const Tensor& forward();
  // Turns dy (gradient of the output) into the gradient of pre(); returns dy itself for none.
  const Tensor& backward(const Tensor& dy);

 private:
  Activation act_;
  Stream* stream_ = nullptr;
  Tensor pre_, post_, dpre_;
};

}  // namespace scaletrain::nn

// Dense forward/backward as the backend's matmuls (nn/linear_products.hpp), over every row of the last
// dimension (a sample of [T, C] tokens is T rows).
#include "scaletrain/nn/dense.hpp"

namespace scaletrain::nn {

Dense::Dense(std::string name, int64_t units, Activation act, bool bias, std::optional<Init> init)
    : Layer(std::move(name)), units_(units), bias_(bias), init_(init), act_(act) {}

Shape Dense::configure(const Shape& in) {
  if (in.empty()) shape_error("expects [..., features] input per sample, got a scalar");
  if (units_ <= 0) shape_error("units must be positive");
  const int64_t features = in.back();
  rows_ = shape_numel(in) / features;
  features_ = features;
  in_shape_ = in;
  out_shape_ = in;
  out_shape_.back() = units_;
  params_.clear();
  const Init winit = init_.value_or(act_.kind() == Activation::selu ? Init::lecun_normal : Init::glorot_uniform);
  declare("weight", {units_, features}, winit, features, units_);
  if (bias_ && init_ == Init::pytorch_default) {
    declare("bias", {units_}, *init_, features, units_);
  } else if (bias_) {
    declare("bias", {units_}, Init::zeros, 0, 0);
  }
  return out_shape_;
}

void Dense::build(Backend& backend, int64_t batch) {
  products_.build(backend, batch * rows_, features_, units_, bias_, dtype_);
  act_.build(backend, with_batch(batch, out_shape_), name_, dtype_);
  dx_ = buffer(with_batch(batch, in_shape_), "dx");
}

const Tensor& Dense::forward(const Tensor& x, bool training) {
  x_ = x;
  products_.forward(x.device_raw(), params_[0].compute_value.device_raw(),
                    bias_ ? params_[1].value.device_data<float>() : nullptr, act_.pre().device_raw());
  return act_.forward();
}

const Tensor& Dense::backward(const Tensor& dy, bool need_dx) {
  const Tensor& dz = act_.backward(dy);
  products_.backward_weights(x_.device_raw(), dz.device_raw(), params_[0].grad.device_data<float>(),
                             bias_ ? params_[1].grad.device_data<float>() : nullptr);
  if (!need_dx) return no_gradient();
  products_.backward_data(dz.device_raw(), params_[0].compute_value.device_raw(), dx_.device_raw());
  return dx_;
}

}  // namespace scaletrain::nn

// ReLU, ReLU6, SELU and Dropout layers on top of the kernels/ functors.
#include "scaletrain/nn/elementwise_layers.hpp"

#include <vector>

#include "scaletrain/backend/launch.hpp"
#include "scaletrain/core/dispatch.hpp"
#include "scaletrain/kernels/dropout.hpp"

namespace scaletrain::nn {

std::string ActivationLayer::type() const {
  switch (act_) {
    case Activation::relu:
      return "ReLU";
    case Activation::relu6:
      return "ReLU6";
    case Activation::selu:
      return "SELU";
    case Activation::gelu:
      return "GELU";
    case Activation::none:
      break;
  }
  return "Identity";
}

Shape ActivationLayer::configure(const Shape& in) {
  if (act_ == Activation::none) shape_error("an activation layer needs an activation (relu, relu6, selu or gelu)");
  in_shape_ = out_shape_ = in;
  return out_shape_;
}

void ActivationLayer::build(Backend& backend, int64_t batch) {
  absorbed_ = false;  // until Model::build fuses again
  y_ = buffer(with_batch(batch, in_shape_), "y");
  dx_ = buffer(y_.shape(), "dx");
}

// The activation reads x where it lies (its producer keeps it until backward) and writes y.
const Tensor& ActivationLayer::forward(const Tensor& x, bool training) {
  if (absorbed_) return x;
  x_ = x;
  launch_activation_forward(stream(), act_, dtype_, x.device_raw(), y_.device_raw(), y_.numel());
  return y_;
}

const Tensor& ActivationLayer::backward(const Tensor& dy, bool need_dx) {
  if (!need_dx) return no_gradient();
  if (absorbed_) return dy;
  launch_activation_backward(stream(), act_, dtype_, x_.device_raw(), dy.device_raw(), dx_.device_raw(), dx_.numel());
  return dx_;
}

Dropout::Dropout(std::string name, float rate) : Layer(std::move(name)), rate_(rate) {}

Shape Dropout::configure(const Shape& in) {
  if (!(rate_ >= 0.0f && rate_ < 1.0f)) shape_error("rate must be in [0, 1), got " + std::to_string(rate_));
  in_shape_ = out_shape_ = in;
  return out_shape_;
}

void Dropout::build(Backend& backend, int64_t batch) {
  y_ = buffer(with_batch(batch, in_shape_), "y");
  mask_ = buffer(y_.shape(), "mask", DType::u8);
  dx_ = buffer(y_.shape(), "dx");
  keys_.build(backend, stream(), batch, name_);
}

void Dropout::set_random_state(uint64_t seed, const double* step, const Tensor& sample_index) {
  keys_.set(seed, step, sample_index);
}

const Tensor& Dropout::forward(const Tensor& x, bool training) {
  last_training_ = training && rate_ > 0.0f;
  if (!last_training_) return x;
  ST_CHECK(keys_.sample_index().numel() == y_.dim(0), "layer '", name_, "': ", keys_.sample_index().numel(),
           " sample indices for a batch of ", y_.dim(0));
  visit_float_type(dtype_, [&](auto t) {
    using T = decltype(t);
    launch(stream(), "dropout_forward", x.numel(),
           kernels::DropoutForward<T>{x.device_data<T>(), y_.device_data<T>(), mask_.device_data<uint8_t>(), rate_,
                                      keys_.seed(), keys_.step(), keys_.sample_index().device_data<int64_t>(),
                                      x.numel() / y_.dim(0)});
  });
  return y_;
}

const Tensor& Dropout::backward(const Tensor& dy, bool need_dx) {
  if (!need_dx) return no_gradient();
  if (!last_training_) return dy;
  visit_float_type(dtype_, [&](auto t) {
    using T = decltype(t);
    launch(stream(), "dropout_backward", dy.numel(),
           kernels::DropoutBackward<T>{dy.device_data<T>(), mask_.device_data<uint8_t>(), dx_.device_data<T>(),
                                       1.0f / (1.0f - rate_)});
  });
  return dx_;
}

}  // namespace scaletrain::nn

// ReLU, SELU and Dropout layers on top of the kernels/ functors.
#include "scaletrain/nn/elementwise_layers.hpp"

#include <cstring>

#include "scaletrain/kernels/dropout.hpp"
#include "scaletrain/kernels/launch.hpp"

namespace scaletrain::nn {
namespace {
Shape with_batch(int64_t batch, const Shape& s) {
  Shape r{batch};
  r.insert(r.end(), s.begin(), s.end());
  return r;
}
}  // namespace

Shape ActivationLayer::configure(const Shape& in) {
  in_shape_ = out_shape_ = in;
  return out_shape_;
}

void ActivationLayer::build(Backend& backend, int64_t batch) { act_.build(with_batch(batch, in_shape_)); }

const Tensor& ActivationLayer::forward(const Tensor& x, bool training) {
  std::memcpy(act_.pre().raw(), x.raw(), x.bytes());
  return act_.forward();
}

const Tensor& ActivationLayer::backward(const Tensor& dy, bool need_dx) {
  if (!need_dx) return no_gradient();
  return act_.backward(dy);
}

Dropout::Dropout(std::string name, float rate) : Layer(std::move(name)), rate_(rate) {}

Shape Dropout::configure(const Shape& in) {
  if (!(rate_ >= 0.0f && rate_ < 1.0f)) shape_error("rate must be in [0, 1), got " + std::to_string(rate_));
  in_shape_ = out_shape_ = in;
  return out_shape_;
}

void Dropout::build(Backend& backend, int64_t batch) {
  y_ = Tensor(with_batch(batch, in_shape_));
  mask_ = Tensor(y_.shape(), DType::u8);
  dx_ = Tensor(y_.shape());
}

const Tensor& Dropout::forward(const Tensor& x, bool training) {
  last_training_ = training && rate_ > 0.0f;
  if (!last_training_) return x;
  kernels::launch_host("dropout_forward", x.numel(),
                       kernels::DropoutForward{x.data<float>(), y_.data<float>(), mask_.data<uint8_t>(), rate_, seed_,
                                               step_});
  return y_;
}

const Tensor& Dropout::backward(const Tensor& dy, bool need_dx) {
  if (!need_dx) return no_gradient();
  if (!last_training_) return dy;
  kernels::launch_host("dropout_backward", dy.numel(),
                       kernels::DropoutBackward{dy.data<float>(), mask_.data<uint8_t>(), dx_.data<float>(),
                                                1.0f / (1.0f - rate_)});
  return dx_;
}

}  // namespace scaletrain::nn

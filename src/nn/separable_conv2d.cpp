// SeparableConv2D: depthwise then pointwise convolution, both through the backend's ConvOp.
#include "scaletrain/nn/separable_conv2d.hpp"

namespace scaletrain::nn {

SeparableConv2D::SeparableConv2D(std::string name, int64_t filters, int64_t kernel, int64_t stride, Padding padding,
                                 Activation act)
    : Layer(std::move(name)), filters_(filters), kernel_(kernel), stride_(stride), padding_(padding), act_(act) {}

Shape SeparableConv2D::configure(const Shape& in) {
  if (in.size() != 3) shape_error("expects [H, W, C] input per sample, got " + shape_string(in));
  if (filters_ <= 0 || kernel_ <= 0 || stride_ <= 0) shape_error("filters, kernel and stride must be positive");
  const int64_t h = in[0], w = in[1], c = in[2];
  const Pad2D pad = compute_padding(padding_, h, w, kernel_, kernel_, stride_, stride_);
  if (h + pad.top + pad.bottom < kernel_ || w + pad.left + pad.right < kernel_)
    shape_error("kernel " + std::to_string(kernel_) + " is larger than the input " + shape_string(in));
  depthwise_ = ConvShape{};
  depthwise_.in_h = h;
  depthwise_.in_w = w;
  depthwise_.in_c = c;
  depthwise_.out_c = c;
  depthwise_.kernel_h = depthwise_.kernel_w = kernel_;
  depthwise_.stride_h = depthwise_.stride_w = stride_;
  depthwise_.pad_top = pad.top;
  depthwise_.pad_left = pad.left;
  depthwise_.pad_bottom = pad.bottom;
  depthwise_.pad_right = pad.right;
  depthwise_.groups = c;
  depthwise_.bias = false;
  pointwise_ = ConvShape{};
  pointwise_.in_h = depthwise_.out_h();
  pointwise_.in_w = depthwise_.out_w();
  pointwise_.in_c = c;
  pointwise_.out_c = filters_;
  pointwise_.kernel_h = pointwise_.kernel_w = 1;
  pointwise_.bias = true;
  in_shape_ = in;
  out_shape_ = {pointwise_.in_h, pointwise_.in_w, filters_};
  params_.clear();
  const Init winit = act_.kind() == Activation::selu ? Init::lecun_normal : Init::glorot_uniform;
  declare("depthwise_weight", {c, 1, kernel_, kernel_}, winit, kernel_ * kernel_, kernel_ * kernel_);
  declare("pointwise_weight", {filters_, c, 1, 1}, winit, c, filters_);
  declare("bias", {filters_}, Init::zeros, 0, 0);
  return out_shape_;
}

void SeparableConv2D::build(Backend& backend, int64_t batch) {
  depthwise_.batch = pointwise_.batch = batch;
  depthwise_.dtype = pointwise_.dtype = dtype_;
  depthwise_op_ = backend.make_conv(depthwise_);
  pointwise_op_ = backend.make_conv(pointwise_);
  mid_ = buffer({batch, pointwise_.in_h, pointwise_.in_w, pointwise_.in_c}, "mid");
  dmid_ = buffer(mid_.shape(), "dmid");
  dx_ = buffer({batch, in_shape_[0], in_shape_[1], in_shape_[2]}, "dx");
  act_.build(backend, {batch, out_shape_[0], out_shape_[1], out_shape_[2]}, name_, dtype_);
}

const Tensor& SeparableConv2D::forward(const Tensor& x, bool training) {
  x_ = x;
  depthwise_op_->forward(x.device_raw(), params_[0].compute_value.device_raw(), nullptr, mid_.device_raw());
  pointwise_op_->forward(mid_.device_raw(), params_[1].compute_value.device_raw(), params_[2].value.device_data<float>(),
                         act_.pre().device_raw());
  return act_.forward();
}

const Tensor& SeparableConv2D::backward(const Tensor& dy, bool need_dx) {
  const Tensor& dz = act_.backward(dy);
  pointwise_op_->backward_weights(mid_.device_raw(), dz.device_raw(), params_[1].grad.device_data<float>(),
                                  params_[2].grad.device_data<float>());
  pointwise_op_->backward_data(dz.device_raw(), params_[1].compute_value.device_raw(), dmid_.device_raw());
  depthwise_op_->backward_weights(x_.device_raw(), dmid_.device_raw(), params_[0].grad.device_data<float>(), nullptr);
  if (!need_dx) return no_gradient();
  depthwise_op_->backward_data(dmid_.device_raw(), params_[0].compute_value.device_raw(), dx_.device_raw());
  return dx_;
}

int64_t SeparableConv2D::flops_per_sample() const {
  const int64_t hw = pointwise_.in_h * pointwise_.in_w;
  return 2 * hw * depthwise_.in_c * kernel_ * kernel_ + 2 * hw * depthwise_.in_c * filters_;
}

}  // namespace scaletrain::nn

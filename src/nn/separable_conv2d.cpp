// SeparableConv2D: depthwise then pointwise convolution and the activation, through the backend's
// SeparableConvOp.
#include "scaletrain/nn/separable_conv2d.hpp"

namespace scaletrain::nn {

SeparableConv2D::SeparableConv2D(std::string name, int64_t filters, int64_t kernel, int64_t stride, Padding padding,
                                 Activation act)
    : Layer(std::move(name)), filters_(filters), kernel_(kernel), stride_(stride), padding_(padding), act_(act) {}

Shape SeparableConv2D::configure(const Shape& in) {
  if (in.size() != 3) shape_error("expects [H, W, C] input per sample, got " + shape_string(in));
  if (filters_ <= 0 || kernel_ <= 0 || stride_ <= 0) shape_error("filters, kernel and stride must be positive");
  if (act_.kind() == Activation::gelu) shape_error("takes no fused GELU (add a GELU layer after it)");
  const int64_t h = in[0], w = in[1], c = in[2];
  const Pad2D pad = compute_padding(padding_, h, w, kernel_, kernel_, stride_, stride_);
  if (h + pad.top + pad.bottom < kernel_ || w + pad.left + pad.right < kernel_)
    shape_error("kernel " + std::to_string(kernel_) + " is larger than the input " + shape_string(in));
  ConvShape& dw = shape_.depthwise;
  ConvShape& pw = shape_.pointwise;
  dw = ConvShape{};
  dw.in_h = h;
  dw.in_w = w;
  dw.in_c = c;
  dw.out_c = c;
  dw.kernel_h = dw.kernel_w = kernel_;
  dw.stride_h = dw.stride_w = stride_;
  dw.pad_top = pad.top;
  dw.pad_left = pad.left;
  dw.pad_bottom = pad.bottom;
  dw.pad_right = pad.right;
  dw.groups = c;
  dw.bias = false;
  pw = ConvShape{};
  pw.in_h = dw.out_h();
  pw.in_w = dw.out_w();
  pw.in_c = c;
  pw.out_c = filters_;
  pw.kernel_h = pw.kernel_w = 1;
  pw.bias = true;
  shape_.activation = act_.kind();
  in_shape_ = in;
  out_shape_ = {pw.in_h, pw.in_w, filters_};
  params_.clear();
  const Init winit = act_.kind() == Activation::selu ? Init::lecun_normal : Init::glorot_uniform;
  declare("depthwise_weight", {c, 1, kernel_, kernel_}, winit, kernel_ * kernel_, kernel_ * kernel_);
  declare("pointwise_weight", {filters_, c, 1, 1}, winit, c, filters_);
  declare("bias", {filters_}, Init::zeros, 0, 0);
  return out_shape_;
}

void SeparableConv2D::build(Backend& backend, int64_t batch) {
  shape_.depthwise.batch = shape_.pointwise.batch = batch;
  shape_.depthwise.dtype = shape_.pointwise.dtype = dtype_;
  op_ = backend.make_separable_conv(shape_);
  mid_ = buffer({batch, shape_.pointwise.in_h, shape_.pointwise.in_w, shape_.pointwise.in_c}, "mid");
  dmid_ = buffer(mid_.shape(), "dmid");
  dx_ = buffer({batch, in_shape_[0], in_shape_[1], in_shape_[2]}, "dx");
  act_.build(backend, {batch, out_shape_[0], out_shape_[1], out_shape_[2]}, name_, dtype_);
}

const Tensor& SeparableConv2D::forward(const Tensor& x, bool training) {
  x_ = x;
  op_->forward(x.device_raw(), params_[0].compute_value.device_raw(), params_[1].compute_value.device_raw(),
               params_[2].value.device_data<float>(), mid_.device_raw(), act_.pre().device_raw(),
               act_.post().device_raw());
  return act_.post();
}

const Tensor& SeparableConv2D::backward(const Tensor& dy, bool need_dx) {
  op_->backward(x_.device_raw(), mid_.device_raw(), act_.pre().device_raw(), act_.post().device_raw(),
                dy.device_raw(), params_[0].compute_value.device_raw(), params_[1].compute_value.device_raw(),
                act_.dpre().device_raw(), dmid_.device_raw(), params_[0].grad.device_data<float>(),
                params_[1].grad.device_data<float>(), params_[2].grad.device_data<float>(),
                need_dx ? dx_.device_raw() : nullptr);
  return need_dx ? dx_ : no_gradient();
}

bool SeparableConv2D::absorb_pool(Pool2D& next) {
  return next.run_inside(op_.get());
}

int64_t SeparableConv2D::flops_per_sample() const {
  const int64_t hw = shape_.pointwise.in_h * shape_.pointwise.in_w;
  return 2 * hw * shape_.depthwise.in_c * kernel_ * kernel_ + 2 * hw * shape_.depthwise.in_c * filters_;
}

}  // namespace scaletrain::nn

// Conv2D and DepthwiseConv2D forward/backward through the backend's ActivatedConvOp (the convolution
// and the layer's activation).
#include "scaletrain/nn/conv2d.hpp"

namespace scaletrain::nn {

Conv2D::Conv2D(std::string name, Conv2DOptions o) : Layer(std::move(name)), opt_(o), act_(o.activation) {}

Conv2D::Conv2D(std::string name, Conv2DOptions o, Init weight_init) : Conv2D(std::move(name), o) {
  weight_init_ = weight_init;
}

Shape Conv2D::configure(const Shape& in) {
  if (in.size() != 3) shape_error("expects [H, W, C] input per sample, got " + shape_string(in));
  if (opt_.filters <= 0 || opt_.kernel <= 0 || opt_.stride <= 0 || opt_.groups <= 0)
    shape_error("filters, kernel, stride and groups must be positive");
  const int64_t h = in[0], w = in[1], c = in[2];
  if (c % opt_.groups != 0 || opt_.filters % opt_.groups != 0)
    shape_error("channels " + std::to_string(c) + " and filters " + std::to_string(opt_.filters) +
                " must be divisible by groups " + std::to_string(opt_.groups));
  const Pad2D pad = compute_padding(opt_.padding, h, w, opt_.kernel, opt_.kernel, opt_.stride, opt_.stride);
  conv_ = ConvShape{};
  conv_.in_h = h;
  conv_.in_w = w;
  conv_.in_c = c;
  conv_.out_c = opt_.filters;
  conv_.kernel_h = conv_.kernel_w = opt_.kernel;
  conv_.stride_h = conv_.stride_w = opt_.stride;
  conv_.pad_top = pad.top;
  conv_.pad_left = pad.left;
  conv_.pad_bottom = pad.bottom;
  conv_.pad_right = pad.right;
  conv_.groups = opt_.groups;
  conv_.bias = opt_.bias;
  if (h + pad.top + pad.bottom < opt_.kernel || w + pad.left + pad.right < opt_.kernel)
    shape_error("kernel " + std::to_string(opt_.kernel) + " is larger than the input " + shape_string(in));
  in_shape_ = in;
  out_shape_ = {conv_.out_h(), conv_.out_w(), conv_.out_c};
  params_.clear();
  const int64_t k2 = opt_.kernel * opt_.kernel;
  const Init winit =
      weight_init_.value_or(opt_.activation == Activation::selu ? Init::lecun_normal : Init::glorot_uniform);
  declare("weight", {opt_.filters, c / opt_.groups, opt_.kernel, opt_.kernel}, winit, k2 * c / opt_.groups,
          k2 * opt_.filters / opt_.groups);
  if (opt_.bias) declare("bias", {opt_.filters}, Init::zeros, 0, 0);
  return out_shape_;
}

void Conv2D::build(Backend& backend, int64_t batch) {
  conv_.batch = batch;
  conv_.dtype = dtype_;
  op_ = backend.make_activated_conv(conv_, act_.kind());
  Shape out{batch};
  out.insert(out.end(), out_shape_.begin(), out_shape_.end());
  act_.build(backend, out, name_, dtype_);
  Shape in{batch};
  in.insert(in.end(), in_shape_.begin(), in_shape_.end());
  dx_ = buffer(in, "dx");
}

const Tensor& Conv2D::forward(const Tensor& x, bool training) {
  x_ = x;
  op_->forward(x.device_raw(), params_[0].compute_value.device_raw(),
               opt_.bias ? params_[1].value.device_data<float>() : nullptr, act_.pre().device_raw(),
               act_.post().device_raw());
  return act_.post();
}

const Tensor& Conv2D::backward(const Tensor& dy, bool need_dx) {
  op_->backward(x_.device_raw(), act_.pre().device_raw(), act_.post().device_raw(), dy.device_raw(),
                params_[0].compute_value.device_raw(), act_.dpre().device_raw(), params_[0].grad.device_data<float>(),
                opt_.bias ? params_[1].grad.device_data<float>() : nullptr, need_dx ? dx_.device_raw() : nullptr);
  return need_dx ? dx_ : no_gradient();
}

bool Conv2D::absorb_pool(Pool2D& next) {
  return next.run_inside(op_.get());
}

int64_t Conv2D::flops_per_sample() const {
  return 2 * out_shape_[0] * out_shape_[1] * conv_.out_c * (conv_.in_c / conv_.groups) * conv_.kernel_h * conv_.kernel_w;
}

DepthwiseConv2D::DepthwiseConv2D(std::string name, int64_t kernel, int64_t stride, Padding padding, bool bias,
                                 Activation act)
    : Conv2D(std::move(name), Conv2DOptions{1, kernel, stride, padding, 1, bias, act}) {}

Shape DepthwiseConv2D::configure(const Shape& in) {
  if (in.size() != 3) shape_error("expects [H, W, C] input per sample, got " + shape_string(in));
  opt_.filters = in[2];
  opt_.groups = in[2];
  return Conv2D::configure(in);
}

}  // namespace scaletrain::nn

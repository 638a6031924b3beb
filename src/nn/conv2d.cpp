// Conv2D and DepthwiseConv2D forward/backward through the backend's ActivatedConvOp (the convolution
// and the layer's activation), and the evaluation forward with a BatchNorm2d folded in.
#include "scaletrain/nn/conv2d.hpp"

#include "scaletrain/backend/launch.hpp"
#include "scaletrain/core/dispatch.hpp"
#include "scaletrain/kernels/batch_norm.hpp"

namespace scaletrain::nn {

Conv2D::Conv2D(std::string name, Conv2DOptions o) : Layer(std::move(name)), opt_(o), act_(o.activation) {}

Conv2D::Conv2D(std::string name, Conv2DOptions o, Init weight_init) : Conv2D(std::move(name), o) {
  weight_init_ = weight_init;
}

Shape Conv2D::configure(const Shape& in) {
  if (in.size() != 3) shape_error("expects [H, W, C] input per sample, got " + shape_string(in));
  const KernelSize k = opt_.kernel;
  if (opt_.filters <= 0 || k.h <= 0 || k.w <= 0 || opt_.stride <= 0 || opt_.groups <= 0)
    shape_error("filters, kernel, stride and groups must be positive");
  if (opt_.activation == Activation::gelu) shape_error("takes no fused GELU (add a GELU layer after it)");
  const int64_t h = in[0], w = in[1], c = in[2];
  if (c % opt_.groups != 0 || opt_.filters % opt_.groups != 0)
    shape_error("channels " + std::to_string(c) + " and filters " + std::to_string(opt_.filters) +
                " must be divisible by groups " + std::to_string(opt_.groups));
  const Pad2D pad = compute_padding(opt_.padding, h, w, k.h, k.w, opt_.stride, opt_.stride);
  conv_ = ConvShape{};
  conv_.in_h = h;
  conv_.in_w = w;
  conv_.in_c = c;
  conv_.out_c = opt_.filters;
  conv_.kernel_h = k.h;
  conv_.kernel_w = k.w;
  conv_.stride_h = conv_.stride_w = opt_.stride;
  conv_.pad_top = pad.top;
  conv_.pad_left = pad.left;
  conv_.pad_bottom = pad.bottom;
  conv_.pad_right = pad.right;
  conv_.groups = opt_.groups;
  conv_.bias = opt_.bias;
  if (h + pad.top + pad.bottom < k.h || w + pad.left + pad.right < k.w)
    shape_error("kernel " + k.to_string() + " is larger than the input " + shape_string(in));
  in_shape_ = in;
  out_shape_ = {conv_.out_h(), conv_.out_w(), conv_.out_c};
  params_.clear();
  const int64_t taps = k.h * k.w;
  const Init winit =
      weight_init_.value_or(opt_.activation == Activation::selu ? Init::lecun_normal : Init::glorot_uniform);
  declare("weight", {opt_.filters, c / opt_.groups, k.h, k.w}, winit, taps * c / opt_.groups,
          taps * opt_.filters / opt_.groups);
  if (opt_.bias) declare("bias", {opt_.filters}, Init::zeros, 0, 0);
  return out_shape_;
}

void Conv2D::build(Backend& backend, int64_t batch) {
  conv_.batch = batch;
  conv_.dtype = dtype_;
  op_ = backend.make_activated_conv(conv_, act_.kind());
  // The filters in the op's own layout, written by the Model once per update (no reorder per call).
  params_[0].op_layout = op_->filter_layout();
  op_->take_filters_in(params_[0].op_layout);
  Shape out{batch};
  out.insert(out.end(), out_shape_.begin(), out_shape_.end());
  act_.build(backend, out, name_, dtype_);
  Shape in{batch};
  in.insert(in.end(), in_shape_.begin(), in_shape_.end());
  dx_ = buffer(in, "dx");
}

const Tensor& Conv2D::forward(const Tensor& x, bool training) {
  x_ = x;
  if (!training && folded_bn_) return forward_folded(x);
  op_->forward(x.device_raw(), params_[0].op_value.device_raw(),
               opt_.bias ? params_[1].value.device_data<float>() : nullptr, act_.pre().device_raw(),
               act_.post().device_raw());
  return act_.post();
}

const Tensor& Conv2D::backward(const Tensor& dy, bool need_dx) {
  op_->backward(x_.device_raw(), act_.pre().device_raw(), act_.post().device_raw(), dy.device_raw(),
                params_[0].op_value.device_raw(), act_.dpre().device_raw(), params_[0].grad.device_data<float>(),
                opt_.bias ? params_[1].grad.device_data<float>() : nullptr, need_dx ? dx_.device_raw() : nullptr);
  return need_dx ? dx_ : no_gradient();
}

bool Conv2D::absorb_pool(Pool2D& next) {
  return next.run_inside(op_.get());
}

bool Conv2D::fold_batch_norm(BatchNorm2d& next) {
  if (act_.kind() != Activation::none || folded_bn_ || next.folded()) return false;
  ConvShape shape = conv_;
  shape.bias = true;
  folded_op_ = backend_->make_activated_conv(shape, next.activation());
  ST_CHECK(folded_op_->filter_layout() == params_[0].op_layout, "layer '", name_, "': its convolution with ",
           next.name(), " folded in computes in other filters than its own");
  folded_op_->take_filters_in(params_[0].op_layout);  // folded from op_value, in its layout
  folded_weight_ = buffer(params_[0].value.shape(), "weight folded with " + next.name());
  folded_bias_ = buffer({conv_.out_c}, "bias folded with " + next.name(), DType::f32);
  if (next.activation() != Activation::none) folded_pre_ = buffer(next.output().shape(), "pre-activation folded");
  folded_bn_ = &next;
  next.fold_into_producer();
  return true;
}

// BatchNorm's evaluation scale and shift, the filters and bias folded with them, then the op writes
// BatchNorm's output (with an activation, through this layer's own pre-activation scratch).
const Tensor& Conv2D::forward_folded(const Tensor& x) {
  const auto [scale, shift] = folded_bn_->evaluation_scale_and_shift();
  const int64_t filter_size = params_[0].value.numel() / conv_.out_c;
  visit_float_type(dtype_, [&](auto t) {
    using T = decltype(t);
    launch(stream(), "bn_fold_into_filters", params_[0].value.numel(),
           kernels::BnFoldIntoFilters<T>{params_[0].op_value.device_data<T>(), scale,
                                         folded_weight_.device_data<T>(), filter_size});
  });
  launch(stream(), "bn_fold_into_bias", conv_.out_c,
         kernels::BnFoldIntoBias{opt_.bias ? params_[1].value.device_data<float>() : nullptr, scale, shift,
                                 folded_bias_.device_data<float>()});
  const Tensor& y = folded_bn_->output();
  void* pre = folded_pre_.numel() > 0 ? folded_pre_.device_raw() : y.device_raw();
  folded_op_->forward(x.device_raw(), folded_weight_.device_raw(), folded_bias_.device_data<float>(), pre,
                      y.device_raw());
  return act_.post();
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

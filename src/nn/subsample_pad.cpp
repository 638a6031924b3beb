// SubsamplePad on top of the kernels/subsample_pad.hpp functors.
#include "scaletrain/nn/subsample_pad.hpp"

#include "scaletrain/backend/launch.hpp"
#include "scaletrain/core/dispatch.hpp"

namespace scaletrain::nn {

SubsamplePad::SubsamplePad(std::string name, int64_t stride, int64_t pad_before, int64_t pad_after)
    : Layer(std::move(name)), stride_(stride), pad_before_(pad_before), pad_after_(pad_after) {}

Shape SubsamplePad::configure(const Shape& in) {
  if (in.size() != 3) shape_error("expects [H, W, C] input per sample, got " + shape_string(in));
  if (stride_ <= 0) shape_error("stride must be positive, got " + std::to_string(stride_));
  if (pad_before_ < 0 || pad_after_ < 0)
    shape_error("channel padding must not be negative, got " + std::to_string(pad_before_) + " and " +
                std::to_string(pad_after_));
  g_ = kernels::SubsamplePadGeometry{};
  g_.in_h = in[0];
  g_.in_w = in[1];
  g_.in_c = in[2];
  g_.out_h = (in[0] + stride_ - 1) / stride_;
  g_.out_w = (in[1] + stride_ - 1) / stride_;
  g_.out_c = pad_before_ + in[2] + pad_after_;
  g_.stride = stride_;
  g_.pad_before = pad_before_;
  in_shape_ = in;
  out_shape_ = {g_.out_h, g_.out_w, g_.out_c};
  return out_shape_;
}

void SubsamplePad::build(Backend& backend, int64_t batch) {
  y_ = buffer(with_batch(batch, out_shape_), "y");
  dx_ = buffer(with_batch(batch, in_shape_), "dx");
}

const Tensor& SubsamplePad::forward(const Tensor& x, bool training) {
  visit_float_type(dtype_, [&](auto t) {
    using T = decltype(t);
    launch(stream(), "subsample_pad_forward", y_.numel() / g_.out_c,
           kernels::SubsamplePadForward<T>{x.device_data<T>(), y_.device_data<T>(), g_});
  });
  return y_;
}

const Tensor& SubsamplePad::backward(const Tensor& dy, bool need_dx) {
  if (!need_dx) return no_gradient();
  visit_float_type(dtype_, [&](auto t) {
    using T = decltype(t);
    launch(stream(), "subsample_pad_backward", dx_.numel() / g_.in_c,
           kernels::SubsamplePadBackward<T>{dy.device_data<T>(), dx_.device_data<T>(), g_});
  });
  return dx_;
}

}  // namespace scaletrain::nn

// Flatten as a zero-copy reshape.
#include "scaletrain/nn/shape_layers.hpp"

namespace scaletrain::nn {

Shape Flatten::configure(const Shape& in) {
  if (in.empty()) shape_error("cannot flatten a scalar input");
  in_shape_ = in;
  out_shape_ = {shape_numel(in)};
  return out_shape_;
}

const Tensor& Flatten::forward(const Tensor& x, bool training) {
  y_ = x.reshape({batch_, out_shape_[0]});
  return y_;
}

const Tensor& Flatten::backward(const Tensor& dy, bool need_dx) {
  if (!need_dx) return no_gradient();
  Shape s{batch_};
  s.insert(s.end(), in_shape_.begin(), in_shape_.end());
  dx_ = dy.reshape(s);
  return dx_;
}

}  // namespace scaletrain::nn

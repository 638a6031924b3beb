// Pooling layers through the backend's PoolOp, and adaptive average pooling through it or the
// kernels/adaptive_pool.hpp functors.
#include "scaletrain/nn/pooling.hpp"

#include <algorithm>

#include "scaletrain/backend/launch.hpp"
#include "scaletrain/core/dispatch.hpp"
#include "scaletrain/kernels/adaptive_pool.hpp"

namespace scaletrain::nn {

Pool2D::Pool2D(std::string name, PoolKind kind, int64_t pool, int64_t stride, Padding padding, bool count_include_pad)
    : Layer(std::move(name)),
      kind_(kind),
      pool_(pool),
      stride_(stride > 0 ? stride : pool),
      padding_(padding),
      count_include_pad_(count_include_pad) {}

Shape Pool2D::configure(const Shape& in) {
  if (in.size() != 3) shape_error("expects [H, W, C] input per sample, got " + shape_string(in));
  if (pool_ <= 0 || stride_ <= 0) shape_error("pool size and stride must be positive");
  // PyTorch's limit: a window then always holds at least one input cell.
  if (std::max(padding_.rows(), padding_.columns()) > pool_ / 2)
    shape_error("padding " + padding_.to_string() + " is more than half the pool size " + std::to_string(pool_) +
                " (at most " + std::to_string(pool_ / 2) + ", as PyTorch)");
  const Pad2D pad = compute_padding(padding_, in[0], in[1], pool_, pool_, stride_, stride_);
  if (in[0] + pad.top + pad.bottom < pool_ || in[1] + pad.left + pad.right < pool_)
    shape_error("pool size " + std::to_string(pool_) + " is larger than the input " + shape_string(in));
  shape_ = PoolShape{};
  shape_.kind = kind_;
  shape_.in_h = in[0];
  shape_.in_w = in[1];
  shape_.channels = in[2];
  shape_.kernel_h = shape_.kernel_w = pool_;
  shape_.stride_h = shape_.stride_w = stride_;
  shape_.pad_top = pad.top;
  shape_.pad_left = pad.left;
  shape_.pad_bottom = pad.bottom;
  shape_.pad_right = pad.right;
  shape_.count_include_pad = count_include_pad_ && kind_ == PoolKind::average;
  in_shape_ = in;
  out_shape_ = {shape_.out_h(), shape_.out_w(), in[2]};
  return out_shape_;
}

void Pool2D::build(Backend& backend, int64_t batch) {
  shape_.batch = batch;
  shape_.dtype = dtype_;
  op_ = backend.make_pool(shape_);
  absorbed_ = false;  // until the layer before takes the new op over again (Model::build)
  y_ = buffer({batch, shape_.out_h(), shape_.out_w(), shape_.channels}, "y");
  dx_ = buffer({batch, in_shape_[0], in_shape_[1], in_shape_[2]}, "dx");
}

const Tensor& Pool2D::forward(const Tensor& x, bool training) {
  if (!absorbed_) op_->forward(x.device_raw(), y_.device_raw(), training);
  return y_;
}

const Tensor& Pool2D::backward(const Tensor& dy, bool need_dx) {
  if (!need_dx) return no_gradient();
  if (absorbed_) return dy;
  op_->backward(dy.device_raw(), dx_.device_raw());
  return dx_;
}

int64_t Pool2D::flops_per_sample() const { return shape_.out_h() * shape_.out_w() * shape_.channels * pool_ * pool_; }

Shape GlobalAvgPool::configure(const Shape& in) {
  if (in.size() != 3) shape_error("expects [H, W, C] input per sample, got " + shape_string(in));
  pool_ = in[0];  // square windows only in Pool2D: use the full extent in each direction
  stride_ = 1;
  Pool2D::configure({in[0], in[0], in[2]});
  shape_.in_w = in[1];
  shape_.kernel_w = in[1];
  in_shape_ = in;
  out_shape_ = {in[2]};
  return out_shape_;
}

void GlobalAvgPool::build(Backend& backend, int64_t batch) {
  Pool2D::build(backend, batch);
  y_ = y_.reshape({batch, shape_.channels});
}

AdaptiveAvgPool2D::AdaptiveAvgPool2D(std::string name, int64_t out_h, int64_t out_w)
    : Layer(std::move(name)), out_h_(out_h), out_w_(out_w) {}

Shape AdaptiveAvgPool2D::configure(const Shape& in) {
  if (in.size() != 3) shape_error("expects [H, W, C] input per sample, got " + shape_string(in));
  if (out_h_ <= 0 || out_w_ <= 0)
    shape_error("output size " + std::to_string(out_h_) + "x" + std::to_string(out_w_) + " must be positive");
  in_shape_ = in;
  out_shape_ = {out_h_, out_w_, in[2]};
  return out_shape_;
}

void AdaptiveAvgPool2D::build(Backend& backend, int64_t batch) {
  op_.reset();
  y_ = buffer(with_batch(batch, out_shape_), "y");
  dx_ = buffer(with_batch(batch, in_shape_), "dx");
  if (identity() || !tiles()) return;
  PoolShape s;
  s.kind = PoolKind::average;
  s.batch = batch;
  s.in_h = in_shape_[0];
  s.in_w = in_shape_[1];
  s.channels = in_shape_[2];
  s.kernel_h = s.stride_h = in_shape_[0] / out_h_;
  s.kernel_w = s.stride_w = in_shape_[1] / out_w_;
  s.dtype = dtype_;
  op_ = backend.make_pool(s);
}

const Tensor& AdaptiveAvgPool2D::forward(const Tensor& x, bool training) {
  if (identity()) return x;
  if (op_) {
    op_->forward(x.device_raw(), y_.device_raw(), training);
    return y_;
  }
  const kernels::AdaptivePoolGeometry g{in_shape_[0], in_shape_[1], in_shape_[2], out_h_, out_w_};
  visit_float_type(dtype_, [&](auto t) {
    using T = decltype(t);
    launch(stream(), "adaptive_avg_pool_forward", y_.numel(),
           kernels::AdaptivePoolForward<T>{x.device_data<T>(), y_.device_data<T>(), g});
  });
  return y_;
}

const Tensor& AdaptiveAvgPool2D::backward(const Tensor& dy, bool need_dx) {
  if (!need_dx) return no_gradient();
  if (identity()) return dy;
  if (op_) {
    op_->backward(dy.device_raw(), dx_.device_raw());
    return dx_;
  }
  const kernels::AdaptivePoolGeometry g{in_shape_[0], in_shape_[1], in_shape_[2], out_h_, out_w_};
  visit_float_type(dtype_, [&](auto t) {
    using T = decltype(t);
    launch(stream(), "adaptive_avg_pool_backward", dx_.numel(),
           kernels::AdaptivePoolBackward<T>{dy.device_data<T>(), dx_.device_data<T>(), g});
  });
  return dx_;
}

int64_t AdaptiveAvgPool2D::flops_per_sample() const {
  if (identity()) return 0;
  // An addition per window cell: the windows' rows summed over the output rows, times the columns'.
  const auto cells = [](int64_t in, int64_t out) {
    int64_t sum = 0;
    for (int64_t o = 0; o < out; ++o) sum += kernels::adaptive_end(o, in, out) - kernels::adaptive_start(o, in, out);
    return sum;
  };
  return cells(in_shape_[0], out_h_) * cells(in_shape_[1], out_w_) * in_shape_[2];
}

std::string AdaptiveAvgPool2D::implementation() const {
  if (identity()) return "identity (the output size is the input's)";
  if (op_) return op_->implementation();
  return "adaptive average pooling kernels";
}

}  // namespace scaletrain::nn

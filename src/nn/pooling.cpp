// Pooling layers through the backend's PoolOp.
#include "scaletrain/nn/pooling.hpp"

namespace scaletrain::nn {

Pool2D::Pool2D(std::string name, PoolKind kind, int64_t pool, int64_t stride, Padding padding)
    : Layer(std::move(name)), kind_(kind), pool_(pool), stride_(stride > 0 ? stride : pool), padding_(padding) {}

Shape Pool2D::configure(const Shape& in) {
  if (in.size() != 3) shape_error("expects [H, W, C] input per sample, got " + shape_string(in));
  if (pool_ <= 0 || stride_ <= 0) shape_error("pool size and stride must be positive");
  // PyTorch's limit: a window then always holds at least one input cell.
  if (padding_.amount() > pool_ / 2)
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

}  // namespace scaletrain::nn

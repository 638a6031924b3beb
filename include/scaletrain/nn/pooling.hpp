// Pooling layers over NHWC: MaxPool2D, AvgPool2D, GlobalAvgPool ([H, W, C] -> [C]) and
// AdaptiveAvgPool2D (torch.nn.AdaptiveAvgPool2d: [H, W, C] -> [OH, OW, C] for any H, W). Padding never
// wins a maximum (PyTorch pads max pooling with -inf). An average leaves padding out of its divisor
// by default (Keras's rule for 'same', and nn.AvgPool2d(padding=p, count_include_pad=False)); with
// count_include_pad it divides by the whole window, padding included (PyTorch's default, which
// Inception-v3 uses). An explicit padding may be at most half the pool size, as in PyTorch.
#pragma once
#include <memory>

#include "scaletrain/nn/layer.hpp"
#include "scaletrain/nn/padding.hpp"

namespace scaletrain::nn {

class Pool2D : public Layer {
 public:
  Pool2D(std::string name, PoolKind kind, int64_t pool, int64_t stride, Padding padding,
         bool count_include_pad = false);
  std::string type() const override { return kind_ == PoolKind::max ? "MaxPooling2D" : "AveragePooling2D"; }
  Shape configure(const Shape& in) override;
  void build(Backend& backend, int64_t batch) override;
  const Tensor& forward(const Tensor& x, bool training) override;
  const Tensor& backward(const Tensor& dy, bool need_dx) override;
  int64_t flops_per_sample() const override;
  std::string implementation() const override {
    if (absorbed_) return "inside the layer before";
    return op_ ? op_->implementation() : std::string();
  }
  // Offers this pooling to `op`, the op of the layer before (SeparableConv2D's, Conv2D's), to run inside
  // (its absorb_pool). Where it takes it, that layer's forward writes this layer's output, this layer's
  // forward only returns it, and its backward hands dy on as is (the layer before takes the pooled
  // gradient). After build. Returns whether it did.
  template <class Op>
  bool run_inside(Op* op) {
    if (!op || !op->absorb_pool(shape_, y_.device_raw())) return false;
    absorbed_ = true;
    return true;
  }
  bool absorbed() const { return absorbed_; }

 protected:
  PoolKind kind_;
  int64_t pool_, stride_;
  Padding padding_;
  bool count_include_pad_ = false;
  PoolShape shape_;
  std::unique_ptr<PoolOp> op_;
  Tensor y_, dx_;
  bool absorbed_ = false;
};

class MaxPool2D : public Pool2D {
 public:
  MaxPool2D(std::string name, int64_t pool = 2, int64_t stride = 0, Padding padding = Padding::valid)
      : Pool2D(std::move(name), PoolKind::max, pool, stride, padding) {}
};

class AvgPool2D : public Pool2D {
 public:
  AvgPool2D(std::string name, int64_t pool = 2, int64_t stride = 0, Padding padding = Padding::valid,
            bool count_include_pad = false)
      : Pool2D(std::move(name), PoolKind::average, pool, stride, padding, count_include_pad) {}
};

// Average over the whole spatial extent; output [C] per sample.
class GlobalAvgPool : public Pool2D {
 public:
  explicit GlobalAvgPool(std::string name) : Pool2D(std::move(name), PoolKind::average, 0, 0, Padding::valid) {}
  std::string type() const override { return "GlobalAveragePooling2D"; }
  Shape configure(const Shape& in) override;
  void build(Backend& backend, int64_t batch) override;
};

// torch.nn.AdaptiveAvgPool2d((out_h, out_w)): windows of kernels/adaptive_pool.hpp. Where they are
// the input cells themselves, the layer hands its input on; where they tile the input evenly (H and
// W multiples of OH and OW), it runs the backend's average pooling; otherwise the adaptive functors.
class AdaptiveAvgPool2D : public Layer {
 public:
  AdaptiveAvgPool2D(std::string name, int64_t out_h, int64_t out_w);
  std::string type() const override { return "AdaptiveAvgPool2D"; }
  Shape configure(const Shape& in) override;
  void build(Backend& backend, int64_t batch) override;
  const Tensor& forward(const Tensor& x, bool training) override;
  const Tensor& backward(const Tensor& dy, bool need_dx) override;
  int64_t flops_per_sample() const override;
  std::string implementation() const override;

 private:
  bool identity() const { return in_shape_[0] == out_h_ && in_shape_[1] == out_w_; }
  bool tiles() const { return in_shape_[0] % out_h_ == 0 && in_shape_[1] % out_w_ == 0; }
  int64_t out_h_, out_w_;
  std::unique_ptr<PoolOp> op_;  // where the windows tile the input
  Tensor y_, dx_;
};

}  // namespace scaletrain::nn

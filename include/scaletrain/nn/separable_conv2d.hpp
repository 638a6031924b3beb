// SeparableConv2D (Keras): a depthwise KxK convolution without bias, then a 1x1 pointwise
// convolution with bias, then the activation, as one backend SeparableConvOp. Parameters: depthwise_weight [C, 1, K, K],
// pointwise_weight [F, C, 1, 1], bias [F].
#pragma once
#include <memory>

#include "scaletrain/nn/activation.hpp"
#include "scaletrain/nn/layer.hpp"
#include "scaletrain/nn/padding.hpp"
#include "scaletrain/nn/pooling.hpp"

namespace scaletrain::nn {

class SeparableConv2D : public Layer {
 public:
  SeparableConv2D(std::string name, int64_t filters, int64_t kernel, int64_t stride, Padding padding, Activation act);
  std::string type() const override { return "SeparableConv2D"; }
  Shape configure(const Shape& in) override;
  void build(Backend& backend, int64_t batch) override;
  const Tensor& forward(const Tensor& x, bool training) override;
  const Tensor& backward(const Tensor& dy, bool need_dx) override;
  int64_t flops_per_sample() const override;
  std::string implementation() const override { return op_ ? op_->implementation() : std::string(); }
  // Runs `next` (the pooling layer that takes this layer's output) inside this layer's op where the
  // op can (cpu f32: pooled while the output is in cache; cpu bf16: the activation's gradient formed at
  // the pooled size); then marks `next` absorbed, forward's own output may stay unwritten (only `next`
  // reads it, and it no longer does), and backward takes the pooled gradient. After build. Returns
  // whether it did.
  bool absorb_pool(Pool2D& next);
  // nn.Conv2d(groups=C, bias=False), nn.Conv2d(C, F, 1), then the activation's module.
  int torch_module_count() const override { return act_.kind() == Activation::none ? 2 : 3; }
  TorchParameterPlace torch_place(size_t parameter) const override {
    return parameter == 0 ? TorchParameterPlace{0, "weight"}
                          : TorchParameterPlace{1, parameter == 1 ? "weight" : "bias"};
  }

 private:
  int64_t filters_, kernel_, stride_;
  Padding padding_;
  SeparableConvShape shape_;
  std::unique_ptr<SeparableConvOp> op_;
  FusedActivation act_;
  Tensor x_, mid_, dmid_, dx_;
};

}  // namespace scaletrain::nn

// Conv2D and DepthwiseConv2D: 2-D convolution over NHWC activations with a square or rectangular
// kernel, stride, padding (Keras's 'same'/'valid' or PyTorch's explicit padding, padding.hpp), groups,
// bias and a fused activation;
// in evaluation, a BatchNorm2d after it may be folded in.
// Weights [OC, IC/groups, KH, KW] as in PyTorch.
#pragma once
#include <memory>
#include <optional>

#include "scaletrain/nn/activation.hpp"
#include "scaletrain/nn/batch_norm.hpp"
#include "scaletrain/nn/layer.hpp"
#include "scaletrain/nn/padding.hpp"
#include "scaletrain/nn/pooling.hpp"

namespace scaletrain::nn {

// A kernel's height and width: one number for a square kernel (3), two for another ({1, 7}), as
// PyTorch's kernel_size.
struct KernelSize {
  int64_t h = 3, w = 3;
  constexpr KernelSize(int64_t k = 3) : h(k), w(k) {}  // implicit: Conv2DOptions{16, 3, ...}
  constexpr KernelSize(int64_t kh, int64_t kw) : h(kh), w(kw) {}
  std::string to_string() const { return h == w ? std::to_string(h) : std::to_string(h) + "x" + std::to_string(w); }
};

struct Conv2DOptions {
  int64_t filters = 0;
  KernelSize kernel = 3;
  int64_t stride = 1;
  Padding padding = Padding::same;
  int64_t groups = 1;
  bool bias = true;
  Activation activation = Activation::none;
};

class Conv2D : public Layer {
 public:
  // The weight drawn with glorot_uniform (lecun_normal before a SELU), the bias zeros.
  Conv2D(std::string name, Conv2DOptions o);
  // The weight drawn with `weight_init` instead (Init::he_normal_fan_out: torchvision's ResNets).
  Conv2D(std::string name, Conv2DOptions o, Init weight_init);
  std::string type() const override { return "Conv2D"; }
  Shape configure(const Shape& in) override;
  void build(Backend& backend, int64_t batch) override;
  const Tensor& forward(const Tensor& x, bool training) override;
  const Tensor& backward(const Tensor& dy, bool need_dx) override;
  int64_t flops_per_sample() const override;
  std::string implementation() const override { return op_ ? op_->implementation() : std::string(); }
  int torch_module_count() const override { return act_.kind() == Activation::none ? 1 : 2; }
  // Runs `next` (the pooling layer that takes this layer's output) inside this layer's op where the op
  // can (cpu: f32 layers of one input channel, pooled image by image in L1; bf16 layers with an
  // activation), as SeparableConv2D::absorb_pool. After build. Returns whether it did.
  bool absorb_pool(Pool2D& next);
  // Folds `next` (the BatchNorm2d that alone takes this layer's output; this layer without an
  // activation) into this layer for evaluation: the evaluation forward convolves with the filters
  // scaled by BatchNorm's per-channel scale, adds its shift as the bias, applies its ReLU inside the
  // op (a backend's post-op where it has one) and writes BatchNorm's output, which BatchNorm's own
  // evaluation forward then hands on. Training is unchanged (batch statistics need the whole
  // convolution first). After build. Returns whether it did.
  bool fold_batch_norm(BatchNorm2d& next);

 protected:
  const Tensor& forward_folded(const Tensor& x);
  Conv2DOptions opt_;
  std::optional<Init> weight_init_;
  ConvShape conv_;
  std::unique_ptr<ActivatedConvOp> op_;
  FusedActivation act_;
  Tensor x_, dx_;
  // Evaluation with a BatchNorm folded in: the layer, the op (bias, BatchNorm's activation) and the
  // folded filters (compute type) and bias (f32).
  BatchNorm2d* folded_bn_ = nullptr;
  std::unique_ptr<ActivatedConvOp> folded_op_;
  Tensor folded_weight_, folded_bias_, folded_pre_;
};

// One filter per input channel (depth_multiplier 1): groups == channels.
class DepthwiseConv2D : public Conv2D {
 public:
  DepthwiseConv2D(std::string name, int64_t kernel, int64_t stride, Padding padding, bool bias, Activation act);
  std::string type() const override { return "DepthwiseConv2D"; }
  Shape configure(const Shape& in) override;
};

}  // namespace scaletrain::nn

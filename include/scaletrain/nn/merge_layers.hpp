// Layers of several inputs, for branching networks: Add (element-wise sum of inputs of one shape,
// a residual connection) and Concat (along the channels, the last dimension, as Keras'
// Concatenate and torch.cat(dim=1) of NCHW). Neither has parameters.
#pragma once
#include "scaletrain/nn/batch_norm.hpp"
#include "scaletrain/nn/layer.hpp"

namespace scaletrain::nn {

// Takes two or more inputs; the one-input entry points are errors.
class MergeLayer : public Layer {
 public:
  using Layer::Layer;
  bool accepts_inputs(size_t count) const override { return count >= 2; }
  Shape configure(const Shape& in) override;
  const Tensor& forward(const Tensor& x, bool training) override;
  const Tensor& backward(const Tensor& dy, bool need_dx) override;
};

class Add : public MergeLayer {
 public:
  explicit Add(std::string name) : MergeLayer(std::move(name)) {}
  std::string type() const override { return "Add"; }
  Shape configure_inputs(const std::vector<Shape>& in) override;
  void build(Backend& backend, int64_t batch) override;
  const Tensor& forward_inputs(const std::vector<const Tensor*>& x, bool training) override;
  // Every input's gradient is dy itself.
  void backward_inputs(const Tensor& dy, const std::vector<bool>& need_dx, std::vector<const Tensor*>& dx) override;
  int64_t flops_per_sample() const override;
  // Takes over the BatchNorm2d of input `bn_input` (of two) and the ReLU after this layer
  // (Model::fuse_residual_tails): forward writes max(0, bn(x) + other), backward takes the gradient
  // of that and runs the BatchNorm's backward (BatchNorm2d::fuse_residual_relu).
  void fuse_batch_norm_relu(BatchNorm2d& bn, size_t bn_input);

 private:
  size_t inputs_ = 0;
  Tensor y_;
  BatchNorm2d* fused_bn_ = nullptr;
  size_t fused_input_ = 0;
  Tensor dresidual_;  // fused: the other input's gradient
};

class Concat : public MergeLayer {
 public:
  explicit Concat(std::string name) : MergeLayer(std::move(name)) {}
  std::string type() const override { return "Concatenate"; }
  Shape configure_inputs(const std::vector<Shape>& in) override;
  void build(Backend& backend, int64_t batch) override;
  const Tensor& forward_inputs(const std::vector<const Tensor*>& x, bool training) override;
  void backward_inputs(const Tensor& dy, const std::vector<bool>& need_dx, std::vector<const Tensor*>& dx) override;

 private:
  std::vector<int64_t> channels_;  // per input
  int64_t rows_ = 0;               // batch times the positions per sample
  Tensor y_;
  std::vector<Tensor> dx_;
};

}  // namespace scaletrain::nn

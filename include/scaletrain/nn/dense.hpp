// Dense (fully connected): y = x W^T + b with a fused activation; W is [units, in] as in PyTorch. Like
// torch.nn.Linear it maps the last dimension of any input, [..., in] -> [..., units].
#pragma once
#include <memory>
#include <optional>

#include "scaletrain/nn/activation.hpp"
#include "scaletrain/nn/layer.hpp"
#include "scaletrain/nn/linear_products.hpp"

namespace scaletrain::nn {

class Dense : public Layer {
 public:
  // Without `init`: the weight drawn with glorot_uniform (lecun_normal before a SELU), the bias zeros.
  // With it: the weight drawn with `init`; Init::pytorch_default draws the bias too, from the layer's
  // fan-in (torch.nn.Linear's reset_parameters, uniform in +-1/sqrt(in_features)), other inits leave it zeros.
  Dense(std::string name, int64_t units, Activation act = Activation::none, bool bias = true,
        std::optional<Init> init = std::nullopt);
  std::string type() const override { return "Dense"; }
  Shape configure(const Shape& in) override;
  void build(Backend& backend, int64_t batch) override;
  const Tensor& forward(const Tensor& x, bool training) override;
  const Tensor& backward(const Tensor& dy, bool need_dx) override;
  int64_t flops_per_sample() const override { return 2 * rows_ * features_ * units_; }
  std::string implementation() const override { return products_.implementation(); }
  int torch_module_count() const override { return act_.kind() == Activation::none ? 1 : 2; }

 private:
  int64_t units_;
  int64_t rows_ = 1;  // rows per sample: the product of the input's dimensions before the last
  int64_t features_ = 0;
  bool bias_;
  std::optional<Init> init_;
  LinearProducts products_;
  FusedActivation act_;
  Tensor x_, dx_;
};

}  // namespace scaletrain::nn

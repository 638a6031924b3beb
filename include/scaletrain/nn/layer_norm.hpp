// LayerNorm over the last dimension of any input (torch.nn.LayerNorm(C, eps)): per row of C values,
// y = (x - mean) / sqrt(var + eps) * weight + bias with the biased variance; weight and bias [C] are
// normalization parameters (optimizer.no_decay = norm). The statistics and the input gradient are
// per-row reductions, the weight and bias gradients the reduction primitive's column sums.
#pragma once
#include "scaletrain/kernels/reduction.hpp"
#include "scaletrain/nn/layer.hpp"

namespace scaletrain::nn {

class LayerNorm : public Layer {
 public:
  // torchvision's ViT uses eps 1e-6 (torch.nn.LayerNorm's default is 1e-5).
  explicit LayerNorm(std::string name, double eps = 1e-6) : Layer(std::move(name)), eps_(eps) {}
  std::string type() const override { return "LayerNormalization"; }
  Shape configure(const Shape& in) override;
  void build(Backend& backend, int64_t batch) override;
  const Tensor& forward(const Tensor& x, bool training) override;
  const Tensor& backward(const Tensor& dy, bool need_dx) override;
  int64_t flops_per_sample() const override { return 8 * shape_numel(in_shape_); }

 private:
  double eps_;
  int64_t rows_ = 0, cols_ = 0;  // rows over the batch, values per row
  kernels::RowsPlan rows_plan_;
  kernels::ColumnSumsPlan grad_plan_;
  Tensor x_, y_, dx_, mean_, rstd_, partial_;
};

}  // namespace scaletrain::nn

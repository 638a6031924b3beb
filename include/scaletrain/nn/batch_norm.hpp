// BatchNorm2d as PyTorch's nn.BatchNorm2d over the channel (last) dimension of NHWC activations, or
// of any [..., C] input: affine weight and bias; buffers running_mean, running_var (the unbiased
// batch variance enters it) and num_batches_tracked (i64). Training normalizes with the batch's
// statistics and updates the buffers (momentum 0.1); evaluation uses the buffers. A ReLU after it
// may be fused (the pass that normalizes applies it, and backward takes its mask from the output).
// Statistics are f32 in every compute type. With a BatchStatisticsReducer (SyncBatchNorm), the
// batch statistics and the backward pass's sums are taken over the ranks' global batch. A backend's
// BatchNormOp (cuda: cuDNN) runs the plain layer where it has one; the kernels run everything else.
#pragma once
#include <memory>
#include <utility>

#include "scaletrain/backend/ops.hpp"
#include "scaletrain/kernels/batch_norm.hpp"
#include "scaletrain/kernels/reduction.hpp"
#include "scaletrain/nn/activation.hpp"
#include "scaletrain/nn/batch_statistics.hpp"
#include "scaletrain/nn/layer.hpp"

namespace scaletrain::nn {

class BatchNorm2d : public Layer {
 public:
  BatchNorm2d(std::string name, Activation activation = Activation::none, float momentum = 0.1f, float eps = 1e-5f);
  std::string type() const override { return "BatchNormalization"; }
  Shape configure(const Shape& in) override;
  void build(Backend& backend, int64_t batch) override;
  const Tensor& forward(const Tensor& x, bool training) override;
  const Tensor& backward(const Tensor& dy, bool need_dx) override;
  int64_t flops_per_sample() const override;
  // The backend's op where it runs this layer ("cuDNN batch normalization (spatial)"); empty for the
  // layer's kernels.
  std::string implementation() const override;
  int torch_module_count() const override { return activation_ == Activation::none ? 1 : 2; }
  // Sums over the ranks (SyncBatchNorm); null: this rank's batch alone (the default).
  void use_statistics_reducer(BatchStatisticsReducer* reducer) { reducer_ = reducer; }
  bool synchronized() const { return reducer_ != nullptr; }
  Activation activation() const { return activation_; }
  // Evaluation folded into the convolution before it (Conv2D::fold_batch_norm): that layer's
  // evaluation forward writes this layer's output, and this layer's evaluation forward returns it.
  void fold_into_producer() { folded_ = true; }
  bool folded() const { return folded_; }
  // Evaluation's per-channel y = x * scale + shift from the running statistics, queued on the compute
  // stream: f32 [C] device pointers (scale, shift), valid until the next forward.
  std::pair<const float*, const float*> evaluation_scale_and_shift();
  // The output buffer (the folded convolution writes it).
  const Tensor& output() const { return y_; }
  // Fused with the residual Add and the ReLU after it (Model::fuse_residual_tails): this layer's
  // forward computes the statistics (or the evaluation's scale and shift) only, and the Add calls
  // forward_residual_relu, out = max(0, bn(x) + residual), in one pass on the kernels; the Add's
  // backward calls backward_residual_relu (the mask from out, the sums, then one pass writing this
  // layer's dx and the residual's gradient, null: not needed), and this layer's backward hands dx on.
  void fuse_residual_relu() { fused_residual_ = true; }
  bool fused_residual() const { return fused_residual_; }
  void forward_residual_relu(const Tensor& residual, const Tensor& out, bool training);
  void backward_residual_relu(const Tensor& out, const Tensor& dout, const Tensor* dresidual);

 private:
  void batch_statistics(const Tensor& x);
  void update_running_statistics();
  kernels::BnTrainingScale training_scale();
  void count_batch();
  void gradients(const Tensor& y, const Tensor& dy, bool need_dx, bool relu, const Tensor* dresidual);
  bool uses_op() const { return op_ != nullptr && reducer_ == nullptr && !fused_residual_; }
  Activation activation_;
  float momentum_, eps_;
  BatchStatisticsReducer* reducer_ = nullptr;
  bool folded_ = false;
  bool fused_residual_ = false;
  int64_t channels_ = 0, rows_ = 0;
  kernels::ColumnSumsPlan sums_plan_, gradient_sums_plan_;  // of [rows, C] x 1 and x 2 values
  Tensor x_, y_, dx_;
  Tensor partial_;         // f64: the first pass's partial sums (the larger plan's)
  Tensor sums_;            // f64 [2C + 1]: the reduced sums (sum, count; squared deviations; dy and dy*xhat)
  Tensor mean_, invstd_;   // f32 [C]: the statistics forward normalized with
  Tensor scale_, shift_;   // f32 [C]: y = x * scale + shift
  Tensor count_;           // f32 [2]: the rows the statistics cover (summed over the ranks when synchronized), 1 / rows
  std::unique_ptr<BatchNormOp> op_;  // the backend's, for the plain layer; null: the kernels alone
};

}  // namespace scaletrain::nn

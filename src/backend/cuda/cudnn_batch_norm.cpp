// The CUDA backend's BatchNorm2d (plain, not synchronized): cuDNN's legacy spatial batch normalization
// (cudnnBatchNormalizationForwardTraining / ForwardInference / Backward) in f32 and f16, with the ReLU
// after it as the kernels/activation.hpp functors. The descriptors come from the pure, CPU-tested
// backend/cudnn_plan.hpp.
//
// Decisions and why:
// - The legacy spatial mode, as for the convolution and pooling: mature, and no runtime-compiled
//   engines we cannot test here. cuDNN's running variance takes the unbiased batch variance, and what it
//   calls the saved inverse variance is 1 / sqrt(var + eps), the layer's invstd: both as PyTorch's.
// - Not the fused CUDNN_BATCHNORM_OPS_BN_ACTIVATION (cudnnBatchNormalizationForwardTrainingEx): as we
//   understand its restrictions (NHWC half precision, the persistent mode), f32 would need the separate
//   pass anyway, and no GPU here can tell which shapes it takes. The ReLU runs in place on y after
//   cuDNN, and backward masks dy by y > 0 into the op's scratch tensor before cuDNN's backward.
// - bf16: whether the legacy calls take it cannot be checked here, so the plan leaves it on the layer's
//   kernels (make_cudnn_batch_norm returns null) until the GPU kit's probe has answered
//   (make_cudnn_bf16_batch_norm_probe), as it does SyncBatchNorm, whose sums are reduced
//   across ranks between passes that cuDNN runs as one call.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "cudnn_descriptors.hpp"
#include "scaletrain/backend/cuda/cuda_device.hpp"
#include "scaletrain/backend/cuda/cuda_op_context.hpp"
#include "scaletrain/backend/cudnn_plan.hpp"
#include "scaletrain/core/check_cuda.hpp"
#include "scaletrain/kernels/activation.hpp"
#include "scaletrain/kernels/launch_cuda.hpp"

namespace scaletrain::cuda {
namespace {

template <class T>
class CudnnBatchNorm final : public BatchNormOp {
 public:
  CudnnBatchNorm(CudaOpContext& ctx, const CudnnBatchNormPlan& plan, cudaStream_t stream)
      : ctx_(ctx),
        stream_(stream),
        plan_(plan),
        who_(plan.shape.to_string()),
        x_desc_(plan.x, plan.data_type),
        parameters_desc_(plan.parameters, CudnnType::f32) {
    use_device(ctx_.device());
    if (relu()) masked_ = ctx_.buffer({plan.x.elements()}, plan.shape.dtype, "batch norm masked gradient");
    set_implementation("cuDNN batch normalization (spatial)" + std::string(relu() ? ", ReLU kernels after" : ""));
    const std::string line = batch_norm_choice_line(plan_);
    const std::vector<std::string> logged = ctx_.choices();
    if (std::find(logged.begin(), logged.end(), line) == logged.end()) ctx_.log_choice(line);
  }

  void forward_training(const void* x, const float* weight, const float* bias, float* running_mean,
                        float* running_var, float* save_mean, float* save_invstd, void* y) override {
    use_device(ctx_.device());
    const float one = 1.0f, zero = 0.0f;
    ST_CUDNN_CHECK_FOR(who_, cudnnBatchNormalizationForwardTraining(
                                 ctx_.cudnn(stream_), CUDNN_BATCHNORM_SPATIAL, &one, &zero, x_desc_.get(), x,
                                 x_desc_.get(), y, parameters_desc_.get(), weight, bias, plan_.shape.momentum,
                                 running_mean, running_var, plan_.shape.eps, save_mean, save_invstd));
    apply_relu(y);
  }

  void forward_inference(const void* x, const float* weight, const float* bias, const float* running_mean,
                         const float* running_var, void* y) override {
    use_device(ctx_.device());
    const float one = 1.0f, zero = 0.0f;
    ST_CUDNN_CHECK_FOR(who_, cudnnBatchNormalizationForwardInference(
                                 ctx_.cudnn(stream_), CUDNN_BATCHNORM_SPATIAL, &one, &zero, x_desc_.get(), x,
                                 x_desc_.get(), y, parameters_desc_.get(), weight, bias, running_mean, running_var,
                                 plan_.shape.eps));
    apply_relu(y);
  }

  void backward(const void* x, const void* y, const void* dy, const float* weight, const float* save_mean,
                const float* save_invstd, float* dweight, float* dbias, void* dx) override {
    use_device(ctx_.device());
    if (relu()) {
      ctx_.launch_elements(stream_, "batch norm relu backward", plan_.x.elements(),
                           kernels::ReluBackwardFromOutput<T>{static_cast<const T*>(y), static_cast<const T*>(dy),
                                                              masked_.device_data<T>()});
      dy = masked_.device_data<T>();
    }
    const float one = 1.0f, zero = 0.0f;
    ST_CUDNN_CHECK_FOR(who_, cudnnBatchNormalizationBackward(
                                 ctx_.cudnn(stream_), CUDNN_BATCHNORM_SPATIAL, &one, &zero, &one, &zero,
                                 x_desc_.get(), x, x_desc_.get(), dy, x_desc_.get(), dx, parameters_desc_.get(),
                                 weight, dweight, dbias, plan_.shape.eps, save_mean, save_invstd));
  }

 private:
  bool relu() const { return plan_.shape.activation == Activation::relu; }

  void apply_relu(void* y) {
    if (!relu()) return;
    T* v = static_cast<T*>(y);
    ctx_.launch_elements(stream_, "batch norm relu", plan_.x.elements(), kernels::ReluForward<T>{v, v});
  }

  CudaOpContext& ctx_;
  cudaStream_t stream_;
  CudnnBatchNormPlan plan_;
  std::string who_;  // "batch_norm{...}", for errors
  TensorDescriptor x_desc_, parameters_desc_;
  Tensor masked_;  // with the ReLU: dy where y > 0, else 0
};

}  // namespace

std::unique_ptr<BatchNormOp> make_cudnn_batch_norm(CudaOpContext& ctx, const BatchNormShape& shape,
                                                   cudaStream_t stream) {
  const CudnnBatchNormPlan plan = plan_cudnn_batch_norm(shape);
  if (!plan.cudnn) return nullptr;
  if (shape.dtype == DType::f16) return std::make_unique<CudnnBatchNorm<f16>>(ctx, plan, stream);
  return std::make_unique<CudnnBatchNorm<float>>(ctx, plan, stream);
}

std::unique_ptr<BatchNormOp> make_cudnn_bf16_batch_norm_probe(CudaOpContext& ctx, const BatchNormShape& shape,
                                                              cudaStream_t stream) {
  ST_CHECK(shape.dtype == DType::bf16, "the cuDNN bf16 batch normalization probe takes bf16, not ",
           dtype_name(shape.dtype));
  return std::make_unique<CudnnBatchNorm<bf16>>(ctx, plan_cudnn_batch_norm(shape, true), stream);
}

}  // namespace scaletrain::cuda

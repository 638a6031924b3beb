// The CUDA backend's max and average pooling (NHWC, padding never wins a maximum and is excluded from
// an average's divisor): cuDNN's legacy pooling (cudnnPoolingForward / Backward) for symmetric
// padding, the direct functors of kernels/pool_direct.hpp for asymmetric padding. The descriptor
// parameters are the pure, CPU-tested backend/cudnn_plan.hpp.
//
// Decisions and why:
// - cuDNN's legacy pooling, as for the convolution (cudnn_conv.cpp): mature, and no runtime-compiled
//   engines we cannot test here. Max pooling is CUDNN_POOLING_MAX_DETERMINISTIC under
//   run.deterministic (overlapping windows need no atomics in backward); NaN propagates, so the
//   non-finite checks see it.
// - Asymmetric padding (TensorFlow 'same' on an odd input): cuDNN's descriptor pads symmetrically,
//   and explicit padding cells would count in CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING's divisor
//   (for max, -inf cells would do, but one path for both kinds is simpler). So these shapes run the
//   direct functors: forward over outputs, backward gathering over inputs (deterministic), tested on
//   the CPU against oneDNN (tests/test_backend_cudnn_plan.cpp).
// - cuDNN's pooling backward reads x, y and dy. The op keeps the x and y pointers of the last
//   training forward (the layers' buffers persist until backward: nn/pooling.cpp), so those buffers
//   must not change in between (an inference forward into the same y would; the CPU op, which keeps
//   its own argmax workspace, tolerates that). Max pooling backward without a training forward is an
//   Error, as on the CPU; average pooling without one runs the direct backward, which needs no x or y.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "cudnn_descriptors.hpp"
#include "scaletrain/backend/cuda/cuda_device.hpp"
#include "scaletrain/backend/cuda/cuda_op_context.hpp"
#include "scaletrain/backend/cudnn_plan.hpp"
#include "scaletrain/core/check_cuda.hpp"
#include "scaletrain/kernels/launch_cuda.hpp"
#include "scaletrain/kernels/pool_direct.hpp"

namespace scaletrain::cuda {
namespace {

// The cuDNN half of a pooling op: descriptors for symmetric padding.
struct PoolDescriptors {
  TensorDescriptor x, y;
  PoolingDescriptor pool;
  explicit PoolDescriptors(const CudnnPoolPlan& p) : x(p.x, p.data_type), y(p.y, p.data_type), pool(p) {
    int n = 0, c = 0, h = 0, w = 0;
    ST_CUDNN_CHECK_FOR(p.shape.to_string(), cudnnGetPooling2dForwardOutputDim(pool.get(), x.get(), &n, &c, &h, &w));
    ST_CHECK(n == p.y.n && c == p.y.c && h == p.y.h && w == p.y.w, "cuDNN pooling ", p.shape.to_string(),
             ": cuDNN computes an output of ", n, "x", c, "x", h, "x", w, " (NCHW), the plan ", p.y.to_string());
  }
};

template <class T>
class CudnnPool final : public PoolOp {
 public:
  CudnnPool(CudaOpContext& ctx, const PoolShape& shape, cudaStream_t stream)
      : ctx_(ctx),
        stream_(stream),
        plan_(plan_cudnn_pool(shape, ctx.settings().deterministic)),
        who_(shape.to_string()) {
    use_device(ctx_.device());
    if (!plan_.direct) desc_ = std::make_unique<PoolDescriptors>(plan_);
    const std::string line = pool_choice_line(plan_);
    const std::vector<std::string> logged = ctx_.choices();
    if (std::find(logged.begin(), logged.end(), line) == logged.end()) ctx_.log_choice(line);
  }

  void forward(const void* x, void* y, bool training) override {
    use_device(ctx_.device());
    if (plan_.direct) {
      ctx_.launch(stream_, "pool direct", plan_.y.elements(),
          kernels::PoolForwardDirect<T>{static_cast<const T*>(x), static_cast<T*>(y), plan_.geometry(), is_max()});
    } else {
      const float one = 1.0f, zero = 0.0f;
      ST_CUDNN_CHECK_FOR(who_, cudnnPoolingForward(ctx_.cudnn(stream_), desc_->pool.get(), &one, desc_->x.get(), x,
                                                   &zero, desc_->y.get(), y));
    }
    if (training) {
      x_ = x;
      y_ = y;
    }
  }

  void backward(const void* dy, void* dx) override {
    ST_CHECK(x_ != nullptr || !is_max(), "max pooling ", plan_.shape.to_string(),
             ": backward called before a forward with training = true");
    use_device(ctx_.device());
    if (plan_.direct || x_ == nullptr) {
      ctx_.launch(stream_, "pool direct backward", plan_.x.elements(),
                           kernels::PoolBackwardDirect<T>{static_cast<const T*>(x_), static_cast<const T*>(dy),
                                                          static_cast<T*>(dx), plan_.geometry(), is_max()});
      return;
    }
    const float one = 1.0f, zero = 0.0f;
    ST_CUDNN_CHECK_FOR(who_, cudnnPoolingBackward(ctx_.cudnn(stream_), desc_->pool.get(), &one, desc_->y.get(), y_,
                                                  desc_->y.get(), dy, desc_->x.get(), x_, &zero, desc_->x.get(), dx));
  }

 private:
  bool is_max() const { return plan_.shape.kind == PoolKind::max; }

  CudaOpContext& ctx_;
  cudaStream_t stream_;
  CudnnPoolPlan plan_;
  std::string who_;                        // "max_pool{...}", for errors
  std::unique_ptr<PoolDescriptors> desc_;  // null on the direct path
  const void* x_ = nullptr;                // the last training forward's input and output
  const void* y_ = nullptr;
};

}  // namespace

std::unique_ptr<PoolOp> make_cudnn_pool(CudaOpContext& ctx, const PoolShape& shape, cudaStream_t stream) {
  switch (shape.dtype) {
    case DType::f32:
      return std::make_unique<CudnnPool<float>>(ctx, shape, stream);
    case DType::bf16:
      return std::make_unique<CudnnPool<bf16>>(ctx, shape, stream);
    case DType::f16:
      return std::make_unique<CudnnPool<f16>>(ctx, shape, stream);
    default:
      break;
  }
  ST_FAIL("cuDNN pooling ", shape.to_string(), ": cuDNN computes in f32, bf16 or f16, not ", dtype_name(shape.dtype));
}

}  // namespace scaletrain::cuda

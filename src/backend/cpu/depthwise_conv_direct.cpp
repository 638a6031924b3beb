// The direct depthwise convolution as a standalone ConvOp over a batch: images in parallel, one padded
// buffer and one set of gradient sums per thread, the sums added in thread order. make_conv does not
// take it: on its own it is memory-bound like oneDNN's and no faster (perf/bench_conv compares); its
// kernels pay off inside the fused separable convolution, where the images stay in cache.
#include <omp.h>

#include <algorithm>
#include <vector>

#include "scaletrain/backend/cpu/depthwise_direct.hpp"
#include "scaletrain/backend/cpu/direct_ops.hpp"
#include "scaletrain/core/error.hpp"
#include "scaletrain/core/tensor.hpp"

namespace scaletrain::cpu {
namespace {

class DepthwiseConvDirect final : public ConvOp {
 public:
  explicit DepthwiseConvDirect(const ConvShape& s) : s_((s.validate(), s)), kernels_(s) {
    threads_ = std::max(1, omp_get_max_threads());
    padded_ = Tensor({threads_ * kernels_.padded_floats()}, DType::f32, "depthwise padded images");
    for (int t = 0; t < threads_; ++t) grads_.push_back(kernels_.make_gradients());
  }

  void forward(const void* x, const void* w, const float* b, void* y) override {
    kernels_.set_weights(static_cast<const float*>(w), s_.bias ? b : nullptr);
    for_each_image([&](int64_t n, float* padded, int) {
      kernels_.forward(static_cast<const float*>(x) + n * kernels_.in_floats(),
                       static_cast<float*>(y) + n * kernels_.out_floats(), padded);
    });
  }
  void backward_data(const void* dy, const void* w, void* dx) override {
    kernels_.set_weights(static_cast<const float*>(w), nullptr);
    for_each_image([&](int64_t n, float* padded, int) {
      kernels_.backward_data(static_cast<const float*>(dy) + n * kernels_.out_floats(),
                             static_cast<float*>(dx) + n * kernels_.in_floats(), padded);
    });
  }
  void backward_weights(const void* x, const void* dy, float* dw, float* db) override {
    ST_CHECK(!s_.bias || db != nullptr, "convolution ", s_.to_string(),
             " has a bias but no bias gradient buffer was given");
    for (auto& g : grads_) g.clear();
    for_each_image([&](int64_t n, float* padded, int th) {
      kernels_.backward_weights(static_cast<const float*>(x) + n * kernels_.in_floats(),
                                static_cast<const float*>(dy) + n * kernels_.out_floats(), grads_[th], padded);
    });
    for (int th = 1; th < threads_; ++th) grads_[0].add(grads_[th]);
    kernels_.write_out(grads_[0], dw, s_.bias ? db : nullptr);
  }

 private:
  template <class F>
  void for_each_image(F&& f) {
#pragma omp parallel for schedule(static) num_threads(threads_)
    for (int64_t n = 0; n < s_.batch; ++n) {
      const int th = omp_get_thread_num();
      f(n, padded_.data<float>() + th * kernels_.padded_floats(), th);
    }
  }

  ConvShape s_;
  DepthwiseDirect kernels_;
  int threads_ = 1;
  Tensor padded_;  // [threads, padded image], 64-byte aligned
  std::vector<DepthwiseDirect::Gradients> grads_;    // [threads]
};

}  // namespace

std::unique_ptr<ConvOp> make_direct_depthwise_conv(const ConvShape& s) {
  return std::make_unique<DepthwiseConvDirect>(s);
}

}  // namespace scaletrain::cpu

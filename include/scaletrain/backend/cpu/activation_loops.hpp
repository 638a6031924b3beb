// The activation functors (kernels/activation.hpp) as plain vectorized loops on the calling thread, for
// the CPU ops that apply a layer's activation to output still in cache (the fused separable and the
// few-taps convolutions); the same arithmetic as the kernels launched on a stream.
#pragma once
#include <cstdint>

#include "scaletrain/backend/activation.hpp"
#include "scaletrain/kernels/activation.hpp"

namespace scaletrain::cpu {

template <class F>
inline void run_elementwise(const F& f, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) f(i);
}

// y = act(pre) over n values (pre may be y); nothing for none.
inline void activate(Activation act, const float* pre, float* y, int64_t n) {
  if (act == Activation::relu) run_elementwise(kernels::ReluForward<float>{pre, y}, n);
  if (act == Activation::relu6) run_elementwise(kernels::Relu6Forward<float>{pre, y}, n);
  if (act == Activation::selu) run_elementwise(kernels::SeluForward<float>{pre, y}, n);
}

// dpre = act'(pre) * dy from the output y (kernels' *FromOutput functors); dy itself for none.
inline void activate_backward_from_output(Activation act, const float* y, const float* dy, float* dpre, int64_t n) {
  if (act == Activation::none) run_elementwise([=](int64_t i) { dpre[i] = dy[i]; }, n);
  if (act == Activation::relu) run_elementwise(kernels::ReluBackwardFromOutput<float>{y, dy, dpre}, n);
  if (act == Activation::relu6) run_elementwise(kernels::Relu6BackwardFromOutput<float>{y, dy, dpre}, n);
  if (act == Activation::selu) run_elementwise(kernels::SeluBackwardFromOutput<float>{y, dy, dpre}, n);
}

}  // namespace scaletrain::cpu

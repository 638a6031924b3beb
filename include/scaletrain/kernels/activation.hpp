// Activation functors: ReLU and SELU forward and backward (index i over all elements), templated
// over the storage type (float, bf16, f16) with float arithmetic.
#pragma once
#include <cmath>
#include <cstdint>

#include "scaletrain/core/half.hpp"
#include "scaletrain/core/macros.hpp"

namespace scaletrain::kernels {

constexpr float kSeluAlpha = 1.6732632423543772f;
constexpr float kSeluScale = 1.0507009873554805f;

// e^x for x <= 0 without a libm call, so host loops vectorize: x = n ln2 + r with |r| <= ln2/2
// (two-part ln2), e^r by a degree-6 Taylor polynomial (relative error < 2e-7 on that range),
// times 2^n built in the exponent bits. Inputs below -87 give 0 (e^-87 is below FLT_MIN).
SCALETRAIN_INLINE float exp_nonpositive(float x) {
  x = x < -87.0f ? -87.0f : (x > 0.0f ? 0.0f : x);
  // Round to nearest by adding and subtracting 1.5 * 2^23 (no libm call; exact for |n| < 2^22).
  const float n = (x * 1.44269504f + 12582912.0f) - 12582912.0f;
  const float r = (x - n * 0.693145752f) - n * 1.42860677e-6f;
  float p = 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const uint32_t scale_bits = static_cast<uint32_t>(static_cast<int32_t>(n) + 127) << 23;
  return x <= -87.0f ? 0.0f : p * bits_float(scale_bits);
}

// T is the storage type (float, bf16, f16); the arithmetic is float.
template <class T>
struct ReluForward {
  const T* x;
  T* y;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t i) const {
    const float v = to_float(x[i]);
    y[i] = from_float<T>(v > 0.0f ? v : 0.0f);
  }
};

template <class T>
struct ReluBackward {
  const T* x;
  const T* dy;
  T* dx;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t i) const {
    dx[i] = from_float<T>(to_float(x[i]) > 0.0f ? to_float(dy[i]) : 0.0f);
  }
};

template <class T>
struct SeluForward {
  const T* x;
  T* y;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t i) const {
    const float v = to_float(x[i]);
    const float neg = kSeluScale * kSeluAlpha * (exp_nonpositive(v) - 1.0f);
    y[i] = from_float<T>(v > 0.0f ? kSeluScale * v : neg);
  }
};

template <class T>
struct SeluBackward {
  const T* x;
  const T* dy;
  T* dx;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t i) const {
    const float v = to_float(x[i]);
    const float slope = v > 0.0f ? kSeluScale : kSeluScale * kSeluAlpha * exp_nonpositive(v);
    dx[i] = from_float<T>(slope * to_float(dy[i]));
  }
};

// The same gradients from the activation's output y instead of its input, for ops that keep only y
// (the cpu fused separable convolution). ReLU's is exact. SELU's slope for y <= 0 is
// y + scale * alpha (= scale * alpha * e^x): its error is y's rounding error, at most half an ulp of
// |y| < 1.76 (6e-8 in f32), where the input's form has e^x's relative error (PyTorch's elu_backward
// takes the same form with is_result = true).
template <class T>
struct ReluBackwardFromOutput {
  const T* y;
  const T* dy;
  T* dx;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t i) const {
    dx[i] = from_float<T>(to_float(y[i]) > 0.0f ? to_float(dy[i]) : 0.0f);
  }
};

template <class T>
struct SeluBackwardFromOutput {
  const T* y;
  const T* dy;
  T* dx;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t i) const {
    const float v = to_float(y[i]);
    const float slope = v > 0.0f ? kSeluScale : v + kSeluScale * kSeluAlpha;
    dx[i] = from_float<T>(slope * to_float(dy[i]));
  }
};

}  // namespace scaletrain::kernels

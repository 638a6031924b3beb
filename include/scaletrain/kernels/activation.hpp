// Activation functors: ReLU and SELU forward and backward (index i over all elements).
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

struct ReluForward {
  const float* x;
  float* y;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t i) const { y[i] = x[i] > 0.0f ? x[i] : 0.0f; }
};

struct ReluBackward {
  const float* x;
  const float* dy;
  float* dx;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t i) const { dx[i] = x[i] > 0.0f ? dy[i] : 0.0f; }
};

struct SeluForward {
  const float* x;
  float* y;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t i) const {
    const float v = x[i];
    const float neg = kSeluScale * kSeluAlpha * (exp_nonpositive(v) - 1.0f);
    y[i] = v > 0.0f ? kSeluScale * v : neg;
  }
};

struct SeluBackward {
  const float* x;
  const float* dy;
  float* dx;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t i) const {
    const float v = x[i];
    const float slope = v > 0.0f ? kSeluScale : kSeluScale * kSeluAlpha * exp_nonpositive(v);
    dx[i] = slope * dy[i];
  }
};

}  // namespace scaletrain::kernels

// Activation functors: ReLU and SELU forward and backward (index i over all elements).
#pragma once
#include <cmath>
#include <cstdint>

#include "scaletrain/core/macros.hpp"

namespace scaletrain::kernels {

constexpr float kSeluAlpha = 1.6732632423543772f;
constexpr float kSeluScale = 1.0507009873554805f;

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
    y[i] = v > 0.0f ? kSeluScale * v : kSeluScale * kSeluAlpha * (expf(v) - 1.0f);
  }
};

struct SeluBackward {
  const float* x;
  const float* dy;
  float* dx;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t i) const {
    const float v = x[i];
    dx[i] = v > 0.0f ? kSeluScale * dy[i] : kSeluScale * kSeluAlpha * expf(v) * dy[i];
  }
};

}  // namespace scaletrain::kernels

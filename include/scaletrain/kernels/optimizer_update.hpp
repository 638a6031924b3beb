// Optimizer update functors with exactly torch.optim.SGD and torch.optim.AdamW semantics
// (i over parameters).
#pragma once
#include <cmath>
#include <cstdint>

#include "scaletrain/core/macros.hpp"

namespace scaletrain::kernels {

struct SgdUpdate {
  float* param;
  const float* grad;
  float* momentum_buffer;  // null when momentum == 0
  float lr;
  float momentum;
  float dampening;
  float weight_decay;
  bool nesterov;
  bool first_step;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t i) const {
    float g = grad[i];
    if (weight_decay != 0.0f) g += weight_decay * param[i];
    if (momentum != 0.0f) {
      const float b = first_step ? g : momentum * momentum_buffer[i] + (1.0f - dampening) * g;
      momentum_buffer[i] = b;
      g = nesterov ? g + momentum * b : b;
    }
    param[i] -= lr * g;
  }
};

struct AdamWUpdate {
  float* param;
  const float* grad;
  float* exp_avg;
  float* exp_avg_sq;
  float lr;
  float beta1;
  float beta2;
  float eps;
  float weight_decay;
  float bias_correction1;  // 1 - beta1^t
  float bias_correction2;  // 1 - beta2^t
  SCALETRAIN_HOST_DEVICE void operator()(int64_t i) const {
    const float g = grad[i];
    float p = param[i] * (1.0f - lr * weight_decay);
    const float m = beta1 * exp_avg[i] + (1.0f - beta1) * g;
    const float v = beta2 * exp_avg_sq[i] + (1.0f - beta2) * g * g;
    exp_avg[i] = m;
    exp_avg_sq[i] = v;
    const float denom = sqrtf(v) / sqrtf(bias_correction2) + eps;
    p -= (lr / bias_correction1) * m / denom;
    param[i] = p;
  }
};

}  // namespace scaletrain::kernels

// Scaling and finiteness checks: x *= factor (loss-scale unscaling), x /= N (gradient averaging), and
// the count of inf/NaN values (the dynamic loss scaler's overflow check) on the reduction primitive.
#pragma once
#include <cstdint>

#include "scaletrain/core/half.hpp"

namespace scaletrain::kernels {

struct Scale {
  float* x;
  float factor;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t i) const { x[i] *= factor; }
};

// x /= divisor: the mean of all-reduced gradients (a division, as torch DDP does, not a multiply by
// a rounded 1/N).
struct DivideBy {
  float* x;
  float divisor;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t i) const { x[i] /= divisor; }
};

// The reduction primitive's source for the count of inf/NaN values of two flat tensors at once (the
// gradients and the losses, one after the other as rows of one column): [gradient, loss] flags.
struct NonFiniteFlags {
  static constexpr int kWidth = 2;
  const float* gradients;
  int64_t n_gradients;
  const float* losses;
  SCALETRAIN_HOST_DEVICE static float nonfinite(float v) {
    return (float_bits(v) & 0x7f800000u) == 0x7f800000u ? 1.0f : 0.0f;
  }
  SCALETRAIN_HOST_DEVICE void load(int64_t r, int64_t, float* v) const {
    const bool gradient = r < n_gradients;
    v[0] = gradient ? nonfinite(gradients[r]) : 0.0f;
    v[1] = gradient ? 0.0f : nonfinite(losses[r - n_gradients]);
  }
};

}  // namespace scaletrain::kernels

// Scaling and finiteness checks: x *= factor (loss-scale unscaling), x /= N (gradient averaging), and a
// per-block count of inf/NaN values (the dynamic loss scaler's overflow check).
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

// i over blocks of n_per_block elements (the last block may be shorter: total elements n).
struct CountNonFinite {
  const float* x;
  int64_t n;
  int64_t n_per_block;
  int32_t* nonfinite_per_block;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t b) const {
    int32_t bad = 0;
    const int64_t end = (b + 1) * n_per_block < n ? (b + 1) * n_per_block : n;
    for (int64_t i = b * n_per_block; i < end; ++i)
      if ((float_bits(x[i]) & 0x7f800000u) == 0x7f800000u) ++bad;
    nonfinite_per_block[b] = bad;
  }
};

}  // namespace scaletrain::kernels

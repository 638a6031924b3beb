// Inverted dropout: keep with probability 1 - rate and scale by 1 / (1 - rate); the mask comes
// from the counter-based generator, so it is a function of (seed, step, element).
#pragma once
#include <cstdint>

#include "scaletrain/core/macros.hpp"
#include "scaletrain/kernels/random.hpp"

namespace scaletrain::kernels {

struct DropoutForward {
  const float* x;
  float* y;
  uint8_t* mask;
  float rate;
  uint64_t seed;
  uint64_t step;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t i) const {
    const bool keep = uniform01(seed, step, static_cast<uint64_t>(i)) >= rate;
    mask[i] = keep ? 1 : 0;
    y[i] = keep ? x[i] / (1.0f - rate) : 0.0f;
  }
};

struct DropoutBackward {
  const float* dy;
  const uint8_t* mask;
  float* dx;
  float scale;  // 1 / (1 - rate)
  SCALETRAIN_HOST_DEVICE void operator()(int64_t i) const { dx[i] = mask[i] ? dy[i] * scale : 0.0f; }
};

}  // namespace scaletrain::kernels

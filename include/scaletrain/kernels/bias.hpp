// Bias functors over channels-last data: add a per-channel bias, and reduce the gradient per channel.
#pragma once
#include <cstdint>

#include "scaletrain/core/half.hpp"
#include "scaletrain/core/macros.hpp"

namespace scaletrain::kernels {

// i over all elements: y[i] += bias[i % channels].
struct BiasAdd {
  float* y;
  const float* bias;
  int64_t channels;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t i) const { y[i] += bias[i % channels]; }
};

// i over channels: dbias[c] = sum over rows of dy[r * channels + c] (overwrites).
struct BiasGrad {
  const float* dy;
  float* dbias;
  int64_t rows;
  int64_t channels;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t c) const {
    float s = 0.0f;
    for (int64_t r = 0; r < rows; ++r) s += dy[r * channels + c];
    dbias[c] = s;
  }
};

// The same over activations stored in T (float, bf16, f16), with float arithmetic and f32 biases:
// what the CUDA backend's convolutions and inner products use around cuDNN and cuBLASLt (their bias
// gradients are the reduction primitive's column sums, kernels/reduction.hpp).
// i over all elements: y[i] = round_T(y[i] + bias[i % channels]).
template <class T>
struct BiasAddStored {
  T* y;
  const float* bias;
  int64_t channels;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t i) const {
    y[i] = from_float<T>(to_float(y[i]) + bias[i % channels]);
  }
};

}  // namespace scaletrain::kernels

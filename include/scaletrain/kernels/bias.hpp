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
// what the CUDA backend's convolutions and inner products use around cuDNN and cuBLASLt.
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

// c over channels: dbias[c] = sum over rows of dy[r * channels + c], in float, rows in order (so the
// result does not depend on the launch configuration).
template <class T>
struct BiasGradStored {
  const T* dy;
  float* dbias;
  int64_t rows;
  int64_t channels;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t c) const {
    float s = 0.0f;
    for (int64_t r = 0; r < rows; ++r) s += to_float(dy[r * channels + c]);
    dbias[c] = s;
  }
};

// The same sums in two passes that spread over many threads (BiasGradStored runs one thread per
// channel through every row, which a device cannot hide): chunks of bias_grad_chunk_rows rows, each
// summed per channel into partial[chunk, c] (rows in order), then the chunks per channel in order.
// The result depends only on the shape, not on the launch.
constexpr int64_t bias_grad_chunk_rows = 256;
inline int64_t bias_grad_chunks(int64_t rows) { return (rows + bias_grad_chunk_rows - 1) / bias_grad_chunk_rows; }

// i over chunks x channels (i = chunk * channels + c).
template <class T>
struct BiasGradChunks {
  const T* dy;
  float* partial;
  int64_t rows;
  int64_t channels;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t i) const {
    const int64_t chunk = i / channels, c = i - chunk * channels;
    const int64_t first = chunk * bias_grad_chunk_rows;
    const int64_t end = first + bias_grad_chunk_rows < rows ? first + bias_grad_chunk_rows : rows;
    float s = 0.0f;
    for (int64_t r = first; r < end; ++r) s += to_float(dy[r * channels + c]);
    partial[i] = s;
  }
};

// c over channels: dbias[c] = sum over chunks of partial[chunk, c] (overwrites).
struct BiasGradReduceChunks {
  const float* partial;
  float* dbias;
  int64_t chunks;
  int64_t channels;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t c) const {
    float s = 0.0f;
    for (int64_t k = 0; k < chunks; ++k) s += partial[k * channels + c];
    dbias[c] = s;
  }
};

}  // namespace scaletrain::kernels

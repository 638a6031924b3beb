// Batch normalization functors over channels-last data [rows, C] stored in T (float, bf16, f16),
// with f32 statistics. Per-channel sums are taken in two stages so that the work spreads over many
// indices and the result does not depend on the launch: each chunk of `chunk_rows` rows sums into
// its row of `partial` [chunks, C] (rows in order, in f32, the values' sum shifted by the chunk's
// first row so that a large offset costs no precision), and a second functor adds the chunks' rows
// in order; partial and reduced sums are f64. Element passes run row by row with the channels innermost, which keeps the
// per-channel vectors in registers on the host.
#pragma once
#include <cmath>
#include <cstdint>

#include "scaletrain/core/half.hpp"
#include "scaletrain/core/macros.hpp"

namespace scaletrain::kernels {

SCALETRAIN_HOST_DEVICE inline int64_t chunk_end(int64_t chunk, int64_t chunk_rows, int64_t rows) {
  const int64_t end = (chunk + 1) * chunk_rows;
  return end < rows ? end : rows;
}

// i over chunks: partial[i, c] = sum over the chunk's rows of x[r, c].
// The f32 sums accumulate in `acc`, a [chunks, C] scratch of their own.
template <class T>
struct BnChunkSums {
  const T* x;
  float* acc;
  double* partial;
  int64_t rows, channels, chunk_rows;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t i) const {
    float* a = acc + i * channels;
    const int64_t first = i * chunk_rows, end = chunk_end(i, chunk_rows, rows);
    const T* x0 = x + first * channels;
    for (int64_t c = 0; c < channels; ++c) a[c] = 0.0f;
    for (int64_t r = first; r < end; ++r) {
      const T* xr = x + r * channels;
      for (int64_t c = 0; c < channels; ++c) a[c] += to_float(xr[c]) - to_float(x0[c]);
    }
    double* p = partial + i * channels;
    for (int64_t c = 0; c < channels; ++c) p[c] = a[c] + static_cast<double>(end - first) * to_float(x0[c]);
  }
};

// i over chunks: partial[i, c] = sum over the chunk's rows of (x[r, c] - mean[c])^2.
template <class T>
struct BnChunkSquaredDeviations {
  const T* x;
  const float* mean;
  float* acc;
  double* partial;
  int64_t rows, channels, chunk_rows;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t i) const {
    float* a = acc + i * channels;
    for (int64_t c = 0; c < channels; ++c) a[c] = 0.0f;
    for (int64_t r = i * chunk_rows; r < chunk_end(i, chunk_rows, rows); ++r) {
      const T* xr = x + r * channels;
      for (int64_t c = 0; c < channels; ++c) {
        const float d = to_float(xr[c]) - mean[c];
        a[c] += d * d;
      }
    }
    double* p = partial + i * channels;
    for (int64_t c = 0; c < channels; ++c) p[c] = a[c];
  }
};

// The gradient reaching BatchNorm's normalized output at element i: dy, zero where a fused ReLU's
// output y is not positive.
template <class T>
SCALETRAIN_HOST_DEVICE inline float bn_output_gradient(const T* y, const T* dy, int64_t i, bool relu) {
  return relu && !(to_float(y[i]) > 0.0f) ? 0.0f : to_float(dy[i]);
}

// One row's terms of BnChunkGradientSums: pg[c] += g, pgx[c] += g * xhat. The sums are written through
// pointers that alias no input, so that the host compiler vectorizes over the channels.
template <class T>
SCALETRAIN_HOST_DEVICE inline void bn_add_gradient_sums_row(const T* SCALETRAIN_RESTRICT x,
                                                            const T* SCALETRAIN_RESTRICT y,
                                                            const T* SCALETRAIN_RESTRICT dy,
                                                            const float* SCALETRAIN_RESTRICT mean,
                                                            const float* SCALETRAIN_RESTRICT invstd,
                                                            float* SCALETRAIN_RESTRICT pg,
                                                            float* SCALETRAIN_RESTRICT pgx, int64_t channels,
                                                            bool relu) {
  for (int64_t c = 0; c < channels; ++c) {
    const float g = bn_output_gradient(y, dy, c, relu);
    pg[c] += g;
    pgx[c] += g * (to_float(x[c]) - mean[c]) * invstd[c];
  }
}

// i over chunks: partial[i, c] = sum of g and partial[i, C + c] = sum of g * xhat over the chunk's
// rows, where g is bn_output_gradient and xhat = (x - mean) * invstd.
template <class T>
struct BnChunkGradientSums {
  const T* x;
  const T* y;
  const T* dy;
  const float* mean;
  const float* invstd;
  float* acc;
  double* partial;
  int64_t rows, channels, chunk_rows;
  bool relu;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t i) const {
    float* pg = acc + i * 2 * channels;
    float* pgx = pg + channels;
    for (int64_t c = 0; c < channels; ++c) pg[c] = pgx[c] = 0.0f;
    for (int64_t r = i * chunk_rows; r < chunk_end(i, chunk_rows, rows); ++r) {
      const int64_t o = r * channels;
      bn_add_gradient_sums_row(x + o, y + o, dy + o, mean, invstd, pg, pgx, channels, relu);
    }
    double* p = partial + i * 2 * channels;
    for (int64_t c = 0; c < 2 * channels; ++c) p[c] = pg[c];
  }
};

// c over `width` columns: out[c] = sum over chunks of partial[k, c] (partial is [chunks, width]).
struct BnReduceChunks {
  const double* partial;
  double* out;
  int64_t chunks, width;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t c) const {
    double s = 0.0;
    for (int64_t k = 0; k < chunks; ++k) s += partial[k * width + c];
    out[c] = s;
  }
};

// One index: sums[channels] = rows (the count that a sum over ranks turns into the global one).
struct BnSetCount {
  double* sums;
  int64_t channels;
  double rows;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t) const { sums[channels] = rows; }
};

// c over channels: mean[c] = sums[c] / sums[C]; count[0] = sums[C].
struct BnMean {
  const double* sums;
  float* mean;
  float* count;
  int64_t channels;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t c) const {
    mean[c] = static_cast<float>(sums[c] / sums[channels]);
    if (c == 0) count[0] = static_cast<float>(sums[channels]);
  }
};

// c over channels, training: the batch variance from the squared deviations, the normalization's
// scale and shift, and the running statistics (momentum; the unbiased variance, as PyTorch).
struct BnTrainingScale {
  const double* squared_deviations;
  const float* count;
  const float* mean;
  const float* weight;
  const float* bias;
  float* invstd;
  float* scale;
  float* shift;
  float* running_mean;
  float* running_var;
  float momentum, eps;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t c) const {
    const float n = count[0];
    const float var = static_cast<float>(squared_deviations[c] / n);
    const float is = 1.0f / sqrtf(var + eps);
    invstd[c] = is;
    scale[c] = weight[c] * is;
    shift[c] = bias[c] - mean[c] * weight[c] * is;
    const float unbiased = n > 1.0f ? static_cast<float>(squared_deviations[c] / (n - 1.0f)) : var;
    running_mean[c] = (1.0f - momentum) * running_mean[c] + momentum * mean[c];
    running_var[c] = (1.0f - momentum) * running_var[c] + momentum * unbiased;
  }
};

// One index: num_batches_tracked += 1.
struct BnCountBatch {
  int64_t* batches;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t) const { batches[0] += 1; }
};

// c over channels, evaluation: scale and shift from the running statistics.
struct BnEvalScale {
  const float* running_mean;
  const float* running_var;
  const float* weight;
  const float* bias;
  float* scale;
  float* shift;
  float eps;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t c) const {
    const float is = 1.0f / sqrtf(running_var[c] + eps);
    scale[c] = weight[c] * is;
    shift[c] = bias[c] - running_mean[c] * weight[c] * is;
  }
};

// i over a convolution's weights [OC, ...] (filters of `filter_size` values): an evaluation-mode
// BatchNorm after the convolution, y = z * scale + shift per output channel, folded into the filters.
template <class T>
struct BnFoldIntoFilters {
  const T* weight;
  const float* scale;
  T* folded;
  int64_t filter_size;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t i) const {
    folded[i] = from_float<T>(to_float(weight[i]) * scale[i / filter_size]);
  }
};

// c over output channels: the folded convolution's bias, shift + bias * scale (bias null: none).
struct BnFoldIntoBias {
  const float* bias;
  const float* scale;
  const float* shift;
  float* folded;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t c) const {
    folded[c] = bias ? shift[c] + bias[c] * scale[c] : shift[c];
  }
};

// r over rows: y[r, c] = x[r, c] * scale[c] + shift[c], then max(0, .) with a fused ReLU.
template <class T>
struct BnApply {
  const T* x;
  T* y;
  const float* scale;
  const float* shift;
  int64_t channels;
  bool relu;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t r) const {
    const int64_t o = r * channels;
    for (int64_t c = 0; c < channels; ++c) {
      float v = to_float(x[o + c]) * scale[c] + shift[c];
      if (relu) v = v > 0.0f ? v : 0.0f;
      y[o + c] = from_float<T>(v);
    }
  }
};

// c over channels: the affine parameters' gradients from the reduced sums [sum g, sum g * xhat].
struct BnParameterGradients {
  const double* sums;
  float* dweight;
  float* dbias;
  int64_t channels;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t c) const {
    dbias[c] = static_cast<float>(sums[c]);
    dweight[c] = static_cast<float>(sums[channels + c]);
  }
};

// r over rows: dx = weight * invstd * (g - sum_g / n - xhat * sum_gx / n), with g and xhat as in
// BnChunkGradientSums and the sums [sum g, sum g * xhat] over the n rows of the (global) batch.
template <class T>
struct BnBackwardData {
  const T* x;
  const T* y;
  const T* dy;
  T* dx;
  const float* mean;
  const float* invstd;
  const float* weight;
  const double* sums;
  const float* count;
  int64_t channels;
  bool relu;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t r) const {
    const float inv_n = 1.0f / count[0];
    const int64_t o = r * channels;
    for (int64_t c = 0; c < channels; ++c) {
      const float g = bn_output_gradient(y, dy, o + c, relu);
      const float xhat = (to_float(x[o + c]) - mean[c]) * invstd[c];
      const float mean_g = static_cast<float>(sums[c]) * inv_n, mean_gx = static_cast<float>(sums[channels + c]) * inv_n;
      const float v = weight[c] * invstd[c] * (g - mean_g - xhat * mean_gx);
      dx[o + c] = from_float<T>(v);
    }
  }
};

}  // namespace scaletrain::kernels

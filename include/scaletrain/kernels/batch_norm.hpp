// Batch normalization functors over channels-last data [rows, C] stored in T (float, bf16, f16),
// with f32 statistics. The per-channel sums run on the reduction primitive (kernels/reduction.hpp):
// the sources here give its values (x, the squared deviations, the gradient terms) and the sinks
// where its f64 sums go. The element passes take a pack of channels per index (kernels/packs.hpp):
// consecutive device threads on consecutive packs, the channels innermost on the host.
#pragma once
#include <cmath>
#include <cstdint>

#include "scaletrain/core/half.hpp"
#include "scaletrain/core/macros.hpp"
#include "scaletrain/kernels/packs.hpp"
#include "scaletrain/kernels/reduction.hpp"

namespace scaletrain::kernels {

// The values of x [rows, C] for the per-channel sums: the primitive's ColumnValues<T>.

// (x[r, c] - mean[c])^2, for the sums of squared deviations.
template <class T>
struct BnSquaredDeviations {
  static constexpr int kWidth = 1;
  const T* x;
  const float* mean;
  int64_t channels;
  SCALETRAIN_HOST_DEVICE void load(int64_t r, int64_t c, float* v) const {
    const float d = to_float(x[r * channels + c]) - mean[c];
    v[0] = d * d;
  }
};

// The gradient reaching BatchNorm's normalized output at element i: dy, zero where a fused ReLU's
// output y is not positive.
template <class T>
SCALETRAIN_HOST_DEVICE inline float bn_output_gradient(const T* y, const T* dy, int64_t i, bool relu) {
  return relu && !(to_float(y[i]) > 0.0f) ? 0.0f : to_float(dy[i]);
}

// [g, g * xhat] at (r, c), where g is bn_output_gradient and xhat = (x - mean) * invstd: the
// backward pass's per-channel sums.
template <class T>
struct BnGradientTerms {
  static constexpr int kWidth = 2;
  const T* x;
  const T* y;
  const T* dy;
  const float* mean;
  const float* invstd;
  int64_t channels;
  bool relu;
  SCALETRAIN_HOST_DEVICE void load(int64_t r, int64_t c, float* v) const {
    const int64_t i = r * channels + c;
    const float g = bn_output_gradient(y, dy, i, relu);
    v[0] = g;
    v[1] = g * (to_float(x[i]) - mean[c]) * invstd[c];
  }
};

// The sink of the per-channel sums of x: sums[k] = v, and sums[C] = rows (the count that a sum over
// the ranks turns into the global one) with the first channel.
struct BnSumsAndCount {
  double* sums;
  int64_t channels;
  double rows;
  SCALETRAIN_HOST_DEVICE void store(int64_t k, double v) const {
    sums[k] = v;
    if (k == 0) sums[channels] = rows;
  }
};

// The sink of the squared deviations' sums (StoreDouble under a name of its own, so that a device's
// kernel names say BatchNorm).
struct BnSquaredDeviationSums {
  double* sums;
  SCALETRAIN_HOST_DEVICE void store(int64_t k, double v) const { sums[k] = v; }
};

// The sink of the gradient sums [sum g (C), sum g * xhat (C)]: kept in sums for the input's gradient,
// and the affine parameters' gradients (dbias = sum g, dweight = sum g * xhat; this rank's rows).
struct BnGradientSums {
  double* sums;
  float* dweight;
  float* dbias;
  int64_t channels;
  SCALETRAIN_HOST_DEVICE void store(int64_t k, double v) const {
    sums[k] = v;
    if (k < channels) {
      dbias[k] = static_cast<float>(v);
    } else {
      dweight[k - channels] = static_cast<float>(v);
    }
  }
};

// c over channels: mean[c] = sums[c] / sums[C]; count = [sums[C], 1 / sums[C]] (the inverse for the
// element passes, which multiply by it).
struct BnMean {
  const double* sums;
  float* mean;
  float* count;
  int64_t channels;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t c) const { of(c, sums[c], sums[channels]); }
  SCALETRAIN_HOST_DEVICE void of(int64_t c, double sum, double rows) const {
    mean[c] = static_cast<float>(sum / rows);
    if (c == 0) {
      count[0] = static_cast<float>(rows);
      count[1] = 1.0f / count[0];
    }
  }
};

// BnSumsAndCount and BnMean in one: the sink of the per-channel sums of x where no sum over the ranks
// comes between them (one launch less per BatchNorm forward; the same operations).
struct BnSumsToMean {
  BnSumsAndCount sums;
  BnMean mean;  // its sums are not read
  SCALETRAIN_HOST_DEVICE void store(int64_t k, double v) const {
    sums.store(k, v);
    mean.of(k, v, sums.rows);
  }
};

// c over channels, training: the batch variance from the squared deviations, the normalization's
// scale and shift, the running statistics (momentum; the unbiased variance, as PyTorch), and
// num_batches_tracked.
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
  int64_t* batches;  // num_batches_tracked, += 1 (with the first channel)
  float momentum, eps;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t c) const { of(c, squared_deviations[c]); }
  SCALETRAIN_HOST_DEVICE void of(int64_t c, double squared_deviation) const {
    if (c == 0) batches[0] += 1;
    const float n = count[0];
    const float var = static_cast<float>(squared_deviation / n);
    const float is = 1.0f / sqrtf(var + eps);
    invstd[c] = is;
    scale[c] = weight[c] * is;
    shift[c] = bias[c] - mean[c] * weight[c] * is;
    const float unbiased = n > 1.0f ? static_cast<float>(squared_deviation / (n - 1.0f)) : var;
    running_mean[c] = (1.0f - momentum) * running_mean[c] + momentum * mean[c];
    running_var[c] = (1.0f - momentum) * running_var[c] + momentum * unbiased;
  }
};

// BnSquaredDeviationSums and BnTrainingScale in one, where no sum over the ranks comes between them.
struct BnDeviationsToScale {
  BnSquaredDeviationSums sums;
  BnTrainingScale scale;  // its squared_deviations are not read
  SCALETRAIN_HOST_DEVICE void store(int64_t k, double v) const {
    sums.store(k, v);
    scale.of(k, v);
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

// c over channels: scale 1 and shift 0 (the fused residual pass over values the convolution before
// has already normalized: evaluation folded into it).
struct BnIdentityScale {
  float* scale;
  float* shift;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t c) const {
    scale[c] = 1.0f;
    shift[c] = 0.0f;
  }
};

// i over a convolution's weights [OC, ...] (filters of `filter_size` values, OIHW or OHWI: the output
// channel comes first in both): an evaluation-mode
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

// (r, p) over rows x packs of N channels: y = x * scale + shift, then max(0, .) with a fused ReLU.
template <class T, int N>
struct BnApply {
  const T* x;
  T* y;
  const float* scale;
  const float* shift;
  int64_t channels;
  bool relu;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t r, int64_t p) const {
    const int64_t c0 = p * N, o = r * channels + c0;
    float v[N];
    load_pack<T, N>(x + o, v);
    each_in_pack<N>([&](int k) {
      v[k] = v[k] * scale[c0 + k] + shift[c0 + k];
      if (relu) v[k] = v[k] > 0.0f ? v[k] : 0.0f;
    });
    store_pack<T, N>(y + o, v);
  }
};

// (r, p) over rows x packs of N channels: BatchNorm, the residual Add and the ReLU in one pass,
// y = max(0, x * scale + shift + residual).
template <class T, int N>
struct BnApplyAddRelu {
  const T* x;
  const T* residual;
  T* y;
  const float* scale;
  const float* shift;
  int64_t channels;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t r, int64_t p) const {
    const int64_t c0 = p * N, o = r * channels + c0;
    float v[N], s[N];
    load_pack<T, N>(x + o, v);
    load_pack<T, N>(residual + o, s);
    each_in_pack<N>([&](int k) {
      const float z = v[k] * scale[c0 + k] + shift[c0 + k] + s[k];
      v[k] = z > 0.0f ? z : 0.0f;
    });
    store_pack<T, N>(y + o, v);
  }
};

// BatchNorm's input gradient at channel c from g, the gradient reaching its normalized output:
// weight * invstd * (g - sum_g / n - xhat * sum_gx / n), with the sums [sum g (C), sum g * xhat (C)]
// over the n rows of the (global) batch and inv_n = 1 / n.
SCALETRAIN_HOST_DEVICE inline float bn_input_gradient(float g, float x, int64_t c, const float* mean,
                                                      const float* invstd, const float* weight, const double* sums,
                                                      int64_t channels, float inv_n) {
  const float xhat = (x - mean[c]) * invstd[c];
  const float mean_g = static_cast<float>(sums[c]) * inv_n, mean_gx = static_cast<float>(sums[channels + c]) * inv_n;
  return weight[c] * invstd[c] * (g - mean_g - xhat * mean_gx);
}

// (r, p) over rows x packs of N channels: dx = bn_input_gradient of g = dy, masked by y > 0 with a
// fused ReLU (as BnGradientTerms).
template <class T, int N>
struct BnBackwardData {
  const T* x;
  const T* y;
  const T* dy;
  T* dx;
  const float* mean;
  const float* invstd;
  const float* weight;
  const double* sums;
  const float* count;  // [n, 1 / n]
  int64_t channels;
  bool relu;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t r, int64_t p) const {
    const int64_t c0 = p * N, o = r * channels + c0;
    float xv[N], d[N];
    load_pack<T, N>(x + o, xv);
    each_in_pack<N>([&](int k) {
      d[k] = bn_input_gradient(bn_output_gradient(y, dy, o + k, relu), xv[k], c0 + k, mean, invstd, weight, sums,
                               channels, count[1]);
    });
    store_pack<T, N>(dx + o, d);
  }
};

// The same behind a fused residual Add and ReLU (BnApplyAddRelu's y): g = dy where y > 0, else 0,
// and the Add's other input gets g itself.
template <class T, int N>
struct BnBackwardDataResidual {
  const T* x;
  const T* y;
  const T* dy;
  T* dx;
  T* dresidual;
  const float* mean;
  const float* invstd;
  const float* weight;
  const double* sums;
  const float* count;  // [n, 1 / n]
  int64_t channels;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t r, int64_t p) const {
    const int64_t c0 = p * N, o = r * channels + c0;
    float xv[N], yv[N], g[N], d[N];
    load_pack<T, N>(x + o, xv);
    load_pack<T, N>(y + o, yv);
    load_pack<T, N>(dy + o, g);
    each_in_pack<N>([&](int k) {
      g[k] = yv[k] > 0.0f ? g[k] : 0.0f;
      d[k] = bn_input_gradient(g[k], xv[k], c0 + k, mean, invstd, weight, sums, channels, count[1]);
    });
    store_pack<T, N>(dx + o, d);
    store_pack<T, N>(dresidual + o, g);
  }
};

}  // namespace scaletrain::kernels

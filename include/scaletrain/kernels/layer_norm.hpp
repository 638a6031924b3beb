// LayerNorm over the last dimension (torch.nn.LayerNorm(C)) as per-row reductions (kernels/reduction.hpp):
// the forward's mean and biased variance per row of C values, the backward's input gradient per row, and
// the weight and bias gradients as the reduction primitive's column sums over the rows. T is the storage
// type of x, y, dy and dx; the statistics, weights and their gradients are f32.
#pragma once
#include <cmath>
#include <cstdint>

#include "scaletrain/core/half.hpp"
#include "scaletrain/core/macros.hpp"
#include "scaletrain/kernels/reduction.hpp"

namespace scaletrain::kernels {

// y = (x - mean) * rstd * weight + bias per row; the row's mean and rstd = 1 / sqrt(var + eps) saved.
template <class T>
struct LayerNormForward {
  const T* x;
  const float* weight;
  const float* bias;
  T* y;
  float* mean;
  float* rstd;
  int64_t cols;
  float eps;
  template <class Row>
  SCALETRAIN_HOST_DEVICE void operator()(const Row& row) const {
    const T* xr = x + row.r * cols;
    T* yr = y + row.r * cols;
    const float n = static_cast<float>(cols);
    const float mu = row.sum(cols, [&](int64_t k) { return to_float(xr[k]); }) / n;
    const float var = row.sum(cols, [&](int64_t k) {
      const float d = to_float(xr[k]) - mu;
      return d * d;
    }) / n;
    const float rs = 1.0f / sqrtf(var + eps);
    row.for_each(cols, [&](int64_t k) { yr[k] = from_float<T>((to_float(xr[k]) - mu) * rs * weight[k] + bias[k]); });
    if (row.leader()) {
      mean[row.r] = mu;
      rstd[row.r] = rs;
    }
  }
};

// dx = rstd * (g - mean(g) - xhat * mean(g * xhat)) per row, g = dy * weight, xhat = (x - mean) * rstd.
template <class T>
struct LayerNormBackwardData {
  const T* x;
  const T* dy;
  const float* weight;
  const float* mean;
  const float* rstd;
  T* dx;
  int64_t rows, cols;
  template <class Row>
  SCALETRAIN_HOST_DEVICE void operator()(const Row& row) const {
    const T* xr = x + row.r * cols;
    const T* gr = dy + row.r * cols;
    T* dxr = dx + row.r * cols;
    const int64_t r = row.r < rows ? row.r : rows - 1;  // a device's rows past the end read a real row's statistics
    const float mu = mean[r], rs = rstd[r];
    const float n = static_cast<float>(cols);
    const float a = row.sum(cols, [&](int64_t k) { return to_float(gr[k]) * weight[k]; }) / n;
    const float b = row.sum(cols, [&](int64_t k) {
      return to_float(gr[k]) * weight[k] * (to_float(xr[k]) - mu) * rs;
    }) / n;
    row.for_each(cols, [&](int64_t k) {
      const float xhat = (to_float(xr[k]) - mu) * rs;
      dxr[k] = from_float<T>(rs * (to_float(gr[k]) * weight[k] - a - xhat * b));
    });
  }
};

// The column sums' source for the weight and bias gradients: [dy * xhat, dy] per element.
template <class T>
struct LayerNormGradientTerms {
  static constexpr int kWidth = 2;
  const T* x;
  const T* dy;
  const float* mean;
  const float* rstd;
  int64_t cols;
  SCALETRAIN_HOST_DEVICE void load(int64_t r, int64_t c, float* v) const {
    const float g = to_float(dy[r * cols + c]);
    v[0] = g * (to_float(x[r * cols + c]) - mean[r]) * rstd[r];
    v[1] = g;
  }
};

// A sink of two vectors of `cols` sums: k < cols to first[k], the rest to second[k - cols].
struct StoreTwoVectors {
  float* first;
  float* second;
  int64_t cols;
  SCALETRAIN_HOST_DEVICE void store(int64_t k, double v) const {
    if (k < cols)
      first[k] = static_cast<float>(v);
    else
      second[k - cols] = static_cast<float>(v);
  }
};

}  // namespace scaletrain::kernels

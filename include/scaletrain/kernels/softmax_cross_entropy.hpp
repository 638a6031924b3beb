// Softmax cross-entropy: a numerically stable forward per row (probabilities, loss, correctness)
// and the gradient of the logits, (p - onehot) * scale.
#pragma once
#include <cmath>
#include <cstdint>

#include "scaletrain/core/macros.hpp"

namespace scaletrain::kernels {

// i over rows.
struct SoftmaxCrossEntropyForward {
  const float* logits;
  const int32_t* labels;
  float* probs;
  float* loss;
  int32_t* correct;
  int64_t classes;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t i) const {
    const float* z = logits + i * classes;
    float* p = probs + i * classes;
    float mx = z[0];
    int64_t arg = 0;
    for (int64_t k = 1; k < classes; ++k)
      if (z[k] > mx) {
        mx = z[k];
        arg = k;
      }
    float sum = 0.0f;
    for (int64_t k = 0; k < classes; ++k) {
      p[k] = expf(z[k] - mx);
      sum += p[k];
    }
    const float inv = 1.0f / sum;
    for (int64_t k = 0; k < classes; ++k) p[k] *= inv;
    const int32_t y = labels[i];
    loss[i] = logf(sum) - (z[y] - mx);
    correct[i] = arg == y ? 1 : 0;
  }
};

// i over rows * classes.
struct SoftmaxCrossEntropyBackward {
  const float* probs;
  const int32_t* labels;
  float* dlogits;
  int64_t classes;
  float scale;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t i) const {
    const int64_t row = i / classes;
    const int64_t k = i - row * classes;
    dlogits[i] = (probs[i] - (labels[row] == k ? 1.0f : 0.0f)) * scale;
  }
};

// One launch of n = 1: adds a batch's first `rows` losses and correct flags to the running device
// sums (sums[0] += loss, sums[1] += correct, sums[2] += rows), in double, in row order.
struct AccumulateLossSums {
  const float* loss;
  const int32_t* correct;
  int64_t rows;
  double* sums;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t) const {
    double l = 0;
    int64_t c = 0;
    for (int64_t r = 0; r < rows; ++r) {
      l += loss[r];
      c += correct[r];
    }
    sums[0] += l;
    sums[1] += static_cast<double>(c);
    sums[2] += static_cast<double>(rows);
  }
};

}  // namespace scaletrain::kernels

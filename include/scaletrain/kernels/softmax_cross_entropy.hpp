// Softmax cross-entropy: a numerically stable forward per row (probabilities, loss, correctness) on
// the per-row reductions, the gradient of the logits, (p - onehot) * scale, and the loss sums' source.
#pragma once
#include <cmath>
#include <cstdint>

#include "scaletrain/core/macros.hpp"
#include "scaletrain/kernels/reduction.hpp"

namespace scaletrain::kernels {

// A per-row reduction (kernels/reduction.hpp) over rows of `classes` logits: the maximum and its
// class, the sum of exp(z - max), then the probabilities, and the leader's loss and correctness.
struct SoftmaxCrossEntropyForward {
  const float* logits;
  const int32_t* labels;
  float* probs;
  float* loss;
  int32_t* correct;
  int64_t classes;
  template <class Row>
  SCALETRAIN_HOST_DEVICE void operator()(const Row& row) const {
    const int64_t i = row.r;
    const float* z = logits + i * classes;
    float* p = probs + i * classes;
    const MaxArg m = row.max_arg(classes, [&](int64_t k) { return z[k]; });
    const float sum = row.sum(classes, [&](int64_t k) { return expf(z[k] - m.value); });
    const float inv = 1.0f / sum;
    row.for_each(classes, [&](int64_t k) { p[k] = expf(z[k] - m.value) * inv; });
    if (row.leader()) {
      const int32_t y = labels[i];
      loss[i] = logf(sum) - (z[y] - m.value);
      correct[i] = m.index == y ? 1 : 0;
    }
  }
};

// i over rows * classes. The factor is `scale`, or, where `loss_scale` (fp16's dynamic loss scale in
// device memory) is given, scale * loss_scale / divisor.
struct SoftmaxCrossEntropyBackward {
  const float* probs;
  const int32_t* labels;
  float* dlogits;
  int64_t classes;
  float scale;
  const double* loss_scale = nullptr;
  float divisor = 1.0f;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t i) const {
    const int64_t row = i / classes;
    const int64_t k = i - row * classes;
    const float factor = loss_scale ? scale * static_cast<float>(*loss_scale) / divisor : scale;
    dlogits[i] = (probs[i] - (labels[row] == k ? 1.0f : 0.0f)) * factor;
  }
};

// The reduction primitive's source for the loss sums: [loss, correct, 1] per row, which an AddDouble
// sink adds to the running device sums (sums[0] += loss, sums[1] += correct, sums[2] += rows); an
// AddDoubleUnless sink adds nothing where its flag (this rank's inf/NaN loss mark) is set.
struct LossTerms {
  static constexpr int kWidth = 3;
  const float* loss;
  const int32_t* correct;
  SCALETRAIN_HOST_DEVICE void load(int64_t r, int64_t, float* v) const {
    v[0] = loss[r];
    v[1] = static_cast<float>(correct[r]);
    v[2] = 1.0f;
  }
};

}  // namespace scaletrain::kernels

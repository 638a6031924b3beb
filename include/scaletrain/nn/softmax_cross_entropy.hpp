// SoftmaxCrossEntropy: the loss over logits [N, classes] and int32 labels [N]; forward gives the
// mean loss and the number of correct predictions, backward the gradient of the logits.
#pragma once
#include <cstdint>

#include "scaletrain/core/tensor.hpp"

namespace scaletrain::nn {

struct LossResult {
  double loss_sum = 0;    // sum over the batch of -log p[label]
  int64_t correct = 0;    // argmax == label
  int64_t count = 0;      // rows
  double mean_loss() const { return count ? loss_sum / static_cast<double>(count) : 0.0; }
};

class SoftmaxCrossEntropy {
 public:
  void build(int64_t batch, int64_t classes);
  // Labels outside [0, classes) are rejected with an Error naming the row and value. Only the
  // first `counted_rows` rows (all when negative) enter the sums: evaluation pads the last batch.
  LossResult forward(const Tensor& logits, const Tensor& labels, int64_t counted_rows = -1);
  // d(loss)/d(logits) of sum(loss) * scale; scale = 1 / global batch gives the gradient of the mean.
  const Tensor& backward(float scale);

 private:
  int64_t batch_ = 0, classes_ = 0;
  Tensor probs_, loss_, correct_, dlogits_;
  Tensor labels_ref_;
};

}  // namespace scaletrain::nn

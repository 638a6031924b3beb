// SoftmaxCrossEntropy: the loss over logits [N, classes] and int32 labels [N] on the compute
// stream. forward computes per-row losses and correctness on the device; accumulate adds them to
// device-side sums that the trainer reads back once per logging interval; backward gives the
// gradient of the logits.
#pragma once
#include <cstdint>

#include "scaletrain/backend/backend.hpp"
#include "scaletrain/core/tensor.hpp"

namespace scaletrain::nn {

struct LossResult {
  double loss_sum = 0;  // sum over the counted rows of -log p[label]
  int64_t correct = 0;  // argmax == label
  int64_t count = 0;    // rows
  double mean_loss() const { return count ? loss_sum / static_cast<double>(count) : 0.0; }
};

// Device sums: f64 [3] = loss, correct, rows.
constexpr int64_t kLossSumsSize = 3;

class SoftmaxCrossEntropy {
 public:
  void build(Backend& backend, int64_t batch, int64_t classes);
  // Per-row probabilities, losses and correctness. Labels outside [0, classes) are rejected with
  // an Error naming the row and value when they are on the host (the loader checks them before
  // they travel to a device).
  void forward(const Tensor& logits, const Tensor& labels);
  // sums (f64 [3] on the device) += the first `counted_rows` rows (all when negative) of the last
  // forward: evaluation pads the last batch.
  void accumulate(const Tensor& sums, int64_t counted_rows = -1);
  // The same for training steps: nothing is added where *unless > 0 (device memory: this rank's
  // inf/NaN loss mark, which would poison the interval's mean).
  void accumulate_unless(const Tensor& sums, const double* unless);
  // d(loss)/d(logits) of sum(loss) * scale; scale = 1 / global batch gives the gradient of the mean.
  const Tensor& backward(float scale);
  // The same with scale * *loss_scale / divisor, the loss scale read where the device keeps it (fp16).
  const Tensor& backward(float scale, const double* loss_scale, float divisor);

  // The last forward's per-row losses (f32 [N] on the device).
  const Tensor& row_losses() const { return loss_; }

  // forward + accumulate into fresh sums, read back to the host (synchronizes; for tests and tools).
  LossResult forward_and_read(const Tensor& logits, const Tensor& labels, int64_t counted_rows = -1);
  // Copies device sums to the host and synchronizes the compute stream.
  static LossResult read_sums(Backend& backend, const Tensor& sums);

 private:
  template <class Sink>
  void accumulate_into(const Tensor& sums, int64_t rows, const Sink& sink);
  Backend* backend_ = nullptr;
  int64_t batch_ = 0, classes_ = 0;
  Tensor probs_, loss_, correct_, dlogits_, scratch_sums_;
  Tensor sums_partial_;  // f64: the loss sums' partial sums (two-pass plans)
  Tensor labels_ref_;
};

}  // namespace scaletrain::nn

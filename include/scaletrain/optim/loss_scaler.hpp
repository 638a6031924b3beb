// LossScaler: dynamic loss scaling for fp16 training, with torch.cuda.amp.GradScaler's rules and
// defaults. The loss (its gradient) is multiplied by scale() before backward; after the gradients
// are reduced, unscaled and checked, update() is told whether any rank found an inf or NaN. A step
// with one is skipped and the scale backs off; after `interval` clean steps in a row the scale grows.
// Every rank must pass update() the same flag (the trainer agrees on it across ranks), so every
// replica skips the same steps and holds the same scale. Disabled (fp32, bf16), the scale is 1 and
// a step with inf/NaN is still skipped and counted (train.on_nonfinite = skip).
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "scaletrain/backend/backend.hpp"

namespace scaletrain::optim {

struct LossScalerOptions {
  bool enabled = true;      // false: scale() is 1 and never changes
  double init = 65536.0;    // 2^16, GradScaler's init_scale
  double growth = 2.0;      // growth_factor
  double backoff = 0.5;     // backoff_factor
  int64_t interval = 2000;  // growth_interval
};

class LossScaler {
 public:
  // Throws Error naming the key on invalid options (init <= 0, growth <= 1, backoff outside (0, 1),
  // interval < 1).
  explicit LossScaler(const LossScalerOptions& options);

  bool enabled() const { return o_.enabled; }
  float scale() const { return o_.enabled ? static_cast<float>(scale_) : 1.0f; }
  // Applies the outcome of one step's check; returns true when the step's update should be applied.
  bool update(bool found_nonfinite);
  int64_t skipped_steps() const { return skipped_; }
  int64_t clean_steps_in_a_row() const { return tracker_; }
  // The raw scale (also when disabled) and, for a checkpoint's resume, all three counters back.
  double raw_scale() const { return scale_; }
  void restore(double scale, int64_t clean_steps_in_a_row, int64_t skipped_steps);

 private:
  LossScalerOptions o_;
  double scale_;
  int64_t tracker_ = 0;
  int64_t skipped_ = 0;
};

// What queue_nonfinite_verdict keeps on the device between calls, made on first use and again
// when the tensors change: the reduction's partial sums and the segment tables of [the gradients'
// tensors | the losses] (kernels/segment_sums.hpp) with the host copy they are queued from.
struct VerdictScratch {
  Tensor partial;
  Tensor tables;
  Tensor tables_host;
  std::vector<int64_t> offsets;  // the segments the tables are for
};
// Queues on the compute stream, reading nothing back, this rank's inf/NaN verdict (kernels/
// step_state.hpp's layout) into `verdict` (f64 [tensors + 2]): the count of each tensor of grads
// (f32; `tensor_offsets`: the tensors' first elements and, last, grads' length) and `loss_mark` where
// `losses` (f32 per-row losses; may be null) hold inf/NaN, on one per-segment sum. fp16's gradients
// are counted as they are, scaled, as PyTorch's fused optimizers do: with a scale of at least 1 the
// unscaled value of a finite gradient is finite; the optimizer unscales them.
void queue_nonfinite_verdict(Backend& backend, const Tensor& grads, std::span<const int64_t> tensor_offsets,
                             const Tensor* losses, double loss_mark, const Tensor& verdict, VerdictScratch& scratch);

}  // namespace scaletrain::optim

// LossScaler's state machine (torch.cuda.amp.GradScaler's _amp_update_scale_) and the unscale-and-
// check of the reduced gradients.
#include "scaletrain/optim/loss_scaler.hpp"

#include <cmath>

#include "scaletrain/backend/launch.hpp"
#include "scaletrain/core/error.hpp"
#include "scaletrain/kernels/scale.hpp"

namespace scaletrain::optim {

LossScaler::LossScaler(const LossScalerOptions& o) : o_(o), scale_(o.init) {
  ST_CHECK(o.init > 0 && std::isfinite(o.init), "optimizer.loss_scale_init must be positive and finite, got ",
           o.init);
  ST_CHECK(o.growth > 1.0, "optimizer.loss_scale_growth must be > 1, got ", o.growth);
  ST_CHECK(o.backoff > 0.0 && o.backoff < 1.0, "optimizer.loss_scale_backoff must be in (0, 1), got ", o.backoff);
  ST_CHECK(o.interval >= 1, "optimizer.loss_scale_interval must be >= 1, got ", o.interval);
}

void LossScaler::restore(double scale, int64_t clean_steps_in_a_row, int64_t skipped_steps) {
  ST_CHECK(scale > 0 && std::isfinite(scale), "loss scaler: restored scale must be positive and finite, got ", scale);
  ST_CHECK(clean_steps_in_a_row >= 0 && skipped_steps >= 0, "loss scaler: restored counters must be >= 0");
  scale_ = scale;
  tracker_ = clean_steps_in_a_row;
  skipped_ = skipped_steps;
}

bool LossScaler::update(bool found_nonfinite) {
  if (!o_.enabled) return true;
  if (found_nonfinite) {
    scale_ *= o_.backoff;
    tracker_ = 0;
    ++skipped_;
    return false;
  }
  if (++tracker_ == o_.interval) {
    const double grown = scale_ * o_.growth;
    if (std::isfinite(static_cast<float>(grown))) scale_ = grown;  // as GradScaler: never grow to inf
    tracker_ = 0;
  }
  return true;
}

bool unscale_and_find_nonfinite(Backend& backend, const Tensor& grads, float scale, Tensor& scratch) {
  constexpr int64_t kPerBlock = 1 << 16;
  const int64_t n = grads.numel();
  const int64_t blocks = (n + kPerBlock - 1) / kPerBlock;
  if (blocks == 0) return false;
  if (scratch.numel() != blocks) scratch = backend.empty({blocks}, DType::i32, "loss scaler non-finite counts");
  Stream& s = backend.compute_stream();
  float* g = grads.device_data<float>();
  if (scale != 1.0f) launch(s, "unscale_gradients", n, kernels::Scale{g, 1.0f / scale});
  launch(s, "count_nonfinite", blocks, kernels::CountNonFinite{g, n, kPerBlock, scratch.device_data<int32_t>()});
  const Tensor counts = backend.download(scratch);
  int64_t bad = 0;
  for (int64_t b = 0; b < blocks; ++b) bad += counts.data<int32_t>()[b];
  return bad > 0;
}

}  // namespace scaletrain::optim

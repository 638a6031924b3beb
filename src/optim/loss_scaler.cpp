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
  if (!o_.enabled) {
    if (found_nonfinite) ++skipped_;
    return !found_nonfinite;
  }
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

NonFiniteCounts unscale_and_count_nonfinite(Backend& backend, const Tensor& grads, float scale, const Tensor* losses,
                                            Tensor& scratch) {
  constexpr int64_t kPerBlock = 1 << 16;
  const int64_t n = grads.numel(), n_loss = losses ? losses->numel() : 0;
  const int64_t blocks = (n + kPerBlock - 1) / kPerBlock, loss_blocks = (n_loss + kPerBlock - 1) / kPerBlock;
  if (blocks + loss_blocks == 0) return {};
  if (scratch.numel() != blocks + loss_blocks)
    scratch = backend.empty({blocks + loss_blocks}, DType::i32, "non-finite counts");
  Stream& s = backend.compute_stream();
  int32_t* counts = scratch.device_data<int32_t>();
  float* g = grads.device_data<float>();
  if (scale != 1.0f && n > 0) launch(s, "unscale_gradients", n, kernels::Scale{g, 1.0f / scale});
  if (blocks > 0) launch(s, "count_nonfinite", blocks, kernels::CountNonFinite{g, n, kPerBlock, counts});
  if (loss_blocks > 0)
    launch(s, "count_nonfinite_loss", loss_blocks,
           kernels::CountNonFinite{losses->device_data<float>(), n_loss, kPerBlock, counts + blocks});
  const Tensor host = backend.download(scratch);
  NonFiniteCounts c;
  for (int64_t b = 0; b < blocks + loss_blocks; ++b) (b < blocks ? c.gradients : c.losses) += host.data<int32_t>()[b];
  return c;
}

}  // namespace scaletrain::optim

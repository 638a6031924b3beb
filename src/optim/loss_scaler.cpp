// LossScaler's state machine (torch.cuda.amp.GradScaler's _amp_update_scale_) and the unscale-and-
// check of the reduced gradients.
#include "scaletrain/optim/loss_scaler.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

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

namespace {

// The segment tables of [gradients | losses] under `plan`, queued to the device where the sizes changed.
void refresh_tables(Backend& backend, const kernels::SegmentSumsPlan& plan, const std::vector<int64_t>& offsets,
                    NonFiniteScratch& scratch) {
  if (scratch.gradients == offsets[1] && scratch.losses == offsets[2] - offsets[1]) return;
  const std::vector<int64_t> table = kernels::segment_tables(plan, offsets);
  const int64_t n = static_cast<int64_t>(table.size());
  scratch.tables_host = Tensor({n}, DType::i64, "non-finite segment tables (host)");
  std::copy(table.begin(), table.end(), scratch.tables_host.data<int64_t>());
  scratch.tables = backend.empty({n}, DType::i64, "non-finite segment tables");
  backend.copy_async(backend.compute_stream(), scratch.tables, scratch.tables_host);
  scratch.sums = backend.empty({2 + plan.partial_size()}, DType::f64, "non-finite counts");
  scratch.gradients = offsets[1];
  scratch.losses = offsets[2] - offsets[1];
}

}  // namespace

NonFiniteCounts unscale_and_count_nonfinite(Backend& backend, const Tensor& grads, float scale, const Tensor* losses,
                                            NonFiniteScratch& scratch) {
  const int64_t n = grads.numel(), n_loss = losses ? losses->numel() : 0;
  if (n + n_loss == 0) return {};
  const std::vector<int64_t> offsets{0, n, n + n_loss};
  const kernels::SegmentSumsPlan plan = kernels::plan_segment_sums(offsets, 1, backend.multiprocessor_count());
  refresh_tables(backend, plan, offsets, scratch);
  Stream& s = backend.compute_stream();
  double* counts = scratch.sums.device_data<double>();
  float* g = grads.device_data<float>();
  if (scale != 1.0f && n > 0) launch_elements(s, "unscale_gradients", n, kernels::Scale{g, 1.0f / scale});
  launch_segment_sums(s, "count_nonfinite", plan,
                      kernels::SegmentTables::in(scratch.tables.device_data<int64_t>(), plan.segments),
                      kernels::NonFiniteFlags{g, n, losses ? losses->device_data<float>() : nullptr}, counts + 2,
                      kernels::StoreDouble{counts});
  const Tensor host = backend.download(scratch.sums.view(0, {2}));
  return {static_cast<int64_t>(host.data<double>()[0]), static_cast<int64_t>(host.data<double>()[1])};
}

}  // namespace scaletrain::optim

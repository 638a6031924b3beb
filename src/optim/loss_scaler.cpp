// LossScaler's state machine (torch.cuda.amp.GradScaler's _amp_update_scale_, the device's DecideStep
// run on the host), and the inf/NaN verdict of the reduced gradients queued on the device.
#include "scaletrain/optim/loss_scaler.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "scaletrain/backend/launch.hpp"
#include "scaletrain/core/error.hpp"
#include "scaletrain/kernels/scale.hpp"
#include "scaletrain/kernels/step_state.hpp"

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

// The device's decision (kernels::DecideStep) made on the host: one implementation of GradScaler's rules.
bool LossScaler::update(bool found_nonfinite) {
  kernels::StepState s;
  s.loss_scale = scale_;
  s.clean_steps = static_cast<double>(tracker_);
  s.skipped_steps = static_cast<double>(skipped_);
  kernels::StepRules rules;
  rules.scaler_enabled = o_.enabled;
  rules.growth = o_.growth;
  rules.backoff = o_.backoff;
  rules.growth_interval = o_.interval;
  const double verdict[2] = {found_nonfinite ? 1.0 : 0.0, 0.0};
  kernels::DecideStep{&s, verdict, kernels::VerdictLayout{0}, rules}(0);
  scale_ = s.loss_scale;
  tracker_ = static_cast<int64_t>(s.clean_steps);
  skipped_ = static_cast<int64_t>(s.skipped_steps);
  return s.skip == 0;
}

namespace {

// The segment tables of [gradients' tensors | losses] under `plan`, queued to the device where the
// segments changed.
void refresh_tables(Backend& backend, const kernels::SegmentSumsPlan& plan, const std::vector<int64_t>& offsets,
                    VerdictScratch& scratch) {
  if (scratch.offsets == offsets) return;
  const std::vector<int64_t> table = kernels::segment_tables(plan, offsets);
  const int64_t n = static_cast<int64_t>(table.size());
  scratch.tables_host = Tensor({n}, DType::i64, "non-finite segment tables (host)");
  std::copy(table.begin(), table.end(), scratch.tables_host.data<int64_t>());
  scratch.tables = backend.empty({n}, DType::i64, "non-finite segment tables");
  backend.copy_async(backend.compute_stream(), scratch.tables, scratch.tables_host);
  scratch.partial = backend.empty({std::max<int64_t>(1, plan.partial_size())}, DType::f64, "non-finite partial counts");
  scratch.offsets = offsets;
}

}  // namespace

void queue_nonfinite_verdict(Backend& backend, const Tensor& grads, std::span<const int64_t> tensor_offsets,
                             const Tensor* losses, double loss_mark, const Tensor& verdict, VerdictScratch& scratch) {
  const int64_t n = grads.numel(), n_loss = losses ? losses->numel() : 0;
  const kernels::VerdictLayout layout{static_cast<int64_t>(tensor_offsets.size()) - 1};
  ST_CHECK(layout.tensors >= 1 && tensor_offsets.front() == 0 && tensor_offsets.back() == n,
           "the inf/NaN verdict's tensors must cover the ", n, " gradients from element 0");
  ST_CHECK(verdict.dtype() == DType::f64 && verdict.numel() == layout.size(), "the inf/NaN verdict '", verdict.name(),
           "' must be f64 [", layout.size(), "]");
  std::vector<int64_t> offsets(tensor_offsets.begin(), tensor_offsets.end());
  offsets.push_back(n + n_loss);
  const kernels::SegmentSumsPlan plan = kernels::plan_segment_sums(offsets, 1, backend.multiprocessor_count());
  refresh_tables(backend, plan, offsets, scratch);
  Stream& s = backend.compute_stream();
  const float* g = grads.device_data<float>();
  launch_segment_sums(s, "count_nonfinite", plan,
                      kernels::SegmentTables::in(scratch.tables.device_data<int64_t>(), plan.segments),
                      kernels::NonFiniteFlags{g, n, layout.tensors, losses ? losses->device_data<float>() : nullptr},
                      scratch.partial.device_data<double>(),
                      kernels::StoreVerdict{verdict.device_data<double>(), layout, loss_mark});
}

}  // namespace scaletrain::optim

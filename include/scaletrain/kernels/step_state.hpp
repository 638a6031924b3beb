// The training step's state in device memory, so that a step's update is decided and parametrized
// without the host: the agreed inf/NaN verdict, the loss scale with torch.cuda.amp.GradScaler's
// counters, the updates applied (AdamW's t), the learning rate and the bias corrections. The
// functors that keep it: the count sink that turns a rank's inf/NaN loss into its mark, and
// DecideStep, which reads the verdict all-reduced across ranks and advances the state once per step.
// The host reads the state back one or more steps later (train/device_step_state.hpp).
#pragma once
#include <cmath>
#include <cstdint>

#include "scaletrain/core/half.hpp"
#include "scaletrain/core/macros.hpp"
#include "scaletrain/kernels/lr_curve.hpp"

namespace scaletrain::kernels {

struct StepState {
  // Carried from step to step.
  double step = 0;           // the global step (from 0) that the next DecideStep closes
  double loss_scale = 1;     // the raw dynamic loss scale (optim::LossScaler::raw_scale)
  double clean_steps = 0;    // GradScaler's growth tracker: clean steps in a row
  double skipped_steps = 0;  // steps whose update was skipped for inf/NaN
  double updates = 0;        // optimizer updates applied
  // The closed step's, written by DecideStep and read by the optimizer's update.
  float lr = 0;
  float unscale = 1;           // 1 / the loss scale the step's gradients carry (fp16)
  float bias_correction1 = 1;  // 1 - beta1^updates (AdamW)
  float bias_correction2 = 1;  // 1 - beta2^updates
  int32_t skip = 0;            // inf/NaN somewhere: every rank skips the update
  int32_t first_update = 0;    // no update was applied before this one (SGD's momentum starts)
  int32_t padding = 0;
};
// The f64 elements a StepState takes in a device buffer.
inline constexpr int64_t kStepStateDoubles = (sizeof(StepState) + sizeof(double) - 1) / sizeof(double);

// The verdict a rank contributes and every rank receives (all-reduced with MAX), f64:
// [one inf/NaN count per parameter tensor | the loss mark | the injected flag]. The loss mark is
// world - rank where this rank's loss held inf/NaN (MAX: the lowest such rank), else 0; the
// injected flag is testing.inject_overflow_*'s.
struct VerdictLayout {
  int64_t tensors = 0;
  SCALETRAIN_HOST_DEVICE int64_t loss_mark() const { return tensors; }
  SCALETRAIN_HOST_DEVICE int64_t injected() const { return tensors + 1; }
  SCALETRAIN_HOST_DEVICE int64_t size() const { return tensors + 2; }
};

// The per-segment sums' sink of the inf/NaN count over [the gradients' tensors | the row losses]:
// each tensor's count as it is, the losses' as this rank's mark, and the injected flag cleared.
struct StoreVerdict {
  double* out;
  VerdictLayout layout;
  double loss_mark;  // world - rank
  SCALETRAIN_HOST_DEVICE void store(int64_t k, double v) const {
    if (k < layout.tensors) {
      out[k] = v;
      return;
    }
    out[layout.loss_mark()] = v > 0 ? loss_mark : 0.0;
    out[layout.injected()] = 0.0;
  }
};

// One element: *out = value (testing.inject_overflow_*'s flag, testing.inject_inf_loss_*'s logit).
template <class T>
struct SetValue {
  T* out;
  T value;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t) const { *out = value; }
};

// What DecideStep needs besides the state: the schedule, GradScaler's options (scaler off: the scale
// stays, a flagged step is only skipped and counted), AdamW's betas (0 for other optimizers).
struct StepRules {
  LrCurve lr;
  bool scaler_enabled = false;
  double growth = 2.0, backoff = 0.5;
  int64_t growth_interval = 2000;
  float beta1 = 0, beta2 = 0;
};

// One element, after the verdict's all-reduce: the step's skip, learning rate, bias corrections and
// loss-scale update (GradScaler's _amp_update_scale_), then the next step. The host runs it too
// (LossScaler::update, Optimizer::step); the learning rate is LrSchedule::lr's formula.
struct DecideStep {
  StepState* state;
  const double* verdict;
  VerdictLayout layout;
  StepRules rules;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t) const {
    StepState& s = *state;
    bool nonfinite = false;
    for (int64_t k = 0; k < layout.size(); ++k) nonfinite = nonfinite || verdict[k] > 0;
    s.lr = lr_at(rules.lr, static_cast<int64_t>(s.step));
    s.unscale = 1.0f / static_cast<float>(s.loss_scale);
    s.skip = nonfinite ? 1 : 0;
    s.first_update = s.updates == 0 ? 1 : 0;
    if (nonfinite) {
      s.skipped_steps += 1;
      if (rules.scaler_enabled) {
        s.loss_scale *= rules.backoff;
        s.clean_steps = 0;
      }
    } else {
      s.updates += 1;
      if (rules.scaler_enabled && ++s.clean_steps == static_cast<double>(rules.growth_interval)) {
        const double grown = s.loss_scale * rules.growth;
        if ((float_bits(static_cast<float>(grown)) & 0x7f800000u) != 0x7f800000u) s.loss_scale = grown;
        s.clean_steps = 0;
      }
    }
    s.bias_correction1 = static_cast<float>(1.0 - pow(static_cast<double>(rules.beta1), s.updates));
    s.bias_correction2 = static_cast<float>(1.0 - pow(static_cast<double>(rules.beta2), s.updates));
    s.step += 1;
  }
};

}  // namespace scaletrain::kernels

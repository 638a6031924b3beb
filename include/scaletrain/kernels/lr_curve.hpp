// The learning rate as a function of the step, written once for host and device: a linear warm-up
// (torch.optim.lr_scheduler.LinearLR), then constant, step decay (StepLR), cosine
// (CosineAnnealingLR, closed form) or polynomial decay to min_lr (MLPerf's ResNet-50 LARS schedule;
// torch's PolynomialLR where min_lr is 0), counted from the end of the warm-up. optim::LrSchedule checks
// the options and calls it on the host; the device's step state (kernels/step_state.hpp) calls it
// with the step it holds, so a step's learning rate is never a kernel argument.
#pragma once
#include <cmath>
#include <cstdint>

#include "scaletrain/core/macros.hpp"

namespace scaletrain::kernels {

// The options as doubles (each the value of the float option it comes from).
struct LrCurve {
  enum Kind : int32_t { constant = 0, step = 1, cosine = 2, poly = 3 };
  int32_t kind = constant;
  double base_lr = 0.1;
  int64_t warmup_steps = 0;
  double warmup_start_factor = 0;
  int64_t step_size = 0;
  double gamma = 0.1;
  int64_t total_steps = 0;
  double min_lr = 0;
  double power = 2;  // poly
};

SCALETRAIN_HOST_DEVICE inline float lr_at(const LrCurve& c, int64_t step) {
  if (step < 0) step = 0;
  const double base = c.base_lr;
  if (step < c.warmup_steps) {
    const double f = c.warmup_start_factor +
                     (1.0 - c.warmup_start_factor) * static_cast<double>(step) / static_cast<double>(c.warmup_steps);
    return static_cast<float>(base * f);
  }
  const int64_t t = step - c.warmup_steps;
  if (c.kind == LrCurve::step) {
    if (c.step_size <= 0) return static_cast<float>(base);
    return static_cast<float>(base * pow(c.gamma, static_cast<double>(t / c.step_size)));
  }
  if (c.kind == LrCurve::poly) {
    const double span = static_cast<double>(c.total_steps - c.warmup_steps);
    const double x = (static_cast<double>(t) < span ? static_cast<double>(t) : span) / span;
    return static_cast<float>(c.min_lr + (base - c.min_lr) * pow(1.0 - x, c.power));
  }
  if (c.kind == LrCurve::cosine) {
    constexpr double kPi = 3.141592653589793238462643383279502884;
    const double span = static_cast<double>(c.total_steps - c.warmup_steps);
    const double x = (static_cast<double>(t) < span ? static_cast<double>(t) : span) / span;
    return static_cast<float>(c.min_lr + (base - c.min_lr) * 0.5 * (1.0 + cos(kPi * x)));
  }
  return static_cast<float>(base);
}

}  // namespace scaletrain::kernels

// Learning-rate schedules (constant, step, cosine, poly) with an optional linear warm-up, and the
// linear scaling rule of Goyal et al. for large global batches.
#pragma once
#include <cstdint>
#include <string>

#include "scaletrain/kernels/lr_curve.hpp"

namespace scaletrain::optim {

enum class LrScheduleKind { constant, step, cosine, poly };
LrScheduleKind parse_lr_schedule_kind(const std::string& name);  // Error naming the accepted ones
std::string lr_schedule_kind_name(LrScheduleKind k);

struct LrScheduleOptions {
  LrScheduleKind kind = LrScheduleKind::constant;
  float base_lr = 0.1f;
  int64_t warmup_steps = 0;          // linear ramp from warmup_start_factor*base_lr to base_lr
  float warmup_start_factor = 0.0f;  // lr at step 0 of the warm-up, as a fraction of base_lr
  int64_t step_size = 0;             // step: multiply by gamma every step_size steps (0: never)
  float gamma = 0.1f;
  int64_t total_steps = 0;  // cosine, poly: decay from base_lr to min_lr over [warmup_steps, total_steps)
  float min_lr = 0.0f;
  float power = 2.0f;  // poly: (1 - t / T)^power
};

class LrSchedule {
 public:
  // Throws Error on inconsistent options.
  explicit LrSchedule(LrScheduleOptions options);
  // The learning rate of (0-based) optimizer step `step`.
  float lr(int64_t step) const;
  // The options as the formula's (kernels/lr_curve.hpp), for the device's step state.
  kernels::LrCurve curve() const;
  const LrScheduleOptions& options() const { return o_; }

 private:
  LrScheduleOptions o_;
};

// base_lr * global_batch / reference_batch.
float linear_scaled_lr(float base_lr, int64_t global_batch, int64_t reference_batch);

}  // namespace scaletrain::optim

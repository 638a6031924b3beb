// Learning-rate schedules. Warm-up follows torch.optim.lr_scheduler.LinearLR (start factor to 1
// over warmup_steps); after it, step decay as StepLR, cosine as CosineAnnealingLR (closed form) and
// poly as PolynomialLR with an end rate (min_lr), counted from the end of the warm-up.
#include "scaletrain/optim/lr_schedule.hpp"

#include "scaletrain/core/error.hpp"

namespace scaletrain::optim {

LrScheduleKind parse_lr_schedule_kind(const std::string& name) {
  if (name == "constant") return LrScheduleKind::constant;
  if (name == "step") return LrScheduleKind::step;
  if (name == "cosine") return LrScheduleKind::cosine;
  if (name == "poly") return LrScheduleKind::poly;
  ST_FAIL("unknown learning-rate schedule '", name, "': use constant, step, cosine or poly");
}

std::string lr_schedule_kind_name(LrScheduleKind k) {
  switch (k) {
    case LrScheduleKind::constant: return "constant";
    case LrScheduleKind::step: return "step";
    case LrScheduleKind::cosine: return "cosine";
    case LrScheduleKind::poly: return "poly";
  }
  return "?";
}

LrSchedule::LrSchedule(LrScheduleOptions options) : o_(std::move(options)) {
  ST_CHECK(o_.base_lr > 0.0f, "the learning rate must be > 0, got ", o_.base_lr);
  ST_CHECK(o_.warmup_steps >= 0, "warm-up steps must be >= 0");
  ST_CHECK(o_.warmup_start_factor >= 0.0f && o_.warmup_start_factor <= 1.0f,
           "the warm-up start factor must be in [0, 1], got ", o_.warmup_start_factor);
  const bool decays = o_.kind == LrScheduleKind::cosine || o_.kind == LrScheduleKind::poly;
  ST_CHECK(!decays || o_.total_steps > o_.warmup_steps, "the ", lr_schedule_kind_name(o_.kind),
           " schedule needs total steps (", o_.total_steps, ") beyond the warm-up (", o_.warmup_steps, ")");
  ST_CHECK(o_.kind != LrScheduleKind::poly || o_.power > 0.0f, "the poly schedule's power must be > 0, got ", o_.power);
  ST_CHECK(o_.kind != LrScheduleKind::step || o_.step_size >= 0, "the step schedule needs step_size >= 0");
  ST_CHECK(o_.min_lr >= 0.0f && o_.min_lr <= o_.base_lr, "min_lr must be in [0, base_lr]");
}

float LrSchedule::lr(int64_t step) const { return kernels::lr_at(curve(), step); }

kernels::LrCurve LrSchedule::curve() const {
  kernels::LrCurve c;
  c.kind = o_.kind == LrScheduleKind::step     ? kernels::LrCurve::step
           : o_.kind == LrScheduleKind::cosine ? kernels::LrCurve::cosine
           : o_.kind == LrScheduleKind::poly   ? kernels::LrCurve::poly
                                               : kernels::LrCurve::constant;
  c.base_lr = o_.base_lr;
  c.warmup_steps = o_.warmup_steps;
  c.warmup_start_factor = o_.warmup_start_factor;
  c.step_size = o_.step_size;
  c.gamma = o_.gamma;
  c.total_steps = o_.total_steps;
  c.min_lr = o_.min_lr;
  c.power = o_.power;
  return c;
}

float linear_scaled_lr(float base_lr, int64_t global_batch, int64_t reference_batch) {
  ST_CHECK(reference_batch > 0, "the reference batch of the linear scaling rule must be > 0");
  return base_lr * static_cast<float>(global_batch) / static_cast<float>(reference_batch);
}

}  // namespace scaletrain::optim

// SGD, AdamW and the learning-rate schedules against torch.optim 1.13 (tests/data/optim_reference.h5,
// written by tests/reference/make_optim_reference.py): the same gradients and learning rates fed for
// several steps give the same parameters, and the schedules give the same rates step by step.
#include <gtest/gtest.h>

#include <cmath>

#include "scaletrain/core/error.hpp"
#include "scaletrain/optim/lr_schedule.hpp"
#include "scaletrain/optim/optimizer.hpp"
#include "support/reference_file.hpp"

using namespace scaletrain;
using scaletrain::testing::ReferenceFile;

namespace {

Backend* cpu_backend() {
  static std::unique_ptr<Backend> b = make_cpu_backend(1);
  return b.get();
}

const std::string kFile = std::string(SCALETRAIN_TEST_DATA_DIR) + "/optim_reference.h5";

class OptimizerReference : public ::testing::TestWithParam<std::string> {};

TEST_P(OptimizerReference, TrajectoryMatchesTorch) {
  ReferenceFile f(kFile);
  const std::string g = "optim/" + GetParam();
  const Tensor p0 = f.dataset(g + "/p0"), grads = f.dataset(g + "/grads"), lrs = f.dataset(g + "/lrs"),
               ref = f.dataset(g + "/p");
  const int64_t n = p0.numel(), steps = lrs.numel();
  std::unique_ptr<optim::Optimizer> opt;
  if (GetParam().rfind("sgd", 0) == 0) {
    optim::SgdOptions o;
    o.momentum = static_cast<float>(f.attr_double(g, "momentum"));
    o.dampening = static_cast<float>(f.attr_double(g, "dampening"));
    o.weight_decay = static_cast<float>(f.attr_double(g, "weight_decay"));
    o.nesterov = f.attr_int(g, "nesterov") != 0;
    opt = optim::make_sgd(o, *cpu_backend());
  } else {
    optim::AdamWOptions o;
    o.beta1 = static_cast<float>(f.attr_double(g, "beta1"));
    o.beta2 = static_cast<float>(f.attr_double(g, "beta2"));
    o.eps = static_cast<float>(f.attr_double(g, "eps"));
    o.weight_decay = static_cast<float>(f.attr_double(g, "weight_decay"));
    opt = optim::make_adamw(o, *cpu_backend());
  }
  Tensor p = p0.clone();
  for (int64_t s = 0; s < steps; ++s) {
    const Tensor gs = grads.view(s * n, {n});
    opt->step(p, gs, lrs.data<float>()[s]);
    for (int64_t i = 0; i < n; ++i) {
      const float want = ref.data<float>()[s * n + i];
      ASSERT_NEAR(p.data<float>()[i], want, 2e-6 + 2e-5 * std::fabs(want)) << GetParam() << " step " << s << " i " << i;
    }
  }
  EXPECT_EQ(opt->steps_taken(), steps);
}

INSTANTIATE_TEST_SUITE_P(Torch, OptimizerReference,
                         ::testing::Values("sgd_plain", "sgd_momentum_wd", "sgd_dampening", "sgd_nesterov_wd",
                                           "adamw_default", "adamw_custom"),
                         [](const auto& info) { return info.param; });

class ScheduleReference : public ::testing::TestWithParam<std::string> {};

TEST_P(ScheduleReference, RatesMatchTorch) {
  ReferenceFile f(kFile);
  const std::string g = "schedule/" + GetParam();
  optim::LrScheduleOptions o;
  const std::string kind = GetParam().find("cosine") != std::string::npos ? "cosine"
                           : GetParam().find("step") != std::string::npos ? "step"
                                                                           : "constant";
  o.kind = optim::parse_lr_schedule_kind(kind);
  o.base_lr = static_cast<float>(f.attr_double(g, "base"));
  o.warmup_steps = f.attr_int(g, "warmup");
  if (o.warmup_steps > 0) o.warmup_start_factor = static_cast<float>(f.attr_double(g, "start_factor"));
  if (kind == "step") {
    o.step_size = f.attr_int(g, "step_size");
    o.gamma = static_cast<float>(f.attr_double(g, "gamma"));
  }
  if (kind == "cosine") {
    o.total_steps = f.attr_int(g, "total");
    o.min_lr = static_cast<float>(f.attr_double(g, "min_lr"));
  }
  const optim::LrSchedule sched(o);
  const Tensor lrs = f.dataset(g + "/lrs");
  for (int64_t s = 0; s < lrs.numel(); ++s)
    EXPECT_NEAR(sched.lr(s), lrs.data<float>()[s], 1e-6 + 1e-5 * lrs.data<float>()[s]) << GetParam() << " step " << s;
}

INSTANTIATE_TEST_SUITE_P(Torch, ScheduleReference,
                         ::testing::Values("constant", "warmup_constant", "step", "warmup_step", "cosine",
                                           "warmup_cosine"),
                         [](const auto& info) { return info.param; });

TEST(Optimizer, BadOptionsAreClearErrors) {
  optim::SgdOptions s;
  s.momentum = -1;
  EXPECT_THROW(optim::make_sgd(s, *cpu_backend()), Error);
  s.momentum = 0;
  s.nesterov = true;
  EXPECT_THROW(optim::make_sgd(s, *cpu_backend()), Error);
  optim::AdamWOptions a;
  a.beta1 = 1.0f;
  EXPECT_THROW(optim::make_adamw(a, *cpu_backend()), Error);
  try {
    optim::parse_lr_schedule_kind("exponential");
    ADD_FAILURE() << "unknown schedule accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown learning-rate schedule 'exponential'"), std::string::npos);
  }
}

TEST(Optimizer, LengthMismatchIsAClearError) {
  auto opt = optim::make_sgd({}, *cpu_backend());
  Tensor p = Tensor::zeros({4}), g = Tensor::zeros({5});
  EXPECT_THROW(opt->step(p, g, 0.1f), Error);
}

TEST(LinearScaling, ScalesWithGlobalBatch) {
  EXPECT_FLOAT_EQ(optim::linear_scaled_lr(0.1f, 1024, 256), 0.4f);
  EXPECT_THROW(optim::linear_scaled_lr(0.1f, 1024, 0), Error);
}

}  // namespace

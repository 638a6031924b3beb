// The dynamic loss scaler's state machine (GradScaler's rules: growth after `interval` clean steps,
// backoff and skip on inf/NaN, never growing to inf) and the unscale-and-check of gradients on the
// cpu and simulated devices.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <limits>

#include "scaletrain/optim/loss_scaler.hpp"
#include "support/test_harness.hpp"

namespace scaletrain::optim {
namespace {

LossScalerOptions opts(double init, int64_t interval) {
  LossScalerOptions o;
  o.init = init;
  o.interval = interval;
  return o;
}

TEST(LossScaler, DefaultsAreGradScalers) {
  const LossScalerOptions o;
  EXPECT_EQ(o.init, 65536.0);
  EXPECT_EQ(o.growth, 2.0);
  EXPECT_EQ(o.backoff, 0.5);
  EXPECT_EQ(o.interval, 2000);
  EXPECT_EQ(LossScaler(o).scale(), 65536.0f);
}

TEST(LossScaler, GrowsAfterIntervalCleanStepsInARow) {
  LossScaler s(opts(1024, 3));
  EXPECT_TRUE(s.update(false));
  EXPECT_TRUE(s.update(false));
  EXPECT_EQ(s.scale(), 1024.0f);
  EXPECT_EQ(s.clean_steps_in_a_row(), 2);
  EXPECT_TRUE(s.update(false));
  EXPECT_EQ(s.scale(), 2048.0f);
  EXPECT_EQ(s.clean_steps_in_a_row(), 0);
  for (int i = 0; i < 3; ++i) s.update(false);
  EXPECT_EQ(s.scale(), 4096.0f);
  EXPECT_EQ(s.skipped_steps(), 0);
}

TEST(LossScaler, OverflowSkipsTheStepBacksOffAndRestartsTheCount) {
  LossScaler s(opts(1024, 3));
  s.update(false);
  s.update(false);
  EXPECT_FALSE(s.update(true));  // skip
  EXPECT_EQ(s.scale(), 512.0f);
  EXPECT_EQ(s.skipped_steps(), 1);
  EXPECT_EQ(s.clean_steps_in_a_row(), 0);
  s.update(false);
  s.update(false);
  EXPECT_EQ(s.scale(), 512.0f);  // two clean steps since the skip: not yet
  s.update(false);
  EXPECT_EQ(s.scale(), 1024.0f);
  EXPECT_FALSE(s.update(true));
  EXPECT_FALSE(s.update(true));
  EXPECT_EQ(s.scale(), 256.0f);
  EXPECT_EQ(s.skipped_steps(), 3);
}

TEST(LossScaler, NeverGrowsToInfinity) {
  LossScaler s(opts(static_cast<double>(FLT_MAX) / 1.5, 1));
  s.update(false);
  EXPECT_TRUE(std::isfinite(s.scale()));
  EXPECT_EQ(s.scale(), static_cast<float>(static_cast<double>(FLT_MAX) / 1.5));
}

// fp32 and bf16 with train.on_nonfinite = skip: the scale stays 1, a step with inf/NaN is skipped and counted.
TEST(LossScaler, DisabledScalesByOneAndCountsSkippedSteps) {
  LossScalerOptions o;
  o.enabled = false;
  LossScaler s(o);
  EXPECT_EQ(s.scale(), 1.0f);
  EXPECT_TRUE(s.update(false));
  EXPECT_FALSE(s.update(true));
  EXPECT_EQ(s.scale(), 1.0f);
  EXPECT_EQ(s.skipped_steps(), 1);
  EXPECT_TRUE(s.update(false));
  EXPECT_EQ(s.skipped_steps(), 1);
}

TEST(LossScaler, RejectsInvalidOptionsNamingTheKey) {
  auto err = [](LossScalerOptions o) { return testing::error_of([&] { LossScaler s(o); }); };
  LossScalerOptions o;
  o.init = 0;
  EXPECT_NE(err(o).find("optimizer.loss_scale_init"), std::string::npos);
  o = {};
  o.growth = 1.0;
  EXPECT_NE(err(o).find("optimizer.loss_scale_growth"), std::string::npos);
  o = {};
  o.backoff = 1.0;
  EXPECT_NE(err(o).find("optimizer.loss_scale_backoff"), std::string::npos);
  o = {};
  o.interval = 0;
  EXPECT_NE(err(o).find("optimizer.loss_scale_interval"), std::string::npos);
}

// Gradients on the backend's device and whether any is inf or NaN, in the verdict of one step
// (kernels/step_state.hpp's layout), queued without a read-back.
class UnscaleAndCheck : public ::testing::TestWithParam<DeviceKind> {
 protected:
  std::unique_ptr<Backend> be = [] {
    BackendOptions o;
    o.kind = GetParam();
    o.threads = 1;
    return make_backend(o);
  }();
  VerdictScratch scratch;

  // The verdict of `grads` split at `offsets` and of `losses` (may be null), this rank's mark 3.
  std::vector<double> verdict(const Tensor& grads, const std::vector<int64_t>& offsets, const Tensor* losses) {
    Tensor v = be->empty({static_cast<int64_t>(offsets.size()) + 1}, DType::f64, "verdict");
    queue_nonfinite_verdict(*be, grads, offsets, losses, 3.0, v, scratch);
    const Tensor h = be->download(v);
    return {h.data<double>(), h.data<double>() + h.numel()};
  }
  // n gradients of value 3 (two blocks of counts and a partial third), one of them `bad`.
  bool check(float bad, int64_t at) {
    const int64_t n = (1 << 17) + 5;
    Tensor host({n}, DType::f32, "grads.host");
    for (int64_t i = 0; i < n; ++i) host.data<float>()[i] = 3.0f;
    if (at >= 0) host.data<float>()[at] = bad;
    Tensor grads = be->empty({n}, DType::f32, "grads");
    be->copy_async(be->compute_stream(), grads, host);
    const std::vector<double> v = verdict(grads, {0, n}, nullptr);
    EXPECT_EQ(v[1], 0.0) << "no losses, no mark";
    EXPECT_EQ(v[2], 0.0) << "nothing injected";
    return v[0] > 0;
  }
};

TEST_P(UnscaleAndCheck, FiniteGradientsHoldNone) { EXPECT_FALSE(check(0.0f, -1)); }
TEST_P(UnscaleAndCheck, FindsNaN) { EXPECT_TRUE(check(std::numeric_limits<float>::quiet_NaN(), 70000)); }
TEST_P(UnscaleAndCheck, FindsInf) { EXPECT_TRUE(check(std::numeric_limits<float>::infinity(), 0)); }
TEST_P(UnscaleAndCheck, FindsNegativeInfInThePartialLastBlock) {
  EXPECT_TRUE(check(-std::numeric_limits<float>::infinity(), (1 << 17) + 4));
}
TEST_P(UnscaleAndCheck, ALargeFiniteGradientIsNoOverflow) { EXPECT_FALSE(check(FLT_MAX, 3)); }

// The per-step check of fp32 and bf16 runs (no unscaling): inf/NaN counted per tensor of the
// gradients, and the per-row losses' inf/NaN as this rank's mark.
TEST_P(UnscaleAndCheck, CountsEachTensorAndMarksTheLoss) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  Tensor host_g({70001}, DType::f32, "grads.host"), host_l({33}, DType::f32, "losses.host");
  for (int64_t i = 0; i < host_g.numel(); ++i) host_g.data<float>()[i] = 0.5f;
  for (int64_t i = 0; i < host_l.numel(); ++i) host_l.data<float>()[i] = 2.0f;
  host_g.data<float>()[1] = nan;
  host_g.data<float>()[2] = inf;
  host_g.data<float>()[70000] = -inf;
  host_l.data<float>()[32] = inf;
  Tensor grads = be->empty({host_g.numel()}, DType::f32, "grads"), losses = be->empty({33}, DType::f32, "losses");
  be->copy_async(be->compute_stream(), grads, host_g);
  be->copy_async(be->compute_stream(), losses, host_l);
  const std::vector<int64_t> tensors{0, 10, 10, 69000, 70001};  // one empty tensor
  EXPECT_EQ(verdict(grads, tensors, &losses), (std::vector<double>{2, 0, 0, 1, 3, 0}));
  host_l.data<float>()[32] = 1.0f;
  be->copy_async(be->compute_stream(), losses, host_l);
  EXPECT_EQ(verdict(grads, tensors, &losses), (std::vector<double>{2, 0, 0, 1, 0, 0}));
  EXPECT_EQ(verdict(grads, {0, 70001}, nullptr), (std::vector<double>{3, 0, 0})) << "other tensors, no losses";
}

INSTANTIATE_TEST_SUITE_P(Devices, UnscaleAndCheck, ::testing::Values(DeviceKind::cpu, DeviceKind::sim),
                         [](const auto& info) { return device_kind_name(info.param); });

}  // namespace
}  // namespace scaletrain::optim

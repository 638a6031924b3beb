// Mixed precision across ranks. (1) fp16's loss scaler: one rank's local overflow flag (injected,
// with every reduced gradient finite) makes EVERY rank skip that step, so the replicas stay
// bitwise identical; a real fp16 overflow (a huge initial scale) is skipped and backed off.
// (2) bf16 and fp16 training, and bf16/fp16 gradients on the wire: W ranks end within rtol 1e-2 of
// 1 rank with the same global batch, and bf16 really computes in bf16 (its weights differ from
// fp32's by more than the fp32 equivalence tolerance). Passes at any rank count dividing 60.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstring>
#include <filesystem>

#include "scaletrain/comm/mpi_communicator.hpp"
#include "scaletrain/train/trainer.hpp"
#include "support/replicas.hpp"
#include "support/shared_temp_dir.hpp"
#include "support/small_run.hpp"

using namespace scaletrain;
using scaletrain::testing::identical_on_every_rank;

namespace {

train::RunConfig small_run(Precision precision, Precision wire) {
  train::RunConfig c = scaletrain::testing::small_run_config();
  c.lr = 0.01;
  c.precision = precision;
  c.comm_dtype = wire;
  return c;
}

Tensor weights(train::Trainer& t) { return t.backend().download(t.model().flat_parameters()); }

// Largest |a - b| / (atol + rtol * max(|a|, |b|)) over the parameters: <= 1 means within tolerance.
double worst_error(const Tensor& a, const Tensor& b, double rtol, double atol) {
  double worst = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double x = a.data<float>()[i], y = b.data<float>()[i];
    worst = std::max(worst, std::fabs(x - y) / (atol + rtol * std::max(std::fabs(x), std::fabs(y))));
  }
  return worst;
}

// ||a - b|| / ||b|| over each parameter tensor (L2), and the worst tensor's name. Low-precision
// rounding is relative to the gradients, and bias gradients (sums over the batch that largely
// cancel) turn it into large relative errors of single elements near zero, so the comparison is
// of whole tensors, as torch.testing compares low-precision results in norm.
// biases: true for the bias tensors only, false for the others (weights).
double worst_tensor_error(const nn::Model& m, const Tensor& a, const Tensor& b, bool biases, std::string& where) {
  double worst = 0;
  for (const nn::ParameterSlot& s : m.slots()) {
    if ((m.layers()[s.layer]->parameters()[s.index].name == "bias") != biases) continue;
    double diff = 0, norm = 0;
    for (int64_t i = s.offset; i < s.offset + s.count; ++i) {
      const double x = a.data<float>()[i], y = b.data<float>()[i];
      diff += (x - y) * (x - y);
      norm += y * y;
    }
    const double e = std::sqrt(diff / std::max(norm, 1e-30));
    if (e > worst) {
      worst = e;
      where = m.layers()[s.layer]->name() + "." + m.layers()[s.layer]->parameters()[s.index].name;
    }
  }
  return worst;
}

class MixedPrecision : public ::testing::Test {
 protected:
  void SetUp() override {
    world = comm::make_mpi_communicator(MPI_COMM_WORLD);
    if (60 % world->size() != 0) GTEST_SKIP() << "global batch 60 does not divide by " << world->size() << " ranks";
    dir = scaletrain::testing::shared_temp_dir(*world, "scaletrain-mp");  // synthetic data written once, shared
  }
  void TearDown() override {
    if (!world) return;
    world->barrier();
    if (world->rank() == 0 && !dir.empty()) std::filesystem::remove_all(dir);
  }
  train::RunConfig run(Precision p, Precision wire = Precision::fp32) {
    train::RunConfig c = small_run(p, wire);
    c.run_dir = dir;
    return c;
  }
  std::unique_ptr<comm::Communicator> world;
  std::string dir;
};

TEST_F(MixedPrecision, OneRanksOverflowFlagMakesEveryRankSkipThatStep) {
  train::RunConfig cfg = run(Precision::fp16);
  cfg.inject_overflow_rank = world->size() - 1;  // the last rank only
  cfg.inject_overflow_step = 2;
  train::Trainer injected(cfg, *world);
  const train::TrainResult r = injected.run();
  EXPECT_EQ(r.skipped_steps, 1) << "on rank " << world->rank();
  EXPECT_EQ(r.final_loss_scale, 32768.0f) << "one backoff from 65536, on rank " << world->rank();
  const train::PrecisionReport p = injected.precision();  // what run.json records
  EXPECT_TRUE(p.loss_scaling);
  EXPECT_EQ(p.loss_scale_init, 65536.0) << "the initial scale, not the final one";
  EXPECT_EQ(p.train, "fp16");
  EXPECT_FALSE(p.native) << "fp16 is storage only on the CPU";
  const Tensor w = weights(injected);
  EXPECT_TRUE(identical_on_every_rank(*world, w)) << "the replicas diverged after the injected overflow";

  // The skip was real: without the injection no step is skipped and the weights differ.
  train::RunConfig clean = run(Precision::fp16);
  train::Trainer reference(clean, *world);
  const train::TrainResult rc = reference.run();
  EXPECT_EQ(rc.skipped_steps, 0);
  EXPECT_EQ(rc.final_loss_scale, 65536.0f);
  EXPECT_GT(worst_error(w, weights(reference), 1e-3, 1e-6), 1.0);
}

// Every step so far skipped (no optimizer state yet): the checkpoint is written all the same (an
// empty list of optimizer buffers), and a resume from it goes on.
TEST_F(MixedPrecision, ACheckpointBeforeTheFirstAppliedUpdateIsWrittenAndResumed) {
  train::RunConfig cfg = run(Precision::fp16);
  cfg.run_dir = dir + "/before-first-update";
  cfg.inject_overflow_rank = 0;
  cfg.inject_overflow_step = 0;
  cfg.max_steps = 1;
  cfg.checkpoint_at_end = true;
  {
    train::Trainer t(cfg, *world);
    const train::TrainResult r = t.run();
    EXPECT_EQ(r.skipped_steps, 1);
  }
  cfg.resume = "auto";
  cfg.max_steps = 3;
  cfg.inject_overflow_rank = -1;
  train::Trainer resumed(cfg, *world);
  ASSERT_TRUE(resumed.resumed_from().has_value());
  const train::TrainResult r = resumed.run();
  EXPECT_EQ(r.final_step, 3);
  EXPECT_EQ(r.skipped_steps, 1) << "the skipped step is counted on after the resume";
  EXPECT_TRUE(identical_on_every_rank(*world, weights(resumed)));
}

TEST_F(MixedPrecision, RealFp16OverflowIsSkippedAndBackedOff) {
  // 2^40 times the gradient of the loss overflows fp16 (max 65504) at the logits: inf gradients.
  train::RunConfig cfg = run(Precision::fp16);
  cfg.loss_scale_init = std::ldexp(1.0, 40);
  cfg.loss_scale_backoff = 1.0 / 1024;
  train::Trainer t(cfg, *world);
  const train::TrainResult r = t.run();
  EXPECT_GE(r.skipped_steps, 1);
  EXPECT_LT(r.skipped_steps, 6) << "the scale never came down far enough to train";
  EXPECT_LT(r.final_loss_scale, std::ldexp(1.0, 40));
  const Tensor w = weights(t);
  for (int64_t i = 0; i < w.numel(); ++i) ASSERT_TRUE(std::isfinite(w.data<float>()[i])) << "parameter " << i;
  EXPECT_TRUE(identical_on_every_rank(*world, w));
}

struct Case {
  Precision compute, wire;
};

class LowPrecisionEquivalence : public MixedPrecision, public ::testing::WithParamInterface<Case> {};

TEST_P(LowPrecisionEquivalence, WRanksMatchOneRankWithinRtol1e2) {
  const train::RunConfig cfg = run(GetParam().compute, GetParam().wire);
  train::Trainer distributed(cfg, *world);
  const train::TrainResult rd = distributed.run();
  EXPECT_EQ(rd.steps, 6);
  const Tensor w_dist = weights(distributed);
  auto self = comm::make_mpi_communicator(MPI_COMM_SELF);
  train::Trainer single(cfg, *self);
  const train::TrainResult rs = single.run();
  EXPECT_EQ(rd.skipped_steps, 0);
  EXPECT_EQ(rs.skipped_steps, 0);
  const Tensor w_single = weights(single);
  std::string where;
  // Weights within rtol 1e-2. Bias gradients are sums over the batch that largely cancel, so one
  // rank's rounding of its partial sum is a large part of the total: biases within 2e-1.
  const double err = worst_tensor_error(single.model(), w_dist, w_single, false, where);
  EXPECT_LE(err, 1e-2) << world->size() << " ranks against 1, worst weight tensor: " << where;
  std::printf("%d ranks against 1: worst relative error %.2e in %s\n", world->size(), err, where.c_str());
  const double bias_err = worst_tensor_error(single.model(), w_dist, w_single, true, where);
  EXPECT_LE(bias_err, 2e-1) << world->size() << " ranks against 1, worst bias: " << where;
  std::printf("%d ranks against 1: worst relative error %.2e in %s\n", world->size(), bias_err, where.c_str());

  if (GetParam().compute == Precision::bf16) {
    // Not fp32 in disguise: the fp32 run differs by more than the fp32 equivalence tolerance
    // (mpitest_train_equivalence: 1e-4 relative + 1e-5 absolute).
    train::RunConfig fp32 = cfg;
    fp32.precision = Precision::fp32;
    fp32.comm_dtype = Precision::fp32;
    train::Trainer reference(fp32, *self);
    reference.run();
    EXPECT_GT(worst_error(w_single, weights(reference), 1e-4, 1e-5), 1.0);
  }
}

INSTANTIATE_TEST_SUITE_P(Runs, LowPrecisionEquivalence,
                         ::testing::Values(Case{Precision::bf16, Precision::fp32}, Case{Precision::bf16, Precision::bf16},
                                           Case{Precision::fp16, Precision::fp16},
                                           Case{Precision::fp32, Precision::fp16}, Case{Precision::fp32, Precision::bf16}),
                         [](const auto& info) {
                           return precision_name(info.param.compute) + "_wire_" + precision_name(info.param.wire);
                         });

}  // namespace

// The step's agreements across ranks (train/step_agreement.hpp: the host's flags; train/
// device_step_state.hpp: the inf/NaN verdict on the device) and what rides on them, at any rank
// count: (1) the host flags of all ranks are combined identically everywhere, with the lowest rank
// of each mark, blocking or in two halves; (2) a stop signal on the last rank alone stops EVERY rank
// after the same step with a checkpoint there, and run.resume = auto then ends bitwise equal to an
// uninterrupted run; (3) inf/NaN in fp32/bf16: train.on_nonfinite = stop ends every rank with the
// message naming that step, skip makes every rank skip it (the replicas stay identical); a learning
// rate driven to NaN stops with the first layer named; (4) a real inf in one rank's loss, made on
// the device, on cpu and on sim's stream-ordered path: fp16 skips that step on every rank and halves
// the scale, fp32 stops naming the step, the rank and the output layer.
#include <gtest/gtest.h>
#include <mpi.h>

#include <csignal>
#include <cstring>
#include <filesystem>

#include "scaletrain/comm/mpi_communicator.hpp"
#include "scaletrain/train/errors.hpp"
#include "scaletrain/train/step_agreement.hpp"
#include "scaletrain/train/stop_signals.hpp"
#include "scaletrain/train/trainer.hpp"
#include "support/replicas.hpp"
#include "support/shared_temp_dir.hpp"
#include "support/small_run.hpp"

using namespace scaletrain;
using scaletrain::testing::identical_on_every_rank;
using namespace scaletrain::train;

namespace {

Tensor weights(Trainer& t) { return t.backend().download(t.model().flat_parameters()); }

bool bitwise_equal(const Tensor& a, const Tensor& b) {
  return a.bytes() == b.bytes() && std::memcmp(a.raw(), b.raw(), a.bytes()) == 0;
}

// The message of the ConsistentError that f throws ("" if none).
std::string consistent_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ConsistentError& e) {
    return e.what();
  }
  return "";
}

class StepAgreement : public ::testing::Test {
 protected:
  void SetUp() override {
    world = comm::make_mpi_communicator(MPI_COMM_WORLD);
    dir = scaletrain::testing::shared_temp_dir(*world, "scaletrain-agree");
    clear_stop_signal();
  }
  void TearDown() override {
    clear_stop_signal();
    world->barrier();
    if (world->rank() == 0) std::filesystem::remove_all(dir);
  }
  RunConfig run(const std::string& name) {
    RunConfig c = scaletrain::testing::small_run_config();
    c.run_dir = dir + "/" + name;
    return c;
  }
  std::unique_ptr<comm::Communicator> world;
  std::string dir;
};

TEST_F(StepAgreement, EveryRankSeesTheSameFlagsWithTheLowestRankOfEachMark) {
  const int r = world->rank(), n = world->size();
  StepFlags mine;
  if (r == n - 1) mine.stop_signal = SIGUSR1, mine.stop_rank = StepFlags::mark(r, n);
  if (r == 0) mine.checkpoint_by_time = 1;
  if (r >= n / 2) mine.input_nonfinite = StepFlags::mark(r, n);
  if (r == n - 1) mine.nonfinite_step = 8;
  for (const bool in_halves : {false, true}) {
    StepFlags all;
    if (in_halves) {
      HostAgreement a(*world);
      a.start(mine);
      EXPECT_TRUE(a.started());
      all = a.finish();
      EXPECT_FALSE(a.started());
    } else {
      all = agree(*world, mine);
    }
    EXPECT_EQ(all.stop_signal, SIGUSR1);
    EXPECT_EQ(StepFlags::marked_rank(all.stop_rank, n), n - 1);
    EXPECT_EQ(all.checkpoint_by_time, 1);
    EXPECT_EQ(all.nonfinite_step, 8);
    EXPECT_EQ(StepFlags::marked_rank(all.input_nonfinite, n), n / 2);
  }
  EXPECT_EQ(StepFlags::marked_rank(agree(*world, StepFlags{}).input_nonfinite, n), -1);
}

TEST_F(StepAgreement, ASignalOnOneRankStopsEveryRankAtTheSameStepAndTheResumeIsBitwise) {
  const int n = world->size();
  RunConfig stopped = run("stopped");
  stopped.inject_signal = "USR1";
  stopped.inject_signal_rank = n - 1;  // the last rank only
  stopped.inject_signal_step = 2;      // before step 2: seen in its agreement, so 3 steps are done
  {
    Trainer t(stopped, *world);
    const TrainResult r = t.run();
    EXPECT_EQ(r.stop_signal, SIGUSR1);
    EXPECT_EQ(r.stop_rank, n - 1);
    EXPECT_EQ(r.final_step, 3);
    EXPECT_EQ(r.stop_checkpoint, stopped.run_dir + "/checkpoints/step-3") << "on rank " << world->rank();
    EXPECT_TRUE(std::filesystem::is_directory(r.stop_checkpoint));
    EXPECT_TRUE(r.epochs.empty()) << "a stopped epoch is neither evaluated nor reported";
  }
  clear_stop_signal();
  RunConfig resumed = run("stopped");
  resumed.resume = "auto";
  Trainer t(resumed, *world);
  const TrainResult r = t.run();
  EXPECT_EQ(r.stop_signal, 0);
  EXPECT_EQ(r.final_step, 6);
  Trainer full(run("full"), *world);
  full.run();
  EXPECT_TRUE(bitwise_equal(weights(t), weights(full))) << "on rank " << world->rank();
}

TEST_F(StepAgreement, InfOrNaNOnOneRankStopsEveryRankAtThatStep) {
  RunConfig cfg = run("stop");
  cfg.inject_overflow_rank = world->size() - 1;
  cfg.inject_overflow_step = 2;
  Trainer t(cfg, *world);
  const std::string m = consistent_error_of([&] { t.run(); });
  EXPECT_NE(m.find("inf/NaN at step 2 (epoch 1"), std::string::npos) << "rank " << world->rank() << ": " << m;
}

TEST_F(StepAgreement, SkipMakesEveryRankSkipTheSameStepInFp32AndBf16) {
  for (Precision p : {Precision::fp32, Precision::bf16}) {
    RunConfig cfg = run("skip");
    cfg.precision = p;
    cfg.on_nonfinite = NonFinitePolicy::skip;
    cfg.inject_overflow_rank = world->size() - 1;
    cfg.inject_overflow_step = 2;
    Trainer skipped(cfg, *world);
    const TrainResult r = skipped.run();
    EXPECT_EQ(r.skipped_steps, 1) << precision_name(p);
    EXPECT_EQ(r.final_step, 6);
    const Tensor w = weights(skipped);
    EXPECT_TRUE(identical_on_every_rank(*world, w)) << precision_name(p);
    RunConfig clean = run("clean");
    clean.precision = p;
    Trainer reference(clean, *world);
    EXPECT_EQ(reference.run().skipped_steps, 0);
    EXPECT_FALSE(bitwise_equal(w, weights(reference))) << "the skip was not real in " << precision_name(p);
  }
}

TEST_F(StepAgreement, ALearningRateDrivenToNaNStopsNamingTheFirstLayer) {
  RunConfig cfg = run("nan");
  cfg.lr = 1e30;
  Trainer t(cfg, *world);
  const std::string m = consistent_error_of([&] { t.run(); });
  EXPECT_NE(m.find("inf/NaN at step "), std::string::npos) << m;
  EXPECT_NE(m.find("learning rate 1e+30"), std::string::npos) << m;
  EXPECT_NE(m.find("counting from the output, is "), std::string::npos) << m;
}

// testing.inject_inf_loss_*: the last rank's logits times inf at step 2, on the device.
RunConfig with_inf_loss(RunConfig c, int world, DeviceKind device) {
  c.inject_inf_loss_rank = world - 1;
  c.inject_inf_loss_step = 2;
  c.device = device;
  if (device == DeviceKind::sim) c.comm_backend = comm::CommBackend::nccl;
  return c;
}

TEST_F(StepAgreement, AnInfLossOnOneRankSkipsThatStepEverywhereInFp16) {
  for (DeviceKind device : {DeviceKind::cpu, DeviceKind::sim}) {
    RunConfig cfg = with_inf_loss(run("inf16"), world->size(), device);
    cfg.precision = Precision::fp16;
    Trainer t(cfg, *world);
    const TrainResult r = t.run();
    EXPECT_EQ(r.skipped_steps, 1) << device_kind_name(device) << " on rank " << world->rank();
    EXPECT_EQ(r.final_loss_scale, 32768.0f) << "one backoff from 65536";
    EXPECT_EQ(r.final_step, 6);
    EXPECT_TRUE(identical_on_every_rank(*world, weights(t))) << device_kind_name(device);
  }
}

TEST_F(StepAgreement, AnInfLossOnOneRankStopsFp32NamingTheStepRankAndLayer) {
  for (DeviceKind device : {DeviceKind::cpu, DeviceKind::sim}) {
    Trainer t(with_inf_loss(run("inf32"), world->size(), device), *world);
    const std::string m = consistent_error_of([&] { t.run(); });
    const std::string last_layer = t.model().layers().back()->name();
    const std::vector<std::string> wanted{"inf/NaN at step 2 (epoch 1",
                                          "the loss of rank " + std::to_string(world->size() - 1),
                                          "counting from the output, is " + last_layer + " (",
                                          "Every rank skipped this step's update"};
    for (const std::string& want : wanted)
      EXPECT_NE(m.find(want), std::string::npos)
          << device_kind_name(device) << ", rank " << world->rank() << ": no '" << want << "' in: " << m;
  }
}

}  // namespace

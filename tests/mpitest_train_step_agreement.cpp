// The step's one agreement across ranks (train/step_agreement.hpp) and what rides on it, at any
// rank count: (1) the flags of all ranks are combined identically everywhere, with the lowest rank
// of each mark; (2) a stop signal on the last rank alone stops EVERY rank after the same step with
// a checkpoint there, and run.resume = auto then ends bitwise equal to an uninterrupted run;
// (3) inf/NaN in fp32/bf16: train.on_nonfinite = stop ends every rank at that step with the message,
// skip makes every rank skip it (the replicas stay identical); a learning rate driven to NaN stops
// with the first layer named.
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
  if (r >= n / 2) mine.loss_nonfinite = StepFlags::mark(r, n);
  const StepFlags all = agree(*world, mine);
  EXPECT_EQ(all.stop_signal, SIGUSR1);
  EXPECT_EQ(StepFlags::marked_rank(all.stop_rank, n), n - 1);
  EXPECT_EQ(all.checkpoint_by_time, 1);
  EXPECT_EQ(all.gradients_nonfinite, 0);
  EXPECT_EQ(StepFlags::marked_rank(all.loss_nonfinite, n), n / 2);
  EXPECT_TRUE(all.nonfinite());
  EXPECT_EQ(StepFlags::marked_rank(agree(*world, StepFlags{}).loss_nonfinite, n), -1);
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

}  // namespace

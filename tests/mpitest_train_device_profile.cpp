// The device counters and the layer profile (train/device_step_counts.hpp, train/layer_profile.hpp)
// on cpu and sim. On sim with the stream-ordered transport (comm.backend = nccl) a steady-state step
// never waits for the device: 0 host synchronizations per plain step, for resnet20 and resnet50 in
// fp32, bf16 and fp16. Counters that cannot fail are not counters: one extra host synchronization
// per step (testing.extra_host_syncs) must raise host_syncs per step by exactly one and leave the
// rest, one extra launch (testing.extra_launches) calls by exactly one. The layer profile's rows (layers,
// loss, optimizer, input, exposed all-reduce, data wait, agreement) must add up to within 10% of
// the measured step time for resnet20 and fmnist_sepcnn. Passes at any rank count dividing 12. The
// step-without-waits suite counts and never times: ctest runs it apart from the timed suites, beside
// other tests (tests/CMakeLists.txt).
#include <gtest/gtest.h>
#include <mpi.h>

#include <filesystem>
#include <fstream>
#include <tuple>

#include <nlohmann/json.hpp>

#include "scaletrain/comm/mpi_communicator.hpp"
#include "scaletrain/train/trainer.hpp"
#include "support/shared_temp_dir.hpp"
#include "support/small_run.hpp"

using namespace scaletrain;

namespace {

class DeviceProfile : public ::testing::TestWithParam<DeviceKind> {
 protected:
  void SetUp() override {
    world = comm::make_mpi_communicator(MPI_COMM_WORLD);
    if (12 % world->size() != 0) GTEST_SKIP() << "global batch 12 does not divide by " << world->size() << " ranks";
    dir = scaletrain::testing::shared_temp_dir(*world, "scaletrain-devprof");
  }
  void TearDown() override {
    if (!world) return;
    world->barrier();
    if (world->rank() == 0 && !dir.empty()) std::filesystem::remove_all(dir);
  }
  // lenet, 7 steps of 12: one warm-up step, plain steps 1 to 5, then the run's last (logging) step.
  train::RunConfig run() const {
    train::RunConfig c = scaletrain::testing::small_run_config();
    c.batch = 12;
    c.synthetic_samples = 240;
    c.max_steps = 7;
    c.warmup_log_steps = 1;
    c.log_every = 1000;
    c.device = GetParam();
    // sim: the gradients and the step's verdict all-reduced in stream order, as NCCL does on a GPU.
    if (c.device == DeviceKind::sim) c.comm_backend = comm::CommBackend::nccl;
    c.run_dir = dir;
    return c;
  }
  train::DeviceStepGroup plain_steps(const train::RunConfig& c) {
    train::Trainer t(c, *world);
    return t.run().device_per_step.plain;
  }
  // sim's device runs behind the host: whether the phase timing's reads wait varies from step to
  // step there (on cpu it never does), so sim compares the phases and cpu the whole step.
  bool whole_step_deterministic() const { return GetParam() == DeviceKind::cpu; }
  std::unique_ptr<comm::Communicator> world;
  std::string dir;
};

// A phase's counts that the training thread makes: the loader's reader thread queues the batches'
// copies (and waits, as background_syncs) whenever it runs, so on sim they land in whichever phase
// is open; the whole step counts them.
DeviceCounts training_thread(DeviceCounts c) {
  c.background_syncs = c.copies_h2d = c.bytes_h2d = c.copies_d2h = c.bytes_d2h = 0;
  return c;
}

TEST_P(DeviceProfile, OneExtraSynchronizationAndOneExtraLaunchAreCountedExactly) {
  const auto forward = static_cast<size_t>(Phase::forward), agree = static_cast<size_t>(Phase::agree);
  const train::DeviceStepGroup base = plain_steps(run());
  ASSERT_EQ(base.steps, 5);
  const DeviceCounts b = base.step.median;
  EXPECT_GT(b.calls, 20) << "lenet's layers, loss and optimizer launch more than this";
  EXPECT_GT(base.phases[agree].median.calls, 0) << "the step's inf/NaN verdict is counted on the device";
  if (GetParam() == DeviceKind::sim) {
    EXPECT_EQ(b.host_syncs, 0) << "a steady-state step never waits for the device";
    EXPECT_EQ(base.step.max.host_syncs, 0);
  }
  EXPECT_EQ(base.step.median.calls, base.step.max.calls) << "plain steps launch the same";
  EXPECT_GT(base.phases[forward].median.calls, 0);
  EXPECT_EQ(b.allocations, 0) << "a steady-state step allocates nothing";

  train::RunConfig synced = run();
  synced.extra_host_syncs = 1;
  const train::DeviceStepGroup s = plain_steps(synced);
  DeviceCounts expect = training_thread(base.phases[forward].median);
  ++expect.host_syncs;
  EXPECT_EQ(training_thread(s.phases[forward].median), expect) << "one extra synchronization in forward";
  EXPECT_EQ(training_thread(s.phases[forward].max), expect);
  if (whole_step_deterministic()) {
    expect = b;
    ++expect.host_syncs;
    EXPECT_EQ(s.step.median, expect) << "one extra synchronization per step, nothing else";
  }

  train::RunConfig launched = run();
  launched.extra_launches = 1;
  const train::DeviceStepGroup l = plain_steps(launched);
  expect = training_thread(base.phases[forward].median);
  ++expect.calls;
  EXPECT_EQ(training_thread(l.phases[forward].median), expect) << "one extra launch in forward";
  EXPECT_EQ(l.step.median.calls, b.calls + 1) << "one extra launch per step";
  if (whole_step_deterministic()) {
    expect = b;
    ++expect.calls;
    EXPECT_EQ(l.step.median, expect) << "one extra launch per step, nothing else";
  }
}

// The rows of profile.json against its measured step time, on one rank: with more ranks than this
// machine's cores the step also holds the time a rank is descheduled in favour of another, which no
// row owns.
void expect_rows_cover_the_step(comm::Communicator& world, train::RunConfig c, const std::string& model) {
  if (world.size() > 1) GTEST_SKIP() << "the profile's coverage of the step is checked on one rank";
  c.model = model;
  c.lr = 0.005;
  c.profile = "layers,kernels";
  c.max_steps = 9;  // 8 measured steps: one slow step on a busy machine moves the ratio less
  c.overwrite = true;
  train::Trainer t(c, world);
  (void)t.run();
  if (world.rank() != 0) return;
  std::ifstream f(c.run_dir + "/profile.json");
  ASSERT_TRUE(f.good()) << "no profile.json in " << c.run_dir;
  const nlohmann::json p = nlohmann::json::parse(f);
  EXPECT_EQ(p["measured_steps"].get<int64_t>(), 8);
  const double step = p["step_s"].get<double>(), rows = p["rows_s"].get<double>();
  EXPECT_NEAR(rows / step, 1.0, 0.10) << model << ": the rows add up to " << rows << " s of a " << step << " s step";
  size_t layers = 0;
  for (const auto& r : p["rows"]) layers += r["type"] != "trainer";
  EXPECT_EQ(layers, t.model().layers().size()) << "one row per layer";
  if (c.device != DeviceKind::sim) return;
  // sim's kernel trace: the measured steps' own work, one optimizer update per step.
  ASSERT_TRUE(p.contains("kernels")) << p.dump();
  double updates = -1;
  for (const auto& k : p["kernels"]["per_step"])
    if (k["name"] == "sgd_update") updates = k["count"].get<double>();
  EXPECT_EQ(updates, 1.0) << "sgd_update per measured step";
}

TEST_P(DeviceProfile, LayerRowsAddUpToTheStepForResnet20) { expect_rows_cover_the_step(*world, run(), "resnet20"); }

TEST_P(DeviceProfile, LayerRowsAddUpToTheStepForSeparableCnn) {
  expect_rows_cover_the_step(*world, run(), "fmnist_sepcnn");
}

// resnet20 and resnet50 (global batch 6 of 28x28 synthetic images) on sim with the stream-ordered
// transport: no plain step waits for the device, in any precision, and each plain step queues the
// same calls.
class StepWithoutWaits : public ::testing::TestWithParam<std::tuple<std::string, Precision>> {};

TEST_P(StepWithoutWaits, NoPlainStepSynchronizesTheHost) {
  auto world = comm::make_mpi_communicator(MPI_COMM_WORLD);
  if (6 % world->size() != 0) GTEST_SKIP() << "global batch 6 does not divide by " << world->size() << " ranks";
  const auto [model, precision] = GetParam();
  const std::string dir = scaletrain::testing::shared_temp_dir(*world, "scaletrain-nowait");
  train::RunConfig c = scaletrain::testing::small_run_config();
  c.model = model;
  c.precision = precision;
  c.batch = 6;
  c.synthetic_samples = 120;
  c.max_steps = 6;
  c.warmup_log_steps = 2;
  c.log_every = 1000;
  c.lr = 0.001;
  c.on_nonfinite = train::NonFinitePolicy::skip;  // resnet50 on 2 samples per rank: counts, not training
  c.device = DeviceKind::sim;
  c.comm_backend = comm::CommBackend::nccl;
  c.bucket_mb = comm::BucketSizeSetting::fixed(1.0);
  c.run_dir = dir;
  train::DeviceStepGroup plain;
  {
    train::Trainer t(c, *world);
    plain = t.run().device_per_step.plain;
  }
  EXPECT_EQ(plain.steps, 3) << "steps 2 to 4; step 5 logs";
  EXPECT_EQ(plain.step.max.host_syncs, 0) << model << " " << precision_name(precision);
  EXPECT_EQ(plain.step.max.allocations, 0);
  EXPECT_EQ(plain.step.median.calls, plain.step.max.calls) << "every plain step queues the same calls";
  world->barrier();
  if (world->rank() == 0) std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Networks, StepWithoutWaits,
                         ::testing::Combine(::testing::Values("resnet20", "resnet50"),
                                            ::testing::Values(Precision::fp32, Precision::bf16, Precision::fp16)),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_" + precision_name(std::get<1>(info.param));
                         });

INSTANTIATE_TEST_SUITE_P(Backends, DeviceProfile, ::testing::Values(DeviceKind::cpu, DeviceKind::sim),
                         [](const auto& info) { return device_kind_name(info.param); });

}  // namespace

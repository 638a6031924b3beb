// GPU telemetry across ranks (train/interval_reducer.hpp), at any rank count: every rank's sample
// reaches every rank indexed by rank, a rank without telemetry (rank 1 here) is kept as a rank with
// no values, and with no telemetry on any rank the interval has none. The samples ride on the
// interval's one allgather of phase times: the collectives per interval are the same with and
// without telemetry (counted through a communicator that forwards to MPI).
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstdlib>

#include "scaletrain/comm/mpi_communicator.hpp"
#include "scaletrain/train/interval_reducer.hpp"

using namespace scaletrain;
using namespace scaletrain::train;

namespace {

// Forwards to MPI and counts the collectives it is asked for.
class CountingCommunicator : public comm::Communicator {
 public:
  explicit CountingCommunicator(comm::Communicator& inner) : inner_(inner) {}
  int collectives = 0;
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  int local_rank() const override { return inner_.local_rank(); }
  int local_size() const override { return inner_.local_size(); }
  const std::string& host() const override { return inner_.host(); }
  std::unique_ptr<comm::Request> allreduce_async(void* buf, int64_t count, DType dtype, comm::ReduceOp op) override {
    ++collectives;
    return inner_.allreduce_async(buf, count, dtype, op);
  }
  void allreduce(void* buf, int64_t count, DType dtype, comm::ReduceOp op) override {
    ++collectives;
    inner_.allreduce(buf, count, dtype, op);
  }
  void broadcast(void* buf, int64_t bytes, int root) override {
    ++collectives;
    inner_.broadcast(buf, bytes, root);
  }
  void gather(const void* send, int64_t bytes, void* recv, int root) override {
    ++collectives;
    inner_.gather(send, bytes, recv, root);
  }
  void allgather(const void* send, int64_t bytes, void* recv) override {
    ++collectives;
    inner_.allgather(send, bytes, recv);
  }
  void barrier() override {
    ++collectives;
    inner_.barrier();
  }
  std::string name() const override { return "counting " + inner_.name(); }
  [[noreturn]] void abort(int exit_code) override {
    inner_.abort(exit_code);
    std::abort();  // not reached
  }

 private:
  comm::Communicator& inner_;
};

TEST(GpuTelemetryAcrossRanks, EveryRanksSampleRidesOnThePhaseGather) {
  auto world = comm::make_mpi_communicator(MPI_COMM_WORLD);
  CountingCommunicator counted(*world);
  const int rank = world->rank(), size = world->size();
  IntervalReducer reducer(counted, 64, 0, 0);
  PhaseTimers timers;
  timers.add(Phase::forward, 0.01 * (rank + 1));
  const nn::LossResult sums{1.0, 1, 2};

  std::optional<GpuSample> mine;
  if (rank != 1) {
    mine = GpuSample{};
    mine->temperature_c = 50 + rank;
    mine->sm_clock_mhz = 1400 + rank;
    mine->clock_event_reasons = rank == 0 ? 0x4 : 0;
  }
  const int before = counted.collectives;
  const IntervalTimings with = reducer.close_interval(0, 10, sums, timers, 0.0, mine);
  const int with_telemetry = counted.collectives - before;
  const IntervalTimings without = reducer.close_interval(0, 20, sums, timers, 0.0, std::nullopt);
  const int without_telemetry = counted.collectives - before - with_telemetry;

  EXPECT_EQ(with_telemetry, 1);  // the phase-time allgather, nothing more
  EXPECT_EQ(without_telemetry, with_telemetry);
  ASSERT_EQ(static_cast<int>(with.gpus.size()), size);
  for (int r = 0; r < size; ++r) {
    const GpuSample& g = with.gpus[static_cast<size_t>(r)];
    if (r == 1) {
      EXPECT_TRUE(std::isnan(g.temperature_c) && std::isnan(g.sm_clock_mhz));
      EXPECT_EQ(g.clock_event_reasons, -1);
      continue;
    }
    EXPECT_EQ(g.temperature_c, 50 + r);
    EXPECT_EQ(g.sm_clock_mhz, 1400 + r);
    EXPECT_TRUE(std::isnan(g.power_w));
    EXPECT_EQ(g.clock_event_reasons, r == 0 ? 0x4 : 0);
  }
  EXPECT_TRUE(without.gpus.empty());
  // The phase times are reduced as before: ranks 0..n-1 spent 10, 20, ... ms in forward.
  EXPECT_NEAR(with.max[static_cast<int>(Phase::forward)], 0.01 * size, 1e-12);
  EXPECT_EQ(with.slowest_rank[static_cast<int>(Phase::forward)], size - 1);
}

}  // namespace

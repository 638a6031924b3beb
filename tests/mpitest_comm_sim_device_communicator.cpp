// The simulated NCCL path's communicator at any rank count: its collectives on sim device buffers
// (all-reduce with each op, avg bitwise the MPI path's sum / world for f32, broadcast, gather,
// allgather, barrier, a request), queue_allreduce ordered by events with no host wait, and comm.backend's
// resolution and the gradient communicator it selects, with the errors a user can run into.
#include <gtest/gtest.h>
#include <mpi.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "scaletrain/backend/backend.hpp"
#include "scaletrain/comm/gradient_transport.hpp"
#include "scaletrain/comm/mpi_communicator.hpp"
#include "scaletrain/comm/nccl_communicator.hpp"
#include "scaletrain/comm/sim_device_communicator.hpp"
#include "support/test_harness.hpp"

using namespace scaletrain;
using scaletrain::testing::error_of;

namespace {

class SimDeviceComm : public ::testing::Test {
 protected:
  void SetUp() override {
    host_ = comm::make_mpi_communicator(MPI_COMM_WORLD);
    BackendOptions o;
    o.kind = DeviceKind::sim;
    o.threads = 1;
    o.sim_max_delay_us = 200;
    o.sim_delay_seed = static_cast<uint64_t>(host_->rank()) + 3;
    sim_ = make_backend(o);
    dev_ = comm::make_sim_device_communicator(*host_, *sim_);
  }

  // A sim device tensor holding `values` (written on the compute stream, not waited for: the
  // communicator must order itself after it).
  template <class T>
  Tensor device(const std::vector<T>& values, DType dtype) {
    Tensor h({static_cast<int64_t>(values.size())}, dtype, "test.host");
    std::memcpy(h.raw(), values.data(), values.size() * sizeof(T));
    Tensor d = sim_->empty(h.shape(), dtype, "test.device");
    sim_->copy_async(sim_->compute_stream(), d, h);
    sim_->compute_stream().enqueue([h] {});  // keeps the host copy alive until the copy has run
    return d;
  }
  template <class T>
  std::vector<T> read(const Tensor& d) {
    const Tensor h = sim_->download(d);
    std::vector<T> v(static_cast<size_t>(h.numel()));
    std::memcpy(v.data(), h.raw(), h.bytes());
    return v;
  }

  std::unique_ptr<comm::Communicator> host_;
  std::unique_ptr<Backend> sim_;
  std::unique_ptr<comm::Communicator> dev_;
};

TEST_F(SimDeviceComm, IsADeviceCommunicatorOverTheHostsRanks) {
  EXPECT_TRUE(dev_->queues_on_stream());
  EXPECT_FALSE(host_->queues_on_stream());
  EXPECT_EQ(dev_->rank(), host_->rank());
  EXPECT_EQ(dev_->size(), host_->size());
  EXPECT_EQ(dev_->local_rank(), host_->local_rank());
  EXPECT_EQ(dev_->host(), host_->host());
  EXPECT_EQ(dev_->name(), "nccl-sim");
}

TEST_F(SimDeviceComm, AverageOfF32IsTheMpiPathsSumDividedByTheWorld) {
  const int n = host_->size(), r = host_->rank();
  std::vector<float> mine(1000);
  for (size_t i = 0; i < mine.size(); ++i) mine[i] = 0.1f * static_cast<float>(i % 17) + 0.37f * static_cast<float>(r);
  Tensor d = device(mine, DType::f32);
  dev_->allreduce(d.device_raw(), d.numel(), DType::f32, comm::ReduceOp::avg);
  std::vector<float> want = mine;
  // The MPI path's sum is the non-blocking all-reduce GradientBuckets issues (its algorithm, and so
  // the order of a 3-rank sum, may differ from the blocking one's).
  host_->allreduce_async(want.data(), static_cast<int64_t>(want.size()), DType::f32, comm::ReduceOp::sum)->wait();
  for (float& x : want) x /= static_cast<float>(n);
  EXPECT_EQ(std::memcmp(read<float>(d).data(), want.data(), want.size() * sizeof(float)), 0);
}

TEST_F(SimDeviceComm, SumMaxMinAndIntegerAverage) {
  const int n = host_->size(), r = host_->rank();
  for (const auto op : {comm::ReduceOp::sum, comm::ReduceOp::max, comm::ReduceOp::min, comm::ReduceOp::avg}) {
    Tensor d = device(std::vector<int32_t>{r, 10 * r + 1, -r}, DType::i32);
    dev_->allreduce(d.device_raw(), 3, DType::i32, op);
    const std::vector<int32_t> got = read<int32_t>(d);
    const int sum_r = n * (n - 1) / 2;
    std::vector<int32_t> want;
    switch (op) {
      case comm::ReduceOp::sum: want = {sum_r, 10 * sum_r + n, -sum_r}; break;
      case comm::ReduceOp::max: want = {n - 1, 10 * (n - 1) + 1, 0}; break;
      case comm::ReduceOp::min: want = {0, 1, -(n - 1)}; break;
      case comm::ReduceOp::avg: want = {sum_r / n, (10 * sum_r + n) / n, -sum_r / n}; break;
    }
    EXPECT_EQ(got, want) << comm::reduce_op_name(op);
  }
}

TEST_F(SimDeviceComm, HalfAverageIsPremultipliedAsNcclDoes) {
  // Every rank sends 3.0: ncclAvg multiplies by bf16(1/n) before the sum, so the mean is
  // n * bf16(3 * bf16(1/n)) summed in bf16 (exact for these small n), close to but not always 3.
  const int n = host_->size();
  Tensor d = device(std::vector<bf16>(8, float_to_bf16(3.0f)), DType::bf16);
  dev_->allreduce(d.device_raw(), 8, DType::bf16, comm::ReduceOp::avg);
  const float recip = bf16_to_float(float_to_bf16(static_cast<float>(1.0 / n)));
  float want = 0;
  for (int k = 0; k < n; ++k) want = bf16_to_float(float_to_bf16(want + bf16_to_float(float_to_bf16(3.0f * recip))));
  for (bf16 x : read<bf16>(d)) EXPECT_EQ(bf16_to_float(x), want);
}

TEST_F(SimDeviceComm, BroadcastGatherAllgatherAndBarrierOnDeviceBuffers) {
  const int n = host_->size(), r = host_->rank();
  const int root = n - 1;
  Tensor b = device(std::vector<int32_t>{r == root ? 42 : -1, r == root ? 7 : -1}, DType::i32);
  dev_->broadcast(b.device_raw(), 2 * sizeof(int32_t), root);
  EXPECT_EQ(read<int32_t>(b), (std::vector<int32_t>{42, 7}));

  Tensor mine = device(std::vector<int32_t>{100 + r}, DType::i32);
  Tensor all = device(std::vector<int32_t>(static_cast<size_t>(n), -1), DType::i32);
  dev_->allgather(mine.device_raw(), sizeof(int32_t), all.device_raw());
  std::vector<int32_t> want(static_cast<size_t>(n));
  for (int k = 0; k < n; ++k) want[static_cast<size_t>(k)] = 100 + k;
  EXPECT_EQ(read<int32_t>(all), want);

  Tensor gathered = device(std::vector<int32_t>(static_cast<size_t>(n), -1), DType::i32);
  dev_->gather(mine.device_raw(), sizeof(int32_t), gathered.device_raw(), 0);
  const std::vector<int32_t> at_root = read<int32_t>(gathered);
  if (r == 0) {
    EXPECT_EQ(at_root, want);
  }
  dev_->barrier();
  EXPECT_NE(error_of([&] { dev_->broadcast(b.device_raw(), 4, n); }).find("root"), std::string::npos);
}

TEST_F(SimDeviceComm, RequestCompletesWithTheAllReduce) {
  Tensor d = device(std::vector<float>(64, 1.0f), DType::f32);
  auto req = dev_->allreduce_async(d.device_raw(), 64, DType::f32, comm::ReduceOp::sum);
  req->wait();
  EXPECT_TRUE(req->test());
  for (float x : read<float>(d)) EXPECT_EQ(x, static_cast<float>(host_->size()));
}

TEST_F(SimDeviceComm, QueuedAllReduceWaitsForItsEventWithoutBlockingTheHost) {
  // The gradients are written only after a long sleep on the compute stream; queue_allreduce must
  // return at once and the all-reduce must still see the written values.
  Tensor d = sim_->zeros({256}, DType::f32, "test.grads");
  Tensor h({256}, DType::f32, "test.grads.host");
  for (int64_t i = 0; i < 256; ++i) h.data<float>()[i] = static_cast<float>(i);
  Stream& compute = sim_->compute_stream();
  compute.enqueue([] { std::this_thread::sleep_for(std::chrono::milliseconds(50)); });
  sim_->copy_async(compute, d, h);
  auto ready = sim_->make_event("test ready"), done = sim_->make_event("test done");
  compute.record(*ready);
  const auto t0 = std::chrono::steady_clock::now();
  dev_->queue_allreduce(d.device_raw(), 256, DType::f32, comm::ReduceOp::avg, *ready, *done);
  const double queued_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(queued_ms, 40.0) << "queue_allreduce blocked the host";
  compute.wait(*done);
  for (int64_t i = 0; i < 256; ++i) EXPECT_EQ(read<float>(d)[static_cast<size_t>(i)], static_cast<float>(i)) << i;
}

TEST(SimDeviceCommOverSelf, TakesItsRanksFromTheHostCommunicator) {
  // A one-rank host communicator (as the N-ranks-against-1-rank tests use) gives a one-rank device
  // communicator, whatever MPI_COMM_WORLD holds.
  auto self = comm::make_mpi_communicator(MPI_COMM_SELF);
  BackendOptions o;
  o.kind = DeviceKind::sim;
  o.threads = 1;
  std::unique_ptr<Backend> sim = make_backend(o);
  auto dev = comm::make_sim_device_communicator(*self, *sim);
  EXPECT_EQ(dev->size(), 1);
  EXPECT_EQ(dev->rank(), 0);
  Tensor h({4}, DType::f32, "test.host");
  for (int i = 0; i < 4; ++i) h.data<float>()[i] = 0.5f * static_cast<float>(i) + 0.1f;
  Tensor d = sim->empty({4}, DType::f32, "test.device");
  sim->copy_async(sim->compute_stream(), d, h);
  dev->allreduce(d.device_raw(), 4, DType::f32, comm::ReduceOp::avg);
  const Tensor back = sim->download(d);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(back.data<float>()[i], h.data<float>()[i]);
}

TEST(GradientTransport, CommBackendResolvesPerDevice) {
  using comm::CommBackend;
  EXPECT_EQ(comm::resolve_comm_backend(CommBackend::auto_, DeviceKind::cuda), CommBackend::nccl);
  EXPECT_EQ(comm::resolve_comm_backend(CommBackend::auto_, DeviceKind::cpu), CommBackend::mpi);
  EXPECT_EQ(comm::resolve_comm_backend(CommBackend::auto_, DeviceKind::sim), CommBackend::mpi);
  EXPECT_EQ(comm::resolve_comm_backend(CommBackend::nccl, DeviceKind::sim), CommBackend::nccl);
  EXPECT_EQ(comm::resolve_comm_backend(CommBackend::mpi, DeviceKind::cuda), CommBackend::mpi);
  EXPECT_NE(error_of([] { comm::resolve_comm_backend(CommBackend::nccl, DeviceKind::cpu); })
                .find("comm.backend = nccl needs a device"),
            std::string::npos);
  EXPECT_NE(error_of([] { comm::parse_comm_backend("gloo"); }).find("'gloo' is not one of auto, nccl, mpi"),
            std::string::npos);
  for (const auto b : {CommBackend::auto_, CommBackend::nccl, CommBackend::mpi})
    EXPECT_EQ(comm::parse_comm_backend(comm::comm_backend_name(b)), b);
}

TEST(GradientTransport, TheGradientCommunicatorFollowsTheBackend) {
  auto host = comm::make_mpi_communicator(MPI_COMM_WORLD);
  std::unique_ptr<Backend> cpu = make_cpu_backend(1);
  BackendOptions o;
  o.kind = DeviceKind::sim;
  o.threads = 1;
  std::unique_ptr<Backend> sim = make_backend(o);
  EXPECT_EQ(comm::make_gradient_communicator(*host, *cpu, comm::CommBackend::auto_), nullptr);
  EXPECT_EQ(comm::make_gradient_communicator(*host, *sim, comm::CommBackend::mpi), nullptr);
  auto dev = comm::make_gradient_communicator(*host, *sim, comm::CommBackend::nccl);
  ASSERT_NE(dev, nullptr);
  EXPECT_TRUE(dev->queues_on_stream());
  const std::string nccl_on_cpu =
      error_of([&] { comm::make_gradient_communicator(*host, *cpu, comm::CommBackend::nccl); });
  EXPECT_NE(nccl_on_cpu.find("run.device = cpu"), std::string::npos) << nccl_on_cpu;
  EXPECT_NE(error_of([&] { comm::make_sim_device_communicator(*host, *cpu); }).find("needs run.device = sim"),
            std::string::npos);
#if !SCALETRAIN_HAVE_CUDA
  EXPECT_NE(error_of([&] { comm::make_nccl_communicator(*host, *sim); }).find("this build has no NCCL"),
            std::string::npos);
#endif
}

}  // namespace

// A rank's device at start-up, at any rank count: two ranks of one host on one device are a
// consistent error naming them (a backend that reports the same PCI bus id on every rank), distinct
// devices are not, and rank 0's device tensor reaches every rank through the host on the cpu and
// the simulated device.
#include <gtest/gtest.h>
#include <mpi.h>

#include <string>
#include <vector>

#include "scaletrain/comm/mpi_communicator.hpp"
#include "scaletrain/train/device_setup.hpp"
#include "scaletrain/train/errors.hpp"

using namespace scaletrain;

namespace {

// The cpu backend, reporting `id` as its device.
class NamedDeviceBackend final : public Backend {
 public:
  explicit NamedDeviceBackend(std::string id) : inner_(make_cpu_backend(1)), id_(std::move(id)) {}
  std::string device_id() const override { return id_; }
  Device device() const override { return inner_->device(); }
  std::string description() const override { return inner_->description(); }
  int num_threads() const override { return inner_->num_threads(); }
  Tensor empty(Shape s, DType t, std::string n) override { return inner_->empty(std::move(s), t, std::move(n)); }
  Tensor pinned(Shape s, DType t, std::string n) override { return inner_->pinned(std::move(s), t, std::move(n)); }
  int64_t memory_in_use() const override { return inner_->memory_in_use(); }
  Stream& compute_stream() override { return inner_->compute_stream(); }
  Stream& copy_stream() override { return inner_->copy_stream(); }
  Stream& comm_stream() override { return inner_->comm_stream(); }
  std::unique_ptr<Event> make_event(std::string label) override { return inner_->make_event(std::move(label)); }
  PrecisionSupport precision_support(DType t) const override { return inner_->precision_support(t); }
  std::unique_ptr<ConvOp> make_conv(const ConvShape& s, Stream* st) override { return inner_->make_conv(s, st); }
  std::unique_ptr<InnerProductOp> make_inner_product(const InnerProductShape& s, Stream* st) override {
    return inner_->make_inner_product(s, st);
  }
  std::unique_ptr<PoolOp> make_pool(const PoolShape& s, Stream* st) override { return inner_->make_pool(s, st); }
  std::unique_ptr<MatmulOp> make_general_matmul(const MatmulShape& s, Stream* st) override {
    return inner_->make_matmul(s, st);
  }
  void drain_all() override { inner_->synchronize(); }

 private:
  std::unique_ptr<Backend> inner_;
  std::string id_;
};

TEST(DeviceSetup, TwoRanksOnOneDeviceAreAConsistentErrorNamingThem) {
  auto comm = comm::make_mpi_communicator(MPI_COMM_WORLD);
  NamedDeviceBackend same("00000000:1B:00.0");
  if (comm->local_size() == 1) {
    EXPECT_NO_THROW(train::check_devices_not_shared(*comm, same));
    return;
  }
  try {
    train::check_devices_not_shared(*comm, same);
    ADD_FAILURE() << "ranks sharing a device were not reported";
  } catch (const train::ConsistentError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("two ranks would share a device"), std::string::npos) << what;
    EXPECT_NE(what.find("ranks 0 and 1"), std::string::npos) << what;
    EXPECT_NE(what.find("00000000:1B:00.0"), std::string::npos) << what;
  }
}

TEST(DeviceSetup, DistinctDevicesAndUnownedDevicesPass) {
  auto comm = comm::make_mpi_communicator(MPI_COMM_WORLD);
  NamedDeviceBackend own("00000000:" + std::to_string(10 + comm->rank()) + ":00.0");
  EXPECT_NO_THROW(train::check_devices_not_shared(*comm, own));
  NamedDeviceBackend none("");  // cpu and sim ranks own no device
  EXPECT_NO_THROW(train::check_devices_not_shared(*comm, none));
}

TEST(DeviceSetup, BackendOptionsCarryTheLocalRank) {
  auto comm = comm::make_mpi_communicator(MPI_COMM_WORLD);
  const BackendOptions o = train::rank_backend_options(train::RunConfig{}, *comm);
  EXPECT_EQ(o.local_rank, comm->local_rank());
  EXPECT_EQ(o.local_size, comm->local_size());
}

TEST(DeviceSetup, BroadcastOfADeviceTensorGivesRankZerosValues) {
  auto comm = comm::make_mpi_communicator(MPI_COMM_WORLD);
  for (const DeviceKind kind : {DeviceKind::cpu, DeviceKind::sim}) {
    BackendOptions o;
    o.kind = kind;
    o.threads = 1;
    o.sim_max_delay_us = 200;
    std::unique_ptr<Backend> b = make_backend(o);
    Tensor t = b->empty({100}, DType::f32, "test.weights");
    std::vector<float> mine(100);
    for (int i = 0; i < 100; ++i) mine[static_cast<size_t>(i)] = static_cast<float>(i) + 0.5f * comm->rank();
    b->upload(t, mine);
    train::broadcast_tensor(*comm, *b, t, 0);
    const Tensor got = b->download(t);
    for (int i = 0; i < 100; ++i) ASSERT_EQ(got.data<float>()[i], static_cast<float>(i)) << device_kind_name(kind);
  }
}

}  // namespace

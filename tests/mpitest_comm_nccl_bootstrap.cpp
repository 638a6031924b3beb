// The NCCL bootstrap sequence at any rank count, with real MPI and fake NCCL calls: only rank 0 makes
// the unique id, every rank's init gets rank 0's bytes, its own rank and the world size, and the
// calls come in nccl-tests' order (get id, broadcast, init).
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "scaletrain/comm/mpi_communicator.hpp"
#include "scaletrain/comm/nccl_bootstrap.hpp"

using namespace scaletrain;
using comm::NcclUniqueIdBytes;

namespace {

// The id rank 0 "makes": every byte depends on its position, so a partial or shifted copy shows.
NcclUniqueIdBytes fake_id() {
  NcclUniqueIdBytes id{};
  for (size_t i = 0; i < id.size(); ++i) id[i] = static_cast<char>((i * 37 + 11) % 251);
  return id;
}

// The MPI communicator, with every broadcast written into the call log.
class RecordingCommunicator final : public comm::Communicator {
 public:
  RecordingCommunicator(comm::Communicator& mpi, std::vector<std::string>& calls) : mpi_(mpi), calls_(calls) {}
  int rank() const override { return mpi_.rank(); }
  int size() const override { return mpi_.size(); }
  int local_rank() const override { return mpi_.local_rank(); }
  int local_size() const override { return mpi_.local_size(); }
  const std::string& host() const override { return mpi_.host(); }
  std::unique_ptr<comm::Request> allreduce_async(void* b, int64_t n, DType t, comm::ReduceOp op) override {
    return mpi_.allreduce_async(b, n, t, op);
  }
  void allreduce(void* b, int64_t n, DType t, comm::ReduceOp op) override { mpi_.allreduce(b, n, t, op); }
  void broadcast(void* buf, int64_t bytes, int root) override {
    calls_.push_back("broadcast " + std::to_string(bytes) + " bytes from " + std::to_string(root));
    mpi_.broadcast(buf, bytes, root);
  }
  void gather(const void* s, int64_t n, void* r, int root) override { mpi_.gather(s, n, r, root); }
  void allgather(const void* s, int64_t n, void* r) override { mpi_.allgather(s, n, r); }
  void barrier() override { mpi_.barrier(); }
  std::string name() const override { return "recording"; }
  [[noreturn]] void abort(int code) override {
    mpi_.abort(code);
    std::abort();
  }

 private:
  comm::Communicator& mpi_;
  std::vector<std::string>& calls_;
};

TEST(NcclBootstrap, RankZeroMakesTheIdThenBroadcastThenEveryRankInitializesWithIt) {
  auto mpi = comm::make_mpi_communicator(MPI_COMM_WORLD);
  std::vector<std::string> calls;
  RecordingCommunicator host(*mpi, calls);
  int init_world = -1, init_rank = -1;
  NcclUniqueIdBytes seen{};
  const int result = comm::bootstrap_nccl(
      host,
      [&](NcclUniqueIdBytes& id) {
        calls.push_back("get_id");
        id = fake_id();
      },
      [&](int world, const NcclUniqueIdBytes& id, int rank) {
        calls.push_back("init");
        init_world = world;
        init_rank = rank;
        seen = id;
        return rank * 10;
      });
  std::vector<std::string> expected = {"broadcast 128 bytes from 0", "init"};
  if (host.rank() == 0) expected.insert(expected.begin(), "get_id");
  EXPECT_EQ(calls, expected);
  EXPECT_EQ(init_world, host.size());
  EXPECT_EQ(init_rank, host.rank());
  EXPECT_EQ(seen, fake_id()) << "rank " << host.rank() << " initialized with other bytes than rank 0 made";
  EXPECT_EQ(result, host.rank() * 10) << "the init callable's result is returned";
}

TEST(NcclBootstrap, ExactlyOneRankMakesAnId) {
  auto host = comm::make_mpi_communicator(MPI_COMM_WORLD);
  int gets = 0;
  comm::bootstrap_nccl(
      *host,
      [&](NcclUniqueIdBytes& id) {
        ++gets;
        id = fake_id();
      },
      [](int, const NcclUniqueIdBytes&, int) { return 0; });
  int total = gets;
  host->allreduce(&total, 1, DType::i32, comm::ReduceOp::sum);
  EXPECT_EQ(total, 1);
  EXPECT_EQ(gets, host->rank() == 0 ? 1 : 0);
}

}  // namespace

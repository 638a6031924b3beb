// MPI communicator tests at any rank count: all-reduce (sync and async; f32, i32, bf16, f16, u8;
// sum, max, min; several sizes), broadcast from every root, gather, allgather, barrier, identity.
#include <gtest/gtest.h>
#include <mpi.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "scaletrain/comm/mpi_communicator.hpp"
#include "scaletrain/core/error.hpp"
#include "scaletrain/core/half.hpp"
#include "scaletrain/core/timer.hpp"

using namespace scaletrain;
using scaletrain::comm::ReduceOp;

namespace {

std::unique_ptr<comm::Communicator> world() { return comm::make_mpi_communicator(MPI_COMM_WORLD); }

const std::vector<int64_t> kCounts = {1, 7, 1000, (1 << 18) + 3};

// Rank r contributes (r + 1) * k(i), with k(i) a small integer, so every sum is exact.
int key(int64_t i) { return static_cast<int>(i % 17) - 5; }

}  // namespace

TEST(MpiCommunicator, IdentityMatchesMpiWorld) {
  auto c = world();
  int rank = -1, size = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  EXPECT_EQ(c->rank(), rank);
  EXPECT_EQ(c->size(), size);
  EXPECT_EQ(c->name(), "mpi");
  EXPECT_FALSE(c->host().empty());
  EXPECT_TRUE(c->allows_other_threads());  // tests/main.cpp asks for MPI_THREAD_MULTIPLE
}

TEST(MpiCommunicator, LocalRankAgreesWithHostNames) {
  auto c = world();
  constexpr int64_t kLen = 256;
  char mine[kLen] = {};
  std::snprintf(mine, kLen, "%s", c->host().c_str());
  std::vector<char> all(static_cast<size_t>(kLen * c->size()));
  c->allgather(mine, kLen, all.data());
  int expect_local_rank = 0, expect_local_size = 0;
  for (int r = 0; r < c->size(); ++r) {
    const bool same = std::strcmp(&all[static_cast<size_t>(r * kLen)], mine) == 0;
    if (same) ++expect_local_size;
    if (same && r < c->rank()) ++expect_local_rank;
  }
  EXPECT_EQ(c->local_rank(), expect_local_rank);
  EXPECT_EQ(c->local_size(), expect_local_size);
  EXPECT_LT(c->local_rank(), c->local_size());
  // Every rank of these tests runs on this one machine.
  EXPECT_EQ(c->local_size(), c->size());
  EXPECT_EQ(c->local_rank(), c->rank());
}

TEST(MpiCommunicator, AllreduceFloatSumMaxMin) {
  auto c = world();
  const int n = c->size(), r = c->rank();
  for (int64_t count : kCounts) {
    std::vector<float> s(static_cast<size_t>(count)), mx(s.size()), mn(s.size());
    for (int64_t i = 0; i < count; ++i) {
      s[static_cast<size_t>(i)] = static_cast<float>((r + 1) * key(i));
      mx[static_cast<size_t>(i)] = mn[static_cast<size_t>(i)] = static_cast<float>(r * key(i));
    }
    c->allreduce(s.data(), count, DType::f32, ReduceOp::sum);
    c->allreduce(mx.data(), count, DType::f32, ReduceOp::max);
    c->allreduce(mn.data(), count, DType::f32, ReduceOp::min);
    int64_t wrong = 0;
    for (int64_t i = 0; i < count; ++i) {
      const float k = static_cast<float>(key(i));
      const float hi = k >= 0 ? static_cast<float>(n - 1) * k : 0.0f;
      const float lo = k >= 0 ? 0.0f : static_cast<float>(n - 1) * k;
      wrong += s[static_cast<size_t>(i)] != static_cast<float>(n * (n + 1) / 2) * k;
      wrong += mx[static_cast<size_t>(i)] != hi;
      wrong += mn[static_cast<size_t>(i)] != lo;
    }
    EXPECT_EQ(wrong, 0) << "count " << count;
  }
}

TEST(MpiCommunicator, AllreduceInt32AndUint8) {
  auto c = world();
  const int n = c->size(), r = c->rank();
  for (int64_t count : kCounts) {
    std::vector<int32_t> s(static_cast<size_t>(count));
    std::vector<uint8_t> mx(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) {
      s[static_cast<size_t>(i)] = (r + 1) * key(i) * 1000003;
      mx[static_cast<size_t>(i)] = static_cast<uint8_t>((r * 31 + i) % 251);
    }
    c->allreduce(s.data(), count, DType::i32, ReduceOp::sum);
    c->allreduce(mx.data(), count, DType::u8, ReduceOp::max);
    int64_t wrong = 0;
    for (int64_t i = 0; i < count; ++i) {
      wrong += s[static_cast<size_t>(i)] != n * (n + 1) / 2 * key(i) * 1000003;
      int best = 0;
      for (int q = 0; q < n; ++q) best = std::max<int>(best, static_cast<int>((q * 31 + i) % 251));
      wrong += mx[static_cast<size_t>(i)] != best;
    }
    EXPECT_EQ(wrong, 0) << "count " << count;
  }
}

TEST(MpiCommunicator, AllreduceHalfPrecisionReducesInFloat) {
  auto c = world();
  const int n = c->size(), r = c->rank();
  const int64_t count = 1031;
  std::vector<bf16> b(static_cast<size_t>(count));
  std::vector<f16> h(static_cast<size_t>(count)), hmin(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    b[static_cast<size_t>(i)] = float_to_bf16(static_cast<float>((r + 1) * key(i)));
    h[static_cast<size_t>(i)] = float_to_f16(0.5f * static_cast<float>((r + 1) * key(i)));
    hmin[static_cast<size_t>(i)] = float_to_f16(static_cast<float>(r * key(i)));
  }
  c->allreduce(b.data(), count, DType::bf16, ReduceOp::sum);
  c->allreduce(h.data(), count, DType::f16, ReduceOp::sum);
  c->allreduce(hmin.data(), count, DType::f16, ReduceOp::min);
  int64_t wrong = 0;
  for (int64_t i = 0; i < count; ++i) {
    const float k = static_cast<float>(key(i));
    const float tri = static_cast<float>(n * (n + 1) / 2);
    wrong += bf16_to_float(b[static_cast<size_t>(i)]) != tri * k;
    wrong += f16_to_float(h[static_cast<size_t>(i)]) != 0.5f * tri * k;
    wrong += f16_to_float(hmin[static_cast<size_t>(i)]) != (k >= 0 ? 0.0f : static_cast<float>(n - 1) * k);
  }
  EXPECT_EQ(wrong, 0);
}

TEST(MpiCommunicator, AllreduceAsyncCompletesThroughTestAndWait) {
  auto c = world();
  const int n = c->size(), r = c->rank();
  const int64_t count = (1 << 20) + 5;
  std::vector<float> a(static_cast<size_t>(count), static_cast<float>(r + 1));
  std::vector<float> b(static_cast<size_t>(count), static_cast<float>(2 * r));
  auto ra = c->allreduce_async(a.data(), count, DType::f32, ReduceOp::sum);
  auto rb = c->allreduce_async(b.data(), count, DType::f32, ReduceOp::max);
  const double t0 = now_seconds();
  while (!ra->test()) ASSERT_LT(now_seconds() - t0, 60.0) << "all-reduce never completed through test()";
  EXPECT_TRUE(ra->test());  // completion is sticky
  rb->wait();
  rb->wait();
  int64_t wrong = 0;
  for (int64_t i = 0; i < count; ++i) {
    wrong += a[static_cast<size_t>(i)] != static_cast<float>(n * (n + 1) / 2);
    wrong += b[static_cast<size_t>(i)] != static_cast<float>(2 * (n - 1));
  }
  EXPECT_EQ(wrong, 0);
}

TEST(MpiCommunicator, BroadcastFromEveryRoot) {
  auto c = world();
  for (int root = 0; root < c->size(); ++root) {
    for (int64_t bytes : {int64_t{1}, int64_t{13}, int64_t{1 << 20}}) {
      std::vector<uint8_t> buf(static_cast<size_t>(bytes));
      for (int64_t i = 0; i < bytes; ++i)
        buf[static_cast<size_t>(i)] = c->rank() == root ? static_cast<uint8_t>((i * 7 + root) & 0xff) : 0xee;
      c->broadcast(buf.data(), bytes, root);
      int64_t wrong = 0;
      for (int64_t i = 0; i < bytes; ++i) wrong += buf[static_cast<size_t>(i)] != static_cast<uint8_t>((i * 7 + root) & 0xff);
      EXPECT_EQ(wrong, 0) << "root " << root << ", " << bytes << " bytes";
    }
  }
}

TEST(MpiCommunicator, GatherAndAllgatherInRankOrder) {
  auto c = world();
  const int n = c->size();
  for (int64_t per : {int64_t{1}, int64_t{3}, int64_t{40000}}) {
    std::vector<int32_t> mine(static_cast<size_t>(per));
    for (int64_t i = 0; i < per; ++i) mine[static_cast<size_t>(i)] = c->rank() * 100000 + static_cast<int32_t>(i);
    const int64_t bytes = per * static_cast<int64_t>(sizeof(int32_t));
    std::vector<int32_t> all(static_cast<size_t>(per * n), -1);
    c->allgather(mine.data(), bytes, all.data());
    for (int root = 0; root < n; ++root) {
      std::vector<int32_t> got(c->rank() == root ? static_cast<size_t>(per * n) : 0, -1);
      c->gather(mine.data(), bytes, got.data(), root);
      if (c->rank() == root) {
        EXPECT_EQ(got, all) << "gather to root " << root;
      }
    }
    int64_t wrong = 0;
    for (int q = 0; q < n; ++q)
      for (int64_t i = 0; i < per; ++i) wrong += all[static_cast<size_t>(q * per + i)] != q * 100000 + static_cast<int32_t>(i);
    EXPECT_EQ(wrong, 0) << per << " ints per rank";
  }
}

TEST(MpiCommunicator, BarrierHoldsEveryRankUntilTheLastArrives) {
  auto c = world();
  c->barrier();
  const double t0 = now_seconds();
  if (c->rank() == c->size() - 1) std::this_thread::sleep_for(std::chrono::milliseconds(150));
  c->barrier();
  EXPECT_GE(now_seconds() - t0, 0.14);
}

TEST(MpiCommunicator, BadArgumentsRaiseClearErrors) {
  auto c = world();
  float x = 0;
  try {
    c->broadcast(&x, sizeof x, c->size());
    FAIL() << "broadcast from a root outside the communicator did not throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("root " + std::to_string(c->size()) + " is not a rank"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(c->allreduce(&x, -1, DType::f32, ReduceOp::sum), Error);
  EXPECT_THROW(c->allreduce_async(&x, int64_t{1} << 32, DType::f32, ReduceOp::sum), Error);
}

TEST(MpiCommunicator, SelfCommunicatorIsOneRank) {
  auto c = comm::make_mpi_communicator(MPI_COMM_SELF);
  EXPECT_EQ(c->size(), 1);
  EXPECT_EQ(c->rank(), 0);
  EXPECT_EQ(c->local_size(), 1);
  float v[3] = {1.5f, -2.0f, 3.0f};
  c->allreduce(v, 3, DType::f32, ReduceOp::sum);
  EXPECT_EQ(v[0], 1.5f);
  EXPECT_EQ(v[1], -2.0f);
}

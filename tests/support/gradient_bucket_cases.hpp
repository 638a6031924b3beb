// The GradientBuckets cases every exchange must pass, at any rank count: bucket layout (one bucket,
// many, uneven, oversize parameter), the global mean after wait_all() with f32, bf16 and f16 on the
// wire and with pre-divided gradients, on the cpu backend and on the simulated device (with random
// delays, so a bucket reduced before its gradients are written is caught), rank-dependent ready
// order, repeated steps and statistics. A test file instantiates BucketsTest with its Modes.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <mpi.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "scaletrain/backend/backend.hpp"
#include "scaletrain/comm/bucket_exchange.hpp"
#include "scaletrain/comm/gradient_buckets.hpp"
#include "scaletrain/comm/mpi_communicator.hpp"
#include "scaletrain/core/error.hpp"

namespace scaletrain::bucket_cases {

using comm::GradientBuckets;
using comm::GradientSlice;


inline constexpr int64_t kPrefix = 3;  // elements before the first slice, which buckets must not touch
inline constexpr float kSentinel = -77.25f;

inline std::vector<GradientSlice> layout(const std::vector<int64_t>& counts) {
  std::vector<GradientSlice> s;
  int64_t off = kPrefix;
  for (int64_t c : counts) {
    s.push_back({off, c});
    off += c;
  }
  return s;
}

// Rank r writes (r + 1) * k(i) + step at element i: small integers, so sums are exact.
inline float contribution(int rank, int64_t i, int step) { return static_cast<float>((rank + 1) * static_cast<int>(i % 13 - 4) + step); }

inline float expected_mean(int n, int64_t i, int step) {
  float sum = 0;
  for (int r = 0; r < n; ++r) sum += contribution(r, i, step);
  return sum / static_cast<float>(n);
}

struct Case {
  std::vector<int64_t> counts;
  int64_t bucket_bytes;
  int64_t expected_buckets;
};

// A host vector seen as a cpu tensor (the tests below that need no device).
inline Tensor host_view(std::vector<float>& v) {
  return Tensor::adopt(v.data(), v.size() * sizeof(float), {static_cast<int64_t>(v.size())}, DType::f32, Device::cpu,
                       "test.gradients", nullptr);
}

inline Backend& cpu() {
  static std::unique_ptr<Backend> b = make_cpu_backend(1);
  return *b;
}

// How a parameterized run reduces: the host progress mode, the device, and the exchange (by default
// the built-in one for the device).
struct Mode {
  std::string progress, device;
  comm::BucketExchangeFactory exchange = comm::make_bucket_exchange;
};

inline std::string mode_name(const ::testing::TestParamInfo<Mode>& info) {
  return info.param.progress + "_" + info.param.device;
}

class BucketsTest : public ::testing::TestWithParam<Mode> {
 protected:
  void SetUp() override {
    comm_ = comm::make_mpi_communicator(MPI_COMM_WORLD);
    BackendOptions o;
    o.kind = parse_device_kind(GetParam().device);
    o.threads = 1;
    o.sim_max_delay_us = 300;  // the gradients arrive late: the all-reduce must wait for them
    o.sim_delay_seed = static_cast<uint64_t>(comm_->rank()) + 1;
    backend_ = make_backend(o);
  }

  // Runs `steps` steps, marking slices ready in a rank-dependent random order (polling between
  // marks, as the training loop does between layers), and checks every element after each step.
  // wire: the gradients' type on the wire. bf16 carries these small integers and their sums
  // exactly (the mean is divided in f32), so it must match bitwise; f16 is divided by the world
  // size before rounding, so it matches within f16 rounding. pre_divided: each rank writes its
  // contribution divided by the world size, and the buckets must only sum (within the rounding of
  // the divided values in the wire type, and of a 3-rank sum's order).
  void run(const Case& c, int steps, DType wire = DType::f32, bool pre_divided = false) {
    const auto slices = layout(c.counts);
    const int64_t total = std::accumulate(c.counts.begin(), c.counts.end(), int64_t{0});
    std::vector<float> grads(static_cast<size_t>(kPrefix + total + 2), kSentinel);
    Tensor host = Tensor(Shape{static_cast<int64_t>(grads.size())}, DType::f32, "test.gradients.host");
    std::copy(grads.begin(), grads.end(), host.data<float>());
    Tensor device = backend_->empty(host.shape(), DType::f32, "test.gradients");
    Stream& compute = backend_->compute_stream();
    backend_->copy_async(compute, device, host);
    compute.synchronize();
    GradientBuckets buckets(*comm_, *backend_, device, slices, c.bucket_bytes,
                            comm::parse_comm_progress(GetParam().progress), wire, pre_divided, GetParam().exchange);
    ASSERT_EQ(buckets.bucket_count(), c.expected_buckets);
    const int n = comm_->size(), r = comm_->rank();
    std::mt19937 rng(1234u + static_cast<unsigned>(r));
    std::vector<size_t> order(slices.size());
    for (int step = 0; step < steps; ++step) {
      for (int64_t i = 0; i < total; ++i)
        host.data<float>()[kPrefix + i] = contribution(r, i, step) / (pre_divided ? static_cast<float>(n) : 1.0f);
      std::iota(order.begin(), order.end(), size_t{0});
      std::shuffle(order.begin(), order.end(), rng);
      buckets.begin_step(step);
      for (size_t s : order) {
        // "Backward" writes this gradient on the compute stream, then marks it ready.
        const GradientSlice& sl = slices[s];
        backend_->copy_async(compute, device.view(sl.offset, {sl.count}), host.view(sl.offset, {sl.count}));
        buckets.mark_ready(s);
        buckets.poll();
      }
      buckets.wait_all();
      const Tensor result = backend_->download(device);
      std::copy(result.data<float>(), result.data<float>() + result.numel(), grads.begin());
      int64_t wrong = 0, first_wrong = -1;
      float tol = wire == DType::f16 ? 2e-3f : 0.0f;  // relative
      if (pre_divided) tol = wire == DType::f32 ? 1e-6f : wire == DType::bf16 ? 1e-2f : 2e-3f;
      for (int64_t i = 0; i < total; ++i)
        if (std::fabs(grads[static_cast<size_t>(kPrefix + i)] - expected_mean(n, i, step)) >
            tol * std::fabs(expected_mean(n, i, step))) {
          if (first_wrong < 0) first_wrong = i;
          ++wrong;
        }
      EXPECT_EQ(wrong, 0) << "step " << step << ", first wrong element " << first_wrong;
      for (int64_t i = 0; i < kPrefix; ++i) EXPECT_EQ(grads[static_cast<size_t>(i)], kSentinel);
      EXPECT_EQ(grads[static_cast<size_t>(kPrefix + total)], kSentinel);
      EXPECT_EQ(grads[static_cast<size_t>(kPrefix + total + 1)], kSentinel);
    }
    const comm::BucketStats st = buckets.stats();
    const int64_t reduced = n > 1 ? steps : 0;  // one rank: no all-reduce at all
    EXPECT_EQ(st.buckets, reduced * c.expected_buckets);
    EXPECT_EQ(st.bytes, reduced * total * static_cast<int64_t>(dtype_size(wire)));
    const std::vector<comm::BucketEvent> events = buckets.take_events();
    EXPECT_EQ(static_cast<int64_t>(events.size()), reduced * c.expected_buckets) << "every step's, once";
    if (!events.empty()) {
      EXPECT_EQ(events.back().step, steps - 1);
    }
    EXPECT_GE(st.allreduce_seconds, 0.0);
    EXPECT_GE(st.exposed_seconds, 0.0);
    buckets.reset_stats();
    EXPECT_EQ(buckets.stats().buckets, 0);
    EXPECT_EQ(buckets.stats().exposed_seconds, 0.0);
  }

  std::unique_ptr<comm::Communicator> comm_;
  std::unique_ptr<Backend> backend_;
};

// A resnet-like mix of sizes (elements) that divides into no bucket size used here.
inline const std::vector<int64_t> kMixed = {10, 5000, 7, 1152, 64, 64, 36864, 3, 9, 100003, 1, 257};

TEST_P(BucketsTest, OneBucketHoldsEverything) { run({kMixed, 25 * 1024 * 1024, 1}, 3); }

TEST_P(BucketsTest, TinyBucketsGiveOneBucketPerParameter) {
  run({kMixed, 4, static_cast<int64_t>(kMixed.size())}, 3);
}

TEST_P(BucketsTest, UnevenBucketsCloseBeforeOverflowing) {
  // 24 KB buckets: {10, 5000, 7, 1152}=24676 B would exceed -> {10,5000,7}; {1152,64,64}; {36864}
  // (oversize, alone); {3, 9}; {100003} (oversize); {1, 257}.
  run({kMixed, 24 * 1024, 6}, 3);
}

TEST_P(BucketsTest, ParameterLargerThanABucketGetsItsOwn) { run({{2, 300000, 2, 2}, 1024, 3}, 2); }

TEST_P(BucketsTest, SingleParameter) { run({{(1 << 20) + 1}, 25 * 1024 * 1024, 1}, 2); }

TEST_P(BucketsTest, Bf16OnTheWire) {
  run({kMixed, 24 * 1024, 6}, 3, DType::bf16);
  run({kMixed, 4, static_cast<int64_t>(kMixed.size())}, 2, DType::bf16);
}

TEST_P(BucketsTest, Fp16OnTheWireIsDividedBeforeTheSum) {
  run({kMixed, 24 * 1024, 6}, 3, DType::f16);
  run({{(1 << 20) + 1}, 25 * 1024 * 1024, 1}, 2, DType::f16);
}

TEST_P(BucketsTest, PreDividedGradientsAreOnlySummed) {
  for (DType wire : {DType::f32, DType::bf16, DType::f16}) {
    SCOPED_TRACE(dtype_name(wire));
    run({kMixed, 24 * 1024, 6}, 2, wire, true);
  }
}

}  // namespace scaletrain::bucket_cases

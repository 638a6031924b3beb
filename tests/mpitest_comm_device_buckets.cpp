// GradientBuckets on the simulated device, at any rank count: the stream-ordered transport (the NCCL
// path with its simulation on the sim communication stream) and the host-staged one (MPI through
// pinned host copies) against the host path on the cpu backend, with the same random gradients
// arriving in a rank-dependent order, with random delays on every sim stream. f32 must match
// bitwise; bf16 and f16 through the host-staged path too; stream-ordered bf16/f16 (averaged as
// ncclAvg does) within their rounding. A missing wait on the gradients-ready event must be caught.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <thread>
#include <vector>

#include "scaletrain/backend/backend.hpp"
#include "scaletrain/comm/gradient_buckets.hpp"
#include "scaletrain/comm/gradient_transport.hpp"
#include "scaletrain/comm/mpi_communicator.hpp"
#include "scaletrain/kernels/random.hpp"

using namespace scaletrain;
using comm::BucketTransport;
using comm::GradientBuckets;
using comm::GradientSlice;

namespace {

// A gradient layout and the number of buckets it makes.
struct Layout {
  std::vector<int64_t> counts;
  int64_t bucket_bytes;
};

// How one run reduces: the device, the transport, the host progress mode, sim delays, and the sim
// events that never wait (fault injection).
struct Path {
  DeviceKind device = DeviceKind::cpu;
  comm::CommBackend backend = comm::CommBackend::mpi;
  comm::CommProgress progress = comm::CommProgress::test;
  int64_t delay_us = 0;
  std::string ignore_events;
  int64_t slow_backward_us = 0;  // a sleep queued on the compute stream before each step's gradients
};

constexpr int kSteps = 3;
const std::vector<int64_t> kMixed = {10, 5000, 7, 1152, 64, 64, 36864, 3, 9, 100003, 1, 257};

// Rank r's gradient at element i of step `step`: random in [-1, 1), different on every rank.
float gradient(int rank, int step, int64_t i) {
  return 2.0f * kernels::uniform01(1234, static_cast<uint64_t>(rank * 16 + step), static_cast<uint64_t>(i)) - 1.0f;
}

// A run on the simulated device.
Path sim_path(comm::CommBackend backend, comm::CommProgress progress, int64_t delay_us) {
  Path p;
  p.device = DeviceKind::sim;
  p.backend = backend;
  p.progress = progress;
  p.delay_us = delay_us;
  return p;
}

std::vector<GradientSlice> slices_of(const Layout& l) {
  std::vector<GradientSlice> s;
  int64_t off = 0;
  for (int64_t c : l.counts) {
    s.push_back({off, c});
    off += c;
  }
  return s;
}

class BucketRun {
 public:
  BucketRun(comm::Communicator& host, const Path& p) : host_(host), path_(p) {
    BackendOptions o;
    o.kind = p.device;
    o.threads = 1;
    o.sim_max_delay_us = p.delay_us;
    o.sim_delay_seed = static_cast<uint64_t>(host.rank()) + 7;
    o.sim_ignore_events = p.ignore_events;
    backend_ = make_backend(o);
    device_comm_ = comm::make_gradient_communicator(host, *backend_, p.backend);
  }

  comm::Communicator& comm() { return device_comm_ ? *device_comm_ : host_; }

  // Every step's reduced gradients, concatenated.
  std::vector<float> reduce(const Layout& l, DType wire, BucketTransport expected) {
    const auto slices = slices_of(l);
    const int64_t total = std::accumulate(l.counts.begin(), l.counts.end(), int64_t{0});
    Tensor host({total}, DType::f32, "test.gradients.host");
    Tensor device = backend_->zeros({total}, DType::f32, "test.gradients");
    GradientBuckets buckets(comm(), *backend_, device, slices, l.bucket_bytes, path_.progress, wire);
    EXPECT_EQ(buckets.exchange().name(), comm::bucket_transport_name(expected));
    std::mt19937 order_rng(99u + static_cast<unsigned>(host_.rank()));
    std::vector<size_t> order(slices.size());
    std::vector<float> out;
    Stream& compute = backend_->compute_stream();
    for (int step = 0; step < kSteps; ++step) {
      for (int64_t i = 0; i < total; ++i) host.data<float>()[i] = gradient(host_.rank(), step, i);
      std::iota(order.begin(), order.end(), size_t{0});
      std::shuffle(order.begin(), order.end(), order_rng);
      buckets.begin_step(step);
      if (path_.slow_backward_us > 0)
        compute.enqueue([us = path_.slow_backward_us] { std::this_thread::sleep_for(std::chrono::microseconds(us)); });
      for (size_t s : order) {
        const GradientSlice& sl = slices[s];
        backend_->copy_async(compute, device.view(sl.offset, {sl.count}), host.view(sl.offset, {sl.count}));
        buckets.mark_ready(s);
        buckets.poll();
      }
      buckets.wait_all();
      const Tensor result = backend_->download(device);
      out.insert(out.end(), result.data<float>(), result.data<float>() + total);
    }
    check_stats(buckets, total, wire);
    return out;
  }

 private:
  void check_stats(GradientBuckets& buckets, int64_t total, DType wire) {
    const int n = host_.size();
    const comm::BucketStats st = buckets.stats();
    const int64_t reduced = n > 1 ? kSteps : 0;
    EXPECT_EQ(st.buckets, reduced * buckets.bucket_count());
    EXPECT_EQ(st.bytes, reduced * total * static_cast<int64_t>(dtype_size(wire)));
    // Every step's all-reduces, each once, tagged with its step, in step order.
    const std::vector<comm::BucketEvent> events = buckets.take_events();
    EXPECT_EQ(static_cast<int64_t>(events.size()), reduced * buckets.bucket_count());
    for (size_t k = 0; k < events.size(); ++k) {
      EXPECT_LE(events[k].start, events[k].end) << "bucket " << events[k].bucket;
      EXPECT_EQ(events[k].step, static_cast<int64_t>(k) / buckets.bucket_count()) << "event " << k;
    }
    EXPECT_TRUE(buckets.take_events().empty()) << "taken once";
    EXPECT_GE(st.allreduce_seconds, 0.0);
    EXPECT_GE(st.exposed_seconds, 0.0);
  }

  comm::Communicator& host_;
  Path path_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<comm::Communicator> device_comm_;
};

int64_t bitwise_differences(const std::vector<float>& a, const std::vector<float>& b) {
  int64_t d = 0;
  for (size_t i = 0; i < a.size(); ++i) d += std::memcmp(&a[i], &b[i], sizeof(float)) != 0;
  return d;
}

// |got - want| <= tol * max(|want|, 1) everywhere (the gradients are of order 1, their means can
// cancel to near 0); returns the first element out of tolerance, or -1.
int64_t first_outside(const std::vector<float>& got, const std::vector<float>& want, float tol) {
  for (size_t i = 0; i < got.size(); ++i)
    if (!(std::fabs(got[i] - want[i]) <= tol * std::max(std::fabs(want[i]), 1.0f))) return static_cast<int64_t>(i);
  return -1;
}

class DeviceBuckets : public ::testing::TestWithParam<DType> {
 protected:
  void SetUp() override { host_ = comm::make_mpi_communicator(MPI_COMM_WORLD); }

  std::vector<float> run(const Path& p, const Layout& l, BucketTransport expected) {
    BucketRun r(*host_, p);
    return r.reduce(l, GetParam(), expected);
  }
  // The host path on the cpu backend: what every device path must reproduce. It is checked here
  // against the exact means, so that agreeing with it is not agreeing with a wrong answer.
  std::vector<float> reference(const Layout& l) {
    std::vector<float> ref = run(Path{}, l, BucketTransport::host);
    const float tol = GetParam() == DType::bf16 ? 2e-2f : GetParam() == DType::f16 ? 3e-3f : 1e-6f;
    EXPECT_EQ(first_outside(ref, exact_means(l), tol), -1) << "the host path's means are wrong";
    return ref;
  }
  std::vector<float> exact_means(const Layout& l) const {
    const int64_t total = std::accumulate(l.counts.begin(), l.counts.end(), int64_t{0});
    std::vector<float> m;
    for (int step = 0; step < kSteps; ++step)
      for (int64_t i = 0; i < total; ++i) {
        double sum = 0;
        for (int r = 0; r < host_->size(); ++r) sum += gradient(r, step, i);
        m.push_back(static_cast<float>(sum / host_->size()));
      }
    return m;
  }

  std::unique_ptr<comm::Communicator> host_;
};

const std::vector<Layout> kLayouts = {{kMixed, 24 * 1024}, {kMixed, 4}, {kMixed, 25 * 1024 * 1024}};

TEST_P(DeviceBuckets, HostStagedMatchesTheHostPathBitwise) {
  for (const Layout& l : kLayouts) {
    const std::vector<float> want = reference(l);
    for (const auto progress : {comm::CommProgress::test, comm::CommProgress::thread}) {
      const Path p = sim_path(comm::CommBackend::mpi, progress, 300);
      const std::vector<float> got = run(p, l, BucketTransport::host_staged);
      ASSERT_EQ(got.size(), want.size());
      EXPECT_EQ(bitwise_differences(got, want), 0)
          << "progress " << comm::comm_progress_name(progress) << ", bucket bytes " << l.bucket_bytes;
    }
  }
}

TEST_P(DeviceBuckets, StreamOrderedMatchesTheHostPath) {
  // f32: bitwise (the simulation divides as the MPI path does). bf16/f16: ncclAvg's pre-multiplied
  // sum against the MPI path's divided one, within the type's rounding.
  const DType wire = GetParam();
  const float tol = wire == DType::bf16 ? 2e-2f : 3e-3f;
  for (const Layout& l : kLayouts) {
    const std::vector<float> want = reference(l);
    for (int64_t delay : {int64_t{0}, int64_t{300}}) {
      const Path p = sim_path(comm::CommBackend::nccl, comm::CommProgress::test, delay);
      const std::vector<float> got = run(p, l, BucketTransport::stream_ordered);
      ASSERT_EQ(got.size(), want.size());
      if (wire == DType::f32 || host_->size() == 1)
        EXPECT_EQ(bitwise_differences(got, want), 0) << "delay " << delay << ", bucket bytes " << l.bucket_bytes;
      else
        EXPECT_EQ(first_outside(got, want, tol), -1) << "delay " << delay << ", bucket bytes " << l.bucket_bytes;
    }
  }
}

TEST_P(DeviceBuckets, AMissingWaitOnTheReadyEventIsCaught) {
  // Backward is slow (a sleep queued before the gradients are written) and the "bucket ready"
  // events never make anyone wait: the transport reads last step's gradients, and the means differ.
  if (host_->size() == 1) GTEST_SKIP() << "one rank reduces nothing";
  const Layout l{kMixed, 24 * 1024};
  const std::vector<float> want = reference(l);
  for (const auto backend : {comm::CommBackend::mpi, comm::CommBackend::nccl}) {
    Path p = sim_path(backend, comm::CommProgress::test, 0);
    p.ignore_events = "bucket ready";
    p.slow_backward_us = 20000;
    const BucketTransport t =
        backend == comm::CommBackend::nccl ? BucketTransport::stream_ordered : BucketTransport::host_staged;
    EXPECT_GT(bitwise_differences(run(p, l, t), want), 0)
        << comm::bucket_transport_name(t) << ": the missing wait went unseen";
  }
}

INSTANTIATE_TEST_SUITE_P(Wire, DeviceBuckets, ::testing::Values(DType::f32, DType::bf16, DType::f16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(DeviceBucketsTimes, StreamOrderedTimesComeFromEvents) {
  auto host = comm::make_mpi_communicator(MPI_COMM_WORLD);
  BucketRun r(*host, sim_path(comm::CommBackend::nccl, comm::CommProgress::test, 200));
  const std::vector<float> got = r.reduce({kMixed, 24 * 1024}, DType::f32, BucketTransport::stream_ordered);
  EXPECT_FALSE(got.empty());  // check_stats inside reduce() checks counts, bytes and event order
}

}  // namespace

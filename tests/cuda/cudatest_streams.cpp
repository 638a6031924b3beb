// CUDA streams and events on a GPU: queued work runs later and in order; an event recorded on one
// stream orders another stream's work after it; query and synchronize; completion times measured
// on the device, in steady-clock seconds, across clock re-anchoring; errors of host work reach the
// host; the captures of host work are destroyed on the host, not in the runtime's callback.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "cuda/cuda_test_support.hpp"
#include "scaletrain/backend/cuda/cuda_event.hpp"
#include "scaletrain/backend/cuda/cuda_stream.hpp"
#include "scaletrain/backend/cuda/device_clock.hpp"
#include "scaletrain/backend/launch.hpp"
#include "scaletrain/core/timer.hpp"
#include "scaletrain/kernels/scale.hpp"
#include "support/test_harness.hpp"

using namespace scaletrain;
using namespace scaletrain::testing;

namespace {

using CudaStreams = CudaTest;

void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

TEST_F(CudaStreams, QueuedWorkRunsLaterInOrder) {
  Stream& s = backend->compute_stream();
  EXPECT_FALSE(s.runs_inline());
  EXPECT_NE(s.cuda_handle(), nullptr);
  std::atomic<bool> release{false};
  std::vector<int> order;
  s.enqueue([&release] {
    while (!release) std::this_thread::yield();
  });
  for (int i = 0; i < 100; ++i) s.enqueue([&order, i] { order.push_back(i); });
  auto done = backend->make_event("done");
  s.record(*done);
  EXPECT_FALSE(done->query()) << "an event behind unfinished work is not complete";
  EXPECT_TRUE(order.empty()) << "enqueue must return before the work runs";
  release = true;
  done->synchronize();
  EXPECT_TRUE(done->query());
  s.synchronize();
  ASSERT_EQ(order.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(order[static_cast<size_t>(i)], i);
}

// The copy stream writes a device buffer late; the compute stream doubles it after waiting on the
// copy's event, so it reads the copied values.
TEST_F(CudaStreams, EventOrdersAnotherStreamsWork) {
  Backend& b = *backend;
  Tensor host = b.pinned({1 << 20}, DType::f32, "host");
  for (int64_t i = 0; i < host.numel(); ++i) host.data<float>()[i] = 3.0f;
  Tensor dev = b.zeros({1 << 20}, DType::f32, "dev");
  b.synchronize();
  auto copied = b.make_event("batch copied");
  b.copy_stream().enqueue([] { sleep_ms(50); });
  b.copy_async(b.copy_stream(), dev, host);
  b.copy_stream().record(*copied);
  b.compute_stream().wait(*copied);
  launch(b.compute_stream(), "double", dev.numel(), kernels::Scale{dev.device_data<float>(), 2.0f});
  const std::vector<float> out = to_host<float>(b, dev);
  for (size_t i = 0; i < out.size(); i += 4099) ASSERT_EQ(out[i], 6.0f) << "element " << i;
  EXPECT_EQ(out.back(), 6.0f);
}

TEST_F(CudaStreams, WaitOnANeverRecordedEventDoesNotWait) {
  auto never = backend->make_event("never recorded");
  EXPECT_TRUE(never->query());
  backend->compute_stream().wait(*never);
  backend->compute_stream().synchronize();
  EXPECT_NE(error_of([&] { (void)never->completion_time(); }).find("'never recorded' was never recorded"),
            std::string::npos);
}

TEST_F(CudaStreams, CompletionTimesAreSteadyClockSecondsMeasuredOnTheDevice) {
  Stream& s = backend->compute_stream();
  auto t0 = backend->make_event("t0"), t1 = backend->make_event("t1");
  const double before = now_seconds();
  s.record(*t0);
  s.enqueue([] { sleep_ms(30); });
  s.record(*t1);
  t1->synchronize();
  const double after = now_seconds();
  const double a = t0->completion_time(), z = t1->completion_time();
  EXPECT_GE(z - a, 0.029) << "the 30 ms of work between the events";
  EXPECT_LT(z - a, 1.0);
  // On the host's clock: between the record and the synchronize, within the anchor's uncertainty.
  EXPECT_GE(a, before - 1e-3);
  EXPECT_LE(z, after + 1e-3);
}

// Events measured against different anchors (a clock renewed at every record) still differ by the
// work between them.
TEST_F(CudaStreams, CompletionTimesAgreeAcrossClockAnchors) {
  auto clock = std::make_shared<cuda::DeviceClock>(0, 0.0);
  cuda::CudaStream s("anchored", 0);
  cuda::CudaEvent e0("e0", 0, clock), e1("e1", 0, clock), e2("e2", 0, clock);
  s.record(e0);
  s.enqueue([] { sleep_ms(20); });
  s.record(e1);
  s.enqueue([] { sleep_ms(20); });
  s.record(e2);
  s.synchronize();
  const double a = e0.completion_time(), m = e1.completion_time(), z = e2.completion_time();
  EXPECT_GE(m - a, 0.019);
  EXPECT_GE(z - m, 0.019);
  EXPECT_LT(z - a, 0.5);
}

TEST_F(CudaStreams, ErrorsOfHostWorkReachTheHostOnce) {
  Stream& s = backend->compute_stream();
  s.enqueue([] { ST_FAIL("host work failed on the stream"); });
  EXPECT_NE(error_of([&] { s.synchronize(); }).find("host work failed on the stream"), std::string::npos);
  s.synchronize();  // reported once
}

TEST_F(CudaStreams, HostWorkCapturesAreReleasedOnTheHost) {
  Backend& b = *backend;
  {
    Tensor t = b.empty({1 << 16}, DType::f32, "captured");
    b.compute_stream().enqueue([t] { (void)t.numel(); });
  }
  EXPECT_GT(b.memory_in_use(), 0) << "the queued work holds the tensor";
  b.compute_stream().synchronize();
  EXPECT_EQ(b.memory_in_use(), 0) << "the work ran and its capture was destroyed by the next host call";
}

TEST_F(CudaStreams, DescriptionNamesTheDeviceAndTheLibraries) {
  const std::string d = backend->description();
  EXPECT_EQ(d.rfind("cuda 0 (", 0), 0u) << d;
  EXPECT_NE(d.find(" GiB, PCI "), std::string::npos) << d;
  EXPECT_NE(d.find("CUDA runtime 13."), std::string::npos) << d;
  EXPECT_NE(d.find(", cuDNN 9."), std::string::npos) << d;
  EXPECT_NE(d.find(", NCCL 2."), std::string::npos) << d;
  EXPECT_NE(d.find(backend->device_id()), std::string::npos) << "the PCI bus id: " << backend->device_id();
  EXPECT_EQ(backend->device(), Device::cuda);
  EXPECT_NE(error_of([&] { (void)backend->make_conv(ConvShape{}); }).find("invalid convolution conv{"), std::string::npos);
}

}  // namespace

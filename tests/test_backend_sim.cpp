// The simulated device as the CUDA orchestration relies on it: work queued on a stream runs later,
// in order, on the stream's own thread; events order streams and say when work has completed;
// copies are real copies into separate device memory that host code cannot read; the capacity
// turns into an out-of-memory error naming the tensor; worker threads use the cpu thread count;
// errors of queued work reach the host. And the cpu backend's two operator settings agree.
#include <gtest/gtest.h>
#include <omp.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <future>
#include <thread>
#include <vector>

#include "scaletrain/backend/backend.hpp"
#include "scaletrain/backend/launch.hpp"
#include "scaletrain/core/error.hpp"
#include "scaletrain/core/timer.hpp"
#include "scaletrain/kernels/scale.hpp"
#include "support/test_harness.hpp"

using namespace scaletrain;
using scaletrain::testing::error_of;

namespace {

std::unique_ptr<Backend> sim(int64_t memory_bytes = 0, int threads = 1, std::string ignore = {}) {
  BackendOptions o;
  o.kind = DeviceKind::sim;
  o.threads = threads;
  o.sim_memory_bytes = memory_bytes;
  o.sim_ignore_events = std::move(ignore);
  return make_backend(o);
}

TEST(SimDevice, QueuedWorkRunsLaterOnTheStreamThread) {
  auto b = sim();
  Stream& s = b->compute_stream();
  EXPECT_FALSE(s.runs_inline());
  std::atomic<bool> release{false}, ran{false};
  std::thread::id worker;
  s.enqueue([&] {
    while (!release) std::this_thread::yield();
    worker = std::this_thread::get_id();
    ran = true;
  });
  auto done = b->make_event("done");
  s.record(*done);
  EXPECT_FALSE(ran) << "enqueue must return before the work runs";
  EXPECT_FALSE(done->query()) << "an event behind unfinished work is not complete";
  release = true;
  done->synchronize();
  EXPECT_TRUE(ran);
  EXPECT_TRUE(done->query());
  EXPECT_NE(worker, std::this_thread::get_id());
}

TEST(SimDevice, StreamRunsItsQueueInOrder) {
  auto b = sim();
  std::vector<int> order;
  for (int i = 0; i < 200; ++i) b->compute_stream().enqueue([&order, i] { order.push_back(i); });
  b->compute_stream().synchronize();
  ASSERT_EQ(order.size(), 200u);
  for (int i = 0; i < 200; ++i) EXPECT_EQ(order[static_cast<size_t>(i)], i);
}

// The copy stream writes a device buffer late; the compute stream doubles it after waiting on the
// copy's event. Without the wait (an ignored event) the compute stream reads what was there before.
double copy_then_double(const std::string& ignore) {
  auto b = sim(0, 1, ignore);
  Tensor host({1024}, DType::f32, "host");
  for (int64_t i = 0; i < 1024; ++i) host.data<float>()[i] = 3.0f;
  Tensor dev = b->zeros({1024}, DType::f32, "dev");
  b->synchronize();
  auto copied = b->make_event("batch copied");
  b->copy_stream().enqueue([] { std::this_thread::sleep_for(std::chrono::milliseconds(50)); });
  b->copy_async(b->copy_stream(), dev, host);
  b->copy_stream().record(*copied);
  b->compute_stream().wait(*copied);
  launch(b->compute_stream(), "double", dev.numel(), kernels::Scale{dev.device_data<float>(), 2.0f});
  const Tensor out = b->download(dev);
  b->synchronize();
  return out.data<float>()[1000];
}

TEST(SimDevice, EventsOrderStreams) {
  EXPECT_EQ(copy_then_double(""), 6.0);
  EXPECT_NE(copy_then_double("batch copied"), 6.0) << "with the wait removed the compute stream must race ahead";
}

TEST(SimDevice, EventTimesMeasureTheWorkBetweenThem) {
  auto b = sim();
  auto t0 = b->make_event("t0"), t1 = b->make_event("t1");
  EXPECT_TRUE(t0->query()) << "a never-recorded event is complete";
  b->compute_stream().record(*t0);
  b->compute_stream().enqueue([] { std::this_thread::sleep_for(std::chrono::milliseconds(30)); });
  b->compute_stream().record(*t1);
  t1->synchronize();
  EXPECT_GE(t1->completion_time() - t0->completion_time(), 0.029);
}

TEST(SimDevice, CopiesAreRealCopiesIntoSeparateMemory) {
  auto b = sim();
  Tensor host({16}, DType::i32, "host");
  for (int i = 0; i < 16; ++i) host.data<int32_t>()[i] = i;
  Tensor dev = b->empty({16}, DType::i32, "dev");
  EXPECT_EQ(dev.device(), Device::sim);
  EXPECT_NE(dev.device_raw(), host.device_raw());
  b->copy_async(b->compute_stream(), dev, host);
  b->compute_stream().synchronize();
  host.data<int32_t>()[5] = 99;  // after the copy: the device keeps 5
  const Tensor back = b->download(dev);
  EXPECT_EQ(back.data<int32_t>()[5], 5);
  EXPECT_EQ(back.data<int32_t>()[15], 15);
}

TEST(SimDevice, HostReadOfADeviceTensorIsAnErrorNamingIt) {
  auto b = sim();
  Tensor dev = b->zeros({2, 3}, DType::f32, "conv2d_1.pre");
  const std::string e = error_of([&] { (void)dev.data<float>(); });
  EXPECT_NE(e.find("host access to tensor 'conv2d_1.pre' [2, 3] f32, which lives on the sim device"), std::string::npos)
      << e;
  EXPECT_NE(error_of([&] { (void)dev.view(1, {2}).raw(); }).find("'conv2d_1.pre'"), std::string::npos);
  EXPECT_NE(error_of([&] { dev.fill_zero(); }).find("conv2d_1.pre"), std::string::npos);
  EXPECT_NE(error_of([&] { (void)dev.clone(); }).find("conv2d_1.pre"), std::string::npos);
}

TEST(SimDevice, OutOfMemoryNamesTheTensorAndTheBytes) {
  auto b = sim(1 << 20);  // 1 MiB
  Tensor a = b->empty({100000}, DType::f32, "model.parameters");  // 400,000 bytes
  EXPECT_EQ(b->memory_in_use(), 400000);
  const std::string e = error_of([&] { (void)b->empty({200000}, DType::f32, "model.gradients"); });
  EXPECT_NE(e.find("sim device out of memory: tensor 'model.gradients' [200000] f32 needs 800000 bytes, 400000 of "
                   "1048576 bytes are in use"),
            std::string::npos)
      << e;
  a = Tensor();  // freed: now it fits
  EXPECT_EQ(b->memory_in_use(), 0);
  Tensor g = b->empty({200000}, DType::f32, "model.gradients");
  EXPECT_EQ(b->memory_in_use(), 800000);
}

// Writes `value` into every element (a launch that outlives its tensor's handle below).
struct FillWith {
  float* out;
  float value;
  void operator()(int64_t i) const { out[i] = value; }
};

// A tensor released while a launch on it is still queued is freed in the compute stream's order,
// after that launch: memory allocated meanwhile is another block, which the launch leaves alone (an
// immediate free would let the allocator hand the same block out, and the launch write into it).
TEST(SimDevice, ReleasedMemoryIsFreedAfterTheWorkQueuedBeforeIt) {
  auto b = sim(0);
  const int64_t n = 1024;  // small enough for the host allocator to hand a freed block out again
  std::promise<void> go;
  std::shared_future<void> gate = go.get_future().share();
  b->compute_stream().enqueue([gate] { gate.wait(); });
  Tensor t = b->empty({n}, DType::f32, "released");
  launch(b->compute_stream(), "fill", n, FillWith{t.device_data<float>(), 7.0f});
  const void* old = t.device_raw();
  t = Tensor();
  Tensor u = b->empty({n}, DType::f32, "allocated meanwhile");
  EXPECT_NE(u.device_raw(), old);
  go.set_value();
  const Tensor host = b->download(u);
  for (int64_t i = 0; i < n; ++i) ASSERT_TRUE(std::isnan(host.data<float>()[i])) << "element " << i;
  EXPECT_EQ(b->memory_in_use(), n * 4);
}

TEST(SimDevice, StreamThreadsUseTheCpuThreadCount) {
  for (int threads : {1, 2}) {
    auto b = sim(0, threads);
    int seen = 0;
    b->compute_stream().enqueue([&] { seen = omp_get_max_threads(); });
    b->compute_stream().synchronize();
    EXPECT_EQ(seen, threads);
    EXPECT_EQ(b->num_threads(), threads);
  }
}

TEST(SimDevice, ErrorsOfQueuedWorkReachTheHost) {
  auto b = sim();
  b->compute_stream().enqueue([] { ST_FAIL("kernel failed on the device"); });
  EXPECT_NE(error_of([&] { b->compute_stream().synchronize(); }).find("kernel failed on the device"), std::string::npos);
  b->compute_stream().synchronize();  // reported once
}

TEST(CpuDevice, StreamsRunInlineAndEventsCompleteWhenRecorded) {
  auto b = make_cpu_backend(1);
  bool ran = false;
  b->compute_stream().enqueue([&] { ran = true; });
  EXPECT_TRUE(ran);
  auto e = b->make_event("e");
  const double before = now_seconds();
  b->compute_stream().record(*e);
  EXPECT_TRUE(e->query());
  EXPECT_GE(e->completion_time(), before);
  Tensor t = b->empty({4}, DType::f32, "t");
  EXPECT_EQ(t.device(), Device::cpu);
  t.data<float>()[0] = 1.0f;  // the cpu device is the host
}

TEST(CpuDevice, OperatorsRefuseDtypesTheyCannotRun) {
  auto b = make_cpu_backend(1);
  InnerProductShape s;
  s.batch = 2;
  s.in_features = 3;
  s.out_features = 4;
  s.dtype = DType::i32;
  EXPECT_NE(error_of([&] { (void)b->make_inner_product(s); }).find("computes in f32, bf16 or f16, not i32"),
            std::string::npos);
}

// run.cpu_onednn_only: both settings compute the same inner product, pointwise convolution and max
// pooling of an odd channel count (the fast paths against oneDNN's primitives).
TEST(CpuDevice, OnednnOnlyAndFastPathsAgree) {
  auto fast = make_cpu_backend(1, false), onednn = make_cpu_backend(1, true);
  EXPECT_EQ(fast->description().find("oneDNN primitives only"), std::string::npos);
  EXPECT_NE(onednn->description().find("oneDNN primitives only"), std::string::npos);
  std::vector<float> x(4 * 6 * 6 * 6), w(5 * 6), bias(5), y1(4 * 6 * 6 * 5), y2(y1.size());
  // Distinct values (7919 is prime to 1000): no ties for the max pooling's argmax.
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 7919) % 1000) * 0.001f - 0.5f;
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>((i * 11) % 7) * 0.2f - 0.6f;
  for (size_t i = 0; i < bias.size(); ++i) bias[i] = 0.1f * static_cast<float>(i);
  ConvShape c;
  c.batch = 4;
  c.in_h = c.in_w = 6;
  c.in_c = 6;
  c.out_c = 5;
  c.kernel_h = c.kernel_w = 1;
  fast->make_conv(c)->forward(x.data(), w.data(), bias.data(), y1.data());
  onednn->make_conv(c)->forward(x.data(), w.data(), bias.data(), y2.data());
  for (size_t i = 0; i < y1.size(); ++i) ASSERT_NEAR(y1[i], y2[i], 1e-5) << "pointwise conv element " << i;
  InnerProductShape ip;
  ip.batch = 4;
  ip.in_features = 6 * 6 * 6;
  ip.out_features = 5;
  std::vector<float> wip(5 * 216), z1(20), z2(20);
  for (size_t i = 0; i < wip.size(); ++i) wip[i] = static_cast<float>((i * 13) % 9) * 0.05f - 0.2f;
  fast->make_inner_product(ip)->forward(x.data(), wip.data(), bias.data(), z1.data());
  onednn->make_inner_product(ip)->forward(x.data(), wip.data(), bias.data(), z2.data());
  for (size_t i = 0; i < z1.size(); ++i) ASSERT_NEAR(z1[i], z2[i], 1e-4) << "inner product element " << i;
  PoolShape p;
  p.batch = 4;
  p.in_h = p.in_w = 6;
  p.channels = 6;
  std::vector<float> q1(4 * 3 * 3 * 6), q2(q1.size()), dx1(x.size()), dx2(x.size()), dq(q1.size(), 1.0f);
  auto pf = fast->make_pool(p), po = onednn->make_pool(p);
  pf->forward(x.data(), q1.data(), true);
  po->forward(x.data(), q2.data(), true);
  EXPECT_EQ(q1, q2);
  pf->backward(dq.data(), dx1.data());
  po->backward(dq.data(), dx2.data());
  EXPECT_EQ(dx1, dx2);
}

}  // namespace

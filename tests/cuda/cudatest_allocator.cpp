// The CUDA backend's caching allocator on a GPU: freed device memory is reused, a training-like
// loop allocates nothing from the device after its first step, a block is not reused while the
// device may still use it, and an allocation beyond the device's memory fails naming the tensor.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "cuda/cuda_test_support.hpp"
#include "scaletrain/backend/cuda/cuda_backend.hpp"
#include "scaletrain/backend/launch.hpp"
#include "scaletrain/kernels/scale.hpp"
#include "support/test_harness.hpp"

using namespace scaletrain;
using namespace scaletrain::testing;

namespace {

using CudaAllocator = CudaTest;

TEST_F(CudaAllocator, FreedMemoryIsReused) {
  Backend& b = *backend;
  void* first = nullptr;
  {
    Tensor t = b.empty({1000}, DType::f32, "t");
    EXPECT_EQ(t.device(), Device::cuda);
    first = t.device_raw();
    EXPECT_EQ(b.memory_in_use(), 4096);  // 4000 bytes rounded to 512
  }
  EXPECT_EQ(b.memory_in_use(), 0);
  b.synchronize();  // the release fence completes
  Tensor again = b.empty({1000}, DType::f32, "again");
  EXPECT_EQ(again.device_raw(), first);
  EXPECT_EQ(cuda::allocator_stats(b).raw_allocations, 1);
}

TEST_F(CudaAllocator, SteadyStateLoopAllocatesNothingFromTheDevice) {
  Backend& b = *backend;
  Tensor weights = b.zeros({4096}, DType::f32, "weights");
  int64_t after_warmup = 0;
  for (int step = 0; step < 40; ++step) {
    Tensor act = b.empty({65536}, DType::f32, "activations");
    Tensor grad = b.zeros({65536}, DType::f32, "gradients");
    launch(b.compute_stream(), "scale", act.numel(), kernels::Scale{act.device_data<float>(), 0.5f});
    launch(b.compute_stream(), "scale", grad.numel(), kernels::Scale{grad.device_data<float>(), 2.0f});
    // The host runs ahead of the device by at most two steps, as the trainer's phase clock bounds it.
    if (step % 2 == 1) b.compute_stream().synchronize();
    if (step == 9) after_warmup = cuda::allocator_stats(b).raw_allocations;
  }
  b.synchronize();
  const AllocatorStats s = cuda::allocator_stats(b);
  EXPECT_EQ(s.raw_allocations, after_warmup) << "steps after the warm-up must reuse cached blocks";
  EXPECT_GT(s.reuses, 50);
  EXPECT_EQ(s.bytes_in_use, 4096 * 4);
}

TEST_F(CudaAllocator, BlockIsNotReusedWhileQueuedWorkMayUseIt) {
  Backend& b = *backend;
  std::atomic<bool> release{false};
  void* first = nullptr;
  {
    Tensor t = b.empty({256}, DType::f32, "busy");
    first = t.device_raw();
    // The compute stream is held by host work, so the release fence cannot complete.
    b.compute_stream().enqueue([&release] {
      while (!release) std::this_thread::yield();
    });
  }
  Tensor other = b.empty({256}, DType::f32, "other");
  EXPECT_NE(other.device_raw(), first) << "the released block was handed out while the device may use it";
  release = true;
  b.synchronize();
  Tensor later = b.empty({256}, DType::f32, "later");
  EXPECT_EQ(later.device_raw(), first);
}

TEST_F(CudaAllocator, OutOfMemoryNamesTheTensorAndTheBytes) {
  Backend& b = *backend;
  Tensor kept = b.empty({1 << 20}, DType::f32, "model.parameters");
  const std::string e = error_of([&] { (void)b.empty({int64_t{1} << 40}, DType::u8, "model.gradients"); });
  EXPECT_NE(e.find("out of memory: tensor 'model.gradients' needs 1099511627776 bytes"), std::string::npos) << e;
  EXPECT_NE(e.find("4194304 bytes are in use by other tensors"), std::string::npos) << e;
  EXPECT_NE(e.find("lower train.batch"), std::string::npos) << e;
  // The failed cudaMalloc left no error behind for the next launch to report.
  launch(b.compute_stream(), "scale", kept.numel(), kernels::Scale{kept.device_data<float>(), 1.0f});
  b.synchronize();
}

TEST_F(CudaAllocator, TensorsMayOutliveTheBackend) {
  Tensor t = backend->zeros({1024}, DType::f32, "outlives");
  Tensor p = backend->pinned({1024}, DType::f32, "pinned outlives");
  backend.reset();  // t and p are freed when they go, after the backend
  EXPECT_EQ(t.device(), Device::cuda);
}

}  // namespace

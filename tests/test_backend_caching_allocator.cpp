// The caching device allocator on a fake device with a capacity: freed blocks are reused (best fit)
// and a training-like loop allocates nothing after its first step; a block is not handed out
// before its "reusable" predicate says so; out of memory frees the cache and retries once, then
// fails naming the tensor and the bytes.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <set>
#include <vector>

#include "scaletrain/backend/caching_allocator.hpp"
#include "support/test_harness.hpp"

using namespace scaletrain;
using scaletrain::testing::error_of;

namespace {

// A device of `capacity` bytes; counts calls and remembers what is live.
struct FakeDevice {
  size_t capacity = 1 << 20;
  size_t used = 0;
  int waits = 0;
  std::map<void*, size_t> live;

  RawMemory raw(bool with_wait = true) {
    RawMemory r;
    r.allocate = [this](size_t bytes) -> void* {
      if (used + bytes > capacity) return nullptr;
      void* p = std::malloc(bytes);
      live[p] = bytes;
      used += bytes;
      return p;
    };
    r.free = [this](void* p) {
      used -= live.at(p);
      live.erase(p);
      std::free(p);
    };
    if (with_wait) r.wait_idle = [this] { ++waits; };
    return r;
  }
};

TEST(CachingAllocator, RoundsSizesAndGivesEveryBlockItsOwnAddress) {
  FakeDevice dev;
  CachingAllocator a(dev.raw(), "fake device");
  EXPECT_EQ(a.round_up(0), 512u);
  EXPECT_EQ(a.round_up(1), 512u);
  EXPECT_EQ(a.round_up(512), 512u);
  EXPECT_EQ(a.round_up(513), 1024u);
  const auto b0 = a.allocate(0, "empty"), b1 = a.allocate(0, "empty too");
  EXPECT_NE(b0.ptr, b1.ptr);
  EXPECT_EQ(b0.bytes, 512u);
  EXPECT_EQ(a.stats().bytes_in_use, 1024);
  a.release(b0.ptr);
  a.release(b1.ptr);
}

TEST(CachingAllocator, FreedBlocksAreReusedBestFit) {
  FakeDevice dev;
  CachingAllocator a(dev.raw(), "fake device");
  const auto big = a.allocate(4096, "big"), small = a.allocate(1000, "small");
  a.release(big.ptr);
  a.release(small.ptr);
  EXPECT_EQ(a.stats().bytes_cached, 4096 + 1024);
  EXPECT_EQ(a.stats().bytes_in_use, 0);
  const auto again = a.allocate(700, "again");  // 1024 rounded: the small block, not the big one
  EXPECT_EQ(again.ptr, small.ptr);
  EXPECT_EQ(again.bytes, 1024u);
  const auto tiny = a.allocate(100, "tiny");  // 512: the 4096 block is more than twice too big
  EXPECT_NE(tiny.ptr, big.ptr);
  const AllocatorStats s = a.stats();
  EXPECT_EQ(s.raw_allocations, 3);
  EXPECT_EQ(s.reuses, 1);
  EXPECT_EQ(s.bytes_in_use, 1024 + 512);
  EXPECT_EQ(s.bytes_cached, 4096);
  a.release(again.ptr);
  a.release(tiny.ptr);
}

TEST(CachingAllocator, SteadyStateLoopAllocatesNothingFromTheDevice) {
  FakeDevice dev;
  CachingAllocator a(dev.raw(), "fake device");
  std::vector<CachingAllocator::Block> persistent;
  for (size_t bytes : {40000u, 4000u, 400u}) persistent.push_back(a.allocate(bytes, "parameter"));
  int64_t after_first_step = 0;
  for (int step = 0; step < 50; ++step) {
    std::vector<CachingAllocator::Block> activations;
    for (size_t bytes : {65536u, 32768u, 32768u, 1000u, 12u}) activations.push_back(a.allocate(bytes, "activation"));
    for (auto& b : activations) a.release(b.ptr);
    if (step == 0) after_first_step = a.stats().raw_allocations;
  }
  EXPECT_EQ(after_first_step, 3 + 5);
  EXPECT_EQ(a.stats().raw_allocations, after_first_step) << "steps after the first must reuse cached blocks";
  EXPECT_EQ(a.stats().raw_frees, 0);
  for (auto& b : persistent) a.release(b.ptr);
}

TEST(CachingAllocator, BlockIsNotReusedBeforeItsPredicateSaysSo) {
  FakeDevice dev;
  CachingAllocator a(dev.raw(), "fake device");
  const auto b = a.allocate(2048, "gradients");
  bool device_done = false;
  int asked = 0;
  a.release(b.ptr, [&] {
    ++asked;
    return device_done;
  });
  const auto c = a.allocate(2048, "next");
  EXPECT_NE(c.ptr, b.ptr) << "queued work may still use the released block";
  EXPECT_GT(asked, 0);
  device_done = true;
  const auto d = a.allocate(2048, "after");
  EXPECT_EQ(d.ptr, b.ptr);
  a.release(c.ptr);
  a.release(d.ptr);
}

TEST(CachingAllocator, OutOfMemoryFreesTheCacheAndRetriesOnce) {
  FakeDevice dev;
  dev.capacity = 8192;
  CachingAllocator a(dev.raw(), "fake device");
  const auto b = a.allocate(6000, "old activations");  // 6144 rounded
  a.release(b.ptr);
  const auto c = a.allocate(7000, "new activations");  // 7168: does not fit beside the cached 6144
  EXPECT_EQ(a.stats().raw_frees, 1);
  EXPECT_EQ(a.stats().bytes_cached, 0);
  EXPECT_EQ(dev.waits, 0) << "the cached block was reusable: nothing to wait for";
  a.release(c.ptr);
}

TEST(CachingAllocator, BlocksStillInUseByTheDeviceAreFreedAfterWaitingForIt) {
  FakeDevice dev;
  dev.capacity = 8192;
  CachingAllocator a(dev.raw(), "fake device");
  const auto b = a.allocate(6000, "old activations");
  a.release(b.ptr, [] { return false; });  // queued work is still using it
  const auto c = a.allocate(7000, "new activations");
  EXPECT_EQ(dev.waits, 1);
  EXPECT_EQ(a.stats().raw_frees, 1);
  a.release(c.ptr);
}

TEST(CachingAllocator, WithoutAWaitBlocksInUseByTheDeviceAreKept) {
  FakeDevice dev;
  dev.capacity = 8192;
  CachingAllocator a(dev.raw(false), "fake device");
  const auto b = a.allocate(6000, "old activations");
  a.release(b.ptr, [] { return false; });
  const std::string e = error_of([&] { (void)a.allocate(7000, "new activations"); });
  EXPECT_NE(e.find("6144 bytes were cached (freed, and the allocation retried once) (6144 of them kept"),
            std::string::npos)
      << e;
  EXPECT_EQ(dev.live.size(), 1u) << "a block queued work may use must not be freed";
}

TEST(CachingAllocator, OutOfMemoryNamesTheTensorTheBytesAndWhatToLower) {
  FakeDevice dev;
  dev.capacity = 1 << 20;
  CachingAllocator a(dev.raw(), "cuda device 0 (fake)");
  const auto params = a.allocate(400000, "model.parameters");  // 400384 rounded
  const auto old = a.allocate(300000, "old");                   // 300032 rounded
  a.release(old.ptr);
  const std::string e = error_of([&] { (void)a.allocate(800000, "model.gradients"); });
  EXPECT_NE(e.find("cuda device 0 (fake) out of memory: tensor 'model.gradients' needs 800000 bytes (800256 as "
                   "allocated); 400384 bytes are in use by other tensors and 300032 bytes were cached (freed, and the "
                   "allocation retried once): lower train.batch"),
            std::string::npos)
      << e;
  EXPECT_EQ(a.stats().bytes_cached, 0);
  EXPECT_EQ(a.stats().bytes_in_use, 400384);
  a.release(params.ptr);
  const auto g = a.allocate(800000, "model.gradients");  // fits now
  a.release(g.ptr);
}

TEST(CachingAllocator, ReleaseOfAForeignPointerIsAnError) {
  FakeDevice dev;
  CachingAllocator a(dev.raw(), "fake device");
  int x = 0;
  EXPECT_NE(error_of([&] { a.release(&x); }).find("which it did not hand out"), std::string::npos);
}

TEST(CachingAllocator, AfterStopCachingReleasesFreeAtOnce) {
  FakeDevice dev;
  CachingAllocator a(dev.raw(), "fake device");
  const auto b = a.allocate(100, "b"), c = a.allocate(100, "c");
  a.release(b.ptr);
  a.stop_caching();
  EXPECT_EQ(dev.live.size(), 1u) << "the cache is freed";
  a.release(c.ptr);
  EXPECT_TRUE(dev.live.empty());
  EXPECT_EQ(a.stats().raw_frees, 2);
}

TEST(CachingAllocator, DestructionFreesTheCache) {
  FakeDevice dev;
  {
    CachingAllocator a(dev.raw(), "fake device");
    const auto b = a.allocate(100, "b"), c = a.allocate(5000, "c");
    a.release(b.ptr);
    a.release(c.ptr, [] { return true; });
    EXPECT_EQ(dev.live.size(), 2u);
  }
  EXPECT_TRUE(dev.live.empty());
  EXPECT_EQ(dev.used, 0u);
}

}  // namespace

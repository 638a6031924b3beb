// The CUPTI kernel trace on a GPU: a fill and a host-to-device copy made while tracing come back as
// "memset" and "memcpy HtoD" records with device time; a second trace is refused while one exists.
// Skipped where CUPTI is refused (the node's privileges, another profiler attached).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "cuda/cuda_test_support.hpp"
#include "scaletrain/backend/cuda/cupti_kernel_trace.hpp"
#include "scaletrain/core/check_cuda.hpp"

using namespace scaletrain;
using namespace scaletrain::testing;

namespace {

using CuptiKernelTrace = CudaTest;

const KernelRecord* find_record(const std::vector<KernelRecord>& records, const std::string& name) {
  auto it = std::find_if(records.begin(), records.end(), [&](const KernelRecord& r) { return r.name == name; });
  return it == records.end() ? nullptr : &*it;
}

// A memset and a pinned host-to-device copy of 1 MiB, queued on a stream of its own.
void fill_and_copy() {
  constexpr size_t kBytes = size_t{1} << 20;
  void* dev = nullptr;
  void* host = nullptr;
  cudaStream_t s = nullptr;
  ST_CUDA_CHECK(cudaMalloc(&dev, kBytes));
  ST_CUDA_CHECK(cudaMallocHost(&host, kBytes));
  ST_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  ST_CUDA_CHECK(cudaMemsetAsync(dev, 0, kBytes, s));
  ST_CUDA_CHECK(cudaMemcpyAsync(dev, host, kBytes, cudaMemcpyHostToDevice, s));
  ST_CUDA_CHECK(cudaStreamSynchronize(s));
  ST_CUDA_CHECK(cudaStreamDestroy(s));
  ST_CUDA_CHECK(cudaFreeHost(host));
  ST_CUDA_CHECK(cudaFree(dev));
}

TEST_F(CuptiKernelTrace, RecordsAFillAndACopy) {
  std::string why_not;
  std::unique_ptr<KernelTrace> trace = cuda::make_cupti_kernel_trace(why_not);
  if (!trace) GTEST_SKIP() << "CUPTI unavailable: " << why_not;
  EXPECT_NE(trace->source().find("CUPTI"), std::string::npos) << trace->source();

  std::string second_why;
  EXPECT_EQ(cuda::make_cupti_kernel_trace(second_why), nullptr);
  EXPECT_NE(second_why.find("exists already"), std::string::npos) << second_why;

  trace->start();
  fill_and_copy();
  trace->stop();
  const std::vector<KernelRecord> records = trace->take();
  for (const char* name : {"memset", "memcpy HtoD"}) {
    const KernelRecord* r = find_record(records, name);
    ASSERT_NE(r, nullptr) << "no '" << name << "' record among " << records.size();
    EXPECT_GE(r->count, 1) << name;
    EXPECT_GT(r->seconds, 0.0) << name;
  }
  std::vector<double> seconds;  // largest first
  for (const KernelRecord& r : records)
    if (r.name != "(dropped records)") seconds.push_back(r.seconds);
  EXPECT_TRUE(std::is_sorted(seconds.rbegin(), seconds.rend()));
  EXPECT_TRUE(trace->take().empty());  // take() clears
}

TEST_F(CuptiKernelTrace, NothingIsRecordedOutsideStartAndStop) {
  std::string why_not;
  std::unique_ptr<KernelTrace> trace = cuda::make_cupti_kernel_trace(why_not);
  if (!trace) GTEST_SKIP() << "CUPTI unavailable: " << why_not;
  fill_and_copy();
  trace->start();
  trace->stop();
  fill_and_copy();
  trace->start();
  trace->stop();
  EXPECT_EQ(find_record(trace->take(), "memcpy HtoD"), nullptr);
}

TEST_F(CuptiKernelTrace, AnotherTraceOnceTheFirstIsGone) {
  std::string why_not;
  auto first = cuda::make_cupti_kernel_trace(why_not);
  if (!first) GTEST_SKIP() << "CUPTI unavailable: " << why_not;
  first.reset();
  auto second = cuda::make_cupti_kernel_trace(why_not);
  EXPECT_NE(second, nullptr) << why_not;
}

}  // namespace

// Asynchronous copies and fills on a GPU: pinned host -> device -> device -> pageable host and back
// arrive byte for byte, on the copy stream ordered by an event; zero fills; upload and download;
// copies between tensors of different sizes are refused.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "cuda/cuda_test_support.hpp"
#include "support/test_harness.hpp"

using namespace scaletrain;
using namespace scaletrain::testing;

namespace {

using CudaCopies = CudaTest;

TEST_F(CudaCopies, HostDeviceDeviceHostRoundTrip) {
  Backend& b = *backend;
  const int64_t n = (1 << 20) + 3;
  Tensor pinned = b.pinned({n}, DType::i32, "pinned source");
  for (int64_t i = 0; i < n; ++i) pinned.data<int32_t>()[i] = static_cast<int32_t>(i * 7 - 3);
  Tensor d1 = b.empty({n}, DType::i32, "d1"), d2 = b.empty({n}, DType::i32, "d2");
  Tensor pageable({n}, DType::i32, "pageable destination");
  auto copied = b.make_event("copied");
  b.copy_async(b.copy_stream(), d1, pinned);
  b.copy_async(b.copy_stream(), d2, d1);
  b.copy_stream().record(*copied);
  b.compute_stream().wait(*copied);
  b.copy_async(b.compute_stream(), pageable, d2);
  b.compute_stream().synchronize();
  EXPECT_EQ(std::memcmp(pageable.raw(), pinned.raw(), pinned.bytes()), 0);
  // And back into pinned memory, from pageable memory through the device.
  Tensor back = b.pinned({n}, DType::i32, "pinned destination");
  b.copy_async(b.copy_stream(), d1, pageable);
  b.copy_async(b.copy_stream(), back, d1);
  b.copy_stream().synchronize();
  EXPECT_EQ(std::memcmp(back.raw(), pinned.raw(), pinned.bytes()), 0);
}

TEST_F(CudaCopies, ZeroFillsUploadAndDownload) {
  Backend& b = *backend;
  Tensor d = b.empty({1000}, DType::f32, "d");
  std::vector<float> values(1000);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i) + 0.5f;
  b.upload(d, values);
  EXPECT_EQ(to_host<float>(b, d), values);
  b.fill_zero_async(b.compute_stream(), d.view(100, {50}));
  const std::vector<float> got = to_host<float>(b, d);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], i >= 100 && i < 150 ? 0.0f : values[i]) << i;
  Tensor z = b.zeros({333}, DType::u8, "z");
  for (uint8_t v : to_host<uint8_t>(b, z)) ASSERT_EQ(v, 0);
  Tensor host({4}, DType::f32, "host");
  b.fill_zero_async(b.copy_stream(), host);  // a host tensor: zeroed in stream order
  b.copy_stream().synchronize();
  for (int i = 0; i < 4; ++i) EXPECT_EQ(host.data<float>()[i], 0.0f);
}

TEST_F(CudaCopies, DifferentSizesAreRefused) {
  Tensor a = backend->empty({10}, DType::f32, "a"), c = backend->empty({11}, DType::f32, "c");
  const std::string e = error_of([&] { backend->copy_async(backend->compute_stream(), a, c); });
  EXPECT_NE(e.find("copy from 'c' (44 bytes) to 'a' (40 bytes): sizes differ"), std::string::npos) << e;
}

TEST_F(CudaCopies, HostCannotReadDeviceTensors) {
  Tensor d = backend->zeros({2, 3}, DType::f32, "conv2d_1.pre");
  const std::string e = error_of([&] { (void)d.data<float>(); });
  EXPECT_NE(e.find("which lives on the cuda device"), std::string::npos) << e;
}

}  // namespace
